"""DataLoader (MXNet's `gluon.data.DataLoader`): batches of a Dataset, loaded in this process,
in a thread pool, or in worker processes.

Worker processes (_workers.WorkerPool) are forked (where the platform can fork) with the dataset
and batchify_fn inherited, so neither needs to be picklable; each task sends a list of indices
and gets the batch back with every NDArray turned into a NumPy array. The parent turns those
back into NDArrays: the C tensors never cross a process boundary. The workers are stopped when
the loader is collected or the interpreter exits (within seconds, batches in flight or not),
exit by themselves when the parent dies, and an error in a worker is raised in the parent.
"""
import multiprocessing
import multiprocessing.pool
import os
import pickle
import sys
import threading

import numpy as _np

from ... import context
from ... import ndarray as nd
from ...base import MXNetError
from ...ndarray import NDArray
from . import _workers
from . import sampler as _sampler

__all__ = ['DataLoader', 'default_batchify_fn', 'default_mp_batchify_fn']


def default_batchify_fn(data):
    """Collates a list of samples into a batch: NDArrays are stacked on a new first axis,
    tuples are collated element by element (giving a list), and anything else (NumPy arrays,
    NumPy or Python scalars) goes through `numpy.asarray` and keeps its dtype."""
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(i)) for i in zip(*data)]
    data = _np.asarray(data)
    return nd.array(data, dtype=data.dtype)


# MXNet stacks into shared memory here; workers in this library hand NumPy arrays back to the
# parent instead, so the process-pool batchify is the ordinary one.
default_mp_batchify_fn = default_batchify_fn


class _Wire:
    """An NDArray's data in transit from a worker process (a NumPy array)."""
    __slots__ = ('array',)

    def __init__(self, array):
        self.array = array

    def __reduce__(self):
        return (_Wire, (self.array,))


def _to_wire(batch):
    if isinstance(batch, NDArray):
        return _Wire(batch.asnumpy())
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_wire(b) for b in batch)
    if isinstance(batch, dict):
        return {k: _to_wire(v) for k, v in batch.items()}
    return batch


def _from_wire(batch):
    if isinstance(batch, _Wire):
        return nd.array(batch.array, dtype=batch.array.dtype)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_from_wire(b) for b in batch)
    if isinstance(batch, dict):
        return {k: _from_wire(v) for k, v in batch.items()}
    return batch


def _as_in_context(data, ctx):
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return type(data)(_as_in_context(d, ctx) for d in data)
    return data


# ---- worker side ---------------------------------------------------------------------------
class _BatchWork:
    """What a worker process runs for a task: the batch of a list of indices, its NDArrays
    turned into NumPy arrays for the trip to the parent."""

    def __init__(self, dataset, batchify_fn):
        self.dataset = dataset
        self.batchify_fn = batchify_fn

    def __call__(self, samples):
        return _to_wire(self.batchify_fn([self.dataset[i] for i in samples]))


def _thread_worker_fn(samples, batchify_fn, dataset):
    return batchify_fn([dataset[i] for i in samples])


def _process_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context('fork' if 'fork' in methods else 'spawn')


# ---- parent side ---------------------------------------------------------------------------
class _MultiWorkerIter:
    """Keeps up to `prefetch` batches in flight and returns them in sampler order."""

    def __init__(self, loader, worker_pool, batchify_fn, batch_sampler, thread_pool, prefetch,
                 timeout):
        self._loader = loader  # keeps the pool alive while iterating
        self._pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._thread_pool = thread_pool
        self._timeout = timeout
        self._pending = []  # thread pool: AsyncResults; processes: task ids; in sampler order
        self._iter = iter(batch_sampler)
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def __iter__(self):
        return self

    def _push_next(self):
        indices = next(self._iter, None)
        if indices is None:
            return
        if self._thread_pool:
            ret = self._pool.apply_async(_thread_worker_fn,
                                         (indices, self._batchify_fn, self._loader._dataset))
        else:
            ret = self._pool.submit(indices)
        self._pending.append(ret)

    def __next__(self):
        try:
            # Sending the next task may read results that arrived meanwhile, and so meet a
            # worker that died: any failure here shuts the workers down too.
            self._push_next()
            if not self._pending:
                raise StopIteration
            ret = self._pending.pop(0)
            if self._thread_pool:
                return ret.get(self._timeout)
            return _from_wire(self._pool.get(ret, self._timeout))
        except StopIteration:
            raise
        except (multiprocessing.TimeoutError, TimeoutError):
            msg = ('DataLoader worker timed out after %s seconds: a slow dataset or transform? '
                   'Increase `timeout` to allow slower loading in each worker.' % self._timeout)
            self._loader._shutdown()
            raise multiprocessing.TimeoutError(msg) from None
        except BaseException:
            self._loader._shutdown()
            raise

    next = __next__

    def __del__(self):
        # Batches still in flight are not wanted any more: their results are dropped on arrival.
        pending = getattr(self, '_pending', None)
        if pending and not self._thread_pool:
            try:
                self._pool.discard(pending)
            except Exception:  # interpreter shutdown
                pass


