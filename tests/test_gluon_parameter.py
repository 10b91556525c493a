"""gluon.Parameter, Constant and ParameterDict: initialization (incl. deferred), access, errors,
and ParameterDict's save/load."""
import warnings

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon
from hybridgluon.gluon import Parameter, ParameterDict, DeferredInitializationError

UNINIT_MSG = ("Parameter 'w' has not been initialized. Note that you should initialize "
              "parameters and create Trainer with Block.collect_params() instead of "
              "Block.params because the later does not include Parameters of nested child "
              "Blocks")
DEFERRED_MSG = ("Parameter 'dense0_weight' has not been initialized yet because initialization "
                "was deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing Parameters. "
                "You can also avoid deferred initialization by specifying in_units, "
                "num_features, etc., for network layers.")



def test_repr_shape_dtype():
    p = Parameter('dense0_weight', shape=(10, 0))
    assert repr(p) == "Parameter dense0_weight (shape=(10, 0), dtype=<class 'numpy.float32'>)"
    assert Parameter('b', shape=5).shape == (5,)
    assert repr(Parameter('c', dtype='float16')) == 'Parameter c (shape=None, dtype=float16)'
    assert p.grad_req == 'write' and p.lr_mult == 1.0 and p.wd_mult == 1.0 and p.init is None


def test_initialize_data_grad():
    mx.random.seed(0)
    p = Parameter('w', shape=(3, 4))
    p.initialize()
    d = p.data()
    assert isinstance(d, mx.nd.NDArray) and d.shape == (3, 4) and d.dtype == np.float32
    assert np.abs(d.asnumpy()).max() <= 0.07
    g = p.grad()
    assert g.shape == (3, 4) and (g.asnumpy() == 0).all()
    assert p.list_data()[0] is d and p.list_grad()[0] is g
    assert p.list_ctx() == [mx.cpu(0)]
    assert p.data(mx.cpu(0)) is d
    with pytest.raises(RuntimeError, match="was not initialized on context cpu\\(1\\)"):
        p.data(mx.cpu(1))


def test_uninitialized_errors():
    p = Parameter('w', shape=(2,))
    with pytest.raises(RuntimeError) as e:
        p.data()
    assert str(e.value) == UNINIT_MSG
    with pytest.raises(RuntimeError, match="Parameter 'w' has not been initialized"):
        p.list_ctx()
    with pytest.raises(ValueError, match="Cannot initialize Parameter 'x' because it has invalid "
                                         "shape: \\(3, 0\\)."):
        Parameter('x', shape=(3, 0)).initialize()


def test_deferred_init():
    p = Parameter('dense0_weight', shape=(10, 0), allow_deferred_init=True)
    p.initialize(init=mx.init.One())
    with pytest.raises(DeferredInitializationError) as e:
        p.data()
    assert isinstance(e.value, mx.MXNetError) and str(e.value) == DEFERRED_MSG
    assert p.list_ctx() == [mx.cpu(0)]
    p.shape = (10, 7)
    p._finish_deferred_init()
    assert p.data().shape == (10, 7) and (p.data().asnumpy() == 1).all()
    assert p.grad().shape == (10, 7)
    with pytest.raises(AssertionError, match='incompatible'):
        p.shape = (10, 8)


def test_set_data_before_deferred_finish():
    p = Parameter('w', shape=(2, 0), allow_deferred_init=True)
    p.initialize()
    p.set_data(mx.nd.ones((2, 3)) * 5)
    p._finish_deferred_init()
    assert (p.data().asnumpy() == 5).all()


def test_init_precedence():
    p = Parameter('fc_weight', shape=(2, 2), init='ones')
    p.initialize(default_init=mx.init.Zero())
    assert (p.data().asnumpy() == 1).all()
    p.initialize(init=mx.init.Constant(3), force_reinit=True)
    assert (p.data().asnumpy() == 3).all()
    # As in MXNet's Gluon, a Parameter without its own init gets the global initializer's
    # _init_weight whatever its name (the suffix rules apply to bare InitDescs only).
    q = Parameter('fc_bias', shape=(2,))
    q.initialize(default_init=mx.init.Constant(9))
    assert (q.data().asnumpy() == 9).all()


