"""Gradients of the control-flow nodes (_foreach, _while_loop, _cond and, through them, their
_backward_ ops) against central finite differences in float64, on graphs built with sym.contrib
and run by the executor: loops of several steps, nested loops, both branches of cond."""
import numpy as np
import pytest

import hybridgluon as mx

OPS_COVERED = ['_foreach', '_while_loop', '_cond', '_backward_foreach', '_backward_while_loop',
               '_backward_cond']
GRADS_COVERED = ['_foreach', '_while_loop', '_cond']


def _fd_check(sym, args, rng, eps=1e-6, rtol=1e-5, atol=1e-7, skip=()):
    names = sym.list_arguments()
    vals = {k: mx.nd.array(args[k], dtype='float64') for k in names}
    grads = {k: mx.nd.zeros(args[k].shape, dtype='float64') for k in names}
    ex = sym.bind(mx.cpu(), vals, args_grad=grads)
    outs = ex.forward(is_train=True)
    ws = [rng.uniform(-1, 1, o.shape) for o in outs]
    ex.backward([mx.nd.array(w, dtype='float64') for w in ws])

    def loss(feed):
        e = sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype='float64') for k, v in feed.items()})
        return sum(float((o.asnumpy() * w).sum()) for o, w in zip(e.forward(), ws))
    for k in names:
        if k in skip:
            continue
        num = np.zeros(args[k].shape)
        for idx in np.ndindex(*args[k].shape):
            plus = {n: v.copy() for n, v in args.items()}
            minus = {n: v.copy() for n, v in args.items()}
            plus[k][idx] += eps
            minus[k][idx] -= eps
            num[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        np.testing.assert_allclose(grads[k].asnumpy(), num, rtol=rtol, atol=atol, err_msg=k)


def test_foreach_gradient_finite_differences():
    rng = np.random.RandomState(3)
    data, h0, w, u = (mx.sym.var(n) for n in ('data', 'h0', 'w', 'u'))

    def step(x, states):
        h = mx.sym.tanh(mx.sym.dot(x, w) + mx.sym.dot(states[0], u))
        return [h * 2, x * h], [h, states[1] * 0.5 + h]
    outs, states = mx.sym.contrib.foreach(step, data, [h0, mx.sym.var('c0')])
    sym = mx.sym.Group(outs + states)
    args = {'data': rng.rand(3, 2, 4), 'h0': rng.rand(2, 4), 'c0': rng.rand(2, 4),
            'w': rng.uniform(-1, 1, (4, 4)), 'u': rng.uniform(-1, 1, (4, 4))}
    _fd_check(sym, args, rng)


def test_nested_foreach_gradient_finite_differences():
    rng = np.random.RandomState(4)
    d, s, w = mx.sym.var('d'), mx.sym.var('s'), mx.sym.var('w')

    def inner(x, st):
        o = mx.sym.sin(x * st[0] + w)
        return o, [o]

    def outer(x, st):
        o, st2 = mx.sym.contrib.foreach(inner, x, st)
        return mx.sym.sum(o, axis=0), st2
    outs, states = mx.sym.contrib.foreach(outer, d, [s])
    _fd_check(mx.sym.Group([outs] + states),
              {'d': rng.rand(2, 3, 4), 's': rng.rand(4), 'w': rng.rand(4)}, rng)


def test_while_loop_gradient_finite_differences():
    rng = np.random.RandomState(5)
    i, s, w = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('w')
    outs, lv = mx.sym.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([mx.sym.sin(s) * w], [i + 1, s * w + 0.25]),
        [i, s], max_iterations=5)
    sym = mx.sym.Group(outs + lv)
    args = {'i': np.zeros(1), 's': rng.rand(2, 3), 'w': rng.rand(2, 3)}
    _fd_check(sym, args, rng, skip=('i',))  # i is a step counter: piecewise constant
    ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()})
    out = ex.forward()[0].asnumpy()
    assert np.all(out[3:] == 0) and np.all(out[:3] != 0)  # 3 steps of 5, zero padding


@pytest.mark.parametrize('branch', ['then', 'else'])
def test_cond_gradient_finite_differences(branch):
    rng = np.random.RandomState(6)
    a, b, w = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('w')
    out = mx.sym.contrib.cond(mx.sym.sum(a) > mx.sym.sum(b),
                              lambda: [a * b * w, mx.sym.exp(a)], lambda: [(a - b) * w, a * 3])
    args = {'a': rng.rand(2, 3), 'b': rng.rand(2, 3), 'w': rng.rand(2, 3)}
    args['a' if branch == 'then' else 'b'] += 1
    _fd_check(mx.sym.Group(out), args, rng)


