"""The single-process KVStore (MXNet 1.9.1's 'local' and 'device' types).

A store keeps one array per key, on cpu(0). `push` sums the values given for a key (one per
context) and either hands the sum to the updater with the stored array (`set_optimizer` /
`_set_updater`) or makes the sum the stored value; `pull` copies the stored value into every
output array, whatever its context. All CPU contexts share one memory, so 'local' (reduce on
the CPU) and 'device' (reduce on a device) do the same work here. The summation is an `add_n`
op. Keys are ints or strs; one store takes one kind (MXNet's rule).

Work is synchronous: when `push` returns, the stored value is final. The distributed types
('dist_sync', 'dist_device_sync', 'dist') are `DistKVStore` (kvstore/dist.py, over MPI);
'dist_async' (a parameter server), 'nccl', Horovod and BytePS are not available and gradient
compression is not supported: asking for them raises MXNetError.
"""
from .. import ndarray as nd
from ..base import MXNetError, _write_file_atomic
from ..context import cpu
from ..ndarray import NDArray

__all__ = ['KVStoreBase', 'KVStore', 'create']


class _NotSupportedError(MXNetError, NotImplementedError):
    """A kvstore type or feature that exists in MXNet but not in this build."""


class KVStoreBase(object):
    """What every key-value store offers (MXNet's `mx.kv.KVStoreBase`)."""
    OPTIMIZER = 'optimizer'

    def is_capable(self, capability):
        """Whether the store can do `capability` ('optimizer': run the optimizer itself)."""
        raise NotImplementedError()


