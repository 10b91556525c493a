"""MXNet's contrib ops (csrc/ops/contrib_*.c, registered as _contrib_X and reached as
nd.contrib.X): forward against NumPy references written from the ops' definitions, over several
shapes (empty and one-element where legal) and every dtype the op takes, and the errors for bad
input. Box ops are checked on hand-worked cases and random boxes."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd
OPS_COVERED = ['_contrib_round_ste', '_contrib_sign_ste', '_contrib_gradientmultiplier',
               '_contrib_quadratic', '_contrib_box_iou', '_contrib_box_nms',
               '_contrib_bipartite_matching', '_contrib_box_encode', '_contrib_box_decode',
               '_backward_contrib_box_nms', '_contrib_MultiBoxPrior', '_contrib_MultiBoxTarget',
               '_contrib_div_sqrt_dim', '_contrib_index_array', '_contrib_index_copy',
               '_contrib_allclose', '_contrib_arange_like',
               '_contrib_interleaved_matmul_selfatt_qk',
               '_contrib_interleaved_matmul_selfatt_valatt',
               '_contrib_interleaved_matmul_encdec_qk',
               '_contrib_interleaved_matmul_encdec_valatt',
               '_backward_interleaved_matmul_selfatt_qk',
               '_backward_interleaved_matmul_selfatt_valatt',
               '_backward_interleaved_matmul_encdec_qk',
               '_backward_interleaved_matmul_encdec_valatt', '_contrib_AdaptiveAvgPooling2D',
               '_backward_contrib_AdaptiveAvgPooling2D', '_contrib_BilinearResize2D',
               '_backward_contrib_BilinearResize2D', '_contrib_ROIAlign',
               '_backward_contrib_ROIAlign', '_contrib_group_adagrad_update',
               '_contrib_hawkesll', '_backward_contrib_hawkesll', '_contrib_RROIAlign',
               '_contrib_quantize', '_contrib_dequantize', '_contrib_PSROIPooling',
               '_backward_contrib_PSROIPooling']

FLOATS = ['float16', 'float32', 'float64']
ALL = FLOATS + ['int32', 'int64', 'int8', 'uint8']
SHAPES = [(0,), (1,), (7,), (3, 4), (2, 3, 5)]
TOL = {'float16': dict(rtol=1e-2, atol=1e-2), 'float32': dict(rtol=1e-5, atol=1e-5),
       'float64': dict(rtol=1e-12, atol=1e-12)}


def rand(shape, dtype, seed=0, lo=-5, hi=5):
    v = np.random.RandomState(seed).uniform(lo, hi, shape)
    if np.dtype(dtype).kind in 'iu':
        v = np.round(v)
        if np.dtype(dtype).kind == 'u':
            v = np.abs(v)
    return v.astype(dtype)


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# ---- element-wise ------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_round_ste_sign_ste(dtype, shape):
    x = rand(shape, dtype)
    if x.size:
        x.reshape(-1)[0] = 0
    if x.size > 2 and np.dtype(dtype).kind == 'f':
        x.reshape(-1)[1:3] = [2.5, -1.5]  # halves go away from zero, as MXNet's round
    r = nd.contrib.round_ste(nd.array(x, dtype=dtype))
    s = nd.contrib.sign_ste(nd.array(x, dtype=dtype))
    assert r.dtype == np.dtype(dtype) and r.shape == shape
    np.testing.assert_array_equal(r.asnumpy(), round_half_away(x.astype('f8')).astype(dtype))
    np.testing.assert_array_equal(s.asnumpy(), np.sign(x))


@pytest.mark.parametrize('op', ['round_ste', 'sign_ste'])
@pytest.mark.parametrize('hybridize', [False, True])
def test_ste_gradient_passes_through(op, hybridize):
    """The straight-through estimator's gradient is the incoming gradient, unchanged (not the
    derivative of rounding, which is zero almost everywhere)."""
    f = getattr(nd.contrib, op)
    x = nd.array(rand((3, 4), 'float32'))
    x.attach_grad()
    hg = nd.array(rand((3, 4), 'float32', seed=1))

    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, v):
            return getattr(F.contrib, op)(v * 2) * 3
    net = Net()
    if hybridize:
        net.hybridize()
    with mx.autograd.record():
        y = net(x)
    y.backward(hg)
    np.testing.assert_allclose(y.asnumpy(), f(x * 2).asnumpy() * 3)
    np.testing.assert_allclose(x.grad.asnumpy(), hg.asnumpy() * 6, rtol=1e-6)


@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_gradientmultiplier_forward_is_identity(dtype, shape):
    x = rand(shape, dtype)
    y = nd.contrib.gradientmultiplier(nd.array(x, dtype=dtype), scalar=-0.3)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), x)


def test_gradientmultiplier_scales_the_gradient():
    x = nd.array(rand((2, 5), 'float64'), dtype='float64')
    x.attach_grad()
    hg = rand((2, 5), 'float64', seed=3)
    with mx.autograd.record():
        y = nd.contrib.gradientmultiplier(x, scalar=-0.25)
    y.backward(nd.array(hg, dtype='float64'))
    np.testing.assert_allclose(x.grad.asnumpy(), -0.25 * hg)


@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', SHAPES)
def test_quadratic(dtype, shape):
    a, b, c = (0.5, -1.25, 2.0) if np.dtype(dtype).kind == 'f' else (2, -3, 1)
    if dtype == 'uint8':
        b = 3
    x = rand(shape, dtype, lo=-3, hi=3)
    y = nd.contrib.quadratic(nd.array(x, dtype=dtype), a=a, b=b, c=c)
    xf = x.astype('f8')
    ref = a * xf * xf + b * xf + c
    assert y.dtype == np.dtype(dtype) and y.shape == shape
    if np.dtype(dtype).kind == 'f':
        np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])
    else:
        np.testing.assert_array_equal(y.asnumpy(), ref.astype(dtype))


def test_quadratic_coefficients_are_float32():
    """MXNet declares a, b, c as float fields: a float64 input still sees float32 coefficients."""
    x = np.array([1.0, 3.0])
    y = nd.contrib.quadratic(nd.array(x, dtype='float64'), a=0.1, b=0, c=0).asnumpy()
    np.testing.assert_array_equal(y, np.float64(np.float32(0.1)) * x * x)


def test_elemwise_contrib_in_symbol_namespace():
    s = mx.sym.contrib.quadratic(mx.sym.var('x'), a=1, b=2, c=3)
    assert s.list_arguments() == ['x']
    out = mx.sym.contrib.gradientmultiplier(s, scalar=2.0)
    assert 'gradientmultiplier' in out.tojson()


# ---- boxes -------------------------------------------------------------------------------------

def corners(lead, seed=0, scale=10.0):
    r = np.random.RandomState(seed)
    xy = r.uniform(0, scale, tuple(lead) + (2,))
    wh = r.uniform(0.5, scale / 2, tuple(lead) + (2,))
    return np.concatenate([xy, xy + wh], -1)


def to_center(b):
    return np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)


def iou_ref(a, b):
    """IoU of corner boxes, every box of a with every box of b."""
    a2, b2 = a.reshape(-1, 1, 4), b.reshape(1, -1, 4)
    w = np.clip(np.minimum(a2[..., 2], b2[..., 2]) - np.maximum(a2[..., 0], b2[..., 0]), 0, None)
    h = np.clip(np.minimum(a2[..., 3], b2[..., 3]) - np.maximum(a2[..., 1], b2[..., 1]), 0, None)
    inter = w * h

    def area(x):
        return np.clip(x[..., 2] - x[..., 0], 0, None) * np.clip(x[..., 3] - x[..., 1], 0, None)
    union = area(a2) + area(b2) - inter
    out = np.where(inter > 0, inter / np.where(inter > 0, union, 1), 0)
    return out.reshape(a.shape[:-1] + b.shape[:-1])


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('la,lb', [((1,), (1,)), ((3,), (2, 2)), ((2, 1, 3), (4,)), ((0,), (3,)),
                                   ((2,), (0, 2))])
def test_box_iou(dtype, la, lb):
    a, b = corners(la, 1), corners(lb, 2)
    ref = iou_ref(a, b)
    for fmt, fa, fb in [('corner', a, b), ('center', to_center(a), to_center(b))]:
        y = nd.contrib.box_iou(nd.array(fa, dtype=dtype), nd.array(fb, dtype=dtype), format=fmt)
        assert y.shape == la + lb and y.dtype == np.dtype(dtype)
        np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])


def test_box_iou_disjoint_touching_and_identical():
    a = np.array([[0, 0, 2, 2], [0, 0, 2, 2], [0, 0, 2, 2]], 'f4')
    b = np.array([[2, 0, 4, 2], [0, 0, 2, 2], [1, 1, 3, 3]], 'f4')
    y = nd.contrib.box_iou(nd.array(a), nd.array(b)).asnumpy()
    np.testing.assert_allclose(np.diag(y), [0, 1, 1 / 7], rtol=1e-6)


def test_box_iou_errors():
    with pytest.raises(mx.MXNetError, match='last dimension of 4'):
        nd.contrib.box_iou(nd.zeros((3, 5)), nd.zeros((2, 4)))
    with pytest.raises(mx.MXNetError, match='ndim >= 2'):
        nd.contrib.box_iou(nd.zeros((4,)), nd.zeros((2, 4)))
    with pytest.raises(mx.MXNetError, match='float'):
        nd.contrib.box_iou(nd.zeros((1, 4), dtype='int32'), nd.zeros((1, 4), dtype='int32'))


def nms_ref(data, thresh=0.5, valid=0.0, topk=-1, coord=2, score=1, cid=-1, bid=-1,
            force=False, in_format='corner', out_format='corner'):
    """Greedy NMS by definition, per batch: (output, the input row of each output row)."""
    shape = data.shape
    x = data.reshape(-1, shape[-2], shape[-1]).astype('f8')
    out = -np.ones_like(x)
    rec = -np.ones(x.shape[:2], np.int64)
    n = x.shape[1]
    k = n if topk < 0 else min(n, topk)
    for b in range(x.shape[0]):
        ok = [i for i in range(n) if x[b, i, score] > valid and (cid < 0 or x[b, i, cid] != bid)]
        ok = sorted(ok, key=lambda i: -x[b, i, score])[:k]
        boxes = x[b, :, coord:coord + 4]
        if in_format == 'center':
            boxes = np.concatenate([boxes[:, :2] - boxes[:, 2:] / 2,
                                    boxes[:, :2] + boxes[:, 2:] / 2], -1)
        keep = []
        for i in ok:
            if all(not (force or cid < 0 or x[b, i, cid] == x[b, j, cid]) or
                   iou_ref(boxes[i:i + 1], boxes[j:j + 1])[0, 0] <= thresh for j in keep):
                keep.append(i)
        for r, i in enumerate(keep):
            out[b, r] = x[b, i]
            rec[b, r] = b * n + i
            if in_format != out_format:
                c = out[b, r, coord:coord + 4]
                c[:] = to_center(c) if out_format == 'center' else np.concatenate(
                    [c[:2] - c[2:] / 2, c[:2] + c[2:] / 2])
    return out.reshape(shape), rec


def detections(batch, n, seed=0, ncls=3):
    r = np.random.RandomState(seed)
    ids = r.randint(0, ncls, (batch, n, 1))
    scores = (r.permutation(batch * n).reshape(batch, n, 1) + 1.0) / (batch * n + 1)
    centre = r.uniform(2, 4, (batch, n, 2))
    half = r.uniform(0.5, 1.5, (batch, n, 2))
    return np.concatenate([ids, scores, centre - half, centre + half], -1)


NMS_SETTINGS = [
    {}, {'thresh': 0.3}, {'thresh': 0.3, 'cid': 0}, {'thresh': 0.3, 'cid': 0, 'force': True},
    {'thresh': 0.4, 'valid': 0.3, 'topk': 4}, {'thresh': 0.4, 'cid': 0, 'bid': 1},
    {'thresh': 0.25, 'out_format': 'center'}, {'topk': 0},
]
NMS_KW = {'thresh': 'overlap_thresh', 'valid': 'valid_thresh', 'topk': 'topk', 'cid': 'id_index',
          'bid': 'background_id', 'force': 'force_suppress', 'in_format': 'in_format',
          'out_format': 'out_format'}


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('setting', range(len(NMS_SETTINGS)))
@pytest.mark.parametrize('lead', [(1,), (3,), (2, 2)])
def test_box_nms(dtype, setting, lead):
    kw = NMS_SETTINGS[setting]
    data = detections(int(np.prod(lead)), 7, seed=setting).reshape(lead + (7, 6))
    data = data.astype(dtype).astype('f8')
    y = nd.contrib.box_nms(nd.array(data, dtype=dtype), **{NMS_KW[k]: v for k, v in kw.items()})
    assert y.dtype == np.dtype(dtype) and y.shape == data.shape
    if kw.get('topk') == 0:   # MXNet: nothing to do, the input comes back
        np.testing.assert_array_equal(y.asnumpy(), data.astype(dtype))
        return
    ref, _ = nms_ref(data, **kw)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])


def test_box_nms_center_input_and_other_columns():
    data = detections(2, 6, seed=5)
    cen = data.copy()
    cen[..., 2:] = to_center(data[..., 2:])
    ref, _ = nms_ref(data, thresh=0.3)
    y = nd.contrib.box_nms(nd.array(cen, dtype='float64'), overlap_thresh=0.3, in_format='center',
                           out_format='corner')
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-12, atol=1e-12)
    # coordinates first, then score, then class id
    moved = np.concatenate([data[..., 2:], data[..., 1:2], data[..., 0:1]], -1)
    ref2, _ = nms_ref(moved, thresh=0.3, coord=0, score=4, cid=5)
    y2 = nd.contrib.box_nms(nd.array(moved, dtype='float64'), overlap_thresh=0.3, coord_start=0,
                            score_index=4, id_index=5)
    np.testing.assert_allclose(y2.asnumpy(), ref2, rtol=1e-12, atol=1e-12)


def test_box_nms_hand_worked():
    """Two overlapping boxes of one class and a far one: the lower-scored neighbour goes, the
    rest come sorted by score, then rows of -1."""
    data = np.array([[0, 0.6, 0, 0, 2, 2], [0, 0.9, 0.1, 0.1, 2, 2], [1, 0.7, 5, 5, 6, 6],
                     [0, 0.05, 9, 9, 10, 10]], 'f4')
    y = nd.contrib.box_nms(nd.array(data), overlap_thresh=0.5, valid_thresh=0.1).asnumpy()
    np.testing.assert_allclose(y, [data[1], data[2], [-1] * 6, [-1] * 6])


def test_box_nms_gradient_follows_the_record():
    data = detections(2, 6, seed=3)
    _, rec = nms_ref(data, thresh=0.3)
    x = nd.array(data, dtype='float64')
    x.attach_grad()
    hg = np.random.RandomState(0).standard_normal(data.shape)
    with mx.autograd.record():
        y = nd.contrib.box_nms(x, overlap_thresh=0.3)
    y.backward(nd.array(hg, dtype='float64'))
    want = np.zeros((12, 6))
    for i, src in enumerate(rec.reshape(-1)):
        if src >= 0:
            want[src] = hg.reshape(-1, 6)[i]
    np.testing.assert_array_equal(x.grad.asnumpy(), want.reshape(data.shape))


def test_backward_box_nms_routes_rows():
    """The backward op alone: output row i's gradient goes to input row record[i]; -1 rows
    and records out of range give nothing; rows nobody copied get zero."""
    bw = mx._core.get_op('_backward_contrib_box_nms')
    dy = np.arange(24, dtype='f4').reshape(1, 4, 6)
    rec = np.array([[[2], [0], [-1], [7]]], 'f4')
    dx = bw(nd.array(dy), nd.array(rec)).asnumpy()
    want = np.zeros_like(dy)
    want[0, 2], want[0, 0] = dy[0, 0], dy[0, 1]
    np.testing.assert_array_equal(dx, want)
    with pytest.raises(mx.MXNetError, match='do not match'):
        bw(nd.array(dy), nd.zeros((1, 3, 1)))


def test_box_nms_alias_and_hidden_output():
    data = nd.array(detections(1, 4))
    a = nd.contrib.box_nms(data)
    b = nd.contrib.box_non_maximum_suppression(data)
    assert not isinstance(a, (list, tuple))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert len(mx.sym.contrib.box_nms(mx.sym.var('d')).list_outputs()) == 1


@pytest.mark.parametrize('kw,match', [
    ({}, 'at least 5'), ({'id_index': 0, 'coord_start': 0}, 'conflicts'),
    ({'score_index': 9}, 'out of range'), ({'coord_start': 3}, 'out of range'),
    ({'id_index': 1}, 'conflicts with score_index')])
def test_box_nms_errors(kw, match):
    width = 4 if not kw else 6
    with pytest.raises(mx.MXNetError, match=match):
        nd.contrib.box_nms(nd.zeros((3, width)), **kw)
    with pytest.raises(mx.MXNetError, match='ndim >= 2'):
        nd.contrib.box_nms(nd.zeros((6,)))


def matching_ref(s, threshold, is_ascend=False, topk=-1):
    lead, (nr, nc) = s.shape[:-2], s.shape[-2:]
    flat = s.reshape(int(np.prod(lead)), nr * nc)
    rows = -np.ones((flat.shape[0], nr))
    cols = -np.ones((flat.shape[0], nc))
    for b, v in enumerate(flat):
        order = np.argsort(v if is_ascend else -v, kind='stable')
        count = 0
        for j in order:
            r, c = divmod(int(j), nc)
            if rows[b, r] != -1 or cols[b, c] != -1:
                continue
            if not (v[j] < threshold if is_ascend else v[j] > threshold):
                break
            rows[b, r], cols[b, c] = c, r
            count += 1
            if 0 < topk < count:   # MXNet's check follows the count: topk + 1 matches
                break
    return rows.reshape(lead + (nr,)), cols.reshape(lead + (nc,))


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(1, 1), (3, 4), (5, 2), (2, 3, 3), (2, 2, 2, 5), (0, 3)])
@pytest.mark.parametrize('kw', [{'threshold': 0.2}, {'threshold': 0.7, 'is_ascend': True},
                                {'threshold': 0.0, 'topk': 1}, {'threshold': 0.5}])
def test_bipartite_matching(dtype, shape, kw):
    size = int(np.prod(shape))
    s = (np.random.RandomState(size).permutation(size).reshape(shape) + 0.5) / max(size, 1)
    s = s.astype(dtype)
    rows, cols = nd.contrib.bipartite_matching(nd.array(s, dtype=dtype), **kw)
    rr, rc = matching_ref(s.astype('f8'), np.float32(kw['threshold']), kw.get('is_ascend', False),
                          kw.get('topk', -1))
    assert rows.dtype == np.dtype(dtype) and rows.shape == shape[:-1]
    assert cols.shape == shape[:-2] + shape[-1:]
    np.testing.assert_array_equal(rows.asnumpy(), rr)
    np.testing.assert_array_equal(cols.asnumpy(), rc)


def test_bipartite_matching_errors():
    with pytest.raises(mx.MXNetError, match='threshold'):
        nd.contrib.bipartite_matching(nd.zeros((2, 2)))
    with pytest.raises(mx.MXNetError, match='ndim >= 2'):
        nd.contrib.bipartite_matching(nd.zeros((3,)), threshold=0.1)


def encode_ref(samples, matches, anchors, refs, means, stds):
    b, n = samples.shape
    t = np.zeros((b, n, 4))
    m = np.zeros((b, n, 4))
    for i in range(b):
        for j in range(n):
            if samples[i, j] <= 0.5:
                continue
            m[i, j] = 1
            a, r = anchors[i, j], refs[i, int(matches[i, j])]
            aw, ah = a[2] - a[0], a[3] - a[1]
            rw, rh = r[2] - r[0], r[3] - r[1]
            t[i, j] = [((r[0] + rw / 2) - (a[0] + aw / 2)) / aw, ((r[1] + rh / 2) -
                       (a[1] + ah / 2)) / ah, np.log(rw / aw), np.log(rh / ah)]
            t[i, j] = (t[i, j] - means) / stds
    return t, m


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('b,n,m', [(1, 1, 1), (2, 5, 3), (3, 4, 6), (2, 0, 3)])
def test_box_encode(dtype, b, n, m):
    r = np.random.RandomState(n * 7 + m)
    samples = r.choice([-1.0, 0.0, 1.0], (b, n))
    matches = r.randint(0, m, (b, n)).astype('f8')
    anchors, refs = corners((b, n), 1), corners((b, m), 2)
    means, stds = np.array([0.1, -0.1, 0.0, 0.2]), np.array([0.1, 0.1, 0.2, 0.2])
    args = [samples, matches, anchors, refs, means, stds]
    args = [a.astype(dtype).astype('f8') for a in args]
    t, msk = nd.contrib.box_encode(*[nd.array(a, dtype=dtype) for a in args])
    rt, rm = encode_ref(*args)
    assert t.shape == (b, n, 4) and t.dtype == np.dtype(dtype)
    tol = dict(rtol=5e-2, atol=5e-2) if dtype == 'float16' else TOL[dtype]
    np.testing.assert_allclose(t.asnumpy().astype('f8'), rt, **tol)
    np.testing.assert_array_equal(msk.asnumpy(), rm)


def test_box_encode_errors():
    a = nd.array(corners((1, 2), 0))
    ok = [nd.array([[1, 1]]), nd.array([[0, 1]]), a, a, nd.zeros(4), nd.ones(4)]
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.contrib.box_encode(ok[0], nd.array([[0, 5]]), *ok[2:])
    with pytest.raises(mx.MXNetError, match='means'):
        nd.contrib.box_encode(*ok[:4], nd.zeros(3), ok[5])
    with pytest.raises(mx.MXNetError, match='samples'):
        nd.contrib.box_encode(nd.ones((1, 3)), *ok[1:])
    with pytest.raises(mx.MXNetError, match='anchors'):
        nd.contrib.box_encode(*ok[:2], nd.zeros((1, 2, 5)), *ok[3:])


def decode_ref(x, anchors, stds, clip, fmt):
    a = anchors.reshape(-1, 4)
    if fmt == 'corner':
        a = to_center(a)
    ox = x[..., 0] * stds[0] * a[:, 2] + a[:, 0]
    oy = x[..., 1] * stds[1] * a[:, 3] + a[:, 1]
    dw, dh = x[..., 2] * stds[2], x[..., 3] * stds[3]
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    ow, oh = np.exp(dw) * a[:, 2] / 2, np.exp(dh) * a[:, 3] / 2
    return np.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('b,n', [(1, 1), (2, 4), (3, 0)])
@pytest.mark.parametrize('fmt,clip', [('center', -1.0), ('corner', -1.0), ('corner', 0.3),
                                      ('center', 0.5)])
def test_box_decode(dtype, b, n, fmt, clip):
    r = np.random.RandomState(b * 10 + n)
    x = r.uniform(-1, 1, (b, n, 4)).astype(dtype).astype('f8')
    anchors = corners((1, n), 3)
    if fmt == 'center':
        anchors = to_center(anchors)
    anchors = anchors.astype(dtype).astype('f8')
    stds = (0.1, 0.1, 0.2, 0.2)
    y = nd.contrib.box_decode(nd.array(x, dtype=dtype), nd.array(anchors, dtype=dtype), *stds,
                              clip=clip, format=fmt)
    ref = decode_ref(x, anchors, np.float32(stds).astype('f8'), np.float32(clip), fmt)
    assert y.shape == (b, n, 4) and y.dtype == np.dtype(dtype)
    tol = dict(rtol=1e-2, atol=5e-2) if dtype == 'float16' else TOL[dtype]
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **tol)


def test_box_decode_errors():
    with pytest.raises(mx.MXNetError, match='data must have shape'):
        nd.contrib.box_decode(nd.zeros((2, 4)), nd.zeros((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match='anchors must have shape'):
        nd.contrib.box_decode(nd.zeros((1, 3, 4)), nd.zeros((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd.contrib.box_decode(nd.zeros((1, 2, 4)), nd.zeros((1, 2, 4), dtype='float64'))


# ---- MultiBox ----------------------------------------------------------------------------------

def prior_ref(h, w, sizes, ratios, clip=False, steps=(-1, -1), offsets=(0.5, 0.5)):
    sy, sx = steps if steps[0] > 0 and steps[1] > 0 else (1.0 / h, 1.0 / w)
    shapes = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    out = []
    for r in range(h):
        for c in range(w):
            cy, cx = (r + offsets[0]) * sy, (c + offsets[1]) * sx
            for size, ratio in shapes:
                bw = size * h / w * np.sqrt(ratio) / 2
                bh = size / np.sqrt(ratio) / 2
                out.append([cx - bw, cy - bh, cx + bw, cy + bh])
    out = np.array(out).reshape(1, -1, 4)
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize('hw', [(1, 1), (3, 5), (4, 4)])
@pytest.mark.parametrize('kw', [{}, {'sizes': (0.5, 0.25), 'ratios': (1, 2, 0.5)},
                                {'sizes': (0.9,), 'ratios': (4,), 'clip': True},
                                {'sizes': [0.3, 0.2], 'steps': (0.1, 0.2), 'offsets': (0, 1)}])
def test_multibox_prior(hw, kw):
    x = nd.zeros((2, 3) + hw)
    y = nd.contrib.MultiBoxPrior(x, **kw)
    ref = prior_ref(*hw, kw.get('sizes', (1,)), kw.get('ratios', (1,)), kw.get('clip', False),
                    kw.get('steps', (-1, -1)), kw.get('offsets', (0.5, 0.5)))
    assert y.shape == ref.shape and y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_multibox_prior_errors():
    x = nd.zeros((1, 1, 2, 2))
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 2, 2)))
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 0, 2)))
    with pytest.raises(mx.MXNetError, match='float32'):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2), dtype='float64'))
    with pytest.raises(mx.MXNetError, match='steps'):
        nd.contrib.MultiBoxPrior(x, steps=(0.1, -1))
    with pytest.raises(mx.MXNetError, match='offsets'):
        nd.contrib.MultiBoxPrior(x, offsets=(0.5, 1.5))
    with pytest.raises(mx.MXNetError, match='sizes'):
        nd.contrib.MultiBoxPrior(x, sizes='(a, b)')
    with pytest.raises(mx.MXNetError, match='at least one'):
        nd.contrib.MultiBoxPrior(x, ratios=())


def _iou_raw(a, g):
    """MultiBoxTarget's overlap: no clipping of box sizes, 0 where the union is 0."""
    iw = max(0.0, min(a[2], g[2]) - max(a[0], g[0]))
    ih = max(0.0, min(a[3], g[3]) - max(a[1], g[1]))
    inter = iw * ih
    uni = (a[2] - a[0]) * (a[3] - a[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter
    return 0.0 if uni == 0 else inter / uni


def target_ref(anchors, labels, preds, overlap_threshold=0.5, ignore_label=-1,
               negative_mining_ratio=-1, negative_mining_thresh=0.5,
               variances=(0.1, 0.1, 0.2, 0.2)):
    """SSD target assignment by its definition: every ground truth first takes its best free
    anchor (best pair overall first), then anchors above the threshold take their best ground
    truth; negatives are the rest, or (mining) the ones least sure of the background class."""
    an = anchors.reshape(-1, 4)
    n = len(an)
    b = labels.shape[0]
    loc, mask = np.zeros((b, n * 4)), np.zeros((b, n * 4))
    cls = np.full((b, n), float(ignore_label))
    for i in range(b):
        gts = []
        for row in labels[i]:
            if row[0] == -1:
                break
            gts.append(row)
        if not gts:
            continue
        iou = np.array([[_iou_raw(a, g[1:5]) for g in gts] for a in an])
        match, flag, best = [-1] * n, [-1] * n, [-1.0] * n
        free = set(range(len(gts)))
        while free:
            cand = [(iou[j, k], -j, -k) for j in range(n) if flag[j] != 1 for k in free
                    if iou[j, k] > 1e-6]
            if not cand:
                break
            v, j, k = max(cand)   # first (j, k) of the highest IoU in scan order
            match[-j], flag[-j], best[-j] = -k, 1, v
            free.discard(-k)
        npos = flag.count(1)
        if overlap_threshold > 0:
            for j in range(n):
                if flag[j] != 1:
                    match[j], best[j] = int(np.argmax(iou[j])), iou[j].max()
                    if best[j] > overlap_threshold:
                        flag[j] = 1
                        npos += 1
        if negative_mining_ratio > 0:
            nneg = min(int(npos * negative_mining_ratio), n - npos)
            cand = []
            for j in range(n):
                if flag[j] == 1:
                    continue
                if best[j] < 0:
                    best[j] = iou[j].max()
                if best[j] < negative_mining_thresh:
                    p = np.exp(preds[i, :, j] - preds[i, :, j].max())
                    cand.append((p[0] / p.sum(), j))
            for _, j in sorted(cand)[:max(nneg, 0)]:
                flag[j] = 0
        else:
            flag = [f if f == 1 else 0 for f in flag]
        for j in range(n):
            if flag[j] == 1:
                g = gts[match[j]]
                cls[i, j] = g[0] + 1
                mask[i, 4 * j:4 * j + 4] = 1
                a = an[j]
                aw, ah = a[2] - a[0], a[3] - a[1]
                gw, gh = g[3] - g[1], g[4] - g[2]
                loc[i, 4 * j:4 * j + 4] = [
                    ((g[1] + g[3]) / 2 - (a[0] + a[2]) / 2) / aw / variances[0],
                    ((g[2] + g[4]) / 2 - (a[1] + a[3]) / 2) / ah / variances[1],
                    np.log(gw / aw) / variances[2], np.log(gh / ah) / variances[3]]
            elif flag[j] == 0:
                cls[i, j] = 0
    return loc, mask, cls


def grid_anchors(k=4):
    out = []
    for j in range(k * k):
        cy, cx = (j // k + 0.5) / k, (j % k + 0.5) / k
        half = 0.1 + 0.05 * (j % 3)
        out.append([cx - half, cy - half, cx + half, cy + half])
    return np.array(out, 'f4').reshape(1, -1, 4)


@pytest.mark.parametrize('kw', [
    {}, {'overlap_threshold': 0.3}, {'overlap_threshold': 0.0},
    {'negative_mining_ratio': 2, 'negative_mining_thresh': 0.4, 'ignore_label': -3},
    {'negative_mining_ratio': 1.5, 'variances': (0.2, 0.2, 0.5, 0.5)}])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_multibox_target(kw, seed):
    r = np.random.RandomState(seed)
    anchors = grid_anchors()
    labels = -np.ones((3, 4, 6), 'f4')
    for i, ng in enumerate([3, 1, 0]):
        for k in range(ng):
            xy = r.uniform(0, 0.6, 2)
            wh = r.uniform(0.15, 0.4, 2)
            labels[i, k, :5] = [r.randint(0, 4), *xy, *(xy + wh)]
    preds = r.standard_normal((3, 5, 16)).astype('f4')
    loc, mask, cls = nd.contrib.MultiBoxTarget(nd.array(anchors), nd.array(labels),
                                               nd.array(preds), **kw)
    rl, rm, rc = target_ref(anchors.astype('f8'), labels.astype('f8'), preds.astype('f8'), **kw)
    np.testing.assert_array_equal(cls.asnumpy(), rc)
    np.testing.assert_array_equal(mask.asnumpy(), rm)
    np.testing.assert_allclose(loc.asnumpy(), rl, rtol=1e-4, atol=1e-5)
    assert (rc[0] > 0).sum() >= 1                             # the case has positives
    assert (rc[2] == kw.get('ignore_label', -1)).all()        # an image without labels


def test_multibox_target_hand_worked():
    """One ground truth exactly on anchor 1: that anchor is positive with zero offsets and log
    sizes, its class is the label's + 1; the other anchor is background."""
    anchors = np.array([[[0.0, 0.0, 0.2, 0.2], [0.5, 0.5, 0.9, 0.7]]], 'f4')
    labels = np.array([[[2, 0.5, 0.5, 0.9, 0.7], [-1, -1, -1, -1, -1]]], 'f4')
    loc, mask, cls = nd.contrib.MultiBoxTarget(nd.array(anchors), nd.array(labels),
                                               nd.zeros((1, 3, 2)))
    np.testing.assert_allclose(loc.asnumpy(), np.zeros((1, 8)), atol=1e-6)
    np.testing.assert_array_equal(mask.asnumpy(), [[0, 0, 0, 0, 1, 1, 1, 1]])
    np.testing.assert_array_equal(cls.asnumpy(), [[0, 3]])


def test_multibox_target_errors():
    a = nd.array(grid_anchors(2))
    lab = nd.array([[[0, 0.1, 0.1, 0.3, 0.3]]])
    with pytest.raises(mx.MXNetError, match='anchor must have shape'):
        nd.contrib.MultiBoxTarget(nd.zeros((2, 4, 4)), lab, nd.zeros((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match='label must have shape'):
        nd.contrib.MultiBoxTarget(a, nd.zeros((1, 2, 4)), nd.zeros((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match='cls_pred must have shape'):
        nd.contrib.MultiBoxTarget(a, lab, nd.zeros((1, 2, 3)))
    with pytest.raises(mx.MXNetError, match='variances'):
        nd.contrib.MultiBoxTarget(a, lab, nd.zeros((1, 2, 4)), variances=(0.1, 0.1))
    with pytest.raises(mx.MXNetError, match='padding label row'):
        nd.contrib.MultiBoxTarget(a, nd.array([[[-1, 0.1, -1, -1, -1]]]), nd.zeros((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match='float32'):
        nd.contrib.MultiBoxTarget(a.astype('float64'), lab.astype('float64'),
                                  nd.zeros((1, 2, 4), dtype='float64'))


# ---- index ops ---------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape', [(1,), (4,), (3, 9), (2, 3, 5), (0, 4)])
def test_div_sqrt_dim(dtype, shape):
    x = rand(shape, dtype, lo=-20, hi=20)
    y = nd.contrib.div_sqrt_dim(nd.array(x, dtype=dtype))
    d = shape[-1]
    if np.dtype(dtype).kind in 'iu':   # MXNet: integer division by the integer root
        ref = np.trunc(x.astype('f8') / int(np.sqrt(d))).astype(dtype)
        np.testing.assert_array_equal(y.asnumpy(), ref)
    else:
        np.testing.assert_allclose(y.asnumpy().astype('f8'), x.astype('f8') / np.sqrt(d),
                                   **TOL[dtype])
    assert y.dtype == np.dtype(dtype)


def test_div_sqrt_dim_errors():
    with pytest.raises(mx.MXNetError, match='bool'):
        nd.contrib.div_sqrt_dim(nd.zeros((2, 2), dtype='bool'))


@pytest.mark.parametrize('shape', [(1,), (5,), (2, 3), (3, 1, 4), (2, 2, 2, 3), (0, 3)])
@pytest.mark.parametrize('axes', [None, (0,), (-1,), 'rev'])
def test_index_array(shape, axes):
    if axes == 'rev':
        axes = tuple(range(len(shape) - 1, -1, -1))
    kw = {} if axes is None else {'axes': axes}
    y = nd.contrib.index_array(nd.zeros(shape, dtype='float16'), **kw)
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing='ij'), -1)
    ref = grid if axes is None else grid[..., list(axes)]
    assert y.dtype == np.int64 and y.shape == ref.shape
    np.testing.assert_array_equal(y.asnumpy(), ref)


def test_index_array_errors():
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.contrib.index_array(nd.zeros((2, 3)), axes=(2,))
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.contrib.index_array(nd.zeros((2, 3)), axes=(-3,))


@pytest.mark.parametrize('dtype', ALL + ['bool'])
@pytest.mark.parametrize('shape,idx', [((1,), [0]), ((5,), [4, 1]), ((4, 3), [2, 0, 3]),
                                       ((3, 2, 2), []), ((6, 1, 2), [5, 5, 0])])
@pytest.mark.parametrize('idx_dtype', ['float32', 'int64'])
def test_index_copy(dtype, shape, idx, idx_dtype):
    old = rand(shape, dtype) if dtype != 'bool' else np.zeros(shape, bool)
    new = rand((len(idx),) + shape[1:], dtype, seed=1) if dtype != 'bool' else \
        np.ones((len(idx),) + shape[1:], bool)
    y = nd.contrib.index_copy(nd.array(old, dtype=dtype), nd.array(idx, dtype=idx_dtype),
                              nd.array(new, dtype=dtype))
    ref = old.copy()
    for i, j in enumerate(idx):   # later rows win, as in MXNet's sequential copy
        ref[j] = new[i]
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), ref)


def test_index_copy_errors():
    old, new = nd.zeros((3, 2)), nd.ones((2, 2))
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.contrib.index_copy(old, nd.array([0, 3]), new)
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd.contrib.index_copy(old, nd.array([-1, 0]), new)
    with pytest.raises(mx.MXNetError, match='trailing'):
        nd.contrib.index_copy(old, nd.array([0, 1]), nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='trailing'):
        nd.contrib.index_copy(old, nd.array([0]), new)
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd.contrib.index_copy(old, nd.array([0, 1]), nd.ones((2, 2), dtype='float64'))


@pytest.mark.parametrize('dtype', FLOATS + ['int32', 'uint8'])
@pytest.mark.parametrize('shape', [(1,), (3, 4), (0,), (2, 1, 3)])
def test_allclose(dtype, shape):
    a = rand(shape, dtype)
    for b, kw in [(a, {}), (a.astype('f8') + 1, {}), (a.astype('f8') + 1, {'atol': 1.5}),
                  (a.astype('f8') * 1.5, {'rtol': 0.6, 'atol': 0.0})]:
        b = b.astype(dtype)
        y = nd.contrib.allclose(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype), **kw)
        af, bf = a.astype('f8'), b.astype('f8')
        rtol = np.float32(kw.get('rtol', 1e-5))
        atol = np.float32(kw.get('atol', 1e-8))
        ref = bool(np.all(np.abs(af - bf) <= atol + rtol * np.abs(bf)))
        assert y.shape == () and y.dtype == np.uint8
        assert int(y.asnumpy()) == int(ref)


@pytest.mark.parametrize('dtype', ALL)
@pytest.mark.parametrize('shape,axis', [((4,), None), ((2, 3), None), ((2, 3), 1), ((2, 5, 3), -2),
                                        ((0, 3), None), ((0, 3), 1)])
@pytest.mark.parametrize('kw', [{}, {'start': 2.0, 'step': 3.0, 'repeat': 2},
                                {'start': 1.5, 'step': 0.25}])
def test_arange_like(dtype, shape, axis, kw):
    x = nd.zeros(shape, dtype=dtype)
    y = nd.contrib.arange_like(x, axis=axis, **kw)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    start, step, rep = kw.get('start', 0.0), kw.get('step', 1.0), kw.get('repeat', 1)
    if np.dtype(dtype).kind in 'iu':   # start and step cast to the integer dtype first
        start, step = int(start), int(step)
    ref = (start + (np.arange(n) // rep) * step).astype(dtype)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), ref.reshape(shape if axis is None else (n,)))


def test_arange_like_errors():
    with pytest.raises(mx.MXNetError, match='axis'):
        nd.contrib.arange_like(nd.zeros((2, 3)), axis=2)
    with pytest.raises(mx.MXNetError, match='repeat'):
        nd.contrib.arange_like(nd.zeros((2, 3)), repeat=0)


def test_allclose_nan():
    a = nd.array([1.0, np.nan])
    assert int(nd.contrib.allclose(a, a).asnumpy()) == 1
    assert int(nd.contrib.allclose(a, a, equal_nan=False).asnumpy()) == 0
    assert int(nd.contrib.allclose(a, nd.array([1.0, 2.0])).asnumpy()) == 0
    with pytest.raises(mx.MXNetError, match='same shape'):
        nd.contrib.allclose(nd.zeros(2), nd.zeros(3))


# ---- interleaved attention matmuls -------------------------------------------------------------

def heads_of(x, heads, parts, part):
    """(L, B, heads * parts * D) -> (B * heads, L, D): one part of every head."""
    L, B, E = x.shape
    d = E // (heads * parts)
    t = x.reshape(L, B, heads, parts, d)[:, :, :, part, :]
    return t.transpose(1, 2, 0, 3).reshape(B * heads, L, d)


def merge_heads(o, heads):
    """(B * heads, L, D) -> (L, B, heads * D)."""
    bh, L, d = o.shape
    return o.reshape(bh // heads, heads, L, d).transpose(2, 0, 1, 3).reshape(L, bh // heads,
                                                                             heads * d)


def attention_refs(qkv, att, q, kv, att2, h):
    d = qkv.shape[2] // (3 * h)
    qq, kk, vv = (heads_of(qkv, h, 3, p) for p in range(3))
    return {
        'selfatt_qk': qq @ kk.transpose(0, 2, 1) / np.sqrt(d),
        'selfatt_valatt': merge_heads(att @ vv, h),
        'encdec_qk': heads_of(q, h, 1, 0) @ heads_of(kv, h, 2, 0).transpose(0, 2, 1) / np.sqrt(d),
        'encdec_valatt': merge_heads(att2 @ heads_of(kv, h, 2, 1), h),
    }


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('L,B,H,D,Lk', [(1, 1, 1, 1, 1), (3, 2, 2, 4, 5), (4, 1, 3, 2, 2),
                                        (2, 3, 1, 8, 6), (0, 2, 2, 2, 3)])
def test_interleaved_matmuls(dtype, L, B, H, D, Lk):
    r = np.random.RandomState(L * 100 + D)
    qkv, q = r.randn(L, B, H * 3 * D), r.randn(L, B, H * D)
    kv, att, att2 = r.randn(Lk, B, H * 2 * D), r.randn(B * H, L, L), r.randn(B * H, L, Lk)
    refs = attention_refs(qkv, att, q, kv, att2, H)
    args = {'selfatt_qk': [qkv], 'selfatt_valatt': [qkv, att], 'encdec_qk': [q, kv],
            'encdec_valatt': [kv, att2]}
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == 'float32' else dict(rtol=1e-12, atol=1e-12)
    for name, xs in args.items():
        f = getattr(nd.contrib, 'interleaved_matmul_' + name)
        y = f(*[nd.array(x, dtype=dtype) for x in xs], heads=H)
        assert y.dtype == np.dtype(dtype) and y.shape == refs[name].shape, name
        np.testing.assert_allclose(y.asnumpy(), refs[name], err_msg=name, **tol)


def test_interleaved_backward_ops_directly():
    """The _backward_ ops on their own: gradients of sum(dy * f(x)) by the NumPy definition."""
    r = np.random.RandomState(0)
    H, D = 2, 3
    qkv, att = r.randn(2, 1, H * 3 * D), r.randn(H, 2, 2)
    dy = r.randn(H, 2, 2)
    dqkv = mx._core.get_op('_backward_interleaved_matmul_selfatt_qk')(
        nd.array(dy, dtype='float64'), nd.array(qkv, dtype='float64'), heads=H).asnumpy()
    qq, kk = heads_of(qkv, H, 3, 0), heads_of(qkv, H, 3, 1)
    want = np.zeros((2, 1, H, 3, D))
    gq, gk = dy @ kk / np.sqrt(D), dy.transpose(0, 2, 1) @ qq / np.sqrt(D)
    want[:, :, :, 0, :] = gq.reshape(1, H, 2, D).transpose(2, 0, 1, 3)
    want[:, :, :, 1, :] = gk.reshape(1, H, 2, D).transpose(2, 0, 1, 3)
    np.testing.assert_allclose(dqkv, want.reshape(qkv.shape), rtol=1e-12, atol=1e-12)
    dout = r.randn(2, 1, H * D)
    dqkv2, datt = mx._core.get_op('_backward_interleaved_matmul_selfatt_valatt')(
        nd.array(dout, dtype='float64'), nd.array(qkv, dtype='float64'),
        nd.array(att, dtype='float64'), heads=H)
    g = heads_of(dout, H, 1, 0)
    np.testing.assert_allclose(datt.asnumpy(), g @ heads_of(qkv, H, 3, 2).transpose(0, 2, 1),
                               rtol=1e-12)
    want = np.zeros((2, 1, H, 3, D))
    want[:, :, :, 2, :] = (att.transpose(0, 2, 1) @ g).reshape(1, H, 2, D).transpose(2, 0, 1, 3)
    np.testing.assert_allclose(dqkv2.asnumpy(), want.reshape(qkv.shape), rtol=1e-12, atol=1e-12)
    for name in ['encdec_qk', 'encdec_valatt']:   # shapes follow the forward inputs
        bw = mx._core.get_op('_backward_interleaved_matmul_' + name)
        a = nd.zeros((2, 1, H * D)) if name == 'encdec_qk' else nd.zeros((3, 1, H * 2 * D))
        b = nd.zeros((3, 1, H * 2 * D)) if name == 'encdec_qk' else nd.zeros((H, 2, 3))
        dy = nd.zeros((H, 2, 3)) if name == 'encdec_qk' else nd.zeros((2, 1, H * D))
        ga, gb = bw(dy, a, b, heads=H)
        assert ga.shape == a.shape and gb.shape == b.shape


@pytest.mark.parametrize('name,shapes,match', [
    ('selfatt_qk', [(2, 1, 10)], 'heads \\* 3'),
    ('selfatt_qk', [(2, 10)], '3-D'),
    ('selfatt_valatt', [(2, 1, 12), (2, 3, 2)], 'attention must have shape'),
    ('encdec_qk', [(2, 1, 4), (3, 1, 12)], 'head_dim'),
    ('encdec_qk', [(2, 1, 4), (3, 2, 8)], 'batch'),
    ('encdec_valatt', [(3, 1, 8), (2, 2, 4)], 'attention must have shape')])
def test_interleaved_errors(name, shapes, match):
    f = getattr(nd.contrib, 'interleaved_matmul_' + name)
    with pytest.raises(mx.MXNetError, match=match):
        f(*[nd.zeros(sh) for sh in shapes], heads=2)


def test_interleaved_dtype_errors():
    with pytest.raises(mx.MXNetError, match='float32 or float64'):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.zeros((2, 1, 12), dtype='float16'), heads=2)
    with pytest.raises(mx.MXNetError, match='heads'):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.zeros((2, 1, 12)))


# ---- resampling --------------------------------------------------------------------------------

def adaptive_ref(x, oh, ow):
    n, c, h, w = x.shape
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        h0, h1 = int(np.floor(i * h / oh)), int(np.ceil((i + 1) * h / oh))
        for j in range(ow):
            w0, w1 = int(np.floor(j * w / ow)), int(np.ceil((j + 1) * w / ow))
            y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape,size,out', [
    ((2, 3, 7, 5), (3, 2), (3, 2)), ((1, 1, 4, 4), 4, (4, 4)), ((1, 2, 3, 5), (), (1, 1)),
    ((2, 1, 2, 3), 5, (5, 5)), ((0, 2, 4, 4), 2, (2, 2))])
def test_adaptive_avg_pooling(dtype, shape, size, out):
    x = rand(shape, dtype)
    kw = {} if size == () else {'output_size': size}
    y = nd.contrib.AdaptiveAvgPooling2D(nd.array(x, dtype=dtype), **kw)
    assert y.shape == shape[:2] + out and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), adaptive_ref(x.astype('f8'), *out),
                               **TOL[dtype])


