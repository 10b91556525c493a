"""The Symbol checks of `mx.test_utils` (part of hybridgluon.test_utils, split off for size):
simple_forward, numeric_grad, check_numeric_gradient, check_symbolic_forward/backward and
check_consistency, with MXNet 1.9.1's signatures and semantics.

`_symbol_runner` is the only code here that evaluates a Symbol: `Symbol.bind` + the
executor's forward and backward, so these checks exercise the executor MXNet's tests drive,
which runs the same planned CachedOp as hybridize.
"""
import traceback

import numpy as np

from . import _core
from . import symbol as _symbol
from . import ndarray as nd
from .base import MXNetError, _np_dtype
from .context import num_gpus
from .ndarray import NDArray
from .symbol import Symbol
from .test_utils import (_numpy, assert_almost_equal, default_context, default_dtype,
                         default_numeric_eps, get_tolerance, get_tols)

_REQS = ('write', 'add', 'null')
_FLOAT32 = _core.DTYPE_FLAGS['float32']


def _symbol_runner(sym, ctx):
    """A function run(values, is_train, grads=None, out_grads=None) -> [output NDArrays].

    values maps every input name of `sym` (arguments and auxiliary states) to an NDArray on
    `ctx`. grads maps argument names to (buffer, req), req 'write' or 'add': after the call the
    buffer holds the gradient ('write') or its old value plus the gradient ('add'); arguments
    left out get none ('null'). out_grads: the head gradients, one per output (None: ones).
    Each call is `sym.bind` + `forward` (+ `backward` when there are grads): the executor
    MXNet's tests use, running the planned graph hybridize runs."""
    args, aux = sym.list_arguments(), sym.list_auxiliary_states()
    names = sym.list_inputs()

    def run(values, is_train=False, grads=None, out_grads=None):
        missing = [n for n in names if n not in values]
        if missing:
            raise MXNetError('no value given for input(s) %s of the symbol (inputs: %s)'
                             % (', '.join(missing), ', '.join(names)))
        grads = grads or {}
        exe = sym.bind(ctx, {n: values[n] for n in args},
                       args_grad={n: g for n, (g, _) in grads.items()},
                       grad_req={n: req for n, (_, req) in grads.items()},
                       aux_states={n: values[n] for n in aux})
        outs = list(exe.forward(is_train=is_train))
        if grads:
            exe.backward(out_grads, is_train=is_train)
        return outs
    return run


# ---- arguments ------------------------------------------------------------------------------
def _to_nd(value, ctx, dtype):
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return nd.array(value, ctx=ctx, dtype=value.dtype if dtype == 'asnumpy' else dtype)


def _named_arrays(names, given, ctx, dtype, mismatch):
    """given (a list in `names` order, or a dict by name) as name -> NDArray, sorted by name.
    NumPy arrays become NDArrays of `dtype` ('asnumpy': their own). A dict whose keys are not
    `names` raises ValueError(mismatch % (names, keys))."""
    assert dtype == 'asnumpy' or dtype in (np.float16, np.float32, np.float64)
    if isinstance(given, dict):
        if set(given) != set(names):
            raise ValueError(mismatch % (set(names), set(given)))
    else:
        given = dict(zip(names, given))
    return {k: _to_nd(given[k], ctx, dtype) for k in sorted(given)}


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """The arguments, in list_arguments() order or by name (MXNet's message on a mismatch)."""
    assert isinstance(location, (dict, list, tuple))
    return _named_arrays(sym.list_arguments(), location, ctx, dtype,
                         'Symbol arguments and keys of the given location do not match.'
                         'symbol args:%s, location.keys():%s')


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """The auxiliary states likewise; None stays None."""
    if aux_states is None:
        return None
    return _named_arrays(sym.list_auxiliary_states(), aux_states, ctx, dtype,
                         'Symbol aux_states names and given aux_states do not match.'
                         'symbol aux_names:%s, aux_states.keys:%s')


def _grad_reqs(grad_req, names):
    if isinstance(grad_req, str):
        reqs = {k: grad_req for k in names}
    elif isinstance(grad_req, (list, tuple)):
        reqs = dict(zip(names, grad_req))
    else:
        reqs = dict(grad_req)
    for k, req in reqs.items():
        if req not in _REQS:
            raise ValueError('Invalid grad_req %s for argument %s' % (req, k))
    return reqs


def _head_grads(sym, out_grads, ctx, dtype):
    """out_grads as one NDArray per output; extra ones are ignored, as MXNet's executor
    does."""
    if out_grads is None:
        return None
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    return [_to_nd(g, ctx, dtype) for g in out_grads[:len(sym.list_outputs())]]