def _key_values(key, value, what):
    """[(key, [arrays])] in key order of first appearance, for MXNet's key/value forms: a key and
    an array, a key and a list of arrays (one per context), or lists of both."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(key) != len(value):
            raise MXNetError('%s: %d keys need a list of %d values (one array or a list of arrays '
                             'per key)' % (what, len(key), len(key)))
        pairs = []
        for k, v in zip(key, value):
            pairs.extend(_key_values(k, v, what))
        return pairs
    if not isinstance(key, (int, str)) or isinstance(key, bool):
        raise MXNetError('%s: a key must be an int or a str, got %r' % (what, key))
    arrays = [value] if isinstance(value, NDArray) else value
    if not isinstance(arrays, (list, tuple)) or not arrays or \
            not all(isinstance(a, NDArray) for a in arrays):
        raise MXNetError('%s: the value of key %r must be an NDArray or a non-empty list of '
                         'NDArrays, got %s' % (what, key, type(value).__name__))
    return [(key, list(arrays))]


class KVStore(KVStoreBase):
    """A single-process store of arrays by key. Create it with `mx.kv.create('local')`."""

    def __init__(self, kv_type='local'):
        self._type = kv_type
        self._store = {}
        self._key_type = None
        self._updater = None

    @property
    def type(self):
        """The type name it was created with ('local', 'device', ...)."""
        return self._type

    @property
    def rank(self):
        """This worker's rank: 0, the only one."""
        return 0

    @property
    def num_workers(self):
        """Number of workers: 1."""
        return 1

    def is_capable(self, capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError('Unknown capability: {}'.format(capability))

    # ---- keys ------------------------------------------------------------------------------
    def _check_key_type(self, key):
        kind = str if isinstance(key, str) else int
        if self._key_type is None:
            self._key_type = kind
        elif self._key_type is not kind:
            raise MXNetError('Mixed key types are not allowed: this store has %s keys, got key '
                             '%r' % (self._key_type.__name__, key))

    def _stored(self, key, what):
        self._check_key_type(key)
        if key not in self._store:
            raise MXNetError('%s: key %r has not been inited (call init or broadcast first)'
                             % (what, key))
        return self._store[key]

    @staticmethod
    def _check_shape(key, stored, arr, what):
        if arr.shape != stored.shape:
            raise MXNetError('%s: key %r holds an array of shape %s, got one of shape %s'
                             % (what, key, stored.shape, arr.shape))

    # ---- data ------------------------------------------------------------------------------
    def init(self, key, value):
        """Stores a copy of `value` under `key` (a key may be initialized once)."""
        for k, arrays in _key_values(key, value, 'init'):
            for arr in arrays:
                self._check_key_type(k)
                if k in self._store:
                    raise MXNetError('duplicate init of key %r. Please double check if you called '
                                     'kv.init or kv.broadcast with this key multiple times' % (k,))
                self._store[k] = arr.copyto(cpu(0))

    def _merge(self, k, arrays):
        """(the sum of a key's pushed values on cpu(0) in the stored dtype, the stored array)."""
        stored = self._stored(k, 'push')
        for arr in arrays:
            self._check_shape(k, stored, arr, 'push')
        merged = arrays[0].copyto(cpu(0)) if len(arrays) == 1 else \
            nd.add_n(*arrays).as_in_context(cpu(0))
        if merged.dtype != stored.dtype:
            merged = merged.astype(stored.dtype)
        return merged, stored

    def _apply(self, k, merged, stored):
        """Hands the sum to the updater with the stored array, or makes it the stored value."""
        if self._updater is not None:
            self._updater(k, merged, stored)
        else:
            stored[:] = merged

    def push(self, key, value, priority=0):
        """Sums the values of each key (one per context) into the store: through the updater
        when one is set (`updater(key, sum, stored)`), else the sum becomes the stored value."""
        for k, arrays in _key_values(key, value, 'push'):
            self._apply(k, *self._merge(k, arrays))

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored value of each key into its output array(s)."""
        if out is None:
            raise MXNetError('pull: out must be given (the arrays to copy the values into)')
        for k, arrays in _key_values(key, out, 'pull'):
            stored = self._stored(k, 'pull')
            for arr in arrays:
                self._check_shape(k, stored, arr, 'pull')
                stored.copyto(arr)

    def pushpull(self, key, value, out=None, priority=0):
        """`push(key, value)` then `pull(key, out)`; without `out` the result goes back into
        `value`."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """`init(key, value)` then `pull(key, out)`: every output gets `value`."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        raise _NotSupportedError('row_sparse_pull: sparse storage is not supported by '
                                 'hybridgluon')

    # ---- optimizer -------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Makes `push` run `optimizer` on the stored weights (their states live here)."""
        from ..optimizer import get_updater
        self._updater = get_updater(optimizer)

    def _set_updater(self, updater):
        """Makes `push` call `updater(key, merged_value, stored_value)`."""
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        raise _NotSupportedError('gradient compression (%r) is not supported by hybridgluon'
                                 % (compression_params,))

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the updater's states (and the optimizer with dump_optimizer) to `fname`."""
        if self._updater is None:
            raise MXNetError('save_optimizer_states: no optimizer is set on this kvstore')
        _write_file_atomic(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Reads states written by `save_optimizer_states`."""
        if self._updater is None:
            raise MXNetError('load_optimizer_states: no optimizer is set on this kvstore')
        with open(fname, 'rb') as fin:
            self._updater.set_states(fin.read())


def create(name='local'):
    """A new KVStore: 'local' or 'device' (also the older 'local_allreduce_cpu' and similar
    names), or the synchronous distributed types 'dist_sync', 'dist_device_sync' and 'dist'
    (every process of an MPI job, hybridgluon.distributed). 'dist_async' and the GPU-only
    types raise MXNetError."""
    if not isinstance(name, str):
        raise TypeError('name must be a string')
    low = name.lower()
    if 'dist' in low:
        if 'async' in low:
            raise _NotSupportedError("kvstore '%s': asynchronous training needs a parameter "
                                     "server, which hybridgluon does not have; 'dist_sync' "
                                     "(MPI allreduce) is supported" % name)
        if low not in ('dist', 'dist_sync', 'dist_device_sync', 'dist_sync_device'):
            raise MXNetError("unknown kvstore type '%s' (the distributed types are 'dist_sync', "
                             "'dist_device_sync' and 'dist')" % name)
        from .dist import DistKVStore
        return DistKVStore(name)
    for word in ('nccl', 'horovod', 'byteps'):
        if word in low:
            raise _NotSupportedError("kvstore type '%s' is not supported by hybridgluon: only "
                                     "'local', 'device' and 'dist_sync' are" % name)
    if 'local' not in low and 'device' not in low:
        raise MXNetError("unknown kvstore type '%s' (expected 'local' or 'device')" % name)
    return KVStore(name)

