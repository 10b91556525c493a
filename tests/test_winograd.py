"""Convolution's Winograd forward and gradients (csrc/kernels/cpu/winograd.c): float32 2-D 3x3
layers with stride 1 and enough channels and output tiles take them (see hg_winograd_pays; the
data gradient also needs padding <= 2). The forward (and so the data gradient) uses F(4x4, 3x3)
for outputs of at least 16 a side, F(2x2, 3x3) below; the weight gradient F(2x2, 3x3).
HG_WINO_M=2|4 forces one tile size (read once: tested in child processes).

Accuracy: the transforms only add, subtract and halve (exact), so the result differs from
im2col + GEMM by the rounding of a differently ordered sum. An output is a sum of 9*C products;
in float32 both paths stay within a few units of 1e-7 of the largest output (measured 1e-7 to
4e-7 for both, Winograd usually the smaller), so the tests allow 1e-5 of the output's scale:
wide enough for long sums, far below the size of any indexing or transform mistake (a wrong
tap, border or sign changes outputs by O(1) of the scale)."""
import numpy as np
import pytest

import hybridgluon as mx
from conftest import child_result
from test_grad_conv import conv_data_grad_ref, conv_ref, conv_weight_grad_ref

RTOL = 1e-5

# data shape (N, C, H, W), num_filter, pad: all on the Winograd path (C, F >= 8, >= 8 tiles and
# tiles * 16 >= C + F)
CASES = [
    ((1, 16, 8, 8), 16, 1),
    ((2, 32, 9, 11), 16, 1),        # odd H and W: the last tile row and column are clipped
    ((3, 16, 7, 5), 24, 0),         # pad 0, odd sizes
    ((2, 24, 13, 10), 32, 2),       # pad 2
    ((1, 8, 30, 33), 8, 1),         # smallest channel counts
    ((2, 16, 6, 40), 20, 1),        # wide rows: segments of many tiles
    ((5, 12, 4, 4), 16, 0),         # 2x2 outputs, one tile per image: blocks span images
    ((1, 256, 14, 14), 256, 1),     # resnet18's 14x14 stage at batch 1: one block
    ((1, 64, 28, 28), 64, 1),       # several blocks (196 tiles)
    ((4, 40, 23, 17), 48, 1),       # blocks cut across images and tile rows
    ((2, 16, 3, 3), 16, 1),         # windows wider than the image: no interior column
    ((3, 8, 2, 9), 8, 2),           # rows that lie wholly in the padding
    ((1, 8, 5, 6), 8, 3),           # pad wider than the kernel
]


def _inputs(shape, nf, rng):
    x = rng.standard_normal(shape)
    w = rng.standard_normal((nf, shape[1], 3, 3)) / np.sqrt(9 * shape[1])
    return x, w, rng.standard_normal(nf)


def _ref(x, w, b, pad):
    out = conv_ref(x, w, (3, 3), (1, 1), (1, 1), (pad, pad), 1)
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _conv(x, w, b, pad):
    args = [mx.nd.array(a, dtype='float32') for a in ((x, w) if b is None else (x, w, b))]
    return mx.nd.Convolution(*args, kernel=(3, 3), pad=(pad, pad), num_filter=w.shape[0],
                             no_bias=b is None).asnumpy()


def _close(out, ref):
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out.astype('f8'), ref, rtol=RTOL,
                               atol=RTOL * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@pytest.mark.parametrize('case', CASES)
def test_forward_matches_float64(case, bias, threads):
    shape, nf, pad = case
    x, w, b = _inputs(shape, nf, np.random.default_rng(0))
    b = b if bias else None
    # the reference sees the float32-rounded inputs: only the kernel's own rounding is measured
    x, w = x.astype('f4').astype('f8'), w.astype('f4').astype('f8')
    if b is not None:
        b = b.astype('f4').astype('f8')
    _close(_conv(x, w, b, pad), _ref(x, w, b, pad))


