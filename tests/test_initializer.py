"""Initializers (mx.init): dispatch by name, registry, dumps, and the statistics of each."""
import json
import math
import warnings

import numpy as np
import pytest

import hybridgluon as mx


def _fill(init, name, shape, dtype='float32'):
    arr = mx.nd.zeros(shape, dtype=dtype)
    init(mx.init.InitDesc(name), arr)
    return arr.asnumpy()


def test_module_aliases():
    assert mx.init is mx.initializer
    assert isinstance(mx.init.InitDesc('a_weight'), str)
    desc = mx.init.InitDesc('w', {'k': 'v'})
    assert desc == 'w' and desc.attrs == {'k': 'v'} and desc.global_init is None


def test_uniform_statistics():
    mx.random.seed(0)
    w = _fill(mx.init.Uniform(), 'fc_weight', (200, 100))
    assert w.min() >= -0.07 and w.max() <= 0.07
    assert abs(w.mean()) < 2e-3
    assert abs(w.std() - 0.07 / math.sqrt(3)) < 2e-3
    w = _fill(mx.init.Uniform(0.5), 'fc_weight', (100, 100))
    assert w.min() >= -0.5 and w.max() <= 0.5 and w.max() > 0.45


def test_normal_statistics():
    mx.random.seed(1)
    w = _fill(mx.init.Normal(), 'w_weight', (200, 100))
    assert abs(w.std() - 0.01) < 5e-4 and abs(w.mean()) < 5e-4
    w = _fill(mx.init.Normal(2.0), 'w_weight', (200, 100))
    assert abs(w.std() - 2.0) < 0.05


@pytest.mark.parametrize('factor_type,factor', [('avg', 75.0), ('in', 50.0), ('out', 100.0)])
def test_xavier_uniform_bounds(factor_type, factor):
    mx.random.seed(2)
    w = _fill(mx.init.Xavier(factor_type=factor_type), 'fc_weight', (100, 50))
    bound = math.sqrt(3.0 / factor)
    assert w.min() >= -bound and w.max() <= bound
    assert w.max() > 0.9 * bound and w.min() < -0.9 * bound


def test_xavier_gaussian_and_conv_fans():
    mx.random.seed(3)
    # conv weight (16, 8, 3, 3): fan_in 72, fan_out 144, avg 108
    w = _fill(mx.init.Xavier(rnd_type='gaussian', magnitude=2), 'c_weight', (16, 8, 3, 3))
    assert abs(w.std() - math.sqrt(2.0 / 108)) < 0.01
    with pytest.raises(ValueError, match='Xavier initializer cannot be applied to vector'):
        _fill(mx.init.Xavier(), 'v_weight', (10,))
    with pytest.raises(ValueError, match='Incorrect factor type'):
        _fill(mx.init.Xavier(factor_type='bad'), 'v_weight', (3, 3))
    with pytest.raises(ValueError, match='Unknown random type'):
        _fill(mx.init.Xavier(rnd_type='bad'), 'v_weight', (3, 3))


def test_msraprelu():
    mx.random.seed(4)
    w = _fill(mx.init.MSRAPrelu(factor_type='in'), 'fc_weight', (400, 100))
    assert abs(w.std() - math.sqrt(2.0 / (1 + 0.25 ** 2) / 100)) < 0.005
    assert json.loads(mx.init.MSRAPrelu().dumps()) == ['msraprelu',
                                                       {'factor_type': 'avg', 'slope': 0.25}]


def test_constant_zero_one():
    assert (_fill(mx.init.Constant(3.5), 'x_weight', (2, 3)) == 3.5).all()
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert (_fill(mx.init.Constant(value), 'x_weight', (2, 3)) == value).all()
    assert (_fill(mx.init.Constant(mx.nd.array(value)), 'x_weight', (2, 3)) == value).all()
    assert (_fill(mx.init.Zero(), 'x_weight', (4,)) == 0).all()
    assert (_fill(mx.init.One(), 'x_weight', (4,)) == 1).all()


def test_suffix_dispatch():
    init = mx.init.Uniform()
    assert (_fill(init, 'fc_bias', (3,)) == 0).all()
    assert (_fill(init, 'bn_gamma', (3,)) == 1).all()
    assert (_fill(init, 'bn_beta', (3,)) == 0).all()
    assert (_fill(init, 'bn_running_mean', (3,)) == 0).all()
    assert (_fill(init, 'bn_running_var', (3,)) == 1).all()
    assert (_fill(init, 'q_min', (3,)) == 0).all()
    assert (_fill(init, 'q_max', (3,)) == 1).all()
    assert np.abs(_fill(init, 'fc_weight', (30,))).max() > 0
    with pytest.raises(ValueError, match='Unknown initialization pattern for foo'):
        _fill(init, 'foo', (3,))


