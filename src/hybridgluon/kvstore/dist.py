"""MXNet's synchronous distributed kvstore ('dist_sync') over MPI allreduce.

Every process of the job holds the store. `init` takes rank 0's value on every rank (MXNet's
workers push their initial values to the servers, which keep the first). `push` sums a key's
values over this process's contexts, then over all processes (one grouped allreduce for all the
keys of a call), and hands the sum to the updater or stores it; every process runs the same
optimizer on the same sum, so the stored weights stay equal everywhere. That replaces MXNet's
server-side update: the arithmetic is the same, with no servers. `pull` copies the stored value.
"""
from .. import _core
from .. import distributed
from ..base import MXNetError
from ..context import cpu
from ..optimizer import Optimizer
from .kvstore import KVStore, _key_values

__all__ = ['DistKVStore']


class DistKVStore(KVStore):
    """The store of a 'dist_sync' job: `mx.kv.create('dist_sync')` in every process."""

    def __init__(self, kv_type='dist_sync'):
        distributed.init()
        super().__init__(kv_type)

    @property
    def rank(self):
        """This worker's rank in [0, num_workers)."""
        return distributed.rank()

    @property
    def num_workers(self):
        """The number of worker processes."""
        return distributed.size()

    def init(self, key, value):
        """Stores rank 0's `value` under `key` on every rank (a key is initialized once)."""
        pairs = _key_values(key, value, 'init')
        copies = []
        for k, arrays in pairs:
            self._check_key_type(k)
            if k in self._store or any(k == c for c, _ in copies):
                raise MXNetError('duplicate init of key %r. Please double check if you called '
                                 'kv.init or kv.broadcast with this key multiple times' % (k,))
            copies.append((k, arrays[0].copyto(cpu(0))))
        _core._dist_broadcast([c for _, c in copies], 0)
        self._store.update(copies)

    def push(self, key, value, priority=0):
        """Sums each key's values over the contexts and over all workers, then updates (or
        replaces) the stored value. Every worker pushes the same keys in the same order."""
        merged = [(k,) + self._merge(k, arrays) for k, arrays in _key_values(key, value, 'push')]
        _core._dist_allreduce([m for _, m, _ in merged], 0)
        for k, total, stored in merged:
            self._apply(k, total, stored)

    def set_optimizer(self, optimizer):
        """Every worker runs `optimizer` on the summed gradients (MXNet sends it to the
        servers; here each worker keeps the same replica)."""
        if not isinstance(optimizer, Optimizer):
            raise MXNetError('set_optimizer takes an Optimizer, got %s' % type(optimizer).__name__)
        super().set_optimizer(optimizer)

    def barrier(self):
        """Returns when every worker has called it."""
        distributed.barrier()

    def _barrier(self):
        self.barrier()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Rank 0 writes the updater's states (they are the same on every worker)."""
        if distributed.is_writer():
            super().save_optimizer_states(fname, dump_optimizer)
