"""Data parallel over several CPU contexts, against MXNet 1.9.1 (issue #12).

The scripts live in tests/mxnet_ref/gen_multictx.py and run here on hybridgluon exactly as
they ran under real MXNet to write tests/mxnet_ref/multictx.npz: NDArray context rules,
split_data / split_and_load, Parameters with one copy per context, and training an MLP (also
with BatchNorm, also hybridized) on 1-3 contexts with SGD(momentum) and Adam under several
kvstore / update_on_kvstore settings, compared step by step on every context. Further tests
check what needs no MXNet: 1 context vs 2 contexts on the same data, the KVStore API against
NumPy, and the errors.
"""
import json
import os
import pickle
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, 'mxnet_ref')
sys.path.insert(0, REF)
import gen_multictx as G  # noqa: E402


def _load():
    with np.load(os.path.join(REF, 'multictx.npz'), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(bytes(arrays.pop('meta')).decode())


FX, META = _load()
C2 = [mx.cpu(0), mx.cpu(1)]


def _close(ours, theirs, what, tol=1e-5):
    """max |ours - MXNet| / max(|MXNet|, 1) below tol."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, what
    err = np.abs(ours - theirs).max() / max(np.abs(theirs).max(), 1.0) if ours.size else 0.0
    assert err < tol, '%s: error %.3g' % (what, err)


# ---- NDArray contexts, Parameters, errors: the context cases ------------------------------
@pytest.mark.parametrize('expr', G.CONTEXT_CASES)
def test_context_case_as_mxnet(expr):
    want = META['context'][expr]
    got = G.context_case(mx, expr)
    if 'error' in want:  # ours: the same class, or an MXNetError also derived from it
        assert 'error' in got, '%s: MXNet raises %s, we gave %s' % (expr, want['error'], got)
        assert want['error'] in got['classes'], '%s: MXNet raises %s, we raise %s' % (
            expr, want['error'], got['error'])
    else:
        assert got == want, expr


def test_op_outputs_follow_first_input_and_out_keeps_its_context():
    a, b = nd.ones((2, 3)), nd.ones((2, 3), ctx=mx.cpu(1))
    assert (a + b).context == mx.cpu(0) and (b + a).context == mx.cpu(1)
    np.testing.assert_array_equal((b + a).asnumpy(), np.full((2, 3), 2, np.float32))
    out = nd.zeros((2, 3), ctx=mx.cpu(4))
    nd.broadcast_add(b, a, out=out)
    assert out.context == mx.cpu(4)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2, np.float32))
    # views keep the array's context; copies to another context are new memory
    assert b[1:2].context == mx.cpu(1) and b.reshape((3, 2)).context == mx.cpu(1)
    c = b.copyto(mx.cpu(2))
    assert c.context == mx.cpu(2) and not c._shares_storage(b)
    c[:] = 5
    assert b.asnumpy().max() == 1


def test_context_of_creation_inside_with_and_cpu_kinds():
    with mx.cpu(3):
        assert nd.zeros((1,)).context == mx.cpu(3)
        assert nd.random.uniform(shape=(2,)).context == mx.cpu(3)
        assert nd.ones((1,), ctx=mx.cpu(1)).context == mx.cpu(1)
    # cpu_pinned(i) / cpu_shared(i) are plain CPU memory here but keep their context, as in
    # MXNet; an op's output on them is cpu(i)
    assert nd.ones((1,), ctx=mx.cpu_pinned(2)).context == mx.cpu_pinned(2)
    assert (nd.ones((1,), ctx=mx.cpu_pinned(2)) * 2).context == mx.cpu(2)
    with pytest.raises(mx.MXNetError, match='GPU 0 is not available'):
        nd.ones((1,)).copyto(mx.gpu(0))
    with pytest.raises(mx.MXNetError, match='can only be labelled cpu'):
        nd.ones((1,))._set_device(2, 0)


def test_gradients_on_the_data_context():
    x = nd.array([1.0, 2.0], ctx=mx.cpu(1))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    assert x.grad.context == mx.cpu(1)
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])


# ---- split_data / split_and_load ----------------------------------------------------------
@pytest.mark.parametrize('i', range(len(G.SPLIT_CASES)))
def test_split_data_as_mxnet(i):
    want = META['split'][str(i)]
    if want == 'ValueError':
        with pytest.raises(ValueError, match='cannot be evenly split'):
            G.split_case(mx, G.SPLIT_CASES[i])
        return
    got = G.split_case(mx, G.SPLIT_CASES[i])
    assert len(got) == want
    for k, s in enumerate(got):
        np.testing.assert_array_equal(s, FX['split_%d_%d' % (i, k)])


def test_split_and_load_places_slices():
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    parts = gluon.utils.split_and_load(data, ctxs, even_split=False)
    assert [p.context for p in parts] == ctxs
    assert [p.shape for p in parts] == [(2, 2), (2, 2), (1, 2)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), data)
    whole = nd.array(data)
    first = gluon.utils.split_and_load(whole, ctxs[:2] + ctxs[2:], even_split=False)[0]
    assert first._shares_storage(whole)  # already on cpu(0): the slice itself, as in MXNet
    parts = gluon.utils.split_and_load(whole, [mx.cpu(1), mx.cpu(2)], batch_axis=1)
    assert [p.context for p in parts] == [mx.cpu(1), mx.cpu(2)]
    np.testing.assert_array_equal(parts[1].asnumpy(), data[:, 1:])


@pytest.mark.parametrize('max_norm,check', [(1.0, True), (100.0, True), (2.0, False)])
def test_clip_global_norm_over_contexts(rng, max_norm, check):
    values = [rng.standard_normal((3, 4)).astype(np.float32),
              rng.standard_normal(5).astype(np.float32)]
    arrays = [nd.array(values[0], ctx=mx.cpu(1)), nd.array(values[1])]
    norm = gluon.utils.clip_global_norm(arrays, max_norm, check_isfinite=check)
    want = np.sqrt(sum((v.astype(np.float64) ** 2).sum() for v in values))
    if check:
        assert isinstance(norm, np.float32)
    else:
        assert norm.shape == (1,) and norm.context == mx.cpu(1)
        norm = norm.asscalar()
    np.testing.assert_allclose(norm, want, rtol=1e-6)
    scale = min(1.0, max_norm / (want + 1e-8))
    for arr, v, ctx in zip(arrays, values, [mx.cpu(1), mx.cpu(0)]):
        assert arr.context == ctx
        np.testing.assert_allclose(arr.asnumpy(), v * scale, rtol=1e-5)


def test_clip_global_norm_warns_and_refuses_nothing():
    with pytest.warns(UserWarning, match='nan or inf is detected'):
        assert gluon.utils.clip_global_norm([nd.array([np.inf, 1.0])], 1.0) == np.inf
    with pytest.raises(mx.MXNetError, match='arrays is empty'):
        gluon.utils.clip_global_norm([], 1.0)


# ---- Parameters ---------------------------------------------------------------------------
def test_parameter_copies_per_context():
    mx.random.seed(3)
    p = gluon.Parameter('w', shape=(3, 4), init=mx.init.Xavier())
    p.initialize(ctx=[mx.cpu(1), mx.cpu(0), mx.cpu(3)])
    data = p.list_data()
    assert [d.context for d in data] == [mx.cpu(1), mx.cpu(0), mx.cpu(3)]
    assert [g.context for g in p.list_grad()] == [mx.cpu(1), mx.cpu(0), mx.cpu(3)]
    assert p.data(mx.cpu(3)) is data[2] and p.grad(mx.cpu(0)) is p.list_grad()[1]
    assert all((d.asnumpy() == data[0].asnumpy()).all() for d in data)  # the same values
    assert len({d._storage_id for d in data}) == 3  # independent copies
    with pytest.raises(RuntimeError, match="was not initialized on context cpu\\(2\\)"):
        p.data(mx.cpu(2))
    p.set_data(nd.ones((3, 4)) * 2)
    assert all((d.asnumpy() == 2).all() for d in p.list_data())
    p.data(mx.cpu(0))[:] = 4  # reset_ctx keeps the mean of the copies
    p.reset_ctx([mx.cpu(5), mx.cpu(6)])
    assert p.list_ctx() == [mx.cpu(5), mx.cpu(6)]
    for d in p.list_data():
        assert d.context in (mx.cpu(5), mx.cpu(6))
        np.testing.assert_allclose(d.asnumpy(), (2 + 4 + 2) / 3, rtol=1e-6)


def test_deferred_init_on_every_context():
    net = G.build(mx, 'mlpdeferred')
    net.initialize(mx.init.Xavier(), ctx=C2)
    xs = gluon.utils.split_and_load(nd.ones((4, G.IN_UNITS)), C2)
    outs = [net(x) for x in xs]
    assert [o.context for o in outs] == C2
    for p in net.collect_params().values():
        d0, d1 = p.list_data()
        assert (d0.context, d1.context) == tuple(C2)
        np.testing.assert_array_equal(d0.asnumpy(), d1.asnumpy())


# ---- training against MXNet ---------------------------------------------------------------
def _init_of(model):
    model = 'mlp' if model == 'mlpdeferred' else model
    return [FX['%s_init_p%d' % (model, j)] for j in range(META[model + '_init'])]


@pytest.mark.parametrize('name', sorted(G.SCENARIOS))
def test_training_as_mxnet(name):
    scenario = G.SCENARIOS[name]
    arrays, info = G.train(mx, scenario, FX['data_x'], FX['data_y'], _init_of(scenario[0]))
    assert info == META['scenarios'][name]
    assert sorted(arrays) == sorted(k[len(name) + 1:] for k in FX if k.startswith(name + '_s'))
    for key in sorted(arrays):
        _close(arrays[key], FX['%s_%s' % (name, key)], '%s %s' % (name, key))


def test_training_copies_stay_equal_with_a_kvstore_and_diverge_without():
    def run(kv, uok):
        scenario = ('mlp', False, 'sgd', G._SGD[1], kv, uok, 2)
        return G.train(mx, scenario, FX['data_x'], FX['data_y'], _init_of('mlp'))[0]
    for kv, uok in (('device', None), ('local', False)):
        res = run(kv, uok)
        for j in range(META['mlp_init']):
            np.testing.assert_array_equal(res['s2_p%d_c0' % j], res['s2_p%d_c1' % j])
    res = run(None, None)  # each context with its own gradient
    assert np.abs(res['s2_p0_c0'] - res['s2_p0_c1']).max() > 1e-3


@pytest.mark.parametrize('opt', ['sgd', 'adam'])
@pytest.mark.parametrize('kv,uok', [('device', None), ('device', False), ('local', True)])
def test_two_contexts_equal_one_context_with_the_whole_batch(opt, kv, uok):
    """The batch split over 2 contexts with the gradients summed gives the parameters of one
    context fed the whole batch."""
    opt_params = dict(G._SGD[1] if opt == 'sgd' else G._ADAM[1])
    # a type name makes no store for one context (update_on_kvstore=True is then an error): a
    # KVStore object is used even there
    kv_one = 'obj:' + kv if uok else kv
    one = G.train(mx, ('mlp', False, opt, opt_params, kv_one, uok, 1), FX['data_x'],
                  FX['data_y'], _init_of('mlp'))[0]
    two = G.train(mx, ('mlp', True, opt, opt_params, kv, uok, 2), FX['data_x'], FX['data_y'],
                  _init_of('mlp'))[0]
    half = G.BATCH // 2
    for step in range(G.STEPS):
        losses = np.concatenate([two['s%d_loss_c0' % step], two['s%d_loss_c1' % step]])
        np.testing.assert_allclose(losses, one['s%d_loss_c0' % step], rtol=1e-5, atol=1e-6)
        assert two['s%d_loss_c0' % step].shape == (half,)
        for j in range(META['mlp_init']):
            for k in range(2):
                np.testing.assert_allclose(two['s%d_p%d_c%d' % (step, j, k)],
                                           one['s%d_p%d_c0' % (step, j)], rtol=1e-5, atol=1e-6)


def test_hybridized_call_uses_the_copy_of_the_data_context():
    net = gluon.nn.Dense(3, in_units=2)
    net.initialize(ctx=C2)
    net.weight.set_data(nd.ones((3, 2)))
    net.weight.data(mx.cpu(1))[:] = 2  # make the copies tell apart
    net.hybridize()
    x = nd.ones((1, 2))
    for _ in range(2):  # the second call goes through the bound cached op
        y0, y1 = net(x), net(x.as_in_context(mx.cpu(1)))
        assert (y0.context, y1.context) == tuple(C2)
        np.testing.assert_allclose(y0.asnumpy(), 2)
        np.testing.assert_allclose(y1.asnumpy(), 4)


def test_hybridized_block_on_one_other_context():
    net = gluon.nn.Dense(3, in_units=2)
    net.initialize(ctx=mx.cpu(0))
    net.hybridize()
    assert net(nd.ones((1, 2))).context == mx.cpu(0)
    assert net(nd.ones((1, 2))).context == mx.cpu(0)  # bound fast path
    with pytest.raises(mx.MXNetError, match='CachedOp requires all inputs to live on the same '
                                            'context. But data is on cpu\\(1\\) while '
                                            'dense\\d+_weight is on cpu\\(0\\)'):
        net(nd.ones((1, 2), ctx=mx.cpu(1)))
    net.reset_ctx(mx.cpu(1))
    for _ in range(2):
        assert net(nd.ones((1, 2), ctx=mx.cpu(1))).context == mx.cpu(1)


# ---- Trainer settings ---------------------------------------------------------------------
def _trainer(kvstore='device', update_on_kvstore=None, n_ctx=2, size=3):
    p = gluon.Parameter('w', shape=(size,))
    p.initialize(init=mx.init.Constant(1.0), ctx=[mx.cpu(i) for i in range(n_ctx)])
    return p, gluon.Trainer([p], 'sgd', {'learning_rate': 0.5}, kvstore=kvstore,
                            update_on_kvstore=update_on_kvstore)


def _backward(p, scale):
    for k, d in enumerate(p.list_data()):
        with autograd.record():
            y = (d * scale[k]).sum()
        y.backward()


def test_update_on_kvstore_false_reduces_then_updates_every_copy():
    p, trainer = _trainer('local', False)
    _backward(p, [1.0, 3.0])
    trainer.allreduce_grads()
    for g in p.list_grad():
        np.testing.assert_allclose(g.asnumpy(), 4.0)  # the sum, on every context
    trainer.update(2)
    for d in p.list_data():
        np.testing.assert_allclose(d.asnumpy(), 1 - 0.5 * 4 / 2)


def test_kvstore_keeps_its_own_weight_with_update_on_kvstore():
    """The store holds the weight: a copy written behind its back is overwritten by the next
    pull, as with MXNet's store."""
    p, trainer = _trainer('device', True)
    _backward(p, [1.0, 1.0])
    trainer.step(1)
    p.data(mx.cpu(1))[:] = 100  # not through set_data: the store does not see it
    _backward(p, [1.0, 1.0])
    trainer.step(1)
    for d in p.list_data():
        np.testing.assert_allclose(d.asnumpy(), 1 - 0.5 * 2 - 0.5 * 2)
    p.set_data(nd.ones((3,)) * 7)  # set_data resets the store
    _backward(p, [1.0, 1.0])
    trainer.step(1)
    for d in p.list_data():
        np.testing.assert_allclose(d.asnumpy(), 7 - 0.5 * 2)


def test_local_kvstore_updates_off_the_store_for_huge_parameters():
    p, trainer = _trainer('local', None, size=1024 * 1024 * 16 + 1)
    trainer._init_kvstore()
    assert trainer._kvstore.type == 'local' and trainer._update_on_kvstore is False
    p, trainer = _trainer('device', None, size=1024 * 1024 * 16 + 1)
    trainer._init_kvstore()
    assert trainer._update_on_kvstore is True


def test_update_on_kvstore_env_switch(monkeypatch):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    _, trainer = _trainer('device', None)
    trainer._init_kvstore()
    assert trainer._kvstore is not None and trainer._update_on_kvstore is False


def test_trainer_errors():
    p, trainer = _trainer('device', True, n_ctx=1)
    _backward(p, [1.0])
    with pytest.raises(mx.MXNetError, match='update_on_kvstore=True needs a kvstore'):
        trainer.step(1)
    p, trainer = _trainer('nccl')
    with pytest.raises(NotImplementedError, match="kvstore type 'nccl' is not supported"):
        trainer.step(1)
    p, trainer = _trainer('foo')
    with pytest.raises(mx.MXNetError, match="unknown kvstore type 'foo'"):
        trainer.step(1)
    p = gluon.Parameter('w', shape=(2,))
    p.initialize(ctx=C2)
    trainer = gluon.Trainer([p], 'sgd', kvstore='device', compression_params={'type': '2bit'})
    with pytest.raises(NotImplementedError, match='gradient compression'):
        trainer.step(1)


def test_trainer_states_round_trip_on_the_store(tmp_path):
    def run(save_load):
        p, trainer = _trainer('device', None)
        trainer = gluon.Trainer([p], 'adam', {'learning_rate': 0.1})
        for step in range(3):
            _backward(p, [1.0 + step, 2.0])
            trainer.step(1)
            if save_load and step == 1:
                fname = str(tmp_path / 'states')
                trainer.save_states(fname)
                trainer.load_states(fname)
        return [d.asnumpy() for d in p.list_data()]
    a, b = run(False), run(True)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# ---- mx.kv --------------------------------------------------------------------------------
def test_kvstore_push_pull_against_numpy(rng):
    kv = mx.kv.create('device')
    assert (kv.type, kv.rank, kv.num_workers) == ('device', 0, 1)
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    kv.init(3, nd.array(w))
    g = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    kv.push(3, [nd.array(x, ctx=mx.cpu(i)) for i, x in enumerate(g)])
    outs = [nd.zeros((2, 3), ctx=mx.cpu(i)) for i in range(2)]
    kv.pull(3, out=outs)
    for o, ctx in zip(outs, C2):
        assert o.context == ctx
        np.testing.assert_allclose(o.asnumpy(), g[0] + g[1] + g[2], rtol=1e-6)
    vals = [nd.array(x) for x in g[:2]]
    kv.pushpull(3, vals)  # no out: the result goes back into the values
    for v in vals:
        np.testing.assert_allclose(v.asnumpy(), g[0] + g[1], rtol=1e-6)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    out = nd.zeros((2, 3))
    kv.pushpull(3, nd.array(g[2]), out=out)
    np.testing.assert_allclose(out.asnumpy(), g[0] + g[1] - 0.1 * g[2], rtol=1e-5)
    kv2 = mx.kv.create('local')
    kv2.init(['a', 'b'], [nd.ones((2,)), nd.ones((1,))])
    seen = []
    kv2._set_updater(lambda key, grad, stored: seen.append(key) or stored.__iadd__(grad * 10))
    kv2.push(['a', 'b'], [[nd.ones((2,)), nd.ones((2,))], nd.ones((1,))])
    out = [nd.zeros((2,)), nd.zeros((1,))]
    kv2.pull(['a', 'b'], out=out)
    assert seen == ['a', 'b']
    np.testing.assert_allclose(out[0].asnumpy(), 21)
    np.testing.assert_allclose(out[1].asnumpy(), 11)
    kv3 = mx.kv.create('local')
    dst = [nd.zeros((2,), ctx=mx.cpu(1)), nd.zeros((2,))]
    kv3.broadcast(0, nd.full((2,), 7.0), out=dst)
    assert all((d.asnumpy() == 7).all() for d in dst)


def test_kvstore_errors():
    kv = mx.kv.create('local')
    kv.init(3, nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='duplicate init of key 3'):
        kv.init(3, nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='key 9 has not been inited'):
        kv.push(9, nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='key 9 has not been inited'):
        kv.pull(9, out=nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='key 3 holds an array of shape \\(2, 3\\), got one '
                                            'of shape \\(2, 4\\)'):
        kv.push(3, nd.ones((2, 4)))
    with pytest.raises(mx.MXNetError, match='key 3 holds an array of shape'):
        kv.pull(3, out=nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match='Mixed key types are not allowed'):
        kv.init('w', nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match='2 keys need a list of 2 values'):
        kv.push([3, 4], [nd.ones((2, 3))])
    with pytest.raises(mx.MXNetError, match='must be an NDArray'):
        kv.push(3, np.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match='no optimizer is set'):
        kv.save_optimizer_states('x')
    with pytest.raises(NotImplementedError, match="'dist_async'.*parameter server"):
        mx.kv.create('dist_async')
    with pytest.raises(TypeError, match='name must be a string'):
        mx.kv.create(3)
    assert mx.kvstore.create('local_allreduce_cpu').type == 'local_allreduce_cpu'


def test_kvstore_optimizer_states_round_trip(tmp_path):
    kv = mx.kv.create('local')
    kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
    kv.init(0, nd.ones((2,)))
    kv.push(0, nd.ones((2,)))
    fname = str(tmp_path / 'kv.states')
    kv.save_optimizer_states(fname, dump_optimizer=True)
    states, opt = pickle.loads(open(fname, 'rb').read())
    assert isinstance(opt, mx.optimizer.Adam) and set(states) == {0}
    kv.load_optimizer_states(fname)
    kv.push(0, nd.ones((2,)))
    out = nd.zeros((2,))
    kv.pull(0, out=out)
    assert out.asnumpy()[0] < 1 - 0.1  # two Adam steps
