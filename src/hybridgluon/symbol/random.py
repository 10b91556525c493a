"""`sym.random`: sampling nodes (MXNet's `mx.sym.random`), drawing from the global generator
that `mx.random.seed` seeds when the graph runs.

Each function with number parameters builds its `_random_<dist>` node; with Symbol parameters
MXNet uses the `_sample_<dist>` op (one draw per parameter element). A function exists here
when its op is registered, so a distribution added in C appears without a change here; where
only one of the two ops exists, the other form raises MXNetError naming the missing op."""
import sys

from .. import _core
from ..base import MXNetError
from .symbol import Symbol
from .op import _invoke

__all__ = []

# MXNet's function: its parameters with defaults, in order.
_DISTRIBUTIONS = {
    'uniform': (('low', 0.0), ('high', 1.0)),
    'normal': (('loc', 0.0), ('scale', 1.0)),
    'poisson': (('lam', 1.0),),
    'exponential': (('scale', 1.0),),
    'gamma': (('alpha', 1.0), ('beta', 1.0)),
    'negative_binomial': (('k', 1), ('p', 1.0)),
    'generalized_negative_binomial': (('mu', 1.0), ('alpha', 1.0)),
}


def _has(op):
    return op in _core.list_ops()


def _build(op, inputs, attrs, kwargs):
    """The op's node (named after the op, as MXNet's _internal functions name theirs)."""
    attrs = {k: v for k, v in attrs.items() if v is not None}
    attrs.update(kwargs)
    return _invoke(op, tuple(inputs), attrs, op.lower())


def _make(dist, params):
    names = [p for p, _ in params]

    def fn(*args, **kwargs):
        vals = dict(params)
        for name, v in zip(names, args[:len(names)]):
            vals[name] = v
        for name in names:
            if name in kwargs:
                vals[name] = kwargs.pop(name)
        rest = args[len(names):]
        shape = kwargs.pop('shape', rest[0] if rest else None)
        dtype = kwargs.pop('dtype', rest[1] if len(rest) > 1 else None)
        ps = [vals[n] for n in names]
        if all(isinstance(p, Symbol) for p in ps):
            op = '_sample_' + dist
            inputs, attrs = ps, {'shape': shape, 'dtype': dtype}
        elif not any(isinstance(p, Symbol) for p in ps):
            op = '_random_' + dist
            inputs, attrs = (), dict(vals, shape=shape, dtype=dtype)
        else:
            raise ValueError('Distribution parameters must all be Symbols or all numbers, got '
                             '%s' % [type(p).__name__ for p in ps])
        if not _has(op):
            raise MXNetError('sym.random.%s with these parameters needs the %s operator, which '
                             'this build does not have' % (dist, op))
        return _build(op, inputs, attrs, kwargs)
    fn.__name__ = dist
    fn.__doc__ = ('Samples from the %s distribution (parameters %s, numbers or Symbols), as '
                  'MXNet\'s sym.random.%s.' % (dist, ', '.join(names), dist))
    return fn


def _make_like(dist, params):
    names = [p for p, _ in params]
    op = '_random_%s_like' % dist

    def fn(data=None, *args, **kwargs):
        vals = dict(params)
        for name, v in zip(names, args):
            vals[name] = v
        for name in names:
            if name in kwargs:
                vals[name] = kwargs.pop(name)
        return _build(op, (data,), vals, kwargs)
    fn.__name__ = dist + '_like'
    fn.__doc__ = ('Samples from the %s distribution with the shape and dtype of data.' % dist)
    return fn


def randn(*shape, **kwargs):
    """Normal samples of the given shape (MXNet's sym.random.randn(*shape, loc, scale,
    dtype))."""
    loc = kwargs.pop('loc', 0.0)
    scale = kwargs.pop('scale', 1.0)
    return normal(loc=loc, scale=scale, shape=shape, **kwargs)  # noqa: F821 (bound below)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Integers uniformly from [low, high) (int32 by default)."""
    return _build('_random_randint', (), {'low': low, 'high': high, 'shape': shape,
                                          'dtype': dtype}, kwargs)


def shuffle(data, **kwargs):
    """data with its rows (axis 0) randomly permuted."""
    return _build('_shuffle', (data,), {}, kwargs)


def multinomial(data, shape=None, get_prob=False, dtype='int32', **kwargs):
    """Samples from the categorical distributions in the rows of data (MXNet's
    sym.random.multinomial); get_prob=True adds the log-probabilities of the draws."""
    return _build('_sample_multinomial', (data,), {'shape': shape, 'get_prob': get_prob,
                                                   'dtype': dtype}, kwargs)


def _bind():
    module = sys.modules[__name__]
    for dist, params in _DISTRIBUTIONS.items():
        if _has('_random_' + dist) or _has('_sample_' + dist):
            setattr(module, dist, _make(dist, params))
            __all__.append(dist)
        if _has('_random_%s_like' % dist):
            setattr(module, dist + '_like', _make_like(dist, params))
            __all__.append(dist + '_like')
    for name, op in (('randn', '_random_normal'), ('randint', '_random_randint'),
                     ('shuffle', '_shuffle'), ('multinomial', '_sample_multinomial')):
        if _has(op):
            __all__.append(name)
        else:
            delattr(module, name)


_bind()