# ---- forward --------------------------------------------------------------------------------
def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs `sym` on NumPy inputs given by name; returns NumPy output(s)."""
    ctx = ctx or default_context()
    values = {k: nd.array(v, ctx=ctx) for k, v in inputs.items()}
    outs = [o.asnumpy() for o in _symbol_runner(sym, ctx)(values, is_train)]
    return outs[0] if len(outs) == 1 else outs


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Asserts that sym's outputs at `location` (prediction mode) match `expected` (a list in
    output order or a dict by output name). Returns the outputs."""
    ctx = ctx or default_context()
    values = _parse_location(sym, location, ctx, dtype)
    values.update(_parse_aux_states(sym, aux_states, ctx, dtype) or {})
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    outputs = _symbol_runner(sym, ctx)(values, is_train=False)
    for name, expect, output in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(expect, output, rtol, atol,
                            ('EXPECTED_%s' % name, 'FORWARD_%s' % name), equal_nan=equal_nan)
    return outputs


# ---- backward -------------------------------------------------------------------------------
def _check_grads(names, reqs, initial, grads, reference, rtol, atol, labels, equal_nan=False):
    """MXNet's rule per grad_req: 'write' compares the gradient, 'add' the gradient minus its
    initial value, 'null' requires the buffer untouched."""
    for name in names:
        got = grads[name].asnumpy()
        req = reqs[name]
        if req == 'add':
            got = got - initial[name]
        want = initial[name] if req == 'null' else reference[name]
        assert_almost_equal(want, got, rtol, atol, (labels[0] + name, labels[1] + name),
                            equal_nan=equal_nan)


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Asserts that the gradients of sym at `location` for head gradients `out_grads` match
    `expected` (a list in list_arguments() order or a dict by name), under grad_req ('write',
    'add': the buffer's initial value plus the gradient, 'null': the buffer unchanged).
    Gradient buffers start from random values. Returns them, name -> NDArray."""
    ctx = ctx or default_context()
    values = _parse_location(sym, location, ctx, dtype)
    values.update(_parse_aux_states(sym, aux_states, ctx, dtype) or {})
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    for k, stype in (grad_stypes or {}).items():
        if stype not in (None, 'default'):
            raise NotImplementedError('check_symbolic_backward: gradient storage type %r for %s '
                                      'is not supported (dense storage only)' % (stype, k))
    expected = {k: _numpy(v) for k, v in expected.items()}
    initial = {k: np.random.normal(size=np.shape(expected[k])) for k in sorted(expected)}
    buffers = {k: nd.array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype
                           if dtype == 'asnumpy' else dtype) for k, v in initial.items()}
    initial = {k: b.asnumpy() for k, b in buffers.items()}
    reqs = _grad_reqs(grad_req, sym.list_arguments())
    grads = {k: (b, reqs[k]) for k, b in buffers.items() if reqs.get(k, 'null') != 'null'}
    _symbol_runner(sym, ctx)(values, True, grads, _head_grads(sym, out_grads, ctx, dtype))
    _check_grads(list(expected), reqs, initial, buffers, expected, rtol, atol,
                 ('EXPECTED_', 'BACKWARD_'), equal_nan)
    return buffers


# ---- finite differences ---------------------------------------------------------------------
def _finite_differences(forward, location, eps, dtype):
    """Central differences of sum(forward(...)) for each element of each float array of
    `location` (name -> NumPy array). forward(name, value) evaluates with argument `name`
    set to `value` (the others at their location) and returns output 0 as NumPy."""
    grads = {}
    for name, value in location.items():
        value = np.array(value, dtype=dtype, order='C')
        grad = np.zeros(value.shape, dtype=dtype)
        if value.dtype.kind == 'f':
            flat = value.reshape(-1)
            for i in range(flat.size):
                old = flat[i]
                flat[i] = old + eps / 2.0
                f_plus = forward(name, value)
                flat[i] = old - eps / 2.0
                f_minus = forward(name, value)
                flat[i] = old
                grad.reshape(-1)[i] = (f_plus - f_minus).sum() / eps
        grads[name] = grad
    return grads


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype()):
    """Finite-difference gradients of the sum of output 0, name -> NumPy array, at `location`
    (name -> NumPy array). `executor`: an object with arg_dict, aux_dict, forward(is_train)
    and outputs (MXNet's Executor), or a Symbol whose arguments are all in `location`.
    Auxiliary states are reset to `aux_states` before each evaluation."""
    assert dtype in (np.float16, np.float32, np.float64)
    aux_states = aux_states or {}
    if isinstance(executor, Symbol):
        ctx = default_context()
        run = _symbol_runner(executor, ctx)
        values = {k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in location.items()}

        def forward(name, value):
            args = dict(values, **{name: nd.array(value, ctx=ctx, dtype=dtype)})
            args.update({k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in aux_states.items()})
            return run(args, use_forward_train)[0].asnumpy()
    else:
        for k, v in location.items():
            executor.arg_dict[k][:] = nd.array(v, dtype=dtype)

        def forward(name, value):
            executor.arg_dict[name][:] = nd.array(value, dtype=dtype)
            for k, v in aux_states.items():
                executor.aux_dict[k][:] = nd.array(v, dtype=dtype)
            executor.forward(is_train=use_forward_train)
            out = executor.outputs[0].asnumpy()
            executor.arg_dict[name][:] = nd.array(location[name], dtype=dtype)
            return out
    return _finite_differences(forward, location, eps, dtype)


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype()):
    """Asserts that the backward pass of single-output `sym` matches finite differences at
    `location`. As MXNet: the checked scalar is sum(sym * P) for a random projection P; grad_nodes
    (names, or a dict name -> grad_req) picks the arguments checked (default: all, 'write')."""
    assert dtype in (np.float16, np.float32, np.float64)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = {k: v.asnumpy() for k, v in aux.items()} if aux is not None else None
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
    if isinstance(grad_nodes, dict):
        reqs = dict(grad_nodes)
    elif isinstance(grad_nodes, (list, tuple)):
        reqs = {k: 'write' for k in grad_nodes}
    else:
        raise ValueError('grad_nodes must be None, a list or a dict, got %r' % (grad_nodes,))
    for k, stype in (grad_stype_dict or {}).items():
        if stype not in (None, 'default'):
            raise NotImplementedError('check_numeric_gradient: gradient storage type %r for %s '
                                      'is not supported (dense storage only)' % (stype, k))
    values = dict(location, **(aux or {}))
    out_shape = _symbol_runner(sym, ctx)(values, False)[0].shape
    out = _symbol.make_loss(sym * _symbol.var('__random_proj'))
    values['__random_proj'] = nd.array(np.random.rand(*out_shape) + 0.1, ctx=ctx, dtype=dtype)
    names = list(reqs) + ['__random_proj']
    buffers = {k: nd.array(np.random.normal(0, 0.01, size=values[k].shape), ctx=ctx, dtype=dtype)
               for k in names}
    initial = {k: b.asnumpy() for k, b in buffers.items()}
    reqs['__random_proj'] = 'write'
    grads = {k: (buffers[k], reqs[k]) for k in names if reqs[k] != 'null'}
    run = _symbol_runner(out, ctx)
    outputs = run(values, True, grads)
    assert len(outputs) == 1
    eps = get_tolerance(outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16):
        assert eps >= 1e-5  # finite differences need precision for a smaller step

    def forward(name, value):
        args = dict(values, **{name: nd.array(value, ctx=ctx, dtype=dtype)})
        if aux_npy is not None:
            args.update({k: nd.array(v, ctx=ctx, dtype=dtype) for k, v in aux_npy.items()})
        return run(args, use_forward_train)[0].asnumpy()
    numeric = _finite_differences(forward, location_npy, eps, dtype)
    del reqs['__random_proj']
    _check_grads(list(reqs), reqs, initial, buffers, numeric, rtol, atol,
                 ('NUMERICAL_', 'BACKWARD_'))


# ---- consistency across contexts and dtypes -------------------------------------------------
def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (dt1 when dt2 is None)."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


def _consistency_setup(sym, spec, grad_req):
    """(ctx, run, arg shapes, arg dtypes, aux shapes, aux dtypes, reqs) for one entry of
    check_consistency's ctx_list: {'ctx': ..., input name: shape, 'type_dict': {...}}."""
    ctx = spec['ctx']
    if ctx.device_type == 'gpu' and num_gpus() == 0:
        raise MXNetError('check_consistency: context %s is not available: this build of '
                         'hybridgluon has no GPU; compare CPU contexts (and dtypes) instead'
                         % (ctx,))
    names = sym.list_inputs()
    shapes = {k: v for k, v in spec.items() if k in names}
    types = spec.get('type_dict')
    # As MXNet's simple_bind: no type_dict means float32 arguments; with one, the other
    # dtypes are inferred from it (Symbol.infer_type here would take them as float32).
    unknown = -1 if types else _FLOAT32
    types = {k: _core.DTYPE_FLAGS[np.dtype(v).name] for k, v in (types or {}).items()
             if k in names}
    metas = [(tuple(shapes[n]) if n in shapes else None, types.get(n, unknown)) for n in names]
    inferred = dict(zip(names, _core.CachedOp(sym, names).infer(metas, True)[0]))
    undecided = [n for n in names if inferred[n][0] is None]
    if undecided:
        raise MXNetError('check_consistency: cannot infer the shapes of %s from %s'
                         % (undecided, shapes))
    args, aux = sym.list_arguments(), sym.list_auxiliary_states()

    def pick(which, i):
        return {n: (inferred[n][0] if i == 0 else
                    _np_dtype(inferred[n][1] if inferred[n][1] >= 0 else _FLOAT32))
                for n in which}
    return (ctx, _symbol_runner(sym, ctx), pick(args, 0), pick(args, 1), pick(aux, 0),
            pick(aux, 1), _grad_reqs(grad_req, args))


def _compare(arr, gtarr, rtol, atol, equal_nan, raise_on_err, what):
    try:
        assert_almost_equal(arr, gtarr, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as e:
        print(what)
        traceback.print_exc()
        if raise_on_err:
            raise e
        print(str(e))


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs sym (or one symbol per entry) for each entry of ctx_list (a context, input shapes
    and a 'type_dict' of dtypes) on the same random inputs, and asserts that outputs and
    gradients agree with the most precise entry (or `ground_truth`). CPU contexts only in a
    build without GPU. Returns the reference, name -> array."""
    assert len(ctx_list) > 1
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    assert len(syms) == len(ctx_list)
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    for s in syms:
        assert s.list_arguments() == arg_names and s.list_outputs() == output_names
    setups = [_consistency_setup(s, spec, grad_req) for s, spec in zip(syms, ctx_list)]
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for n in sorted(setups[0][2]):  # sorted: the same draws for the same seed
        if n not in arg_params:
            shape = setups[0][2][n]
            arg_params[n] = (np.random.uniform(-0.92 * scale, 0.92 * scale, size=shape)
                             if use_uniform else np.random.normal(size=shape, scale=scale)
                             ).astype(rand_type)
    for n in setups[0][4]:
        aux_params.setdefault(n, 0)

    def values_of(setup):
        ctx, _, shapes, types, aux_shapes, aux_types, _ = setup
        vals = {n: nd.array(np.broadcast_to(arg_params[n], shapes[n]), ctx=ctx,
                            dtype=types[n]) for n in shapes}
        vals.update({n: nd.array(np.broadcast_to(aux_params[n], aux_shapes[n]), ctx=ctx,
                                 dtype=aux_types[n]) for n in aux_shapes})
        return vals

    values = [values_of(s) for s in setups]
    preds = [s[1](v, False) for s, v in zip(setups, values)]
    sizes = [np.dtype(p[0].dtype).itemsize for p in preds]
    gt_idx = sizes.index(max(sizes))
    gt = dict(ground_truth) if ground_truth is not None else dict(zip(output_names,
                                                                     preds[gt_idx]))
    for i, outs in enumerate(preds):
        if i != gt_idx:
            for name, arr in zip(output_names, outs):
                _compare(arr, gt[name], rtol, atol, equal_nan, raise_on_err,
                         'Predict Err: ctx %d vs ctx %d at %s' % (i, gt_idx, name))
    if grad_req == 'null':
        return gt
    golden = setups[0][1](values[0], True)
    least = [p.dtype for p in preds[0]]
    for outs in preds:
        least = [_smaller_dtype(o.dtype, dt) for o, dt in zip(outs, least)]
    golden = [o.astype(dt).asnumpy() for o, dt in zip(golden, least)]
    results = []
    for setup, vals, outs in zip(setups, values, preds):
        ctx, run, shapes, types, _, _, reqs = setup
        grads = {n: (nd.zeros(shapes[n], ctx=ctx, dtype=types[n]), reqs[n])
                 for n in arg_names if reqs.get(n, 'null') != 'null'}
        heads = [nd.array(g, ctx=ctx, dtype=o.dtype) for g, o in zip(golden, outs)]
        train = run(vals, True, grads, heads)
        results.append(list(zip(output_names, train)) +
                       [(n, grads[n][0] if n in grads else None) for n in arg_names])
    if ground_truth is None:
        gt.update(results[gt_idx])
    for i, named in enumerate(results):
        if i == gt_idx:
            continue
        for name, arr in named:
            if gt.get(name) is None:
                assert arr is None
                continue
            rt, at = rtol, atol
            arr_dt = _smaller_dtype(arr.dtype, preds[i][0].dtype)
            gt_dt = _smaller_dtype(gt[name].dtype, preds[gt_idx][0].dtype)
            if arr_dt != arr.dtype or gt_dt != gt[name].dtype:
                rt, at = get_tols(np.empty((), arr_dt), np.empty((), gt_dt), rtol, atol)
            _compare(arr, gt[name], rt, at, equal_nan, raise_on_err,
                     'Train Err: {} {} ctx {} vs {} {} ctx {} at {}'.format(
                         np.dtype(arr.dtype).name, getattr(arr, 'context', None), i,
                         np.dtype(gt[name].dtype).name, getattr(gt[name], 'context', None),
                         gt_idx, name))
    return gt
