"""Spatial sampling ops (im2col, col2im, GridGenerator, BilinearSampler, SpatialTransformer,
ROIPooling, Correlation) and their _backward_ kernels against NumPy references written as plain
loops from the ops' definitions (MXNet 1.9.1's CPU kernels); the real-MXNet comparison is in
the fixtures (tests/mxnet_ref/op_cases_vision.py)."""
import itertools
import math

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['im2col', 'col2im', '_backward_im2col', 'GridGenerator',
               '_backward_GridGenerator', 'BilinearSampler', '_backward_BilinearSampler',
               'SpatialTransformer', 'ROIPooling', '_backward_ROIPooling', 'Correlation',
               '_backward_Correlation']

TOL = {'float16': dict(rtol=1e-3, atol=1e-3), 'float32': dict(rtol=1e-5, atol=1e-5),
       'float64': dict(rtol=1e-12, atol=1e-12)}


def _arr(x, dtype=None):
    x = np.asarray(x)
    return nd.array(x, dtype=dtype or x.dtype)


# ---------------------------------------------------------------------------------------------
# im2col / col2im

def np_im2col(x, kernel, stride=None, dilate=None, pad=None):
    nsp = len(kernel)
    stride, dilate, pad = stride or (1,) * nsp, dilate or (1,) * nsp, pad or (0,) * nsp
    n, c = x.shape[:2]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [(xp.shape[2 + i] - dilate[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(nsp)]
    cols = np.zeros((n, c, int(np.prod(kernel)), int(np.prod(out))))
    for ki, koff in enumerate(itertools.product(*[range(k) for k in kernel])):
        for bi, opos in enumerate(itertools.product(*[range(o) for o in out])):
            idx = tuple(opos[i] * stride[i] + koff[i] * dilate[i] for i in range(nsp))
            cols[:, :, ki, bi] = xp[(slice(None), slice(None)) + idx]
    return cols.reshape(n, c * int(np.prod(kernel)), int(np.prod(out)))


def np_col2im(col, output_size, kernel, stride=None, dilate=None, pad=None):
    nsp = len(kernel)
    stride, dilate, pad = stride or (1,) * nsp, dilate or (1,) * nsp, pad or (0,) * nsp
    n = col.shape[0]
    K = int(np.prod(kernel))
    c = col.shape[1] // K
    padded = [output_size[i] + 2 * pad[i] for i in range(nsp)]
    out = [(padded[i] - dilate[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    img = np.zeros((n, c) + tuple(padded))
    cols = col.astype(np.float64).reshape(n, c, K, int(np.prod(out)))
    for ki, koff in enumerate(itertools.product(*[range(k) for k in kernel])):
        for bi, opos in enumerate(itertools.product(*[range(o) for o in out])):
            idx = tuple(opos[i] * stride[i] + koff[i] * dilate[i] for i in range(nsp))
            img[(slice(None), slice(None)) + idx] += cols[:, :, ki, bi]
    crop = tuple(slice(p, p + s) for p, s in zip(pad, output_size))
    return img[(slice(None), slice(None)) + crop]


IM2COL_CASES = [
    ((2, 3, 7, 6), dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))),
    ((1, 2, 5, 5), dict(kernel=(3, 3))),
    ((2, 1, 9), dict(kernel=(3,), stride=(2,), pad=(1,))),
    ((1, 2, 4, 5, 3), dict(kernel=(2, 2, 2), pad=(1, 0, 1), stride=(1, 2, 1))),
    ((1, 1, 1, 1), dict(kernel=(1, 1))),
    ((0, 2, 4, 4), dict(kernel=(2, 2))),
]


@pytest.mark.parametrize('shape,kw', IM2COL_CASES)
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_im2col(shape, kw, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    y = nd.im2col(_arr(x), **kw)
    ref = np_im2col(x, kw['kernel'], kw.get('stride'), kw.get('dilate'), kw.get('pad'))
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), ref, **TOL[dtype])


@pytest.mark.parametrize('shape,kw', IM2COL_CASES)
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
def test_col2im_and_backward_im2col(shape, kw, dtype):
    rng = np.random.default_rng(1)
    oshape = np_im2col(np.zeros(shape), kw['kernel'], kw.get('stride'), kw.get('dilate'),
                       kw.get('pad')).shape
    col = rng.standard_normal(oshape).astype(dtype)
    ref = np_col2im(col, shape[2:], kw['kernel'], kw.get('stride'), kw.get('dilate'),
                    kw.get('pad'))
    y = nd.col2im(_arr(col), output_size=shape[2:], **kw)
    assert y.shape == shape and y.dtype == np.dtype(dtype)
    tol = dict(rtol=5e-3, atol=5e-3) if dtype == 'float16' else TOL[dtype]
    np.testing.assert_allclose(y.asnumpy(), ref, **tol)
    g = nd._backward_im2col(_arr(col), nd.zeros(shape, dtype=dtype), **kw)
    np.testing.assert_allclose(g.asnumpy(), ref, **tol)


def test_im2col_col2im_are_adjoint():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 6, 5))
    kw = dict(kernel=(3, 2), stride=(2, 2), dilate=(1, 2), pad=(1, 2))
    col = nd.im2col(_arr(x), **kw).asnumpy()
    c = rng.standard_normal(col.shape)
    back = nd.col2im(_arr(c), output_size=(6, 5), **kw).asnumpy()
    assert np.isclose((col * c).sum(), (x * back).sum(), rtol=1e-12)


