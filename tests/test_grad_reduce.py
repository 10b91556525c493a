"""Gradient rules of the reductions (reduce.c), the matrix products (matrix.c), Cast (cast.c),
add_n (elemwise_binary.c), sort and topk (sort.c), and the ops without a gradient (creation.c,
random.c, argmax, argmin, argsort): symbolic gradients against float64 finite differences
(gradcheck.check_grad), MXNet's conventions where the derivative is not unique (max ties, prod
at zeros, norm at 0), and the _backward_* ops the rules emit against NumPy."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad
from hybridgluon import _core

nd = mx.nd

GRADS_COVERED = ['sum', 'mean', 'prod', 'nansum', 'nanprod', 'max', 'min', 'norm', 'dot',
                 'batch_dot', 'FullyConnected', 'Cast', 'add_n', 'sort', 'topk',
                 '_backward_sum', '_backward_mean', '_backward_dot', '_backward_batch_dot',
                 '_backward_FullyConnected', '_backward_Cast']
NO_GRAD_COVERED = ['argmax', 'argmin', 'argsort', '_zeros', '_ones', '_full', '_arange', '_eye',
                   '_random_uniform', '_random_normal', '_random_randint', '_shuffle']
OPS_COVERED = ['_backward_sum', '_backward_mean', '_backward_nansum', '_backward_prod',
               '_backward_nanprod', '_backward_max', '_backward_min', '_backward_norm',
               '_backward_dot', '_backward_batch_dot', '_backward_FullyConnected',
               '_backward_Cast', '_backward_topk']

NO_GRAD_FLAG = _core.OP_NO_GRAD


def _arr(a):
    return nd.array(a, dtype=a.dtype)


def _sym_grad(sym, wrt, feed, head_grads):
    """Gradients of sum(head_grads[h] * out_h) of sym for the variables in wrt."""
    names = ['head%d' % h for h in range(len(head_grads))]
    g = sym._gradient(list(wrt), names)
    feed = dict(feed)
    feed.update({n: _arr(h) for n, h in zip(names, head_grads)})
    return [o.asnumpy() for o in _eval(g, feed)]


def _eval(sym, feed):
    """sym.eval with the values of the inputs it has (a gradient may not read them all)."""
    return sym.eval(**{n: feed[n] for n in sym.list_inputs()})


# ------------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------------

RED_CASES = [((1,), {}), ((5,), {'axis': 0}), ((1, 1), {'axis': 0}), ((3, 4), {}),
             ((3, 4), {'axis': 1}), ((3, 4), {'axis': -2, 'keepdims': True}),
             ((3, 4), {'axis': ()}), ((4, 3), {'keepdims': True}),
             ((2, 3, 4), {'axis': (0, 2)}), ((2, 3, 4), {'axis': (0, 2), 'keepdims': True}),
             ((2, 3, 4), {'axis': 1, 'exclude': True}),
             ((2, 3, 4), {'axis': (1, 2), 'exclude': True, 'keepdims': True}),
             ((2, 1, 3), {'axis': 1}), ((2, 3, 1, 4), {'axis': (1, 3)})]
# Rows longer than the kernel's 1024-element tile, kept and reduced.
LARGE_CASES = [((2, 1100), {'axis': 0}), ((1100, 2), {'axis': 1})]


def _red_input(op, shape, rng):
    if op in ('prod', 'nanprod'):  # bounded away from 0 and from overflow
        return rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
    return rng.standard_normal(shape)


@pytest.mark.parametrize('op', ['sum', 'mean', 'prod', 'nansum', 'nanprod', 'max', 'min'])
@pytest.mark.parametrize('shape,attrs', RED_CASES)
def test_reduce_grad(op, shape, attrs, rng):
    check_grad(op, [_red_input(op, shape, rng)], attrs)


@pytest.mark.parametrize('op', ['mean', 'max'])  # the plain copy path (sum) and the tiled one
@pytest.mark.parametrize('shape,attrs', LARGE_CASES)
def test_reduce_grad_long_rows(op, shape, attrs, rng):
    check_grad(op, [_red_input(op, shape, rng)], attrs)


NORM_CASES = [((1,), {}), ((5,), {'axis': 0}), ((3, 4), {}), ((3, 4), {'axis': 1}),
              ((3, 4), {'axis': 0, 'keepdims': True}), ((2, 3, 4), {'axis': (0, 2)}),
              ((2, 3, 4), {'axis': (1, 2), 'keepdims': True}), ((2, 1, 3), {'axis': -1})]


@pytest.mark.parametrize('ord', [1, 2])
@pytest.mark.parametrize('shape,attrs', NORM_CASES)
def test_norm_grad(ord, shape, attrs, rng):
    check_grad('norm', [rng.standard_normal(shape)], dict(attrs, ord=ord))


def test_norm_grad_at_zero_is_zero():
    # MXNet divides x by the norm (0/0 = NaN); the subgradient 0 is returned instead.
    x = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 4.0]])
    g = check_grad('norm', [x[1:]], {'axis': 1})[0]
    sym = mx.sym.norm(mx.sym.var('x'), axis=1)
    g = _sym_grad(sym, ['x'], {'x': _arr(x)}, [np.array([1.0, 2.0])])[0]
    np.testing.assert_allclose(g, [[0, 0, 0], [1.2, 0, 1.6]])
    g1 = _sym_grad(mx.sym.norm(mx.sym.var('x'), ord=1, axis=1), ['x'], {'x': _arr(x)},
                   [np.array([1.0, 2.0])])[0]
    np.testing.assert_allclose(g1, [[0, 0, 0], [2, 0, 2]])  # sign(0) = 0


def test_norm_grad_out_dtype(rng):
    x = rng.standard_normal((3, 5))
    sym = mx.sym.norm(mx.sym.var('x'), axis=1, out_dtype='float32')
    dy = rng.standard_normal(3).astype(np.float32)
    g = _sym_grad(sym, ['x'], {'x': _arr(x)}, [dy])[0]
    assert g.dtype == np.float64
    ref = dy[:, None] * x / np.linalg.norm(x, axis=1).astype(np.float32)[:, None]
    np.testing.assert_allclose(g, ref, rtol=1e-6)


@pytest.mark.parametrize('op', ['max', 'min'])
def test_max_min_ties_get_the_whole_gradient(op):
    # MXNet's _backward_max/min: dy * (x == y), so every tied position receives dy.
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    if op == 'min':
        x = -x
    dy = np.array([10.0, 20.0])
    g = _sym_grad(getattr(mx.sym, op)(mx.sym.var('x'), axis=1), ['x'], {'x': _arr(x)}, [dy])[0]
    np.testing.assert_array_equal(g, [[0, 10, 10], [20, 20, 0]])


def test_prod_grad_with_zeros_is_finite():
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0], [4.0, 5.0, 6.0], [-0.0, 7.0, 1.0]])
    check_grad('prod', [x], {'axis': 1})
    check_grad('prod', [x], {})
    dy = np.array([1.0, 1.0, 1.0, 2.0])
    g = _sym_grad(mx.sym.prod(mx.sym.var('x'), axis=1), ['x'], {'x': _arr(x)}, [dy])[0]
    np.testing.assert_array_equal(g, [[6, 0, 0], [0, 0, 0], [30, 24, 20], [14, 0, 0]])


def test_nan_reductions_grad():
    nan = np.nan
    x = np.array([[nan, 0.0, 2.0], [nan, 3.0, 4.0], [1.5, nan, -2.0]])
    check_grad('nansum', [x], {'axis': 1})
    check_grad('nanprod', [x], {'axis': 1})
    check_grad('nanprod', [x], {'axis': 0, 'keepdims': True})
    dy = np.array([1.0, 1.0, 1.0])
    g = _sym_grad(mx.sym.nanprod(mx.sym.var('x'), axis=1), ['x'], {'x': _arr(x)}, [dy])[0]
    np.testing.assert_array_equal(g, [[0, 2, 0], [0, 4, 3], [-2, 0, 1.5]])
    g = _sym_grad(mx.sym.nansum(mx.sym.var('x'), axis=1), ['x'], {'x': _arr(x)}, [dy])[0]
    np.testing.assert_array_equal(g, [[0, 1, 1], [0, 1, 1], [1, 0, 1]])


def test_reduce_grad_float32_and_float16(rng):
    x = rng.standard_normal((4, 6))
    dy = rng.standard_normal(6)
    for dt, tol in (('float32', 1e-6), ('float16', 1e-3)):
        xs = x.astype(dt)
        g = _sym_grad(mx.sym.mean(mx.sym.var('x'), axis=0), ['x'], {'x': _arr(xs)},
                      [dy.astype(dt)])[0]
        assert g.dtype == np.dtype(dt)
        np.testing.assert_allclose(g, np.broadcast_to(dy.astype(dt) / 4, (4, 6)), rtol=tol)


# The _backward_* ops of the reductions against NumPy, incl. a shape large enough for threads.

def _bcast_back(y, shape, axis, keepdims, exclude):
    nd_ = len(shape)
    if axis is None or axis == ():
        red = set(range(nd_))
    else:
        ax = {a % nd_ for a in (axis if isinstance(axis, tuple) else (axis,))}
        red = set(range(nd_)) - ax if exclude else ax
    if not keepdims:
        y = y.reshape([1 if d in red else shape[d] for d in range(nd_)])
    return np.broadcast_to(y, shape)


@pytest.mark.parametrize('shape,axis,keepdims,exclude',
                         [((300, 200), 0, False, False), ((300, 200), 1, True, False),
                          ((20, 30, 40), (0, 2), False, False), ((20, 30, 40), 1, False, True),
                          ((7,), None, False, False)])
def test_backward_reduce_ops(shape, axis, keepdims, exclude, rng):
    x = rng.standard_normal(shape)
    kw = dict(axis=axis, keepdims=keepdims, exclude=exclude)
    ax = None if axis is None else axis
    npax = ax if not exclude else tuple(d for d in range(len(shape))
                                        if d not in {a % len(shape) for a in (
                                            axis if isinstance(axis, tuple) else (axis,))})
    for dt in ('float32', 'float64'):
        xs = x.astype(dt)
        y = nd.max(_arr(xs), **kw).asnumpy()
        dy = rng.standard_normal(y.shape).astype(dt)
        bdy = _bcast_back(dy, shape, axis, keepdims, exclude)
        got = nd._backward_sum(_arr(dy), _arr(xs), **kw).asnumpy()
        np.testing.assert_array_equal(got, bdy)
        got = nd._backward_mean(_arr(dy), _arr(xs), **kw).asnumpy()
        np.testing.assert_allclose(got, bdy / (xs.size / y.size), rtol=1e-6)
        got = nd._backward_max(_arr(dy), _arr(xs), _arr(y), **kw).asnumpy()
        np.testing.assert_array_equal(got, np.where(xs == _bcast_back(y, shape, axis, keepdims,
                                                                      exclude), bdy, 0))
        ymin = np.min(xs, axis=npax, keepdims=keepdims).reshape(y.shape)
        got = nd._backward_min(_arr(dy), _arr(xs), _arr(ymin), **kw).asnumpy()
        np.testing.assert_array_equal(got, np.where(xs == _bcast_back(ymin, shape, axis,
                                                                      keepdims, exclude), bdy, 0))
        got = nd._backward_nansum(_arr(dy), _arr(xs), **kw).asnumpy()
        np.testing.assert_array_equal(got, bdy)
        xp = np.exp(0.01 * xs).astype(dt)  # products of hundreds of values stay in range
        p = np.prod(xp.astype('f8'), axis=npax, keepdims=keepdims).reshape(y.shape)
        ref = bdy * _bcast_back(p, shape, axis, keepdims, exclude) / xp
        got = nd._backward_prod(_arr(dy), _arr(xp), **kw).asnumpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5)
        got = nd._backward_nanprod(_arr(dy), _arr(xp), **kw).asnumpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5)
        if not exclude:
            n2 = np.sqrt((xs.astype('f8') ** 2).sum(axis=ax, keepdims=keepdims)).reshape(y.shape)
            got = nd._backward_norm(_arr(dy), _arr(xs), _arr(n2.astype(dt)), axis=axis,
                                    keepdims=keepdims).asnumpy()
            np.testing.assert_allclose(got, bdy * xs / _bcast_back(n2.astype(dt), shape, axis,
                                                                   keepdims, False), rtol=1e-5)
            got = nd._backward_norm(_arr(dy), _arr(xs), _arr(n2.astype(dt)), ord=1, axis=axis,
                                    keepdims=keepdims).asnumpy()
            np.testing.assert_array_equal(got, bdy * np.sign(xs))


def test_backward_reduce_errors():
    x = nd.array(np.ones((3, 4)))
    with pytest.raises(mx.MXNetError, match=r'_backward_sum: the output gradient has shape'):
        nd._backward_sum(nd.array(np.ones(5)), x, axis=1)
    with pytest.raises(mx.MXNetError, match=r'_backward_max: the forward output has shape'):
        nd._backward_max(nd.array(np.ones(3)), x, nd.array(np.ones(4)), axis=1)
    with pytest.raises(mx.MXNetError, match='out of range'):
        nd._backward_mean(nd.array(np.ones(3)), x, axis=2)
    with pytest.raises(mx.MXNetError, match='ord=3'):
        nd._backward_norm(nd.array(np.ones(3)), x, nd.array(np.ones(3)), ord=3, axis=1)


def test_second_order_sum_mean(rng):
    check_grad('_backward_sum', [rng.standard_normal(3), rng.standard_normal((3, 4))],
               {'axis': 1}, wrt=[0])
    check_grad('_backward_sum', [rng.standard_normal((1, 4)), rng.standard_normal((3, 4))],
               {'axis': 0, 'keepdims': True}, wrt=[0])
    check_grad('_backward_mean', [rng.standard_normal(4), rng.standard_normal((2, 3, 4))],
               {'axis': -1, 'exclude': True}, wrt=[0])
    # mean(x)^2 summed: the second derivative runs _backward_mean's own rule.
    x = mx.sym.var('x')
    m = mx.sym.mean(x, axis=1)
    g = mx.sym.sum(mx.sym._backward_mean(m, x, axis=1))._gradient(['x'])
    out = _eval(g, {'x': nd.array(np.ones((2, 5)))})[0].asnumpy()
    np.testing.assert_allclose(out, np.full((2, 5), 1 / 5))


# ------------------------------------------------------------------------------------------------
# dot, batch_dot, FullyConnected
# ------------------------------------------------------------------------------------------------

DOT_CASES = [((3, 4), (4, 5), False, False), ((4, 3), (4, 5), True, False),
             ((3, 4), (5, 4), False, True), ((4, 3), (5, 4), True, True),
             ((2, 3, 4), (4, 2, 5), False, False), ((4, 2, 3), (4, 5), True, False),
             ((2, 3, 4), (5, 2, 4), False, True), ((4, 2, 3), (5, 2, 4), True, True),
             ((4,), (4,), False, False), ((4,), (4, 3), False, False), ((2, 4), (4,), False, False),
             ((1, 1), (1, 1), False, False), ((1,), (1,), False, False),
             ((1, 1), (1, 1), True, True)]


@pytest.mark.parametrize('ls,rs,ta,tb', DOT_CASES)
def test_dot_grad(ls, rs, ta, tb, rng):
    check_grad('dot', [rng.standard_normal(ls), rng.standard_normal(rs)],
               {'transpose_a': ta, 'transpose_b': tb})


@pytest.mark.parametrize('ls,rs,ta,tb', [((2, 3, 4), (2, 4, 5), False, False),
                                         ((2, 4, 3), (2, 4, 5), True, False),
                                         ((2, 3, 4), (2, 5, 4), False, True),
                                         ((2, 4, 3), (2, 5, 4), True, True),
                                         ((2, 2, 3, 4), (2, 2, 4, 5), False, False),
                                         ((2, 2, 4, 3), (2, 2, 5, 4), True, True),
                                         ((1, 1, 1), (1, 1, 1), False, False)])
def test_batch_dot_grad(ls, rs, ta, tb, rng):
    check_grad('batch_dot', [rng.standard_normal(ls), rng.standard_normal(rs)],
               {'transpose_a': ta, 'transpose_b': tb})


FC_CASES = [((3, 4), (5, 4), (5,), True), ((3, 2, 2), (5, 4), (5,), True),
            ((2, 3, 4), (5, 4), (5,), False), ((2, 1, 3, 4), (5, 4), (5,), False),
            ((3, 4), (5, 4), (5, 1), True), ((3, 4), (5, 4), None, True),
            ((2, 3, 4), (5, 4), None, False), ((1, 1), (1, 1), (1,), True),
            ((1,), (1, 1), (1,), False)]


@pytest.mark.parametrize('xs,ws,bs,flatten', FC_CASES)
def test_fully_connected_grad(xs, ws, bs, flatten, rng):
    ins = [rng.standard_normal(xs), rng.standard_normal(ws)]
    attrs = {'num_hidden': ws[0], 'flatten': flatten, 'no_bias': bs is None}
    if bs is not None:
        ins.append(rng.standard_normal(bs))
    check_grad('FullyConnected', ins, attrs)


def test_fully_connected_grad_only_weight(rng):
    # data needs no gradient (a first layer): only the weight and bias rules run.
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    check_grad('FullyConnected', [x, w, b], {'num_hidden': 2}, wrt=[1, 2])


@pytest.mark.parametrize('dt,tol', [('float32', 1e-5), ('float16', 2e-2)])
def test_matrix_backward_ops_vs_numpy(dt, tol, rng):
    a, b = rng.standard_normal((6, 40)), rng.standard_normal((40, 30))
    dc = rng.standard_normal((6, 30))
    A, B, dC = (_arr(v.astype(dt)) for v in (a, b, dc))
    f = (lambda v: v.astype(dt).astype('f8'))
    da = nd._backward_dot(dC, A, B, wrt=0).asnumpy()
    db = nd._backward_dot(dC, A, B, wrt=1).asnumpy()
    assert da.dtype == np.dtype(dt) and da.shape == a.shape and db.shape == b.shape
    np.testing.assert_allclose(da, f(dc) @ f(b).T, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(db, f(a).T @ f(dc), rtol=tol, atol=tol * 10)
    # batch_dot with both transposes
    a3, b3, dc3 = (rng.standard_normal(s) for s in ((3, 40, 6), (3, 30, 40), (3, 6, 30)))
    A3, B3, dC3 = (_arr(v.astype(dt)) for v in (a3, b3, dc3))
    kw = dict(transpose_a=True, transpose_b=True)
    da3 = nd._backward_batch_dot(dC3, A3, B3, wrt=0, **kw).asnumpy()
    db3 = nd._backward_batch_dot(dC3, A3, B3, wrt=1, **kw).asnumpy()
    np.testing.assert_allclose(da3, np.einsum('bmn,bnk->bkm', f(dc3), f(b3)), rtol=tol,
                               atol=tol * 10)
    np.testing.assert_allclose(db3, np.einsum('bkm,bmn->bnk', f(a3), f(dc3)), rtol=tol,
                               atol=tol * 10)
    # FullyConnected: data (N-D, flattened), weight, bias (a column sum over many rows)
    x, w, dy = rng.standard_normal((700, 2, 3)), rng.standard_normal((9, 6)), \
        rng.standard_normal((700, 9))
    X, W, DY, BIAS = _arr(x.astype(dt)), _arr(w.astype(dt)), _arr(dy.astype(dt)), \
        _arr(np.zeros(9, dt))
    kw = dict(num_hidden=9)
    dx = nd._backward_FullyConnected(DY, X, W, BIAS, wrt=0, **kw).asnumpy()
    dw = nd._backward_FullyConnected(DY, X, W, BIAS, wrt=1, **kw).asnumpy()
    dbias = nd._backward_FullyConnected(DY, X, W, BIAS, wrt=2, **kw).asnumpy()
    assert dx.shape == x.shape and dw.shape == w.shape and dbias.shape == (9,)
    np.testing.assert_allclose(dx, (f(dy) @ f(w)).reshape(x.shape), rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(dw, f(dy).T @ f(x).reshape(700, 6), rtol=tol, atol=tol * 100)
    np.testing.assert_allclose(dbias, f(dy).sum(0), rtol=tol, atol=tol * 100)


def test_matrix_backward_errors():
    a, b = nd.array(np.ones((3, 4))), nd.array(np.ones((4, 5)))
    with pytest.raises(mx.MXNetError, match='_backward_dot: the output gradient has shape'):
        nd._backward_dot(nd.array(np.ones((3, 4))), a, b)
    with pytest.raises(mx.MXNetError, match='wrt=2 must name one of the 2 operands'):
        nd._backward_dot(nd.array(np.ones((3, 5))), a, b, wrt=2)
    with pytest.raises(mx.MXNetError, match='wrt=2'):
        nd._backward_FullyConnected(nd.array(np.ones((3, 2))), a, nd.array(np.ones((2, 4))),
                                    num_hidden=2, no_bias=True, wrt=2)
    with pytest.raises(mx.MXNetError, match='dtype'):
        nd._backward_dot(nd.array(np.ones((3, 5)), dtype='float64'), a, b)


def test_matrix_second_order(rng):
    for ta in (False, True):
        for tb in (False, True):
            a = rng.standard_normal((4, 3) if ta else (3, 4))
            b = rng.standard_normal((5, 4) if tb else (4, 5))
            c = rng.standard_normal((3, 5))
            kw = {'transpose_a': ta, 'transpose_b': tb}
            check_grad('_backward_dot', [c, a, b], dict(kw, wrt=0), wrt=[0, 2])
            check_grad('_backward_dot', [c, a, b], dict(kw, wrt=1), wrt=[0, 1])
            a3, b3 = a[None].repeat(2, 0), b[None].repeat(2, 0) * 0.5
            c3 = rng.standard_normal((2, 3, 5))
            check_grad('_backward_batch_dot', [c3, a3, b3], dict(kw, wrt=0), wrt=[0, 2])
            check_grad('_backward_batch_dot', [c3, a3, b3], dict(kw, wrt=1), wrt=[0, 1])
    for flatten, xs, dys in ((True, (3, 2, 2), (3, 5)), (False, (3, 2, 4), (3, 2, 5))):
        x, dy = rng.standard_normal(xs), rng.standard_normal(dys)
        w, b = rng.standard_normal((5, 4)), rng.standard_normal(5)
        kw = {'num_hidden': 5, 'flatten': flatten}
        check_grad('_backward_FullyConnected', [dy, x, w, b], dict(kw, wrt=0), wrt=[0, 2])
        check_grad('_backward_FullyConnected', [dy, x, w, b], dict(kw, wrt=1), wrt=[0, 1])
        check_grad('_backward_FullyConnected', [dy, x, w, b], dict(kw, wrt=2), wrt=[0])
        check_grad('_backward_FullyConnected', [dy, x, w], dict(kw, wrt=1, no_bias=True),
                   wrt=[0, 1])
    check_grad('_backward_FullyConnected', [rng.standard_normal((3, 5)),
                                            rng.standard_normal((3, 4)),
                                            rng.standard_normal((5, 4)),
                                            rng.standard_normal((5, 1))],
               {'num_hidden': 5, 'wrt': 2}, wrt=[0])


# ------------------------------------------------------------------------------------------------
# Cast, add_n
# ------------------------------------------------------------------------------------------------

def test_cast_grad(rng):
    x = rng.standard_normal((3, 4))
    check_grad('Cast', [x], {'dtype': 'float64'})
    check_grad('Cast', [x], {'dtype': 'float32'}, rtol=1e-4, atol=1e-5, eps=1e-2)
    check_grad('Cast', [x[:1, :1]], {'dtype': 'float16'}, rtol=1e-2, atol=1e-2, eps=1e-1)
    # a float32 input gets a float32 gradient from a float64 consumer
    x32 = x.astype(np.float32)
    g = _sym_grad(mx.sym.Cast(mx.sym.var('x'), dtype='float64'), ['x'], {'x': _arr(x32)},
                  [np.full((3, 4), 0.25)])[0]
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.full((3, 4), 0.25, np.float32))


def test_backward_cast_op(rng):
    dy = rng.standard_normal((2, 3))
    out = nd._backward_Cast(_arr(dy), _arr(np.zeros((2, 3), np.float16)))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out.asnumpy(), dy.astype(np.float16))
    out = nd._backward_Cast(_arr(dy * 3), _arr(np.zeros((2, 3), np.int32)))
    np.testing.assert_array_equal(out.asnumpy(), (dy * 3).astype(np.int32))
    check_grad('_backward_Cast', [dy, np.zeros((2, 3))], wrt=[0])
    with pytest.raises(mx.MXNetError, match='_backward_Cast: the output gradient has shape'):
        nd._backward_Cast(_arr(dy), _arr(np.zeros((3, 2))))


@pytest.mark.parametrize('n,shape', [(1, (3,)), (2, (2, 3)), (4, (1,)), (3, (2, 1, 3))])
def test_add_n_grad(n, shape, rng):
    check_grad('add_n', [rng.standard_normal(shape) for _ in range(n)], {'num_args': n})


def test_add_n_same_input_twice():
    x = mx.sym.var('x')
    g = mx.sym.add_n(x, x, x, num_args=3)._gradient(['x'], ['h'])
    out = _eval(g, {'x': nd.array(np.ones((2, 2))), 'h': nd.array(np.full((2, 2), 2.0))})[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 6.0))


# ------------------------------------------------------------------------------------------------
# sort, topk
# ------------------------------------------------------------------------------------------------

SORT_CASES = [((1,), -1), ((6,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((3, 4), None)]


@pytest.mark.parametrize('shape,axis', SORT_CASES)
@pytest.mark.parametrize('ascend', [True, False])
def test_sort_grad(shape, axis, ascend, rng):
    check_grad('sort', [rng.standard_normal(shape)], {'axis': axis, 'is_ascend': ascend})


@pytest.mark.parametrize('shape,axis,k', [((1,), -1, 1), ((6,), 0, 2), ((3, 5), -1, 3),
                                          ((3, 5), 0, 1), ((2, 4, 3), 1, 2), ((3, 4), None, 5),
                                          ((3, 50), -1, 4), ((2, 3), -1, 0)])
@pytest.mark.parametrize('ascend', [True, False])
def test_topk_value_grad(shape, axis, k, ascend, rng):
    x = rng.standard_normal(shape)
    attrs = {'axis': axis, 'k': k, 'is_ascend': ascend}
    check_grad('topk', [x], dict(attrs, ret_typ='value'))
    check_grad('topk', [x], dict(attrs, ret_typ='both', dtype='int64'), wrt=[0])


@pytest.mark.parametrize('ret', ['indices', 'mask'])
def test_topk_indices_mask_have_zero_gradient(ret, rng):
    x = rng.standard_normal((3, 5))
    sym = mx.sym.topk(mx.sym.var('x'), k=2, ret_typ=ret)
    hg = np.ones((3, 2)) if ret == 'indices' else np.ones((3, 5))
    g = _sym_grad(sym, ['x'], {'x': _arr(x)}, [hg.astype(np.float32 if ret == 'indices'
                                                         else np.float64)])[0]
    np.testing.assert_array_equal(g, np.zeros((3, 5)))


def test_topk_value_has_hidden_indices(rng):
    x = nd.array(rng.standard_normal((2, 5)))
    out = nd.topk(x, k=2, ret_typ='value')
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, 2)
    assert len(mx.sym.topk(mx.sym.var('x'), k=2, ret_typ='value').list_outputs()) == 1
    infer = mx._core.get_op('topk')._infer(x, k=2, ret_typ='value')
    assert infer == [((2, 2), 0), ((2, 2), 4)]  # float32 values, int32 hidden indices


def test_backward_topk_op(rng):
    x = rng.standard_normal((3, 6)).astype(np.float32)
    vals, idx = nd.topk(nd.array(x), k=2, ret_typ='both', dtype='int32')
    dy = rng.standard_normal((3, 2)).astype(np.float32)
    out = nd._backward_topk(_arr(dy), idx, nd.array(x), k=2).asnumpy()
    ref = np.zeros_like(x)
    np.put_along_axis(ref, idx.asnumpy().astype(np.int64), dy, axis=1)
    np.testing.assert_array_equal(out, ref)
    # axis=None over an int32 input with float64 indices (raw-byte scatter, any dtype)
    xi = rng.permutation(12).reshape(3, 4).astype(np.int32)
    _, idx = nd.topk(_arr(xi), k=3, axis=None, ret_typ='both', dtype='float64')
    dyi = np.array([7, 8, 9], np.int32)
    out = nd._backward_topk(_arr(dyi), idx, _arr(xi), k=3, axis=None).asnumpy()
    ref = np.zeros(12, np.int32)
    ref[idx.asnumpy().astype(np.int64)] = dyi
    np.testing.assert_array_equal(out, ref.reshape(3, 4))
    with pytest.raises(mx.MXNetError, match='_backward_topk: indices has shape'):
        nd._backward_topk(_arr(dy), nd.array(np.zeros((3, 3)), dtype='int32'), nd.array(x), k=2)


# ------------------------------------------------------------------------------------------------
# Ops without a gradient
# ------------------------------------------------------------------------------------------------

def test_no_grad_ops_are_flagged():
    for name in NO_GRAD_COVERED:
        info = _core.op_info(name)
        assert info['flags'] & NO_GRAD_FLAG, name
        assert not info['has_grad'], name


@pytest.mark.parametrize('name,attrs', [('argmax', {'axis': 1}), ('argmin', {}),
                                        ('argsort', {'axis': 0}), ('_shuffle', {})])
def test_no_grad_ops_give_zero_gradient(name, attrs, rng):
    x = rng.standard_normal((3, 4))
    sym = getattr(mx.sym, name)(mx.sym.var('x'), **attrs)
    shape = sym.infer_shape(x=(3, 4))[1][0]
    g = _sym_grad(sym, ['x'], {'x': _arr(x)}, [np.ones(shape, np.float64)])[0]
    np.testing.assert_array_equal(g, np.zeros((3, 4)))


@pytest.mark.parametrize('name,attrs', [('_zeros', {'shape': (2, 3)}), ('_ones', {'shape': (2, 3)}),
                                        ('_full', {'shape': (2, 3), 'value': 2.0}),
                                        ('_arange', {'start': 0, 'stop': 6}),
                                        ('_eye', {'N': 2, 'M': 3}),
                                        ('_random_uniform', {'shape': (2, 3)}),
                                        ('_random_normal', {'shape': (2, 3)}),
                                        ('_random_randint',
                                         {'low': 0, 'high': 5, 'shape': (2, 3)})])
def test_creation_ops_add_no_gradient(name, attrs):
    # Used next to a variable: the variable's gradient is its head gradient alone.
    x = mx.sym.var('x')
    made = getattr(mx.sym, name)(**attrs)
    both = mx.sym.Group([made, x])
    out = _eval(both._gradient(['x'], ['h0', 'h1']),
                {'x': nd.array(np.ones(3)), 'h0': nd.zeros(made.infer_shape()[1][0]),
                 'h1': nd.array(np.arange(3.0))})
    np.testing.assert_array_equal(out[0].asnumpy(), np.arange(3.0))


def test_matrix_backward_bad_wrt_in_a_graph():
    # The rule checks wrt itself: it runs before shape inference could reject it.
    c, a, b = (mx.sym.var(n) for n in 'cab')
    with pytest.raises(mx.MXNetError, match='wrt=5'):
        mx.sym._backward_dot(c, a, b, wrt=5)._gradient(['c'])
    with pytest.raises(mx.MXNetError, match='wrt=3'):
        mx.sym._backward_FullyConnected(c, a, b, num_hidden=2, no_bias=True,
                                        wrt=3)._gradient(['c'])