def test_reinit_warns():
    p = Parameter('w', shape=(2,))
    p.initialize(init='ones')
    with pytest.warns(UserWarning, match="Parameter 'w' is already initialized, ignoring. Set "
                                         "force_reinit=True to re-initialize."):
        p.initialize(init='zeros')
    assert (p.data().asnumpy() == 1).all()


def test_grad_req_null():
    p = Parameter('w', shape=(2,), grad_req='null')
    p.initialize()
    with pytest.raises(RuntimeError, match="Cannot get gradient array for Parameter 'w' because "
                                           "grad_req='null'"):
        p.grad()
    p.grad_req = 'write'
    assert p.grad().shape == (2,)
    p.grad_req = 'null'
    assert p._grad is None
    with pytest.raises(AssertionError, match='grad_req must be one of'):
        p.grad_req = 'bad'
    q = Parameter('q', shape=(2,), differentiable=False)
    assert q.grad_req == 'null'


def test_set_data_zero_grad_cast_reset_ctx():
    p = Parameter('w', shape=(2, 3))
    p.initialize()
    p.set_data(mx.nd.ones((2, 3)))
    assert (p.data().asnumpy() == 1).all()
    p.grad()[:] = 4
    p.zero_grad()
    assert (p.grad().asnumpy() == 0).all()
    p.cast('float64')
    assert p.dtype == 'float64' and p.data().dtype == np.float64
    assert p.grad().dtype == np.float64 and (p.data().asnumpy() == 1).all()
    p.reset_ctx(mx.cpu(0))
    assert p.list_ctx() == [mx.cpu(0)] and (p.data().asnumpy() == 1).all()
    with pytest.raises(ValueError, match="Cannot reset context for Parameter 'z'"):
        Parameter('z', shape=(1,)).reset_ctx(mx.cpu())


def test_var_carries_mxnet_annotations():
    p = Parameter('w', shape=(3, 0), lr_mult=2.0, init='zeros')
    v = p.var()
    assert v.name == 'w' and p.var() is v
    assert v.list_attr() == {'__dtype__': '0', '__init__': 'zeros', '__lr_mult__': '2.0',
                             '__shape__': '(3, 0)', '__storage_type__': '0',
                             '__wd_mult__': '1.0', 'lr_mult': '2.0', 'wd_mult': '1.0'}


def test_constant():
    c = gluon.Constant('const', [[1, 2], [3, 4]])
    assert repr(c) == "Constant const (shape=(2, 2), dtype=<class 'numpy.float32'>)"
    assert c.grad_req == 'null'
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [[1, 2], [3, 4]])
    with pytest.warns(UserWarning, match='does not support grad_req'):
        c.grad_req = 'write'
    assert c.grad_req == 'null'
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        c.grad()


def test_parameterdict_get_and_merge():
    pd = ParameterDict('net_')
    w = pd.get('weight', shape=(10, 0))
    assert w.name == 'net_weight' and pd.get('weight') is w
    assert pd.get('weight', shape=(10, 5)) is w and w.shape == (10, 5)
    assert pd.get('weight', shape=(0, 5), dtype=np.float32) is w and w.shape == (10, 5)
    with pytest.raises(AssertionError) as e:
        pd.get('weight', shape=(3, 5))
    assert str(e.value) == ("Cannot retrieve Parameter 'net_weight' because desired attribute "
                            "does not match with stored for attribute 'shape': desired "
                            "'(3, 5)' vs stored '(10, 5)'.")
    b = pd.get('bias', shape=(3,), init='zeros')
    assert list(pd.keys()) == ['net_weight', 'net_bias'] and len(pd) == 2
    assert list(pd) == ['net_weight', 'net_bias'] and pd['net_bias'] is b
    assert list(pd.values()) == [w, b] and dict(pd.items())['net_weight'] is w
    assert 'net_bias' in pd and pd.prefix == 'net_'


def test_parameterdict_shared_update_constant():
    a = ParameterDict('a_')
    w = a.get('weight', shape=(2,))
    b = ParameterDict('a_', shared=a)
    assert b.get('weight') is w
    other = ParameterDict('a_')
    other.get('weight', shape=(2,))
    with pytest.raises(AssertionError, match="different Parameters with the same name"):
        a.update(other)
    c = a.get_constant('c', [1.0, 2.0])
    assert isinstance(c, gluon.Constant) and a.get_constant('c') is c
    with pytest.raises(AssertionError, match="already exists but it's value doesn't match"):
        a.get_constant('c', [3.0, 4.0])
    with pytest.raises(KeyError, match="No constant named 'a_d'"):
        a.get_constant('d')


