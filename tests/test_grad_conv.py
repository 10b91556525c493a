"""Gradients of Convolution, Deconvolution, Pooling, Pad and UpSampling: the rules against finite
differences (gradcheck) and the _backward_* kernels they emit against NumPy references."""
import itertools

import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

GRADS_COVERED = ['Convolution', 'Deconvolution', 'Pooling', 'Pad', 'UpSampling', '_backward_Pad',
                 '_backward_UpSampling']
OPS_COVERED = ['_backward_Convolution', '_backward_Deconvolution', '_backward_Pooling',
               '_backward_Pad', '_backward_UpSampling']

TOL = {'float16': dict(rtol=2e-2, atol=2e-2), 'float32': dict(rtol=1e-4, atol=1e-4),
       'float64': dict(rtol=1e-10, atol=1e-10)}


# ---- NumPy references ----------------------------------------------------------------------

def _taps(k, s, d, grid):
    """(kernel offset, window slices) pairs: tap kk of every grid position reads the padded
    image at o*s + kk*d."""
    for kk in itertools.product(*[range(n) for n in k]):
        yield kk, tuple(slice(kk[i] * d[i], kk[i] * d[i] + (grid[i] - 1) * s[i] + 1, s[i])
                        for i in range(len(k)))


def _conv_grid(shape, k, s, d, p):
    return [(shape[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k))]


def conv_ref(x, w, k, s, d, p, groups, grid=None):
    """Convolution without bias on the window grid `grid` (default: the one x's size gives)."""
    nsp = len(k)
    grid = grid or _conv_grid(x.shape[2:], k, s, d, p)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    N, C, F = x.shape[0], x.shape[1], w.shape[0]
    Cg, Fg = C // groups, F // groups
    out = np.zeros((N, F) + tuple(grid))
    for g in range(groups):
        for kk, win in _taps(k, s, d, grid):
            patch = xp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + win]
            tap = w[(slice(g * Fg, (g + 1) * Fg), slice(None)) + kk]
            out[:, g * Fg:(g + 1) * Fg] += np.einsum('nc...,fc->nf...', patch, tap)
    assert out.ndim == nsp + 2
    return out


def conv_data_grad_ref(dy, w, xshape, k, s, d, p, groups):
    """The adjoint of conv_ref in x: each tap scatters W^T dy back onto the padded image."""
    grid = dy.shape[2:]
    N, C, F = xshape[0], xshape[1], w.shape[0]
    Cg, Fg = C // groups, F // groups
    dxp = np.zeros((N, C) + tuple(xshape[2 + i] + 2 * p[i] for i in range(len(k))))
    for g in range(groups):
        for kk, win in _taps(k, s, d, grid):
            tap = w[(slice(g * Fg, (g + 1) * Fg), slice(None)) + kk]
            dxp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + win] += np.einsum(
                'nf...,fc->nc...', dy[:, g * Fg:(g + 1) * Fg], tap)
    return dxp[(slice(None), slice(None)) + tuple(slice(q, q + n) for q, n in
                                                  zip(p, xshape[2:]))]


def conv_weight_grad_ref(dy, x, wshape, k, s, d, p, groups):
    grid = dy.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    F, Cg = wshape[0], wshape[1]
    Fg = F // groups
    dw = np.zeros(wshape)
    for g in range(groups):
        for kk, win in _taps(k, s, d, grid):
            patch = xp[(slice(None), slice(g * Cg, (g + 1) * Cg)) + win]
            dyg = dy[:, g * Fg:(g + 1) * Fg]
            dw[(slice(g * Fg, (g + 1) * Fg), slice(None)) + kk] = np.einsum(
                'nfp,ncp->fc', dyg.reshape(dyg.shape[:2] + (-1,)),
                patch.reshape(patch.shape[:2] + (-1,)))
    return dw


def _bias_grad(dy):
    return dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))