def test_im2col_col2im_errors():
    x = nd.zeros((1, 2, 4, 4))
    with pytest.raises(mx.MXNetError, match='kernel must have 1, 2 or 3 dims'):
        nd.im2col(nd.zeros((1, 1, 2, 2, 2, 2)), kernel=(1, 1, 1, 1))
    with pytest.raises(mx.MXNetError, match='expected 4 dims'):
        nd.im2col(nd.zeros((1, 2, 4)), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match='stride=.*as many dims'):
        nd.im2col(x, kernel=(2, 2), stride=(1,))
    with pytest.raises(mx.MXNetError, match='exceeds the padded image'):
        nd.im2col(x, kernel=(5, 2))
    with pytest.raises(mx.MXNetError, match='dilate=.*positive'):
        nd.im2col(x, kernel=(2, 2), dilate=(0, 1))
    with pytest.raises(mx.MXNetError, match='float16, float32 or float64'):
        nd.im2col(nd.zeros((1, 2, 4, 4), dtype='int32'), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match='blocks'):
        nd.col2im(nd.zeros((1, 8, 5)), output_size=(4, 4), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match='multiple of the kernel size'):
        nd.col2im(nd.zeros((1, 7, 9)), output_size=(4, 4), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match='output_size=.*as many dims'):
        nd.col2im(nd.zeros((1, 8, 9)), output_size=(4,), kernel=(2, 2))


# ---------------------------------------------------------------------------------------------
# GridGenerator / BilinearSampler / SpatialTransformer

def np_affine_grid(theta, H, W):
    xs = -1 + np.arange(W) * 2.0 / (W - 1)
    ys = -1 + np.arange(H) * 2.0 / (H - 1)
    gx, gy = np.meshgrid(xs, ys)
    base = np.stack([gx.ravel(), gy.ravel(), np.ones(H * W)])
    return (theta.astype(np.float64).reshape(-1, 2, 3) @ base).reshape(len(theta), 2, H, W)


def np_warp_grid(flow):
    n, _, H, W = flow.shape
    f = flow.astype(np.float64)
    out = np.empty_like(f)
    out[:, 0] = (f[:, 0] + np.arange(W)[None, None, :]) / ((W - 1) / 2.0) - 1
    out[:, 1] = (f[:, 1] + np.arange(H)[None, :, None]) / ((H - 1) / 2.0) - 1
    return out


def np_bilinear_sample(x, grid):
    x = x.astype(np.float64)
    n, c, H, W = x.shape
    oh, ow = grid.shape[2:]
    out = np.zeros((n, c, oh, ow))
    for b, i, j in itertools.product(range(n), range(oh), range(ow)):
        xr = (grid[b, 0, i, j] + 1) * (W - 1) / 2
        yr = (grid[b, 1, i, j] + 1) * (H - 1) / 2
        x0, y0 = math.floor(xr), math.floor(yr)
        for dy_, dx_ in itertools.product((0, 1), (0, 1)):
            yy, xx = y0 + dy_, x0 + dx_
            if 0 <= yy < H and 0 <= xx < W:
                wgt = (1 - abs(yr - yy)) * (1 - abs(xr - xx))
                out[b, :, i, j] += wgt * x[b, :, yy, xx]
    return out


