"""Pooling (max / avg / sum / lp; valid / full / same; global; 1-D / 2-D / 3-D) against a NumPy
reference written as plain loops in float64, following MXNet's window rules."""
import itertools
import math

import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['Pooling']

TOL = {'float16': 4e-3, 'float32': 2e-5, 'float64': 1e-12}


def _out_size(x, k, s, p, conv):
    if conv == 'valid':
        return 1 + (x + 2 * p - k) // s
    if conv == 'full':
        return 1 + int(math.ceil((x + 2 * p - k) / s))
    return int(math.ceil((x + 2 * p) / s))


def np_pool(x, kernel=None, pool_type='max', global_pool=False, conv='valid', stride=None,
            pad=None, p_value=None, count_include_pad=True):
    """Loops in float64: a window starts at o*s - p and ends at min(start + k, x + p)."""
    # an empty window (all padding) gives the lowest finite value of the data's dtype
    lowest = np.finfo(x.dtype if x.dtype != np.float16 else np.float32).min
    x = x.astype(np.float64)
    n, c = x.shape[:2]
    sp = x.shape[2:]
    nsp = len(sp)
    if global_pool:
        kernel, stride, pad = sp, (1,) * nsp, (0,) * nsp
        osz = (1,) * nsp
    else:
        stride = stride or (1,) * nsp
        pad = pad or (0,) * nsp
        osz = tuple(_out_size(sp[i], kernel[i], stride[i], pad[i], conv) for i in range(nsp))
    out = np.zeros((n, c) + osz)
    for o in itertools.product(*[range(v) for v in osz]):
        lo, hi, full = [], [], 1
        for i in range(nsp):
            start = o[i] * stride[i] - pad[i]
            end = min(start + kernel[i], sp[i] + pad[i])
            full *= max(end - start, 0)
            lo.append(max(start, 0))
            hi.append(min(end, sp[i]))
        win = x[(slice(None), slice(None)) + tuple(slice(a, max(a, b)) for a, b in zip(lo, hi))]
        win = win.reshape(n, c, -1)
        if pool_type == 'max':
            r = win.max(axis=2) if win.shape[2] else np.full((n, c), lowest)
        elif pool_type == 'sum':
            r = win.sum(axis=2)
        elif pool_type == 'avg':
            cnt = full if count_include_pad else win.shape[2]
            with np.errstate(invalid='ignore'):  # empty window without padding count: NaN
                r = win.sum(axis=2) / cnt
        else:
            s = (win ** p_value).sum(axis=2)
            r = s if p_value == 1 else (np.sqrt(s) if p_value == 2 else np.cbrt(s))
        out[(slice(None), slice(None)) + o] = r
    return out


