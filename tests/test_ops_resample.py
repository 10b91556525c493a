import itertools

import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['Pad', 'UpSampling', 'Deconvolution']

TOL = {'float16': dict(rtol=1e-2, atol=1e-2), 'float32': dict(rtol=1e-4, atol=1e-4),
       'float64': dict(rtol=1e-10, atol=1e-10)}


def rand(shape, dtype, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(dtype)


# ---- Pad ---------------------------------------------------------------------------------------

def pad_ref(x, mode, pad_width, value):
    """Pad by definition: each output index maps to a source index (or the constant)."""
    nd = x.ndim
    oshape = [x.shape[i] + pad_width[2 * i] + pad_width[2 * i + 1] for i in range(nd)]
    out = np.empty(oshape, dtype='f8')
    for o in itertools.product(*[range(s) for s in oshape]):
        src = []
        for i in range(nd):
            j, n = o[i] - pad_width[2 * i], x.shape[i]
            if not 0 <= j < n:
                if mode == 'constant':
                    src = None
                    break
                if mode == 'edge':
                    j = 0 if j < 0 else n - 1
                else:
                    j = -j if j < 0 else 2 * (n - 1) - j
            src.append(j)
        out[o] = value if src is None else x[tuple(src)]
    return out


PAD_CASES = [
    ((2, 3, 4, 5), (0, 0, 0, 0, 1, 2, 2, 1)),
    ((1, 2, 3, 3), (0, 0, 0, 0, 2, 2, 2, 2)),
    ((2, 1, 4, 4), (0, 0, 0, 0, 0, 3, 1, 0)),
    ((1, 1, 1, 1), (0, 0, 0, 0, 0, 0, 0, 0)),
    ((1, 2, 3, 2, 4), (0, 0, 0, 0, 1, 1, 0, 1, 2, 3)),
]


@pytest.mark.parametrize('mode', ['constant', 'edge', 'reflect'])
@pytest.mark.parametrize('shape,pw', PAD_CASES)
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_pad(mode, shape, pw, dtype):
    if mode == 'reflect' and any(pw[2 * i] >= shape[i] or pw[2 * i + 1] >= shape[i]
                                 for i in range(len(shape)) if pw[2 * i] or pw[2 * i + 1]):
        pytest.skip('reflect needs pad < size')
    x = rand(shape, dtype)
    y = mx.nd.Pad(mx.nd.array(x, dtype=dtype), mode=mode, pad_width=pw, constant_value=1.5)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), pad_ref(x.astype('f8'), mode, pw, 1.5),
                               **TOL[dtype])


def test_pad_alias_default_value_and_zero_size():
    x = rand((0, 2, 3, 3), 'float32')
    y = mx.nd.pad(mx.nd.array(x), mode='constant', pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    assert y.shape == (0, 2, 5, 5)
    x = rand((2, 2, 3, 3), 'float32')
    y = mx.nd.pad(mx.nd.array(x), mode='constant', pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    np.testing.assert_array_equal(y.asnumpy(), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]))


