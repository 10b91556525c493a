"""gluon.Trainer against NumPy implementations of MXNet 1.9.1's update rules: rescale by the
batch size, parameter ordering and lr_mult, grad_req='null', stale-gradient errors and
ignore_stale_grad, allreduce_grads + update, learning-rate access, schedules, save/load of the
states, and several contexts. Gradients are written into param.grad() directly (autograd will
set `_fresh_grad` itself)."""
import numpy as np
import pytest

import hybridgluon as mx
import optim_ref as R

nd = mx.nd
gluon = mx.gluon
TOL = dict(rtol=2e-5, atol=1e-6)

STALE = ("Gradient of Parameter `%s` on context cpu(0) has not been updated by backward since "
         "last `step`. This could mean a bug in your model that made it only use a subset of "
         "the Parameters (Blocks) for this iteration. If you are intentionally only using a "
         "subset, call step with ignore_stale_grad=True to suppress this warning and skip "
         "updating of Parameters with stale gradient")


def _params(rng, shapes=(('b', (3,)), ('a', (2, 3))), ctx=None, **kw):
    pd = gluon.ParameterDict('net_')
    for name, shape in shapes:
        p = pd.get(name, shape=shape, **kw)
        p.initialize(init=mx.init.Constant(0), ctx=ctx)
        for arr in p.list_data():
            arr[:] = nd.array(rng.standard_normal(shape))
    return pd


def _set_grads(param, values, fresh=True):
    for g, v in zip(param.list_grad(), values if isinstance(values, list) else [values]):
        g[:] = nd.array(v)
        g._fresh_grad = fresh


def test_sgd_step_rescales_by_batch_size(rng):
    pd = _params(rng)
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.01})
    names = sorted(pd.keys())
    assert [p.name for p in trainer._params] == names  # dict order: sorted by name
    w = {n: pd[n].data().asnumpy() for n in names}
    mom = {n: [np.zeros_like(w[n])] for n in names}
    for step in range(4):
        batch = 4 + step
        for n in names:
            g = rng.standard_normal(w[n].shape).astype(np.float32)
            _set_grads(pd[n], g)
            w[n] = R.sgd_mom(w[n], g, mom[n], lr=0.1, momentum=0.9, wd=0.01,
                             rescale_grad=1.0 / batch)
        trainer.step(batch)
        assert trainer.optimizer.rescale_grad == 1.0 / batch
        for n in names:
            np.testing.assert_allclose(pd[n].data().asnumpy(), w[n], **TOL)
            assert not pd[n].grad()._fresh_grad and not pd[n].data()._fresh_grad


def test_optimizer_rescale_grad_is_the_base_scale(rng):
    pd = _params(rng, shapes=(('w', (4,)),))
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 1.0, 'rescale_grad': 2.0})
    w0 = pd['net_w'].data().asnumpy()
    _set_grads(pd['net_w'], np.ones(4))
    trainer.step(4)
    np.testing.assert_allclose(pd['net_w'].data().asnumpy(), w0 - 0.5, **TOL)


@pytest.mark.parametrize('name,kw', [
    ('adam', {'learning_rate': 0.01, 'wd': 0.01, 'clip_gradient': 0.5}),
    ('rmsprop', {'learning_rate': 0.01, 'centered': True}),
    ('adagrad', {'learning_rate': 0.1}),
    ('lamb', {'learning_rate': 0.01, 'wd': 0.01}),
])
def test_other_optimizers_through_trainer(rng, name, kw):
    pd = _params(rng, shapes=(('w', (5,)),))
    trainer = gluon.Trainer(pd, name, kw)
    w = pd['net_w'].data().asnumpy()
    states = [np.zeros_like(w) for _ in range({'adam': 2, 'rmsprop': 3, 'adagrad': 1,
                                               'lamb': 2}[name])]
    for t in range(1, 4):
        g = rng.standard_normal(5).astype(np.float32)
        _set_grads(pd['net_w'], g)
        trainer.step(2)
        common = dict(rescale_grad=0.5, clip_gradient=kw.get('clip_gradient', -1.0))
        if name == 'adam':
            w = R.adam(w, g, states, lr=R.adam_lr(0.01, 0.9, 0.999, t), wd=0.01, **common)
        elif name == 'rmsprop':
            w = R.rmspropalex(w, g, states, lr=0.01, gamma1=0.9, gamma2=0.9, **common)
        elif name == 'adagrad':
            w = R.adagrad(w, g, states, lr=0.1, **common)
        else:
            d = R.lamb_phase1(w, g, states, t=t, wd=0.01, **common)
            w = R.lamb_phase2(w, d, np.float32(np.linalg.norm(w)), np.float32(np.linalg.norm(d)),
                              lr=0.01)
        np.testing.assert_allclose(pd['net_w'].data().asnumpy(), w, **TOL)


