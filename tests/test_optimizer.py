"""mx.optimizer against NumPy implementations of MXNet 1.9.1's optimizer formulas over several
steps: learning-rate schedules, weight decay, gradient clipping, rescale_grad, lr_mult/wd_mult,
update counting, multi-precision, the registry, and Updater state round trips."""
import math
import pickle
import warnings

import numpy as np
import pytest

import hybridgluon as mx
import optim_ref as R

nd = mx.nd
STEPS = 5
TOL = dict(rtol=2e-5, atol=1e-6)


def _clip(kw):
    return kw.get('clip_gradient') or -1.0


def _common(kw):
    return dict(rescale_grad=kw.get('rescale_grad', 1.0), clip_gradient=_clip(kw))


# Each reference: (number of states, step(w, g, states, t, lr, wd, kw) -> new w), following the
# Python side of MXNet's optimizer (which scalars it passes and how it derives them).
def _sgd(kw):
    mom = kw.get('momentum', 0.0)

    def step(w, g, s, t, lr, wd):
        if mom > 0:
            return R.sgd_mom(w, g, s, lr=lr, wd=wd, momentum=mom, **_common(kw))
        return R.sgd(w, g, s, lr=lr, wd=wd, **_common(kw))
    return (1 if mom != 0 else 0), step


def _nag(kw):
    mom = kw.get('momentum', 0.0)

    def step(w, g, s, t, lr, wd):
        if mom > 0:
            return R.nag_mom(w, g, s, lr=lr, wd=wd, momentum=mom, **_common(kw))
        return R.sgd(w, g, s, lr=lr, wd=wd, **_common(kw))
    return (1 if mom != 0 else 0), step


def _signum(kw):
    mom = kw.get('momentum', 0.9)

    def step(w, g, s, t, lr, wd):
        if mom != 0:
            return R.signum(w, g, s, lr=lr, wd=wd, momentum=mom, wd_lh=kw.get('wd_lh', 0.0),
                            **_common(kw))
        return R.signsgd(w, g, s, lr=lr, wd=wd)
    return (1 if mom != 0 else 0), step


def _adam(kw):
    b1, b2 = kw.get('beta1', 0.9), kw.get('beta2', 0.999)

    def step(w, g, s, t, lr, wd):
        return R.adam(w, g, s, lr=R.adam_lr(lr, b1, b2, t), wd=wd, beta1=b1, beta2=b2,
                      epsilon=kw.get('epsilon', 1e-8), **_common(kw))
    return 2, step


def _adamw(kw):
    b1, b2 = kw.get('beta1', 0.9), kw.get('beta2', 0.999)

    def step(w, g, s, t, lr, wd):
        eta = R.adam_lr(lr, b1, b2, t) if kw.get('correct_bias', True) else lr
        return R.adamw(w, g, s, lr=1.0, eta=eta, wd=wd, beta1=b1, beta2=b2,
                       epsilon=kw.get('epsilon', 1e-6), rescale_grad=kw.get('rescale_grad', 1.),
                       clip_gradient=_clip(kw))
    return 2, step


def _rmsprop(kw):
    centered = kw.get('centered', False)
    common = dict(gamma1=kw.get('gamma1', 0.9), epsilon=kw.get('epsilon', 1e-8),
                  clip_weights=kw.get('clip_weights') or -1.0, **_common(kw))

    def step(w, g, s, t, lr, wd):
        if centered:
            return R.rmspropalex(w, g, s, lr=lr, wd=wd, gamma2=kw.get('gamma2', 0.9), **common)
        return R.rmsprop(w, g, s, lr=lr, wd=wd, **common)
    return (3 if centered else 1), step


def _adagrad(kw):
    def step(w, g, s, t, lr, wd):
        clip = kw.get('clip_gradient')
        return R.adagrad(w, g, s, lr=lr, wd=wd, epsilon=kw.get('eps', 1e-7),
                         rescale_grad=kw.get('rescale_grad', 1.0),
                         clip_gradient=-1.0 if clip is None else clip)
    return 1, step