def test_pad_errors():
    x = mx.nd.ones((1, 2, 3, 3))
    with pytest.raises(mx.MXNetError, match='pad_width'):
        mx.nd.Pad(x, mode='constant', pad_width=(0, 0, 1, 1))
    with pytest.raises(mx.MXNetError, match='first two axes'):
        mx.nd.Pad(x, mode='constant', pad_width=(0, 0, 1, 1, 1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match='reflect'):
        mx.nd.Pad(x, mode='reflect', pad_width=(0, 0, 0, 0, 3, 0, 0, 0))
    with pytest.raises(mx.MXNetError, match='4-D or 5-D'):
        mx.nd.Pad(mx.nd.ones((2, 3)), mode='edge', pad_width=(1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match='mode'):
        mx.nd.Pad(x, pad_width=(0, 0, 0, 0, 1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match='foo'):
        mx.nd.Pad(x, mode='edge', pad_width=(0, 0, 0, 0, 1, 1, 1, 1), foo=1)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.Pad(mx.nd.ones((1, 1, 2, 2), dtype='int32'), mode='edge',
                  pad_width=(0, 0, 0, 0, 1, 1, 1, 1))


# ---- UpSampling --------------------------------------------------------------------------------

def up_ref(xs, scale, mode):
    oh = xs[0].shape[2] * scale
    ups = []
    for x in xs:
        s = oh // x.shape[2]
        ups.append(x.astype('f8').repeat(s, axis=2).repeat(s, axis=3))
    return sum(ups) if mode == 'sum' else np.concatenate(ups, axis=1)


@pytest.mark.parametrize('scale', [1, 2, 3])
@pytest.mark.parametrize('shape', [(2, 3, 4, 5), (1, 1, 1, 1), (0, 2, 3, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_upsampling_single(scale, shape, dtype):
    x = rand(shape, dtype)
    y = mx.nd.UpSampling(mx.nd.array(x, dtype=dtype), scale=scale, sample_type='nearest',
                         num_args=1)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), up_ref([x], scale, 'concat'),
                               **TOL[dtype])


@pytest.mark.parametrize('scale', [2, 3])
@pytest.mark.parametrize('mode', ['concat', 'sum'])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_upsampling_two_inputs(scale, mode, dtype):
    a = rand((2, 3, 4, 6), dtype, 1)
    b = rand((2, 3 if mode == 'sum' else 2, 2, 3), dtype, 2)  # scaled by 2*scale
    y = mx.nd.UpSampling(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype), scale=scale,
                         sample_type='nearest', num_args=2, multi_input_mode=mode)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), up_ref([a, b], scale, mode),
                               **TOL[dtype])


def test_upsampling_errors():
    a = mx.nd.ones((1, 2, 4, 4))
    with pytest.raises(mx.MXNetError, match='bilinear.*takes 2 inputs'):
        mx.nd.UpSampling(a, scale=2, sample_type='bilinear', num_args=1)
    with pytest.raises(mx.MXNetError, match='num_filter equal to the channels'):
        mx.nd.UpSampling(a, mx.nd.ones((2, 1, 4, 4)), scale=2, sample_type='bilinear',
                         num_filter=3, num_args=2)
    with pytest.raises(mx.MXNetError, match='weight'):
        mx.nd.UpSampling(a, mx.nd.ones((2, 1, 3, 3)), scale=2, sample_type='bilinear',
                         num_filter=2, num_args=2)
    with pytest.raises(mx.MXNetError, match='float32 and float64'):
        mx.nd.UpSampling(a.astype('float16'), mx.nd.ones((2, 1, 4, 4), dtype='float16'),
                         scale=2, sample_type='bilinear', num_filter=2, num_args=2)
    with pytest.raises(mx.MXNetError, match='divide'):
        mx.nd.UpSampling(a, mx.nd.ones((1, 2, 3, 3)), scale=2, sample_type='nearest',
                         num_args=2)
    with pytest.raises(mx.MXNetError, match='channels'):
        mx.nd.UpSampling(a, mx.nd.ones((1, 3, 2, 2)), scale=2, sample_type='nearest',
                         num_args=2, multi_input_mode='sum')
    with pytest.raises(mx.MXNetError, match='4-D'):
        mx.nd.UpSampling(mx.nd.ones((2, 3, 4)), scale=2, sample_type='nearest', num_args=1)
    with pytest.raises(mx.MXNetError, match='scale'):
        mx.nd.UpSampling(a, scale=0, sample_type='nearest', num_args=1)


# ---- Deconvolution -----------------------------------------------------------------------------

def deconv_out_geom(xs, k, s, d, p, adj, target):
    pads, adjs, outs = [], [], []
    for i in range(len(k)):
        full = s[i] * (xs[i] - 1) + d[i] * (k[i] - 1) + 1
        if target and any(target):
            tot = full - target[i]
            pi, ai = (tot + 1) // 2, tot % 2
        else:
            pi, ai = p[i], adj[i]
        pads.append(pi)
        adjs.append(ai)
        outs.append(full - 2 * pi + ai)
    return pads, outs


def deconv_ref(x, w, b, k, s, d, p, adj, groups, target=None):
    """Transposed convolution by definition: each input element scatters x * w[c, f, kk] to
    output position i*s + kk*d - p."""
    x, w = x.astype('f8'), w.astype('f8')
    nsp = len(k)
    N, C = x.shape[:2]
    Fg = w.shape[1]
    F = Fg * groups
    Cg = C // groups
    pads, outs = deconv_out_geom(x.shape[2:], k, s, d, p, adj, target)
    full = [s[i] * (x.shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1 + max(0, outs[i] + pads[i]
            - (s[i] * (x.shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1)) for i in range(nsp)]
    buf = np.zeros((N, F) + tuple(full))
    for g in range(groups):
        xg = x[:, g * Cg:(g + 1) * Cg]
        wg = w[g * Cg:(g + 1) * Cg]
        for kk in itertools.product(*[range(v) for v in k]):
            win = tuple(slice(kk[i] * d[i], kk[i] * d[i] + s[i] * (x.shape[2 + i] - 1) + 1, s[i])
                        for i in range(nsp))
            buf[(slice(None), slice(g * Fg, (g + 1) * Fg)) + win] += np.einsum(
                'nc...,cf->nf...', xg, wg[(slice(None), slice(None)) + kk])
    out = buf[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + outs[i])
                                                 for i in range(nsp))]
    if b is not None:
        out = out + b.astype('f8').reshape((1, F) + (1,) * nsp)
    return out


DECONV_CASES = [
    # (data shape, num_filter, kernel, stride, pad, dilate, adj, groups, no_bias)
    ((2, 3, 5), 4, (3,), (1,), (0,), (1,), (0,), 1, True),
    ((2, 4, 6), 6, (4,), (2,), (1,), (1,), (1,), 2, False),
    ((1, 2, 4), 3, (2,), (3,), (0,), (2,), (2,), 1, False),
    ((2, 3, 4, 5), 2, (3, 3), (1, 1), (1, 1), (1, 1), (0, 0), 1, False),
    ((2, 4, 3, 4), 6, (3, 2), (2, 3), (1, 0), (1, 1), (1, 2), 2, True),
    ((1, 2, 3, 3), 4, (2, 2), (2, 2), (0, 0), (2, 1), (0, 1), 1, False),
    ((2, 4, 5, 5), 4, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 4, False),   # depthwise
    ((3, 2, 1, 1), 3, (1, 1), (1, 1), (0, 0), (1, 1), (0, 0), 1, False),   # 1-element images
    ((1, 2, 2, 3, 3), 2, (2, 2, 2), (2, 1, 2), (0, 1, 1), (1, 1, 1), (1, 0, 0), 1, False),
    ((4, 16, 12, 12), 8, (4, 4), (2, 2), (1, 1), (1, 1), (0, 0), 1, False),  # image-parallel
    ((2, 32, 20, 20), 32, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1, True),  # large: serial
]


def run_deconv(x, w, b, k, s, p, d, adj, groups, F, dtype, **kw):
    args = [mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype=dtype)]
    if b is not None:
        args.append(mx.nd.array(b, dtype=dtype))
    return mx.nd.Deconvolution(*args, kernel=k, stride=s, pad=p, dilate=d, adj=adj,
                               num_filter=F, num_group=groups, no_bias=b is None, **kw)