def _check(out, ref, dtype):
    assert out.dtype == np.dtype(dtype)
    got = out.asnumpy().astype(np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


def _run(x, dtype, **kw):
    return nd.Pooling(nd.array(x, dtype=dtype), **kw)


def _ref_kw(kw):
    return dict(kernel=kw.get('kernel'), pool_type=kw.get('pool_type', 'max'),
                global_pool=kw.get('global_pool', False),
                conv=kw.get('pooling_convention', 'valid'), stride=kw.get('stride'),
                pad=kw.get('pad'), p_value=kw.get('p_value'),
                count_include_pad=kw.get('count_include_pad', True))


POOL_TYPES = [('max', {}), ('avg', {}), ('sum', {}), ('lp', {'p_value': 1}),
              ('lp', {'p_value': 2}), ('lp', {'p_value': 3})]


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('ptype,extra', POOL_TYPES)
@pytest.mark.parametrize('shape,kernel,stride,pad', [
    ((2, 3, 9), (3,), (2,), (1,)),
    ((2, 3, 7, 8), (3, 2), (2, 3), (1, 0)),
    ((1, 2, 5, 6, 7), (2, 3, 2), (2, 1, 3), (1, 1, 0)),
    ((2, 2, 6, 6), (2, 2), (2, 2), None),
    ((1, 1, 1), (1,), None, None),
])
@pytest.mark.parametrize('conv', ['valid', 'full'])
def test_pool_types(rng, dtype, ptype, extra, shape, kernel, stride, pad, conv):
    x = rng.standard_normal(shape).astype(dtype)
    if ptype == 'lp' and extra['p_value'] == 2:
        x = np.abs(x)
    kw = dict(kernel=kernel, pool_type=ptype, pooling_convention=conv, **extra)
    if stride:
        kw['stride'] = stride
    if pad:
        kw['pad'] = pad
    _check(_run(x, dtype, **kw), np_pool(x, **_ref_kw(kw)), dtype)


@pytest.mark.parametrize('cip', [True, False])
@pytest.mark.parametrize('shape,kernel,stride,pad,conv', [
    ((2, 3, 10), (4,), (3,), (2,), 'full'),
    ((2, 3, 5, 7), (3, 3), (2, 2), (1, 1), 'valid'),
    ((2, 3, 5, 7), (3, 3), (2, 2), (1, 1), 'full'),
    ((1, 2, 4, 5, 6), (3, 2, 3), (1, 2, 2), (1, 1, 1), 'full'),
])
def test_avg_count_include_pad(rng, cip, shape, kernel, stride, pad, conv):
    x = rng.standard_normal(shape)
    kw = dict(kernel=kernel, stride=stride, pad=pad, pool_type='avg', pooling_convention=conv,
              count_include_pad=cip)
    _check(_run(x, 'float64', **kw), np_pool(x, **_ref_kw(kw)), 'float64')


def test_count_include_pad_values():
    x = np.ones((1, 1, 2, 2), np.float32)
    a = nd.Pooling(nd.array(x), kernel=(2, 2), pad=(1, 1), pool_type='avg').asnumpy()
    b = nd.Pooling(nd.array(x), kernel=(2, 2), pad=(1, 1), pool_type='avg',
                   count_include_pad=False).asnumpy()
    np.testing.assert_allclose(a[0, 0], [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]])
    np.testing.assert_allclose(b, np.ones((1, 1, 3, 3)))


def test_max_ignores_padding():
    x = -np.ones((1, 1, 3, 3), np.float32) * 5
    out = nd.Pooling(nd.array(x), kernel=(3, 3), pad=(1, 1)).asnumpy()
    np.testing.assert_array_equal(out, -5 * np.ones((1, 1, 3, 3)))


@pytest.mark.parametrize('ptype,extra', POOL_TYPES)
@pytest.mark.parametrize('shape,stride', [((2, 3, 9), (2,)), ((1, 2, 10), (3,)),
                                          ((1, 1, 4), (1,))])
def test_same_convention(rng, ptype, extra, shape, stride):
    x = np.abs(rng.standard_normal(shape))
    kw = dict(kernel=(3,), stride=stride, pool_type=ptype, pooling_convention='same', **extra)
    out = _run(x, 'float64', **kw)
    assert out.shape[2] == math.ceil(shape[2] / stride[0])
    _check(out, np_pool(x, **_ref_kw(kw)), 'float64')


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('ptype,extra', POOL_TYPES)
@pytest.mark.parametrize('shape', [(2, 3, 7), (2, 3, 5, 6), (1, 2, 3, 4, 5), (1, 1, 1, 1),
                                   (3, 4, 40, 50)])
def test_global(rng, dtype, ptype, extra, shape):
    x = np.abs(rng.standard_normal(shape)).astype(dtype)
    # kernel is ignored with global_pool (MXNet's Global*Pool layers pass (1,)*n)
    kw = dict(global_pool=True, pool_type=ptype, kernel=(1,) * (len(shape) - 2), **extra)
    out = _run(x, dtype, **kw)
    assert out.shape == shape[:2] + (1,) * (len(shape) - 2)
    ref = np_pool(x.astype(np.float64), **_ref_kw(kw))
    tol = TOL[dtype] * (10 if dtype == 'float16' else 1)
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, rtol=tol, atol=tol)


def test_global_without_kernel(rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    out = nd.Pooling(nd.array(x), global_pool=True, pool_type='avg').asnumpy()
    np.testing.assert_allclose(out, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
@pytest.mark.parametrize('shape,conv', [((2, 3, 8, 10), 'valid'), ((2, 3, 7, 9), 'valid'),
                                        ((2, 3, 7, 9), 'full'), ((3, 5, 64, 66), 'valid'),
                                        ((1, 1, 2, 2), 'valid')])
def test_max_2x2_fast_path(rng, dtype, shape, conv):
    x = rng.standard_normal(shape).astype(dtype)
    kw = dict(kernel=(2, 2), stride=(2, 2), pooling_convention=conv)
    out = _run(x, dtype, **kw)
    _check(out, np_pool(x, **_ref_kw(kw)), dtype)


@pytest.mark.parametrize('ptype', ['max', 'avg', 'sum'])
def test_float16(rng, ptype):
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float16)
    kw = dict(kernel=(3, 2), stride=(2, 2), pad=(1, 1), pool_type=ptype)
    out = _run(x, 'float16', **kw)
    ref = np_pool(x, **_ref_kw(kw))
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, rtol=5e-3, atol=5e-3)


