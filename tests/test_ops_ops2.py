"""Forward of the deformable convolutions (csrc/ops/deform_conv.c) against a NumPy reference
written from the definition: each kernel tap samples the data at its regular place plus an
offset by bilinear interpolation (DCNv1: only inside [0, H) x [0, W), taps clamped to the last
row / column; DCNv2: inside (-1, H) x (-1, W) with zero padding, times a mask), then the
grouped convolution sums over channels and taps. Also the image ops (csrc/ops/image.c):
normalize and to_tensor; BatchNorm_v1 (csrc/ops/bn_v1.c); Proposal and MultiProposal
(csrc/ops/proposal.c)."""
import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['_contrib_DeformableConvolution', '_contrib_ModulatedDeformableConvolution',
               '_backward_contrib_DeformableConvolution',
               '_backward_contrib_ModulatedDeformableConvolution', '_image_normalize',
               '_backward_image_normalize', '_image_to_tensor', 'BatchNorm_v1',
               '_backward_BatchNorm_v1', '_contrib_Proposal', '_contrib_MultiProposal']


def _bilinear(plane, y, x, modulated):
    h, w = plane.shape
    if not modulated:
        if not (0 <= y < h and 0 <= x < w):
            return 0.0
        y0, x0 = int(np.floor(y)), int(np.floor(x))
        if y0 >= h - 1:
            y1, y = y0, float(y0)
        else:
            y1 = y0 + 1
        if x0 >= w - 1:
            x1, x = x0, float(x0)
        else:
            x1 = x0 + 1
        ly, lx = y - y0, x - x0
        return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
                + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])
    if not (-1 < y < h and -1 < x < w):
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    total = 0.0
    for yy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for xx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= yy < h and 0 <= xx < w:
                total += wy * wx * plane[yy, xx]
    return total


def deform_conv_ref(x, off, mask, w, b, kernel, stride, pad, dilate, groups, dgroups):
    n, c, h, wd = x.shape
    f = w.shape[0]
    kh, kw = kernel
    ho = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    col = np.zeros((n, c, kh * kw, ho, wo))
    cpd = c // dgroups
    for b_ in range(n):
        for ch in range(c):
            d = ch // cpd
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for oy in range(ho):
                        for ox in range(wo):
                            dy = off[b_, d * 2 * kh * kw + 2 * k, oy, ox]
                            dx = off[b_, d * 2 * kh * kw + 2 * k + 1, oy, ox]
                            y = oy * stride[0] - pad[0] + i * dilate[0] + dy
                            xx = ox * stride[1] - pad[1] + j * dilate[1] + dx
                            v = _bilinear(x[b_, ch], y, xx, mask is not None)
                            if mask is not None:
                                v *= mask[b_, d * kh * kw + k, oy, ox]
                            col[b_, ch, k, oy, ox] = v
    cg, fg = c // groups, f // groups
    out = np.zeros((n, f, ho, wo))
    for g in range(groups):
        cols = col[:, g * cg:(g + 1) * cg].reshape(n, cg * kh * kw, ho * wo)
        wg = w[g * fg:(g + 1) * fg].reshape(fg, cg * kh * kw)
        out[:, g * fg:(g + 1) * fg] = np.einsum('fk,nkp->nfp', wg, cols).reshape(n, fg, ho, wo)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


# (N, C, H, W, F, groups, deformable groups, kernel, stride, pad, dilate)
CASES = [(2, 4, 5, 6, 6, 2, 2, (3, 3), (1, 1), (1, 1), (1, 1)),
         (1, 2, 7, 7, 4, 1, 1, (3, 2), (2, 1), (0, 1), (2, 1)),
         (1, 3, 4, 4, 3, 1, 3, (2, 2), (1, 1), (1, 1), (1, 1)),
         (1, 1, 1, 1, 1, 1, 1, (1, 1), (1, 1), (0, 0), (1, 1)),
         (0, 2, 3, 3, 2, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1))]


