"""The module-level `__getattr__` shared by `mx.np` and `mx.npx`: every public name raises
MXNetError saying NumPy semantics are not supported, instead of handing out a look-alike."""
from ..base import MXNetError


class NumpySemanticsError(MXNetError, AttributeError):
    """A name of mx.np / mx.npx was used. Also an AttributeError, so `hasattr(mx.np, 'x')` is
    False and `getattr(mx.np, 'x', None)` is None, as for any absent attribute."""


def make_getattr(module):
    def __getattr__(name):
        if name.startswith('_'):
            raise AttributeError('module %r has no attribute %r' % (module, name))
        raise NumpySemanticsError(
            '%s.%s: mx.np / mx.npx (MXNet\'s NumPy-semantics arrays and operators) are not '
            'supported by hybridgluon; use mx.nd (classic NDArray semantics)'
            % (module.replace('hybridgluon', 'mx', 1), name))
    return __getattr__
