"""`nd.CachedOp`: a Symbol compiled once and called on NDArrays (MXNet's `mx.nd.CachedOp`).

The arguments are the symbol's inputs in `list_inputs()` order. Under `autograd.record()` the
call is one node of the tape, so gradients flow to the arguments (the C CachedOp's rule)."""
from .. import _core
from ..base import MXNetError

__all__ = ['CachedOp']

_FLAGS = {'static_alloc', 'static_shape'}


class CachedOp:
    """Runs `sym` on NDArrays. `flags`: (name, value) pairs as MXNet's (static_alloc,
    static_shape; other MXNet flags tune its engine and change no result here)."""

    def __init__(self, sym, flags=()):
        opts = {}
        for key, value in (flags.items() if isinstance(flags, dict) else flags):
            if key in _FLAGS:
                opts[key] = str(value).lower() in ('true', '1')
        self._sym = sym
        self._names = sym.list_inputs()
        self._op = _core.CachedOp(sym, self._names, **opts)

    def __call__(self, *args, **kwargs):
        out = kwargs.pop('out', None)
        kwargs.pop('default_ctx', None)
        if kwargs:
            raise TypeError('CachedOp.__call__ got unexpected keyword argument(s) %s'
                            % sorted(kwargs))
        if len(args) != len(self._names):
            raise MXNetError('CachedOp: expected %d inputs (%s), got %d'
                             % (len(self._names), ', '.join(self._names), len(args)))
        res = self._op(*args)
        if isinstance(res, (list, tuple)) and len(res) == 1:
            res = res[0]  # one output: the array itself, as MXNet's
        if out is None:
            return res
        outs = out if isinstance(out, (list, tuple)) else [out]
        got = res if isinstance(res, (list, tuple)) else [res]
        if len(outs) != len(got):
            raise MXNetError('CachedOp: out has %d arrays for %d outputs' % (len(outs), len(got)))
        for dst, src in zip(outs, got):
            src.copyto(dst)
        return out