def bilinear_ref(x, oh, ow, align=True):
    """Bilinear interpolation by definition, source coordinates in float32 as MXNet's."""
    n, c, h, w = x.shape
    if (h, w) == (oh, ow):
        return x.copy()

    def taps(src, dst):
        out = []
        for i in range(dst):
            if dst > 1:
                scale = np.float32(src - 1) / np.float32(dst - 1) if align else \
                    np.float32(src) / np.float32(dst)
            else:
                scale = np.float32(0)
            r = scale * np.float32(i) if align else \
                max(np.float32(0), scale * (np.float32(i) + np.float32(0.5)) - np.float32(0.5))
            i0 = int(r)
            out.append((i0, min(i0 + 1, src - 1), float(r - np.float32(i0))))
        return out
    y = np.zeros((n, c, oh, ow))
    for i, (a0, a1, la) in enumerate(taps(h, oh)):
        for j, (b0, b1, lb) in enumerate(taps(w, ow)):
            y[:, :, i, j] = ((1 - la) * ((1 - lb) * x[:, :, a0, b0] + lb * x[:, :, a0, b1]) +
                             la * ((1 - lb) * x[:, :, a1, b0] + lb * x[:, :, a1, b1]))
    return y


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('align', [True, False])
@pytest.mark.parametrize('shape,oh,ow', [
    ((1, 2, 3, 4), 5, 7), ((2, 1, 5, 4), 3, 6), ((1, 1, 1, 1), 3, 2), ((1, 1, 4, 4), 1, 1),
    ((1, 2, 3, 3), 3, 3)])
