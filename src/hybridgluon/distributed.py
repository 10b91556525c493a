"""Data-parallel training across processes and machines, over MPI (Horovod's API, for Gluon).

Start one process per worker with an MPI launcher, `mpirun -np 4 python train.py` (with a
hostfile for several machines, docs/distributed.md), and in the script::

    import hybridgluon as mx
    from hybridgluon import distributed as dist
    dist.init()
    net = ...; net.initialize()
    params = net.collect_params()
    dist.broadcast_parameters(params)          # every worker starts from rank 0's weights
    trainer = dist.DistributedTrainer(params, 'sgd', {'learning_rate': 0.1})
    ... trainer.step(batch_size)               # local batch size: gradients are averaged

`mx.kv.create('dist_sync')` and `gluon.Trainer(..., kvstore='dist_sync')` run on the same
collectives with MXNet's semantics (gradients summed over the workers: pass the global batch
size to `step`).

MPI is reached through mpi4py (`pip install mpi4py`, with Open MPI or MPICH installed), which
initialises it; the collectives themselves run in C (csrc/dist/) on the arrays' memory with the
GIL released, the gradients of a step packed into a few large messages. Settings:
HG_DIST_TIMEOUT (seconds a collective may wait for the others, default 600) and
HG_DIST_BUCKET_MB (message size, default 64).

The collectives take Horovod's `name` and `priority` arguments and ignore them: they run in the
order they are called, the same on every rank.

Failure: a rank whose script raises ends the whole job through MPI_Abort (an exception hook
installed by `init`), a rank that dies is reported by the launcher, which ends the others, and a
collective some rank never joins ends the job after HG_DIST_TIMEOUT seconds, with a message
naming the collective (a watchdog thread, as PyTorch's NCCL watchdog).
Checkpoints (`save_parameters`, `export`, `Trainer.save_states`) are written by rank 0 only.
"""
import os
import sys
import threading
import warnings

from . import _core
from .base import MXNetError
from .ndarray import NDArray

__all__ = ['init', 'is_initialized', 'rank', 'size', 'local_rank', 'local_size', 'allreduce',
           'allreduce_', 'grouped_allreduce', 'grouped_allreduce_', 'allgather', 'broadcast',
           'broadcast_', 'broadcast_parameters', 'barrier', 'Compression', 'DistributedTrainer',
           'is_writer']

_AVERAGE, _FP16 = 1, 2
_lock = threading.Lock()
_state = {'comm': None, 'local_rank': 0, 'local_size': 1, 'hooked': False}


class Compression:
    """How gradients travel: `Compression.none` as they are, `Compression.fp16` float32 values
    sent as float16 (half the bytes; each sum is formed in float32 and rounded to float16)."""
    none = 'none'
    fp16 = 'fp16'


def _flags(average, compression):
    if compression not in (Compression.none, Compression.fp16, None):
        raise MXNetError("compression must be Compression.none or Compression.fp16, got %r"
                         % (compression,))
    return (_AVERAGE if average else 0) | (_FP16 if compression == Compression.fp16 else 0)


def _env_number(name, default, kind):
    raw = os.environ.get(name, '')
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise MXNetError('%s=%r is not a number' % (name, raw)) from None
    if value <= 0:
        raise MXNetError('%s=%r must be positive' % (name, raw))
    return value


def _abort_on_exception(etype, value, tb):
    """sys.excepthook while several ranks run: print the error, then end the job, so the
    other ranks do not wait in their next collective for a rank that is gone."""
    _state['prev_hook'](etype, value, tb)
    if _core._dist_size() > 1 and not issubclass(etype, KeyboardInterrupt):
        sys.stderr.write('hybridgluon.distributed: rank %d of %d failed (%s); ending the job\n'
                         % (_core._dist_rank(), _core._dist_size(), etype.__name__))
        sys.stderr.flush()
        _core._dist_abort(1)