def test_per_variable_init_wins():
    arr = mx.nd.zeros((2, 2))
    mx.init.Uniform()(mx.init.InitDesc('a_bias', {'__init__': 'ones'}), arr)
    assert (arr.asnumpy() == 1).all()
    mx.init.Uniform()(mx.init.InitDesc('a', {'__init__': mx.init.Constant(7)}), arr)
    assert (arr.asnumpy() == 7).all()
    desc = mx.init.InitDesc('w_weight')
    init = mx.init.Normal()
    init(desc, arr)
    assert desc.global_init is init


def test_legacy_string_call():
    arr = mx.nd.zeros((3,))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        mx.init.Uniform()('bn_moving_var', arr)
    assert (arr.asnumpy() == 1).all()
    assert any(issubclass(i.category, DeprecationWarning) for i in w)


def test_dumps():
    assert mx.init.Normal(0.5).dumps() == '["normal", {"sigma": 0.5}]'
    assert json.loads(mx.init.Xavier(factor_type='in', magnitude=2.34).dumps()) == [
        'xavier', {'rnd_type': 'uniform', 'factor_type': 'in', 'magnitude': 2.34}]
    assert mx.init.Uniform().dumps() == '["uniform", {"scale": 0.07}]'
    assert mx.init.Zero().dumps() == '["zero", {}]'


@pytest.mark.parametrize('name,cls', [('zero', 'Zero'), ('zeros', 'Zero'), ('one', 'One'),
                                      ('ones', 'One'), ('uniform', 'Uniform'),
                                      ('normal', 'Normal'), ('xavier', 'Xavier'),
                                      ('msraprelu', 'MSRAPrelu'), ('orthogonal', 'Orthogonal'),
                                      ('Xavier', 'Xavier')])
def test_create_by_name(name, cls):
    assert type(mx.init.create(name)) is getattr(mx.init, cls)


def test_create_forms():
    init = mx.init.Normal(0.3)
    assert mx.init.create(init) is init
    again = mx.init.create(init.dumps())
    assert isinstance(again, mx.init.Normal) and again.sigma == 0.3
    assert mx.init.create('constant', value=2.0).value == 2.0
    assert mx.init.create('uniform', scale=0.2).scale == 0.2
    with pytest.raises(AssertionError, match='is not registered'):
        mx.init.create('nosuchinit')


def test_register_custom():
    @mx.init.register
    @mx.init.alias('myinit_alias')
    class MyInitForTest(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.25

    assert (_fill(mx.init.create('myinitfortest'), 'w_weight', (2,)) == 0.25).all()
    p = mx.gluon.Parameter('w_weight', shape=(3,), init='myinit_alias')
    p.initialize()
    assert (p.data().asnumpy() == 0.25).all()


def test_seed_reproduces():
    def draw(init):
        mx.random.seed(123)
        return _fill(init, 'fc_weight', (8, 6))
    for init in (mx.init.Uniform(), mx.init.Normal(), mx.init.Xavier(),
                 mx.init.Xavier(rnd_type='gaussian')):
        a, b = draw(init), draw(init)
        assert (a == b).all()
    mx.random.seed(124)
    assert not (draw(mx.init.Uniform()) == _fill(mx.init.Uniform(), 'fc_weight', (8, 6))).all()


@pytest.mark.parametrize('shape', [(4, 10), (10, 4), (6, 2, 3)])
def test_orthogonal(shape):
    mx.random.seed(5)
    w = _fill(mx.init.Orthogonal(scale=2.0), 'o_weight', shape).reshape(shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)
    w = _fill(mx.init.Orthogonal(rand_type='normal'), 'o_weight', (3, 5))
    np.testing.assert_allclose(w @ w.T, 1.414 ** 2 * np.eye(3), atol=1e-4)


def test_bilinear_matches_mxnet_formula():
    shape = (2, 1, 4, 6)
    got = _fill(mx.init.Bilinear(), 'up_weight', shape)
    f = np.ceil(shape[3] / 2.)
    c = (2 * f - 1 - f % 2) / (2. * f)
    ref = np.zeros(int(np.prod(shape)), dtype='float32')
    for i in range(ref.size):
        x = i % shape[3]
        y = (i // shape[3]) % shape[2]
        ref[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    np.testing.assert_allclose(got, ref.reshape(shape), rtol=1e-6)


def test_lstmbias_load_mixed():
    b = _fill(mx.init.LSTMBias(forget_bias=2.0), 'l_bias_weight', (8,))
    assert (b == [0, 0, 2, 2, 0, 0, 0, 0]).all()
    load = mx.init.Load({'arg:a_weight': mx.nd.ones((2,))}, default_init=mx.init.Zero())
    a, z = mx.nd.zeros((2,)), mx.nd.ones((2,))
    load('a_weight', a)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        load('b_weight', z)
    assert (a.asnumpy() == 1).all() and (z.asnumpy() == 0).all()
    mixed = mx.init.Mixed(['fc_.*', '.*'], [mx.init.One(), mx.init.Constant(3)])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        mixed('fc_weight', a)
        mixed('other_weight', z)
    assert (a.asnumpy() == 1).all() and (z.asnumpy() == 3).all()