def test_empty_batch():
    out = _conv(np.zeros((0, 16, 10, 10)), np.ones((16, 16, 3, 3)), np.ones(16), 1)
    assert out.shape == (0, 16, 10, 10)


# Run in a child with and without HG_NO_WINOGRAD (read once per process): the two paths round
# differently, so Winograd shapes give different bits (and the same values within tolerance),
# the others identical bits.
_CHILD = r'''
import json, sys
import numpy as np
import hybridgluon as mx
shape, nf, pad, stride, path = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.standard_normal(shape).astype('f4')
w = (rng.standard_normal((nf, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype('f4')
y = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), pad=(pad, pad),
                      stride=(stride, stride), num_filter=nf, no_bias=True)
np.save(path, y.asnumpy())
'''


def _child_output(tmp_path, name, case, off, code=_CHILD, ext='npy'):
    return child_result(tmp_path, code, case, '%s_%d.%s' % (name, off, ext),
                        {'HG_NO_WINOGRAD': '1'} if off else None, ['HG_NO_WINOGRAD'])


@pytest.mark.parametrize('case,winograd', [
    (((1, 64, 28, 28), 64, 1, 1), True),
    (((2, 16, 9, 9), 8, 0, 1), True),
    (((1, 3, 32, 32), 16, 1, 1), False),      # 3 input channels (a first layer)
    (((1, 512, 7, 7), 512, 1, 1), False),     # 16 tiles for 512 channels: the weight transform
    (((1, 64, 4, 4), 64, 1, 1), False),       # 4 tiles
    (((1, 32, 28, 28), 32, 1, 2), False),     # stride 2
], ids=['resnet56', 'small', 'rgb', 'deep7x7', 'tiny', 'stride2'])
def test_winograd_path_is_taken_where_meant(tmp_path, case, winograd):
    on = _child_output(tmp_path, 'on', case, 0)
    off = _child_output(tmp_path, 'off', case, 1)
    if winograd:
        assert not np.array_equal(on, off), 'HG_NO_WINOGRAD changed nothing: Winograd not run'
        _close(on, off.astype('f8'))
    else:
        np.testing.assert_array_equal(on, off)


def test_hybridized_matches_imperative():
    """nn.Conv2D through the executor's plan (static_alloc) against op-by-op, with gradients."""
    from conftest import imperative_and_hybridized
    from hybridgluon.gluon import nn
    rng = np.random.default_rng(4)
    x = mx.nd.array(rng.standard_normal((2, 16, 15, 14)), dtype='float32')
    (y0, g0), (y1, g1) = imperative_and_hybridized(
        lambda: nn.Conv2D(24, 3, padding=1, in_channels=16), x)
    np.testing.assert_array_equal(y0, y1)
    assert len(g0) == 3  # data, weight and bias
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_gradient_finite_differences_float32():
    """The forward is linear in x and in w, so a central difference along a direction v is exact
    up to rounding for any step: (L(x + v) - L(x - v)) / 2 with L = sum(dy * conv(x, w)) run
    through the Winograd forward must equal <dL/dx, v> from the Winograd backward."""
    from hybridgluon import autograd
    rng = np.random.default_rng(6)
    x, w, b = _inputs((2, 16, 11, 9), 16, rng)
    dy = rng.standard_normal((2, 16, 11, 9))
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)

    def L(xa, wa):
        return float((_conv(xa, wa, b, 1).astype('f8') * dy).sum())

    xs = [mx.nd.array(a, dtype='float32') for a in (x, w, b)]
    for a in xs:
        a.attach_grad()
    with autograd.record():
        y = mx.nd.Convolution(*xs, kernel=(3, 3), pad=(1, 1), num_filter=16)
    y.backward(mx.nd.array(dy, dtype='float32'))
    gx, gw = xs[0].grad.asnumpy().astype('f8'), xs[1].grad.asnumpy().astype('f8')
    num_x = (L(x + vx, w) - L(x - vx, w)) / 2
    num_w = (L(x, w + vw) - L(x, w - vw)) / 2
    np.testing.assert_allclose(num_x, (gx * vx).sum(), rtol=1e-4)
    np.testing.assert_allclose(num_w, (gw * vw).sum(), rtol=1e-4)
    # and the backward itself against the float64 references
    xf, wf = x.astype('f4').astype('f8'), w.astype('f4').astype('f8')
    ref_dx = conv_data_grad_ref(dy, wf, x.shape, (3, 3), (1, 1), (1, 1), (1, 1), 1)
    ref_dw = conv_weight_grad_ref(dy, xf, w.shape, (3, 3), (1, 1), (1, 1), (1, 1), 1)
    _close(xs[0].grad.asnumpy(), ref_dx)
    _close(xs[1].grad.asnumpy(), ref_dw)