def test_parameterdict_initialize_setattr_zero_grad_repr():
    pd = ParameterDict('p_')
    pd.get('weight', shape=(2, 2))
    pd.get('bias', shape=(2,), init='zeros')
    pd.initialize(mx.init.One())
    assert (pd['p_weight'].data().asnumpy() == 1).all()
    assert (pd['p_bias'].data().asnumpy() == 0).all()
    pd.setattr('lr_mult', 0.5)
    assert all(p.lr_mult == 0.5 for p in pd.values())
    pd['p_weight'].grad()[:] = 3
    pd.zero_grad()
    assert (pd['p_weight'].grad().asnumpy() == 0).all()
    assert pd.list_ctx() == [mx.cpu(0)]
    assert repr(pd) == ("p_ (\n"
                        "  Parameter p_weight (shape=(2, 2), dtype=<class 'numpy.float32'>)\n"
                        "  Parameter p_bias (shape=(2,), dtype=<class 'numpy.float32'>)\n)")
    assert repr(ParameterDict()) == '(\n\n)'


def test_parameterdict_save_load(tmp_path):
    fname = str(tmp_path / 'p.params')
    pd = ParameterDict('net_')
    pd.get('weight', shape=(2, 3)).initialize()
    pd.get('bias', shape=(2,)).initialize(init='ones')
    pd.save(fname, strip_prefix='net_')
    assert sorted(mx.nd.load(fname).keys()) == ['bias', 'weight']

    fresh = ParameterDict('net_')
    fresh.get('weight', shape=(2, 0), allow_deferred_init=True)
    fresh.get('bias', shape=(2,))
    fresh.load(fname, restore_prefix='net_')
    assert fresh['net_weight'].shape == (2, 3)
    np.testing.assert_array_equal(fresh['net_weight'].data().asnumpy(),
                                  pd['net_weight'].data().asnumpy())

    missing = ParameterDict('net_')
    missing.get('gamma', shape=(2,))
    with pytest.raises(AssertionError) as e:
        missing.load(fname, restore_prefix='net_')
    assert str(e.value).startswith("Parameter 'gamma' is missing in file: %s, which contains "
                                   "parameters: 'net_" % fname)
    with pytest.raises(AssertionError, match="Parameter 'weight' loaded from file: .* is not "
                                             "present in ParameterDict"):
        missing.load(fname, restore_prefix='net_', allow_missing=True)
    missing.load(fname, restore_prefix='net_', allow_missing=True, ignore_extra=True)

    with pytest.raises(ValueError, match="Prefix 'zz_' is to be striped before saving"):
        pd.save(fname, strip_prefix='zz_')


def test_parameterdict_load_dtype(tmp_path):
    fname = str(tmp_path / 'd.params')
    mx.nd.save(fname, {'w': mx.nd.ones((2,), dtype='float64')})
    pd = ParameterDict()
    pd.get('w', shape=(2,))
    with pytest.raises(AssertionError, match="dtype incompatible expected <class "
                                             "'numpy.float32'> vs saved <class "
                                             "'numpy.float64'>"):
        pd.load(fname)
    pd.load(fname, cast_dtype=True)
    assert pd['w'].data().dtype == np.float32
    pd2 = ParameterDict()
    pd2.get('w', shape=(2,))
    pd2.load(fname, cast_dtype=True, dtype_source='saved')
    assert pd2['w'].data().dtype == np.float64
    pd3 = ParameterDict()
    pd3.get('w', shape=(3,))
    with pytest.raises(AssertionError, match="shape incompatible expected \\(3,\\) vs saved "
                                             "\\(2,\\)"):
        pd3.load(fname, cast_dtype=True)


def test_parameter_load_init_without_file():
    p = Parameter('w', shape=(2, 0), allow_deferred_init=True)
    p.initialize()
    p._load_init(mx.nd.array([[1, 2, 3], [4, 5, 6]]), None)
    assert p.shape == (2, 3) and p.data()[1, 2].asscalar() == 6
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        p._load_init(mx.nd.zeros((2, 3)), mx.cpu())
    assert (p.data().asnumpy() == 0).all()