def _inputs(case, modulated, seed):
    n, c, h, wd, f, g, dg, k, s, p, d = case
    rng = np.random.RandomState(seed)
    ho = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (wd + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    x = rng.randn(n, c, h, wd)
    off = rng.uniform(-2.5, 2.5, (n, 2 * dg * k[0] * k[1], ho, wo))
    mask = rng.rand(n, dg * k[0] * k[1], ho, wo) if modulated else None
    w = rng.randn(f, c // g, *k)
    b = rng.randn(f)
    attrs = dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=f, num_group=g,
                 num_deformable_group=dg)
    return x, off, mask, w, b, attrs


@pytest.mark.parametrize('modulated', [False, True])
@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('no_bias', [False, True])
def test_deformable_convolution_forward(modulated, case, dtype, no_bias):
    if modulated and case[4] % case[6]:
        pytest.skip('ModulatedDeformableConvolution needs num_filter % num_deformable_group == 0')
    x, off, mask, w, b, attrs = _inputs(case, modulated, seed=len(case) + case[1])
    arrays = [x, off] + ([mask] if modulated else []) + [w] + ([] if no_bias else [b])
    # the reference sees the values the op sees (rounded to dtype)
    arrays = [a.astype(dtype).astype(np.float64) for a in arrays]
    x, off = arrays[0], arrays[1]
    m = arrays[2] if modulated else None
    wq = arrays[3 if modulated else 2]
    bq = None if no_bias else arrays[-1]
    want = deform_conv_ref(x, off, m, wq, bq, attrs['kernel'], attrs['stride'], attrs['pad'],
                           attrs['dilate'], attrs['num_group'], attrs['num_deformable_group'])
    op = (mx.nd.contrib.ModulatedDeformableConvolution if modulated
          else mx.nd.contrib.DeformableConvolution)
    got = op(*[mx.nd.array(a, dtype=dtype) for a in arrays], no_bias=no_bias, **attrs)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    tol = {'float16': 2e-2, 'float32': 1e-5, 'float64': 1e-12}[dtype]
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=tol,
                               atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


def test_deformable_convolution_zero_offset_is_convolution():
    x, off, _, w, b, attrs = _inputs(CASES[0], False, seed=3)
    got = mx.nd.contrib.DeformableConvolution(mx.nd.array(x), mx.nd.zeros(off.shape),
                                              mx.nd.array(w), mx.nd.array(b), **attrs)
    conv_attrs = {k: v for k, v in attrs.items() if k != 'num_deformable_group'}
    want = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), **conv_attrs)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('modulated', [False, True])
def test_deformable_convolution_bad_input(modulated):
    op = (mx.nd.contrib.ModulatedDeformableConvolution if modulated
          else mx.nd.contrib.DeformableConvolution)
    x = mx.nd.ones((1, 4, 5, 5))
    off = mx.nd.zeros((1, 18, 5, 5))
    extra = [mx.nd.ones((1, 9, 5, 5))] if modulated else []
    w = mx.nd.ones((2, 4, 3, 3))
    with pytest.raises(mx.MXNetError, match='offset'):
        op(x, mx.nd.zeros((1, 17, 5, 5)), *extra, w, kernel=(3, 3), pad=(1, 1), num_filter=2,
           no_bias=True)
    with pytest.raises(mx.MXNetError, match='num_group'):
        op(x, off, *extra, mx.nd.ones((2, 1, 3, 3)), kernel=(3, 3), pad=(1, 1), num_filter=2,
           num_group=3, no_bias=True)
    with pytest.raises(mx.MXNetError, match='2-D'):
        op(x, off, *extra, w, kernel=(3,), num_filter=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match='4-D'):
        op(mx.nd.ones((4, 5, 5)), off, *extra, w, kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(mx.MXNetError, match='exceeds'):
        op(mx.nd.ones((1, 4, 2, 2)), off, *extra, w, kernel=(3, 3), num_filter=2, no_bias=True)


def test_deformable_convolution_symbol_infers_parameters():
    y = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var('data'), mx.sym.var('offset'), mx.sym.var('mask'), kernel=(3, 3),
        num_filter=6, num_deformable_group=2, pad=(1, 1))
    args, outs, _ = y.infer_shape(data=(2, 4, 5, 6), offset=(2, 36, 5, 6), mask=(2, 18, 5, 6))
    shapes = dict(zip(y.list_arguments(), args))
    assert shapes[y.list_arguments()[3]] == (6, 4, 3, 3)
    assert shapes[y.list_arguments()[4]] == (6,)
    assert outs == [(2, 6, 5, 6)]


