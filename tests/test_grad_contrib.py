"""Gradient rules of the contrib ops (csrc/ops/contrib_*.c) against float64 central finite
differences. The straight-through estimators (round_ste, sign_ste) pass the incoming gradient
on by definition, which finite differences of rounding cannot show: their rule is checked
against that definition instead."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad, symbolic_grad

GRADS_COVERED = ['_contrib_quadratic', '_contrib_gradientmultiplier', '_contrib_round_ste',
                 '_contrib_sign_ste', '_contrib_box_nms', '_contrib_div_sqrt_dim',
                 '_contrib_index_copy', '_contrib_interleaved_matmul_selfatt_qk',
                 '_contrib_interleaved_matmul_selfatt_valatt',
                 '_contrib_interleaved_matmul_encdec_qk',
                 '_contrib_interleaved_matmul_encdec_valatt', '_contrib_AdaptiveAvgPooling2D',
                 '_contrib_BilinearResize2D', '_contrib_ROIAlign', '_contrib_hawkesll',
                 '_contrib_PSROIPooling']


def rand(shape, seed=0):
    return np.random.RandomState(seed).uniform(-2, 2, shape)


@pytest.mark.parametrize('shape', [(1,), (4,), (2, 3)])
def test_quadratic_grad(shape):
    check_grad('_contrib_quadratic', [rand(shape)], attrs={'a': 0.75, 'b': -1.5, 'c': 0.5})


@pytest.mark.parametrize('scalar', [1.0, -0.5, 3.0])
def test_gradientmultiplier_grad(scalar):
    """Not a derivative: the rule scales the incoming gradient by scalar (MXNet's definition),
    so the check is against scalar times the head gradient."""
    x = rand((2, 3))
    hg = rand((2, 3), seed=1)
    g, = symbolic_grad('_contrib_gradientmultiplier', [x], {'scalar': scalar}, [0], [hg])
    np.testing.assert_allclose(g, scalar * hg)


@pytest.mark.parametrize('op', ['_contrib_round_ste', '_contrib_sign_ste'])
def test_ste_grad_is_identity(op):
    x = rand((3, 4))
    hg = rand((3, 4), seed=2)
    g, = symbolic_grad(op, [x], {}, [0], [hg])
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, hg)


def test_quadratic_and_multiplier_compose():
    """Finite differences of quadratic, through the multiplier set to 1 (the identity)."""
    check_grad('_contrib_gradientmultiplier', [rand((3,))], attrs={'scalar': 1.0})


@pytest.mark.parametrize('attrs', [{'overlap_thresh': 0.3}, {'overlap_thresh': 0.3, 'id_index': 0},
                                   {'overlap_thresh': 0.4, 'topk': 3}])
def test_box_nms_grad(attrs):
    """box_nms is piecewise linear in its input: with distinct scores and no IoU at the
    threshold, small steps keep the selection and finite differences see the routing."""
    r = np.random.RandomState(4)
    ids = r.randint(0, 2, (2, 5, 1)) + 0.5   # class ids compare truncated: no step crosses one
    scores = (r.permutation(10).reshape(2, 5, 1) + 1.0) / 11
    centre = r.uniform(2, 4, (2, 5, 2))
    half = r.uniform(0.5, 1.5, (2, 5, 2))
    data = np.concatenate([ids, scores, centre - half, centre + half], -1)
    check_grad('_contrib_box_nms', [data], attrs=attrs)


def test_box_nms_grad_ignores_the_format_change():
    """MXNet's rule routes the output gradient to the source rows as they are, also when
    out_format re-encodes the coordinates: the same gradient as without the change."""
    data = np.random.RandomState(1).uniform(0.1, 1, (1, 4, 6))
    data[..., 4:] += 1
    hg = np.random.RandomState(2).standard_normal((1, 4, 6))
    a, = symbolic_grad('_contrib_box_nms', [data], {'out_format': 'center'}, [0], [hg])
    b, = symbolic_grad('_contrib_box_nms', [data], {}, [0], [hg])
    np.testing.assert_array_equal(a, b)
    assert np.abs(a).sum() > 0


@pytest.mark.parametrize('shape', [(3,), (2, 5), (2, 2, 4)])
def test_div_sqrt_dim_grad(shape):
    check_grad('_contrib_div_sqrt_dim', [rand(shape)])


@pytest.mark.parametrize('idx', [[2, 0], [1], [3, 1, 0, 2]])
def test_index_copy_grad(idx):
    old = rand((4, 3))
    new = rand((len(idx), 3), seed=1)
    check_grad('_contrib_index_copy', [old, np.array(idx, 'int64'), new], wrt=[0, 2])


@pytest.mark.parametrize('heads', [1, 2])
def test_interleaved_matmul_grads(heads):
    L, B, D, Lk = 3, 2, 2, 4
    qkv = rand((L, B, heads * 3 * D))
    att = rand((B * heads, L, L), seed=1)
    q = rand((L, B, heads * D), seed=2)
    kv = rand((Lk, B, heads * 2 * D), seed=3)
    att2 = rand((B * heads, L, Lk), seed=4)
    a = {'heads': heads}
    check_grad('_contrib_interleaved_matmul_selfatt_qk', [qkv], attrs=a)
    check_grad('_contrib_interleaved_matmul_selfatt_valatt', [qkv, att], attrs=a)
    check_grad('_contrib_interleaved_matmul_encdec_qk', [q, kv], attrs=a)
    check_grad('_contrib_interleaved_matmul_encdec_valatt', [kv, att2], attrs=a)


@pytest.mark.parametrize('shape,size', [((1, 2, 5, 4), (3, 2)), ((2, 1, 3, 3), 4)])
def test_adaptive_avg_pooling_grad(shape, size):
    check_grad('_contrib_AdaptiveAvgPooling2D', [rand(shape)], attrs={'output_size': size})


@pytest.mark.parametrize('attrs', [{'height': 5, 'width': 3}, {'height': 2, 'width': 7,
                                                               'align_corners': False},
                                   {'mode': 'to_odd_up'}])
def test_bilinear_resize_grad(attrs):
    check_grad('_contrib_BilinearResize2D', [rand((2, 2, 4, 4))], attrs=attrs)


def test_bilinear_resize_like_grad():
    """Only data is differentiated; like lends its shape (MXNet's gradient for it is zero)."""
    check_grad('_contrib_BilinearResize2D', [rand((1, 2, 3, 4)), rand((1, 2, 5, 2), seed=1)],
               attrs={'mode': 'like'}, wrt=[0])
    g = symbolic_grad('_contrib_BilinearResize2D', [rand((1, 1, 3, 4)), rand((1, 1, 5, 2))],
                      {'mode': 'like'}, [1], [rand((1, 1, 5, 2), seed=3)])
    np.testing.assert_array_equal(g[0], np.zeros((1, 1, 5, 2)))


@pytest.mark.parametrize('attrs', [{'pooled_size': (2, 3), 'spatial_scale': 0.5},
                                   {'pooled_size': (2, 2), 'spatial_scale': 0.5,
                                    'position_sensitive': True, 'sample_ratio': 2},
                                   {'pooled_size': (3, 2), 'spatial_scale': 0.4, 'aligned': True}])
def test_roi_align_grad(attrs):
    """ROIAlign is linear in data: the gradient is exact for any step. Rois are not
    differentiated (MXNet's gradient for them is zero)."""
    rois = np.array([[0, 1.3, 0.7, 7.1, 6.2], [1, 0.2, 2.5, 4.4, 9.9]])
    check_grad('_contrib_ROIAlign', [rand((2, 4, 5, 6)), rois], attrs=attrs, wrt=[0])


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_hawkesll_grad(seed):
    """MXNet's rule differentiates the likelihood output for lda, alpha and beta (the state
    output's gradient is not propagated): checked against finite differences of output 0."""
    r = np.random.RandomState(seed)
    n, k, t = 3, 2, 5
    lags = r.uniform(0.1, 2.0, (n, t))
    xs = [r.uniform(0.5, 2, (n, k)), r.uniform(0.1, 0.8, k), r.uniform(0.5, 2, k),
          r.uniform(0, 1, (n, k)), lags, r.randint(0, k, (n, t)).astype('int32'),
          np.array([5.0, 2.0, 4.0]), lags.sum(1) + 1.5]
    hg = r.standard_normal(n)
    sym = symbolic_grad('_contrib_hawkesll', xs, {}, [0, 1, 2], [hg, np.zeros((n, k))])

    def ll(vals):
        out = mx.nd.contrib.hawkesll(*[mx.nd.array(v, dtype=v.dtype) for v in vals])[0]
        return float((out.asnumpy() * hg).sum())
    eps = 1e-6
    for i, s in zip([0, 1, 2], sym):
        num = np.zeros(xs[i].shape)
        for j in range(xs[i].size):
            p, m = [x.copy() for x in xs], [x.copy() for x in xs]
            p[i].reshape(-1)[j] += eps
            m[i].reshape(-1)[j] -= eps
            num.reshape(-1)[j] = (ll(p) - ll(m)) / (2 * eps)
        np.testing.assert_allclose(s, num, rtol=1e-5, atol=1e-7, err_msg='input %d' % i)


@pytest.mark.parametrize('attrs', [{'spatial_scale': 0.5, 'output_dim': 2, 'pooled_size': 2},
                                   {'spatial_scale': 0.25, 'output_dim': 1, 'pooled_size': 3,
                                    'group_size': 2}])
def test_psroi_pooling_grad(attrs):
    """Linear in data; rois are not differentiated (MXNet gives them zero)."""
    g = attrs.get('group_size') or attrs['pooled_size']
    rois = np.array([[0, 1.0, 2.0, 9.0, 11.0], [1, 3.0, 0.0, 12.0, 6.0]])
    check_grad('_contrib_PSROIPooling', [rand((2, attrs['output_dim'] * g * g, 6, 7)), rois],
               attrs=attrs, wrt=[0])