def test_bilinear_resize(dtype, align, shape, oh, ow):
    x = rand(shape, dtype)
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype=dtype), height=oh, width=ow,
                                    align_corners=align)
    assert y.shape == shape[:2] + (oh, ow) and y.dtype == np.dtype(dtype)
    ref = bilinear_ref(x.astype('f8'), oh, ow, align)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])


@pytest.mark.parametrize('mode,hw,want', [
    ('to_even_down', (5, 4), (4, 4)), ('to_even_up', (5, 4), (6, 4)),
    ('to_odd_down', (5, 4), (5, 3)), ('to_odd_up', (5, 4), (5, 5))])
def test_bilinear_resize_parity_modes(mode, hw, want):
    x = rand((1, 2) + hw, 'float64')
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype='float64'), mode=mode)
    np.testing.assert_allclose(y.asnumpy(), bilinear_ref(x, *want), rtol=1e-12, atol=1e-12)


def test_bilinear_resize_scales_and_like():
    x = rand((1, 1, 4, 6), 'float64')
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype='float64'), scale_height=1.5, scale_width=0.5)
    np.testing.assert_allclose(y.asnumpy(), bilinear_ref(x, 6, 3), rtol=1e-12, atol=1e-12)
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype='float64'), scale_height=2.0, scale_width=1.5,
                                    mode='odd_scale')
    assert y.shape == (1, 1, 8, 9)       # even sizes scale, odd ones scale (n - 1) and add one
    like = nd.zeros((1, 1, 7, 2))
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype='float64'), like.astype('float64'),
                                    mode='like')
    np.testing.assert_allclose(y.asnumpy(), bilinear_ref(x, 7, 2), rtol=1e-12, atol=1e-12)
    s = mx.sym.contrib.BilinearResize2D(mx.sym.var('d'), None, height=3, width=3)
    assert s.list_arguments() == ['d']


