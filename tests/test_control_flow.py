"""Control flow (foreach, while_loop, cond): imperative against NumPy, hybridized (one graph node
holding subgraphs, run by the executor) against imperative, forward and backward (finite
differences: test_grad_control_flow.py); export / SymbolBlock.imports round trips; MXNet
1.9.1's JSON (tests/mxnet_ref/control_flow.npz, made by gen_control_flow_ref.py) loaded and run
against MXNet's outputs and gradients; bad graphs give clear errors."""
import json
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, 'mxnet_ref', 'control_flow.npz')


def _np_tanh_rnn(x, h, w, u, b):
    outs = []
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w.T + b + h @ u.T)
        outs.append(h * 2)
    return np.stack(outs), h


# ---- imperative ------------------------------------------------------------------------------
def test_nd_foreach_matches_numpy_and_formats():
    rng = np.random.RandomState(0)
    x, h = rng.rand(4, 2, 3), rng.rand(2, 5)
    w, u, b = rng.rand(5, 3), rng.rand(5, 5), rng.rand(5)
    W, U, B = (mx.nd.array(a) for a in (w, u, b))

    def step(xt, states):
        ht = mx.nd.tanh(mx.nd.FullyConnected(xt, W, B, num_hidden=5)
                        + mx.nd.FullyConnected(states[0], U, no_bias=True, num_hidden=5))
        return ht * 2, [ht]
    out, states = mx.nd.contrib.foreach(step, mx.nd.array(x), [mx.nd.array(h)])
    ref_out, ref_h = _np_tanh_rnn(x, h, w, u, b)
    assert isinstance(out, mx.nd.NDArray) and isinstance(states, list)
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), ref_h, rtol=1e-5, atol=1e-6)
    # lists of data and of outputs keep their nesting; no outputs gives []
    outs, st = mx.nd.contrib.foreach(lambda xs, s: ([xs[0] + xs[1], xs[0]], s),
                                     [mx.nd.array(x), mx.nd.array(x)], mx.nd.array(h))
    assert isinstance(outs, list) and len(outs) == 2 and isinstance(st, mx.nd.NDArray)
    np.testing.assert_allclose(outs[0].asnumpy(), 2 * x, rtol=1e-6)
    none, _ = mx.nd.contrib.foreach(lambda xt, s: ([], [s[0] + xt]), mx.nd.array(x[:, 0]),
                                    [mx.nd.array(h[0, :3])])
    assert none == []


def test_nd_while_loop_pads_with_zeros_and_cond_picks_branch():
    i0, s0 = mx.nd.array([0.0]), mx.nd.array([1.0, 2.0])
    outs, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i < 3,
                                            lambda i, s: ([s * 2], [i + 1, s + i]),
                                            [i0, s0], max_iterations=5)
    ref, cur = [], np.array([1.0, 2.0])
    for k in range(3):
        ref.append(cur * 2)
        cur = cur + k
    ref += [np.zeros(2)] * 2
    np.testing.assert_allclose(outs[0].asnumpy(), np.stack(ref))
    assert i.asscalar() == 3
    np.testing.assert_allclose(s.asnumpy(), cur)
    with pytest.raises(ValueError, match='max_iterations'):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [i0])
    a = mx.nd.array([1.0, 2.0])
    assert mx.nd.contrib.cond(a.sum() > 2, lambda: a * 2, lambda: a).asnumpy().tolist() == [2, 4]
    assert mx.nd.contrib.cond(a.sum() > 9, lambda: a * 2, lambda: a).asnumpy().tolist() == [1, 2]