@pytest.mark.parametrize('case', DECONV_CASES)
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_deconvolution(case, dtype):
    shape, F, k, s, p, d, adj, groups, no_bias = case
    x = rand(shape, dtype, 1)
    w = rand((shape[1], F // groups) + k, dtype, 2)
    b = None if no_bias else rand((F,), dtype, 3)
    y = run_deconv(x, w, b, k, s, p, d, adj, groups, F, dtype)
    assert y.dtype == np.dtype(dtype)
    ref = deconv_ref(x, w, b, k, s, d, p, adj, groups)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])


@pytest.mark.parametrize('case', DECONV_CASES[:9])
def test_deconvolution_is_convolution_adjoint(case):
    """<deconv(x, w), z> == <x, conv(z, w)>: the same weight read as a convolution from the
    deconvolution's output channels back to its input channels."""
    shape, F, k, s, p, d, adj, groups, _ = case
    x = rand(shape, 'float64', 4)
    w = rand((shape[1], F // groups) + k, 'float64', 5)
    y = run_deconv(x, w, None, k, s, p, d, adj, groups, F, 'float64').asnumpy()
    z = rand(y.shape, 'float64', 6)
    cz = mx.nd.Convolution(mx.nd.array(z, dtype='float64'), mx.nd.array(w, dtype='float64'),
                           kernel=k, stride=s, pad=p, dilate=d, num_filter=shape[1],
                           num_group=groups, no_bias=True).asnumpy()
    assert cz.shape == x.shape
    np.testing.assert_allclose(np.sum(y * z), np.sum(x * cz), rtol=1e-10)


def test_deconvolution_target_shape():
    x = rand((2, 3, 4, 5), 'float64')
    w = rand((3, 2, 3, 3), 'float64', 1)
    y = mx.nd.Deconvolution(mx.nd.array(x, dtype='float64'), mx.nd.array(w, dtype='float64'),
                            kernel=(3, 3), stride=(2, 2), pad=(5, 5), target_shape=(8, 10),
                            num_filter=2)
    assert y.shape == (2, 2, 8, 10)
    ref = deconv_ref(x, w, None, (3, 3), (2, 2), (1, 1), (0, 0), (0, 0), 1, target=(8, 10))
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-10, atol=1e-10)


def test_deconvolution_defaults_and_zero_size():
    # no_bias defaults to True: two inputs
    x = rand((0, 3, 4), 'float32')
    y = mx.nd.Deconvolution(mx.nd.array(x), mx.nd.ones((3, 2, 3)), kernel=(3,), num_filter=2)
    assert y.shape == (0, 2, 6)
    op = mx._core.get_op('Deconvolution')
    assert op is not None
    x = rand((1, 1, 1), 'float32')
    y = mx.nd.Deconvolution(mx.nd.array(x), mx.nd.array([[[2.0]]]), kernel=(1,), num_filter=1)
    np.testing.assert_allclose(y.asnumpy(), 2 * x, rtol=1e-6)


def test_deconvolution_errors():
    x = mx.nd.ones((1, 2, 4, 4))
    with pytest.raises(mx.MXNetError, match='weight shape'):
        mx.nd.Deconvolution(x, mx.nd.ones((3, 2, 3, 3)), kernel=(3, 3), num_filter=2)
    with pytest.raises(mx.MXNetError, match='bias shape'):
        mx.nd.Deconvolution(x, mx.nd.ones((2, 2, 3, 3)), mx.nd.ones((3,)), kernel=(3, 3),
                            num_filter=2, no_bias=False)
    with pytest.raises(mx.MXNetError, match='expects 2 input'):
        mx.nd.Deconvolution(x, mx.nd.ones((2, 2, 3, 3)), mx.nd.ones((2,)), kernel=(3, 3),
                            num_filter=2)
    with pytest.raises(mx.MXNetError, match='adj'):
        mx.nd.Deconvolution(x, mx.nd.ones((2, 2, 3, 3)), kernel=(3, 3), num_filter=2,
                            stride=(2, 2), adj=(2, 0))
    with pytest.raises(mx.MXNetError, match='data shape'):
        mx.nd.Deconvolution(mx.nd.ones((1, 2, 4)), mx.nd.ones((2, 2, 3, 3)), kernel=(3, 3),
                            num_filter=2)
    with pytest.raises(mx.MXNetError, match='num_group'):
        mx.nd.Deconvolution(mx.nd.ones((1, 3, 4, 4)), mx.nd.ones((3, 1, 3, 3)), kernel=(3, 3),
                            num_filter=2, num_group=2)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.Deconvolution(mx.nd.ones((1, 2, 4), dtype='float16'),
                            mx.nd.ones((2, 2, 3), dtype='float16'), kernel=(3,), num_filter=2)
    with pytest.raises(mx.MXNetError, match='too large'):
        mx.nd.Deconvolution(mx.nd.ones((1, 2, 2)), mx.nd.ones((2, 2, 2)), kernel=(2,),
                            pad=(2,), num_filter=2)
    with pytest.raises(mx.MXNetError, match='stride'):
        mx.nd.Deconvolution(x, mx.nd.ones((2, 2, 3, 3)), kernel=(3, 3), num_filter=2,
                            stride=(2,))


def test_deconvolution_infer_fills_weight_and_bias():
    data = mx.sym.Variable('data')
    y = mx.sym.Deconvolution(data, kernel=(3, 3), stride=(2, 2), num_filter=4, num_group=2,
                             no_bias=False, name='dc')
    arg_shapes, out_shapes, _ = y.infer_shape(data=(2, 6, 5, 5))
    args = dict(zip(y.list_arguments(), arg_shapes))
    assert args['dc_weight'] == (6, 2, 3, 3)
    assert args['dc_bias'] == (4,)
    assert out_shapes[0] == (2, 4, 11, 11)


def np_bilinear_up(x, w, s):
    """UpSampling bilinear as MXNet runs it: per-channel transposed convolution with kernel
    2s - s%2, stride s, pad ceil((s-1)/2); loops in float64."""
    N, C, H, W = x.shape
    k, p = 2 * s - s % 2, -(-(s - 1) // 2)
    full = np.zeros((N, C, (H - 1) * s + k, (W - 1) * s + k))
    for i in range(H):
        for j in range(W):
            full[:, :, i * s:i * s + k, j * s:j * s + k] += (
                x[:, :, i, j][:, :, None, None] * w[None, :, 0])
    return full[:, :, p:p + H * s, p:p + W * s]


@pytest.mark.parametrize('scale', [1, 2, 3, 4])
@pytest.mark.parametrize('shape', [(1, 1, 1, 1), (2, 3, 2, 3), (1, 2, 4, 1), (0, 2, 2, 2)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_upsampling_bilinear(scale, shape, dtype):
    rng = np.random.default_rng(scale)
    k = 2 * scale - scale % 2
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((shape[1], 1, k, k)).astype(dtype)
    y = mx.nd.UpSampling(mx.nd.array(x, dtype=dtype), mx.nd.array(w, dtype=dtype),
                         sample_type='bilinear', scale=scale, num_filter=shape[1], num_args=2)
    assert y.shape == shape[:2] + (shape[2] * scale, shape[3] * scale)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_bilinear_up(x.astype(np.float64),
                                                           w.astype(np.float64), scale),
                               **TOL[dtype])


def test_upsampling_bilinear_infers_weight():
    s = mx.sym.UpSampling(mx.sym.var('data'), mx.sym.var('weight'), sample_type='bilinear',
                          scale=3, num_filter=2, num_args=2)
    assert s.list_arguments() == ['data', 'weight']
    args, out, _ = s.infer_shape(data=(1, 2, 4, 4))
    assert args == [(1, 2, 4, 4), (2, 1, 5, 5)] and out == [(1, 2, 12, 12)]