def _adadelta(kw):
    def step(w, g, s, t, lr, wd):
        clip = kw.get('clip_gradient')
        g = (g * np.float32(kw.get('rescale_grad', 1.0))).astype(g.dtype)
        return R.adadelta(w, g, s, rho=kw.get('rho', 0.9), epsilon=kw.get('epsilon', 1e-5),
                          wd=wd, clip_gradient=-1.0 if clip is None else clip)
    return 2, step


def _ftrl(kw):
    def step(w, g, s, t, lr, wd):
        return R.ftrl(w, g, s, lr=lr, wd=wd, lamda1=kw.get('lamda1', 0.01),
                      beta=kw.get('beta', 1), **_common(kw))
    return 2, step


def _lamb(kw):
    def step(w, g, s, t, lr, wd):
        d = R.lamb_phase1(w, g, s, t=t, wd=wd, beta1=kw.get('beta1', 0.9),
                          beta2=kw.get('beta2', 0.999), epsilon=kw.get('epsilon', 1e-6),
                          bias_correction=kw.get('bias_correction', True), **_common(kw))
        r1 = np.float32(np.linalg.norm(w.astype(np.float64)))
        r2 = np.float32(np.linalg.norm(d.astype(np.float64)))
        bounds = {k: kw[k] for k in ('lower_bound', 'upper_bound') if kw.get(k)}
        return R.lamb_phase2(w, d, r1, r2, lr=lr, **bounds)
    return 2, step


REFS = {'sgd': _sgd, 'nag': _nag, 'signum': _signum, 'adam': _adam, 'adamw': _adamw,
        'rmsprop': _rmsprop, 'adagrad': _adagrad, 'adadelta': _adadelta, 'ftrl': _ftrl,
        'lamb': _lamb}
DEFAULT_LR = {'adam': 0.001, 'adamw': 0.001, 'rmsprop': 0.001, 'ftrl': 0.1, 'lamb': 0.001}

CONFIGS = [
    ('sgd', dict(learning_rate=0.1)),
    ('sgd', dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.4)),
    ('nag', dict(learning_rate=0.1)),
    ('nag', dict(learning_rate=0.05, momentum=0.9, wd=0.02, clip_gradient=0.5)),
    ('signum', dict(learning_rate=0.01)),
    ('signum', dict(learning_rate=0.01, momentum=0.8, wd=0.01, wd_lh=0.05, clip_gradient=0.5,
                    rescale_grad=2.0)),
    ('signum', dict(learning_rate=0.01, momentum=0.0, wd=0.1)),
    ('adam', dict()),
    ('adam', dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6, wd=0.01,
                  rescale_grad=0.5, clip_gradient=0.3)),
    ('adamw', dict()),
    ('adamw', dict(learning_rate=0.01, wd=0.1, clip_gradient=0.5, rescale_grad=2.0,
                   correct_bias=False)),
    ('rmsprop', dict()),
    ('rmsprop', dict(learning_rate=0.01, gamma1=0.8, wd=0.01, clip_gradient=0.5,
                     clip_weights=0.6)),
    ('rmsprop', dict(learning_rate=0.01, centered=True, gamma2=0.8, epsilon=1e-4, wd=0.01,
                     rescale_grad=0.5)),
    ('adagrad', dict(learning_rate=0.1)),
    ('adagrad', dict(learning_rate=0.1, eps=1e-5, wd=0.01, clip_gradient=0.2,
                     rescale_grad=0.5)),
    ('adadelta', dict()),
    ('adadelta', dict(rho=0.8, epsilon=1e-4, wd=0.01, rescale_grad=0.5, clip_gradient=0.3)),
    ('ftrl', dict()),
    ('ftrl', dict(learning_rate=0.2, lamda1=0.05, beta=0.5, wd=0.01, clip_gradient=1.0)),
    ('lamb', dict()),
    ('lamb', dict(learning_rate=0.01, beta1=0.8, wd=0.01, clip_gradient=0.5, rescale_grad=0.5,
                  lower_bound=0.1, upper_bound=10.0)),
    ('lamb', dict(learning_rate=0.01, bias_correction=False, wd=0.02)),
]