def init(comm=None):
    """Sets up the collectives on `comm` (an mpi4py communicator, default MPI.COMM_WORLD).
    Every process of the job calls it; calling it again with no argument is a no-op."""
    with _lock:
        if _state['comm'] is not None and comm is None:
            return
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise MXNetError('hybridgluon.distributed needs mpi4py and an MPI library: install '
                             'Open MPI (apt-get install openmpi-bin libopenmpi-dev) or MPICH, '
                             'then `pip install mpi4py`') from e
        comm = MPI.COMM_WORLD if comm is None else comm
        timeout = _env_number('HG_DIST_TIMEOUT', 600.0, float)
        bucket = _env_number('HG_DIST_BUCKET_MB', 64, int)
        if bucket > 1024:
            raise MXNetError('HG_DIST_BUCKET_MB=%d: at most 1024' % bucket)
        _core._dist_init(MPI._sizeof(MPI.Comm), comm.handle,
                         MPI.SUM.handle, int(MPI.IN_PLACE), MPI.FLOAT.handle, MPI.DOUBLE.handle,
                         MPI.INT32_T.handle, MPI.INT64_T.handle, MPI.UINT8_T.handle,
                         MPI.UINT16_T.handle, MPI.BYTE.handle, timeout, bucket << 20)
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        # overlap calls MPI from a second thread, which needs MPI_THREAD_MULTIPLE (mpi4py asks
        # for it unless mpi4py.rc.thread_level says otherwise)
        _state.update(comm=comm, local_rank=local.Get_rank(), local_size=local.Get_size(),
                      multiple=MPI.Query_thread() == MPI.THREAD_MULTIPLE)
        local.Free()
        if not _state['hooked'] and comm.Get_size() > 1:
            _state['prev_hook'] = sys.excepthook
            sys.excepthook = _abort_on_exception
            _state['hooked'] = True


def is_initialized():
    """Whether `init` has run in this process."""
    return _state['comm'] is not None


def _need_init():
    if _state['comm'] is None:
        raise MXNetError('hybridgluon.distributed is not initialised: call '
                         'hybridgluon.distributed.init() first')


def rank():
    """This process's rank in [0, size())."""
    _need_init()
    return _core._dist_rank()


def size():
    """The number of processes."""
    _need_init()
    return _core._dist_size()


def local_rank():
    """This process's rank among the processes of its machine."""
    _need_init()
    return _state['local_rank']


def local_size():
    """The number of processes on this machine."""
    _need_init()
    return _state['local_size']


def is_writer():
    """Whether this process writes checkpoints: rank 0, or the process of a run that is not
    distributed."""
    return _core._dist_rank() == 0


def _arrays(tensors, what):
    if isinstance(tensors, NDArray):
        raise MXNetError('%s takes a list of NDArrays; for one array use %s'
                         % (what, what.replace('grouped_', '')))
    arrays = list(tensors)
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise MXNetError('%s: item %d is %s, not an NDArray' % (what, i, type(a).__name__))
    return arrays


def grouped_allreduce_(tensors, average=True, name=None, priority=0,
                       compression=Compression.none):
    """Sums (average=True: averages) each array over all processes, in place, in as few
    messages as their bytes allow. Every process passes arrays of the same shapes and dtypes
    in the same order. Returns the list."""
    _need_init()
    arrays = _arrays(tensors, 'grouped_allreduce_')
    _core._dist_allreduce(arrays, _flags(average, compression))
    return arrays


def grouped_allreduce(tensors, average=True, name=None, priority=0,
                      compression=Compression.none):
    """`grouped_allreduce_` on copies: the inputs are left as they are."""
    return grouped_allreduce_([a.copy() for a in _arrays(tensors, 'grouped_allreduce')],
                              average, name, priority, compression)


def allreduce_(tensor, average=True, name=None, priority=0, compression=Compression.none):
    """Sums (average=True: averages) `tensor` over all processes, in place; returns it."""
    return grouped_allreduce_([tensor], average, name, priority, compression)[0]


def allreduce(tensor, average=True, name=None, priority=0, compression=Compression.none):
    """The sum (average=True: the mean) of `tensor` over all processes, as a new array."""
    return grouped_allreduce([tensor], average, name, priority, compression)[0]


def allgather(tensor, name=None, priority=0):
    """Every process's `tensor` concatenated along axis 0 in rank order (the first dims may
    differ between processes; the other dims and the dtype must agree)."""
    _need_init()
    if not isinstance(tensor, NDArray):
        raise MXNetError('allgather: expected an NDArray, got %s' % type(tensor).__name__)
    return _core._dist_allgather(tensor)


def broadcast_(tensor, root_rank=0, name=None, priority=0):
    """Copies rank `root_rank`'s `tensor` into every process's `tensor`; returns it."""
    _need_init()
    _core._dist_broadcast(_arrays([tensor], 'broadcast_'), int(root_rank))
    return tensor


def broadcast(tensor, root_rank=0, name=None, priority=0):
    """Rank `root_rank`'s `tensor`, as a new array on every process."""
    return broadcast_(tensor.copy(), root_rank, name, priority)


def barrier():
    """Returns when every process has called it."""
    _need_init()
    _core._dist_barrier()


def _param_items(params):
    from .gluon.parameter import Parameter, ParameterDict
    if isinstance(params, ParameterDict):
        params = params.items()
    elif isinstance(params, dict):
        params = sorted(params.items())
    else:
        raise MXNetError('broadcast_parameters takes a dict of NDArrays or Parameters (e.g. '
                         'net.collect_params()), got %s' % type(params).__name__)
    items = list(params)
    for name, p in items:
        if not isinstance(p, (Parameter, NDArray)):
            raise MXNetError('broadcast_parameters: %r is %s, not a Parameter or an NDArray'
                             % (name, type(p).__name__))
    return items