def test_resize_errors():
    x = nd.zeros((1, 1, 4, 4))
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.contrib.BilinearResize2D(nd.zeros((4, 4)), height=2, width=2)
    with pytest.raises(mx.MXNetError, match='scale_height and scale_width'):
        nd.contrib.BilinearResize2D(x, mode='odd_scale')
    with pytest.raises(mx.MXNetError, match='resize to'):
        nd.contrib.BilinearResize2D(x, scale_height=0.1, scale_width=0.1)
    with pytest.raises(mx.MXNetError, match='float'):
        nd.contrib.BilinearResize2D(nd.zeros((1, 1, 2, 2), dtype='int32'), height=3, width=3)
    with pytest.raises(mx.MXNetError, match='output_size'):
        nd.contrib.AdaptiveAvgPooling2D(x, output_size=(0, 2))
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.contrib.AdaptiveAvgPooling2D(nd.zeros((2, 4, 4)), output_size=2)


def test_resize_backward_ops_directly():
    """The _backward_ ops alone: the adjoint of the forward (<dy, f(x)> = <f^T(dy), x>)."""
    r = np.random.RandomState(0)
    x, dy = r.randn(2, 3, 5, 4), r.randn(2, 3, 3, 6)
    for fwd, bw, kw in [('_contrib_AdaptiveAvgPooling2D', '_backward_contrib_AdaptiveAvgPooling2D',
                         {'output_size': (3, 6)}),
                        ('_contrib_BilinearResize2D', '_backward_contrib_BilinearResize2D',
                         {'height': 3, 'width': 6, 'align_corners': False})]:
        y = mx._core.get_op(fwd)(nd.array(x, dtype='float64'), **kw).asnumpy()
        dx = mx._core.get_op(bw)(nd.array(dy, dtype='float64'), nd.array(x, dtype='float64'),
                                 **kw).asnumpy()
        assert dx.shape == x.shape
        np.testing.assert_allclose((dy * y).sum(), (dx * x).sum(), rtol=1e-12)


