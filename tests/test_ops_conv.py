"""Convolution (1-D, 2-D, 3-D, grouped) against a direct-loop NumPy reference."""
import itertools

import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['Convolution']

TOL = {'float32': dict(rtol=1e-4, atol=1e-4), 'float64': dict(rtol=1e-10, atol=1e-10)}


def conv_ref(x, w, b, stride, pad, dilate, groups):
    """Convolution in float64 by definition: out[n, f, o] = sum_{c, k} xpad[n, c, o*s + k*d] *
    w[f, c, k] (+ b[f]), channels split into groups."""
    x = x.astype('f8')
    w = w.astype('f8')
    nsp = x.ndim - 2
    N, C = x.shape[:2]
    F = w.shape[0]
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    osz = [(x.shape[2 + i] + 2 * pad[i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1
           for i in range(nsp)]
    out = np.zeros((N, F) + tuple(osz))
    Cg, Fg = C // groups, F // groups
    # One term per kernel offset: a strided window of the padded input times that weight tap.
    for g in range(groups):
        xs = xp[:, g * Cg:(g + 1) * Cg]
        wg = w[g * Fg:(g + 1) * Fg]
        for kk in itertools.product(*[range(s) for s in k]):
            win = tuple(slice(kk[i] * dilate[i], kk[i] * dilate[i] + (osz[i] - 1) * stride[i] + 1,
                              stride[i]) for i in range(nsp))
            patch = xs[(slice(None), slice(None)) + win]
            tap = wg[(slice(None), slice(None)) + kk]
            out[:, g * Fg:(g + 1) * Fg] += np.einsum('nc...,fc->nf...', patch, tap)
    if b is not None:
        out += b.astype('f8').reshape((1, F) + (1,) * nsp)
    return out


CASES = [
    # (data shape, num_filter, kernel, stride, pad, dilate, groups, no_bias)
    ((3, 2, 9), 4, (3,), (1,), (0,), (1,), 1, False),
    ((1, 4, 10), 6, (2,), (3,), (2,), (2,), 2, True),
    ((3, 3, 7, 6), 5, (3, 3), (1, 1), (1, 1), (1, 1), 1, False),
    ((3, 4, 9, 8), 6, (3, 2), (2, 1), (1, 0), (1, 2), 2, False),
    ((1, 3, 5, 5), 2, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),    # 1x1: no im2col
    ((3, 3, 6, 7), 4, (1, 1), (2, 2), (0, 0), (1, 1), 1, True),     # 1x1 strided
    ((3, 4, 7, 7), 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, False),    # depthwise
    ((3, 4, 7, 7), 8, (3, 3), (2, 2), (2, 2), (2, 2), 4, True),     # depthwise, multiplier 2
    ((1, 2, 5, 4, 6), 3, (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1, False),
    ((3, 4, 4, 5, 5), 2, (3, 1, 2), (2, 1, 1), (1, 1, 0), (1, 1, 1), 2, True),
    ((2, 1, 1, 1), 3, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),    # 1-element images
    ((2, 3, 3, 3), 2, (3, 3), (1, 1), (0, 0), (1, 1), 1, False),    # 1x1 output
    ((2, 2, 5, 4), 3, (2, 2), (3, 2), (3, 2), (1, 1), 1, False),    # pad > kernel, stride > k
    ((3, 1, 4), 2, (3,), (3,), (5,), (2,), 1, False),                # mostly padding
    ((4, 16, 20, 20), 16, (3, 3), (1, 1), (1, 1), (1, 1), 1, False),  # image-parallel path
    ((2, 8, 40, 40), 32, (5, 5), (1, 1), (2, 2), (1, 1), 1, False),   # large: serial path
]


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_convolution_forward(case, dtype, rng):
    shape, F, k, s, p, d, g, no_bias = case
    C = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((F, C // g) + k).astype(dtype)
    b = None if no_bias else rng.standard_normal(F).astype(dtype)
    args = [mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype=dtype)]
    if b is not None:
        args.append(mx.nd.array(b, dtype=dtype))
    out = mx.nd.Convolution(*args, kernel=k, stride=s, pad=p, dilate=d, num_filter=F,
                            num_group=g, no_bias=no_bias)
    want = conv_ref(x, w, b, s, p, d, g)
    assert out.dtype == np.dtype(dtype)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.asnumpy().astype('f8'), want, **TOL[dtype])


@pytest.mark.parametrize('case', [CASES[0], CASES[3], CASES[4], CASES[7], CASES[9]])
def test_convolution_float16(case, rng):
    """float16 runs in float32 through the workspace; compared with the reference on the
    float16-rounded inputs."""
    shape, F, k, s, p, d, g, no_bias = case
    x = rng.standard_normal(shape).astype('f2')
    w = (rng.standard_normal((F, shape[1] // g) + k) * 0.3).astype('f2')
    b = None if no_bias else rng.standard_normal(F).astype('f2')
    args = [mx.nd.array(x, dtype='float16'), mx.nd.array(w, dtype='float16')]
    if b is not None:
        args.append(mx.nd.array(b, dtype='float16'))
    out = mx.nd.Convolution(*args, kernel=k, stride=s, pad=p, dilate=d, num_filter=F,
                            num_group=g, no_bias=no_bias)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.asnumpy().astype('f8'), conv_ref(x, w, b, s, p, d, g),
                               rtol=1e-2, atol=1e-2)


def test_convolution_defaults_and_layout(rng):
    x = rng.standard_normal((2, 3, 6, 5)).astype('f4')
    w = rng.standard_normal((4, 3, 2, 2)).astype('f4')
    b = rng.standard_normal(4).astype('f4')
    want = conv_ref(x, w, b, (1, 1), (0, 0), (1, 1), 1)
    for kw in [{}, {'layout': 'NCHW'}, {'cudnn_tune': 'fastest', 'cudnn_off': True,
                                         'workspace': 512}]:
        out = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), kernel=(2, 2),
                                num_filter=4, **kw)
        np.testing.assert_allclose(out.asnumpy(), want, **TOL['float32'])
    # Keyword inputs, positional attributes after the inputs (schema order: kernel first).
    out = mx.nd.Convolution(data=mx.nd.array(x), weight=mx.nd.array(w), bias=mx.nd.array(b),
                            kernel=(2, 2), num_filter=4)
    np.testing.assert_allclose(out.asnumpy(), want, **TOL['float32'])


def test_convolution_zero_batch():
    x = mx.nd.zeros((0, 3, 5, 5))
    w = mx.nd.ones((2, 3, 3, 3))
    out = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True)
    assert out.shape == (0, 2, 3, 3)


def test_convolution_infer_fills_weight_and_bias():
    data = mx.sym.var('data')
    s = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, num_group=2, stride=(2, 2),
                           pad=(1, 1), name='c')
    assert s.list_arguments() == ['data', 'c_weight', 'c_bias']
    args, outs, _ = s.infer_shape(data=(2, 4, 10, 9))
    assert args == [(2, 4, 10, 9), (8, 2, 3, 3), (8,)]
    assert outs == [(2, 8, 5, 5)]
    s = mx.sym.Convolution(data, kernel=(3,), num_filter=5, no_bias=True, name='c1')
    assert s.list_arguments() == ['data', 'c1_weight']
    args, outs, _ = s.infer_shape(data=(1, 3, 8))
    assert args == [(1, 3, 8), (5, 3, 3)] and outs == [(1, 5, 6)]
    s = mx.sym.Convolution(data, kernel=(1, 2, 3), num_filter=2, dilate=(1, 2, 1), name='c3')
    args, outs, _ = s.infer_shape(data=(2, 3, 4, 5, 6))
    assert args[1] == (2, 3, 1, 2, 3) and outs == [(2, 2, 4, 3, 4)]


def test_convolution_infer_via_op():
    op = mx._core.get_op('Convolution')
    x = mx.nd.zeros((2, 3, 7, 7))
    w = mx.nd.zeros((4, 3, 3, 3))
    b = mx.nd.zeros((4,))
    assert op._infer(x, w, b, kernel=(3, 3), num_filter=4, stride=(2, 2))[0][0] == (2, 4, 3, 3)


def _conv(xs, ws, bs=None, **kw):
    args = [mx.nd.zeros(xs), mx.nd.zeros(ws)]
    if bs is not None:
        args.append(mx.nd.zeros(bs))
    else:
        kw['no_bias'] = True
    return mx.nd.Convolution(*args, **kw)


def test_convolution_errors():
    with pytest.raises(mx.MXNetError, match='kernel'):  # kernel length != spatial dims
        _conv((1, 3, 5, 5), (2, 3, 3), kernel=(3,), num_filter=2)
    with pytest.raises(mx.MXNetError, match='kernel'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3, 3), kernel=(3, 3, 3), num_filter=2)
    with pytest.raises(mx.MXNetError, match='num_group'):  # channels not divisible by groups
        _conv((1, 3, 5, 5), (2, 1, 3, 3), kernel=(3, 3), num_filter=2, num_group=2)
    with pytest.raises(mx.MXNetError, match='num_filter=3 must be divisible by num_group=2'):
        _conv((1, 4, 5, 5), (3, 2, 3, 3), kernel=(3, 3), num_filter=3, num_group=2)
    with pytest.raises(mx.MXNetError, match='output size'):  # output size 0
        _conv((1, 3, 2, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2)
    with pytest.raises(mx.MXNetError, match='output size'):  # dilation makes it too big
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, dilate=(3, 1))
    with pytest.raises(mx.MXNetError, match=r'weight shape \[2,3,2,2\].*\[2,3,3,3\]'):
        _conv((1, 3, 5, 5), (2, 3, 2, 2), kernel=(3, 3), num_filter=2)
    with pytest.raises(mx.MXNetError, match=r'bias shape \[3\]'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), (3,), kernel=(3, 3), num_filter=2)
    with pytest.raises(mx.MXNetError, match='stride'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, stride=(1,))
    with pytest.raises(mx.MXNetError, match='stride'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, stride=(0, 1))
    with pytest.raises(mx.MXNetError, match='pad'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, pad=(-1, 0))
    with pytest.raises(mx.MXNetError, match='num_filter'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=0)
    with pytest.raises(mx.MXNetError, match='layout=NHWC'):
        _conv((1, 5, 5, 3), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, layout='NHWC')
    with pytest.raises(mx.MXNetError, match='layout=NCW'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, layout='NCW')
    with pytest.raises(mx.MXNetError, match='kernel'):  # 4 spatial dims
        _conv((1, 1, 3, 3, 3, 3), (1, 1, 1, 1, 1, 1), kernel=(1, 1, 1, 1), num_filter=1)
    with pytest.raises(mx.MXNetError, match='int32 is not supported'):
        mx.nd.Convolution(mx.nd.zeros((1, 1, 3, 3), dtype='int32'),
                          mx.nd.zeros((1, 1, 1, 1), dtype='int32'), kernel=(1, 1),
                          num_filter=1, no_bias=True)
    with pytest.raises(mx.MXNetError, match='same dtype'):
        mx.nd.Convolution(mx.nd.zeros((1, 1, 3, 3)), mx.nd.zeros((1, 1, 1, 1), dtype='float64'),
                          kernel=(1, 1), num_filter=1, no_bias=True)
    with pytest.raises(mx.MXNetError, match='bogus'):
        _conv((1, 3, 5, 5), (2, 3, 3, 3), kernel=(3, 3), num_filter=2, bogus=1)
    with pytest.raises(mx.MXNetError, match='kernel'):  # required attribute missing
        mx.nd.Convolution(mx.nd.zeros((1, 3, 5, 5)), mx.nd.zeros((2, 3, 3, 3)), num_filter=2,
                          no_bias=True)
