"""GPU kernels of the image ops, im2col / col2im, _histogram and the creation ops against their
CPU kernels (csrc/kernels/cuda/image.cu, image_resize.cu, im2col.cu, creation.cu).

The op conformance cases in tests/test_gpu.py cover the deterministic ops on the fixtures'
small inputs; these add the random image ops (same seed, same draws: the GPU results must be the
CPU's bit for bit), larger and odd-shaped inputs of every dtype the CPU op takes, and the
creation functions on a GPU context. They need a GPU and skip without one.
"""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.base import MXNetError

HAVE_GPU = mx.context.num_gpus() > 0
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not HAVE_GPU, reason='no GPU in this process (num_gpus() == 0)')]

NUMBER_DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int8', 'int32', 'int64']


def _data(shape, dtype, seed=0):
    rs = np.random.RandomState(seed)
    if dtype == 'uint8':
        return rs.randint(0, 256, shape).astype(dtype)
    if dtype == 'int8':
        return rs.randint(-128, 128, shape).astype(dtype)
    if dtype in ('int32', 'int64'):
        return rs.randint(-300, 300, shape).astype(dtype)
    return (rs.rand(*shape) * 300 - 20).astype(dtype)


def _run(op, data, seed, ctx, **attrs):
    mx.random.seed(seed)
    args = [] if data is None else [mx.nd.array(data, dtype=data.dtype, ctx=ctx)]
    out = mx._core.get_op(op)(*args, **attrs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.asnumpy() for o in outs]


def _same_bits(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), \
        '%s: %s' % (what, np.argwhere(got != want)[:5].tolist())


def _check(op, data, seed=3, **attrs):
    want = _run(op, data, seed, mx.cpu(), **attrs)
    got = _run(op, data, seed, mx.gpu(0), **attrs)
    for k, (g, w) in enumerate(zip(got, want)):
        _same_bits(g, w, '%s output %d (%s)' % (op, k, attrs))


@pytest.mark.parametrize('dtype', NUMBER_DTYPES)
@pytest.mark.parametrize('shape', [(5, 7, 3), (4, 6, 1), (64, 48, 3)])
def test_color_ops_match_cpu(dtype, shape):
    x = _data(shape, dtype)
    for lo, hi in [(0.3, 1.7), (0.0, 2.5)]:
        for op in ('_image_random_brightness', '_image_random_contrast',
                   '_image_random_saturation', '_image_random_hue'):
            _check(op, x, min_factor=lo, max_factor=hi)
    for seed in (1, 2, 3):
        _check('_image_random_color_jitter', x, seed, brightness=0.4, contrast=0.4,
               saturation=0.4, hue=0.1)
    _check('_image_random_color_jitter', x, brightness=0, contrast=0.5, saturation=0, hue=0.2)
    _check('_image_adjust_lighting', x, alpha=(-1.0, 0.5, 2.0))
    _check('_image_random_lighting', x, alpha_std=0.5)


@pytest.mark.parametrize('dtype', NUMBER_DTYPES + ['bool'])
def test_flips_and_crop_match_cpu(dtype):
    x = _data((6, 5, 3), dtype) if dtype != 'bool' else _data((6, 5, 3), 'uint8') > 100
    for op in ('_image_flip_left_right', '_image_flip_top_bottom'):
        _check(op, x)
    for seed in range(6):  # both outcomes of the draw, and the hidden flag
        for op in ('_image_random_flip_left_right', '_image_random_flip_top_bottom'):
            _check(op, x, seed)
    _check('_image_crop', x, x=1, y=2, width=3, height=4)
    _check('_image_crop', np.stack([x, x[::-1]]), x=0, y=1, width=5, height=2)


@pytest.mark.parametrize('op', ['_image_random_flip_left_right', '_image_random_flip_top_bottom',
                                '_image_crop', '_image_normalize'])
