"""Checkpoints and the parameter-update plumbing of the Module API (MXNet's `mx.model`).

A checkpoint is MXNet's pair of files: `<prefix>-symbol.json` (the symbol) and
`<prefix>-<epoch:04d>.params` (an NDArray dict whose keys are `arg:<name>` for arguments and
`aux:<name>` for auxiliary states). The helpers below decide whether a kvstore is used and
whether the optimizer runs inside it, and move gradients and weights through it.
"""
import logging
import os
from collections import namedtuple

from . import kvstore as kvs
from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError

__all__ = ['BatchEndParam', 'save_checkpoint', 'load_checkpoint', 'load_params']

BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) for the `kvstore` argument of fit/init_optimizer:
    a KVStore is used as given; a type name makes one only where there is something to reduce
    (several devices). MXNET_UPDATE_ON_KVSTORE=0 keeps the optimizer out of the store, as does
    a 'local' store over a parameter of more than 16M elements (MXNet's rule)."""
    update_on_kvstore = bool(int(os.getenv('MXNET_UPDATE_ON_KVSTORE', '1')))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == 'local' and arg_params:
                largest = max(_size(p.shape) for p in arg_params.values())
                if largest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError('kvstore must be KVStore, str or None')
    if kv is None:
        return None, False
    return kv, update_on_kvstore and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Stores each parameter's value under its name; when the store runs the optimizer, every
    device's copy is also set to it."""
    for name, on_devices in zip(param_names, param_arrays):
        if update_on_kvstore:
            kvstore.broadcast(name, arg_params[name], out=on_devices)
        else:
            kvstore.init(name, arg_params[name])


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Pushes each parameter's gradients (one per device) to the store, whose optimizer updates
    the stored weight, and pulls the new weight back to every device."""
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        kvstore.pushpull(param_names[index], grads, out=weights, priority=-index)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None):
    """Updates every device's copy of each parameter with `updater`, after summing the
    gradients across devices through `kvstore` when there is one. The updater index of
    parameter i on device k is i * num_device + k (MXNet's numbering)."""
    per_device = [[] for _ in range(num_device)]
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        if kvstore:
            kvstore.pushpull(param_names[index], grads, priority=-index)
        for k, (w, g) in enumerate(zip(weights, grads)):
            per_device[k].append((index * num_device + k, g, w))
    for updates in per_device:
        if updates:
            indices, grads, weights = zip(*updates)
            updater(list(indices), list(grads), list(weights))


def _multiple_callbacks(callbacks, *args, **kwargs):
    """Calls one callback or each of a list of them."""
    if isinstance(callbacks, (list, tuple)):
        for cb in callbacks:
            cb(*args, **kwargs)
    elif callbacks:
        callbacks(*args, **kwargs)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes `prefix-symbol.json` (when symbol is not None) and `prefix-<epoch>.params`."""
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {'arg:%s' % k: v.as_in_context(_cpu()) for k, v in arg_params.items()}
    save_dict.update({'aux:%s' % k: v.as_in_context(_cpu()) for k, v in aux_params.items()})
    param_name = '%s-%04d.params' % (prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def _cpu():
    from .context import cpu
    return cpu()


def load_params(prefix, epoch):
    """(arg_params, aux_params) read from `prefix-<epoch>.params`."""
    loaded = nd.load('%s-%04d.params' % (prefix, epoch))
    if not isinstance(loaded, dict):
        raise MXNetError('load_params: %s-%04d.params holds an unnamed list of arrays, not the '
                         'arg:/aux: dict of a checkpoint' % (prefix, epoch))
    arg_params, aux_params = {}, {}
    for key, value in loaded.items():
        kind, _, name = key.partition(':')
        if kind == 'arg':
            arg_params[name] = value
        elif kind == 'aux':
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) of the checkpoint `prefix` at `epoch`."""
    symbol = sym.load('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