# ---- ROIAlign ----------------------------------------------------------------------------------

def _bilinear_sample(img, y, x):
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] +
            ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def roi_align_ref(data, rois, pooled, scale, sample=-1, ps=False, aligned=False):
    ph, pw = pooled
    n, c, h, w = data.shape
    cout = c // (ph * pw) if ps else c
    out = np.zeros((len(rois), cout, ph, pw))
    for r, roi in enumerate(rois):
        if roi[0] < 0:
            continue
        off = 0.5 if aligned else 0.0
        x1, y1, x2, y2 = roi[1:] * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sample if sample > 0 else int(np.ceil(rh / ph))
        gw = sample if sample > 0 else int(np.ceil(rw / pw))
        for co in range(cout):
            for i in range(ph):
                for j in range(pw):
                    ci = (co * ph + i) * pw + j if ps else co
                    img = data[int(roi[0]), ci]
                    acc = sum(_bilinear_sample(img, y1 + i * bh + (iy + 0.5) * bh / gh,
                                               x1 + j * bw + (ix + 0.5) * bw / gw)
                              for iy in range(gh) for ix in range(gw))
                    out[r, co, i, j] = acc / (gh * gw)
    return out


ROIS = np.array([[0, 1.0, 2.0, 20.0, 14.0], [1, 5.5, 3.2, 9.0, 30.0], [0, -4.0, -2.0, 6.0, 5.0],
                 [1, 25.0, 26.0, 40.0, 41.0], [-1, 0, 0, 4, 4]])


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('kw', [
    {'pooled_size': (2, 3), 'spatial_scale': 0.25},
    {'pooled_size': (3, 2), 'spatial_scale': 0.2, 'sample_ratio': 2, 'aligned': True},
    {'pooled_size': (2, 2), 'spatial_scale': 0.125, 'position_sensitive': True},
    {'pooled_size': (1, 1), 'spatial_scale': 1.0, 'sample_ratio': 1}])
