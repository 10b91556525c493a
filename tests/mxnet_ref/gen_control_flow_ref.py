"""Control-flow fixtures: graphs with _foreach, _while_loop and _cond built and run by real MXNet
1.9.1, written to control_flow.npz, which tests/test_control_flow.py replays on hybridgluon
without MXNet (load MXNet's JSON, run forward and backward, compare).

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_control_flow_ref.py [--out FILE]

Per case <c> (CASES): 'c_json' the symbol's JSON (UTF-8 as uint8), 'c_arg_<name>' the argument
values, 'c_out<i>' MXNet's outputs, 'c_ograd<i>' the head gradients given to backward and
'c_grad_<name>' the arguments' gradients MXNet computed. 'meta' (JSON as uint8) gives per case
the argument names and, for while_loop outputs, how many leading rows are defined (MXNet leaves
the padding rows after the last step uninitialised).
"""
import argparse
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def case_foreach_rnn(mx):
    """A tanh RNN over 4 steps: weights are free variables of the body."""
    data, h0 = mx.sym.var('data'), mx.sym.var('h0')
    w, u, b = mx.sym.var('w'), mx.sym.var('u'), mx.sym.var('b')

    def step(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(x, w, b, num_hidden=5)
                        + mx.sym.FullyConnected(states[0], u, no_bias=True, num_hidden=5))
        return h * 2, [h]
    outs, states = mx.sym.contrib.foreach(step, data, [h0])
    shapes = {'data': (4, 2, 3), 'h0': (2, 5), 'w': (5, 3), 'u': (5, 5), 'b': (5,)}
    return mx.sym.Group([outs] + states), shapes, {}


def case_foreach_nested(mx):
    """foreach inside foreach, two data arrays, two states."""
    d1, d2, s1, s2 = (mx.sym.var(n) for n in ('d1', 'd2', 's1', 's2'))

    def inner(x, states):
        o = x * states[0] + states[1]
        return o, [o, states[1] * 0.5]

    def outer(xs, states):
        o, st = mx.sym.contrib.foreach(inner, xs[0], states)
        return [mx.sym.sum(o, axis=0) + xs[1], o], st
    outs, states = mx.sym.contrib.foreach(outer, [d1, d2], [s1, s2])
    shapes = {'d1': (3, 2, 4), 'd2': (3, 4), 's1': (4,), 's2': (4,)}
    return mx.sym.Group(outs + states), shapes, {}


def case_while(mx):
    """A counter and an accumulator; 3 steps of at most 5."""
    i, s, w = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('w')
    outs, lv = mx.sym.contrib.while_loop(
        lambda i, s: i < 3,
        lambda i, s: ([s * w, mx.sym.sin(s)], [i + 1, mx.sym.broadcast_add(s + w, i)]),
        [i, s], max_iterations=5)
    shapes = {'i': (1,), 's': (2, 3), 'w': (2, 3)}
    return mx.sym.Group(outs + lv), shapes, {0: 3, 1: 3}


def case_cond(mx):
    """Both branches read a and b; the predicate compares their sums."""
    a, b, w = mx.sym.var('a'), mx.sym.var('b'), mx.sym.var('w')
    out = mx.sym.contrib.cond(mx.sym.sum(a) > mx.sym.sum(b),
                              lambda: [a * 2 + b * w, mx.sym.exp(a)],
                              lambda: [(a - b) * w, a * b])
    shapes = {'a': (2, 3), 'b': (2, 3), 'w': (2, 3)}
    return mx.sym.Group(out), shapes, {}


CASES = {'foreach_rnn': case_foreach_rnn, 'foreach_nested': case_foreach_nested,
         'while': case_while, 'cond_then': case_cond, 'cond_else': case_cond}


def build(mx, make):
    """Runs a case with fresh name counters, so both libraries name every node alike."""
    from collections import defaultdict
    mx.attribute.AttrScope._subgraph_names = defaultdict(int)
    with mx.name.NameManager():
        return make(mx)


def run(mx, out):
    rng = np.random.RandomState(20261127)
    arrays, meta = {}, {}
    for name, make in CASES.items():
        sym, shapes, rows = build(mx, make)
        args = sym.list_arguments()
        vals = {k: rng.uniform(-1, 1, shapes[k]).astype('float32') for k in args}
        if name == 'while':
            vals['i'] = np.zeros((1,), 'float32')
        if name == 'cond_then':
            vals['a'] = np.abs(vals['a']) + 1
        if name == 'cond_else':
            vals['b'] = np.abs(vals['b']) + 1
        grads = {k: mx.nd.zeros(shapes[k]) for k in args}
        ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in vals.items()}, args_grad=grads)
        outs = ex.forward(is_train=True)
        ograds = [rng.uniform(-1, 1, o.shape).astype('float32') for o in outs]
        ex.backward([mx.nd.array(g) for g in ograds])
        arrays['%s_json' % name] = np.frombuffer(sym.tojson().encode('utf-8'), np.uint8)
        for k, v in vals.items():
            arrays['%s_arg_%s' % (name, k)] = v
            arrays['%s_grad_%s' % (name, k)] = grads[k].asnumpy()
        for i, (o, g) in enumerate(zip(outs, ograds)):
            arrays['%s_out%d' % (name, i)] = o.asnumpy()
            arrays['%s_ograd%d' % (name, i)] = g
        meta[name] = {'args': args, 'nout': len(outs),
                      'rows': {str(k): v for k, v in rows.items()}}
    arrays['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), np.uint8)
    np.savez_compressed(out, **arrays)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--out', default=os.path.join(HERE, 'control_flow.npz'))
    args = parser.parse_args()
    import mxnet as mx
    run(mx, args.out)
    print('wrote', args.out)


if __name__ == '__main__':
    main()
