"""`nd.contrib`: the registry's `_contrib_*` ops under their short names, as MXNet lays them
out (`nd.contrib.X` is the op `_contrib_X`). Generated from the registry at import."""
from .. import _core
from ..base import _cf_regroup, _register_prefixed

_register_prefixed(globals(), '_contrib_', lambda name, short: _core.get_op(name))
from ._contrib_adamw import *  # noqa: E402,F401,F403 (MXNet's AdamW front ends)


def _op(name, *args, **kwargs):
    return _core.get_op(name)(*args, **kwargs)


def isinf(data):
    """1 where an element of `data` is +inf or -inf, else 0 (data's dtype), as MXNet's
    `nd.contrib.isinf`: |data| == inf."""
    return _op('_equal_scalar', _op('abs', data), scalar=float('inf'))


def isfinite(data):
    """1 where an element of `data` is finite (neither inf nor NaN), else 0 (data's dtype):
    |data| != inf and data == data, as MXNet's `nd.contrib.isfinite`."""
    not_inf = _op('_not_equal_scalar', _op('abs', data), scalar=float('inf'))
    return _op('_logical_and', not_inf, _op('_equal', data, data))


def isnan(data):
    """1 where an element of `data` is NaN, else 0 (data's dtype): data != data, as MXNet's
    `nd.contrib.isnan`."""
    return _op('_not_equal', data, data)


# ---- control flow, run imperatively: the Python body runs op by op (autograd records it) ----
def _cf_flatten(args, what):
    """Flattens a nested list of NDArrays; the format regroups them (an int: a bare array (0)
    or a list of that many, a list: nested formats), as MXNet's control-flow functions do."""
    from .ndarray import NDArray
    if isinstance(args, NDArray):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise ValueError('%s must be an NDArray or a (nested) list of NDArrays, but got %s of '
                         'type %s' % (what, args, type(args)))
    flat, fmts = [], []
    for item in args:
        f, fmt = _cf_flatten(item, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _cf_scalar(value, type_, what):
    if hasattr(value, 'asscalar'):
        value = value.asscalar()
    try:
        return type_(value)
    except (TypeError, ValueError):
        raise ValueError('Cannot convert %s to python %s' % (what, type_.__name__)) from None


def foreach(body, data, init_states):
    """Runs `body(data[i], states) -> (outputs, states)` for each i along axis 0 of data (an
    NDArray or a list of them) and returns (outputs stacked along a new axis 0, final states),
    each in the nesting the body gave, as MXNet's `nd.contrib.foreach`."""
    from .ndarray import NDArray
    flat_data, _ = _cf_flatten(data, 'foreach input')
    _cf_flatten(init_states, 'foreach states')
    if not flat_data:
        raise ValueError('foreach needs at least one data array')
    num_iters = flat_data[0].shape[0]
    states = init_states
    steps, out_fmt = [], 0
    for i in range(num_iters):
        eles = data[i] if isinstance(data, NDArray) else [d[i] for d in data]
        outs, states = body(eles, states)
        outs, out_fmt = _cf_flatten(outs, 'foreach output')
        steps.append(outs)
    from . import stack
    outputs = [stack(*col, axis=0) for col in zip(*steps)]
    if steps:
        outputs, _ = _cf_regroup(outputs, out_fmt)
    return outputs, states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs `func(*loop_vars) -> (step_output, new_loop_vars)` while `cond(*loop_vars)` holds
    and fewer than max_iterations steps ran. Returns (step outputs stacked along axis 0 and
    padded with zeros to max_iterations rows, final loop_vars), as MXNet's
    `nd.contrib.while_loop` (whose padding rows are uninitialised)."""
    from .ndarray import NDArray
    from . import concat, zeros
    if max_iterations is None:
        raise ValueError('max_iterations should be specified')
    max_iterations = _cf_scalar(max_iterations, int, 'max_iteration')
    if len(loop_vars) == 0:
        raise ValueError('loop_vars should contain at least one element')
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    steps, outputs, out_fmt = 0, [], None
    while steps < max_iterations and _cf_scalar(cond(*loop_vars), bool, 'Return value of cond'):
        step_output, new_vars = func(*loop_vars)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        step_output = list(step_output) if isinstance(step_output, tuple) else step_output
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError('The length of loop_vars should be consistent during the loop')
        step_output, out_fmt = _cf_flatten(step_output, 'while output')
        if outputs and len(step_output) != len(outputs[0]):
            raise ValueError('Number of elements in step_output should be the same in each step')
        outputs.append(step_output)
        loop_vars = new_vars
        steps += 1
    stacked = []
    for i_th, items in enumerate(zip(*outputs), 1):
        items = [x.expand_dims(0) for x in items]
        if steps != max_iterations:
            items.append(zeros([max_iterations - steps] + list(items[0].shape[1:]),
                               ctx=items[0].context, dtype=items[0].dtype))
        try:
            stacked.append(concat(*items, dim=0))
        except Exception:
            raise ValueError('\n'.join(
                ['Shapes of %d-th elements in step_outputs are inconsistent, which are:' % i_th]
                + ['  Step %d, shape is %s' % (i, str(x.shape)) for i, x in enumerate(items)]))
    if out_fmt is not None:
        stacked, _ = _cf_regroup(stacked, out_fmt)
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """then_func() if pred (a scalar NDArray or number) is true, else else_func(), as MXNet's
    `nd.contrib.cond`."""
    if _cf_scalar(pred, bool, 'pred'):
        return then_func()
    return else_func()