def test_lr_mult_wd_mult_and_list_params(rng):
    pd = _params(rng, shapes=(('x', (3,)), ('y', (3,))))
    x, y = pd['net_x'], pd['net_y']
    trainer = gluon.Trainer([y, x], 'sgd', {'learning_rate': 0.5, 'wd': 0.1})
    y.lr_mult = 0.2  # changed after the Trainer was made: still takes effect
    x.wd_mult = 0.0
    x0, y0 = x.data().asnumpy(), y.data().asnumpy()
    gx, gy = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    _set_grads(x, gx)
    _set_grads(y, gy)
    trainer.step(1)
    np.testing.assert_allclose(x.data().asnumpy(), R.sgd(x0, gx, [], lr=0.5, wd=0.0), **TOL)
    np.testing.assert_allclose(y.data().asnumpy(), R.sgd(y0, gy, [], lr=0.1, wd=0.1), **TOL)
    assert trainer._optimizer.param_dict[0] is y  # list order is the optimizer's index


def test_grad_req_null_is_skipped(rng):
    pd = _params(rng, shapes=(('w', (3,)),))
    frozen = pd.get('frozen', shape=(3,), grad_req='null')
    frozen.initialize(init=mx.init.One())
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.1})
    _set_grads(pd['net_w'], np.ones(3))
    trainer.step(1)  # no stale error for the frozen parameter
    np.testing.assert_array_equal(frozen.data().asnumpy(), np.ones(3))


def test_stale_gradient_error_and_ignore(rng):
    pd = _params(rng)
    a, b = pd['net_a'], pd['net_b']
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.1})
    with pytest.raises(UserWarning) as err:
        trainer.step(1)
    assert str(err.value) == STALE % 'net_a'
    _set_grads(a, np.ones((2, 3)))
    with pytest.raises(UserWarning, match='Gradient of Parameter `net_b`'):
        trainer.step(1)
    # as in MXNet, the failed step already cleared net_a's flag (parameters are checked in
    # order); with ignore_stale_grad the fresh parameter is updated, the stale one left alone
    assert not a.grad()._fresh_grad
    a0, b0 = a.data().asnumpy(), b.data().asnumpy()
    _set_grads(a, np.ones((2, 3)))
    _set_grads(b, np.ones(3), fresh=False)
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_allclose(a.data().asnumpy(), a0 - 0.1, **TOL)
    np.testing.assert_array_equal(b.data().asnumpy(), b0)
    assert not a.grad()._fresh_grad
    # after a step, every gradient is stale again
    with pytest.raises(UserWarning, match='Gradient of Parameter `net_a`'):
        trainer.step(1)
    # freshness marked on the data array (where MXNet keeps it) counts as well
    a.data()._fresh_grad = True
    b.data()._fresh_grad = True
    trainer.step(1)
    assert not a.data()._fresh_grad and not b.data()._fresh_grad


def test_allreduce_grads_then_update_equals_step(rng):
    pd1 = _params(np.random.default_rng(5))
    pd2 = _params(np.random.default_rng(5))
    t1 = gluon.Trainer(pd1, 'adam', {'learning_rate': 0.01})
    t2 = gluon.Trainer(pd2, 'adam', {'learning_rate': 0.01})
    for _ in range(3):
        for n in pd1.keys():
            g = rng.standard_normal(pd1[n].shape)
            _set_grads(pd1[n], g)
            _set_grads(pd2[n], g)
        t1.step(3)
        t2.allreduce_grads()
        t2.update(3)
    for n in pd1.keys():
        np.testing.assert_array_equal(pd1[n].data().asnumpy(), pd2[n].data().asnumpy())