# ---- hybridized against imperative -----------------------------------------------------------
class _RNN(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get('w', shape=(5, 3))
            self.u = self.params.get('u', shape=(5, 5))

    def hybrid_forward(self, F, x, h, w, u):
        def step(xt, states):
            ht = F.tanh(F.FullyConnected(xt, w, no_bias=True, num_hidden=5)
                        + F.FullyConnected(states[0], u, no_bias=True, num_hidden=5))
            return ht * 2, [ht]
        out, states = F.contrib.foreach(step, x, [h])
        return out + 1, states[0]


class _While(gluon.HybridBlock):
    def hybrid_forward(self, F, i, s, w):
        outs, (i2, s2) = F.contrib.while_loop(
            lambda i, s: i < 3, lambda i, s: ([F.sin(s) * w], [i + 1, s * w + 0.5]), [i, s],
            max_iterations=5)
        return outs[0], s2


class _Cond(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b):
        out = F.contrib.cond(F.sum(a) > F.sum(b), lambda: [a * b, F.exp(a)],
                             lambda: [a - b, a * a * b])
        return out[0], out[1]


def _run(block, inputs, hybridize, params=None):
    if hybridize:
        block.hybridize()
    xs = [mx.nd.array(a) for a in inputs]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        outs = block(*xs)
        loss = sum(((o * o) * (k + 1)).sum() for k, o in enumerate(outs))
    loss.backward()
    got = [o.asnumpy() for o in outs] + [x.grad.asnumpy() for x in xs]
    got += [p.grad().asnumpy() for p in (params or [])]
    return got


def _make_rnn():
    net = _RNN(prefix='rnn_')
    net.initialize()
    rng = np.random.RandomState(1)
    net.w.set_data(mx.nd.array(rng.uniform(-1, 1, (5, 3))))
    net.u.set_data(mx.nd.array(rng.uniform(-1, 1, (5, 5))))
    return net


@pytest.mark.parametrize('kind', ['foreach', 'while', 'cond_then', 'cond_else'])
def test_hybridized_forward_backward_equal_imperative(kind):
    rng = np.random.RandomState(2)
    if kind == 'foreach':
        make, inputs = _make_rnn, [rng.rand(4, 2, 3), rng.rand(2, 5)]
    elif kind == 'while':
        make, inputs = _While, [np.zeros(1), rng.rand(2, 3), rng.rand(2, 3)]
    else:
        a, b = rng.rand(2, 3), rng.rand(2, 3)
        make, inputs = _Cond, ([a + 1, b] if kind == 'cond_then' else [a, b + 1])
    results = []
    for hyb in (False, True):
        block = make()
        if kind != 'foreach':
            block.initialize()
        params = [block.w, block.u] if kind == 'foreach' else []
        results.append(_run(block, inputs, hyb, params))
    for imp, hyb in zip(*results):
        np.testing.assert_allclose(hyb, imp, rtol=1e-5, atol=1e-6)


def test_hybridized_graph_is_one_node_and_round_trips(tmp_path):
    net = _make_rnn()
    net.hybridize()
    x, h = mx.nd.array(np.random.rand(3, 2, 3)), mx.nd.array(np.random.rand(2, 5))
    out, hn = net(x, h)
    prefix = str(tmp_path / 'rnn')
    net.export(prefix)
    doc = json.load(open(prefix + '-symbol.json'))
    ops = [n['op'] for n in doc['nodes']]
    assert ops.count('_foreach') == 1 and 'FullyConnected' not in ops  # the body is a subgraph
    node = doc['nodes'][ops.index('_foreach')]
    assert len(node['subgraphs']) == 1
    assert {'in_data_locs', 'in_state_locs', 'remain_locs', 'num_args'} <= set(node['attrs'])
    back = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data0', 'data1'],
                                     prefix + '-0000.params')
    out2, hn2 = back(x, h)
    np.testing.assert_allclose(out2.asnumpy(), out.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(hn2.asnumpy(), hn.asnumpy(), rtol=1e-6)
    text = open(prefix + '-symbol.json').read()
    assert mx.sym.load_json(text).tojson() == text


def test_foreach_unknown_dim_partial_inference():
    data = mx.sym.var('data', shape=(0, 3, 4))
    outs, _ = mx.sym.contrib.foreach(lambda x, s: (x + s[0], [s[0] * 2]), data,
                                     [mx.sym.var('state')])
    _, out_shapes, _ = outs.infer_shape_partial()
    assert tuple(out_shapes[0]) == (0, 3, 4)
    _, out_shapes, _ = outs.infer_shape(data=(5, 3, 4))
    assert tuple(out_shapes[0]) == (5, 3, 4)


# ---- MXNet 1.9.1's graphs -----------------------------------------------------------------------
def _fixture():
    if not os.path.exists(FIXTURE):
        pytest.skip('control_flow.npz not generated')
    return np.load(FIXTURE, allow_pickle=False)


@pytest.mark.parametrize('case', ['foreach_rnn', 'foreach_nested', 'while', 'cond_then',
                                  'cond_else'])
def test_mxnet_json_loads_and_gives_mxnets_numbers(case):
    fx = _fixture()
    meta = json.loads(bytes(fx['meta']).decode())[case]
    text = bytes(fx['%s_json' % case]).decode()
    sym = mx.sym.load_json(text)
    assert sym.tojson() == text  # the same bytes MXNet wrote
    args = {k: mx.nd.array(fx['%s_arg_%s' % (case, k)]) for k in meta['args']}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = ex.forward(is_train=True)
    for i, o in enumerate(outs):
        want = fx['%s_out%d' % (case, i)]
        rows = meta['rows'].get(str(i))
        got = o.asnumpy()
        if rows is not None:  # MXNet leaves the rows after the last step uninitialised
            assert np.all(got[rows:] == 0)
            got, want = got[:rows], want[:rows]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ex.backward([mx.nd.array(fx['%s_ograd%d' % (case, i)]) for i in range(meta['nout'])])
    for k in meta['args']:
        np.testing.assert_allclose(grads[k].asnumpy(), fx['%s_grad_%s' % (case, k)],
                                   rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize('case', ['foreach_rnn', 'foreach_nested', 'while', 'cond_then'])
def test_graphs_built_here_are_mxnets_json(case):
    """The generator's own case functions, run on hybridgluon, write MXNet's bytes: names,
    cut variables, locations and subgraphs as MXNet 1.9.1 made them."""
    import sys
    sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
    try:
        import gen_control_flow_ref as gen
    finally:
        sys.path.pop(0)
    fx = _fixture()
    sym, _, _ = gen.build(mx, gen.CASES[case])
    assert sym.tojson() == bytes(fx['%s_json' % case]).decode()


# ---- errors --------------------------------------------------------------------------------------
def test_errors_are_clear():
    with pytest.raises(mx.MXNetError, match='needs its subgraphs'):
        mx.nd._internal._foreach(mx.nd.ones((2, 3)), num_args=2, num_outputs=1,
                                 num_out_data=1, in_state_locs='[]', in_data_locs='[0]',
                                 remain_locs='[]')
    outs, _ = mx.sym.contrib.foreach(lambda x, s: (x * 2, []), mx.sym.var('d'), [])
    doc = json.loads(outs.tojson())
    node = [n for n in doc['nodes'] if n['op'] == '_foreach'][0]
    node['attrs']['in_data_locs'] = '[7]'
    bad = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(mx.MXNetError, match='in_data_locs entry 0'):
        bad.bind(mx.cpu(), {'d': mx.nd.ones((2, 3))}).forward()
    node['attrs']['in_data_locs'] = '[0]'
    node['subgraphs'] = node['subgraphs'] * 2
    bad = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(mx.MXNetError, match='needs 1 subgraph'):
        bad.bind(mx.cpu(), {'d': mx.nd.ones((2, 3))}).forward()
    del node['subgraphs']
    bad = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(mx.MXNetError, match='needs its subgraphs'):
        bad.bind(mx.cpu(), {'d': mx.nd.ones((2, 3))}).forward()
    node['subgraphs'] = {'nodes': []}
    with pytest.raises(mx.MXNetError, match='subgraphs'):
        mx.sym.load_json(json.dumps(doc))
    outs, st = mx.sym.contrib.foreach(lambda x, s: (x * s[0], [s[0] + 1]), mx.sym.var('d'),
                                      [mx.sym.var('s')])
    doc = json.loads(mx.sym.Group([outs] + st).tojson())
    node = [n for n in doc['nodes'] if n['op'] == '_foreach'][0]
    node['attrs']['in_state_locs'] = node['attrs']['in_data_locs']  # a hostile file
    bad = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(mx.MXNetError, match='name input 0 twice'):
        bad.bind(mx.cpu(), {'d': mx.nd.ones((2, 3)), 's': mx.nd.ones((3,))}).forward()
    with pytest.raises(AssertionError, match='state arrays'):
        mx.sym.contrib.foreach(lambda x, s: (x, [x]), mx.sym.var('d'), [mx.sym.var('s')])


def test_single_output_cond_unpacks_while_tracing():
    class Block(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            (y,) = F.contrib.cond(x > 0.5, lambda: x * 2, lambda: x * 3, name='my_cond')
            return y
    block = Block()
    block.initialize()
    block.hybridize()
    x = mx.nd.array([0.25])
    assert block(x).asscalar() == 0.75
    assert block(mx.nd.array([1.0])).asscalar() == 2.0


def test_carried_values_and_branches_must_keep_their_shape():
    i, s, a = mx.sym.var('i'), mx.sym.var('s'), mx.sym.var('a')
    outs, lv = mx.sym.contrib.while_loop(
        lambda i, s: i < 3, lambda i, s: ([s], [i + 1, mx.sym.concat(s, s, dim=0)]), [i, s],
        max_iterations=4)
    with pytest.raises(mx.MXNetError, match=r'loop variable 1 is \[2\].*after it'):
        mx.sym.Group(outs + lv).bind(mx.cpu(), {'i': mx.nd.zeros((1,)),
                                                's': mx.nd.ones((2,))}).forward()
    out = mx.sym.contrib.cond(a.sum() > 0, lambda: a, lambda: mx.sym.concat(a, a, dim=0))
    with pytest.raises(mx.MXNetError, match='output 0 is .* from then and .* from else'):
        out.bind(mx.cpu(), {'a': mx.nd.ones((2,))}).forward()
    outs, st = mx.sym.contrib.foreach(lambda x, s: (x, [mx.sym.concat(s[0], x, dim=0)]),
                                      mx.sym.var('d'), [s])
    with pytest.raises(mx.MXNetError, match='state 0 is'):
        mx.sym.Group([outs] + st).bind(mx.cpu(), {'d': mx.nd.ones((3, 2)),
                                                  's': mx.nd.ones((2,))}).forward()


def test_c_predictor_runs_an_exported_foreach(tmp_path):
    """The no-Python deployment path (hybridgluon/predict.h through ctypes) runs the loop."""
    import ctypes

    class Spec(ctypes.Structure):
        _fields_ = [('name', ctypes.c_char_p), ('ndim', ctypes.c_int),
                    ('shape', ctypes.POINTER(ctypes.c_int64)), ('dtype', ctypes.c_int)]
    lib = ctypes.CDLL(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'))
    P = ctypes.c_void_p
    lib.hg_predictor_create_from_files.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                   ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                   ctypes.POINTER(Spec), ctypes.POINTER(P)]
    lib.hg_predictor_set_input.argtypes = [P, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.hg_predictor_forward.argtypes = [P]
    lib.hg_predictor_get_output.argtypes = [P, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    lib.hg_predictor_free.argtypes = [P]
    lib.hg_predictor_free.restype = None
    lib.hg_last_error.restype = ctypes.c_char_p
    net = _make_rnn()
    net.hybridize()
    x = np.random.RandomState(7).rand(3, 2, 3).astype(np.float32)
    h = np.random.RandomState(8).rand(2, 5).astype(np.float32)
    want = net(mx.nd.array(x), mx.nd.array(h))[0].asnumpy()
    prefix = str(tmp_path / 'rnn')
    net.export(prefix)
    shapes = [(ctypes.c_int64 * 3)(3, 2, 3), (ctypes.c_int64 * 2)(2, 5)]
    specs = (Spec * 2)(Spec(b'data0', 3, shapes[0], 0), Spec(b'data1', 2, shapes[1], 0))
    p = P()
    st = lib.hg_predictor_create_from_files((prefix + '-symbol.json').encode(),
                                            (prefix + '-0000.params').encode(), 1, 0, 2, specs,
                                            ctypes.byref(p))
    assert st == 0, lib.hg_last_error()
    try:
        assert lib.hg_predictor_set_input(p, b'data0', x.ctypes.data, x.nbytes) == 0
        assert lib.hg_predictor_set_input(p, b'data1', h.ctypes.data, h.nbytes) == 0
        assert lib.hg_predictor_forward(p) == 0, lib.hg_last_error()
        got = np.empty_like(want)
        assert lib.hg_predictor_get_output(p, 0, got.ctypes.data, got.nbytes) == 0
    finally:
        lib.hg_predictor_free(p)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_hybridized_loop_called_from_threads():
    import threading
    net = _make_rnn()
    net.hybridize()
    rng = np.random.RandomState(9)
    inputs = [(mx.nd.array(rng.rand(t, 2, 3)), mx.nd.array(rng.rand(2, 5))) for t in (2, 3, 5)]
    want = [net(x, h)[0].asnumpy() for x, h in inputs]
    errors = []

    def work(k):
        try:
            for r in range(10):
                x, h = inputs[(k + r) % 3]
                got = net(x, h)[0].asnumpy()
                np.testing.assert_allclose(got, want[(k + r) % 3], rtol=1e-6)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_random_ops_in_a_differentiated_body_are_refused():
    class Block(gluon.HybridBlock):
        def hybrid_forward(self, F, x, h):
            out, _ = F.contrib.foreach(lambda d, s: (F.Dropout(d, p=0.5) + s[0], [s[0] + d]),
                                       x, [h])
            return out
    block = Block()
    block.initialize()
    block.hybridize()
    x, h = mx.nd.ones((3, 2)), mx.nd.ones((2,))
    assert block(x, h).shape == (3, 2)  # the forward runs
    x.attach_grad()
    with pytest.raises(mx.MXNetError, match=r"draws random numbers \(node '.*dropout0', Dropout"):
        with autograd.record():
            y = block(x, h)
        y.backward()


@pytest.mark.parametrize('kind', ['while', 'cond'])
def test_while_and_cond_export_round_trip_with_static_alloc(kind, tmp_path):
    rng = np.random.RandomState(10)
    if kind == 'while':
        block, inputs = _While(), [np.zeros(1), rng.rand(2, 3), rng.rand(2, 3)]
    else:
        block, inputs = _Cond(), [rng.rand(2, 3) + 1, rng.rand(2, 3)]
    block.initialize()
    block.hybridize(static_alloc=True, static_shape=True)
    xs = [mx.nd.array(a) for a in inputs]
    want = [o.asnumpy() for o in block(*xs)]
    again = [o.asnumpy() for o in block(*xs)]  # the kept arenas give the same numbers
    for a, b in zip(want, again):
        np.testing.assert_array_equal(a, b)
    prefix = str(tmp_path / kind)
    block.export(prefix)
    names = ['data%d' % i for i in range(len(inputs))]
    back = gluon.SymbolBlock.imports(prefix + '-symbol.json', names)
    for got, w in zip(back(*xs), want):
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-6)


def test_more_free_variables_than_a_location_list_holds_is_a_clear_error():
    ws = [mx.sym.var('w%d' % i) for i in range(40)]

    def step(x, s):
        for w in ws:
            x = x + w
        return x, [s[0] + x]
    with pytest.raises(mx.MXNetError, match='reads 40 values .* at most 32'):
        mx.sym.contrib.foreach(step, mx.sym.var('d'), [mx.sym.var('s')])


def test_repeated_outputs_stay_repeated_and_run():
    """MXNet copies a foreach state that is also an output through identity, but leaves an
    output given twice as a repeated head; the executor fills both."""
    d, s, s2 = mx.sym.var('d'), mx.sym.var('s'), mx.sym.var('s2')

    def step(x, st):
        out = x + st[0] * 2 + st[1]
        return [out, out], [out, out * 3]
    outs, states = mx.sym.contrib.foreach(step, d, [s, s2])
    doc = json.loads(mx.sym.Group(outs + states).tojson())
    body = [n for n in doc['nodes'] if n['op'] == '_foreach'][0]['subgraphs'][0]
    heads = [tuple(h) for h in body['heads']]
    assert heads[0] == heads[1] and len(set(heads)) == 3  # state 0 went through identity
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ex = mx.sym.Group(outs + states).bind(mx.cpu(), {'d': mx.nd.array(x), 's': mx.nd.ones(2),
                                                     's2': mx.nd.ones(2)})
    got = [o.asnumpy() for o in ex.forward()]
    a, b, ref = np.ones(2), np.ones(2), []
    for t in range(3):
        out = x[t] + a * 2 + b
        ref.append(out)
        a, b = out, out * 3
    np.testing.assert_allclose(got[0], np.stack(ref))
    np.testing.assert_allclose(got[1], np.stack(ref))
    np.testing.assert_allclose(got[2], a)
    np.testing.assert_allclose(got[3], b)


def test_language_model_loop_over_int_token_ids():
    """The RNN-LM pattern: int32 token ids sliced per step into an Embedding; hybridized
    gradients of the embedding and recurrent weights equal the imperative ones."""
    class LM(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.emb = self.params.get('emb', shape=(10, 4))
                self.u = self.params.get('u', shape=(4, 4))

        def hybrid_forward(self, F, tok, h, emb, u):
            def step(t, st):
                hn = F.tanh(F.Embedding(t, emb, input_dim=10, output_dim=4)
                            + F.dot(st[0], u))
                return hn, [hn]
            out, _ = F.contrib.foreach(step, tok, [h])
            return out
    rng = np.random.RandomState(11)
    tok = mx.nd.array(rng.randint(0, 10, (5, 2)), dtype='int32')
    h = mx.nd.zeros((2, 4))
    res = []
    for hyb in (False, True):
        net = LM()
        net.initialize()
        net.emb.set_data(mx.nd.array(np.random.RandomState(0).rand(10, 4)))
        net.u.set_data(mx.nd.array(np.random.RandomState(1).rand(4, 4)))
        if hyb:
            net.hybridize()
        with autograd.record():
            out = net(tok, h)
            loss = (out * out).sum()
        loss.backward()
        res.append([out.asnumpy(), net.emb.grad().asnumpy(), net.u.grad().asnumpy()])
    for imp, hyb in zip(*res):
        np.testing.assert_allclose(hyb, imp, rtol=1e-5, atol=1e-6)
    assert np.abs(res[1][1]).sum() > 0