def test_image_gradients_match_cpu(op):
    attrs = {'_image_crop': dict(x=1, y=1, width=2, height=3),
             '_image_normalize': dict(mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 0.7))}.get(op, {})
    shape = (3, 5, 6) if op == '_image_normalize' else (5, 6, 3)
    x = _data(shape, 'float32')
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        for seed in (0, 1, 2):
            mx.random.seed(seed)
            a = mx.nd.array(x, ctx=ctx)
            a.attach_grad()
            with mx.autograd.record():
                y = mx._core.get_op(op)(a, **attrs)
            dy = mx.nd.array(_data(y.shape, 'float32', 5), ctx=ctx)
            y.backward(dy)
            res.append((y.asnumpy(), a.grad.asnumpy()))
    n = len(res) // 2
    for (yc, gc), (yg, gg) in zip(res[:n], res[n:]):
        _same_bits(yg, yc, op + ' output')
        _same_bits(gg, gc, op + ' gradient')


@pytest.mark.parametrize('dtype', NUMBER_DTYPES)
def test_normalize_and_to_tensor_match_cpu(dtype):
    for shape in [(3, 8, 7), (2, 1, 5, 4)]:
        x = _data(shape, dtype)
        _check('_image_normalize', x, mean=0.5, std=2.0)
        _check('_backward_image_normalize', x, mean=0.5, std=0.3)
        if shape[-3] == 3:
            _check('_image_normalize', x, mean=(100, 120, 140), std=(2, 3, 0.7))
    _check('_image_to_tensor', _data((9, 7, 3), dtype))
    _check('_image_to_tensor', _data((2, 4, 5, 1), dtype))


@pytest.mark.parametrize('dtype', ['uint8', 'float32', 'float64'])
@pytest.mark.parametrize('interp', [0, 1, 2, 3, 4])
def test_resize_matches_cpu(dtype, interp):
    sizes = [((13, 9, 3), (17, 6)), ((8, 12, 3), (4, 4)), ((40, 30, 3), (20, 15)),
             ((31, 17, 1), (50, 41)), ((16, 16, 4), (8, 8)), ((2, 7, 5, 3), (9, 11)),
             ((25, 37, 3), (10, 13))]
    for shape, size in sizes:
        x = _data(shape, dtype)
        want = _run('_image_resize', x, 0, mx.cpu(), size=size, interp=interp)[0]
        got = _run('_image_resize', x, 0, mx.gpu(0), size=size, interp=interp)[0]
        if interp == 4:
            # Lanczos weights come from double sin/cos, which CUDA may round one unit in the
            # last place away from the host's: allow a unit of uint8 / a float rounding.
            if dtype == 'uint8':
                assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
        else:
            _same_bits(got, want, 'resize %s %s interp %d' % (shape, size, interp))


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_im2col_col2im_match_cpu(dtype):
    cases = [((2, 3, 7, 6), dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))),
             ((2, 2, 9), dict(kernel=(3,), stride=(2,), pad=(2,))),
             ((1, 2, 5, 6, 4), dict(kernel=(2, 3, 2), stride=(1, 2, 1), dilate=(2, 1, 1),
                                   pad=(1, 0, 1))),
             ((2, 1, 8, 8), dict(kernel=(3, 3), pad=(2, 2)))]
    for shape, attrs in cases:
        x = (np.random.RandomState(1).randn(*shape) * 5).astype(dtype)
        _check('im2col', x, **attrs)
        col = _run('im2col', x, 0, mx.cpu(), **attrs)[0]
        col = (np.random.RandomState(2).randn(*col.shape) * 5).astype(dtype)
        _check('col2im', col, output_size=shape[2:], **attrs)
        res = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            a = mx.nd.array(x, dtype=dtype, ctx=ctx)
            a.attach_grad()
            with mx.autograd.record():
                y = mx.nd.im2col(a, **attrs)
            y.backward(mx.nd.array(col, dtype=dtype, ctx=ctx))
            res.append(a.grad.asnumpy())
        _same_bits(res[1], res[0], '_backward_im2col %s' % (attrs,))