def _reference_run(name, kw, w, grads, lr_fn, lr_mult=1.0, wd_mult=1.0):
    nstates, step = REFS[name](kw)
    states = [np.zeros_like(w) for _ in range(nstates)]
    for t, g in enumerate(grads, 1):
        w = step(w, g, states, t, lr_fn(t) * lr_mult, kw.get('wd', 0.0) * wd_mult)
    return w, states


def _run(optim, w_np, grads, index=0):
    updater = mx.optimizer.get_updater(optim)
    w = nd.array(w_np)
    for g in grads:
        updater(index, nd.array(g), w)
    return w, updater


def _data(rng, shape=(4, 5), steps=STEPS):
    w = rng.standard_normal(shape).astype(np.float32)
    return w, [rng.standard_normal(shape).astype(np.float32) for _ in range(steps)]


@pytest.mark.parametrize('name,kw', CONFIGS)
def test_optimizer_matches_mxnet_formulas(rng, name, kw):
    w_np, grads = _data(rng)
    optim = mx.optimizer.create(name, **kw)
    w, updater = _run(optim, w_np, grads)
    lr = kw.get('learning_rate', DEFAULT_LR.get(name, 0.01))
    expect, states = _reference_run(name, kw, w_np, grads, lambda t: lr)
    np.testing.assert_allclose(w.asnumpy(), expect, **TOL)
    got_states = updater.states[0]
    got_states = [] if got_states is None else (
        [got_states] if isinstance(got_states, nd.NDArray) else list(got_states))
    assert len(got_states) == len(states)
    for got, want in zip(got_states, states):
        np.testing.assert_allclose(got.asnumpy(), want, **TOL)


