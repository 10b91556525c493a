"""NumPy integers wherever MXNet 1.9.1 takes a Python int: layer arguments, creation functions'
shapes, Parameter shapes; bools and floats refused where MXNet refuses them.

Expected shapes, reprs and errors were observed under MXNet 1.9.1 (numpy 1.23.5) running the
same calls. Runs under NumPy 1.x and 2.x: NumPy integers become Python ints, so reprs and
shapes read the same under both ('(2, 2)', never '(np.int64(2), np.int64(2))').
"""
import re

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon, nd
from hybridgluon.gluon import nn

I = np.int64
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _out_shape(layer, shape, hybridize=False):
    layer.initialize()
    if hybridize:
        layer.hybridize()
    return layer(nd.ones(shape)).shape


def _all_python_ints(values):
    return all(type(v) is int for v in values)


# ---- layers ------------------------------------------------------------------------------------

# (layer factory, input shape, MXNet 1.9.1's output shape)
LAYERS = [
    (lambda: nn.MaxPool2D(strides=I(2)), (1, 2, 8, 8), (1, 2, 4, 4)),
    (lambda: nn.MaxPool2D(pool_size=I(3)), (1, 2, 8, 8), (1, 2, 2, 2)),
    (lambda: nn.MaxPool2D(padding=I(1)), (1, 2, 8, 8), (1, 2, 5, 5)),
    (lambda: nn.MaxPool2D(I(3), I(2), I(1)), (1, 2, 8, 8), (1, 2, 4, 4)),
    (lambda: nn.MaxPool2D((I(3), I(3)), (I(2), 2)), (1, 2, 8, 8), (1, 2, 3, 3)),
    (lambda: nn.AvgPool2D(I(2), np.int32(2), I(0)), (1, 2, 8, 8), (1, 2, 4, 4)),
    (lambda: nn.MaxPool1D(I(2), I(2), I(0)), (1, 2, 8), (1, 2, 4)),
    (lambda: nn.AvgPool1D(np.uint8(2)), (1, 2, 8), (1, 2, 4)),
    (lambda: nn.MaxPool3D(I(2), I(2), I(0)), (1, 2, 6, 6, 6), (1, 2, 3, 3, 3)),
    (lambda: nn.AvgPool3D(np.int16(2), padding=np.int8(1)), (1, 2, 6, 6, 6), (1, 2, 4, 4, 4)),
    (lambda: nn.Conv2D(I(4), I(3), I(2), I(1), I(1), in_channels=I(2)), (1, 2, 8, 8),
     (1, 4, 4, 4)),
    (lambda: nn.Conv2D(I(4), 3, groups=I(2), in_channels=2), (1, 2, 8, 8), (1, 4, 6, 6)),
    (lambda: nn.Conv2DTranspose(I(3), I(3), I(2), I(1), I(1), in_channels=I(2)), (1, 2, 8, 8),
     (1, 3, 16, 16)),
    (lambda: nn.Conv1D(I(3), I(3), I(1), I(1), I(1), in_channels=I(2)), (1, 2, 8), (1, 3, 8)),
    (lambda: nn.Conv1DTranspose(I(3), I(3), I(1), I(1), I(0), I(1)), (1, 2, 8), (1, 3, 8)),
    (lambda: nn.Conv3D(I(3), I(3), I(1), I(1), I(1)), (1, 2, 6, 6, 6), (1, 3, 6, 6, 6)),
    (lambda: nn.Conv3DTranspose(I(3), I(3), I(1), I(1), I(0), I(1)), (1, 2, 6, 6, 6),
     (1, 3, 6, 6, 6)),
    (lambda: nn.ReflectionPad2D(I(1)), (1, 2, 8, 8), (1, 2, 10, 10)),
    (lambda: nn.Dense(I(3), in_units=I(4)), (2, 4), (2, 3)),
    (lambda: nn.Dense(I(3), flatten=False), (2, 5, 4), (2, 5, 3)),
    (lambda: nn.BatchNorm(axis=I(1), in_channels=I(2)), (1, 2, 8, 8), (1, 2, 8, 8)),
    (lambda: nn.InstanceNorm(axis=I(1), in_channels=I(2)), (1, 2, 8, 8), (1, 2, 8, 8)),
    (lambda: nn.LayerNorm(axis=I(-1), in_channels=I(8)), (1, 2, 8, 8), (1, 2, 8, 8)),
    (lambda: nn.GroupNorm(num_groups=I(2)), (1, 2, 8, 8), (1, 2, 8, 8)),
    (lambda: nn.Embedding(I(10), I(4)), (2, 3), (2, 3, 4)),
    (lambda: nn.Dropout(0.5, axes=(I(1),)), (1, 2, 8, 8), (1, 2, 8, 8)),
    (lambda: nn.PReLU(in_channels=I(2)), (1, 2, 8, 8), (1, 2, 8, 8)),
]