def test_roi_align(dtype, kw):
    data = rand((2, 8, 6, 7), dtype)
    rois = ROIS if not kw.get('aligned') else ROIS[:4]
    y = nd.contrib.ROIAlign(nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype), **kw)
    ref = roi_align_ref(data.astype('f8'), rois.astype(dtype).astype('f8'), kw['pooled_size'],
                        np.float32(kw['spatial_scale']), kw.get('sample_ratio', -1),
                        kw.get('position_sensitive', False), kw.get('aligned', False))
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])


def rroi_align_ref(data, rois, pooled, scale, sample=-1):
    ph, pw = pooled
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        cx, cy, rw, rh = roi[1:5] * scale
        theta = roi[5] * np.pi / 180.0
        rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sample if sample > 0 else int(np.ceil(rh / ph))
        gw = sample if sample > 0 else int(np.ceil(rw / pw))
        for c in range(data.shape[1]):
            img = data[int(roi[0]), c]
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for iy in range(gh):
                        yy = -rh / 2 + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = -rw / 2 + j * bw + (ix + 0.5) * bw / gw
                            ct, st = np.cos(theta), np.sin(theta)
                            acc += _bilinear_sample(img, yy * ct - xx * st + cy,
                                                    xx * ct + yy * st + cx)
                    out[r, c, i, j] = acc / (gh * gw)
    return out


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('kw', [{'pooled_size': (2, 3), 'spatial_scale': 0.25},
                                {'pooled_size': (3, 3), 'spatial_scale': 0.125,
                                 'sampling_ratio': 2}])
def test_rroi_align(dtype, kw):
    data = rand((2, 3, 8, 10), dtype)
    rois = np.array([[0, 20.0, 16.0, 24.0, 12.0, 30.0], [1, 10.0, 30.0, 8.0, 20.0, -45.0],
                     [1, 40.0, 5.0, 50.0, 30.0, 120.0], [0, 3.0, 3.0, 1.0, 1.0, 0.0]])
    y = nd.contrib.RROIAlign(nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype), **kw)
    ref = rroi_align_ref(data.astype('f8'), rois.astype(dtype).astype('f8'), kw['pooled_size'],
                         float(np.float32(kw['spatial_scale'])), kw.get('sampling_ratio', -1))
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == 'float32' else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **tol)