@pytest.mark.parametrize('name', sorted(REFS))
def test_schedule_and_multipliers(rng, name):
    """lr from a FactorScheduler (evaluated at the update count), lr_mult and wd_mult from a
    Parameter in param_dict, weight decay, clipping and rescale_grad together."""
    kw = dict(wd=0.02, clip_gradient=0.8, rescale_grad=0.5)
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.05)
    param = mx.gluon.Parameter('fc_weight', shape=(4, 5), lr_mult=0.5, wd_mult=3.0)
    optim = mx.optimizer.create(name, learning_rate=0.05, lr_scheduler=sched,
                                param_dict={0: param}, **kw)
    w_np, grads = _data(rng)
    w, _ = _run(optim, w_np, grads)
    expect, _ = _reference_run(name, kw, w_np, grads,
                               lambda t: 0.05 * 0.5 ** ((t - 1) // 2), lr_mult=0.5, wd_mult=3.0)
    np.testing.assert_allclose(w.asnumpy(), expect, **TOL)
    assert optim.num_update == STEPS


def test_lr_mult_by_name_and_index_and_wd_mult_defaults():
    optim = mx.optimizer.SGD(learning_rate=0.1, wd=0.5,
                             param_idx2name={0: 'fc_weight', 1: 'fc_bias', 2: 'bn_gamma'})
    assert optim._get_wd(0) == 0.5 and optim._get_wd(1) == 0.0 and optim._get_wd(2) == 0.5
    optim.set_lr_mult({'fc_bias': 2.0, 2: 0.1})
    assert optim._get_lr(0) == 0.1
    assert optim._get_lr(1) == pytest.approx(0.2) and optim._get_lr(2) == pytest.approx(0.01)
    optim.set_wd_mult({'fc_weight': 0.0})
    assert optim._get_wd(0) == 0.0 and optim._get_wd(1) == 0.0
    # param_dict wins over the name tables
    optim.param_dict = {1: mx.gluon.Parameter('p', lr_mult=3.0, wd_mult=4.0)}
    assert optim._get_lr(1) == pytest.approx(0.3) and optim._get_wd(1) == 2.0


def test_update_counting():
    optim = mx.optimizer.Adam(begin_num_update=10)
    assert optim.num_update == 10
    updater = mx.optimizer.get_updater(optim)
    w, g = nd.ones((3,)), nd.ones((3,))
    updater(0, g, w)
    updater(0, g, w)
    updater(1, g, w)
    assert optim._index_update_count == {0: 12, 1: 11}
    assert optim.num_update == 12
    updater([0, 1], [g, g], [w, w])
    assert optim._index_update_count == {0: 13, 1: 12} and optim.num_update == 13


def test_learning_rate_property_and_set_learning_rate():
    optim = mx.optimizer.SGD()
    assert optim.learning_rate == 0.01
    optim.set_learning_rate(0.5)
    assert optim.learning_rate == 0.5 and optim.lr == 0.5
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    optim = mx.optimizer.SGD(lr_scheduler=sched)
    assert optim.lr is None and optim.learning_rate == 1.0
    optim.num_update = 3
    assert optim.learning_rate == 0.25
    with pytest.raises(UserWarning, match='LRScheduler of the optimizer has already been'):
        optim.set_learning_rate(0.1)


def test_learning_rate_overrides_scheduler_base_lr(capsys):
    sched = mx.lr_scheduler.FactorScheduler(step=10, base_lr=1.0)
    mx.optimizer.SGD(learning_rate=0.3, lr_scheduler=sched)
    assert sched.base_lr == 0.3
    assert 'has been overwritten by ``learning_rate`` in optimizer' in capsys.readouterr().out
    # Adam's default learning_rate=0.001 overrides it too, as in MXNet 1.9.1
    sched = mx.lr_scheduler.FactorScheduler(step=10, base_lr=1.0)
    mx.optimizer.Adam(lr_scheduler=sched)
    assert sched.base_lr == 0.001
    # Ftrl keeps its learning_rate out of the scheduler
    sched = mx.lr_scheduler.FactorScheduler(step=10, base_lr=1.0)
    optim = mx.optimizer.Ftrl(lr_scheduler=sched)
    assert sched.base_lr == 1.0 and optim.lr == 0.1


def test_registry_and_create():
    assert type(mx.optimizer.create('SGD')) is mx.optimizer.SGD
    assert type(mx.optimizer.Optimizer.create_optimizer('adam', learning_rate=0.1)) \
        is mx.optimizer.Adam
    for name in ['sgd', 'nag', 'adam', 'adamw', 'rmsprop', 'adagrad', 'adadelta', 'signum',
                 'ftrl', 'lamb']:
        assert name in mx.optimizer.Optimizer.opt_registry
    with pytest.raises(ValueError, match='Cannot find optimizer nosuch'):
        mx.optimizer.create('nosuch')

    @mx.optimizer.register
    class MyTestOptimizer(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight + grad

    optim = mx.optimizer.create('mytestoptimizer')
    w = nd.zeros((2,))
    mx.optimizer.get_updater(optim)(0, nd.ones((2,)), w)
    np.testing.assert_array_equal(w.asnumpy(), [1, 1])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter('always')
        mx.optimizer.register(MyTestOptimizer)
    assert any('is overriding existing optimizer' in str(r.message) for r in rec)
    del mx.optimizer.Optimizer.opt_registry['mytestoptimizer']


@pytest.mark.parametrize('name,kw', [('sgd', dict(momentum=0.9)), ('sgd', dict()),
                                     ('nag', dict(momentum=0.9)), ('adam', dict()),
                                     ('rmsprop', dict(centered=True))])
def test_multi_precision_float16(rng, name, kw):
    """float16 weights with multi_precision=True: the update runs on a float32 master copy
    (SGD/NAG through their mp_* ops, the others through the generic wrapper) and the weight
    is its float16 rounding."""
    w_np, grads = _data(rng)
    w16 = w_np.astype(np.float16)
    grads16 = [g.astype(np.float16) for g in grads]
    optim = mx.optimizer.create(name, learning_rate=0.05, multi_precision=True, wd=0.01, **kw)
    updater = mx.optimizer.get_updater(optim)
    w = nd.array(w16, dtype='float16')
    for g in grads16:
        updater(0, nd.array(g, dtype='float16'), w)
    state = updater.states[0]
    master = state[1] if name in ('sgd', 'nag') else state[0]
    assert w.dtype == np.float16 and master.dtype == np.float32
    expect, _ = _reference_run(name, dict(kw, wd=0.01), w16.astype(np.float32),
                               [g.astype(np.float32) for g in grads16], lambda t: 0.05)
    np.testing.assert_allclose(master.asnumpy(), expect, **TOL)
    np.testing.assert_array_equal(w.asnumpy(), master.asnumpy().astype(np.float16))


def test_float16_without_multi_precision_warns():
    optim = mx.optimizer.Adam()
    with pytest.warns(UserWarning, match='Accumulating with float16 in optimizer'):
        optim.create_state_multi_precision(0, nd.ones((2,), dtype='float16'))


def test_adadelta_scales_the_gradient_buffer_in_place():
    optim = mx.optimizer.AdaDelta(rescale_grad=0.5)
    g = nd.ones((3,))
    mx.optimizer.get_updater(optim)(0, g, nd.zeros((3,)))
    np.testing.assert_array_equal(g.asnumpy(), [0.5, 0.5, 0.5])


def test_adamw_skips_non_finite_rescale(rng):
    optim = mx.optimizer.AdamW(learning_rate=0.1, wd=0.1)
    w_np, grads = _data(rng, steps=1)
    w = nd.array(w_np)
    updater = mx.optimizer.get_updater(optim)
    optim.rescale_grad = nd.array([float('inf')])
    updater(0, nd.array(grads[0]), w)
    np.testing.assert_array_equal(w.asnumpy(), w_np)
    optim.rescale_grad = nd.array([1.0])
    updater(0, nd.array(grads[0]), w)
    assert not np.array_equal(w.asnumpy(), w_np)


@pytest.mark.parametrize('dump_optimizer', [False, True])
def test_updater_states_round_trip(rng, dump_optimizer):
    w_np, grads = _data(rng, steps=6)
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.7, base_lr=0.01)
    optim = mx.optimizer.Adam(learning_rate=0.01, lr_scheduler=sched, wd=0.01)
    w_full, _ = _run(optim, w_np, grads)

    optim = mx.optimizer.Adam(learning_rate=0.01, wd=0.01,
                              lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.7,
                                                                           base_lr=0.01))
    w, updater = _run(optim, w_np, grads[:3])
    blob = updater.get_states(dump_optimizer=dump_optimizer)
    loaded = pickle.loads(blob)
    if dump_optimizer:
        assert isinstance(loaded, tuple) and isinstance(loaded[1], mx.optimizer.Adam)
        assert loaded[1].param_dict == {}
    # a fresh updater continues where the first stopped
    fresh_opt = mx.optimizer.Adam(learning_rate=0.01, wd=0.01,
                                  lr_scheduler=mx.lr_scheduler.FactorScheduler(
                                      step=2, factor=0.7, base_lr=0.01))
    if not dump_optimizer:  # without the optimizer, its counts are not restored
        fresh_opt._index_update_count[0] = 3
        fresh_opt.num_update = 3
    updater2 = mx.optimizer.get_updater(fresh_opt)
    updater2.set_states(blob)
    assert updater2.states_synced == {0: False}
    if dump_optimizer:
        assert updater2.optimizer is not fresh_opt and updater2.optimizer.num_update == 3
    for g in grads[3:]:
        updater2(0, nd.array(g), w)
    np.testing.assert_allclose(w.asnumpy(), w_full.asnumpy(), rtol=1e-6, atol=1e-7)


def test_optimizer_pickles_without_param_dict():
    optim = mx.optimizer.SGD(param_dict={0: mx.gluon.Parameter('x')}, momentum=0.5)
    clone = pickle.loads(pickle.dumps(optim))
    assert clone.param_dict == {} and clone.momentum == 0.5 and optim.param_dict


def test_adam_bias_correction_first_step():
    """Adam's first step moves each weight by about lr (m/sqrt(v) = sign(g))."""
    optim = mx.optimizer.Adam(learning_rate=0.1)
    w = nd.zeros((3,))
    mx.optimizer.get_updater(optim)(0, nd.array([1.0, -2.0, 3.0]), w)
    np.testing.assert_allclose(w.asnumpy(), [-0.1, 0.1, -0.1], rtol=1e-5)
    assert math.isclose(R.adam_lr(0.1, 0.9, 0.999, 1), 0.1 * math.sqrt(0.001) / 0.1)
