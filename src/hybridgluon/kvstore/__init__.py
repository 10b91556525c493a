"""Key-value stores (MXNet's `mx.kv` / `mx.kvstore`): `mx.kv.create('local' | 'device')`.

Only the single-process stores exist here; they are what `gluon.Trainer` uses to sum gradients
across the contexts of one process and, with `update_on_kvstore`, to run the optimizer once.
"""
from .kvstore import KVStoreBase, KVStore, create

__all__ = ['KVStoreBase', 'KVStore', 'create']