# ---- image ops ------------------------------------------------------------------------------

def normalize_ref(x, mean, std, dtype):
    """MXNet's arithmetic: float32 for every dtype but float64; integers truncate and wrap."""
    nch = x.shape[-3]
    mean = np.resize(np.array(mean, np.float32), nch).reshape(nch, 1, 1)
    std = np.resize(np.array(std, np.float32), nch).reshape(nch, 1, 1)
    if dtype == 'float64':
        return (x - mean.astype(np.float64)) / std.astype(np.float64)
    r = (x.astype(np.float32) - mean) / std
    if np.dtype(dtype).kind in 'iu':
        return np.trunc(r).astype(np.int64).astype(dtype)
    return r.astype(dtype)


@pytest.mark.parametrize('shape', [(3, 4, 5), (1, 2, 2), (2, 3, 3, 2), (0, 1, 2, 2), (1, 1, 1),
                                   (3, 0, 4)])
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64', 'uint8', 'int8', 'int32'])
def test_image_normalize(shape, dtype):
    rng = np.random.RandomState(sum(shape))
    nch = shape[-3]
    if np.dtype(dtype).kind in 'iu':
        x = rng.randint(0, 100, shape).astype(dtype)
    else:
        x = rng.uniform(-2, 2, shape).astype(dtype)
    for mean, std in [((0.485, 0.456, 0.406)[:nch], (0.229, 0.224, 0.225)[:nch]), (0.5, 2.0),
                      (3, (0.5, 0.25, 4.0)[:nch])]:
        got = mx.nd.image.normalize(mx.nd.array(x, dtype=dtype), mean=mean, std=std)
        want = normalize_ref(x, mean, std, dtype)
        assert got.dtype == np.dtype(dtype) and got.shape == shape
        if np.dtype(dtype).kind in 'iu':
            np.testing.assert_array_equal(got.asnumpy(), want)
        else:
            tol = 1e-3 if dtype == 'float16' else 1e-6
            np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=tol,
                                       atol=tol)


def test_image_normalize_symbol_and_bad_input():
    y = mx.sym.image.normalize(mx.sym.var('x'), mean=(1, 2, 3), std=(1, 2, 4))
    _, outs, _ = y.infer_shape(x=(2, 3, 4, 4))
    assert outs == [(2, 3, 4, 4)]
    with pytest.raises(mx.MXNetError, match='mean must have 1 or 3'):
        mx.nd.image.normalize(mx.nd.ones((3, 2, 2)))  # MXNet's default has 4 entries
    with pytest.raises(mx.MXNetError, match='channel'):
        mx.nd.image.normalize(mx.nd.ones((4, 2, 2)), mean=0, std=1)
    with pytest.raises(mx.MXNetError, match='shape'):
        mx.nd.image.normalize(mx.nd.ones((2, 2)), mean=0, std=1)
    with pytest.raises(mx.MXNetError, match='std'):
        mx.nd.image.normalize(mx.nd.ones((3, 2, 2)), mean=0, std='(1, x)')


@pytest.mark.parametrize('shape', [(4, 5, 3), (2, 3, 1), (2, 4, 3, 3), (0, 2, 2, 3), (1, 1, 1)])
@pytest.mark.parametrize('dtype', ['uint8', 'float32', 'float64', 'int32', 'float16'])
def test_image_to_tensor(shape, dtype):
    x = np.random.RandomState(len(shape)).randint(0, 256, shape).astype(dtype)
    got = mx.nd.image.to_tensor(mx.nd.array(x, dtype=dtype))
    axes = (2, 0, 1) if len(shape) == 3 else (0, 3, 1, 2)
    want = np.transpose(x.astype(np.float64), axes) / 255.0
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-7)
    with pytest.raises(mx.MXNetError, match='height, width, channels'):
        mx.nd.image.to_tensor(mx.nd.ones((2, 2)))