@pytest.mark.parametrize('n,H,W', [(2, 4, 5), (1, 2, 2), (0, 3, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_grid_generator_affine(n, H, W, dtype):
    th = np.random.default_rng(3).standard_normal((n, 6)).astype(dtype)
    y = nd.GridGenerator(_arr(th), transform_type='affine', target_shape=(H, W))
    assert y.shape == (n, 2, H, W) and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_affine_grid(th, H, W), rtol=1e-5, atol=1e-6)
    dy = np.random.default_rng(4).standard_normal((n, 2, H, W)).astype(dtype)
    g = nd._backward_GridGenerator(_arr(dy), _arr(th), transform_type='affine',
                                   target_shape=(H, W))
    xs = -1 + np.arange(W) * 2.0 / (W - 1)
    ys = -1 + np.arange(H) * 2.0 / (H - 1)
    gx, gy = np.meshgrid(xs, ys)
    base = np.stack([gx.ravel(), gy.ravel(), np.ones(H * W)])
    ref = (dy.astype(np.float64).reshape(n, 2, H * W) @ base.T).reshape(n, 6)
    np.testing.assert_allclose(g.asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('shape', [(2, 2, 4, 5), (1, 2, 3, 2)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_grid_generator_warp(shape, dtype):
    f = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    y = nd.GridGenerator(_arr(f), transform_type='warp')
    np.testing.assert_allclose(y.asnumpy(), np_warp_grid(f), rtol=1e-5, atol=1e-6)
    dy = np.random.default_rng(6).standard_normal(shape).astype(dtype)
    g = nd._backward_GridGenerator(_arr(dy), _arr(f), transform_type='warp').asnumpy()
    H, W = shape[2:]
    np.testing.assert_allclose(g[:, 0], dy[:, 0] / ((W - 1) / 2.0), rtol=1e-5)
    np.testing.assert_allclose(g[:, 1], dy[:, 1] / ((H - 1) / 2.0), rtol=1e-5)


def test_grid_generator_identity_and_shift():
    # the identity affine map reproduces the data; a warp by one pixel shifts it (MXNet's doc)
    data = np.array([[[[1, 4, 3, 6], [1, 8, 8, 9], [0, 4, 1, 5], [1, 0, 1, 3]]]], np.float32)
    grid = nd.GridGenerator(_arr(np.array([[1, 0, 0, 0, 1, 0]], np.float32)),
                            transform_type='affine', target_shape=(4, 4))
    np.testing.assert_allclose(nd.BilinearSampler(_arr(data), grid).asnumpy(), data, atol=1e-6)
    flow = np.zeros((1, 2, 4, 4), np.float32)
    flow[:, 0] = 1
    grid = nd.GridGenerator(_arr(flow), transform_type='warp')
    out = nd.BilinearSampler(_arr(data), grid).asnumpy()
    want = np.array([[4, 3, 6, 0], [8, 8, 9, 0], [4, 1, 5, 0], [0, 1, 3, 0]], np.float32)
    np.testing.assert_allclose(out[0, 0], want, atol=1e-5)


@pytest.mark.parametrize('dshape,gshape', [((2, 3, 5, 6), (2, 2, 4, 7)),
                                           ((1, 1, 1, 1), (1, 2, 1, 1)),
                                           ((0, 2, 3, 3), (0, 2, 2, 2)),
                                           ((1, 2, 3, 4), (1, 2, 3, 4))])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_bilinear_sampler(dshape, gshape, dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(dshape).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, gshape).astype(dtype)
    y = nd.BilinearSampler(_arr(x), _arr(grid))
    assert y.shape == dshape[:2] + gshape[2:] and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_bilinear_sample(x, grid.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


def test_backward_bilinear_sampler_data_grad_is_adjoint():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 4))
    grid = rng.uniform(-1.2, 1.2, (2, 2, 3, 3))
    dy = rng.standard_normal((2, 3, 3, 3))
    dx, dg = nd._backward_BilinearSampler(_arr(dy), _arr(x), _arr(grid))
    y = nd.BilinearSampler(_arr(x), _arr(grid)).asnumpy()
    assert np.isclose((y * dy).sum(), (x * dx.asnumpy()).sum(), rtol=1e-12)
    assert dg.shape == grid.shape


@pytest.mark.parametrize('dshape,target', [((2, 3, 5, 6), (4, 5)), ((1, 1, 2, 2), (2, 3)),
                                           ((0, 2, 3, 3), (2, 2))])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_spatial_transformer(dshape, target, dtype):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(dshape).astype(dtype)
    loc = (np.array([0.9, 0.1, 0.05, -0.1, 1.1, 0.02])
           + 0.1 * rng.standard_normal((dshape[0], 6))).astype(dtype)
    y = nd.SpatialTransformer(_arr(x), _arr(loc), target_shape=target, transform_type='affine',
                              sampler_type='bilinear')
    assert y.shape == dshape[:2] + target and y.dtype == np.dtype(dtype)
    ref = np_bilinear_sample(x, np_affine_grid(loc, *target))
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_sampler_errors():
    with pytest.raises(mx.MXNetError, match='target_shape must be two positive'):
        nd.GridGenerator(nd.zeros((1, 6)), transform_type='affine')
    with pytest.raises(mx.MXNetError, match=r'\(batch, 6\)'):
        nd.GridGenerator(nd.zeros((1, 5)), transform_type='affine', target_shape=(2, 2))
    with pytest.raises(mx.MXNetError, match='optical flow'):
        nd.GridGenerator(nd.zeros((1, 3, 2, 2)), transform_type='warp')
    with pytest.raises(mx.MXNetError, match='transform_type'):
        nd.GridGenerator(nd.zeros((1, 6)), transform_type='perspective', target_shape=(2, 2))
    with pytest.raises(mx.MXNetError, match=r'grid must be \(batch, 2, y, x\)'):
        nd.BilinearSampler(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 3, 2, 2)))
    with pytest.raises(mx.MXNetError, match='same dtype'):
        nd.BilinearSampler(nd.zeros((1, 1, 3, 3)), nd.zeros((1, 2, 2, 2), dtype='float64'))
    with pytest.raises(mx.MXNetError, match='float16, float32 or float64'):
        nd.BilinearSampler(nd.zeros((1, 1, 3, 3), dtype='int32'),
                           nd.zeros((1, 2, 2, 2), dtype='int32'))
    with pytest.raises(mx.MXNetError, match='loc must be'):
        nd.SpatialTransformer(nd.zeros((2, 1, 3, 3)), nd.zeros((1, 6)), target_shape=(2, 2),
                              transform_type='affine', sampler_type='bilinear')


# ---------------------------------------------------------------------------------------------
# ROIPooling

def np_roi_pool(x, rois, pooled, scale, dtype):
    n, c, H, W = x.shape
    PH, PW = pooled
    out = np.zeros((len(rois), c, PH, PW))
    T = np.dtype(dtype).type
    for r, b in enumerate(rois.astype(dtype)):
        bi = int(b[0])
        sw, sh, ew, eh = [int(np.round(T(v) * T(np.float32(scale)))) for v in b[1:]]
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        bh, bw = T(rh) / T(PH), T(rw) / T(PW)
        for ph, pw in itertools.product(range(PH), range(PW)):
            hs = min(max(int(math.floor(T(ph) * bh)) + sh, 0), H)
            he = min(max(int(math.ceil(T(ph + 1) * bh)) + sh, 0), H)
            ws = min(max(int(math.floor(T(pw) * bw)) + sw, 0), W)
            we = min(max(int(math.ceil(T(pw + 1) * bw)) + sw, 0), W)
            if bi < 0 or bi >= n or he <= hs or we <= ws:
                continue
            out[r, :, ph, pw] = x[bi, :, hs:he, ws:we].reshape(c, -1).max(axis=1)
    return out


ROIS = np.array([[0, 0, 0, 7, 7], [1, 2.3, 1.7, 15.2, 9.9], [0, 4, 4, 4, 4],
                 [1, -3, -2, 30, 40], [3, 1, 1, 5, 5], [0, 14, 14, 16, 16]])


@pytest.mark.parametrize('pooled,scale', [((3, 2), 0.5), ((2, 2), 1.0), ((1, 1), 0.25)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_roi_pooling(pooled, scale, dtype):
    x = np.random.default_rng(10).standard_normal((2, 3, 8, 9)).astype(dtype)
    y = nd.ROIPooling(_arr(x), _arr(ROIS.astype(dtype)), pooled_size=pooled,
                      spatial_scale=scale)
    assert y.shape == (len(ROIS), 3) + pooled and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), np_roi_pool(x, ROIS, pooled, scale, dtype),
                               rtol=1e-6)


def test_roi_pooling_backward_scatters_to_the_max():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 2, 6, 6))
    rois = np.array([[0, 0, 0, 5, 5], [1, 1, 1, 3, 4], [0, 2, 2, 3, 3], [5, 0, 0, 1, 1.0]])
    sym = mx.sym.ROIPooling(mx.sym.var('d'), mx.sym.var('r'), pooled_size=(2, 2),
                            spatial_scale=1.0)
    assert len(sym.list_outputs()) == 1
    dy = rng.standard_normal((4, 2, 2, 2))
    xa, ra = _arr(x), _arr(rois)
    xa.attach_grad()
    ra.attach_grad()
    with mx.autograd.record():
        out = nd.ROIPooling(xa, ra, pooled_size=(2, 2), spatial_scale=1.0)
    out.backward(_arr(dy))
    # each output's gradient lands on the element its max came from
    ref = np.zeros_like(x)
    o = out.asnumpy()
    for r, b in enumerate(rois):
        bi = int(b[0])
        for ch, ph, pw in itertools.product(range(2), range(2), range(2)):
            if bi >= 2:
                continue
            hit = np.argwhere(x[bi, ch] == o[r, ch, ph, pw])[0]
            ref[bi, ch, hit[0], hit[1]] += dy[r, ch, ph, pw]
    np.testing.assert_allclose(xa.grad.asnumpy(), ref, rtol=1e-12)
    assert not ra.grad.asnumpy().any()
    assert (o[3] == 0).all()  # batch index out of range: zeros


