"""`nd.random`: sampling from the global generator (seeded by `mx.random.seed`)."""
import numbers

from .. import _core
from ..base import _dtype_name
from ..context import current_context, _check_available
from .ndarray import NDArray, _place

__all__ = ['uniform', 'normal', 'randn', 'randint', 'shuffle', 'multinomial']


def _on(res, ctx, out):
    """A sampler's result: `out` as given, else the fresh array on `ctx` (default: current)."""
    return res if out is not None else _place(res, ctx or current_context())


def _shape(shape):
    """The sample's shape: (1,) for None, an integer (Python's or NumPy's) as one dim."""
    if shape is None:
        return (1,)
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        return (int(shape),)
    return tuple(int(d) if isinstance(d, numbers.Integral) else d for d in shape)


def _sample_op(op, params, shape, dtype, out, kwargs):
    """MXNet's array-parameter form: `shape` samples per element of the parameter arrays."""
    if not all(isinstance(p, NDArray) for p in params):
        raise ValueError('Distribution parameters must all be NDArrays or all numbers, got %s'
                         % [type(p).__name__ for p in params])
    return _core.get_op(op)(*params, shape=() if shape is None else _shape(shape),
                            dtype=None if dtype is None else _dtype_name(dtype), out=out,
                            **kwargs)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high). No shape: shape (1,). With NDArrays low and high: `shape`
    samples for each of their elements (shape low.shape + shape)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        return _sample_op('_sample_uniform', [low, high], shape, dtype, out, kwargs)
    _check_available(ctx or current_context())
    res = _core.get_op('_random_uniform')(low=float(low), high=float(high), shape=_shape(shape),
                                          dtype=_dtype_name(dtype), out=out)
    return _on(res, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale^2). No shape: shape (1,). With NDArrays loc and scale:
    `shape` samples for each of their elements (shape loc.shape + shape)."""
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        return _sample_op('_sample_normal', [loc, scale], shape, dtype, out, kwargs)
    _check_available(ctx or current_context())
    res = _core.get_op('_random_normal')(loc=float(loc), scale=float(scale), shape=_shape(shape),
                                         dtype=_dtype_name(dtype), out=out)
    return _on(res, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers uniformly from [low, high) (int32 by default)."""
    _check_available(ctx or current_context())
    res = _core.get_op('_random_randint')(low=int(low), high=int(high), shape=_shape(shape),
                                          dtype=_dtype_name(dtype or 'int32'), out=out)
    return _on(res, ctx, out)


def shuffle(data, **kwargs):
    """A copy of data with its rows (axis 0) randomly permuted."""
    return _core.get_op('_shuffle')(data, **kwargs)


def randn(*shape, **kwargs):
    """Normal samples of the given shape: randn(2, 3, loc=0, scale=1, dtype=None, ctx=None)."""
    loc = kwargs.pop('loc', 0)
    scale = kwargs.pop('scale', 1)
    return normal(loc=loc, scale=scale, shape=shape, **kwargs)


def multinomial(data, shape=None, get_prob=False, out=None, dtype='int32', **kwargs):
    """Draws category ids from the distributions in data's last axis: shape data.shape[:-1] +
    shape. get_prob=True also returns log(p) of each draw (a list of two arrays), whose
    gradient reaches data (the REINFORCE estimator)."""
    return _core.get_op('_sample_multinomial')(data, shape=() if shape is None else _shape(shape),
                                               get_prob=get_prob, dtype=dtype, out=out, **kwargs)