# ---- Convolution ---------------------------------------------------------------------------

CONV_CASES = [
    # data shape, num_filter, kernel, stride, pad, dilate, groups, no_bias
    ((2, 3, 7), 4, (3,), (1,), (0,), (1,), 1, False),
    ((2, 4, 7), 2, (2,), (2,), (2,), (2,), 2, True),
    ((2, 3, 6, 5), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, False),
    ((2, 4, 7, 6), 6, (3, 2), (2, 1), (1, 0), (1, 2), 2, False),
    ((2, 3, 5, 5), 2, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),   # 1x1: no im2col
    ((2, 2, 6, 5), 3, (1, 1), (2, 2), (0, 0), (1, 1), 1, True),    # 1x1 strided
    ((2, 3, 5, 6), 6, (3, 3), (2, 1), (2, 1), (1, 1), 3, False),   # depthwise x2
    ((2, 2, 4, 5, 5), 2, (2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 1, False),
    ((2, 2, 3, 4, 5), 4, (1, 2, 2), (2, 1, 1), (0, 1, 0), (1, 1, 1), 2, True),
    ((1, 1, 1, 1), 2, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),   # 1-element image
    ((2, 2, 4, 3), 2, (2, 2), (3, 2), (3, 2), (1, 1), 1, False),   # pad > kernel
]


def _conv_attrs(case):
    shape, nf, k, s, p, d, g, nb = case
    return dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=nf, num_group=g, no_bias=nb)