@pytest.mark.parametrize('dtype', NUMBER_DTYPES)
def test_histogram_matches_cpu(dtype):
    x = _data((500,), dtype)
    for nb, lo, hi in [(5, -2.0, 2.0), (7, 0.0, 100.0), (3, 1.0, 1.0), (10, -50.5, 250.25)]:
        _check('_histogram', x, bin_cnt=nb, range=(lo, hi))
    bins = np.array([-20, 0, 3.5, 100, 101, 290]).astype(dtype)  # wraps for 8-bit types
    hist = mx._core.get_op('_histogram')
    cpu = hist(mx.nd.array(x, dtype=dtype), mx.nd.array(bins, dtype=dtype))
    gpu = hist(mx.nd.array(x, dtype=dtype, ctx=mx.gpu(0)),
               mx.nd.array(bins, dtype=dtype, ctx=mx.gpu(0)))
    for g, c in zip(gpu, cpu):
        _same_bits(g.asnumpy(), c.asnumpy(), '_histogram with bins')


@pytest.mark.parametrize('dtype', NUMBER_DTYPES + ['bool'])
def test_creation_functions_on_gpu(dtype):
    """nd.zeros ... nd.linspace on a GPU context: made there by the ops' GPU kernels, the CPU's
    values; out= may be a GPU array."""
    g = mx.gpu(0)
    made = [
        (mx.nd.zeros((3, 4), ctx=g, dtype=dtype), mx.nd.zeros((3, 4), dtype=dtype)),
        (mx.nd.ones((3, 4), ctx=g, dtype=dtype), mx.nd.ones((3, 4), dtype=dtype)),
        (mx.nd.full((5,), -1.7, ctx=g, dtype=dtype), mx.nd.full((5,), -1.7, dtype=dtype)),
        (mx.nd.full((5,), 300.6, ctx=g, dtype=dtype), mx.nd.full((5,), 300.6, dtype=dtype)),
        (mx.nd.arange(0.1, 30, 1.3, repeat=3, ctx=g, dtype=dtype),
         mx.nd.arange(0.1, 30, 1.3, repeat=3, dtype=dtype)),
        (mx.nd.arange(-3.7, 400, 2.9, ctx=g, dtype=dtype),
         mx.nd.arange(-3.7, 400, 2.9, dtype=dtype)),
        (mx.nd.eye(4, 6, 1, ctx=g, dtype=dtype), mx.nd.eye(4, 6, 1, dtype=dtype)),
        (mx.nd.eye(5, 3, -2, ctx=g, dtype=dtype), mx.nd.eye(5, 3, -2, dtype=dtype)),
        (mx.nd.linspace(3.3, -200.7, 11, ctx=g, dtype=dtype),
         mx.nd.linspace(3.3, -200.7, 11, dtype=dtype)),
        (mx.nd.linspace(0, 1, 4, endpoint=False, ctx=g, dtype=dtype),
         mx.nd.linspace(0, 1, 4, endpoint=False, dtype=dtype)),
    ]
    for k, (got, want) in enumerate(made):
        assert got.context == g, k
        _same_bits(got.asnumpy(), want.asnumpy(), 'creation %d' % k)
    assert mx.nd.empty((2, 3), ctx=g, dtype=dtype).context == g
    with g:
        assert mx.nd.ones((2,), dtype=dtype).context == g
    out = mx.nd.empty((2, 3), ctx=g, dtype=dtype)
    mx.nd.ones((2, 3), dtype=dtype, out=out)
    _same_bits(out.asnumpy(), np.ones((2, 3), dtype=dtype), 'ones(out=gpu)')
    mx.nd.full((2, 3), 7, dtype=dtype, out=out)
    _same_bits(out.asnumpy(), np.full((2, 3), 7, dtype=dtype), 'full(out=gpu)')
    mx.nd.zeros((2, 3), dtype=dtype, out=out)
    _same_bits(out.asnumpy(), np.zeros((2, 3), dtype=dtype), 'zeros(out=gpu)')


def test_creation_errors_unchanged_on_gpu():
    with pytest.raises(MXNetError, match='step'):
        mx.nd.arange(0, 3, 0, ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match='no elements'):
        mx.nd.arange(3, 0, ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match='non-negative'):
        mx.nd.linspace(0, 1, -1, ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match='not available'):
        mx.nd.ones((2,), ctx=mx.gpu(mx.context.num_gpus()))
