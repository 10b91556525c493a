"""The direct convolution for few input channels (csrc/kernels/cpu/conv_direct.c): float32 2-D
layers with at most 4 input channels, one group, no dilation and the same stride 1 or 2 both
ways (a network's first layer on RGB) take it instead of im2col + GEMM.

It sums each output in (channel, tap row, tap column) order with fused multiply-adds, so it
rounds differently from the GEMM: both stay within a few float32 ulps of the sums' size, and the
tests allow 1e-5 of the output's scale (a wrong tap, phase or border moves outputs by O(1))."""
import numpy as np
import pytest

import hybridgluon as mx
from conftest import child_result
from test_grad_conv import conv_ref
from test_winograd import _close  # the same tolerance (1e-5 of the scale)

# (N, C, H, W), num_filter, kernel, stride, pad
CASES = [
    ((2, 3, 64, 64), 64, 7, 2, 3),     # ResNet's stem, smaller
    ((1, 3, 33, 35), 32, 3, 2, 1),     # MobileNet's stem, odd sizes
    ((2, 3, 20, 18), 16, 3, 1, 1),     # VGG's first layer
    ((1, 1, 9, 11), 5, 5, 2, 2),       # one channel; filters not a multiple of a block
    ((3, 4, 17, 13), 7, 3, 1, 0),      # four channels, no padding
    ((1, 2, 8, 8), 3, 11, 1, 5),       # the largest kernel, padding up to k - 1
    ((2, 3, 7, 150), 13, 3, 2, 0),     # wide rows: several column chunks and a partial one
    ((1, 3, 40, 3), 9, 1, 1, 0),       # 1x1
    ((1, 3, 6, 6), 8, 6, 2, 5),        # even kernel, padding past the image
    ((5, 2, 12, 12), 70, 2, 2, 0),     # many filters
]


def _inputs(case, rng):
    shape, nf, k, s, p = case
    x = rng.standard_normal(shape).astype('f4').astype('f8')
    w = (rng.standard_normal((nf, shape[1], k, k)) / k).astype('f4').astype('f8')
    b = rng.standard_normal(nf).astype('f4').astype('f8')
    return x, w, b


def _ref(x, w, b, k, s, p):
    y = conv_ref(x, w, (k, k), (s, s), (1, 1), (p, p), 1)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def _conv(x, w, b, k, s, p):
    args = [mx.nd.array(a, dtype='float32') for a in ((x, w) if b is None else (x, w, b))]
    return mx.nd.Convolution(*args, kernel=(k, k), stride=(s, s), pad=(p, p),
                             num_filter=w.shape[0], no_bias=b is None).asnumpy()


@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@pytest.mark.parametrize('case', CASES)
def test_forward_matches_float64(case, bias, threads):
    x, w, b = _inputs(case, np.random.default_rng(0))
    b = b if bias else None
    _close(_conv(x, w, b, *case[2:]), _ref(x, w, b, *case[2:]))


def test_empty_batch_and_single_output():
    out = _conv(np.zeros((0, 3, 10, 10)), np.ones((4, 3, 3, 3)), np.ones(4), 3, 2, 1)
    assert out.shape == (0, 4, 5, 5)
    x, w, b = _inputs(((1, 3, 3, 3), 2, 3, 1, 0), np.random.default_rng(1))
    _close(_conv(x, w, b, 3, 1, 0), _ref(x, w, b, 3, 1, 0))   # a 1x1 output


_CHILD = r'''
import json, sys
import numpy as np
import hybridgluon as mx
shape, nf, k, s, p, path = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.standard_normal(shape).astype('f4')
w = rng.standard_normal((nf, shape[1], k, k)).astype('f4')
b = rng.standard_normal(nf).astype('f4') * 100
y = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), kernel=(k, k),
                      stride=(s, s), pad=(p, p), num_filter=nf)
np.save(path, y.asnumpy())
'''


def _child(tmp_path, case, off):
    return child_result(tmp_path, _CHILD, case, 'y%d.npy' % off,
                        {'HG_NO_CONV_DIRECT': '1'} if off else None, ['HG_NO_CONV_DIRECT'])


@pytest.mark.parametrize('case,direct', [
    (((1, 3, 32, 32), 16, 7, 2, 3), True),
    (((1, 4, 16, 16), 8, 3, 1, 1), True),
    (((1, 5, 16, 16), 8, 3, 1, 1), False),   # five channels
    (((1, 3, 17, 17), 8, 3, 3, 1), False),   # stride 3
], ids=['stem', 'four', 'five', 'stride3'])
def test_direct_path_is_taken_where_meant(tmp_path, case, direct):
    """HG_NO_CONV_DIRECT sends the layer to im2col + GEMM. Both sum the taps in the same order,
    but the direct kernel starts from the bias and the GEMM path adds it last: with a large bias
    the bits change where the direct kernel ran (and the values agree), and not elsewhere."""
    on, off = _child(tmp_path, case, 0), _child(tmp_path, case, 1)
    if direct:
        assert not np.array_equal(on, off), 'HG_NO_CONV_DIRECT changed nothing'
        _close(on, off.astype('f8'))
    else:
        np.testing.assert_array_equal(on, off)


def test_fused_activation_and_hybridized():
    """A hybridized first layer with a folded BatchNorm and a ReLU (the plan's bias + post)
    against the same block imperatively, forward and gradients."""
    from conftest import imperative_and_hybridized
    from hybridgluon.gluon import nn
    rng = np.random.default_rng(4)
    x = mx.nd.array(rng.standard_normal((2, 3, 30, 28)), dtype='float32')

    def block():
        net = nn.HybridSequential()
        net.add(nn.Conv2D(24, 7, strides=2, padding=3, in_channels=3), nn.Activation('relu'))
        return net
    (y0, g0), (y1, g1) = imperative_and_hybridized(block, x)
    np.testing.assert_allclose(y0, y1, rtol=1e-6, atol=1e-6)
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, strides=2, padding=1, in_channels=3, use_bias=False),
            nn.BatchNorm(in_channels=16), nn.Activation('relu'))
    net.initialize(mx.init.Xavier())
    for p in net.collect_params().values():   # non-trivial statistics for the fold
        if p.name.endswith(('running_mean', 'running_var')):
            p.set_data(mx.nd.array(rng.uniform(0.5, 2, p.shape), dtype='float32'))
    ref = net(x).asnumpy()
    net.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-5)


def test_more_threads_than_the_workspace_was_sized_for():
    from conftest import across_thread_counts
    from hybridgluon.gluon import nn
    x = mx.nd.array(np.random.default_rng(7).standard_normal((3, 3, 40, 40)), dtype='float32')
    mx.random.seed(8)
    net = nn.Conv2D(20, 5, strides=2, padding=2, in_channels=3)
    net.initialize()
    ref, *outs = across_thread_counts(net, lambda n: n(x).asnumpy())
    for out in outs:
        _close(out, ref.astype('f8'))


def test_float64_keeps_im2col():
    rng = np.random.default_rng(9)
    x, w, b = _inputs(((1, 3, 20, 20), 8, 3, 2, 1), rng)
    y = mx.nd.Convolution(*[mx.nd.array(a, dtype='float64') for a in (x, w, b)], kernel=(3, 3),
                          stride=(2, 2), pad=(1, 1), num_filter=8).asnumpy()
    np.testing.assert_allclose(y, _ref(x, w, b, 3, 2, 1), rtol=1e-12, atol=1e-12)
