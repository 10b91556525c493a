"""A cached plan is reused only for the inputs it was made for: every call checks the shapes and
dtypes of data and parameters against the lowered signature, in every hybridize mode, and a
changed one re-plans (issue #12, B1: with static_alloc + static_shape a new batch size used to
write past the arena). Each case compares a hybridized block with the same block run op by op."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.gluon import nn

MODES = {
    'dynamic': {},
    'static_alloc': {'static_alloc': True},
    'static_alloc+shape': {'static_alloc': True, 'static_shape': True},
}


def _pair(make, mode, dtype='float32'):
    """(imperative net, hybridized net) with the same initial parameters."""
    nets = []
    for hybrid in (False, True):
        mx.random.seed(11)
        net = make()
        net.initialize()
        if dtype != 'float32':
            net.cast(dtype)
        if hybrid:
            net.hybridize(**MODES[mode])
        nets.append(net)
    return nets


def _dense():
    return nn.Dense(3, in_units=4)


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1, in_channels=2), nn.BatchNorm(in_channels=4),
            nn.Activation('relu'), nn.Dropout(0.0), nn.MaxPool2D(2), nn.GlobalAvgPool2D(),
            nn.Flatten(), nn.Dense(5, in_units=4))
    return net


def _x(shape, dtype='float32', seed=0):
    return nd.array(np.random.RandomState(seed).randn(*shape), dtype=dtype)


def _tol(dtype):
    return {'float16': 2e-2, 'float32': 1e-5, 'float64': 1e-12}[dtype]


def _check_forward(ref, hyb, x):
    want, got = ref(x), hyb(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=_tol(str(np.dtype(x.dtype))),
                               atol=_tol(str(np.dtype(x.dtype))))


# Batch sizes up and down (64 > the first arena, 1 < it), and a change of rank (Dense flattens).
DENSE_SHAPES = [(2, 4), (64, 4), (1, 4), (2, 4), (3, 2, 2), (0, 4), (5, 4)]
CONV_SHAPES = [(2, 2, 6, 6), (8, 2, 6, 6), (1, 2, 6, 6), (2, 2, 10, 8), (2, 2, 6, 6)]


@pytest.mark.parametrize('mode', sorted(MODES))
def test_dense_new_shapes(mode):
    ref, hyb = _pair(_dense, mode)
    for shape in DENSE_SHAPES:
        _check_forward(ref, hyb, _x(shape))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_convnet_new_shapes(mode):
    ref, hyb = _pair(_convnet, mode)
    for shape in CONV_SHAPES:
        _check_forward(ref, hyb, _x(shape))


@pytest.mark.parametrize('mode', sorted(MODES))
@pytest.mark.parametrize('dtype', ['float64', 'float16'])
def test_cast_after_first_call_replans(mode, dtype):
    """The parameters' dtype is part of the signature: cast() after a float32 call."""
    ref, hyb = _pair(_dense, mode)
    _check_forward(ref, hyb, _x((2, 4)))
    for net in (ref, hyb):
        net.cast(dtype)
    for shape in [(2, 4), (7, 4)]:
        _check_forward(ref, hyb, _x(shape, dtype))
    for net in (ref, hyb):
        net.cast('float32')
    _check_forward(ref, hyb, _x((3, 4)))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_wrong_dtype_is_an_error_then_the_net_still_works(mode):
    """float64 data into a float32 net: an error naming the types in both modes, never a
    crash or garbage, and the cached plan stays usable."""
    ref, hyb = _pair(_dense, mode)
    _check_forward(ref, hyb, _x((2, 4)))
    for net in (ref, hyb):
        with pytest.raises(mx.MXNetError):
            net(_x((2, 4), 'float64'))
    _check_forward(ref, hyb, _x((6, 4)))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_parameters_loaded_with_saved_dtype(mode, tmp_path):
    """load_parameters(dtype_source='saved') changes the parameters' dtype behind the plan."""
    ref, hyb = _pair(_dense, mode)
    _check_forward(ref, hyb, _x((2, 4)))
    src = _dense()
    src.initialize()
    src.cast('float64')
    path = str(tmp_path / 'p.params')
    src.save_parameters(path)
    for net in (ref, hyb):
        net.load_parameters(path, cast_dtype=True, dtype_source='saved')
    assert hyb.weight.data().dtype == np.float64
    for shape in [(2, 4), (9, 4)]:
        _check_forward(ref, hyb, _x(shape, 'float64'))


@pytest.mark.parametrize('mode', sorted(MODES))
def test_training_with_new_shapes(mode):
    """Under autograd.record: outputs and every gradient agree as the batch changes."""
    ref, hyb = _pair(_convnet, mode)
    for shape in CONV_SHAPES:
        grads = []
        for net in (ref, hyb):
            x = _x(shape)
            x.attach_grad()
            with autograd.record():
                y = net(x)
                loss = (y * y).sum()
            loss.backward()
            grads.append([y.asnumpy(), x.grad.asnumpy()] +
                         [p.grad().asnumpy() for p in net.collect_params().values()
                          if p.grad_req != 'null'])
        for a, b in zip(*grads):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('mode', sorted(MODES))
def test_symbolblock_imports_new_shapes(mode, tmp_path):
    mx.random.seed(3)
    net = _convnet()
    net.initialize()
    net.hybridize()
    net(_x((1, 2, 6, 6)))
    prefix = str(tmp_path / 'm')
    net.export(prefix)
    blk = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'], prefix + '-0000.params')
    blk.hybridize(**MODES[mode])
    for shape in CONV_SHAPES:
        x = _x(shape)
        np.testing.assert_allclose(blk(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-5)


def test_static_shape_needs_static_alloc():
    """As in MXNet 1.9.1: refused when the cached op is built (the first call)."""
    net = _dense()
    net.initialize()
    net.hybridize(static_shape=True)
    with pytest.raises(mx.MXNetError, match='static_alloc must be True when static_shape'):
        net(_x((2, 4)))
    net.hybridize(static_alloc=True, static_shape=True)
    assert net(_x((2, 4))).shape == (2, 3)


def test_plan_reports_replanning(capfd):
    """With HG_PRINT_PLAN a changed signature makes a new plan and an unchanged one does not:
    the check runs on every call, in static_shape mode too."""
    from conftest import run_python
    code = ('import hybridgluon as mx\n'
            'from hybridgluon.gluon import nn\n'
            'net = nn.Dense(3, in_units=4); net.initialize()\n'
            'net.hybridize(static_alloc=True, static_shape=True)\n'
            'for b in (2, 2, 64, 64, 1, 2):\n'
            '    assert net(mx.nd.ones((b, 4))).shape == (b, 3)\n')
    env = dict(os.environ, HG_PRINT_PLAN='1')
    r = run_python(['-c', code], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count('plan:') == 4, r.stderr