@pytest.mark.parametrize('hybridize', [False, True])
@pytest.mark.parametrize('make, shape, want', LAYERS)
def test_layers_take_numpy_ints(make, shape, want, hybridize):
    layer = make()
    assert _out_shape(layer, shape, hybridize) == want
    for p in layer.collect_params().values():
        assert _all_python_ints(p.shape), (p.name, p.shape)
    assert 'np.' not in repr(layer)


@pytest.mark.parametrize('kind', INTS)
def test_every_numpy_int_kind_in_pooling_and_conv(kind):
    assert _out_shape(nn.MaxPool2D(kind(2), kind(2), kind(0)), (1, 1, 4, 4)) == (1, 1, 2, 2)
    conv = nn.Conv2D(kind(2), kind(3), padding=kind(1), in_channels=kind(1))
    assert _out_shape(conv, (1, 1, 4, 4)) == (1, 2, 4, 4)
    assert conv.weight.shape == (2, 1, 3, 3) and _all_python_ints(conv.weight.shape)


# MXNet 1.9.1's reprs of the same layers (automatic prefixes stripped); under NumPy 2 they would
# show np.int64(...) if the ints were kept.
REPRS = [
    (lambda: nn.MaxPool2D(I(3), I(2), I(1)),
     'MaxPool2D(size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=False, '
     'global_pool=False, pool_type=max, layout=NCHW)'),
    (lambda: nn.MaxPool3D((I(2), 2, I(2)), padding=(0, I(1), 0)),
     'MaxPool3D(size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 1, 0), ceil_mode=False, '
     'global_pool=False, pool_type=max, layout=NCDHW)'),
    (lambda: nn.Conv2D(I(4), I(3), I(2), I(1), I(2), groups=I(2), in_channels=I(2)),
     'Conv2D(1 -> 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), '
     'groups=2)'),
    (lambda: nn.Conv1DTranspose(I(4), I(3), output_padding=I(0), in_channels=I(2)),
     'Conv1DTranspose(4 -> 2, kernel_size=(3,), stride=(1,))'),
    (lambda: nn.BatchNorm(axis=I(1), in_channels=I(2)),
     'BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, '
     'in_channels=2)'),
    (lambda: nn.LayerNorm(axis=I(-1), in_channels=I(3)),
     'LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, in_channels=3)'),
    (lambda: nn.GroupNorm(num_groups=I(2)),
     'GroupNorm(eps=1e-05, num_groups=2, center=True, scale=True)'),
    (lambda: nn.Dense(I(3), in_units=I(4)), 'Dense(4 -> 3, linear)'),
    (lambda: nn.Dropout(0.5, axes=(I(1),)), 'Dropout(p = 0.5, axes=(1,))'),
    (lambda: nn.Embedding(I(10), I(4)), 'Embedding(10 -> 4, float32)'),
]


@pytest.mark.parametrize('make, want', REPRS)
def test_layer_reprs_as_mxnet(make, want):
    assert repr(make()) == want


