"""Convolution's kernel paths, each against the NumPy references of test_grad_conv and finite
differences: the direct depthwise kernel (num_group == channels, with and without a channel
multiplier; the nine-tap 3x3 kernel, padded-plane and range-checked loops), 1x1 convolutions
(no im2col; whole images or column tiles), 3x3 layers cut into cache-sized column tiles spread
over the threads (several tiles per image), deep layers with few output positions (one
whole-image GEMM), and the same at 1 and 3 threads, in float32 and float64."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from gradcheck import check_grad
from test_grad_conv import (_conv_grid, conv_data_grad_ref, conv_ref, conv_weight_grad_ref)

TOL = {'float32': dict(rtol=2e-4, atol=2e-4), 'float64': dict(rtol=1e-10, atol=1e-10)}

# data shape, num_filter, kernel, stride, pad, dilate, groups
CASES = [
    # depthwise, 2-D: MobileNet's 3x3 (stride 1 and 2), 5x5, dilation, pad 0, multiplier 2
    ((2, 8, 9, 9), 8, (3, 3), (1, 1), (1, 1), (1, 1), 8),
    ((2, 8, 10, 9), 8, (3, 3), (2, 2), (1, 1), (1, 1), 8),
    ((1, 4, 11, 12), 4, (5, 5), (1, 1), (2, 2), (1, 1), 4),
    ((2, 4, 9, 10), 4, (3, 3), (1, 1), (2, 2), (2, 2), 4),
    ((2, 3, 7, 8), 3, (3, 2), (1, 3), (0, 1), (1, 1), 3),
    ((2, 3, 6, 7), 6, (3, 3), (2, 1), (1, 2), (1, 2), 3),
    ((1, 2, 5, 5), 2, (3, 3), (3, 3), (3, 3), (1, 1), 2),                 # pad > kernel
    # depthwise 3x3 at stride 1 or 2 (the nine-tap plane kernel): tiny planes, pad 0 and 2,
    # a multiplier, odd and even widths, narrow rows (one long run) and wide ones (row by row)
    ((1, 3, 1, 1), 3, (3, 3), (1, 1), (1, 1), (1, 1), 3),
    ((2, 3, 2, 3), 6, (3, 3), (2, 2), (1, 1), (1, 1), 3),
    ((1, 2, 3, 4), 2, (3, 3), (1, 1), (0, 0), (1, 1), 2),
    ((1, 2, 12, 13), 2, (3, 3), (1, 1), (2, 2), (1, 1), 2),
    ((1, 2, 12, 13), 2, (3, 3), (2, 2), (2, 2), (1, 1), 2),
    ((1, 2, 33, 35), 2, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    ((1, 2, 64, 63), 2, (3, 3), (2, 2), (1, 1), (1, 1), 2),
    ((1, 2, 61, 62), 2, (3, 3), (2, 2), (0, 0), (1, 1), 2),
    ((2, 3, 6, 7), 6, (3, 3), (1, 1), (1, 1), (1, 1), 3),               # multiplier, stride 1
    ((1, 2, 9, 40), 4, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    # depthwise, large planes: the range-checked loops (the padded copy does not fit)
    ((1, 2, 130, 131), 2, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    ((1, 2, 130, 131), 2, (3, 3), (2, 2), (1, 1), (1, 1), 2),
    # depthwise, 1-D and 3-D
    ((2, 4, 17), 4, (3,), (1,), (1,), (1,), 4),
    ((2, 4, 17), 8, (4,), (2,), (0,), (2,), 4),
    ((1, 3, 5, 6, 7), 3, (3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 3),
    ((1, 2, 5, 6, 7), 4, (2, 3, 2), (2, 1, 2), (0, 1, 1), (1, 2, 1), 2),
    # 1x1: whole images (batch >= 8), column tiles (batch 1), grouped
    ((9, 6, 5, 7), 4, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 16, 20, 20), 8, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 8, 20, 20), 8, (1, 1), (1, 1), (0, 0), (1, 1), 2),
    ((2, 8, 9, 9), 16, (1, 1), (2, 2), (0, 0), (1, 1), 1),              # strided: im2col
    # 3x3 layers cut into several column tiles per image
    ((2, 32, 40, 40), 16, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 24, 37, 33), 8, (3, 3), (2, 2), (1, 1), (1, 1), 2),
    ((3, 16, 45, 30), 8, (3, 3), (1, 1), (2, 0), (2, 1), 1),
    # deep layer, few positions: whole-image GEMM
    ((1, 128, 7, 7), 32, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    # deep layers at batch > 1 (fewer positions than a backward block's columns): the
    # backward packs a slot's images into blocks; pointwise, grouped, strided, extended rows
    ((6, 16, 5, 5), 8, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((5, 12, 4, 4), 8, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((7, 8, 6, 6), 8, (3, 3), (2, 2), (1, 1), (1, 1), 2),
    ((5, 3, 6, 7), 4, (3, 3), (1, 1), (0, 0), (1, 1), 1),
    # ... with a K so long that a block of all of a slot's images would pass the memory cap
    ((8, 2400, 7, 7), 2, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    # small images packed side by side (LeNet's layers), with a ragged last block, grouped
    ((21, 6, 12, 12), 16, (5, 5), (1, 1), (0, 0), (1, 1), 1),
    ((19, 1, 28, 28), 6, (5, 5), (1, 1), (0, 0), (1, 1), 1),
    ((18, 4, 9, 8), 6, (3, 3), (2, 1), (1, 1), (1, 2), 2),
    ((17, 2, 11), 4, (3,), (1,), (1,), (1,), 1),
    # packed with extended rows (stride 1, pad 0): dilated, grouped, 1-D
    ((20, 3, 10, 11), 4, (3, 3), (1, 1), (0, 0), (2, 1), 1),
    ((16, 4, 7, 9), 4, (2, 3), (1, 1), (0, 0), (1, 2), 2),
    ((20, 2, 15), 3, (3,), (1,), (0,), (1,), 1),
]


def _attrs(case, no_bias=False):
    shape, nf, k, s, p, d, g = case
    return dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=nf, num_group=g,
                no_bias=no_bias)


def _inputs(case, rng):
    shape, nf, k, s, p, d, g = case
    x = rng.standard_normal(shape)
    w = rng.standard_normal((nf, shape[1] // g) + k) / np.sqrt(np.prod(k) * shape[1] // g)
    return x, w, rng.standard_normal(nf)


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('case', CASES)
def test_forward_matches_numpy(case, dtype, threads):
    rng = np.random.default_rng(0)
    shape, nf, k, s, p, d, g = case
    x, w, b = _inputs(case, rng)
    ref = conv_ref(x, w, k, s, d, p, g) + b.reshape((1, -1) + (1,) * len(k))
    out = mx.nd.Convolution(*[mx.nd.array(a, dtype=dtype) for a in (x, w, b)], **_attrs(case))
    assert out.dtype == np.dtype(dtype) and out.shape == ref.shape
    np.testing.assert_allclose(out.asnumpy().astype('f8'), ref, **TOL[dtype])
    out = mx.nd.Convolution(*[mx.nd.array(a, dtype=dtype) for a in (x, w)],
                            **_attrs(case, no_bias=True))
    np.testing.assert_allclose(out.asnumpy().astype('f8'), ref - b.reshape(
        (1, -1) + (1,) * len(k)), **TOL[dtype])


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('case', CASES)
def test_backward_matches_numpy(case, dtype, threads):
    rng = np.random.default_rng(1)
    shape, nf, k, s, p, d, g = case
    x, w, _ = _inputs(case, rng)
    dy = rng.standard_normal((shape[0], nf) + tuple(_conv_grid(shape[2:], k, s, d, p)))
    outs = mx.nd._backward_Convolution(*[mx.nd.array(a, dtype=dtype) for a in (dy, x, w)],
                                       **_attrs(case))
    refs = [conv_data_grad_ref(dy, w, shape, k, s, d, p, g),
            conv_weight_grad_ref(dy, x, w.shape, k, s, d, p, g),
            dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))]
    for o, r in zip(outs, refs):
        assert o.dtype == np.dtype(dtype) and o.shape == r.shape
        tol = dict(TOL[dtype])
        tol['atol'] = tol['atol'] * max(1.0, np.abs(r).max())  # long sums: relative to size
        np.testing.assert_allclose(o.asnumpy().astype('f8'), r, **tol)


@pytest.mark.parametrize('case', [c for c in CASES if np.prod(c[0]) <= 1000])
def test_gradient_finite_differences(case):
    rng = np.random.default_rng(2)
    check_grad('Convolution', list(_inputs(case, rng)), _attrs(case))


def test_results_do_not_depend_on_thread_count():
    """Depthwise gradients and the tiled forward sum in a fixed order: bit-identical results
    for any thread count."""
    rng = np.random.default_rng(3)
    old = _core.num_threads()
    try:
        for case in [CASES[0], CASES[17]]:
            x, w, b = [mx.nd.array(a, dtype='float32') for a in _inputs(case, rng)]
            dy = mx.nd.array(rng.standard_normal(
                mx.nd.Convolution(x, w, b, **_attrs(case)).shape), dtype='float32')
            res = []
            for t in (1, 2, 3):
                _core.num_threads(t)
                y = mx.nd.Convolution(x, w, b, **_attrs(case)).asnumpy()
                grads = [o.asnumpy() for o in mx.nd._backward_Convolution(dy, x, w,
                                                                          **_attrs(case))]
                res.append([y] + grads)
            for r in res[1:]:
                for a, b_ in zip(res[0], r):
                    if case[6] > 1:  # depthwise: every sum runs in one order
                        np.testing.assert_array_equal(a, b_)
                    else:
                        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5)
    finally:
        _core.num_threads(old)


def test_hybridized_depthwise_block_matches_imperative():
    """nn.Conv2D with groups == channels (MobileNet's layer) through the executor's plan."""
    from conftest import imperative_and_hybridized
    from hybridgluon.gluon import nn
    rng = np.random.default_rng(4)
    x = mx.nd.array(rng.standard_normal((2, 16, 14, 14)), dtype='float32')
    (y0, g0), (y1, g1) = imperative_and_hybridized(
        lambda: nn.Conv2D(16, 3, strides=2, padding=1, groups=16, in_channels=16), x)
    np.testing.assert_allclose(y0, y1, rtol=1e-6)
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-6)
