"""Gluon pooling layers: outputs vs NumPy, imperative == hybridized, repr, prefixes."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon.nn import pool_layers as P
from test_ops_pool import np_pool

nd = mx.nd


def _both(layer, x):
    """Imperative output, then the hybridized (traced) output of the same layer."""
    a = layer(nd.array(x)).asnumpy()
    layer.hybridize()
    b = layer(nd.array(x)).asnumpy()
    b2 = layer(nd.array(x)).asnumpy()  # cached graph path
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, b2)
    return a


CASES = [
    (lambda: P.MaxPool1D(), (2, 3, 9), dict(kernel=(2,), stride=(2,))),
    (lambda: P.MaxPool1D(3, 2, 1, ceil_mode=True), (2, 3, 10),
     dict(kernel=(3,), stride=(2,), pad=(1,), conv='full')),
    (lambda: P.MaxPool2D(), (2, 3, 8, 7), dict(kernel=(2, 2), stride=(2, 2))),
    (lambda: P.MaxPool2D((3, 2), (1, 2), (1, 0)), (2, 3, 6, 7),
     dict(kernel=(3, 2), stride=(1, 2), pad=(1, 0))),
    (lambda: P.MaxPool2D(3, ceil_mode=True), (1, 2, 8, 8),
     dict(kernel=(3, 3), stride=(3, 3), conv='full')),
    (lambda: P.MaxPool3D(), (1, 2, 4, 5, 6), dict(kernel=(2, 2, 2), stride=(2, 2, 2))),
    (lambda: P.AvgPool1D(3, 1, 1), (2, 3, 9),
     dict(kernel=(3,), stride=(1,), pad=(1,), pool_type='avg')),
    (lambda: P.AvgPool2D(3, 2, 1, count_include_pad=False), (2, 3, 7, 7),
     dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg', count_include_pad=False)),
    (lambda: P.AvgPool2D(), (2, 3, 6, 6), dict(kernel=(2, 2), stride=(2, 2), pool_type='avg')),
    (lambda: P.AvgPool3D(2, 1, 1, ceil_mode=True), (1, 2, 3, 4, 5),
     dict(kernel=(2, 2, 2), stride=(1, 1, 1), pad=(1, 1, 1), pool_type='avg', conv='full')),
    (lambda: P.GlobalMaxPool1D(), (2, 3, 9), dict(global_pool=True)),
    (lambda: P.GlobalMaxPool2D(), (2, 3, 5, 6), dict(global_pool=True)),
    (lambda: P.GlobalMaxPool3D(), (2, 3, 2, 5, 6), dict(global_pool=True)),
    (lambda: P.GlobalAvgPool1D(), (2, 3, 9), dict(global_pool=True, pool_type='avg')),
    (lambda: P.GlobalAvgPool2D(), (2, 3, 5, 6), dict(global_pool=True, pool_type='avg')),
    (lambda: P.GlobalAvgPool3D(), (2, 3, 2, 5, 6), dict(global_pool=True, pool_type='avg')),
    (lambda: P.Pool2D(kernel_size=2), (2, 3, 8, 6), dict(kernel=(2, 2), stride=(2, 2))),
    (lambda: P.Pool2D(pool_size=3, strides=1, pool_type='avg'), (1, 2, 5, 5),
     dict(kernel=(3, 3), stride=(1, 1), pool_type='avg')),
]


@pytest.mark.parametrize('i', range(len(CASES)))
def test_layers_vs_numpy(rng, i):
    make, shape, ref_kw = CASES[i]
    x = rng.standard_normal(shape).astype(np.float32)
    out = _both(make(), x)
    ref = np_pool(x, **ref_kw)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_in_hybrid_sequential(rng):
    from hybridgluon.gluon import nn
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(P.MaxPool2D(), P.GlobalAvgPool2D(), nn.Flatten())
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    a = net(nd.array(x)).asnumpy()
    net.hybridize()
    b = net(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(a, b)
    ref = np_pool(np_pool(x, kernel=(2, 2), stride=(2, 2)), global_pool=True, pool_type='avg')
    np.testing.assert_allclose(a, ref.reshape(2, 3), rtol=1e-5, atol=1e-6)


def test_repr():
    assert repr(P.MaxPool2D()) == ('MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), '
                                   'ceil_mode=False, global_pool=False, pool_type=max, '
                                   'layout=NCHW)')
    assert repr(P.MaxPool1D(3, ceil_mode=True)) == (
        'MaxPool1D(size=(3,), stride=(3,), padding=(0,), ceil_mode=True, global_pool=False, '
        'pool_type=max, layout=NCW)')
    assert repr(P.AvgPool3D(2, 1)) == (
        'AvgPool3D(size=(2, 2, 2), stride=(1, 1, 1), padding=(0, 0, 0), ceil_mode=False, '
        'global_pool=False, pool_type=avg, layout=NCDHW)')
    assert repr(P.GlobalAvgPool2D()) == (
        'GlobalAvgPool2D(size=(1, 1), stride=(1, 1), padding=(0, 0), ceil_mode=True, '
        'global_pool=True, pool_type=avg, layout=NCHW)')
    assert repr(P.Pool2D(kernel_size=2)).startswith('Pool2D(size=(2, 2), stride=(2, 2)')


def test_kwargs_and_prefix():
    m = P.MaxPool2D(2, ceil_mode=True)
    assert m._kwargs['pooling_convention'] == 'full'
    assert 'count_include_pad' not in m._kwargs
    assert P.AvgPool2D()._kwargs['count_include_pad'] is True
    g = P.GlobalMaxPool1D()._kwargs
    assert g['kernel'] == (1,) and g['global_pool'] and g['pooling_convention'] == 'full'
    assert P.MaxPool2D(prefix='mp_').prefix == 'mp_'
    a, b = P.MaxPool2D(), P.AvgPool1D()
    assert a.prefix.startswith('pool') and b.prefix.startswith('pool')
    assert a.prefix != b.prefix


def test_bad_arguments():
    with pytest.raises(AssertionError):
        P.MaxPool2D(layout='NCW')
    with pytest.raises(AssertionError):
        P.MaxPool2D(pool_size=(2, 2, 2))
    with pytest.raises(ValueError):
        P.Pool2D(pool_size=2, kernel_size=2)
    with pytest.raises(mx.MXNetError, match='needs 4-D data'):
        P.MaxPool2D(layout='NHWC')(nd.zeros((1, 4, 2))).wait_to_read()
