"""Channel-last layouts as MXNet 1.9.1's CPU build takes them: Pooling runs NWC / NHWC / NDHWC
(checked against the channel-first op on transposed data, and its gradient against finite
differences); Convolution and Deconvolution infer NHWC / NDHWC shapes (weight (F, *k, C/g) and
(C, *k, F/g)) but refuse to run them, and NWC is not one of their layouts."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

nd = mx.nd

CASES = [('NWC', (2, 7, 3), (3,)), ('NHWC', (2, 6, 5, 3), (3, 2)),
         ('NDHWC', (1, 4, 5, 4, 2), (2, 3, 2))]


def _cf(x):  # channel-last -> channel-first
    return np.moveaxis(x, -1, 1)


def _cl(x):
    return np.moveaxis(x, 1, -1)


@pytest.mark.parametrize('layout,shape,kernel', CASES)
@pytest.mark.parametrize('pool_type', ['max', 'avg', 'sum', 'lp'])
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_pooling_channel_last_matches_channel_first(layout, shape, kernel, pool_type, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    nsp = len(kernel)
    kw = dict(kernel=kernel, pool_type=pool_type, stride=(2,) * nsp, pad=(1,) * nsp)
    if pool_type == 'lp':
        kw['p_value'] = 2
    a = nd.array(x, dtype=dtype)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(a, layout=layout, **kw)
    dy = rng.standard_normal(y.shape).astype(dtype)
    y.backward(nd.array(dy, dtype=dtype))
    b = nd.array(_cf(x), dtype=dtype)
    b.attach_grad()
    with mx.autograd.record():
        yb = nd.Pooling(b, **kw)
    yb.backward(nd.array(_cf(dy), dtype=dtype))
    assert y.shape == _cl(yb.asnumpy()).shape and y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), _cl(yb.asnumpy()))
    np.testing.assert_array_equal(a.grad.asnumpy(), _cl(b.grad.asnumpy()))


def test_pooling_channel_last_values():
    # a hand-checkable case: 2x2 max and avg over an NHWC image with two channels
    x = np.arange(2 * 4 * 4, dtype=np.float32).reshape(1, 4, 4, 2)
    x[..., 1] *= -1
    y = nd.Pooling(nd.array(x), kernel=(2, 2), stride=(2, 2), layout='NHWC').asnumpy()
    want = np.array([[[[10, -1], [14, -5]], [[26, -17], [30, -21]]]], np.float32)
    np.testing.assert_array_equal(y, want)
    y = nd.Pooling(nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type='avg',
                   layout='NHWC').asnumpy()
    np.testing.assert_array_equal(y[0, 0, 0], [5, -6])


@pytest.mark.parametrize('layout,shape,gshape', [('NWC', (2, 7, 3), (2, 1, 3)),
                                                 ('NHWC', (2, 5, 4, 3), (2, 1, 1, 3)),
                                                 ('NDHWC', (1, 3, 5, 4, 2), (1, 1, 1, 1, 2))])
def test_pooling_channel_last_global(layout, shape, gshape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    y = nd.Pooling(nd.array(x), global_pool=True, pool_type='avg', layout=layout)
    assert y.shape == gshape
    axes = tuple(range(1, len(shape) - 1))
    np.testing.assert_allclose(y.asnumpy(), x.mean(axis=axes, keepdims=True), rtol=1e-5)


def test_pooling_channel_last_full_convention_and_empty():
    x = nd.zeros((2, 10, 10, 2))
    assert nd.Pooling(x, kernel=(3, 3), layout='NHWC').shape == (2, 8, 8, 2)
    assert nd.Pooling(x, kernel=(3, 3), stride=(3, 3), pooling_convention='full',
                      layout='NHWC').shape == (2, 4, 4, 2)
    e = nd.Pooling(nd.zeros((0, 5, 5, 3)), kernel=(2, 2), layout='NHWC')
    assert e.shape == (0, 4, 4, 3)
    one = nd.Pooling(nd.array([[[7.0]]]), kernel=(1,), layout='NWC')
    assert one.asnumpy().tolist() == [[[7.0]]]


def test_pooling_channel_last_symbol_shapes():
    s = mx.sym.Pooling(mx.sym.var('data'), kernel=(3, 3), layout='NHWC')
    _, out, _ = s.infer_shape(data=(2, 7, 6, 3))
    assert out == [(2, 5, 4, 3)]


@pytest.mark.parametrize('layout,shape,kernel', CASES)
@pytest.mark.parametrize('pool_type', ['max', 'avg', 'lp'])
def test_pooling_channel_last_grad(layout, shape, kernel, pool_type):
    x = np.random.default_rng(3).standard_normal(shape)
    attrs = {'kernel': kernel, 'pool_type': pool_type, 'layout': layout,
             'stride': (1,) * len(kernel), 'pad': (1,) * len(kernel)}
    if pool_type == 'lp':
        attrs['p_value'] = 2
    check_grad('Pooling', [x], attrs=attrs, rtol=1e-4, atol=1e-6)


def test_pooling_layout_errors():
    with pytest.raises(mx.MXNetError, match='layout NHWC needs 4-D data'):
        nd.Pooling(nd.zeros((1, 4, 2)), kernel=(2,), layout='NHWC')
    with pytest.raises(mx.MXNetError, match='layout NWC needs 3-D data'):
        nd.Pooling(nd.zeros((1, 4, 4, 2)), kernel=(2, 2), layout='NWC')
    with pytest.raises(mx.MXNetError, match='layout'):
        nd.Pooling(nd.zeros((1, 4, 4, 2)), kernel=(2, 2), layout='NHCW')


@pytest.mark.parametrize('layout,dshape,kernel,wshape,oshape', [
    ('NHWC', (2, 7, 8, 2), (3, 5), (4, 3, 5, 2), (2, 5, 4, 4)),
    ('NDHWC', (2, 5, 7, 8, 2), (1, 3, 5), (4, 1, 3, 5, 2), (2, 5, 5, 4, 4))])
def test_convolution_channel_last_shapes_then_refusal(layout, dshape, kernel, wshape, oshape):
    s = mx.sym.Convolution(mx.sym.var('data'), kernel=kernel, num_filter=4, layout=layout,
                           name='c')
    args, out, _ = s.infer_shape(data=dshape)
    assert args == [dshape, wshape, (4,)] and out == [oshape]
    with pytest.raises(mx.MXNetError, match='layout=%s is not supported' % layout):
        nd.Convolution(nd.ones(dshape), nd.ones(wshape), nd.ones((4,)), kernel=kernel,
                       num_filter=4, layout=layout).wait_to_read()


def test_convolution_channel_last_grouped_weight():
    s = mx.sym.Convolution(mx.sym.var('data'), kernel=(3, 3), num_filter=6, num_group=2,
                           layout='NHWC', name='c')
    args, out, _ = s.infer_shape(data=(1, 9, 9, 4))
    assert args[1] == (6, 3, 3, 2) and out == [(1, 7, 7, 6)]


@pytest.mark.parametrize('layout,dshape,kernel,wshape,oshape', [
    ('NHWC', (2, 7, 8, 2), (3, 5), (2, 3, 5, 4), (2, 9, 12, 4)),
    ('NDHWC', (2, 5, 7, 8, 2), (1, 3, 5), (2, 1, 3, 5, 4), (2, 5, 9, 12, 4))])
def test_deconvolution_channel_last_shapes_then_refusal(layout, dshape, kernel, wshape, oshape):
    s = mx.sym.Deconvolution(mx.sym.var('data'), kernel=kernel, num_filter=4, layout=layout,
                             name='d')
    args, out, _ = s.infer_shape(data=dshape)
    assert args == [dshape, wshape] and out == [oshape]
    with pytest.raises(mx.MXNetError, match='layout=%s is not supported' % layout):
        nd.Deconvolution(nd.ones(dshape), nd.ones(wshape), kernel=kernel, num_filter=4,
                         layout=layout).wait_to_read()


def test_conv_layout_nwc_is_not_a_choice():
    for op in (nd.Convolution, nd.Deconvolution):
        with pytest.raises(mx.MXNetError, match='NWC'):
            op(nd.ones((1, 5, 2)), nd.ones((2, 2, 3)), kernel=(3,), num_filter=2, no_bias=True,
               layout='NWC')
    with pytest.raises(mx.MXNetError, match='does not match'):
        nd.Convolution(nd.ones((1, 5, 5, 2)), nd.ones((2, 3, 3, 2)), kernel=(3, 3),
                       num_filter=2, no_bias=True, layout='NDHWC')


def test_gluon_channel_last_layers():
    from hybridgluon.gluon import nn
    conv = nn.Conv2D(16, (3, 3), layout='NHWC', in_channels=4)
    conv.initialize()
    assert conv.weight.shape == (16, 3, 3, 4)
    pool = nn.MaxPool2D(3, ceil_mode=True, layout='NHWC')
    assert pool(nd.zeros((2, 10, 10, 2))).shape == (2, 4, 4, 2)
    gap = nn.GlobalAvgPool3D(layout='NDHWC')
    x = np.random.default_rng(4).standard_normal((1, 3, 4, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(gap(nd.array(x)).asnumpy(),
                               x.mean(axis=(1, 2, 3), keepdims=True), rtol=1e-5)
