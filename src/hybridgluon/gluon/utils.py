"""Small helpers of Gluon (MXNet's `gluon.utils`): hook handles, batch splitting over contexts,
global-norm clipping, and the formatting helpers that the Block and Parameter messages rely on."""
import math
import warnings
import weakref

__all__ = ['split_data', 'split_and_load', 'clip_global_norm', 'HookHandle', 'shape_is_known']


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits an NDArray into `num_slice` slices along `batch_axis` (a list of NDArrays, even
    when `num_slice` is 1).

    With even_split=False the first `size % num_slice` slices get one extra row (MXNet 1.9.1:
    5 rows in 3 slices are 2, 2, 1; 2 rows in 3 slices are 1, 1, 0). Slices along axis 0 are
    views of `data`; along another axis they are copies (slice_axis).
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(data.shape), num_slice, batch_axis, num_slice))
    each, extras = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + each + (1 if i < extras else 0))
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [data.slice_axis(batch_axis, bounds[i], bounds[i + 1]) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits `data` along `batch_axis` and puts slice i on `ctx_list[i]` (a copy, or the
    slice itself when it already lives there). Non-NDArray data becomes an array on
    `ctx_list[0]` first."""
    from .. import ndarray as nd
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [i.as_in_context(ctx) for i, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescales `arrays` in place so that their global 2-norm (of all their elements together)
    is at most `max_norm`: each is multiplied by min(1, max_norm / (norm + 1e-8)). The arrays
    may live on different contexts; the norm is computed on the first one's.

    Returns the norm before rescaling: a NumPy scalar when check_isfinite (which also warns when
    it is nan or inf), else an NDArray of shape (1,) on the first array's context.
    """
    from .. import ndarray as nd
    from ..base import MXNetError
    if not arrays:
        raise MXNetError('clip_global_norm: arrays is empty (give a list of NDArrays)')
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        squares.append(nd.dot(flat, flat).as_in_context(ctx))
    total_norm = nd.sqrt(nd.add_n(*squares))
    norm = total_norm.asscalar()
    if check_isfinite and not math.isfinite(norm):
        warnings.warn(UserWarning('nan or inf is detected. Clipping results will be undefined.'),
                      stacklevel=2)
    scale = nd.broadcast_minimum(max_norm / (total_norm + 1e-8), nd.ones((1,), ctx=ctx))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return norm if check_isfinite else total_norm


def shape_is_known(shape):
    """Whether every dimension of `shape` is known (a 0 or -1 dim is unknown; None is)."""
    if shape is None:
        return False
    for dim in shape:
        if dim < -1:
            raise ValueError('Invalid shape %s: dimensions must be >= -1' % str(shape))
        if dim in (0, -1):
            return False
    return True


class HookHandle:
    """Detaches a forward (pre-)hook from its Block: `handle.detach()` or `with handle:`."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Adds `hook` to `hooks_dict` (an OrderedDict of the block); once per handle."""
        if self._hooks_dict_ref is not None:
            raise AssertionError('The same handle cannot be attached twice.')
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Removes the hook; harmless if it is already gone."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref else None, self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(dict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def _indent(s_, num_spaces):
    """Indents every line of `s_` but the first by `num_spaces`."""
    lines = s_.split('\n')
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    return '\n'.join([first] + [(num_spaces * ' ') + line for line in lines])


def _brief_print_list(lst, limit=7):
    """`'a', 'b', 'c', ..., 'w', 'x', 'y', 'z'`: at most `limit` quoted names."""
    lst = list(lst)
    if len(lst) > limit:
        return (_brief_print_list(lst[:limit // 2], limit) + ', ..., ' +
                _brief_print_list(lst[-limit // 2:], limit))
    return ', '.join(["'%s'" % str(i) for i in lst])