def test_roi_pooling_errors():
    x = nd.zeros((1, 1, 4, 4))
    with pytest.raises(mx.MXNetError, match='pooled_size must be two positive'):
        nd.ROIPooling(x, nd.zeros((1, 5)), pooled_size=(2,), spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match=r'spatial_scale must be in \[0, 1\]'):
        nd.ROIPooling(x, nd.zeros((1, 5)), pooled_size=(2, 2), spatial_scale=2.0)
    with pytest.raises(mx.MXNetError, match=r'rois must be \(num_rois, 5\)'):
        nd.ROIPooling(x, nd.zeros((1, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.ROIPooling(nd.zeros((1, 4, 4)), nd.zeros((1, 5)), pooled_size=(2, 2),
                      spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='max index'):
        nd._backward_ROIPooling(nd.ones((1, 1, 1, 1)), nd.array([[[[99]]]], dtype='int64'),
                                x, pooled_size=(1, 1), spatial_scale=1.0)


# ---------------------------------------------------------------------------------------------
# Correlation

def np_correlation(a, b, k, maxd, s1, s2, pad, mult):
    n, c, H, W = a.shape
    ap = np.pad(a.astype(np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    bp = np.pad(b.astype(np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    border = maxd + (k - 1) // 2
    OH = math.ceil((H + 2 * pad - 2 * border) / s1)
    OW = math.ceil((W + 2 * pad - 2 * border) / s1)
    R = maxd // s2
    GW = 2 * R + 1
    out = np.zeros((n, GW * GW, OH, OW))
    for tc, i, j in itertools.product(range(GW * GW), range(OH), range(OW)):
        x1, y1 = j * s1 + maxd, i * s1 + maxd
        x2, y2 = x1 + (tc % GW - R) * s2, y1 + (tc // GW - R) * s2
        p = ap[:, :, y1:y1 + k, x1:x1 + k]
        q = bp[:, :, y2:y2 + k, x2:x2 + k]
        v = p * q if mult else np.abs(p - q)
        out[:, tc, i, j] = v.reshape(n, -1).sum(axis=1) / (k * k * c)
    return out


CORR_CASES = [dict(kernel_size=3, max_displacement=2, stride1=2, stride2=1, pad_size=2),
              dict(kernel_size=1, max_displacement=2, stride1=1, stride2=2, pad_size=1,
                   is_multiply=False),
              dict(kernel_size=1, max_displacement=1),
              dict(kernel_size=3, max_displacement=0, pad_size=1)]


@pytest.mark.parametrize('kw', CORR_CASES)
@pytest.mark.parametrize('shape', [(2, 3, 8, 7), (1, 1, 5, 5)])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_correlation(kw, shape, dtype):
    rng = np.random.default_rng(12)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    y = nd.Correlation(_arr(a), _arr(b), **kw)
    ref = np_correlation(a, b, kw['kernel_size'], kw['max_displacement'], kw.get('stride1', 1),
                         kw.get('stride2', 1), kw.get('pad_size', 0),
                         kw.get('is_multiply', True))
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_correlation_backward_multiply_is_adjoint():
    rng = np.random.default_rng(13)
    a, b = rng.standard_normal((2, 2, 6, 6)), rng.standard_normal((2, 2, 6, 6))
    kw = dict(kernel_size=3, max_displacement=1, pad_size=1)
    y = nd.Correlation(_arr(a), _arr(b), **kw).asnumpy()
    dy = rng.standard_normal(y.shape)
    da, db = nd._backward_Correlation(_arr(dy), _arr(a), _arr(b), **kw)
    # y is bilinear in (a, b): <dy, y> = <a, da> = <b, db>
    assert np.isclose((dy * y).sum(), (a * da.asnumpy()).sum(), rtol=1e-12)
    assert np.isclose((dy * y).sum(), (b * db.asnumpy()).sum(), rtol=1e-12)


def test_correlation_errors():
    x = nd.zeros((1, 1, 28, 28))
    with pytest.raises(mx.MXNetError, match='do not fit'):
        nd.Correlation(x, x, kernel_size=29)
    assert nd.Correlation(x, x, kernel_size=9).shape == (1, 9, 18, 18)
    with pytest.raises(mx.MXNetError, match='odd'):
        nd.Correlation(x, x, kernel_size=28)
    with pytest.raises(mx.MXNetError, match='one shape'):
        nd.Correlation(x, nd.zeros((1, 1, 27, 28)))
    with pytest.raises(mx.MXNetError, match='same dtype'):
        nd.Correlation(x, nd.zeros((1, 1, 28, 28), dtype='float64'))
    with pytest.raises(mx.MXNetError, match='strides'):
        nd.Correlation(x, x, stride1=0)


# ---------------------------------------------------------------------------------------------
# float16: computed in float32 copies, rounded once

F16 = dict(rtol=2e-2, atol=2e-2)


def _f16_grads(op, arrays, kw, wrt):
    xs = [_arr(a, 'float16') for a in arrays]
    for i in wrt:
        xs[i].attach_grad()
    with mx.autograd.record():
        y = getattr(nd, op)(*xs, **kw)
    dy = np.random.default_rng(14).standard_normal(y.shape).astype('float16')
    y.backward(_arr(dy, 'float16'))
    assert y.dtype == np.float16 and all(xs[i].grad.dtype == np.float16 for i in wrt)
    return y.asnumpy(), [xs[i].grad.asnumpy() for i in wrt], dy


def _f64_grads(op, arrays, kw, wrt, dy):
    xs = [_arr(np.asarray(a, np.float64)) for a in arrays]
    for i in wrt:
        xs[i].attach_grad()
    with mx.autograd.record():
        y = getattr(nd, op)(*xs, **kw)
    y.backward(_arr(dy.astype(np.float64)))
    return y.asnumpy(), [xs[i].grad.asnumpy() for i in wrt]


@pytest.mark.parametrize('op,arrays,kw,wrt', [
    ('BilinearSampler', [(2, 3, 5, 6), 'grid'], {}, [0, 1]),
    ('SpatialTransformer', [(2, 3, 5, 6), 'loc'],
     dict(target_shape=(4, 5), transform_type='affine', sampler_type='bilinear'), [0, 1]),
    ('ROIPooling', [(2, 3, 8, 9), 'rois'], dict(pooled_size=(3, 2), spatial_scale=0.5), [0]),
    ('Correlation', [(2, 3, 8, 7), (2, 3, 8, 7)],
     dict(kernel_size=3, max_displacement=2, stride1=2, pad_size=2), [0, 1]),
    ('GridGenerator', ['theta'], dict(transform_type='affine', target_shape=(3, 4)), [0]),
    ('im2col', [(1, 2, 5, 5)], dict(kernel=(3, 3), pad=(1, 1)), [0])])
def test_float16_matches_float64(op, arrays, kw, wrt):
    rng = np.random.default_rng(15)
    named = {'grid': lambda: rng.uniform(-1.1, 1.1, (2, 2, 4, 7)),
             'loc': lambda: np.array([0.9, 0.1, 0.05, -0.1, 1.1, 0.02])
             + 0.1 * rng.standard_normal((2, 6)),
             'rois': lambda: np.array([[0, 0, 0, 7, 7], [1, 2, 2, 14, 10], [0, 4, 4, 4, 4]]),
             'theta': lambda: rng.standard_normal((2, 6))}
    xs = [named[a]() if isinstance(a, str) else rng.standard_normal(a) for a in arrays]
    xs = [x.astype('float16').astype(np.float64) for x in xs]  # the same values in both
    y16, g16, dy = _f16_grads(op, xs, kw, wrt)
    y64, g64 = _f64_grads(op, xs, kw, wrt, dy)
    np.testing.assert_allclose(y16, y64, **F16)
    for a, b in zip(g16, g64):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2 * max(1.0, np.abs(b).max()))