def test_rroi_align_errors():
    d = nd.zeros((1, 2, 5, 5))
    with pytest.raises(mx.MXNetError, match='rois must have shape'):
        nd.contrib.RROIAlign(d, nd.zeros((2, 5)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='batch index'):
        nd.contrib.RROIAlign(d, nd.array([[1, 2, 2, 2, 2, 0]]), pooled_size=(2, 2),
                             spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='batch index'):
        nd.contrib.RROIAlign(d, nd.array([[-1, 2, 2, 2, 2, 0]]), pooled_size=(2, 2),
                             spatial_scale=1.0)


def psroi_pool_ref(data, rois, scale, od, ps, gs=0):
    gs = gs or ps
    n, c, h, w = data.shape
    out = np.zeros((len(rois), od, ps, ps))
    for r, roi in enumerate(rois):
        b = int(roi[0])
        x1, y1 = np.round(roi[1]) * scale, np.round(roi[2]) * scale
        x2, y2 = (np.round(roi[3]) + 1) * scale, (np.round(roi[4]) + 1) * scale
        rw, rh = max(x2 - x1, 0.1), max(y2 - y1, 0.1)
        for k in range(od):
            for i in range(ps):
                for j in range(ps):
                    h0 = min(max(int(np.floor(i * rh / ps + y1)), 0), h)
                    h1 = min(max(int(np.ceil((i + 1) * rh / ps + y1)), 0), h)
                    w0 = min(max(int(np.floor(j * rw / ps + x1)), 0), w)
                    w1 = min(max(int(np.ceil((j + 1) * rw / ps + x1)), 0), w)
                    gi = min(max(int(np.floor(i * gs / ps)), 0), gs - 1)
                    gj = min(max(int(np.floor(j * gs / ps)), 0), gs - 1)
                    if h1 > h0 and w1 > w0:
                        out[r, k, i, j] = data[b, (k * gs + gi) * gs + gj, h0:h1, w0:w1].mean()
    return out


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('od,ps,gs', [(2, 3, 0), (2, 3, 2), (1, 1, 1), (3, 2, 0)])
def test_psroi_pooling(dtype, od, ps, gs):
    g = gs or ps
    data = rand((2, od * g * g, 10, 12), dtype)
    rois = np.array([[0, 10.3, 22.0, 161.0, 173.6], [1, 20.0, 15.0, 154.0, 160.0],
                     [1, 0.0, 0.0, 30.0, 8.0], [0, 300.0, 300.0, 310.0, 320.0]])
    kw = {'spatial_scale': 0.0625, 'output_dim': od, 'pooled_size': ps, 'group_size': gs}
    y = nd.contrib.PSROIPooling(nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype), **kw)
    ref = psroi_pool_ref(data.astype('f8'), rois.astype(dtype).astype('f8'),
                         float(np.float32(0.0625)), od, ps, gs)
    assert y.shape == ref.shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy().astype('f8'), ref, **TOL[dtype])


def test_psroi_pooling_errors_and_adjoint():
    d = nd.zeros((1, 8, 5, 5))
    with pytest.raises(mx.MXNetError, match='channels'):
        nd.contrib.PSROIPooling(d, nd.zeros((1, 5)), spatial_scale=0.5, output_dim=3,
                                pooled_size=2)
    with pytest.raises(mx.MXNetError, match='batch index'):
        nd.contrib.PSROIPooling(d, nd.array([[1, 0, 0, 2, 2]]), spatial_scale=0.5, output_dim=2,
                                pooled_size=2)
    r = np.random.RandomState(0)
    x = r.randn(2, 8, 6, 7)
    rois = np.array([[0, 1.0, 2.0, 9.0, 11.0], [1, 3.0, 0.0, 12.0, 6.0]])
    kw = {'spatial_scale': 0.5, 'output_dim': 2, 'pooled_size': 2}
    y = nd.contrib.PSROIPooling(nd.array(x, dtype='float64'), nd.array(rois, dtype='float64'),
                                **kw).asnumpy()
    dy = r.randn(*y.shape)
    dx = mx._core.get_op('_backward_contrib_PSROIPooling')(
        nd.array(dy, dtype='float64'), nd.array(x, dtype='float64'),
        nd.array(rois, dtype='float64'), **kw).asnumpy()
    np.testing.assert_allclose((dy * y).sum(), (dx * x).sum(), rtol=1e-12)


def test_roi_align_no_rois():
    y = nd.contrib.ROIAlign(nd.zeros((1, 2, 4, 4)), nd.zeros((0, 5)), pooled_size=(2, 2),
                            spatial_scale=1.0)
    assert y.shape == (0, 2, 2, 2)


def test_roi_align_errors():
    d = nd.zeros((1, 4, 5, 5))
    with pytest.raises(mx.MXNetError, match='rois must have shape'):
        nd.contrib.ROIAlign(d, nd.zeros((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='4-D'):
        nd.contrib.ROIAlign(nd.zeros((4, 5, 5)), nd.zeros((2, 5)), pooled_size=(2, 2),
                            spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='pooled_size'):
        nd.contrib.ROIAlign(d, nd.zeros((2, 5)), pooled_size=(2,), spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='spatial_scale'):
        nd.contrib.ROIAlign(d, nd.zeros((2, 5)), pooled_size=(2, 2), spatial_scale=2.0)
    with pytest.raises(mx.MXNetError, match='divisible'):
        nd.contrib.ROIAlign(d, nd.zeros((2, 5)), pooled_size=(3, 1), spatial_scale=1.0,
                            position_sensitive=True)
    with pytest.raises(mx.MXNetError, match='batch index'):
        nd.contrib.ROIAlign(d, nd.array([[3, 0, 0, 2, 2]]), pooled_size=(2, 2),
                            spatial_scale=1.0)
    with pytest.raises(mx.MXNetError, match='no area'):
        nd.contrib.ROIAlign(d, nd.array([[0, 2, 2, 2, 3]]), pooled_size=(2, 2),
                            spatial_scale=1.0, aligned=True)


def test_roi_align_backward_op_is_the_adjoint():
    r = np.random.RandomState(0)
    x = r.randn(2, 8, 6, 7)
    rois = ROIS.astype('f8')
    kw = {'pooled_size': (2, 2), 'spatial_scale': 0.25, 'position_sensitive': True}
    y = nd.contrib.ROIAlign(nd.array(x, dtype='float64'), nd.array(rois, dtype='float64'), **kw)
    dy = r.randn(*y.shape)
    dx = mx._core.get_op('_backward_contrib_ROIAlign')(
        nd.array(dy, dtype='float64'), nd.array(x, dtype='float64'),
        nd.array(rois, dtype='float64'), **kw).asnumpy()
    np.testing.assert_allclose((dy * y.asnumpy()).sum(), (dx * x).sum(), rtol=1e-12)


# ---- group_adagrad_update / GroupAdaGrad -------------------------------------------------------

def group_adagrad_ref(w, g, h, lr, rescale=1.0, clip=-1.0, eps=1e-5):
    """The attributes are float32 in MXNet: rounded so before use."""
    lr, rescale, clip, eps = (float(np.float32(v)) for v in (lr, rescale, clip, eps))
    g = g * rescale
    if clip >= 0:
        g = np.clip(g, -clip, clip)
    h = h + (g * g).reshape(len(g), int(np.prod(g.shape[1:]))).mean(axis=1).reshape(h.shape)
    div = g / np.sqrt(h.reshape((len(g),) + (1,) * (g.ndim - 1)) + eps)
    return w - lr * div, h


@pytest.mark.parametrize('dtype', FLOATS)
@pytest.mark.parametrize('shape', [(1, 1), (3, 4), (5, 2, 3), (0, 3)])
@pytest.mark.parametrize('kw', [{}, {'rescale_grad': 0.3}, {'clip_gradient': 0.5},
                                {'clip_gradient': 0.0, 'epsilon': 1e-8}])
def test_group_adagrad_update(dtype, shape, kw):
    w, g = rand(shape, dtype), rand(shape, dtype, seed=1)
    h = np.abs(rand((shape[0], 1), dtype, seed=2))
    wa, ga, ha = (nd.array(v, dtype=dtype) for v in (w, g, h))
    out = nd.contrib.group_adagrad_update(wa, ga, ha, lr=0.1, **kw)
    rw, rh = group_adagrad_ref(*(v.astype('f8') for v in (w, g, h)), 0.1,
                               kw.get('rescale_grad', 1.0), kw.get('clip_gradient', -1.0),
                               kw.get('epsilon', 1e-5))
    tol = TOL[dtype] if dtype != 'float32' else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.asnumpy().astype('f8'), rw, **tol)
    np.testing.assert_allclose(ha.asnumpy().astype('f8'), rh, **tol)   # updated in place
    np.testing.assert_array_equal(wa.asnumpy(), w)                      # weight only via out


def test_group_adagrad_update_errors():
    w = nd.zeros((3, 4))
    with pytest.raises(mx.MXNetError, match='history'):
        nd.contrib.group_adagrad_update(w, w, nd.zeros((2, 1)), lr=0.1)
    with pytest.raises(mx.MXNetError, match='history'):
        nd.contrib.group_adagrad_update(w, nd.zeros((3, 3)), nd.zeros((3, 1)), lr=0.1)
    with pytest.raises(mx.MXNetError, match='lr'):
        nd.contrib.group_adagrad_update(w, w, nd.zeros((3, 1)))
    with pytest.raises(mx.MXNetError, match='float'):
        z = nd.zeros((3, 4), dtype='int32')
        nd.contrib.group_adagrad_update(z, z, nd.zeros((3, 1), dtype='int32'), lr=0.1)


@pytest.mark.parametrize('kw', [{}, {'clip_gradient': 0.4, 'rescale_grad': 0.14}, {'eps': 1e-8}])
def test_group_adagrad_optimizer(kw):
    opt = mx.optimizer.create('groupadagrad', learning_rate=0.05, wd=0.0, **kw)
    assert isinstance(opt, mx.optimizer.contrib.GroupAdaGrad)
    w = rand((3, 4), 'float32')
    wa = nd.array(w)
    state = opt.create_state(0, wa)
    assert state.shape == (3, 1)
    h = np.zeros((3, 1))
    ref = w.astype('f8')
    for step in range(3):
        g = rand((3, 4), 'float32', seed=step + 5)
        opt.update(0, wa, nd.array(g), state)
        ref, h = group_adagrad_ref(ref, g.astype('f8'), h, 0.05, kw.get('rescale_grad', 1.0),
                                   kw.get('clip_gradient', -1.0), kw.get('eps', 1e-5))
    np.testing.assert_allclose(wa.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), h, rtol=1e-5, atol=1e-7)
    with pytest.raises(AssertionError):
        mx.optimizer.contrib.GroupAdaGrad(wd=0.1).update(0, wa, nd.array(g), state)


