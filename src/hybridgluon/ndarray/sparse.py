"""MXNet's `mx.nd.sparse`, for dense storage only.

hybridgluon has no sparse storage (row_sparse, csr; docs/compat.md). This module is importable so
code that merely mentions it runs, and it keeps MXNet's names, but:
- anything that makes or needs a sparse array (csr_matrix, row_sparse_array, array, retain,
  zeros/empty with a sparse stype, cast_storage to a sparse stype) raises MXNetError saying so;
- what MXNet also does on dense arrays (zeros/empty/cast_storage with stype='default', and the ops
  MXNet lists here, which are the ordinary dense ops: dot, elemwise_add, sum, sgd_update, ...) is
  that dense function, with MXNet's result.
`CSRNDArray`, `RowSparseNDArray` and `BaseSparseNDArray` exist for isinstance checks (which are
always False: no array here is sparse) and cannot be constructed.
"""
from .. import _core
from ..base import MXNetError, _MXNetValueError
from .ndarray import NDArray

__all__ = ['BaseSparseNDArray', 'CSRNDArray', 'RowSparseNDArray', 'csr_matrix',
           'row_sparse_array', 'array', 'zeros', 'empty', 'retain', 'cast_storage', 'add',
           'subtract', 'multiply', 'divide']


def _unsupported(what):
    return MXNetError('%s: sparse storage (row_sparse, csr) is not supported by hybridgluon; '
                      'only dense (default) arrays exist' % what)


class BaseSparseNDArray(NDArray):
    """MXNet's base class of sparse arrays; none can be made here."""

    def __new__(cls, *args, **kwargs):
        raise _unsupported(cls.__name__)


class CSRNDArray(BaseSparseNDArray):
    """A compressed-sparse-row array in MXNet; not available here."""


class RowSparseNDArray(BaseSparseNDArray):
    """A row-sparse array in MXNet; not available here."""


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    raise _unsupported('csr_matrix')


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    raise _unsupported('row_sparse_array')


def _check_stype(what, stype):
    if stype == 'default':
        return
    if stype in ('row_sparse', 'csr'):
        raise _unsupported('%s(stype=%r)' % (what, stype))
    raise _MXNetValueError('%s: unknown storage type %r' % (what, stype))


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """Zeros of storage type `stype`: 'default' gives nd.zeros (as in MXNet); sparse types raise
    MXNetError."""
    _check_stype('zeros', stype)
    from . import zeros as _zeros
    return _zeros(shape, ctx=ctx, dtype=dtype, **kwargs)


def empty(stype, shape, ctx=None, dtype=None):
    """MXNet's sparse.empty accepts only the sparse storage types, which do not exist here."""
    if stype in ('row_sparse', 'csr'):
        raise _unsupported('empty(stype=%r)' % (stype,))
    raise _MXNetValueError('empty: unknown stype : %s' % (stype,))


def array(source_array, ctx=None, dtype=None):
    """Makes a sparse array in MXNet (from a sparse NDArray or a scipy CSR matrix): unsupported.
    A dense source is refused as MXNet refuses it (use nd.array / tostype)."""
    if isinstance(source_array, NDArray):
        raise _unsupported('array (MXNet builds sparse arrays from sparse ones only; use '
                           '`tostype` or nd.array for dense data)')
    raise _unsupported('array')


def retain(data, indices, **kwargs):
    """MXNet's `_sparse_retain` takes a RowSparseNDArray only (it refuses dense input too)."""
    raise _unsupported('retain (it takes a RowSparseNDArray)')


def cast_storage(data, stype, **kwargs):
    """To `stype`: 'default' (dense to dense) is a copy, as MXNet's cast_storage gives; sparse
    types raise MXNetError."""
    _check_stype('cast_storage', stype)
    out = kwargs.pop('out', None)
    if kwargs:
        raise _MXNetValueError('cast_storage: unexpected arguments %s' % sorted(kwargs))
    if out is None:
        return data.copy()
    data.copyto(out)
    return out


def _binary(name, elemwise, broadcast, scalar):
    def fn(lhs, rhs):
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            op = elemwise if lhs.shape == rhs.shape else broadcast
            return _core.get_op(op)(lhs, rhs)
        return scalar(lhs, rhs)
    fn.__name__ = name
    fn.__doc__ = ('`%s` of two arrays or an array and a scalar: dense operands give the dense '
                  'result MXNet gives (element-wise when the shapes agree, else broadcast).'
                  % name)
    return fn


add = _binary('add', 'elemwise_add', 'broadcast_add', lambda a, b: a + b)
subtract = _binary('subtract', 'elemwise_sub', 'broadcast_sub', lambda a, b: a - b)
multiply = _binary('multiply', 'elemwise_mul', 'broadcast_mul', lambda a, b: a * b)
divide = _binary('divide', 'elemwise_div', 'broadcast_div', lambda a, b: a / b)

# The ops MXNet 1.9.1 binds into mx.nd.sparse (those with a sparse kernel). On dense arrays they are
# the ordinary ops, so each is the registry's op where it exists.
_SPARSE_NAMESPACE_OPS = (
    'ElementWiseSum', 'Embedding', 'FullyConnected', 'LinearRegressionOutput',
    'LogisticRegressionOutput', 'MAERegressionOutput', 'abs', 'adagrad_update', 'adam_update',
    'add_n', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctanh', 'broadcast_add',
    'broadcast_div', 'broadcast_minus', 'broadcast_mul', 'broadcast_plus', 'broadcast_sub',
    'cbrt', 'ceil', 'clip', 'concat', 'cos', 'cosh', 'degrees', 'dot', 'elemwise_add',
    'elemwise_div', 'elemwise_mul', 'elemwise_sub', 'exp', 'expm1', 'fix', 'floor',
    'ftrl_update', 'gamma', 'gammaln', 'log', 'log10', 'log1p', 'log2', 'make_loss', 'mean',
    'negative', 'norm', 'radians', 'relu', 'rint', 'round', 'rsqrt', 'sgd_mom_update',
    'sgd_update', 'sigmoid', 'sign', 'sin', 'sinh', 'slice', 'sqrt', 'square', 'stop_gradient',
    'sum', 'tan', 'tanh', 'trunc', 'where', 'zeros_like')


def _bind_ops(namespace):
    registered = set(_core.list_ops())
    for name in list(registered):
        registered.update(_core.op_info(name)['aliases'])
    for name in _SPARSE_NAMESPACE_OPS:
        if name in registered and name not in namespace:
            namespace[name] = _core.get_op(name)
            __all__.append(name)


_bind_ops(globals())
