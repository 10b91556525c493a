"""NumPy references of MXNet 1.9.1's optimizer update rules (the *_update op kernels and the
Python-side AdaGrad / AdaDelta steps), shared by test_ops_optimizer.py and test_optimizer.py.

Each function takes the weight, the gradient, the list of states (updated in place) and the op's
attributes, and returns the new weight. Arithmetic runs in the weight's dtype with the scalars
first rounded to float32, as MXNet's float32 op parameters are; the mp_* references run on the
float32 master copy (the last state) and return its rounding to the weight's dtype.
"""
import math

import numpy as np


def _p(v, dt):
    return dt.type(np.float32(v))


def _clip(x, b):
    return np.where(x > b, b, np.where(x < -b, -b, x)).astype(x.dtype)


def _sign(x):
    return np.sign(x).astype(x.dtype)


def sgd(w, g, s, lr, wd=0., rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    lr, wd, rg, cg = (_p(v, dt) for v in (lr, wd, rescale_grad, clip_gradient))
    if cg >= 0:
        return (1 - lr * wd) * w - lr * _clip(rg * g, cg)
    return (1 - lr * wd) * w - (lr * rg) * g


def sgd_mom(w, g, s, lr, momentum=0., wd=0., rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    lr, mu, wd, rg, cg = (_p(v, dt) for v in (lr, momentum, wd, rescale_grad, clip_gradient))
    gr = lr * _clip(rg * g, cg) if cg >= 0 else lr * rg * g
    s[0][...] = mu * s[0] - lr * wd * w - gr
    return w + s[0]


def nag_mom(w, g, s, lr, momentum=0., wd=0., rescale_grad=1., clip_gradient=-1., **_):
    """The momentum's weight-decay term reads the weight after it was updated (MXNet's kernel
    with out=weight)."""
    dt = w.dtype
    lr, mu, wd, rg, cg = (_p(v, dt) for v in (lr, momentum, wd, rescale_grad, clip_gradient))
    gr = _clip(rg * g, cg) if cg >= 0 else rg * g
    m = mu * s[0]
    new_w = w - m + (mu + 1) * (m - lr * (gr + wd * w))
    s[0][...] = m - lr * (gr + wd * new_w)
    return new_w


def adam(w, g, s, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0., rescale_grad=1.,
         clip_gradient=-1., **_):
    dt = w.dtype
    lr, b1, b2, eps, wd, rg, cg = (_p(v, dt) for v in (lr, beta1, beta2, epsilon, wd,
                                                       rescale_grad, clip_gradient))
    gr = g * rg + w * wd
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = b1 * s[0] + (1 - b1) * gr
    s[1][...] = b2 * s[1] + (1 - b2) * gr * gr
    return w - lr * s[0] / (np.sqrt(s[1]) + eps)


def adamw(w, g, s, lr, eta, rescale_grad, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.,
          clip_gradient=-1., **_):
    dt = w.dtype
    lr, eta, b1, b2, eps, wd, rg, cg = (_p(v, dt) for v in (lr, eta, beta1, beta2, epsilon, wd,
                                                            rescale_grad, clip_gradient))
    if not np.isfinite(rg) or rg == 0:
        return w.copy()
    gr = rg * g
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = b1 * s[0] + (1 - b1) * gr
    s[1][...] = b2 * s[1] + (1 - b2) * gr * gr
    return w - eta * (lr * s[0] / (np.sqrt(s[1]) + eps) + wd * w)


def rmsprop(w, g, s, lr, gamma1=0.95, epsilon=1e-8, wd=0., rescale_grad=1., clip_gradient=-1.,
            clip_weights=-1., **_):
    dt = w.dtype
    lr, g1, eps, wd, rg, cg, cw = (_p(v, dt) for v in (lr, gamma1, epsilon, wd, rescale_grad,
                                                       clip_gradient, clip_weights))
    gr = rg * g + wd * w
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = (1 - g1) * (gr * gr) + g1 * s[0]
    new_w = w - lr * (gr / np.sqrt(s[0] + eps))
    return _clip(new_w, cw) if cw >= 0 else new_w


def rmspropalex(w, g, s, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0., rescale_grad=1.,
                clip_gradient=-1., clip_weights=-1., **_):
    dt = w.dtype
    lr, g1, g2, eps, wd, rg, cg, cw = (_p(v, dt) for v in (lr, gamma1, gamma2, epsilon, wd,
                                                           rescale_grad, clip_gradient,
                                                           clip_weights))
    gr = rg * g + wd * w
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = (1 - g1) * gr * gr + g1 * s[0]
    s[1][...] = (1 - g1) * gr + g1 * s[1]
    s[2][...] = g2 * s[2] - (lr * gr / np.sqrt(s[0] - s[1] * s[1] + eps))
    new_w = w + s[2]
    return _clip(new_w, cw) if cw >= 0 else new_w


def signsgd(w, g, s, lr, wd=0., **_):
    dt = w.dtype
    lr, wd = _p(lr, dt), _p(wd, dt)
    return (1 - lr * wd) * w - lr * _sign(g)


def signum(w, g, s, lr, momentum=0., wd=0., rescale_grad=1., clip_gradient=-1., wd_lh=0., **_):
    dt = w.dtype
    lr, mu, wd, rg, cg, wdlh = (_p(v, dt) for v in (lr, momentum, wd, rescale_grad,
                                                    clip_gradient, wd_lh))
    gr = (1 - mu) * _clip(rg * g, cg) if cg >= 0 else (1 - mu) * rg * g
    s[0][...] = mu * s[0] - (1 - mu) * wd * w - gr
    return (1 - lr * wdlh) * w + lr * _sign(s[0])


def ftrl(w, g, s, lr, lamda1=0.01, beta=1., wd=0., rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    lr, l1, beta, wd, rg, cg = (_p(v, dt) for v in (lr, lamda1, beta, wd, rescale_grad,
                                                    clip_gradient))
    gr = g * rg
    if cg >= 0:
        gr = _clip(gr, cg)
    z, n = s
    z[...] = z + (gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr)
    n[...] = n + gr * gr
    return (_sign(z) * l1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > l1).astype(dt)


def adagrad(w, g, s, lr, epsilon=1e-7, wd=0., rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    lr, eps, wd, rg, cg = (_p(v, dt) for v in (lr, epsilon, wd, rescale_grad, clip_gradient))
    gr = g * rg
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = s[0] + gr * gr
    div = gr / np.sqrt(s[0] + eps)
    return w + (div + w * wd) * -lr


def adadelta(w, g, s, rho=0.9, epsilon=1e-5, wd=0., rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    rho, eps, wd, rg, cg = (_p(v, dt) for v in (rho, epsilon, wd, rescale_grad, clip_gradient))
    gr = g * rg
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = s[0] * rho + (1 - rho) * gr * gr
    d = np.sqrt(s[1] + eps) / np.sqrt(s[0] + eps) * gr
    s[1][...] = s[1] * rho + (1 - rho) * d * d
    return w - (d + wd * w)


def lamb_phase1(w, g, s, t, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True,
                rescale_grad=1., clip_gradient=-1., **_):
    dt = w.dtype
    b1, b2, eps, wd, rg, cg = (_p(v, dt) for v in (beta1, beta2, epsilon, wd, rescale_grad,
                                                   clip_gradient))
    gr = g * rg
    if cg >= 0:
        gr = _clip(gr, cg)
    s[0][...] = b1 * s[0] + (1 - b1) * gr
    s[1][...] = b2 * s[1] + (1 - b2) * gr * gr
    m, v = s[0], s[1]
    if bias_correction:
        m = m / (1 - dt.type(float(np.float32(beta1)) ** t))
        v = v / (1 - dt.type(float(np.float32(beta2)) ** t))
    return m / (np.sqrt(v) + eps) + wd * w


def lamb_phase2(w, g, r1, r2, lr, lower_bound=-1., upper_bound=-1., **_):
    dt = w.dtype
    lr = _p(lr, dt)
    if lower_bound >= 0:
        r1 = max(r1, _p(lower_bound, dt))
    if upper_bound >= 0:
        r1 = min(r1, _p(upper_bound, dt))
    if r1 != 0 and r2 != 0:
        lr = dt.type(lr * dt.type(r1) / dt.type(r2))
    return w - lr * g


def mp(ref):
    """The mp_* variant of `ref`: states are (float32 states..., float32 master weight)."""
    def run(w, g, s, **attrs):
        w32 = s[-1]
        w32[...] = ref(w32, g.astype(np.float32), s[:-1], **attrs)
        return w32.astype(w.dtype)
    return run


def adam_lr(lr, beta1, beta2, t):
    """Adam's bias correction folded into the learning rate, as MXNet's Python Adam does."""
    return lr * math.sqrt(1. - beta2 ** t) / (1. - beta1 ** t)