# ---- BatchNorm_v1 ---------------------------------------------------------------------------

def bn_v1_ref(x, gamma, beta, mm, mv, eps, fix_gamma, batch):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if batch:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    else:
        mean, var = mm, mv
    g = np.ones_like(gamma) if fix_gamma else gamma
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * g.reshape(shape)
    return y + beta.reshape(shape), mean, var


@pytest.mark.parametrize('shape', [(4, 3), (2, 3, 2, 5), (1, 1), (1, 2, 1, 1), (3, 0, 2, 2)])
@pytest.mark.parametrize('dtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('fix_gamma', [True, False])
@pytest.mark.parametrize('train', [True, False])
def test_batchnorm_v1_forward(shape, dtype, fix_gamma, train):
    rng = np.random.RandomState(shape[0] + shape[1])
    c = shape[1]
    x = rng.randn(*shape).astype(dtype)
    g, b, mm = (rng.randn(c).astype(dtype) for _ in range(3))
    mv = (rng.rand(c) + 0.5).astype(dtype)
    args = [mx.nd.array(a, dtype=dtype) for a in (x, g, b, mm, mv)]
    with mx.autograd.record(train_mode=train):
        y, mean, var = mx.nd.BatchNorm_v1(*args, eps=1e-3, fix_gamma=fix_gamma,
                                          output_mean_var=True)
    f64 = [a.astype(np.float64) for a in (x, g, b, mm, mv)]
    want = bn_v1_ref(*f64, 1e-3, fix_gamma, train)
    tol = 3e-3 if dtype == 'float16' else 1e-5
    for got, ref in zip((y, mean, var), want):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.asnumpy().astype(np.float64), ref, rtol=tol, atol=tol)
    # the forward never touches the moving statistics (the backward updates them)
    np.testing.assert_array_equal(args[3].asnumpy(), mm)


def test_batchnorm_v1_backward_updates_moving_stats():
    rng = np.random.RandomState(5)
    x = rng.randn(6, 2, 3, 3)
    mm, mv = np.array([0.5, -1.0]), np.array([2.0, 0.5])
    s = mx.sym.BatchNorm_v1(mx.sym.var('x'), name='bn', momentum=0.75)
    args = {'x': mx.nd.array(x), 'bn_gamma': mx.nd.ones((2,)), 'bn_beta': mx.nd.zeros((2,))}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    aux = {'bn_moving_mean': mx.nd.array(mm), 'bn_moving_var': mx.nd.array(mv)}
    assert s.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    ex = s.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones((6, 2, 3, 3))])
    axes = (0, 2, 3)
    np.testing.assert_allclose(aux['bn_moving_mean'].asnumpy(),
                               0.75 * mm + 0.25 * x.mean(axis=axes), rtol=1e-5)
    np.testing.assert_allclose(aux['bn_moving_var'].asnumpy(),
                               0.75 * mv + 0.25 * x.var(axis=axes), rtol=1e-5)


def test_batchnorm_v1_bad_input():
    with pytest.raises(mx.MXNetError, match='2-D .* or 4-D'):
        mx.nd.BatchNorm_v1(mx.nd.ones((2, 3, 4)), mx.nd.ones((3,)), mx.nd.ones((3,)),
                           mx.nd.ones((3,)), mx.nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='gamma'):
        mx.nd.BatchNorm_v1(mx.nd.ones((2, 3)), mx.nd.ones((4,)), mx.nd.ones((3,)),
                           mx.nd.ones((3,)), mx.nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='float'):
        mx.nd.BatchNorm_v1(*[mx.nd.ones(s, dtype='int32') for s in [(2, 3)] + [(3,)] * 4])