class DataLoader:
    """Loads batches from a Dataset.

    DataLoader(dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
    batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False, pin_device_id=0,
    prefetch=None, thread_pool=False, timeout=120, auto_reload=False)

    - batch_size with shuffle (RandomSampler) or a `sampler`, and `last_batch` ('keep',
      'discard', 'rollover'); or a `batch_sampler` yielding lists of indices instead of all of
      those.
    - batchify_fn turns a list of samples into a batch (default_batchify_fn: stack NDArrays,
      collate tuples, NumPy arrays and scalars keep their dtype).
    - num_workers > 0 loads batches in that many worker processes (threads with
      thread_pool=True), keeping `prefetch` batches (default 2 * num_workers) in flight;
      `timeout` seconds is the longest wait for one batch.
    - pin_memory=True gives batches whose context is cpu_pinned(pin_device_id), as MXNet's;
      the memory is ordinary CPU memory (a GPU copy does not go faster for it).
    - auto_reload=True starts the next pass (its prefetching) as soon as one ends, and the
      first one at construction; refresh() and clean() start or drop it by hand.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 auto_reload=False, try_nopython=None):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        if not timeout > 0:
            raise ValueError('timeout must be positive, given {}'.format(timeout))
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError('batch_size must be specified unless batch_sampler is '
                                 'specified')
            if sampler is None:
                sampler = (_sampler.RandomSampler if shuffle else
                           _sampler.SequentialSampler)(len(dataset))
            elif shuffle:
                raise ValueError('shuffle must not be specified if sampler is specified')
            batch_sampler = _sampler.BatchSampler(sampler, batch_size,
                                                  last_batch if last_batch else 'keep')
        elif batch_size is not None or shuffle or sampler is not None or \
                last_batch is not None:
            raise ValueError('batch_size, shuffle, sampler and last_batch must not be '
                             'specified if batch_sampler is specified.')
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else (
            default_mp_batchify_fn if self._num_workers > 0 else default_batchify_fn)
        self._worker_pool = None
        self._lock = threading.Lock()
        if self._num_workers > 0:
            self._worker_pool = self._start_pool()
        self._iter = None
        self.auto_reload = auto_reload
        if auto_reload:
            self.refresh()

    def _start_pool(self):
        if self._thread_pool:
            return multiprocessing.pool.ThreadPool(self._num_workers)
        seed = int.from_bytes(os.urandom(4), 'little')
        try:
            return _workers.WorkerPool(_process_context(), self._num_workers,
                                       _BatchWork(self._dataset, self._batchify_fn), seed)
        except (pickle.PicklingError, AttributeError, TypeError) as err:
            raise MXNetError('DataLoader: cannot start worker processes: %s (with the spawn '
                             'start method the dataset and batchify_fn must be picklable)'
                             % err) from None

    def __iter__(self):
        # One prefetched pass (see refresh) serves one iteration; later ones start afresh.
        if self._iter is None:
            self.refresh()
        it, self._iter = self._iter, None
        for batch in it:
            yield batch
        if self._iter is None and self.auto_reload:
            self.refresh()

    def refresh(self):
        """Starts the next pass now: with workers, its first `prefetch` batches begin loading
        before the loop asks for them."""
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drops the pass refresh() started; the next one starts when iterated."""
        self._iter = None

    def _prefetch_iter(self):
        if self._num_workers == 0:
            it = self._same_process_iter()
        else:
            with self._lock:
                if self._worker_pool is None:  # shut down after an error: start afresh
                    self._worker_pool = self._start_pool()
                pool = self._worker_pool
            it = _MultiWorkerIter(self, pool, self._batchify_fn, self._batch_sampler,
                                  self._thread_pool, self._prefetch, self._timeout)
        if self._pin_memory:
            return self._pinned(it)
        return it

    def _pinned(self, it):
        ctx = context.cpu_pinned(self._pin_device_id)
        for batch in it:
            yield _as_in_context(batch, ctx)

    def _same_process_iter(self):
        for batch in self._batch_sampler:
            yield self._batchify_fn([self._dataset[idx] for idx in batch])

    def __len__(self):
        return len(self._batch_sampler)

    def _shutdown(self):
        """Stops the workers (if any), batches in flight or not, and waits for them to exit:
        worker processes within a few seconds at most (see _workers.WorkerPool.shutdown);
        threads finish the batch they are on."""
        with self._lock:
            pool, self._worker_pool = self._worker_pool, None
        if pool is None:
            return
        if self._thread_pool:
            pool.terminate()
            pool.join()
        else:
            pool.shutdown()

    def __del__(self):
        if getattr(self, '_worker_pool', None) is not None and sys is not None:
            try:
                self._shutdown()
            except Exception:  # interpreter shutdown: multiprocessing may be half torn down
                pass