# ---- hawkesll ----------------------------------------------------------------------------------

def hawkes_ref(lda, alpha, beta, state, lags, marks, vlen, maxt):
    """Log likelihood by the definition: intensity lda_k + alpha_k beta_k s_k(t), s_k decaying
    as exp(-beta_k t) between events and jumping by 1 at each event of mark k; minus the
    integral of the intensity (the compensator) up to max_time."""
    n, k = lda.shape
    ll = np.zeros(n)
    out_state = np.zeros((n, k))
    for i in range(n):
        s = state[i].astype('f8').copy()
        last = np.zeros(k)
        t = 0.0
        for j in range(int(vlen[i])):
            c = marks[i, j]
            t += lags[i, j]
            d = t - last[c]
            ed = np.exp(-beta[c] * d)
            ll[i] += np.log(lda[i, c] + alpha[c] * beta[c] * s[c] * ed)
            ll[i] -= lda[i, c] * d + alpha[c] * s[c] * (1 - ed)
            s[c] = 1 + s[c] * ed
            last[c] = t
        d = maxt[i] - last
        ed = np.exp(-beta * d)
        ll[i] -= (lda[i] * d + alpha * s * (1 - ed)).sum()
        out_state[i] = s * ed
    return ll, out_state


def hawkes_inputs(n, k, t, seed=0, dtype='float64'):
    r = np.random.RandomState(seed)
    lags = r.uniform(0.1, 2.0, (n, t))
    vlen = r.randint(0, t + 1, n).astype('f8')
    return [r.uniform(0.5, 2, (n, k)).astype(dtype), r.uniform(0.1, 0.8, k).astype(dtype),
            r.uniform(0.5, 2, k).astype(dtype), r.uniform(0, 1, (n, k)).astype(dtype),
            lags.astype(dtype), r.randint(0, k, (n, t)).astype('int32'), vlen.astype(dtype),
            (lags.sum(1) + r.uniform(0, 3, n)).astype(dtype)]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('n,k,t', [(1, 1, 1), (3, 2, 5), (4, 3, 7), (2, 1, 0)])
def test_hawkesll(dtype, n, k, t):
    xs = hawkes_inputs(n, k, t, seed=n * 10 + k, dtype=dtype)
    ll, st = nd.contrib.hawkesll(*[nd.array(x, dtype=x.dtype) for x in xs])
    rl, rs = hawkes_ref(*[x.astype('f8') if x.dtype.kind == 'f' else x for x in xs])
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == 'float32' else dict(rtol=1e-10, atol=1e-10)
    assert ll.shape == (n,) and st.shape == (n, k) and ll.dtype == np.dtype(dtype)
    np.testing.assert_allclose(ll.asnumpy(), rl, **tol)
    np.testing.assert_allclose(st.asnumpy(), rs, **tol)


def test_hawkesll_errors():
    xs = [nd.array(x, dtype=x.dtype) for x in hawkes_inputs(2, 2, 3)]
    bad = list(xs)
    bad[5] = nd.array([[0, 1, 2], [0, 0, 0]], dtype='int32')
    bad[6] = nd.array([3, 3], dtype='float64')
    with pytest.raises(mx.MXNetError, match='marks'):
        nd.contrib.hawkesll(*bad)
    bad = list(xs)
    bad[6] = nd.array([4, 1], dtype='float64')
    with pytest.raises(mx.MXNetError, match='valid_length'):
        nd.contrib.hawkesll(*bad)
    bad = list(xs)
    bad[5] = bad[5].astype('float64')
    with pytest.raises(mx.MXNetError, match='int32'):
        nd.contrib.hawkesll(*bad)
    bad = list(xs)
    bad[1] = nd.zeros((3,), dtype='float64')
    with pytest.raises(mx.MXNetError, match='alpha'):
        nd.contrib.hawkesll(*bad)


def test_hawkesll_backward_op_directly():
    """The backward op on its own: ograd-weighted gradients, alpha and beta summed over the
    sequences; a zero ograd gives zeros."""
    xs = [nd.array(x, dtype=x.dtype) for x in hawkes_inputs(3, 2, 4, seed=7)]
    bw = mx._core.get_op('_backward_contrib_hawkesll')
    g1 = bw(nd.array([1.0, 1.0, 1.0], dtype='float64'), *xs)
    g2 = bw(nd.array([2.0, 0.0, 1.0], dtype='float64'), *xs)
    assert [g.shape for g in g1] == [(3, 2), (2,), (2,)]
    np.testing.assert_allclose(g2[0].asnumpy(), g1[0].asnumpy() * [[2], [0], [1]], rtol=1e-12)
    g0 = bw(nd.zeros((3,), dtype='float64'), *xs)
    for g in g0:
        np.testing.assert_array_equal(g.asnumpy(), 0)


# ---- quantize / dequantize ---------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(1,), (3, 4), (0, 2), (2, 3, 2)])
@pytest.mark.parametrize('lo,hi', [(-1.0, 1.0), (0.0, 2.5), (-3.0, 0.5)])
def test_quantize_dequantize(shape, lo, hi):
    """MXNet's CPU (oneDNN) semantics: scale over r = max(|lo|, |hi|), round half to even,
    saturate; dequantize by r / 255.5 or r / 127.5."""
    x = np.random.RandomState(0).uniform(lo, hi, shape).astype('f4')
    f32 = np.float32
    rng = max(abs(f32(lo)), abs(f32(hi)))
    r = [nd.array([lo]), nd.array([hi])]
    q, qmin, qmax = nd.contrib.quantize(nd.array(x), *r, out_type='uint8')
    ref = np.clip(np.rint(x * f32(255 / rng)), 0, 255).astype('uint8')
    assert q.dtype == np.uint8 and q.shape == shape
    np.testing.assert_array_equal(q.asnumpy(), ref)
    assert float(qmin.asnumpy()[0]) == f32(lo) and float(qmax.asnumpy()[0]) == f32(hi)
    back = nd.contrib.dequantize(q, qmin, qmax)
    np.testing.assert_allclose(back.asnumpy(), ref * f32(rng / f32(255.5)), rtol=1e-6)
    q8, m8, x8 = nd.contrib.quantize(nd.array(x), *r, out_type='int8')
    ref8 = np.clip(np.rint(x * f32(127 / rng)), -128, 127).astype('int8')
    assert q8.dtype == np.int8
    np.testing.assert_array_equal(q8.asnumpy(), ref8)
    assert float(m8.asnumpy()[0]) == -rng and float(x8.asnumpy()[0]) == rng
    back8 = nd.contrib.dequantize(q8, m8, x8)
    np.testing.assert_allclose(back8.asnumpy(), ref8 * f32(rng / f32(127.5)), rtol=1e-6)
    if x.size:   # the int8 round trip is within a step
        np.testing.assert_allclose(back8.asnumpy(), x, atol=2 * rng / 127)


def test_quantize_rounds_half_to_even():
    q, _, _ = nd.contrib.quantize(nd.array([0.25, 0.75, 1.25]), nd.array([0.0]),
                                  nd.array([2.0]), out_type='int8')
    # 127 / 2 * [0.25, 0.75, 1.25] = [15.875, 47.625, 79.375]
    np.testing.assert_array_equal(q.asnumpy(), [16, 48, 79])
    q, _, _ = nd.contrib.quantize(nd.array([0.5, 1.5]), nd.array([0.0]), nd.array([255.0]))
    np.testing.assert_array_equal(q.asnumpy(), [0, 2])


def test_quantize_saturates():
    q, _, _ = nd.contrib.quantize(nd.array([-5.0, 0.5, 7.0]), nd.array([0.0]), nd.array([1.0]))
    np.testing.assert_array_equal(q.asnumpy(), [0, 128, 255])
    q, _, _ = nd.contrib.quantize(nd.array([-5.0, 7.0]), nd.array([0.0]), nd.array([1.0]),
                                  out_type='int8')
    np.testing.assert_array_equal(q.asnumpy(), [-128, 127])


def test_quantize_errors():
    r = [nd.array([0.0]), nd.array([1.0])]
    with pytest.raises(mx.MXNetError, match='float32'):
        nd.contrib.quantize(nd.zeros(3, dtype='float64'), *r)
    with pytest.raises(mx.MXNetError, match='min_range'):
        nd.contrib.quantize(nd.zeros(3), nd.zeros(2), r[1])
    with pytest.raises(mx.MXNetError, match='uint8 or int8'):
        nd.contrib.dequantize(nd.zeros(3), *r)
