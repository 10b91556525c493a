"""Op cases of MXNet's contrib ops (_contrib_X: csrc/ops/contrib_*.c) for the conformance
fixtures, drawn from a generator of their own so that adding them leaves the other cases'
inputs as they were. Scores are distinct (no ties in the sorts of box_nms and
bipartite_matching) and boxes have positive sizes."""
import numpy as np

from op_cases import C

F32 = 'float32'


def cases(seed=20261125):
    rng = np.random.default_rng(seed)
    out = []
    add = out.append

    def away(*shape, lo=0.2, hi=2.0, dtype=F32):
        mag = rng.uniform(lo, hi, shape)
        return (mag * rng.choice([-1.0, 1.0], shape)).astype(dtype)

    def u4(*shape):
        return rng.uniform(-1, 1, shape).astype(F32)

    def corner_boxes(*lead, scale=10.0):
        xy = rng.uniform(0, scale, lead + (2,))
        wh = rng.uniform(0.5, scale / 2, lead + (2,))
        return np.concatenate([xy, xy + wh], -1).astype(F32)

    def center_boxes(*lead, scale=10.0):
        xy = rng.uniform(0, scale, lead + (2,))
        wh = rng.uniform(0.5, scale / 2, lead + (2,))
        return np.concatenate([xy, wh], -1).astype(F32)

    def detections(batch, n, ncls=3):
        """(batch, n, 6) rows [class id, score, xmin, ymin, xmax, ymax], clustered boxes so that
        suppression happens, distinct scores."""
        ids = rng.integers(0, ncls, (batch, n, 1)).astype(F32)
        scores = (rng.permutation(batch * n).reshape(batch, n, 1) + 1.0) / (batch * n + 1)
        centre = rng.uniform(2, 4, (batch, n, 2))
        half = rng.uniform(0.5, 1.5, (batch, n, 2))
        boxes = np.concatenate([centre - half, centre + half], -1)
        return np.concatenate([ids, scores, boxes], -1).astype(F32)

    # element-wise: rounding away from .5 ties; the estimators' gradients are the identity
    x = (rng.integers(-4, 5, (3, 4)) + rng.uniform(-0.4, 0.4, (3, 4))).astype(F32)
    add(C('_contrib_round_ste', [x]))
    add(C('_contrib_sign_ste', [away(2, 5)]))
    add(C('_contrib_gradientmultiplier', [away(3, 3)], {'scalar': -0.35}))
    add(C('_contrib_gradientmultiplier', [away(4, dtype='float64')], {'scalar': 2.5}))
    add(C('_contrib_quadratic', [away(2, 3, 2)], {'a': 0.7, 'b': -1.3, 'c': 0.25}))
    add(C('_contrib_quadratic', [away(5, dtype='float64')], {'a': -2.0, 'b': 0.5, 'c': 3.0}))

    # box_iou: MXNet's gradient is zero, compared as such
    add(C('_contrib_box_iou', [corner_boxes(3), corner_boxes(2, 2)]))
    add(C('_contrib_box_iou', [center_boxes(2, 3), center_boxes(4)], {'format': 'center'}))

    # box_nms
    add(C('_contrib_box_nms', [detections(1, 8)], {'overlap_thresh': 0.3}))
    add(C('_contrib_box_nms', [detections(2, 7)],
          {'overlap_thresh': 0.4, 'id_index': 0, 'valid_thresh': 0.2, 'topk': 5}))
    add(C('_contrib_box_nms', [detections(2, 6)],
          {'overlap_thresh': 0.2, 'id_index': 0, 'force_suppress': True, 'background_id': 1,
           'out_format': 'center'}))
    d = detections(3, 5)[..., [1, 2, 3, 4, 5, 0]]   # score first, id last
    add(C('_contrib_box_nms', [d.reshape(3, 1, 5, 6)],
          {'coord_start': 1, 'score_index': 0, 'id_index': 5, 'overlap_thresh': 0.25}))

    # bipartite_matching (no gradient in MXNet: zeros)
    s = rng.permutation(24).reshape(2, 3, 4).astype(F32) / 24
    add(C('_contrib_bipartite_matching', [s], {'threshold': 0.1}, grad=False))
    add(C('_contrib_bipartite_matching', [s[0]], {'threshold': 0.8, 'is_ascend': True},
          grad=False))
    add(C('_contrib_bipartite_matching', [s], {'threshold': 0.0, 'topk': 1}, grad=False))

    # box_encode / box_decode (MXNet: zero gradients)
    samples = rng.choice([-1.0, 0.0, 1.0], (2, 5)).astype(F32)
    matches = rng.integers(0, 3, (2, 5)).astype(F32)
    add(C('_contrib_box_encode', [samples, matches, corner_boxes(2, 5), corner_boxes(2, 3),
                                  np.array([0.1, -0.1, 0.0, 0.2], F32),
                                  np.array([0.1, 0.1, 0.2, 0.2], F32)], grad=False))
    off = rng.uniform(-1, 1, (2, 4, 4)).astype(F32)
    add(C('_contrib_box_decode', [off, center_boxes(1, 4)],
          {'std0': 0.1, 'std1': 0.1, 'std2': 0.2, 'std3': 0.2}, grad=False))
    add(C('_contrib_box_decode', [off * 4, corner_boxes(1, 4)],
          {'format': 'corner', 'clip': 0.5}, grad=False))
    # MultiBoxPrior: only the data's shape matters (MXNet's gradient is zero)
    add(C('_contrib_MultiBoxPrior', [u4(1, 2, 3, 5)], grad=False))
    add(C('_contrib_MultiBoxPrior', [u4(2, 1, 4, 4)],
          {'sizes': (0.5, 0.25, 0.1), 'ratios': (1, 2, 0.5), 'clip': True}, grad=False))
    add(C('_contrib_MultiBoxPrior', [u4(1, 1, 3, 2)],
          {'sizes': (0.3,), 'ratios': (3, 1), 'steps': (0.2, 0.25), 'offsets': (0.2, 0.7)},
          grad=False))

    # MultiBoxTarget: anchors of a 4x4 map, two images with padded labels
    anchors = np.zeros((1, 16, 4), F32)
    for k in range(16):
        cy, cx = (k // 4 + 0.5) / 4, (k % 4 + 0.5) / 4
        half = 0.1 + 0.05 * (k % 3)
        anchors[0, k] = [cx - half, cy - half, cx + half, cy + half]
    label = -np.ones((2, 3, 5), F32)
    label[0, 0] = [1, 0.1, 0.1, 0.35, 0.4]
    label[0, 1] = [0, 0.5, 0.45, 0.9, 0.95]
    label[1, 0] = [2, 0.3, 0.2, 0.7, 0.6]
    pred = rng.standard_normal((2, 3, 16)).astype(F32)
    add(C('_contrib_MultiBoxTarget', [anchors, label, pred], grad=False))
    add(C('_contrib_MultiBoxTarget', [anchors, label, pred],
          {'overlap_threshold': 0.3, 'negative_mining_ratio': 2, 'negative_mining_thresh': 0.4,
           'variances': (0.2, 0.2, 0.3, 0.3), 'ignore_label': -2}, grad=False))
    add(C('_contrib_MultiBoxTarget', [anchors, label[:, :1], pred],
          {'overlap_threshold': 0.0, 'negative_mining_ratio': 3}, grad=False))
    # index ops
    add(C('_contrib_div_sqrt_dim', [away(2, 3, 5)]))
    add(C('_contrib_div_sqrt_dim', [away(4, 9, dtype='float64')]))
    add(C('_contrib_index_array', [u4(2, 3, 4)], grad=False))
    add(C('_contrib_index_array', [u4(3, 1, 2, 2)], {'axes': (-1, 1)}, grad=False))
    add(C('_contrib_index_copy', [u4(5, 3), np.array([3, 0, 4], F32), u4(3, 3)], wrt=[0, 2]))
    add(C('_contrib_index_copy', [u4(4, 2, 2), np.array([1, 2], 'int64'), u4(2, 2, 2)],
          wrt=[0, 2]))
    a = u4(3, 4)
    add(C('_contrib_allclose', [a, a + 1e-7], grad=False))
    add(C('_contrib_allclose', [a, a + 1e-3], grad=False))
    add(C('_contrib_allclose', [a, a + 1e-3], {'rtol': 0.1, 'atol': 0.01}, grad=False))
    # interleaved attention matmuls (float32 only in MXNet)
    L, B, H, D, Lk = 3, 2, 2, 4, 5
    add(C('_contrib_interleaved_matmul_selfatt_qk', [u4(L, B, H * 3 * D)], {'heads': H}))
    add(C('_contrib_interleaved_matmul_selfatt_valatt', [u4(L, B, H * 3 * D), u4(B * H, L, L)],
          {'heads': H}))
    add(C('_contrib_interleaved_matmul_encdec_qk', [u4(L, B, H * D), u4(Lk, B, H * 2 * D)],
          {'heads': H}))
    add(C('_contrib_interleaved_matmul_encdec_valatt', [u4(Lk, B, 3 * 2 * 2),
                                                       u4(B * 3, L, Lk)], {'heads': 3}))
    # resampling
    add(C('_contrib_AdaptiveAvgPooling2D', [u4(2, 3, 7, 5)], {'output_size': (3, 2)}))
    add(C('_contrib_AdaptiveAvgPooling2D', [u4(1, 2, 4, 6)], {'output_size': 5}))
    add(C('_contrib_AdaptiveAvgPooling2D', [u4(1, 1, 3, 3)]))
    add(C('_contrib_BilinearResize2D', [u4(2, 2, 3, 4)], {'height': 5, 'width': 7}))
    add(C('_contrib_BilinearResize2D', [u4(1, 2, 5, 4)],
          {'height': 3, 'width': 6, 'align_corners': False}))
    add(C('_contrib_BilinearResize2D', [u4(1, 1, 4, 6)],
          {'scale_height': 1.5, 'scale_width': 0.5}))
    add(C('_contrib_BilinearResize2D', [u4(1, 2, 5, 4)],
          {'scale_height': 2.0, 'scale_width': 1.5, 'mode': 'odd_scale'}))
    add(C('_contrib_BilinearResize2D', [u4(1, 1, 5, 4)], {'mode': 'to_even_up'}))
    add(C('_contrib_BilinearResize2D', [u4(2, 1, 3, 3), u4(2, 1, 6, 2)], {'mode': 'like'},
          wrt=[0]))
    # ROIAlign: rois (batch index, x1, y1, x2, y2) in image coordinates
    rois = np.array([[0, 1.0, 2.0, 20.0, 14.0], [1, 5.5, 3.2, 9.0, 30.0],
                     [0, -4.0, -2.0, 6.0, 5.0], [1, 25.0, 26.0, 40.0, 41.0]], F32)
    add(C('_contrib_ROIAlign', [u4(2, 3, 8, 9), rois], {'pooled_size': (2, 3),
                                                       'spatial_scale': 0.25}, wrt=[0]))
    add(C('_contrib_ROIAlign', [u4(2, 2, 6, 6), rois],
          {'pooled_size': (3, 2), 'spatial_scale': 0.2, 'sample_ratio': 2, 'aligned': True},
          wrt=[0]))
    add(C('_contrib_ROIAlign', [u4(2, 8, 5, 7), rois],
          {'pooled_size': (2, 2), 'spatial_scale': 0.125, 'position_sensitive': True},
          wrt=[0]))
    # arange_like (MXNet's gradient is zero)
    add(C('_contrib_arange_like', [u4(2, 3)], grad=False))
    add(C('_contrib_arange_like', [u4(3, 4)], {'start': 1.0, 'step': 0.5, 'repeat': 3},
          grad=False))
    add(C('_contrib_arange_like', [u4(2, 5, 3)], {'axis': -2, 'start': -2.0}, grad=False))
    add(C('_contrib_arange_like', [u4(2, 3).astype('int32')], {'start': 1.5, 'step': 2.7},
          grad=False))
    # quantize / dequantize
    qx = rng.uniform(-0.5, 1.5, (3, 4)).astype(F32)
    lo, hi = np.array([-0.5], F32), np.array([1.5], F32)
    add(C('_contrib_quantize', [qx, lo, hi], grad=False))
    add(C('_contrib_quantize', [qx, lo, hi], {'out_type': 'int8'}, grad=False))
    wide = rng.uniform(-3, 3, (2, 6)).astype(F32)   # beyond the range: saturates
    add(C('_contrib_quantize', [wide, lo, hi], {'out_type': 'int8'}, grad=False))
    add(C('_contrib_quantize', [wide, lo, hi], grad=False))
    add(C('_contrib_dequantize', [rng.integers(0, 256, (2, 5)).astype('uint8'), lo, hi],
          grad=False))
    add(C('_contrib_dequantize', [rng.integers(-127, 128, (4, 2)).astype('int8'), lo, hi],
          grad=False))
    # RROIAlign (forward only in MXNet)
    rrois = np.array([[0, 20.0, 16.0, 24.0, 12.0, 30.0], [1, 10.0, 30.0, 8.0, 20.0, -45.0],
                      [1, 40.0, 5.0, 50.0, 30.0, 120.0]], F32)
    add(C('_contrib_RROIAlign', [u4(2, 3, 8, 10), rrois],
          {'pooled_size': (2, 3), 'spatial_scale': 0.25}, grad=False))
    add(C('_contrib_RROIAlign', [u4(2, 2, 6, 6), rrois],
          {'pooled_size': (3, 3), 'spatial_scale': 0.125, 'sampling_ratio': 2}, grad=False))
    # PSROIPooling (R-FCN): data channels output_dim * group^2
    prois = np.array([[0, 10.3, 22.0, 161.0, 173.6], [0, 20.0, 15.0, 154.0, 160.0],
                      [1, 0.0, 0.0, 30.0, 8.0]], F32)
    add(C('_contrib_PSROIPooling', [u4(2, 18, 14, 14), prois],
          {'spatial_scale': 0.0625, 'output_dim': 2, 'pooled_size': 3}, wrt=[0]))
    add(C('_contrib_PSROIPooling', [u4(2, 8, 10, 12), prois],
          {'spatial_scale': 0.0625, 'output_dim': 2, 'pooled_size': 3, 'group_size': 2},
          wrt=[0]))
    # hawkesll: N=3 sequences, K=2 marks, T=5 (gradients for lda, alpha, beta: MXNet's rule)
    lags = rng.uniform(0.1, 2.0, (3, 5)).astype(F32)
    marks = rng.integers(0, 2, (3, 5)).astype('int32')
    add(C('_contrib_hawkesll', [rng.uniform(0.5, 2, (3, 2)).astype(F32),
                                np.array([0.3, 0.6], F32), np.array([1.5, 0.8], F32),
                                rng.uniform(0, 1, (3, 2)).astype(F32), lags, marks,
                                np.array([5, 3, 0], F32), np.array([12.0, 9.0, 4.0], F32)],
          wrt=[0, 1, 2]))
    return out