def test_large_parallel(rng):
    """Enough planes for the parallel split; every plane must be written."""
    x = rng.standard_normal((8, 16, 20, 20)).astype(np.float32)
    kw = dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type='avg')
    _check(_run(x, 'float32', **kw), np_pool(x, **_ref_kw(kw)), 'float32')


@pytest.mark.parametrize('shape', [(0, 3, 4, 4), (2, 0, 4, 4), (0, 1, 5)])
def test_zero_size(shape):
    x = np.zeros(shape, np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2,) * (len(shape) - 2), stride=(2,) * (len(shape) - 2))
    exp = shape[:2] + tuple((v - 2) // 2 + 1 for v in shape[2:])
    assert out.shape == exp


def test_one_element():
    x = np.array([[[[3.5]]]], np.float32)
    for pt in ['max', 'avg', 'sum']:
        out = nd.Pooling(nd.array(x), kernel=(1, 1), pool_type=pt)
        np.testing.assert_array_equal(out.asnumpy(), x)


def test_defaults_and_stride_default(rng):
    """stride defaults to 1 (not the kernel); pad to 0; pool_type to max."""
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2, 2))
    assert out.shape == (1, 2, 4, 4)
    _check(out, np_pool(x, kernel=(2, 2)), 'float32')


def test_layout_channel_first_ok(rng):
    x = rng.standard_normal((1, 2, 6)).astype(np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2,), stride=(2,), layout='NCW')
    _check(out, np_pool(x, kernel=(2,), stride=(2,)), 'float32')
    x = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2, 2, 2), layout='NCDHW')
    _check(out, np_pool(x, kernel=(2, 2, 2)), 'float32')


def test_infer_shape():
    op = mx._core.get_op('Pooling')
    assert op is not None


# ------------------------------------------------------------------------------------------------
# errors

def _err(msg, *args, **kw):
    with pytest.raises(mx.MXNetError, match=msg):
        nd.Pooling(*args, **kw).wait_to_read()


def test_errors():
    x = nd.zeros((1, 2, 4, 4))
    _err('kernel is required', x)
    _err('kernel is required', x, pool_type='avg')
    _err(r'kernel size \(5\) exceeds input \(4 padded to 4\)', x, kernel=(5, 2))
    _err('exceeds input', nd.zeros((1, 1, 3)), kernel=(4,), pooling_convention='full')
    _err('layout NHWC needs 4-D data', nd.zeros((1, 2, 4)), kernel=(2,), layout='NHWC')
    _err('layout NDHWC needs 5-D data', x, kernel=(2, 2), layout='NDHWC')
    _err('layout NCW needs 3-D data', x, kernel=(2, 2), layout='NCW')
    _err(r'kernel \[2\] needs 3-D data', x, kernel=(2,))
    _err('data must be 3-D', nd.zeros((2, 4)), kernel=(2,))
    _err('data must be 3-D', nd.zeros((2, 4)), global_pool=True)
    _err('stride', x, kernel=(2, 2), stride=(1,))
    _err('stride', x, kernel=(2, 2), stride=(0, 1))
    _err('pad', x, kernel=(2, 2), pad=(1,))
    _err("'same' does not allow pad", nd.zeros((1, 1, 6)), kernel=(2,),
         pooling_convention='same', pad=(0, 1, 0))
    _err('p_value', x, kernel=(2, 2), pool_type='lp')
    _err('p_value must be 1, 2 or 3', x, kernel=(2, 2), pool_type='lp', p_value=4)
    _err("'same' supports only 1-D", x, kernel=(2, 2), pooling_convention='same')
    _err("does not allow pad", nd.zeros((1, 1, 5)), kernel=(2,), pad=(1,),
         pooling_convention='same')
    _err('float16, float32 or float64', nd.zeros((1, 1, 4, 4), dtype='int32'), kernel=(2, 2))
    _err('pool_type', x, kernel=(2, 2), pool_type='median')
    _err('foo', x, kernel=(2, 2), foo=1)


