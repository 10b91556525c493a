"""Gradient checking for op gradient rules: the rule's symbolic gradient (Symbol._gradient, run
through the executor) against central finite differences of the imperative op, in float64.

    check_grad('broadcast_mul', [a, b])                 # every input
    check_grad('take', [w, idx], wrt=[0], attrs={'axis': 0})

The loss differentiated is sum_h sum(w_h * out_h) with fixed random weights w_h, so every output
element contributes with a different factor (a rule that drops or swaps elements cannot pass).
"""
import numpy as np

import hybridgluon as mx
from hybridgluon import _core


def _forward(op, xs, attrs):
    out = getattr(mx.nd, op)(*[mx.nd.array(x, dtype=x.dtype) for x in xs], **attrs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.asnumpy().astype(np.float64) for o in outs]


def symbolic_grad(op, xs, attrs=None, wrt=None, head_grads=None, is_train=False):
    """The rule's gradients of sum_h sum(head_grads[h] * out_h) for the inputs in wrt."""
    attrs = dict(attrs or {})
    wrt = list(range(len(xs))) if wrt is None else list(wrt)
    names = ['x%d' % i for i in range(len(xs))]
    y = getattr(mx.sym, op)(*[mx.sym.var(n) for n in names], **attrs)
    nheads = len(y.list_outputs())
    hg_names = ['head_grad%d' % h for h in range(nheads)]
    g = y._gradient([names[i] for i in wrt], hg_names)
    feed = {n: mx.nd.array(x, dtype=x.dtype) for n, x in zip(names, xs)}
    for n, h in zip(hg_names, head_grads):
        feed[n] = mx.nd.array(h, dtype=xs[wrt[0]].dtype if wrt else np.float64)
    inputs = g.list_inputs()
    co = _core.CachedOp(g, inputs)
    outs = co(*[feed[n] for n in inputs])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return [o.asnumpy() for o in outs]


def numeric_grad(op, xs, attrs, wrt, head_grads, eps):
    def loss(vals):
        return sum(float((w * o).sum()) for w, o in zip(head_grads, _forward(op, vals, attrs)))
    grads = []
    for i in wrt:
        g = np.zeros(xs[i].shape, dtype=np.float64)
        flat = g.reshape(-1)
        for j in range(xs[i].size):
            plus = [x.copy() for x in xs]
            minus = [x.copy() for x in xs]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            flat[j] = (loss(plus) - loss(minus)) / (2 * eps)
        grads.append(g)
    return grads


def check_grad(op, xs, attrs=None, wrt=None, rtol=1e-5, atol=1e-7, eps=1e-6, seed=0):
    """Asserts the symbolic gradient of `op` matches finite differences. xs: NumPy arrays (the
    differentiated ones float64; index inputs keep their dtype)."""
    attrs = dict(attrs or {})
    xs = [np.array(x, copy=True) for x in xs]
    wrt = [i for i in range(len(xs)) if xs[i].dtype == np.float64] if wrt is None else list(wrt)
    rng = np.random.default_rng(seed)
    outs = _forward(op, xs, attrs)
    head_grads = [rng.standard_normal(o.shape) for o in outs]
    sym = symbolic_grad(op, xs, attrs, wrt, head_grads)
    num = numeric_grad(op, xs, attrs, wrt, head_grads, eps)
    for i, s, n in zip(wrt, sym, num):
        assert s.shape == xs[i].shape, '%s: gradient of input %d has shape %s, input %s' % (
            op, i, s.shape, xs[i].shape)
        assert s.dtype == xs[i].dtype, '%s: gradient of input %d has dtype %s, input %s' % (
            op, i, s.dtype, xs[i].dtype)
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol,
                                   err_msg='%s: gradient of input %d' % (op, i))
    return sym