# ---- Proposal / MultiProposal ---------------------------------------------------------------

def _anchors(stride, ratios, scales):
    f = np.float32
    out = []
    w = h = f(stride)
    xc = yc = f(0.5) * (w - f(1))
    for r in ratios:
        for s in scales:
            nw = np.floor(np.sqrt(np.floor(w * h / f(r))) + f(0.5)) * f(s)
            nh = np.floor(nw / f(s) * f(r) + f(0.5)) * f(s)
            out.append([xc - f(0.5) * (nw - f(1)), yc - f(0.5) * (nh - f(1)),
                        xc + f(0.5) * (nw - f(1)), yc + f(0.5) * (nh - f(1))])
    return np.array(out, np.float32)


def proposal_ref(cls, deltas, info, stride, scales, ratios, pre, post, thresh, min_size, iou):
    """One image, from the definition, in float32."""
    f = np.float32
    a_n = len(scales) * len(ratios)
    _, _, hh, ww = cls.shape
    anc = _anchors(stride, ratios, scales)
    boxes = []
    for h in range(hh):
        for w in range(ww):
            for a in range(a_n):
                x1, y1, x2, y2 = anc[a] + f([w * stride, h * stride, w * stride, h * stride])
                d = deltas[0, 4 * a:4 * a + 4, h, w]
                if iou:
                    p = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
                else:
                    bw, bh = x2 - x1 + f(1), y2 - y1 + f(1)
                    cx, cy = x1 + f(0.5) * (bw - f(1)), y1 + f(0.5) * (bh - f(1))
                    pcx, pcy = d[0] * bw + cx, d[1] * bh + cy
                    pw, ph = np.exp(d[2]) * bw, np.exp(d[3]) * bh
                    p = [pcx - f(0.5) * (pw - f(1)), pcy - f(0.5) * (ph - f(1)),
                         pcx + f(0.5) * (pw - f(1)), pcy + f(0.5) * (ph - f(1))]
                lim = [info[1] - 1, info[0] - 1] * 2
                p = [min(max(v, f(0)), f(m)) for v, m in zip(p, lim)]
                score = cls[0, a_n + a, h, w]
                if h >= int(info[0] / stride) or w >= int(info[1] / stride):
                    score = f(-1)
                ms = f(min_size) * f(info[2])
                if p[2] - p[0] + 1 < ms or p[3] - p[1] + 1 < ms:
                    p = [p[0] - ms / 2, p[1] - ms / 2, p[2] + ms / 2, p[3] + ms / 2]
                    score = f(-1)
                boxes.append(p + [score])
    boxes = np.array(boxes, np.float32)
    order = np.argsort(-boxes[:, 4], kind='stable')
    pre = len(boxes) if pre <= 0 else min(pre, len(boxes))
    boxes = boxes[order[:pre]]
    area = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    keep, supp = [], np.zeros(pre, bool)
    for i in range(pre):
        if len(keep) == post:
            break
        if supp[i]:
            continue
        keep.append(i)
        xx1 = np.maximum(boxes[i, 0], boxes[:, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[:, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[:, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[:, 3])
        inter = np.maximum(0, xx2 - xx1 + 1) * np.maximum(0, yy2 - yy1 + 1)
        ovr = inter / (area[i] + area - inter)
        later = np.arange(pre) > i
        supp |= later & (ovr > thresh)
    rows = [keep[i % len(keep)] for i in range(post)]
    return boxes[rows, :4], boxes[rows, 4:]


PROPOSAL_CASES = [  # N, H, W, scales, ratios, pre, post, threshold, min_size, iou_loss, stride
    (2, 8, 9, (8, 16), (0.5, 1, 2), 200, 30, 0.7, 16, False, 16),
    (1, 5, 4, (4,), (1,), -1, 12, 0.5, 4, True, 8),
    (1, 1, 1, (2,), (1,), 1, 3, 0.7, 1, False, 4),
    (3, 6, 6, (2, 4), (0.5, 2), 50, 20, 0.6, 2, False, 4)]


@pytest.mark.parametrize('case', PROPOSAL_CASES)
def test_proposal(case):
    n, h, w, scales, ratios, pre, post, thr, mins, iou, stride = case
    rng = np.random.RandomState(h * w)
    a_n = len(scales) * len(ratios)
    cls = rng.rand(n, 2 * a_n, h, w).astype(np.float32)
    deltas = (rng.randn(n, 4 * a_n, h, w) * (2 if iou else 0.3)).astype(np.float32)
    info = np.array([[h * stride - rng.randint(0, stride * h // 2 + 1),
                      w * stride - rng.randint(0, stride * w // 2 + 1), rng.uniform(0.6, 1.2)]
                     for _ in range(n)], np.float32)
    kw = dict(feature_stride=stride, scales=scales, ratios=ratios, rpn_pre_nms_top_n=pre,
              rpn_post_nms_top_n=post, threshold=thr, rpn_min_size=mins, iou_loss=iou,
              output_score=True)
    rois, score = mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(deltas),
                                              mx.nd.array(info), **kw)
    assert rois.shape == (n * post, 5) and score.shape == (n * post, 1)
    for b in range(n):
        want_box, want_score = proposal_ref(cls[b:b + 1], deltas[b:b + 1], info[b], stride,
                                            scales, ratios, pre, post, thr, mins, iou)
        got = rois.asnumpy()[b * post:(b + 1) * post]
        np.testing.assert_array_equal(got[:, 0], b)
        np.testing.assert_allclose(got[:, 1:], want_box, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(score.asnumpy()[b * post:(b + 1) * post], want_score,
                                   rtol=1e-6)
        one, one_score = mx.nd.contrib.Proposal(mx.nd.array(cls[b:b + 1]),
                                                mx.nd.array(deltas[b:b + 1]),
                                                mx.nd.array(info[b:b + 1]), **kw)
        np.testing.assert_array_equal(one.asnumpy()[:, 1:], got[:, 1:])
        np.testing.assert_array_equal(one.asnumpy()[:, 0], 0)
        np.testing.assert_array_equal(one_score.asnumpy(), score.asnumpy()[b * post:(b + 1) * post])
    only = mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(deltas), mx.nd.array(info),
                                       **dict(kw, output_score=False))
    np.testing.assert_array_equal(only.asnumpy(), rois.asnumpy())


def test_proposal_empty_batch_and_bad_input():
    rois = mx.nd.contrib.MultiProposal(mx.nd.zeros((0, 2, 3, 3)), mx.nd.zeros((0, 4, 3, 3)),
                                       mx.nd.zeros((0, 3)), scales=(8,), ratios=(1,),
                                       rpn_post_nms_top_n=5)
    assert rois.shape == (0, 5)
    cls, dl = mx.nd.ones((2, 18, 4, 4)), mx.nd.zeros((2, 36, 4, 4))
    info = mx.nd.array([[64, 64, 1], [64, 64, 1]])
    with pytest.raises(mx.MXNetError, match='one image'):
        mx.nd.contrib.Proposal(cls, dl, info, scales=(8, 16, 32))
    with pytest.raises(mx.MXNetError, match='num_anchors'):
        mx.nd.contrib.MultiProposal(cls, dl, info, scales=(8, 16))
    with pytest.raises(mx.MXNetError, match='bbox_pred'):
        mx.nd.contrib.MultiProposal(cls, mx.nd.zeros((2, 35, 4, 4)), info, scales=(8, 16, 32))
    with pytest.raises(mx.MXNetError, match='feature map'):
        mx.nd.contrib.MultiProposal(cls, dl, info * 4, scales=(8, 16, 32))
    with pytest.raises(mx.MXNetError, match='float32'):
        mx.nd.contrib.MultiProposal(cls.astype('float64'), dl, info, scales=(8, 16, 32))
    with pytest.raises(mx.MXNetError, match='scales'):
        mx.nd.contrib.MultiProposal(cls, dl, info, scales='(8, x)')
