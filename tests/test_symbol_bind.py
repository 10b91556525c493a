"""Symbol.bind / simple_bind and the Executor: forward and backward against NumPy and finite
differences, grad_req per argument, auxiliary-state updates, reshape, shared arrays, errors,
and agreement with a hybridized block."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, sym
from hybridgluon.gluon import nn


def _fc_relu():
    x = sym.var('x')
    return sym.relu(sym.FullyConnected(x, num_hidden=3, name='fc'), name='act')


def _np_fc_relu(x, w, b):
    return np.maximum(x @ w.T + b, 0)


def _values(seed=0):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, (4, 5)), rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (3,)))


def test_bind_forward_dict_and_list_match_numpy():
    y = _fc_relu()
    x, w, b = _values()
    want = _np_fc_relu(x, w, b)
    arrays = [nd.array(v) for v in (x, w, b)]
    exe = y.bind(mx.cpu(), dict(zip(y.list_arguments(), arrays)))
    out = exe.forward()
    assert len(out) == 1 and out[0] is exe.outputs[0]
    np.testing.assert_allclose(out[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
    exe2 = y.bind(mx.cpu(), arrays)
    np.testing.assert_allclose(exe2.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
    # the executor reads the caller's arrays: changing one changes the next forward
    assert exe.arg_dict['x'] is arrays[0]
    arrays[0][:] = 0
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.maximum(b, 0) + 0 * want,
                               rtol=1e-6)
    assert list(exe.output_dict) == ['act_output']


def test_forward_kwargs_copy_into_bound_arrays():
    y = _fc_relu()
    x, w, b = _values(1)
    exe = y.simple_bind(mx.cpu(), x=(4, 5), grad_req='null')
    exe.copy_params_from({'fc_weight': nd.array(w), 'fc_bias': nd.array(b)})
    out = exe.forward(x=x.astype(np.float32))[0]
    np.testing.assert_allclose(out.asnumpy(), _np_fc_relu(x, w, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.arg_dict['x'].asnumpy(), x, rtol=1e-6)
    with pytest.raises(ValueError, match='Shape not match'):
        exe.forward(x=np.zeros((2, 5), np.float32))
    with pytest.raises(TypeError, match='Unknown argument'):
        exe.forward(nothere=np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match='not in the arguments'):
        exe.copy_params_from({'nothere': nd.zeros((1,))})
    exe.copy_params_from({'nothere': nd.zeros((1,))}, allow_extra_params=True)


def test_backward_matches_numpy_and_finite_differences():
    y = _fc_relu()
    x, w, b = _values(2)
    head = np.random.RandomState(3).uniform(-1, 1, (4, 3))
    args = {'x': nd.array(x, dtype='float64'), 'fc_weight': nd.array(w, dtype='float64'),
            'fc_bias': nd.array(b, dtype='float64')}
    grads = {k: nd.zeros(v.shape, dtype='float64') for k, v in args.items()}
    exe = y.bind(mx.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward(nd.array(head, dtype='float64'))
    mask = (x @ w.T + b) > 0
    g = head * mask
    np.testing.assert_allclose(grads['x'].asnumpy(), g @ w, rtol=1e-10)
    np.testing.assert_allclose(grads['fc_weight'].asnumpy(), g.T @ x, rtol=1e-10)
    np.testing.assert_allclose(grads['fc_bias'].asnumpy(), g.sum(0), rtol=1e-10)
    assert exe.grad_dict['x'] is grads['x']

    # central differences of sum(head * y) through the executor itself
    def f(name, value):
        saved = exe.arg_dict[name].asnumpy()
        exe.arg_dict[name][:] = value
        out = exe.forward()[0].asnumpy()
        exe.arg_dict[name][:] = saved
        return (out * head).sum()
    eps = 1e-6
    for name, val in (('x', x), ('fc_weight', w)):
        numeric = np.zeros_like(val)
        for i in np.ndindex(*val.shape):
            hi, lo = val.copy(), val.copy()
            hi[i] += eps
            lo[i] -= eps
            numeric[i] = (f(name, hi) - f(name, lo)) / (2 * eps)
        np.testing.assert_allclose(grads[name].asnumpy(), numeric, rtol=1e-5, atol=1e-8)


def test_grad_req_write_add_null_per_argument():
    a, b = sym.var('a'), sym.var('b')
    c = a * b * 2
    av, bv = np.array([1., 2., 3.]), np.array([4., 5., 6.])
    ga, gb = nd.array([10., 10., 10.]), nd.array([1., 1., 1.])
    exe = c.bind(mx.cpu(), {'a': nd.array(av), 'b': nd.array(bv)},
                 args_grad={'a': ga, 'b': gb}, grad_req={'a': 'write', 'b': 'add'})
    exe.forward(is_train=True)
    exe.backward(nd.ones((3,)))
    np.testing.assert_allclose(ga.asnumpy(), 2 * bv)
    np.testing.assert_allclose(gb.asnumpy(), 1 + 2 * av)
    exe.forward(is_train=True)
    exe.backward(nd.ones((3,)))
    np.testing.assert_allclose(ga.asnumpy(), 2 * bv)           # write: overwritten
    np.testing.assert_allclose(gb.asnumpy(), 1 + 4 * av)       # add: accumulated
    gn = nd.array([7., 7., 7.])
    exe = c.bind(mx.cpu(), [nd.array(av), nd.array(bv)], args_grad=[gn, nd.zeros((3,))],
                 grad_req=['null', 'write'])
    exe.forward(is_train=True)
    exe.backward([nd.ones((3,))])
    np.testing.assert_allclose(gn.asnumpy(), 7)                 # null: untouched
    np.testing.assert_allclose(exe.grad_arrays[1].asnumpy(), 2 * av)
    # the bound arrays never become autograd variables
    assert exe.arg_arrays[0].grad is None


def test_simple_bind_allocates_by_grad_req_and_type_dict():
    y = _fc_relu()
    exe = y.simple_bind(mx.cpu(), x=(2, 5))
    assert [a.shape for a in exe.arg_arrays] == [(2, 5), (3, 5), (3,)]
    assert all(float(g.asnumpy().sum()) == 0 for g in exe.grad_arrays)
    assert exe.outputs[0].shape == (2, 3)
    exe = y.simple_bind(mx.cpu(), x=(2, 5), grad_req='null')
    assert exe.grad_arrays == [None, None, None]
    exe = y.simple_bind(mx.cpu(), x=(2, 5), grad_req={'fc_weight': 'write'})
    assert [g is None for g in exe.grad_arrays] == [True, False, True]
    exe = y.simple_bind(mx.cpu(), x=(2, 5), type_dict={'x': 'float64'})
    assert [a.dtype for a in exe.arg_arrays] == [np.float64] * 3
    assert exe.outputs[0].dtype == np.float64
    v = sym.var('v', shape=(2, 4), dtype='float16')
    exe = (v * 2).simple_bind(mx.cpu())
    assert exe.arg_arrays[0].shape == (2, 4) and exe.arg_arrays[0].dtype == np.float16


def test_batchnorm_aux_states_update_in_training():
    y = sym.BatchNorm(sym.var('d'), name='bn', fix_gamma=False, momentum=0.5)
    data = np.random.RandomState(4).uniform(0, 2, (6, 3)).astype(np.float32)
    exe = y.simple_bind(mx.cpu(), d=data.shape)
    exe.arg_dict['d'][:] = data
    exe.arg_dict['bn_gamma'][:] = 1
    exe.aux_dict['bn_moving_var'][:] = 1
    mean = exe.aux_dict['bn_moving_mean']
    exe.forward(is_train=False)
    np.testing.assert_allclose(mean.asnumpy(), 0)
    exe.forward(is_train=True)
    # As MXNet 1.9.1's CPU executor: the moving statistics move with the backward pass.
    exe.backward(nd.ones(data.shape))
    np.testing.assert_allclose(mean.asnumpy(), 0.5 * data.mean(0), rtol=1e-5)
    assert exe.aux_dict['bn_moving_var'].asnumpy().min() < 1  # moved towards the variance
    # d(sum(bn(x)))/dx is 0 for batch statistics; d/dbeta = batch size
    np.testing.assert_allclose(exe.grad_dict['bn_beta'].asnumpy(), 6, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['d'].asnumpy(), 0, atol=1e-5)


def test_reshape_shares_memory_and_checks():
    x = sym.var('x')
    y = sym.FullyConnected(x, num_hidden=4, name='fc')
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req='null')
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    small.forward()
    np.testing.assert_allclose(small.outputs[0].asnumpy(), 4)
    np.testing.assert_allclose(exe.outputs[0].asnumpy()[:3], 4)  # a view of exe's output
    small.arg_arrays[0][:] = 2
    np.testing.assert_allclose(exe.arg_arrays[0].asnumpy()[:3], 2)
    with pytest.raises(mx.MXNetError, match='allow_up_sizing'):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert exe.arg_arrays[0].asnumpy()[3:].min() == 1     # not shared
    assert big.arg_arrays[1] is exe.arg_arrays[1]        # unchanged shape: the same array
    with pytest.raises(mx.MXNetError, match='partial_shaping'):
        exe.reshape(x=(5, 2))   # the weight would change shape
    wide = exe.reshape(partial_shaping=True, x=(5, 2))
    assert wide.arg_dict['fc_weight'].shape == (4, 2)


def test_shared_exec_and_shared_buffer():
    y = sym.BatchNorm(_fc_relu(), name='bn')
    first = y.simple_bind(mx.cpu(), x=(4, 5))
    params = ['fc_weight', 'fc_bias', 'bn_gamma', 'bn_beta']
    buf = {}
    second = y.simple_bind(mx.cpu(), x=(2, 5), shared_arg_names=params, shared_exec=first,
                           shared_buffer=buf)
    for n in params:
        assert second.arg_dict[n] is first.arg_dict[n]
        assert second.grad_dict[n] is first.grad_dict[n]
    for n in y.list_auxiliary_states():
        assert second.aux_dict[n] is first.aux_dict[n]
    assert second.arg_dict['x'] is not first.arg_dict['x']
    assert 'x' in buf and 'grad of x' in buf
    third = y.simple_bind(mx.cpu(), x=(1, 5), shared_buffer=buf)
    third.arg_dict['x'][:] = 3
    assert buf['x'].asnumpy().ravel()[:5].tolist() == [3] * 5  # a view of the buffer


def test_bind_and_simple_bind_errors():
    y = _fc_relu()
    with pytest.raises(RuntimeError, match=r'(?s)simple_bind error.*fc_weight'):
        y.simple_bind(mx.cpu())
    with pytest.raises(ValueError, match='key `fc_weight` is missing in `args`'):
        y.bind(mx.cpu(), {'x': nd.ones((2, 5))})
    with pytest.raises(ValueError, match='Length of args'):
        y.bind(mx.cpu(), [nd.ones((2, 5))])
    with pytest.raises(TypeError, match='Only accept'):
        y.bind(mx.cpu(), [np.ones((2, 5)), nd.ones((3, 5)), nd.ones((3,))])
    with pytest.raises(TypeError, match='Context'):
        y.bind('cpu', [nd.ones((2, 5)), nd.ones((3, 5)), nd.ones((3,))])
    with pytest.raises(ValueError, match='grad_req'):
        y.simple_bind(mx.cpu(), x=(2, 5), grad_req='sometimes')
    exe = y.bind(mx.cpu(), [nd.ones((2, 5)), nd.ones((3, 4)), nd.ones((3,))])
    with pytest.raises(mx.MXNetError, match='fc'):
        exe.forward()
    with pytest.raises(TypeError, match='must be NDArray'):
        y.simple_bind(mx.cpu(), x=(2, 5)).backward([np.ones((2, 3))])


def test_eval_and_debug_str_and_monitor():
    a, b = sym.var('a'), sym.var('b')
    c = sym.elemwise_add(a * 2, sym.sin(b, name='sin0'), name='plus')
    out = c.eval(ctx=mx.cpu(), a=nd.array([1., 2.]), b=nd.array([0., 0.]))
    np.testing.assert_allclose(out[0].asnumpy(), [2., 4.])
    exe = c.bind(mx.cpu(), {'a': nd.array([1., 2.]), 'b': nd.array([0., 1.])})
    text = exe.debug_str()
    assert 'Op:elemwise_add, Name=plus' in text and 'Variable:a' in text
    assert 'output[0]=plus(0)' in text
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name.decode(), arr.asnumpy())))
    exe.forward()
    names = [n for n, _ in seen]
    assert names[-1] == 'plus_output' and 'sin0_output' in names
    np.testing.assert_allclose(seen[-1][1], [2., 4. + np.sin(1.)], rtol=1e-6)
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.append(name.decode()), monitor_all=True)
    exe.forward()
    assert 'b' in seen and 'sin0_data' in seen


def test_executor_agrees_with_hybridized_block():
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation='tanh'), nn.BatchNorm(), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(5).uniform(-1, 1, (4, 3)))
    net.hybridize()
    with mx.autograd.record():
        want = net(x)
    want.backward()
    out = net(sym.var('data'))
    params = {p.name: p for p in net.collect_params().values()}
    args = {n: (x if n == 'data' else params[n].data()) for n in out.list_arguments()}
    grads = {n: nd.zeros(a.shape) for n, a in args.items()}
    aux = {n: params[n].data().copy() for n in out.list_auxiliary_states()}
    exe = out.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
    # prediction mode, moving statistics as the block's after its training step
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), net(x).asnumpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), want.asnumpy(),
                               rtol=1e-5, atol=1e-6)
    exe.backward(nd.ones(want.shape))
    for n in out.list_arguments():
        if n != 'data':
            np.testing.assert_allclose(grads[n].asnumpy(), params[n].grad().asnumpy(),
                                       rtol=1e-4, atol=1e-5)


def test_backward_head_gradients_as_mxnet():
    x = sym.var('x')
    # a head gradient is cast to the output's dtype
    y = x * 3
    exe = y.simple_bind(mx.cpu(), x=(2, 2), type_dict={'x': 'float64'})
    exe.forward(is_train=True)
    exe.backward(nd.ones((2, 2), dtype='int32'))
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 3)
    # an output no gradient flows through ignores its head gradient's shape
    z = sym.Group([x * 2, sym.argmax(x, axis=1, keepdims=True)])
    exe = z.simple_bind(mx.cpu(), x=(2, 3))
    exe.forward(is_train=True)
    exe.backward([nd.ones((2, 3)), nd.ones((5, 5))])
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), 2)
    with pytest.raises(mx.MXNetError, match='head gradient'):
        exe.backward([nd.ones((5, 5)), nd.ones((2, 1))])
    with pytest.raises(mx.MXNetError, match='2 outputs'):
        exe.backward([nd.ones((2, 3))])


def test_backward_follows_the_last_forward_mode():
    x = sym.var('x')
    y = sym.Dropout(x, p=0.5)
    exe = y.simple_bind(mx.cpu(), x=(50,))
    exe.arg_arrays[0][:] = 1
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([nd.ones((50,))])
    assert (out == 0).any()
    np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), out)  # the forward's mask
    exe.forward(is_train=False)
    exe.backward([nd.ones((50,))], is_train=False)
    np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), 1)   # identity in prediction


def test_simple_bind_elementwise_and_variable_shapes():
    a = sym.var('a', shape=(2, 3))
    b = sym.var('b')
    exe = sym.elemwise_add(a, b).simple_bind(mx.cpu())
    assert exe.arg_dict['b'].shape == (2, 3) and exe.outputs[0].shape == (2, 3)
    p = sym.var('p', shape=(0, 4))
    q = sym.var('q', shape=(5, 0))
    arg, out, _ = sym.elemwise_mul(p, q).infer_shape()
    assert arg == [(5, 4), (5, 4)] and out == [(5, 4)]


def test_common_subexpression_elimination(monkeypatch):
    a, b = sym.var('a'), sym.var('b')
    av, bv = np.array([1., 2.]), np.array([3., 5.])

    def run(s, **shapes):
        exe = s.simple_bind(mx.cpu(), **shapes)
        outs = exe.forward(is_train=True, a=nd.array(av), b=nd.array(bv))
        exe.backward([nd.ones_like(o) for o in outs])
        return exe, [o.asnumpy() for o in outs]

    s = (a + b) + (a + b)
    exe, outs = run(s, a=(2,), b=(2,))
    assert len(exe.get_optimized_symbol().get_internals()) == len(s.get_internals()) - 1
    np.testing.assert_allclose(outs[0], 2 * (av + bv))
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), 2)
    kept = a + 1 + (a + 2)                                # different attributes: kept apart
    assert kept.simple_bind(mx.cpu(), a=(2,)).get_optimized_symbol() is kept
    g = sym.Group([a * b, a * b])                         # merged, then a copy per output
    exe, outs = run(g, a=(2,), b=(2,))
    assert len(exe.get_optimized_symbol().get_internals()) == len(g.get_internals())
    exe.outputs[0][:] = 0
    np.testing.assert_allclose(exe.outputs[1].asnumpy(), av * bv)
    d = sym.Dropout(a, p=0.5) + sym.Dropout(a, p=0.5)    # random ops are never merged
    exe = d.simple_bind(mx.cpu(), a=(2,))
    assert len(exe.get_optimized_symbol().get_internals()) == len(d.get_internals())
    monkeypatch.setenv('MXNET_ELIMINATE_COMMON_EXPR', '0')
    exe = s.simple_bind(mx.cpu(), a=(2,), b=(2,))
    assert exe.get_optimized_symbol() is s


def _take_graph():
    x, idx = sym.var('x'), sym.var('idx')
    return sym.batch_take(x, idx)


_TAKE_SHAPES = dict(x=(4, 3), idx=(4,), type_dict={'x': np.float32, 'idx': np.int32})


def test_bind_rejects_op_without_gradient_on_differentiated_path():
    # batch_take has no gradient in MXNet either: needing one fails at bind, not at backward.
    y = _take_graph()
    with pytest.raises(mx.MXNetError, match='batch_take is non-differentiable'):
        y.simple_bind(mx.cpu(), **_TAKE_SHAPES)
    args = {'x': nd.ones((4, 3)), 'idx': nd.array([0, 1, 2, 0], dtype='int32')}
    with pytest.raises(mx.MXNetError, match='batch_take'):
        y.bind(mx.cpu(), args=args, args_grad={'x': nd.zeros((4, 3))})
    # As in MXNet's gradient pass, every op reachable from the outputs is visited, even when
    # only another argument (w) needs a gradient.
    w = sym.var('w')
    with pytest.raises(mx.MXNetError, match='batch_take'):
        (y + w).simple_bind(mx.cpu(), w=(4,), grad_req={'w': 'write'}, **_TAKE_SHAPES)


def test_bind_accepts_op_without_gradient_off_differentiated_path():
    y = _take_graph()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([0, 2, 1, 2], dtype=np.int32)
    # No gradient needed: binds and runs.
    exe = y.simple_bind(mx.cpu(), grad_req='null', **_TAKE_SHAPES)
    out = exe.forward(x=nd.array(x), idx=nd.array(idx, dtype='int32'))[0]
    np.testing.assert_array_equal(out.asnumpy(), x[np.arange(4), idx])
    # Behind stop_gradient the gradient reaching batch_take is zero, so the bind succeeds and
    # backward writes zeros.
    z = sym.stop_gradient(y)
    exe = z.simple_bind(mx.cpu(), **_TAKE_SHAPES)
    exe.arg_dict['x'][:] = x
    exe.arg_dict['idx'][:] = idx
    exe.grad_dict['x'][:] = 5
    exe.forward(is_train=True)
    exe.backward(nd.ones((4,)))
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), np.zeros((4, 3), np.float32))
    # Through a no_grad op that is not stop_gradient (argmax), then a differentiable one.
    q = sym.argmax(y, axis=0) * 2 + sym.var('w')
    exe = q.simple_bind(mx.cpu(), w=(1,), **_TAKE_SHAPES)
    exe.arg_dict['x'][:] = x
    exe.arg_dict['idx'][:] = idx
    exe.forward(is_train=True)
    exe.backward(nd.ones((1,)))
    np.testing.assert_array_equal(exe.grad_dict['w'].asnumpy(), [1])