def test_more_threads_than_the_workspace_was_sized_for():
    """A plan's workspace is sized for the thread count at planning time; raised afterwards,
    the forward uses fewer slots (or smaller blocks) rather than run past it."""
    from conftest import across_thread_counts
    from hybridgluon.gluon import nn
    x = mx.nd.array(np.random.default_rng(7).standard_normal((3, 32, 30, 30)), dtype='float32')
    mx.random.seed(8)
    net = nn.Conv2D(32, 3, padding=1, in_channels=32)
    net.initialize()
    ref, *outs = across_thread_counts(net, lambda n: n(x).asnumpy())
    for out in outs:
        _close(out, ref.astype('f8'))


def test_float64_and_float16_keep_im2col():
    """Only float32 takes Winograd: float64 still agrees with the reference to 1e-12, float16
    (computed in float32 by im2col) to its own precision."""
    rng = np.random.default_rng(9)
    x, w, b = _inputs((1, 32, 12, 12), 32, rng)
    y = mx.nd.Convolution(*[mx.nd.array(a, dtype='float64') for a in (x, w, b)], kernel=(3, 3),
                          pad=(1, 1), num_filter=32).asnumpy()
    np.testing.assert_allclose(y, _ref(x, w, b, 1), rtol=1e-12, atol=1e-12)
    y16 = mx.nd.Convolution(*[mx.nd.array(a, dtype='float16') for a in (x, w, b)],
                            kernel=(3, 3), pad=(1, 1), num_filter=32).asnumpy()
    assert y16.dtype == np.float16
    np.testing.assert_allclose(y16.astype('f8'), _ref(x, w, b, 1), rtol=2e-2, atol=2e-2)


# ---- gradients ---------------------------------------------------------------------------------

GRAD_CASES = CASES + [
    ((2, 16, 40, 40), 16, 1),      # 800 tiles: per-thread blocks, each summing its own Z
    ((16, 64, 7, 7), 96, 1),       # resnet's 7x7 stage at batch 16: one block of all tiles
]


def _bw(x, w, dy, pad, bias, grad_data=True, grad_weight=True):
    """_backward_Convolution called directly: (dx, dw[, db]) as float64 arrays."""
    a = [mx.nd.array(v, dtype='float32') for v in (dy, x, w)]
    outs = mx.nd._internal._backward_Convolution(
        *a, kernel=(3, 3), pad=(pad, pad), num_filter=w.shape[0], no_bias=not bias,
        grad_data=grad_data, grad_weight=grad_weight)
    return [o.asnumpy().astype('f8') for o in outs]


@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@pytest.mark.parametrize('case', GRAD_CASES)
def test_gradients_match_float64(case, bias, threads):
    shape, nf, pad = case
    rng = np.random.default_rng(10)
    x, w, _ = _inputs(shape, nf, rng)
    x, w = x.astype('f4').astype('f8'), w.astype('f4').astype('f8')
    oshape = _ref(x, w, None, pad).shape
    dy = rng.standard_normal(oshape).astype('f4').astype('f8')
    outs = _bw(x, w, dy, pad, bias)
    k = ((3, 3), (1, 1), (1, 1), (pad, pad), 1)
    _close(outs[0].astype('f4'), conv_data_grad_ref(dy, w, x.shape, *k))
    _close(outs[1].astype('f4'), conv_weight_grad_ref(dy, x, w.shape, *k))
    if bias:
        _close(outs[2].astype('f4'), dy.sum(axis=(0, 2, 3)))


