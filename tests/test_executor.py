"""The graph executor's passes (csrc/exec): dead-code elimination, element-wise fusion,
in-place reuse and liveness-based memory planning, static_alloc / static_shape, re-planning for
new shapes. The introspection (CachedOp.stats) proves each optimisation happens; every result is
compared with NumPy and with the optimisation switched off."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from hybridgluon.gluon import nn


def _run(sym, feed, **kw):
    names = sym.list_inputs()
    co = _core.CachedOp(sym, names, **kw)
    out = co(*[mx.nd.array(feed[n]) for n in names])
    return [o.asnumpy() for o in out], co.stats()


def _chain():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    return mx.sym.sqrt(mx.sym.relu(mx.sym.exp(x) * 2 + y) + 1), \
        lambda a, b: np.sqrt(np.maximum(np.exp(a) * 2 + b, 0) + 1)


@pytest.mark.parametrize('shape', [(1,), (7,), (3, 5), (1000, 37), (513,), (64, 1024)])
def test_elementwise_chain_is_one_fused_kernel(shape):
    sym, ref = _chain()
    rng = np.random.default_rng(0)
    feed = {'x': rng.standard_normal(shape).astype('f4'),
            'y': rng.standard_normal(shape).astype('f4')}
    out, st = _run(sym, feed)
    assert st['kernels'] == 1 and st['fused_groups'] == 1 and st['fused_ops'] == 6, st['plan']
    assert 'fused[exp _mul_scalar elemwise_add relu _plus_scalar sqrt]' in st['plan']
    assert st['planned_internal_bytes'] == 0 < st['unplanned_internal_bytes']
    np.testing.assert_allclose(out[0], ref(feed['x'], feed['y']), rtol=1e-6)
    unfused, st2 = _run(sym, feed, fusion=False)
    assert st2['kernels'] == 6 and st2['fused_groups'] == 0
    np.testing.assert_allclose(out[0], unfused[0], rtol=1e-6)


def test_fusion_with_scalar_broadcast_and_float64():
    x = mx.sym.var('x')
    s = mx.sym.sum(x)                        # one element: read with stride 0 inside the group
    y = mx.sym.broadcast_mul(mx.sym.tanh(x), s) - x
    a = np.random.default_rng(1).standard_normal((40, 30))
    out, st = _run(y, {'x': a})
    assert st['fused_groups'] == 1 and st['kernels'] == 2, st['plan']
    np.testing.assert_allclose(out[0], np.tanh(a) * a.sum() - a, rtol=1e-5)
    co = _core.CachedOp(y, y.list_inputs())
    r = co(mx.nd.array(a, dtype='float64'))[0]
    assert r.dtype == np.float64
    np.testing.assert_allclose(r.asnumpy(), np.tanh(a) * a.sum() - a, rtol=1e-12)


def test_value_read_twice_is_not_fused_away():
    x = mx.sym.var('x')
    e = mx.sym.exp(x)
    y = mx.sym.Group([e * 2, e + 1])  # e has two readers: it must stay a real value
    a = np.random.default_rng(2).standard_normal((5, 6)).astype('f4')
    out, st = _run(y, {'x': a})
    np.testing.assert_allclose(out[0], np.exp(a) * 2, rtol=1e-6)
    np.testing.assert_allclose(out[1], np.exp(a) + 1, rtol=1e-6)


def test_dead_code_is_not_run():
    x = mx.sym.var('x')
    used = mx.sym.exp(x)
    _unused = mx.sym.log(x) * 3
    out, st = _run(used, {'x': np.ones((4,), 'f4')})
    assert st['kernels'] == 1


def _mlp(depth=20, width=64):
    net = nn.HybridSequential()
    with net.name_scope():
        for _ in range(depth - 1):
            net.add(nn.Dense(width, activation='relu'))
        net.add(nn.Dense(10))
    net.initialize()
    return net


def test_twenty_layer_mlp_reuses_memory():
    net = _mlp()
    x = mx.nd.random.uniform(shape=(32, 64))
    ref = net(x).asnumpy()
    net.hybridize()
    out = net(x).asnumpy()
    st = net._cached_op.stats()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    # 38 intermediate (32, 64) float32 values of 8 KiB: planned, two or three are live at a time.
    assert st['unplanned_internal_bytes'] >= 38 * 32 * 64 * 4
    assert st['planned_internal_bytes'] <= 3 * 32 * 64 * 4, st['plan']
    # The planner switched off: the same numbers, more memory.
    sym = net._cached_graph[1]
    names = sym.list_inputs()
    params = {p.name: p.data() for p in net.collect_params().values()}
    args = [x if n == 'data' else params[n] for n in names]
    co = _core.CachedOp(sym, names, memplan=False)
    np.testing.assert_array_equal(co(*args)[0].asnumpy(), out)
    assert co.stats()['planned_internal_bytes'] == co.stats()['unplanned_internal_bytes']


def _tensor_bytes_needed(fn):
    """Tensor memory fn needed beyond what existed before it (the allocator's peak)."""
    base = _core.alloc_stats(True)['live']
    out = fn()
    out.wait_to_read()
    return _core.alloc_stats()['peak'] - base


def test_allocator_counts_live_and_peak_bytes():
    before = _core.alloc_stats(True)
    a = mx.nd.zeros((1000,))
    b = a + 1
    del b
    st = _core.alloc_stats()
    assert st['live'] >= before['live'] + 4000
    assert st['peak'] >= st['live'] + 4000
    del a
    assert _core.alloc_stats()['live'] <= st['live'] - 4000


def test_hybridized_forward_and_training_need_less_memory_than_imperative():
    net = _mlp()
    x = mx.nd.random.uniform(shape=(32, 64))

    def recorded():
        with mx.autograd.record():
            return net(x)
    net(x)
    imperative = _tensor_bytes_needed(lambda: net(x)), _tensor_bytes_needed(recorded)
    net.hybridize()
    net(x)
    recorded()
    hybrid = _tensor_bytes_needed(lambda: net(x)), _tensor_bytes_needed(recorded)
    value = 32 * 64 * 4
    # Inference: the plan's arena (two or three values) and the output.
    assert hybrid[0] <= 4 * value, hybrid
    # Training: the tape keeps every FullyConnected and relu output (about 38 values); the
    # hybridized block keeps only what its backward reads (relu outputs: about 19).
    assert imperative[1] >= 35 * value, imperative
    assert hybrid[1] <= 0.7 * imperative[1], (hybrid, imperative)


def test_outputs_are_fresh_with_static_alloc():
    x = mx.sym.var('x')
    y = mx.sym.Group([mx.sym.exp(x) + 1, x * 2])
    co = _core.CachedOp(y, ['x'], static_alloc=True, static_shape=True)
    a, b = co(mx.nd.ones((3,)))
    c, d = co(mx.nd.zeros((3,)))
    np.testing.assert_allclose(a.asnumpy(), np.e + 1, rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy(), 2)
    np.testing.assert_allclose(c.asnumpy(), 2)
    assert a._storage_id != c._storage_id


def test_output_that_is_an_input_or_repeated_is_a_copy():
    x = mx.sym.var('x')
    e = mx.sym.exp(x)
    co = _core.CachedOp(mx.sym.Group([x, e, e]), ['x'])
    xin = mx.nd.ones((2,))
    a, b, c = co(xin)
    assert a._storage_id != xin._storage_id and b._storage_id != c._storage_id
    np.testing.assert_allclose(c.asnumpy(), np.e, rtol=1e-6)


def test_new_shape_replans():
    sym, ref = _chain()
    co = _core.CachedOp(sym, ['x', 'y'])
    for shape in [(3,), (5, 4), (3,)]:
        a, b = np.ones(shape, 'f4'), np.zeros(shape, 'f4')
        np.testing.assert_allclose(co(mx.nd.array(a), mx.nd.array(b))[0].asnumpy(), ref(a, b),
                                   rtol=1e-6)


def test_environment_switches_turn_passes_off():
    code = ("import hybridgluon as mx\nfrom hybridgluon import _core\nx = mx.sym.var('x')\n"
            "co = _core.CachedOp(mx.sym.exp(mx.sym.exp(x)), ['x'])\nco(mx.nd.ones((4,)))\n"
            "print(co.stats()['kernels'])\n")
    from conftest import run_python
    res = run_python(['-c', code], env=dict(os.environ, HG_NO_FUSION='1', HG_PRINT_PLAN='1'))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == '2'
    assert 'plan: 2 steps' in res.stderr


def test_broadcast_input_is_not_reused_in_place():
    """Regression: a (1, 3) input and its (4, 3) broadcast output have equal 64-byte-aligned
    sizes; the planner must not run the op in place over the smaller input."""
    pw, z = mx.sym.var('pw'), mx.sym.var('z')
    y = mx.sym.broadcast_mul(pw - 1, z) + 1
    a = np.array([[1., 2., 0.5]], 'f4')
    b = np.random.default_rng(3).integers(0, 2, (4, 3)).astype('f4')
    for fusion in (True, False):
        out, _ = _run(y, {'pw': a, 'z': b}, fusion=fusion)
        np.testing.assert_allclose(out[0], (a - 1) * b + 1)


def test_value_read_twice_by_one_op():
    """Regression: y * y with y = relu(x): a lone fusable op with a repeated input must run as
    a plain step (it crashed when treated as a one-op fused group)."""
    x = mx.sym.var('x')
    y = mx.sym.relu(x)
    a = np.array([-1., 2., 3.], 'f4')
    for fusion in (True, False):
        for memplan in (True, False):
            out, _ = _run(y * y, {'x': a}, fusion=fusion, memplan=memplan)
            np.testing.assert_allclose(out[0], np.maximum(a, 0) ** 2)


@pytest.mark.parametrize('layer,shape', [
    (lambda: nn.Dense(8, activation='relu', in_units=5), (3, 5)),
    (lambda: nn.Dense(8, activation='tanh', in_units=5), (3, 5)),
    (lambda: nn.Conv2D(4, kernel_size=3, activation='relu', in_channels=2), (2, 2, 7, 7)),
])
def test_conv_fc_bias_activation_run_as_one_step(layer, shape):
    """The op with its own kernel and the element-wise ops after it run as one step, the
    activation in place on the fresh GEMM output (conv/FC + bias + activation)."""
    net = nn.HybridSequential()
    net.add(layer(), nn.Activation('sigmoid'))
    net.initialize()
    x = mx.nd.random.normal(shape=shape)
    ref = net(x).asnumpy()
    net.hybridize()
    out = net(x).asnumpy()
    st = net._cached_op.stats()
    assert st['kernels'] == 1 and st['fused_groups'] == 1, st['plan']
    assert '+fused[Activation Activation]' in st['plan'], st['plan']
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    # gradients through the fused step equal the imperative ones
    grads = []
    for hybrid in (False, True):
        net.hybridize(hybrid)
        with mx.autograd.record():
            y = (net(x) * mx.nd.arange(out.size).reshape(out.shape)).sum()
        y.backward()
        grads.append([p.grad().asnumpy().copy() for p in net.collect_params().values()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('use_bias,fix_gamma,groups', [(True, False, 1), (False, True, 1),
                                                        (False, False, 2)])
# (2, 2, 6, 6): more outputs per filter than weights, the folded step scales the weights;
# (1, 2, 4, 4): fewer (a deep layer at batch 1), it scales the convolution's output instead
@pytest.mark.parametrize('xshape', [(2, 2, 6, 6), (1, 2, 4, 4)])
def test_batchnorm_folded_into_convolution_in_inference(use_bias, fix_gamma, groups, xshape):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, kernel_size=3, use_bias=use_bias, in_channels=2, groups=groups),
            nn.BatchNorm(in_channels=4, center=True, scale=not fix_gamma), nn.Activation('relu'))
    net.initialize()
    rng = np.random.default_rng(5)
    bn = net[1]
    bn.running_mean.set_data(mx.nd.array(rng.standard_normal(4)))
    bn.running_var.set_data(mx.nd.array(rng.uniform(0.5, 2, 4)))
    if not fix_gamma:
        bn.gamma.set_data(mx.nd.array(rng.uniform(0.5, 1.5, 4)))
    bn.beta.set_data(mx.nd.array(rng.standard_normal(4)))
    x = mx.nd.random.normal(shape=xshape)
    ref = net(x).asnumpy()
    net.hybridize()
    out = net(x).asnumpy()
    st = net._cached_op.stats()
    assert st['folded_batchnorm'] == 1 and 'folded in inference' in st['plan'], st['plan']
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    # in training the same step runs the convolution and the batch statistics unfolded
    with mx.autograd.train_mode():
        hyb = net(x).asnumpy()
    net.hybridize(False)
    with mx.autograd.train_mode():
        imp = net(x).asnumpy()
    np.testing.assert_allclose(hyb, imp, rtol=1e-5, atol=1e-5)


def test_view_of_an_input_is_an_alias_not_a_copy():
    """A Reshape of a graph input (a parameter) read only inside the plan becomes a view of its
    data: no arena block, no copy, the input unchanged."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal(50000).astype('f4')
    x = rng.standard_normal((3, 1000)).astype('f4')
    xs, ws = mx.sym.var('x'), mx.sym.var('w')
    y = mx.sym.dot(xs, mx.sym.reshape(ws, shape=(1000, 50)))
    for fusion in (True, False):
        out, st = _run(y, {'x': x, 'w': w}, fusion=fusion)
        np.testing.assert_allclose(out[0], x @ w.reshape(1000, 50), rtol=1e-4, atol=1e-4)
        assert 'Reshape, a view' in st['plan'], st['plan']
        assert st['planned_internal_bytes'] < 50000 * 4, st


@pytest.mark.parametrize('fusion', [True, False])
def test_value_an_alias_reads_outlives_its_other_readers(fusion):
    """b views a; the last direct reader of a could run in place over a's block, which b still
    reads afterwards: the planner must keep that block."""
    x = mx.sym.var('x')
    a = mx.sym.exp(x)                      # (4, 3), internal
    b = mx.sym.reshape(a, shape=(12,))     # view of a
    c = mx.sym.relu(a * 2)                 # may run in place over a
    y = mx.sym.reshape(c, shape=(12,)) + b * 10
    xv = np.random.default_rng(2).standard_normal((4, 3)).astype('f4')
    out, st = _run(y, {'x': xv}, fusion=fusion)
    e = np.exp(xv).ravel()
    np.testing.assert_allclose(out[0], 2 * e + 10 * e, rtol=1e-5)


def test_view_that_is_an_output_is_a_fresh_array():
    x = mx.sym.var('x')
    co = _core.CachedOp(mx.sym.Group([mx.sym.reshape(x, shape=(-1,)),
                                      mx.sym.flatten(mx.sym.exp(x))]), ['x'])
    xin = mx.nd.ones((2, 3))
    a, b = co(xin)
    assert a._storage_id != xin._storage_id
    a[:] = 5
    np.testing.assert_array_equal(xin.asnumpy(), np.ones((2, 3)))
    np.testing.assert_allclose(b.asnumpy(), np.full((2, 3), np.e), rtol=1e-6)