def test_parameter_reprs_as_mxnet():
    conv = nn.Conv2D(I(4), I(3), groups=I(2), in_channels=I(2))
    got = [re.sub(r'conv\d+_', '', repr(p)) for p in conv.collect_params().values()]
    assert got == ["Parameter weight (shape=(4, 1, 3, 3), dtype=<class 'numpy.float32'>)",
                   "Parameter bias (shape=(4,), dtype=<class 'numpy.float32'>)"]


# MXNet refuses bools and floats where an int is expected, at the first forward pass (its
# layers pass them to the op, whose attribute parser refuses them).
@pytest.mark.parametrize('make, shape', [
    (lambda: nn.MaxPool2D(strides=True), (1, 1, 4, 4)),
    (lambda: nn.MaxPool2D(pool_size=True), (1, 1, 4, 4)),
    (lambda: nn.MaxPool2D(pool_size=2.0), (1, 1, 4, 4)),
    (lambda: nn.MaxPool2D(pool_size=np.float64(2)), (1, 1, 4, 4)),
    (lambda: nn.Conv2D(4, True), (1, 2, 8, 8)),
    (lambda: nn.Conv2D(4, 3, strides=True), (1, 2, 8, 8)),
    (lambda: nn.Conv2D(4, 3, strides=np.bool_(True)), (1, 2, 8, 8)),
    (lambda: nn.Dense(True), (2, 4)),
])
def test_layers_refuse_bools_and_floats_at_forward(make, shape):
    layer = make()  # construction succeeds, as in MXNet
    with pytest.raises(ValueError, match='Invalid Parameter format'):
        _out_shape(layer, shape)


# ---- creation functions ------------------------------------------------------------------------

@pytest.mark.parametrize('kind', INTS)
def test_creation_shapes_take_numpy_ints(kind):
    for fn in (nd.zeros, nd.ones, nd.empty):
        assert fn(kind(3)).shape == (3,)
        assert fn((kind(2), 3)).shape == (2, 3)
        assert fn([kind(2), kind(1)]).shape == (2, 1)
    np.testing.assert_array_equal(nd.full(kind(2), 7).asnumpy(), [7, 7])
    np.testing.assert_array_equal(nd.full((kind(2), kind(2)), kind(7)).asnumpy(),
                                  np.full((2, 2), 7))
    assert nd.zeros(np.array(3, dtype=kind)).shape == (3,)  # a 0-d array, as MXNet allows
    np.testing.assert_array_equal(nd.zeros((kind(2),), dtype='int32').asnumpy(), [0, 0])