def broadcast_parameters(params, root_rank=0):
    """Makes every process's parameters equal to rank `root_rank`'s: a dict of NDArrays, or of
    Parameters (`net.collect_params()`). A Parameter still waiting for its shape (deferred
    initialization) is broadcast when it gets initialized, which every process does at the
    same point (the first forward)."""
    _need_init()
    arrays = []
    for _, p in _param_items(params):
        if isinstance(p, NDArray):
            arrays.append(p)
        elif p._deferred_init:
            _broadcast_on_init(p, root_rank)
        elif p._data is not None:
            arrays.extend(p._data)
    _core._dist_broadcast(arrays, int(root_rank))


def _broadcast_on_init(param, root_rank):
    """Wraps this Parameter's `_init_impl` so that its first initialization broadcasts."""
    init_impl = param._init_impl

    def _init_impl(data, ctx_list, own=False):
        param._init_impl = init_impl
        init_impl(data, ctx_list, own)
        _core._dist_broadcast(list(param._data), int(root_rank))

    param._init_impl = _init_impl


def _trainer_cls():
    from .gluon.trainer import Trainer
    return Trainer


class DistributedTrainer(_trainer_cls()):
    """A `gluon.Trainer` whose gradients are averaged over all processes before the update:
    pass the local batch size to `step`. Every process runs the same update on the same
    averaged gradient, so parameters stay equal on all ranks.

    overlap=True (the default): the gradients are summed over the ranks while backward runs,
    a bucket of `bucket_mb` MiB as soon as backward has written its gradients (the last layers'
    first), so communication overlaps the backward of the earlier layers; when backward returns
    the gradient buffers hold the sums, as with PyTorch's DistributedDataParallel (clip or read
    them after backward and they are the global ones). Gradients backward did not write are
    summed at `step`. overlap=False sums everything at `step`, in one grouped allreduce.
    `compression=Compression.fp16` sends float32 gradients as float16.
    """

    def __init__(self, params, optimizer, optimizer_params=None,
                 compression=Compression.none, overlap=True, bucket_mb=4, prefix=None):
        init()
        super().__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        if len(self._contexts) > 1:
            raise MXNetError('DistributedTrainer takes parameters on one context per process '
                             '(got %s): run one process per device, or use '
                             "gluon.Trainer(..., kvstore='dist_sync'), which also sums over "
                             'the contexts of a process' % (self._contexts,))
        self._flags = _flags(False, compression)
        if not 0 < bucket_mb <= 1024:
            raise MXNetError('bucket_mb must be in (0, 1024], got %r' % (bucket_mb,))
        self._bucket_bytes = max(1024, int(bucket_mb * (1 << 20)))
        self._overlap = bool(overlap)
        if self._overlap and not _state.get('multiple'):
            warnings.warn('DistributedTrainer: the MPI library was initialised without '
                          'MPI_THREAD_MULTIPLE (mpi4py.rc.thread_level), so gradients are '
                          'summed at step, not during backward')
            self._overlap = False
        # the sum over ranks, scaled by 1/size in the optimizer's rescale_grad
        self._scale /= size()
        self._grads_key = None
        self._grads = []
        self._sched = None
        self._grad_arrays()  # the schedule, so that the first backward already overlaps

    def _grad_arrays(self):
        """The gradient arrays of the trainable parameters (and their schedule), kept while the
        parameters keep the same gradient buffers."""
        if any(p._deferred_init for p in self._params):
            return None  # not all known yet: the first step reduces without a schedule
        key = [p._grad for p in self._params if p.grad_req != 'null']
        old = self._grads_key
        if old is None or len(old) != len(key) or any(a is not b for a, b in zip(old, key)):
            self._grads_key = key
            self._grads = [g for grads in key for g in grads]
            self._sched = None
            if self._overlap and self._grads:
                self._sched = _core._dist_sched_new(self._grads, self._flags,
                                                    self._bucket_bytes)
        return self._grads

    def overlap_stats(self):
        """(buckets summed during backward, gradient arrays summed at step) so far: how much of
        the communication overlapped backward."""
        return _core._dist_sched_stats(self._sched) if self._sched is not None else (0, 0)

    def _allreduce_grads(self):
        grads = self._grad_arrays()
        if grads is None:
            grads = [g for p in self._params if p.grad_req != 'null' for g in p.list_grad()]
        if self._sched is not None:
            _core._dist_sched_finish(self._sched)
        else:
            _core._dist_allreduce(grads, self._flags)
