"""MXNet's Python front ends of the AdamW update ops in `nd.contrib` (adamw_update,
mp_adamw_update, multi_adamw_update, multi_mp_adamw_update): rescale_grad may be a Python
number (made a one-value float32 array, as MXNet's _get_rescale_grad does), and the multi forms
take lists of weights, gradients and states that are flattened into the op's inputs."""
from ..base import MXNetError
from .ndarray import NDArray
from . import _internal

__all__ = ['adamw_update', 'mp_adamw_update', 'multi_adamw_update', 'multi_mp_adamw_update']


def _get_rescale_grad(rescale_grad, ctx):
    if not isinstance(rescale_grad, NDArray):
        from . import full  # the package's creation function (defined before contrib loads)
        return full(shape=(1,), val=rescale_grad, ctx=ctx)
    return rescale_grad.as_in_context(ctx)


def _float_tuple(name, values, size):
    """The per-weight values as the op's tuple text; '%.9g' keeps every float32 exactly (the
    ops, like MXNet's Tuple<float>, read float32 values)."""
    values = [float(v) for v in values]
    if len(values) != size:
        raise MXNetError('%s: %d values for %d weights' % (name, len(values), size))
    return '(%s)' % ','.join('%.9g' % v for v in values)


def _call_multi(op, inputs, out, **attrs):
    """Runs a multi-output update op; with `out` a list, the new weights are written into it
    (the op's outputs are fresh arrays here)."""
    if out is None or isinstance(out, NDArray):
        return op(*inputs, out=out, **attrs) if out is not None else op(*inputs, **attrs)
    outs = list(out)
    res = op(*inputs, **attrs)
    res = res if isinstance(res, (list, tuple)) else [res]
    if len(outs) != len(res):
        raise MXNetError('%s: out has %d arrays for %d weights' % (op, len(outs), len(res)))
    for dst, src in zip(outs, res):
        dst[:] = src
    return out


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW on one weight; mean and var are updated in place."""
    rescale_grad = _get_rescale_grad(rescale_grad, weight.context)
    return _internal._adamw_update(weight, grad, mean, var, rescale_grad, lr=lr, eta=eta,
                                   beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                   clip_gradient=clip_gradient, out=out, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """AdamW with a float32 master copy weight32 (updated in place with mean and var)."""
    rescale_grad = _get_rescale_grad(rescale_grad, weight.context)
    return _internal._mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr=lr,
                                      eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                      clip_gradient=clip_gradient, out=out, **kwargs)


def _multi(op, groups, weights, rescale_grad, lrs, wds, etas, out, size, kwargs):
    size = size or len(weights)
    rescale_grad = _get_rescale_grad(rescale_grad, weights[0].context)
    inputs = [a for group in zip(*groups) for a in group] + [rescale_grad]
    return _call_multi(op, inputs, out, num_weights=size, lrs=_float_tuple('lrs', lrs, size),
                       wds=_float_tuple('wds', wds, size),
                       etas=_float_tuple('etas', etas, size), **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """AdamW on lists of weights (per-weight lrs, wds, etas); returns the new weights."""
    return _multi(_internal._multi_adamw_update, (weights, grads, mean, var), weights,
                  rescale_grad, lrs, wds, etas, out, size, kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Multi-weight AdamW with float32 master copies weights32 (updated in place)."""
    return _multi(_internal._multi_mp_adamw_update, (weights, grads, mean, var, weights32),
                  weights, rescale_grad, lrs, wds, etas, out, size, kwargs)
