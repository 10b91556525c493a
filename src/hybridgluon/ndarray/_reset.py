"""nd.reset_arrays: MXNet's multi-array zeroing (what ParameterDict.zero_grad uses there)."""
from .. import _core
from ..base import _MXNetValueError
from .ndarray import NDArray

__all__ = ['reset_arrays']


def reset_arrays(*data, num_arrays=None, **kwargs):
    """Sets every array of `data` to 0 in place and returns [] (MXNet's op writes its inputs
    and has no outputs). num_arrays, when given, must be len(data)."""
    if kwargs:
        raise _MXNetValueError('reset_arrays: unexpected arguments %s' % sorted(kwargs))
    if num_arrays is not None and num_arrays != len(data):
        raise _MXNetValueError('reset_arrays: num_arrays=%d but %d arrays were given'
                               % (num_arrays, len(data)))
    zeros_like = _core.get_op('zeros_like')
    for arr in data:
        if not isinstance(arr, NDArray):
            raise _MXNetValueError('reset_arrays: expected NDArrays, got %s' % type(arr).__name__)
        zeros_like(arr, out=arr)
    return []