@pytest.mark.parametrize('gd,gw', [(False, True), (True, False)], ids=['weight', 'data'])
@pytest.mark.parametrize('case', [((3, 16, 12, 10), 24, 1), ((1, 8, 5, 6), 8, 3)],
                         ids=['both_winograd', 'data_by_im2col'])
def test_one_gradient_and_bias(case, gd, gw, threads):
    """One gradient asked for (a first layer's data gradient is never used): the other output is
    zeros, the bias gradient is right whether or not an im2col part is left to carry it."""
    shape, nf, pad = case
    rng = np.random.default_rng(11)
    x, w, _ = _inputs(shape, nf, rng)
    x, w = x.astype('f4').astype('f8'), w.astype('f4').astype('f8')
    dy = rng.standard_normal(_ref(x, w, None, pad).shape).astype('f4').astype('f8')
    dx, dw, db = _bw(x, w, dy, pad, True, grad_data=gd, grad_weight=gw)
    k = ((3, 3), (1, 1), (1, 1), (pad, pad), 1)
    if gd:
        _close(dx.astype('f4'), conv_data_grad_ref(dy, w, x.shape, *k))
        assert not dw.any()
    else:
        _close(dw.astype('f4'), conv_weight_grad_ref(dy, x, w.shape, *k))
        assert not dx.any()
    _close(db.astype('f4'), dy.sum(axis=(0, 2, 3)))


_GRAD_CHILD = r'''
import json, sys
import numpy as np
import hybridgluon as mx
shape, nf, pad, path = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
x = mx.nd.array(rng.standard_normal(shape).astype('f4'))
w = mx.nd.array((rng.standard_normal((nf, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype('f4'))
x.attach_grad(); w.attach_grad()
with mx.autograd.record():
    y = mx.nd.Convolution(x, w, kernel=(3, 3), pad=(pad, pad), num_filter=nf, no_bias=True)
y.backward(mx.nd.array(rng.standard_normal(y.shape).astype('f4')))
np.savez(path, dx=x.grad.asnumpy(), dw=w.grad.asnumpy())
'''


@pytest.mark.parametrize('case,data,weight', [
    (((2, 32, 14, 14), 32, 1), True, True),
    (((1, 8, 5, 6), 8, 3), False, True),      # padding 3: the data gradient stays im2col's
    (((1, 3, 32, 32), 16, 1), False, False),  # 3 input channels
], ids=['both', 'pad3', 'rgb'])
def test_gradient_paths_are_taken_where_meant(tmp_path, case, data, weight):
    res = [_child_output(tmp_path, 'g', case, off, _GRAD_CHILD, 'npz') for off in (0, 1)]
    for name, winograd in (('dx', data), ('dw', weight)):
        on, off = res[0][name], res[1][name]
        if winograd:
            assert not np.array_equal(on, off), name + ': Winograd not run'
            _close(on, off.astype('f8'))
        else:
            np.testing.assert_array_equal(on, off)


def test_backward_with_more_threads_than_the_workspace_was_sized_for():
    """The training plan's workspace is sized at planning time; with more threads later the
    gradients use fewer slots (or smaller blocks) and stay right."""
    from conftest import across_thread_counts
    from hybridgluon import autograd
    from hybridgluon.gluon import nn
    x = mx.nd.array(np.random.default_rng(12).standard_normal((3, 32, 30, 30)), dtype='float32')
    mx.random.seed(13)
    net = nn.Conv2D(32, 3, padding=1, in_channels=32)
    net.initialize()

    def grads(n):
        with autograd.record():
            y = n(x)
        y.backward()
        return [p.grad().asnumpy() for p in n.collect_params().values()]
    ref, *outs = across_thread_counts(net, grads)
    for out in outs:
        for a, b in zip(out, ref):
            _close(a, b.astype('f8'))