def test_arange_takes_numpy_numbers():
    # MXNet 1.9.1's results
    np.testing.assert_array_equal(nd.arange(I(5)).asnumpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(nd.arange(I(1), I(7), I(2)).asnumpy(), [1, 3, 5])
    np.testing.assert_array_equal(nd.arange(np.float32(0.5), np.float64(2.5)).asnumpy(),
                                  [0.5, 1.5])
    np.testing.assert_array_equal(nd.arange(0, I(3), repeat=I(2)).asnumpy(),
                                  [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(nd.arange(1, 6, np.int8(2), dtype='int32').asnumpy(),
                                  [1, 3, 5])
    # np.float32(0.1) is read as 0.1 (MXNet spells the value as a string), not 0.10000000149
    got = nd.arange(0, np.float32(0.35), np.float32(0.1), dtype='float64').asnumpy()
    np.testing.assert_array_equal(got, np.arange(0, 0.35, 0.1))
    assert nd.arange(np.float32(0.1), 1, dtype='float64').asnumpy()[0] == 0.1
    assert nd.full((1,), np.float32(0.1), dtype='float64').asnumpy()[0] == 0.1  # MXNet: 0.1


# MXNet 1.9.1: zeros and ones refuse bools and floats with the shape parser's error; empty and
# full size the array through ctypes, where True is 1 and a float is a TypeError.
@pytest.mark.parametrize('shape, shown', [
    (True, 'True'), ((True, 2), '(True, 2)'), (np.bool_(True), 'True'),
    ((np.bool_(True), 2), '(True, 2)'), (3.0, '3.0'), ((3.0, 2), '(3.0, 2)'),
    (np.float64(3), '3.0')])
def test_zeros_ones_refuse_bools_and_floats(shape, shown):
    for fn in (nd.zeros, nd.ones):
        with pytest.raises(mx.MXNetError) as err:
            fn(shape)
        assert isinstance(err.value, ValueError)
        assert ("Invalid Parameter format for shape expect Shape(tuple) but value='%s'" % shown
                in str(err.value))


def test_empty_full_count_bools_as_mxnet_does():
    assert nd.empty(True).shape == (1,)
    assert nd.empty((True, 2)).shape == (1, 2)
    assert nd.empty((np.bool_(True), 2)).shape == (1, 2)
    assert nd.full(True, 1).shape == (1,)
    assert nd.full((True, 2), 1).shape == (1, 2)
    for fn in (nd.empty, lambda s: nd.full(s, 1)):
        for shape in (3.0, (3.0, 2), (np.float64(3), 2), (2.0,)):
            with pytest.raises(TypeError):
                fn(shape)


@pytest.mark.parametrize('kwargs, message', [
    ({'start': True}, "start expect double but value='True'"),
    ({'start': np.bool_(True)}, "start expect double but value='True'"),
    ({'start': 0, 'stop': True}, "stop expect double or None but value='True'"),
    ({'start': 0, 'stop': 3, 'step': True}, "step expect double but value='True'"),
    ({'start': 0, 'stop': 3, 'repeat': True}, "repeat expect int but value='True'"),
    ({'start': 0, 'stop': 3, 'repeat': 2.0}, "repeat expect int but value='2.0'"),
])
def test_arange_refuses_bools_as_mxnet(kwargs, message):
    with pytest.raises(mx.MXNetError, match='Invalid Parameter format for ' + re.escape(message)):
        nd.arange(**kwargs)


# ---- Parameter shapes --------------------------------------------------------------------------

def test_parameter_shape_becomes_python_ints():
    p = gluon.Parameter('w', shape=(I(2), 3))
    assert p.shape == (2, 3) and _all_python_ints(p.shape)
    assert repr(p) == "Parameter w (shape=(2, 3), dtype=<class 'numpy.float32'>)"
    assert gluon.Parameter('w', shape=np.int32(4)).shape == (4,)
    p = gluon.Parameter('w', shape=(0, 3))
    p.shape = (I(2), I(3))
    assert p.shape == (2, 3) and _all_python_ints(p.shape)
    p.initialize()
    assert p.data().shape == (2, 3)


def test_parameter_dict_get_shape_becomes_python_ints():
    d = gluon.ParameterDict('p_')
    w = d.get('w', shape=(I(2), 3))
    assert w.shape == (2, 3) and _all_python_ints(w.shape)
    # a second get merges its shape with the known one
    d.get('v', shape=(0, 3))
    v = d.get('v', shape=(np.uint8(5), I(3)))
    assert v.shape == (5, 3) and _all_python_ints(v.shape)


def test_parameter_shape_keeps_bools_as_mxnet():
    # MXNet 1.9.1 keeps a bool dim as it is (shape (True, 3))
    p = gluon.Parameter('w', shape=(True, 3))
    assert p.shape == (True, 3) and type(p.shape[0]) is bool


def test_random_takes_numpy_integers():
    """mx.random.seed and nd.random's shape take NumPy integers, as MXNet 1.9.1 does (it
    lists np.int32/np.int64 among its integer types); the seeded draws are the same."""
    import hybridgluon as mx
    mx.random.seed(np.int64(3))
    a = mx.nd.random.uniform(shape=np.int64(3)).asnumpy()
    mx.random.seed(3)
    b = mx.nd.random.uniform(shape=3).asnumpy()
    assert a.shape == (3,)
    np.testing.assert_array_equal(a, b)
    assert mx.nd.random.normal(shape=(np.int32(2), np.int64(4))).shape == (2, 4)
    for bad in (True, 1.5, '3'):
        with pytest.raises(ValueError):
            mx.random.seed(bad)