def test_extra_stride_and_pad_entries_are_ignored(rng):
    # MXNet reads only the kernel's rank of stride and pad (its 1-D 'same' tests pass (0, 0, 0))
    x = rng.standard_normal((1, 2, 10)).astype(np.float32)
    out = nd.Pooling(nd.array(x), kernel=(2,), stride=(2, 7), pad=(0, 0, 0),
                     pooling_convention='same')
    np.testing.assert_allclose(out.asnumpy(), np_pool(x, (2,), 'max', stride=(2,), conv='same'),
                               rtol=1e-6)
    y = rng.standard_normal((1, 1, 6, 6)).astype(np.float32)
    out = nd.Pooling(nd.array(y), kernel=(3, 3), stride=(2, 2), pad=(1, 1, 5))
    np.testing.assert_allclose(out.asnumpy(), np_pool(y, (3, 3), 'max', stride=(2, 2),
                                                      pad=(1, 1)), rtol=1e-6)


@pytest.mark.parametrize('ptype,extra', POOL_TYPES)
@pytest.mark.parametrize('k', [1, 2, 3, 4])
@pytest.mark.parametrize('s', [1, 2, 3])
@pytest.mark.parametrize('p', [0, 1, 2])
def test_row_pass_widths(rng, ptype, extra, k, s, p):
    """The W pass: edge windows, the unrolled interior loops (k 2/3, s 1/2) and the general one."""
    if k > 7 + 2 * p:
        return
    x = rng.standard_normal((1, 2, 3, 7 + k))
    if ptype == 'lp':
        x = np.abs(x)
    for cip in (True, False):
        kw = dict(kernel=(2, k), stride=(1, s), pad=(min(p, 1), p), pool_type=ptype,
                  pooling_convention='full', count_include_pad=cip, **extra)
        _check(_run(x, 'float64', **kw), np_pool(x, **_ref_kw(kw)), 'float64')


def np_max_pool_grad(x, dy, k, s, p, conv):
    """Max pooling's gradient in float64 loops: each output's gradient goes to the first element
    (in row-major order) of its clipped window that equals the window's maximum."""
    n, c, h, w = x.shape
    oh, ow = _out_size(h, k, s, p, conv), _out_size(w, k, s, p, conv)
    dx = np.zeros(x.shape)
    for i, j in itertools.product(range(oh), range(ow)):
        h0, w0 = i * s - p, j * s - p
        ha, hb = max(h0, 0), min(h0 + k, h + p, h)
        wa, wb = max(w0, 0), min(w0 + k, w + p, w)
        if ha >= hb or wa >= wb:
            continue
        for b, ch in itertools.product(range(n), range(c)):
            win = x[b, ch, ha:hb, wa:wb]
            r, q = np.unravel_index(np.argmax(win == win.max()), win.shape)
            dx[b, ch, ha + r, wa + q] += dy[b, ch, i, j]
    return dx


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('shape,pad,conv', [
    ((2, 3, 112, 112), 1, 'valid'),   # ResNet's pooling, smaller batch
    ((1, 2, 9, 11), 1, 'full'),       # odd sizes: windows past the bottom and right borders
    ((2, 2, 8, 7), 0, 'valid'),
    ((1, 3, 10, 6), 0, 'full'),
    ((1, 1, 3, 3), 1, 'valid'),       # every window on a border
    ((1, 1, 1, 2), 1, 'full'),
])
def test_max_3x3_stride2_gradient(rng, dtype, shape, pad, conv):
    """The 3x3 stride-2 max pooling gradient (pool.c's poolbw_max33s2, the windows inside the
    data with fixed offsets) against loops; values rounded to a few levels so that windows hold
    ties, which go to their first element."""
    x = np.round(rng.standard_normal(shape) * 2).astype(dtype)
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(pad, pad), pooling_convention=conv)
    xa = nd.array(x, dtype=dtype)
    xa.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(xa, **kw)
    dy = rng.standard_normal(y.shape).astype(dtype)
    y.backward(nd.array(dy, dtype=dtype))
    ref = np_max_pool_grad(x.astype(np.float64), dy.astype(np.float64), 3, 2, pad, conv)
    np.testing.assert_allclose(xa.grad.asnumpy().astype(np.float64), ref, rtol=TOL[dtype],
                               atol=TOL[dtype])