# ---- F(4x4, 3x3) -------------------------------------------------------------------------------
# Its transforms have constants up to 8 (F(2x2)'s: 1/2), so it rounds more: measured about 3e-6
# of the outputs' size rms and up to 1.4e-5 at the worst output (256 channels) against 3e-7 and
# 8e-7. The tolerance for it is 5e-5 of the scale: still far below any indexing, border or
# transform mistake, which moves outputs by O(1) of the scale.
RTOL4 = 5e-5

# (N, C, H, W), num_filter, pad: 4x4 tiles clipped at the bottom and right by 1, 2 and 3, pads
# 0..3, blocks across images and tile rows, one block of few tiles, many blocks per thread.
CASES4 = [
    ((1, 16, 16, 16), 16, 1),
    ((2, 24, 17, 19), 16, 1),
    ((3, 8, 18, 22), 12, 0),
    ((2, 16, 21, 18), 8, 2),
    ((1, 8, 14, 15), 8, 3),
    ((5, 8, 6, 6), 8, 1),
    ((2, 64, 28, 28), 64, 1),
    ((1, 32, 44, 70), 24, 1),
]

_CHILD4 = r'''
import json, sys
import numpy as np
import hybridgluon as mx
cases, path = json.loads(sys.argv[1])
out = {}
for i, (shape, nf, pad) in enumerate(cases):
    rng = np.random.default_rng(i)
    x = rng.standard_normal(shape).astype('f4')
    w = (rng.standard_normal((nf, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype('f4')
    b = rng.standard_normal(nf).astype('f4')
    X, W, B = (mx.nd.array(a) for a in (x, w, b))
    X.attach_grad()
    W.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(X, W, B, kernel=(3, 3), pad=(pad, pad), num_filter=nf)
    dy = rng.standard_normal(y.shape).astype('f4')
    y.backward(mx.nd.array(dy))
    out['y%d' % i], out['dx%d' % i] = y.asnumpy(), X.grad.asnumpy()
    out['dw%d' % i] = W.grad.asnumpy()
np.savez(path, **out)
'''


def _run4(tmp_path, cases, m):
    return child_result(tmp_path, _CHILD4, [cases], 'm%s.npz' % m,
                        {'HG_WINO_M': str(m)} if m else None, ['HG_NO_WINOGRAD', 'HG_WINO_M'])


