"""gluon Blocks and basic layers, imperative mode: naming, registration, hooks, deferred init,
Dense vs NumPy, containers, repr, summary, save/load_parameters."""

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon
from hybridgluon.gluon import nn



@pytest.fixture(autouse=True)
def fresh_names():
    """Each test starts with fresh global name counters (dense0_, ...)."""
    with mx.name.NameManager():
        yield


def _np_act(x, act):
    if act == 'relu':
        return np.maximum(x, 0)
    if act == 'sigmoid':
        return 1 / (1 + np.exp(-x))
    if act == 'tanh':
        return np.tanh(x)
    if act == 'softrelu':
        return np.log1p(np.exp(x))
    if act == 'softsign':
        return x / (1 + np.abs(x))
    return x


# ---- naming ---------------------------------------------------------------------------------
def test_global_names():
    d0, d1 = nn.Dense(10), nn.Dense(10)
    assert (d0.prefix, d1.prefix, d0.name) == ('dense0_', 'dense1_', 'dense0')
    assert d0.weight.name == 'dense0_weight' and d0.bias.name == 'dense0_bias'
    assert nn.HybridSequential().prefix == 'hybridsequential0_'
    assert nn.Activation('relu').prefix == 'relu0_'
    assert nn.Dense(3, prefix='fc_').prefix == 'fc_'


def test_scoped_names_and_per_parent_counters():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(10, activation='relu'))
        net.add(nn.Dense(5))
    with net.name_scope():      # counters persist across repeated `with`
        net.add(nn.Dense(2), nn.Dense(1, prefix='out_'))
    assert [c.prefix for c in net._children.values()] == [
        'hybridsequential0_dense0_', 'hybridsequential0_dense1_', 'hybridsequential0_dense2_',
        'hybridsequential0_out_']
    assert net[0].act.prefix == 'hybridsequential0_dense0_relu_'
    assert list(net.collect_params().keys())[:2] == ['hybridsequential0_dense0_weight',
                                                     'hybridsequential0_dense0_bias']
    other = nn.HybridSequential()
    with other.name_scope():
        other.add(nn.Dense(3))
    assert other[0].prefix == 'hybridsequential1_dense0_'
    # Outside any scope the global counter was not consumed by the scoped layers.
    assert nn.Dense(3).prefix == 'dense0_'


def test_children_without_scope_and_empty_prefix():
    net = nn.HybridSequential()
    net.add(nn.Dense(3))
    assert net[0].prefix == 'dense0_'
    blank = nn.HybridSequential(prefix='')
    with blank.name_scope():
        blank.add(nn.Dense(3))
    assert blank.prefix == '' and blank.name == '' and blank[0].prefix == 'dense1_'


def test_param_sharing():
    d0 = nn.Dense(4, in_units=3)
    d1 = nn.Dense(4, in_units=3, params=d0.collect_params())
    assert d1.prefix == 'dense1_' and d1.weight is d0.weight and d1.bias is d0.bias
    d0.initialize()
    x = mx.nd.ones((2, 3))
    np.testing.assert_array_equal(d0(x).asnumpy(), d1(x).asnumpy())