def test_learning_rate_access_and_schedule(rng):
    pd = _params(rng, shapes=(('w', (2,)),))
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.2})
    assert trainer.learning_rate == 0.2
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05 and trainer.optimizer.lr == 0.05
    assert isinstance(trainer.optimizer, mx.optimizer.SGD)

    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    pd = _params(rng, shapes=(('w', (2,)),))
    trainer = gluon.Trainer(pd, 'sgd', {'lr_scheduler': sched})
    w = pd['net_w'].data().asnumpy()
    for t in range(1, 4):
        _set_grads(pd['net_w'], np.ones(2))
        trainer.step(1)
        w = w - 0.5 ** (t - 1)
        assert trainer.learning_rate == 0.5 ** (t - 1)
    np.testing.assert_allclose(pd['net_w'].data().asnumpy(), w, **TOL)
    with pytest.raises(UserWarning, match='LRScheduler of the optimizer has already been'):
        trainer.set_learning_rate(0.1)


def test_optimizer_instance(rng):
    pd = _params(rng, shapes=(('w', (2,)),))
    optim = mx.optimizer.NAG(learning_rate=0.1, momentum=0.9)
    trainer = gluon.Trainer(pd, optim)
    assert trainer.optimizer is optim and optim.param_dict[0] is pd['net_w']
    with pytest.raises(AssertionError, match='optimizer_params must be None'):
        gluon.Trainer(pd, optim, {'learning_rate': 0.1})


def test_bad_params():
    with pytest.raises(ValueError, match='First argument must be a list or dict of Parameters, '
                                         'got <class'):
        gluon.Trainer(gluon.Parameter('x'), 'sgd')
    with pytest.raises(ValueError, match='got list of <class'):
        gluon.Trainer([1, 2], 'sgd')


@pytest.mark.parametrize('name,kw', [('adam', {'learning_rate': 0.01, 'wd': 0.01}),
                                     ('sgd', {'learning_rate': 0.1, 'momentum': 0.9}),
                                     ('rmsprop', {'learning_rate': 0.01, 'centered': True})])
def test_save_and_load_states(rng, tmp_path, name, kw):
    kw = dict(kw, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5,
                                                               base_lr=kw['learning_rate']))
    grads = [{n: rng.standard_normal(s) for n, s in (('net_a', (2, 3)), ('net_b', (3,)))}
             for _ in range(5)]
    pd = _params(rng)
    trainer = gluon.Trainer(pd, name, dict(kw))
    for k in range(3):
        for n, g in grads[k].items():
            _set_grads(pd[n], g)
        trainer.step(2)
    fname = str(tmp_path / 'trainer.states')
    trainer.save_states(fname)
    snapshot = {n: pd[n].data().asnumpy() for n in pd.keys()}
    for k in range(3, 5):
        for n, g in grads[k].items():
            _set_grads(pd[n], g)
        trainer.step(2)
    final = {n: pd[n].data().asnumpy() for n in pd.keys()}

    pd2 = _params(rng)
    for n in pd2.keys():
        pd2[n].set_data(nd.array(snapshot[n]))
    kw2 = dict(kw, lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5,
                                                                base_lr=kw['learning_rate']))
    trainer2 = gluon.Trainer(pd2, name, kw2)
    trainer2.load_states(fname)
    assert trainer2.optimizer.num_update == 3
    assert trainer2.optimizer.param_dict[0] is pd2['net_a']
    assert trainer2._updaters[0].optimizer is trainer2.optimizer
    for k in range(3, 5):
        for n, g in grads[k].items():
            _set_grads(pd2[n], g)
        trainer2.step(2)
    for n in pd2.keys():
        np.testing.assert_allclose(pd2[n].data().asnumpy(), final[n], rtol=1e-6, atol=1e-7)


def test_float16_multi_precision(rng):
    pd = _params(rng, shapes=(('w', (6,)),), dtype='float16')
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9,
                                        'multi_precision': True})
    w32 = pd['net_w'].data().asnumpy().astype(np.float32)
    mom = [np.zeros(6, np.float32)]
    for _ in range(3):
        g = rng.standard_normal(6).astype(np.float16)
        _set_grads(pd['net_w'], g)
        trainer.step(2)
        w32 = R.sgd_mom(w32, g.astype(np.float32), mom, lr=0.1, momentum=0.9, rescale_grad=0.5)
    master = trainer._updaters[0].states[0][1]
    np.testing.assert_allclose(master.asnumpy(), w32, **TOL)
    assert pd['net_w'].data().dtype == np.float16
    np.testing.assert_array_equal(pd['net_w'].data().asnumpy(), master.asnumpy().astype('f2'))