def _conv_inputs(case, rng):
    shape, nf, k, s, p, d, g, nb = case
    x = rng.standard_normal(shape)
    w = rng.standard_normal((nf, shape[1] // g) + k)
    return [x, w] if nb else [x, w, rng.standard_normal(nf)]


@pytest.mark.parametrize('case', CONV_CASES)
def test_convolution_grad(case):
    rng = np.random.default_rng(1)
    check_grad('Convolution', _conv_inputs(case, rng), _conv_attrs(case))


def test_convolution_grad_parts():
    """A rule that needs only some gradients skips the others (grad_data / grad_weight)."""
    rng = np.random.default_rng(2)
    case = CONV_CASES[3]
    xs = _conv_inputs(case, rng)
    check_grad('Convolution', xs, _conv_attrs(case), wrt=[1, 2])
    check_grad('Convolution', xs, _conv_attrs(case), wrt=[0])
    check_grad('Convolution', xs, _conv_attrs(case), wrt=[2])


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('case', CONV_CASES + [
    ((5, 3, 9, 8), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, False),     # image slots
    ((2, 8, 30, 30), 32, (5, 5), (1, 1), (2, 2), (1, 1), 1, False),  # large: serial path
    # pointwise, expanding, dy over 1 MB: runs of 1024 positions (the last 452 long)
    ((3, 8, 50, 50), 128, (1, 1), (1, 1), (0, 0), (1, 1), 1, False),
    ((2, 16, 60, 60), 256, (1, 1), (1, 1), (0, 0), (1, 1), 2, False),  # the same in 2 groups
])
def test_backward_convolution_forward(case, dtype):
    rng = np.random.default_rng(3)
    shape, nf, k, s, p, d, g, nb = case
    x, w = _conv_inputs(case, rng)[:2]
    if dtype == 'float16':
        x, w = x.astype('f2').astype('f8'), w.astype('f2').astype('f8')
    grid = _conv_grid(shape[2:], k, s, d, p)
    dy = rng.standard_normal((shape[0], nf) + tuple(grid))
    if dtype == 'float16':
        dy = dy.astype('f2').astype('f8')
    outs = mx.nd._backward_Convolution(*[mx.nd.array(a, dtype=dtype) for a in (dy, x, w)],
                                       **_conv_attrs(case))
    assert len(outs) == (2 if nb else 3)
    refs = [conv_data_grad_ref(dy, w, shape, k, s, d, p, g),
            conv_weight_grad_ref(dy, x, w.shape, k, s, d, p, g), _bias_grad(dy)]
    tol = dict(TOL[dtype])
    if dtype == 'float16':   # sums of many products: relative to their size
        tol['atol'] = 2e-2 * max(1.0, np.abs(refs[1]).max() / 10)
    for o, r in zip(outs, refs):
        assert o.dtype == np.dtype(dtype) and o.shape == r.shape
        np.testing.assert_allclose(o.asnumpy().astype('f8'), r, **tol)


def test_backward_convolution_skips_parts():
    rng = np.random.default_rng(4)
    case = CONV_CASES[2]
    x, w, b = [mx.nd.array(a) for a in _conv_inputs(case, rng)]
    dy = mx.nd.array(rng.standard_normal((2, 4, 6, 5)))
    full = mx.nd._backward_Convolution(dy, x, w, **_conv_attrs(case))
    part = mx.nd._backward_Convolution(dy, x, w, grad_data=False, **_conv_attrs(case))
    np.testing.assert_array_equal(part[0].asnumpy(), 0)
    np.testing.assert_allclose(part[1].asnumpy(), full[1].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(part[2].asnumpy(), full[2].asnumpy(), rtol=1e-6)
    part = mx.nd._backward_Convolution(dy, x, w, grad_weight=False, **_conv_attrs(case))
    np.testing.assert_array_equal(part[1].asnumpy(), 0)
    np.testing.assert_allclose(part[0].asnumpy(), full[0].asnumpy(), rtol=1e-6)


@pytest.mark.parametrize('threads', [1, 3])
def test_backward_convolution_thread_counts(threads):
    """Per-slot partial sums of the weight gradient add up the same for any thread count."""
    rng = np.random.default_rng(5)
    case = ((7, 4, 8, 8), 6, (3, 3), (1, 1), (1, 1), (1, 1), 2, False)
    x, w, _ = _conv_inputs(case, rng)
    dy = rng.standard_normal((7, 6, 8, 8))
    old = mx._core.num_threads()
    try:
        mx._core.num_threads(threads)
        outs = mx.nd._backward_Convolution(*[mx.nd.array(a, dtype='f8') for a in (dy, x, w)],
                                           **_conv_attrs(case))
    finally:
        mx._core.num_threads(old)
    k, s, p, d = (3, 3), (1, 1), (1, 1), (1, 1)
    np.testing.assert_allclose(outs[0].asnumpy(), conv_data_grad_ref(dy, w, x.shape, k, s, d, p, 2),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(outs[1].asnumpy(),
                               conv_weight_grad_ref(dy, x, w.shape, k, s, d, p, 2),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(outs[2].asnumpy(), _bias_grad(dy), rtol=1e-10, atol=1e-10)


def test_backward_convolution_bad_ograd():
    x, w = mx.nd.ones((2, 3, 5, 5)), mx.nd.ones((4, 3, 3, 3))
    with pytest.raises(mx.MXNetError, match='_backward_Convolution: output gradient'):
        mx.nd._backward_Convolution(mx.nd.ones((2, 4, 4, 4)), x, w, kernel=(3, 3), num_filter=4,
                                    no_bias=True)
    with pytest.raises(mx.MXNetError, match='weight shape'):
        mx.nd._backward_Convolution(mx.nd.ones((2, 4, 3, 3)), x, mx.nd.ones((4, 2, 3, 3)),
                                    kernel=(3, 3), num_filter=4, no_bias=True)


# ---- Deconvolution -------------------------------------------------------------------------

DECONV_CASES = [
    # data shape, num_filter, kernel, stride, pad, dilate, adj, target_shape, groups, no_bias
    ((2, 3, 5), 2, (3,), (1,), (0,), (1,), (0,), (), 1, True),
    ((2, 4, 4), 4, (3,), (2,), (1,), (2,), (1,), (), 2, False),
    ((2, 3, 4, 3), 2, (3, 3), (2, 2), (1, 1), (1, 1), (1, 0), (), 1, False),
    ((2, 4, 3, 4), 6, (2, 3), (1, 2), (0, 1), (2, 1), (0, 1), (), 2, True),
    ((2, 2, 3, 3), 3, (3, 3), (2, 2), (0, 0), (1, 1), (0, 0), (6, 7), 1, False),  # target
    ((2, 2, 4, 4), 2, (1, 1), (1, 1), (0, 0), (1, 1), (0, 0), (), 1, False),      # 1x1
    ((2, 2, 2, 3, 3), 2, (2, 2, 3), (1, 2, 1), (0, 1, 1), (1, 1, 1), (0, 1, 0), (), 1, False),
    ((1, 2, 1, 1, 2), 4, (1, 2, 2), (1, 1, 2), (0, 0, 0), (1, 2, 1), (0, 0, 1), (), 2, True),
]


def _deconv_attrs(case):
    shape, nf, k, s, p, d, adj, tgt, g, nb = case
    a = dict(kernel=k, stride=s, pad=p, dilate=d, adj=adj, num_filter=nf, num_group=g,
             no_bias=nb)
    if tgt:
        a['target_shape'] = tgt
    return a


def _deconv_inputs(case, rng):
    shape, nf, k, s, p, d, adj, tgt, g, nb = case
    x = rng.standard_normal(shape)
    w = rng.standard_normal((shape[1], nf // g) + k)
    return [x, w] if nb else [x, w, rng.standard_normal(nf)]


def _deconv_geometry(case):
    """Effective pad and output size, as MXNet's target_shape rule gives them."""
    shape, nf, k, s, p, d, adj, tgt, g, nb = case
    pads, outs = [], []
    for i in range(len(k)):
        full = s[i] * (shape[2 + i] - 1) + d[i] * (k[i] - 1) + 1
        if tgt:
            total = full - tgt[i]
            pad, a = (total + 1) // 2, total % 2
        else:
            pad, a = p[i], adj[i]
        pads.append(pad)
        outs.append(full - 2 * pad + a)
    return pads, outs


@pytest.mark.parametrize('case', DECONV_CASES)
def test_deconvolution_grad(case):
    rng = np.random.default_rng(6)
    check_grad('Deconvolution', _deconv_inputs(case, rng), _deconv_attrs(case))


def test_deconvolution_grad_parts():
    rng = np.random.default_rng(7)
    case = DECONV_CASES[2]
    xs = _deconv_inputs(case, rng)
    check_grad('Deconvolution', xs, _deconv_attrs(case), wrt=[1, 2])
    check_grad('Deconvolution', xs, _deconv_attrs(case), wrt=[0])


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('case', DECONV_CASES + [
    ((6, 4, 5, 5), 3, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (), 1, False),  # image slots
])
def test_backward_deconvolution_forward(case, dtype):
    rng = np.random.default_rng(8)
    shape, nf, k, s, p, d, adj, tgt, g, nb = case
    x, w = _deconv_inputs(case, rng)[:2]
    pads, osz = _deconv_geometry(case)
    dy = rng.standard_normal((shape[0], nf) + tuple(osz))
    outs = mx.nd._backward_Deconvolution(*[mx.nd.array(a, dtype=dtype) for a in (dy, x, w)],
                                         **_deconv_attrs(case))
    assert len(outs) == (2 if nb else 3)
    # Deconvolution is Convolution's data adjoint, so its gradients are a convolution of dy
    # (data) and Convolution's weight gradient with the roles of x and dy swapped.
    refs = [conv_ref(dy, w, k, s, d, pads, g, grid=list(shape[2:])),
            conv_weight_grad_ref(x, dy, w.shape, k, s, d, pads, g), _bias_grad(dy)]
    for o, r in zip(outs, refs):
        assert o.dtype == np.dtype(dtype) and o.shape == r.shape
        np.testing.assert_allclose(o.asnumpy(), r, **TOL[dtype])


def test_deconvolution_target_shape_too_big():
    with pytest.raises(mx.MXNetError, match='target_shape'):
        mx.nd.Deconvolution(mx.nd.ones((1, 2, 5)), mx.nd.ones((2, 3, 3)), kernel=(3,),
                            num_filter=3, target_shape=(8,))


# ---- Pooling -------------------------------------------------------------------------------

def _windows(xshape, oshape, k, s, p):
    """(output index, in-range slices, padded size, in-range size) for every output."""
    for o in itertools.product(*[range(n) for n in oshape]):
        sl, padded, inside = [], 1, 1
        for i in range(len(k)):
            a = o[i] * s[i] - p[i]
            b = min(a + k[i], xshape[i] + p[i])
            padded *= max(b - a, 0)
            a, b = max(a, 0), min(b, xshape[i])
            inside *= max(b - a, 0)
            sl.append(slice(a, max(a, b)))
        yield o, tuple(sl), padded, inside


def pool_grad_ref(dy, x, y, pool_type, k, s, p, cip=True, pv=1):
    """Loops over windows: MXNet's max sends dy to the first element equal to the output."""
    dx = np.zeros_like(x)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o, sl, padded, inside in _windows(x.shape[2:], dy.shape[2:], k, s, p):
            g = dy[(n, c) + o]
            win = x[(n, c) + sl]
            dwin = dx[(n, c) + sl]
            if pool_type == 'max':
                hits = np.flatnonzero(win == y[(n, c) + o])
                if hits.size:
                    dwin[np.unravel_index(hits[0], win.shape)] += g   # dwin is a view of dx
            elif pool_type == 'avg':
                dwin += g / (padded if cip else inside)
            elif pool_type == 'sum':
                dwin += g
            else:
                yv = y[(n, c) + o]
                dwin += g * (0 if yv == 0 else (win / yv) ** (pv - 1))
    return dx


POOL_CASES = [
    # data shape, attrs
    ((2, 3, 7), dict(kernel=(3,), pool_type='max', stride=(2,), pad=(1,))),
    ((2, 2, 7), dict(kernel=(3,), pool_type='sum', stride=(2,), pooling_convention='same')),
    ((2, 2, 8), dict(kernel=(2,), pool_type='avg', stride=(3,), pooling_convention='same')),
    ((2, 3, 6, 7), dict(kernel=(3, 3), pool_type='max', stride=(2, 2), pad=(1, 1))),
    ((2, 3, 6, 6), dict(kernel=(2, 2), pool_type='max', stride=(2, 2))),              # fast path
    ((2, 2, 7, 5), dict(kernel=(2, 2), pool_type='max', stride=(2, 2))),              # odd sizes
    ((2, 2, 6, 7), dict(kernel=(3, 2), pool_type='max', stride=(2, 2), pooling_convention='full')),
    ((2, 3, 6, 7), dict(kernel=(3, 2), pool_type='avg', stride=(2, 1), pad=(1, 1),
                        pooling_convention='full')),
    ((2, 3, 6, 7), dict(kernel=(3, 2), pool_type='avg', stride=(2, 1), pad=(1, 1),
                        count_include_pad=False)),
    ((2, 2, 5, 6), dict(kernel=(2, 3), pool_type='sum', pad=(1, 0))),
    ((2, 2, 5, 6), dict(kernel=(2, 2), pool_type='lp', p_value=2, stride=(1, 2))),
    ((2, 2, 4, 5, 5), dict(kernel=(2, 3, 2), pool_type='lp', p_value=3, stride=(1, 2, 2))),
    ((2, 2, 4, 5, 5), dict(kernel=(2, 2, 2), pool_type='lp', p_value=1, stride=(2, 2, 2))),
    ((2, 2, 4, 5, 6), dict(kernel=(2, 3, 2), pool_type='max', stride=(2, 1, 2), pad=(1, 1, 0))),
    ((2, 2, 4, 5, 6), dict(kernel=(3, 3, 3), pool_type='avg', stride=(2, 2, 2), pad=(1, 1, 1),
                           count_include_pad=False, pooling_convention='full')),
    ((2, 2, 5, 5), dict(kernel=(2, 2), pool_type='max', global_pool=True)),
    ((2, 2, 5, 4), dict(pool_type='avg', global_pool=True)),
    ((2, 2, 3, 4, 5), dict(pool_type='lp', p_value=2, global_pool=True)),
    ((1, 1, 1, 1), dict(kernel=(1, 1), pool_type='max')),
]


def _distinct(shape, rng):
    """Values at least 0.05 apart, so no max tie or kink sits within finite-difference reach."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - np.prod(shape) / 2) * 0.05


@pytest.mark.parametrize('shape,attrs', POOL_CASES)
def test_pooling_grad(shape, attrs):
    rng = np.random.default_rng(9)
    x = _distinct(shape, rng)
    if attrs['pool_type'] == 'lp' and attrs.get('p_value') == 2:
        x = x + 0.02   # no all-zero window (sqrt's kink)
    check_grad('Pooling', [x], attrs)


def _pool_geometry(shape, attrs):
    nsp = len(shape) - 2
    if attrs.get('global_pool'):
        return list(shape[2:]), [1] * nsp, [0] * nsp
    return (list(attrs['kernel']), list(attrs.get('stride', (1,) * nsp)),
            list(attrs.get('pad', (0,) * nsp)))


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('shape,attrs', POOL_CASES)
def test_backward_pooling_forward(shape, attrs, dtype):
    rng = np.random.default_rng(10)
    x = _distinct(shape, rng).astype(dtype)
    if attrs['pool_type'] == 'max':
        x.reshape(-1)[::3] = x.reshape(-1)[0]   # ties: the first equal element gets it
    y = mx.nd.Pooling(mx.nd.array(x, dtype=dtype), **attrs)
    dy = rng.standard_normal(y.shape).astype(dtype)
    ins = [dy, x] + ([y.asnumpy()] if attrs['pool_type'] in ('max', 'lp') else [])
    dx = mx.nd._backward_Pooling(*[mx.nd.array(a, dtype=dtype) for a in ins], **attrs)
    k, s, p = _pool_geometry(shape, attrs)
    ref = pool_grad_ref(dy.astype('f8'), x.astype('f8'), y.asnumpy().astype('f8'),
                        attrs['pool_type'], k, s, p, attrs.get('count_include_pad', True),
                        attrs.get('p_value', 1))
    assert dx.dtype == np.dtype(dtype) and dx.shape == x.shape
    np.testing.assert_allclose(dx.asnumpy().astype('f8'), ref, **TOL[dtype])


def test_backward_pooling_inputs():
    x = mx.nd.ones((1, 1, 4, 4))
    with pytest.raises(mx.MXNetError, match='expects 3 input'):
        mx.nd._backward_Pooling(mx.nd.ones((1, 1, 2, 2)), x, kernel=(2, 2), stride=(2, 2))
    with pytest.raises(mx.MXNetError, match='does not match the pooled shape'):
        mx.nd._backward_Pooling(mx.nd.ones((1, 1, 3, 3)), x, kernel=(2, 2), stride=(2, 2),
                                pool_type='avg')


# ---- Pad -----------------------------------------------------------------------------------

PAD_CASES = [
    ((2, 2, 4, 5), (0, 0, 0, 0, 2, 3, 3, 1)),
    ((1, 2, 3, 4, 5), (0, 0, 0, 0, 1, 2, 2, 1, 0, 3)),
    ((2, 1, 1, 3), (0, 0, 0, 0, 0, 0, 2, 2)),
    ((1, 1, 2, 2), (0, 0, 0, 0, 0, 0, 0, 0)),
]


def pad_grad_ref(dy, xshape, pad_width, mode):
    """Pad an index array the same way and add every gradient back to the index it holds."""
    idx = np.arange(int(np.prod(xshape))).reshape(xshape)
    pw = list(zip(pad_width[::2], pad_width[1::2]))
    if mode == 'constant':
        pidx = np.pad(idx, pw, mode='constant', constant_values=-1)
    else:
        pidx = np.pad(idx, pw, mode=mode)
    keep = pidx.reshape(-1) >= 0
    return np.bincount(pidx.reshape(-1)[keep], weights=dy.reshape(-1)[keep],
                       minlength=idx.size).reshape(xshape)


@pytest.mark.parametrize('mode', ['constant', 'edge', 'reflect'])
@pytest.mark.parametrize('shape,pw', PAD_CASES)
def test_pad_grad(shape, pw, mode):
    rng = np.random.default_rng(11)
    check_grad('Pad', [rng.standard_normal(shape)], dict(mode=mode, pad_width=pw,
                                                          constant_value=1.5))
    oshape = tuple(n + b + e for n, b, e in zip(shape, pw[::2], pw[1::2]))
    check_grad('_backward_Pad', [rng.standard_normal(oshape)], dict(mode=mode, pad_width=pw))


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('mode', ['constant', 'edge', 'reflect'])
def test_backward_pad_forward(mode, dtype):
    rng = np.random.default_rng(12)
    for shape, pw in PAD_CASES[:2] + [((3, 2, 5, 6), (0, 0, 0, 0, 4, 2, 1, 5))]:
        oshape = tuple(n + b + e for n, b, e in zip(shape, pw[::2], pw[1::2]))
        dy = rng.standard_normal(oshape).astype(dtype)
        dx = mx.nd._backward_Pad(mx.nd.array(dy, dtype=dtype), mode=mode, pad_width=pw)
        assert dx.dtype == np.dtype(dtype) and dx.shape == shape
        ref = pad_grad_ref(dy.astype('f8'), shape, pw, mode)
        np.testing.assert_allclose(dx.asnumpy().astype('f8'), ref, **TOL[dtype])


def test_backward_pad_bad_width():
    with pytest.raises(mx.MXNetError, match='larger than the output gradient'):
        mx.nd._backward_Pad(mx.nd.ones((1, 1, 2, 2)), mode='edge',
                            pad_width=(0, 0, 0, 0, 2, 1, 0, 0))
    with pytest.raises(mx.MXNetError, match='reflect padding'):
        mx.nd._backward_Pad(mx.nd.ones((1, 1, 5, 2)), mode='reflect',
                            pad_width=(0, 0, 0, 0, 2, 1, 0, 0))


# ---- UpSampling ----------------------------------------------------------------------------

def up_grad_ref(dy, shapes, mode):
    out, c0 = [], 0
    for shape in shapes:
        n, c, h, w = shape
        s = dy.shape[2] // h
        part = dy if mode == 'sum' else dy[:, c0:c0 + c]
        out.append(part.reshape(n, c, h, s, w, s).sum(axis=(3, 5)))
        c0 += 0 if mode == 'sum' else c
    return out


UP_CASES = [
    ([(2, 2, 3, 4)], 2, 'concat'),
    ([(2, 1, 2, 2)], 3, 'concat'),
    ([(1, 2, 1, 1)], 1, 'concat'),
    ([(2, 2, 4, 6), (2, 3, 2, 3)], 2, 'concat'),
    ([(2, 3, 2, 4), (2, 3, 1, 2), (2, 3, 4, 8)], 2, 'sum'),
]


@pytest.mark.parametrize('shapes,scale,mode', UP_CASES)
def test_upsampling_grad(shapes, scale, mode):
    rng = np.random.default_rng(13)
    xs = [rng.standard_normal(s) for s in shapes]
    attrs = dict(scale=scale, sample_type='nearest', num_args=len(xs), multi_input_mode=mode)
    check_grad('UpSampling', xs, attrs)
    oshape = mx.nd.UpSampling(*[mx.nd.array(x) for x in xs], **attrs).shape
    check_grad('_backward_UpSampling', [rng.standard_normal(oshape)] + xs, attrs, wrt=[0])


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('shapes,scale,mode', UP_CASES)
def test_backward_upsampling_forward(shapes, scale, mode, dtype):
    rng = np.random.default_rng(14)
    attrs = dict(scale=scale, sample_type='nearest', num_args=len(shapes), multi_input_mode=mode)
    xs = [mx.nd.zeros(s, dtype=dtype) for s in shapes]
    oshape = mx.nd.UpSampling(*xs, **attrs).shape
    dy = rng.standard_normal(oshape).astype(dtype)
    outs = mx.nd._backward_UpSampling(mx.nd.array(dy, dtype=dtype), *xs, **attrs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    for o, r, s in zip(outs, up_grad_ref(dy.astype('f8'), shapes, mode), shapes):
        assert o.dtype == np.dtype(dtype) and o.shape == s
        np.testing.assert_allclose(o.asnumpy().astype('f8'), r, **TOL[dtype])


# ---- a small network -----------------------------------------------------------------------

def test_lenet_like_graph_grad():
    """Conv -> pool -> conv -> pool: the rules compose (symbolic vs finite differences on the
    weights; the data gradient is not asked for, so the first layer skips it)."""
    rng = np.random.default_rng(15)
    x, w1, b1 = mx.sym.var('x'), mx.sym.var('w1'), mx.sym.var('b1')
    w2 = mx.sym.var('w2')
    h = mx.sym.Convolution(x, w1, b1, kernel=(3, 3), num_filter=3)
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max')
    h = mx.sym.Convolution(h, w2, kernel=(2, 2), num_filter=2, no_bias=True, pad=(1, 1))
    y = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='avg')
    vals = dict(x=rng.standard_normal((2, 1, 8, 8)), w1=rng.standard_normal((3, 1, 3, 3)),
                b1=rng.standard_normal(3), w2=rng.standard_normal((2, 3, 2, 2)))
    hg = rng.standard_normal((2, 2, 2, 2))
    g = y._gradient(['w1', 'b1', 'w2'], ['head'])
    feed = {k: mx.nd.array(v, dtype='f8') for k, v in vals.items()}
    feed['head'] = mx.nd.array(hg, dtype='f8')
    got = [o.asnumpy() for o in g.eval(**{k: feed[k] for k in g.list_inputs()})]

    def loss(v):
        out = y.eval(**{k: mx.nd.array(a, dtype='f8') for k, a in v.items()})
        out = out[0] if isinstance(out, (list, tuple)) else out
        return float((out.asnumpy() * hg).sum())
    for name, gs in zip(['w1', 'b1', 'w2'], got):
        num = np.zeros_like(vals[name])
        for i in range(num.size):
            for sign in (1, -1):
                v = {k: a.copy() for k, a in vals.items()}
                v[name].reshape(-1)[i] += sign * 1e-6
                num.reshape(-1)[i] += sign * loss(v) / 2e-6
        np.testing.assert_allclose(gs, num, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize('shape,scale', [((2, 2, 3, 2), 2), ((1, 1, 2, 2), 3), ((1, 3, 2, 1), 1)])
def test_upsampling_bilinear_grad(shape, scale):
    rng = np.random.default_rng(17)
    k = 2 * scale - scale % 2
    xs = [rng.standard_normal(shape), rng.standard_normal((shape[1], 1, k, k))]
    check_grad('UpSampling', xs, dict(scale=scale, sample_type='bilinear', num_filter=shape[1],
                                      num_args=2))