# ---- registration -----------------------------------------------------------------------
class Net(gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense0 = nn.Dense(4, in_units=3)
            self.dense1 = nn.Dense(2, in_units=4)
            self.scale = self.params.get('scale', shape=(1,), init='ones')

    def forward(self, x):
        return self.dense1(self.dense0(x)) * self.scale.data()


def test_attribute_registration_and_collect_params():
    net = Net()
    assert list(net._children) == ['dense0', 'dense1'] and list(net._reg_params) == ['scale']
    assert list(net.params.keys()) == ['net0_scale']
    assert list(net.collect_params().keys()) == [
        'net0_scale', 'net0_dense0_weight', 'net0_dense0_bias', 'net0_dense1_weight',
        'net0_dense1_bias']
    assert list(net.collect_params('.*weight').keys()) == ['net0_dense0_weight',
                                                           'net0_dense1_weight']
    assert list(net.collect_params('net0_dense1_.*|.*scale').keys()) == [
        'net0_scale', 'net0_dense1_weight', 'net0_dense1_bias']
    with pytest.raises(TypeError, match='Changing attribute type for dense0'):
        net.dense0 = 3
    net.initialize()
    assert net(mx.nd.ones((5, 3))).shape == (5, 2)
    assert repr(net) == ('Net(\n  (dense0): Dense(3 -> 4, linear)\n'
                         '  (dense1): Dense(4 -> 2, linear)\n)')


def test_hybridblock_rejects_plain_child():
    class Plain(gluon.Block):
        def forward(self, x):
            return x
    plain = Plain()
    with pytest.raises(ValueError) as e:
        nn.HybridSequential().add(plain)
    assert str(e.value) == ('Children of HybridBlock must also be HybridBlock, but Plain(\n\n) '
                            'has type %s. If you are using Sequential, please try '
                            'HybridSequential instead.' % type(plain))


def test_unregistered_container_warns():
    class Holder(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2)]
    with pytest.warns(UserWarning, match='unregistered container with Blocks'):
        Holder().collect_params()


# ---- hooks ---------------------------------------------------------------------------------
def test_forward_hooks():
    d = nn.Dense(2, in_units=3)
    d.initialize()
    calls = []
    pre = d.register_forward_pre_hook(lambda blk, args: calls.append(('pre', blk, args)))
    post = d.register_forward_hook(lambda blk, args, out: calls.append(('post', blk, args, out)))
    x = mx.nd.ones((1, 3))
    out = d(x)
    assert [c[0] for c in calls] == ['pre', 'post']
    assert calls[0][1] is d and calls[0][2][0] is x
    assert calls[1][2][0] is x and calls[1][3] is out
    pre.detach()
    d(x)
    assert [c[0] for c in calls] == ['pre', 'post', 'post']
    with post:
        pass
    d(x)
    assert len(calls) == 3
    post.detach()       # detaching twice is harmless


# ---- Dense ---------------------------------------------------------------------------------
@pytest.mark.parametrize('act', [None, 'relu', 'sigmoid', 'tanh', 'softrelu', 'softsign'])
def test_dense_matches_numpy(act, rng):
    d = nn.Dense(6, activation=act, in_units=5)
    d.initialize(mx.init.Normal(0.5))
    d.bias.set_data(mx.nd.array(rng.standard_normal(6)))
    x = rng.standard_normal((4, 5)).astype(np.float32)
    w, b = d.weight.data().asnumpy(), d.bias.data().asnumpy()
    np.testing.assert_allclose(d(mx.nd.array(x)).asnumpy(), _np_act(x @ w.T + b, act),
                               rtol=1e-5, atol=1e-5)