def _close_tol(out, ref, rtol):
    np.testing.assert_allclose(out.astype('f8'), ref, rtol=rtol,
                               atol=rtol * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize('m', [2, 4])
def test_forced_tile_sizes_match_float64(tmp_path, m):
    """Both tile sizes on every case (forward with bias, the data gradient, which is the
    forward on dy, and the weight gradient), against float64 references of the float32-rounded
    inputs."""
    res = _run4(tmp_path, [list(c) for c in CASES4 + CASES[:6]], m)
    for i, (shape, nf, pad) in enumerate(CASES4 + CASES[:6]):
        rng = np.random.default_rng(i)
        x = rng.standard_normal(shape).astype('f4').astype('f8')
        w = (rng.standard_normal((nf, shape[1], 3, 3)) / np.sqrt(9 * shape[1]))
        w = w.astype('f4').astype('f8')
        b = rng.standard_normal(nf).astype('f4').astype('f8')
        ref = _ref(x, w, b, pad)
        dy = rng.standard_normal(ref.shape).astype('f4').astype('f8')
        tol = RTOL4 if m == 4 else RTOL
        _close_tol(res['y%d' % i], ref, tol)
        ref_dx = conv_data_grad_ref(dy, w, x.shape, (3, 3), (1, 1), (1, 1), (pad, pad), 1)
        _close_tol(res['dx%d' % i], ref_dx, tol)
        ref_dw = conv_weight_grad_ref(dy, x, w.shape, (3, 3), (1, 1), (1, 1), (pad, pad), 1)
        _close_tol(res['dw%d' % i], ref_dw, tol)


def test_tile_size_rule(tmp_path):
    """Outputs of 16 and more a side take F(4x4), and of 12 and more with at least 64 tiles:
    their results are those of HG_WINO_M=4 bit for bit; others F(2x2)'s. The weight gradient
    takes F(4x4) from 16 a side only."""
    cases = [[(1, 32, 28, 28), 32, 1], [(2, 32, 16, 20), 16, 1], [(2, 32, 14, 14), 32, 1],
             [(1, 32, 15, 40), 32, 1], [(4, 16, 14, 14), 16, 1], [(4, 16, 11, 40), 16, 1]]
    default, m2, m4 = (_run4(tmp_path, cases, m) for m in (None, 2, 4))
    # 14x14 and 15x40 outputs: F(4x4) from 64 tiles (4 images of 14x14); 11 rows never
    for i, want in enumerate([4, 4, 2, 2, 4, 2]):
        same, other = (m4, m2) if want == 4 else (m2, m4)
        np.testing.assert_array_equal(default['y%d' % i], same['y%d' % i])
        assert not np.array_equal(default['y%d' % i], other['y%d' % i])
        same, other = (m4, m2) if i < 2 else (m2, m4)
        np.testing.assert_array_equal(default['dw%d' % i], same['dw%d' % i])
        assert not np.array_equal(default['dw%d' % i], other['dw%d' % i])


def test_float16_gradients_keep_im2col():
    """float16 runs its backward in float32 copies with a workspace sized for im2col: a layer
    that float32 sends to Winograd must not take it there (its workspace is larger)."""
    rng = np.random.default_rng(14)
    x, w, _ = _inputs((2, 32, 20, 20), 32, rng)
    x, w = x.astype('f2').astype('f8'), w.astype('f2').astype('f8')
    dy = rng.standard_normal((2, 32, 20, 20)).astype('f2').astype('f8')
    a = [mx.nd.array(v, dtype='float16') for v in (dy, x, w)]
    dx, dw, db = mx.nd._internal._backward_Convolution(*a, kernel=(3, 3), pad=(1, 1),
                                                       num_filter=32)
    k = ((3, 3), (1, 1), (1, 1), (1, 1), 1)
    for out, ref in ((dx, conv_data_grad_ref(dy, w, x.shape, *k)),
                     (dw, conv_weight_grad_ref(dy, x, w.shape, *k)), (db, dy.sum(axis=(0, 2, 3)))):
        assert out.dtype == np.float16
        np.testing.assert_allclose(out.asnumpy().astype('f8'), ref, rtol=2e-2,
                                   atol=2e-2 * np.abs(ref).max())


@pytest.mark.parametrize('case', [((2, 16, 12, 12), 16, (3, 3), (1, 1), (1, 1)),
                                  ((8, 64, 14, 14), 64, (3, 3), (2, 2), (1, 1))],
                         ids=['winograd_shape', 'packed_deep'])
def test_bias_gradient_alone(case):
    """grad_data and grad_weight both False (only the bias trains): no workspace is needed for
    the products, the bias gradient is dy's sum, the other outputs zeros."""
    shape, nf, k, s, p = case
    rng = np.random.default_rng(15)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((nf, shape[1]) + k)
    oh = (shape[2] + 2 * p[0] - k[0]) // s[0] + 1
    dy = rng.standard_normal((shape[0], nf, oh, oh)).astype('f4').astype('f8')
    a = [mx.nd.array(v, dtype='float32') for v in (dy, x, w)]
    dx, dw, db = mx.nd._internal._backward_Convolution(*a, kernel=k, stride=s, pad=p,
                                                       num_filter=nf, grad_data=False,
                                                       grad_weight=False)
    assert not dx.asnumpy().any() and not dw.asnumpy().any()
    _close(db.asnumpy(), dy.sum(axis=(0, 2, 3)))