def test_shared_parameter_listed_twice_is_updated_once(rng):
    pd = _params(rng, shapes=(('w', (2,)),))
    p = pd['net_w']
    trainer = gluon.Trainer([p, p], 'sgd', {'learning_rate': 1.0})
    w0 = p.data().asnumpy()
    _set_grads(p, np.ones(2))
    trainer.step(1)
    np.testing.assert_allclose(p.data().asnumpy(), w0 - 1, **TOL)


# ---------------------------------------------------------------------------------------------
# several contexts (one process: gradients are summed as a 'device' kvstore would)


def _two_ctx_params(rng):
    ctx = [mx.cpu(0), mx.cpu(1)]
    pd = gluon.ParameterDict('net_')
    p = pd.get('w', shape=(4,))
    p.initialize(init=mx.init.Constant(0.5), ctx=ctx)
    return pd, p


@pytest.mark.parametrize('update_on_kvstore', [None, True, False])
def test_two_contexts_sum_gradients(rng, update_on_kvstore):
    pd, p = _two_ctx_params(rng)
    trainer = gluon.Trainer(pd, 'sgd', {'learning_rate': 0.1, 'momentum': 0.5},
                            update_on_kvstore=update_on_kvstore)
    w = np.full(4, 0.5, np.float32)
    mom = [np.zeros(4, np.float32)]
    for _ in range(3):
        g0, g1 = rng.standard_normal(4), rng.standard_normal(4)
        _set_grads(p, [g0, g1])
        trainer.step(8)
        total = (g0.astype(np.float32) + g1.astype(np.float32))
        w = R.sgd_mom(w, total, mom, lr=0.1, momentum=0.5, rescale_grad=1 / 8)
        for arr in p.list_data():
            np.testing.assert_allclose(arr.asnumpy(), w, **TOL)
    assert trainer._update_on_kvstore == (update_on_kvstore is not False)
    if trainer._update_on_kvstore:
        with pytest.raises(AssertionError, match='update\\(\\) when parameters are updated on '
                                                 'kvstore is not supported'):
            trainer.update(1)
        with pytest.raises(AssertionError, match='allreduce_grads\\(\\) when parameters'):
            trainer.allreduce_grads()


def test_two_contexts_without_kvstore_update_separately(rng):
    pd, p = _two_ctx_params(rng)
    trainer = gluon.Trainer(pd, 'adam', {'learning_rate': 0.1}, kvstore=None)
    g0, g1 = np.ones(4), -np.ones(4)
    _set_grads(p, [g0, g1])
    trainer.step(1)
    d0, d1 = p.list_data()
    np.testing.assert_allclose(d0.asnumpy(), 0.4, rtol=1e-5)
    np.testing.assert_allclose(d1.asnumpy(), 0.6, rtol=1e-5)
    # each context keeps its own update count (Adam's bias correction uses t = 1 on both)
    assert trainer.optimizer._all_index_update_counts[0] == {0: 1}
    assert trainer.optimizer._all_index_update_counts[1] == {0: 1}


def test_two_contexts_save_load(rng, tmp_path):
    pd, p = _two_ctx_params(rng)
    trainer = gluon.Trainer(pd, 'adam', {'learning_rate': 0.1})
    _set_grads(p, [np.ones(4), np.ones(4)])
    trainer.step(1)
    fname = str(tmp_path / 'kv.states')
    trainer.save_states(fname)
    trainer.load_states(fname)
    assert trainer.optimizer.num_update == 1 and trainer.optimizer.param_dict[0] is p


def test_async_distributed_kvstore_not_supported(rng):
    # 'dist_sync' works (tests/test_distributed.py, under mpirun); 'dist_async' needs a
    # parameter server
    pd = _params(rng, shapes=(('w', (2,)),))
    with pytest.raises(NotImplementedError, match="'dist_async'.*parameter server"):
        gluon.Trainer(pd, 'sgd', kvstore='dist_async')