def test_dense_flatten_and_no_bias(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    flat = nn.Dense(5, use_bias=False)
    flat.initialize()
    out = flat(mx.nd.array(x))
    assert flat.bias is None and list(flat.params.keys()) == ['dense0_weight']
    assert flat.weight.shape == (5, 12)
    np.testing.assert_allclose(out.asnumpy(), x.reshape(2, 12) @ flat.weight.data().asnumpy().T,
                               rtol=1e-5, atol=1e-6)
    keep = nn.Dense(5, flatten=False)
    keep.initialize()
    out = keep(mx.nd.array(x))
    assert out.shape == (2, 3, 5) and keep.weight.shape == (5, 4)
    ref = x @ keep.weight.data().asnumpy().T + keep.bias.data().asnumpy()
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_dense_deferred_init():
    d = nn.Dense(10)
    assert d.weight.shape == (10, 0)
    assert repr(d.weight) == 'Parameter dense0_weight (shape=(10, 0), dtype=float32)'
    d.initialize()
    with pytest.raises(gluon.DeferredInitializationError,
                       match="Parameter 'dense0_weight' has not been initialized yet because "
                             "initialization was deferred"):
        d.weight.data()
    out = d(mx.nd.ones((3, 2, 4)))
    assert out.shape == (3, 10) and d.weight.shape == (10, 8)
    assert d.weight.data().shape == (10, 8) and d.weight.grad().shape == (10, 8)
    assert (d.bias.data().asnumpy() == 0).all()
    assert repr(d) == 'Dense(8 -> 10, linear)'
    with pytest.raises(mx.MXNetError):
        d(mx.nd.ones((3, 5)))


def test_dense_uninitialized_error():
    d = nn.Dense(3, in_units=2)
    with pytest.raises(RuntimeError, match="Parameter 'dense0_weight' has not been initialized. "
                                           "Note that you should initialize parameters"):
        d(mx.nd.ones((1, 2)))


def test_infer_shape_public():
    d = nn.Dense(7, flatten=False)
    d.infer_shape(mx.nd.ones((2, 3, 9)))
    assert d.weight.shape == (7, 9)


class DeferredCustom(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = self.params.get('w', shape=(0,), allow_deferred_init=True)

    def hybrid_forward(self, F, x, w):
        return F.broadcast_mul(x, w)  # no backward shape rule (x * w has one)


def test_custom_deferred_without_rule_fails():
    blk = DeferredCustom()
    blk.initialize()
    with pytest.raises(ValueError, match='Deferred initialization failed because shape cannot be '
                                         'inferred.'):
        blk(mx.nd.ones((2,)))


class SeedNet(gluon.HybridBlock):
    """The tutorial pattern: a Parameter made with params.get reaches hybrid_forward."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc1 = nn.Dense(8)
            self.fc3_weight = self.params.get('fc3_weight', shape=(3, 8))

    def hybrid_forward(self, F, x, fc3_weight):
        x = F.relu(self.fc1(x))
        return F.dot(x, fc3_weight, transpose_b=True)


def test_seed_tutorial_block():
    net = SeedNet()
    assert net.fc3_weight.name == 'seednet0_fc3_weight'
    assert net.fc1.prefix == 'seednet0_dense0_'
    net.initialize()
    x = mx.nd.random.uniform(shape=(4, 5))
    out = net(x)
    h = np.maximum(x.asnumpy() @ net.fc1.weight.data().asnumpy().T +
                   net.fc1.bias.data().asnumpy(), 0)
    np.testing.assert_allclose(out.asnumpy(), h @ net.fc3_weight.data().asnumpy().T,
                               rtol=1e-5, atol=1e-6)


def test_hybridblock_input_checks():
    d = nn.Dense(2, in_units=2)
    d.initialize()
    with pytest.raises(ValueError, match='there must be one NDArray or one Symbol'):
        d(np.ones((1, 2)))


# ---- containers and small layers ----------------------------------------------------------
def test_sequential_forward_len_getitem():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation='relu'), nn.Dense(2))
    net.initialize()
    x = mx.nd.random.uniform(shape=(3, 5))
    out = net(x)
    ref = net[1](net[0](x))
    np.testing.assert_array_equal(out.asnumpy(), ref.asnumpy())
    assert len(net) == 2 and isinstance(net[0], nn.Dense)
    head = net[:1]
    assert isinstance(head, nn.Sequential) and len(head) == 1 and head[0] is net[0]
    assert head.prefix == net.prefix
    assert repr(net) == ('Sequential(\n  (0): Dense(5 -> 4, Activation(relu))\n'
                         '  (1): Dense(4 -> 2, linear)\n)')


def test_hybridsequential_and_tuple_outputs():
    net = nn.HybridSequential()
    net.add(nn.HybridLambda(lambda F, x: (x * 2, x + 1)),
            nn.HybridLambda(lambda F, a, b: a + b))
    out = net(mx.nd.array([1.0, 2.0]))
    np.testing.assert_array_equal(out.asnumpy(), [4.0, 7.0])
    assert isinstance(net[0:2], nn.HybridSequential) and len(net) == 2


def test_lambda_layers():
    lam = nn.Lambda('tanh')
    x = mx.nd.array([-1.0, 0.5])
    np.testing.assert_allclose(lam(x).asnumpy(), np.tanh([-1.0, 0.5]), rtol=1e-6)
    assert repr(lam) == 'Lambda(tanh)'
    hl = nn.HybridLambda('relu')
    assert repr(hl) == 'HybridLambda(relu)' and (hl(x).asnumpy() == [0, 0.5]).all()

    def double(F, x):
        return x * 2
    assert repr(nn.HybridLambda(double)) == 'HybridLambda(double)'
    assert (nn.Lambda(lambda a: a - 1)(x).asnumpy() == [-2, -0.5]).all()
    with pytest.raises(AssertionError, match='Function name nosuchfn is not found in ndarray.'):
        nn.Lambda('nosuchfn')
    with pytest.raises(ValueError, match='Unrecognized function in lambda'):
        nn.HybridLambda(3)


def test_flatten_identity_activation():
    x = mx.nd.ones((2, 3, 4))
    assert nn.Flatten()(x).shape == (2, 12) and repr(nn.Flatten()) == 'Flatten'
    assert nn.Identity()(x) is x
    a = nn.Activation('sigmoid')
    assert repr(a) == 'Activation(sigmoid)' and a.prefix == 'sigmoid0_'
    np.testing.assert_allclose(a(mx.nd.zeros((2,))).asnumpy(), [0.5, 0.5])


def test_dropout():
    x = mx.nd.ones((4, 5))
    drop = nn.Dropout(0.5)
    assert repr(drop) == 'Dropout(p = 0.5, axes=())'
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())   # not training: identity
    np.testing.assert_array_equal(nn.Dropout(0)(x).asnumpy(), x.asnumpy())


def test_dropout_rate_zero_without_op():
    x = mx.nd.ones((2, 2))
    np.testing.assert_array_equal(nn.Dropout(0)(x).asnumpy(), x.asnumpy())


# ---- hybridize flags, cast, apply -------------------------------------------------------------
def test_hybridize_flags_and_recursion():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2))
    net.initialize()
    net.hybridize(static_alloc=True)
    assert net._active and net[0]._active
    assert ('static_alloc', True) in net._flags and ('static_alloc', True) in net[0]._flags
    assert net(mx.nd.ones((1, 2))).shape == (1, 3)
    with pytest.raises(AssertionError, match='must not be hybridized to print summary'):
        net.summary(mx.nd.ones((1, 2)))
    net.hybridize(False)
    assert not net._active and not net[0]._active
    net[0].register_forward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match='is being hybridized while still having forward hook'):
        net.hybridize()
    seq = nn.Sequential()
    seq.add(nn.Dense(1))
    with pytest.warns(UserWarning, match='Consider using HybridSequential'):
        seq.hybridize()
    assert seq[0]._active


def test_cast_and_apply():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3))
    net.initialize()
    net.cast('float64')
    assert all(p.data().dtype == np.float64 for p in net.collect_params().values())
    seen = []
    assert net.apply(lambda b: seen.append(b.name)) is net
    assert seen == ['hybridsequential0_dense0', 'hybridsequential0_dense1', 'hybridsequential0']
    net.collect_params().zero_grad()
    net.zero_grad()


# ---- summary ------------------------------------------------------------------------------
def test_summary(capsys):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(10, activation='relu'), nn.Dense(5))
    net.initialize()
    net.summary(mx.nd.ones((2, 7)))
    lines = capsys.readouterr().out.splitlines()
    fmt = '{:>20}  {:>42} {:>15}'
    assert lines[0] == '-' * 80
    assert lines[1] == fmt.format('Layer (type)', 'Output Shape', 'Param #')
    assert lines[2] == '=' * 80
    assert lines[3] == fmt.format('Input', '(2, 7)', 0)
    assert lines[4] == fmt.format('Activation-1', '(2, 10)', 0)
    assert lines[5] == fmt.format('Dense-2', '(2, 10)', 80)
    assert lines[6] == fmt.format('Dense-3', '(2, 5)', 55)
    assert lines[8:] == ['Parameters in forward computation graph, duplicate included',
                         '   Total params: 135', '   Trainable params: 135',
                         '   Non-trainable params: 0',
                         'Shared params in forward computation graph: 0',
                         'Unique parameters in model: 135', '-' * 80]
    assert not net[0]._forward_hooks      # summary's hooks are gone


# ---- save / load ------------------------------------------------------------------------------
def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, activation='relu'), nn.Dense(2))
    return net


def test_save_load_parameters_round_trip(tmp_path):
    fname = str(tmp_path / 'net.params')
    net = _mlp()
    net.initialize()
    x = mx.nd.random.uniform(shape=(3, 5))
    ref = net(x).asnumpy()
    net.save_parameters(fname)
    assert sorted(mx.nd.load(fname).keys()) == ['0.bias', '0.weight', '1.bias', '1.weight']
    fresh = _mlp()
    fresh.load_parameters(fname)
    np.testing.assert_array_equal(fresh(x).asnumpy(), ref)
    assert fresh[0].weight.list_ctx() == [mx.cpu(0)]


def test_load_parameters_errors(tmp_path):
    fname = str(tmp_path / 'one.params')
    small = nn.HybridSequential()
    small.add(nn.Dense(4, in_units=5, use_bias=False))
    small.initialize()
    small.save_parameters(fname)
    big = nn.HybridSequential()
    big.add(nn.Dense(4, in_units=5))
    with pytest.raises(AssertionError) as e:
        big.load_parameters(fname)
    assert str(e.value) == ("Parameter '0.bias' is missing in file '%s', which contains "
                            "parameters: '0.weight'. Set allow_missing=True to ignore missing "
                            "parameters." % fname)
    big.load_parameters(fname, allow_missing=True)
    assert big[0].weight.data().shape == (4, 5)

    fname2 = str(tmp_path / 'two.params')
    big.collect_params().initialize(force_reinit=True)
    big.save_parameters(fname2)
    with pytest.raises(ValueError) as e:
        small.load_parameters(fname2)
    assert str(e.value) == ("Parameter '0.bias' loaded from file '%s' is not present in "
                            "ParameterDict, which contains parameters . Set ignore_extra=True "
                            "to ignore. " % fname2)
    small.load_parameters(fname2, ignore_extra=True)


def test_legacy_save_params_and_dedup(tmp_path):
    fname = str(tmp_path / 'legacy.params')
    d = nn.Dense(3, in_units=2)
    d.initialize()
    with pytest.warns(UserWarning, match='save_params is deprecated'):
        d.save_params(fname)
    assert sorted(mx.nd.load(fname).keys()) == ['bias', 'weight']
    d2 = nn.Dense(3, in_units=2)
    with pytest.warns(UserWarning, match='load_params is deprecated'):
        d2.load_params(fname)
    np.testing.assert_array_equal(d2.weight.data().asnumpy(), d.weight.data().asnumpy())
    d3 = nn.Dense(3, in_units=2)
    d3.load_parameters(fname)           # no '.' in the names: legacy path with the prefix
    np.testing.assert_array_equal(d3.bias.data().asnumpy(), d.bias.data().asnumpy())

    shared = nn.HybridSequential()
    first = nn.Dense(2, in_units=2)
    shared.add(first, nn.Dense(2, in_units=2, params=first.collect_params()))
    shared.initialize()
    fname2 = str(tmp_path / 'dedup.params')
    shared.save_parameters(fname2, deduplicate=True)
    assert len(mx.nd.load(fname2)) == 2
    shared.load_parameters(fname2)
