"""Optimizer update ops against NumPy references of MXNet 1.9.1's kernels (tests/optim_ref.py):
several steps with out=weight and the states updated in place, float32 and float64 weights,
float16 weights with a float32 master copy for the mp_* variants, the multi-threaded path on a
large tensor, AdamW's skipped steps, LAMB's two phases, and shape/dtype errors."""
import numpy as np
import pytest

import hybridgluon as mx
import optim_ref as R

nd = mx.nd

OPS_COVERED = ['sgd_update', 'sgd_mom_update', 'mp_sgd_update', 'mp_sgd_mom_update',
               'nag_mom_update', 'mp_nag_mom_update', 'adam_update', '_adamw_update',
               'rmsprop_update', 'rmspropalex_update', 'signsgd_update', 'signum_update',
               'ftrl_update', 'lamb_update_phase1', 'lamb_update_phase2', '_adagrad_update',
               '_adadelta_update', '_mp_adamw_update', '_multi_adamw_update',
               '_multi_mp_adamw_update']

SHAPES = [(1,), (7,), (3, 4), (2, 3, 5)]
TOL = {'float32': dict(rtol=2e-5, atol=1e-6), 'float64': dict(rtol=1e-12, atol=1e-14)}
STEPS = 4

# op name -> (number of states, reference, attribute sets)
SPECS = {
    'sgd_update': (0, R.sgd, [dict(lr=0.1),
                              dict(lr=0.05, wd=0.01, rescale_grad=0.5, clip_gradient=0.3)]),
    'sgd_mom_update': (1, R.sgd_mom, [dict(lr=0.1, momentum=0.9),
                                      dict(lr=0.05, momentum=0.8, wd=0.02, rescale_grad=2.0,
                                           clip_gradient=0.5)]),
    'nag_mom_update': (1, R.nag_mom, [dict(lr=0.1, momentum=0.9),
                                      dict(lr=0.05, momentum=0.7, wd=0.03, rescale_grad=0.25,
                                           clip_gradient=0.2)]),
    'adam_update': (2, R.adam, [dict(lr=0.01),
                                dict(lr=0.02, beta1=0.8, beta2=0.99, epsilon=1e-6, wd=0.01,
                                     rescale_grad=0.5, clip_gradient=0.4)]),
    'rmsprop_update': (1, R.rmsprop, [dict(lr=0.01),
                                      dict(lr=0.02, gamma1=0.9, epsilon=1e-6, wd=0.01,
                                           rescale_grad=2.0, clip_gradient=1.0,
                                           clip_weights=0.5)]),
    'rmspropalex_update': (3, R.rmspropalex, [dict(lr=0.01),
                                              dict(lr=0.02, gamma1=0.9, gamma2=0.8, epsilon=1e-4,
                                                   wd=0.01, rescale_grad=0.5, clip_gradient=0.8,
                                                   clip_weights=0.6)]),
    'signsgd_update': (0, R.signsgd, [dict(lr=0.1), dict(lr=0.05, wd=0.1, clip_gradient=0.1)]),
    'signum_update': (1, R.signum, [dict(lr=0.1),
                                    dict(lr=0.05, momentum=0.9, wd=0.01, rescale_grad=0.5,
                                         clip_gradient=0.3, wd_lh=0.02)]),
    'ftrl_update': (2, R.ftrl, [dict(lr=0.1),
                                dict(lr=0.2, lamda1=0.05, beta=0.5, wd=0.01, rescale_grad=2.0,
                                     clip_gradient=1.5)]),
    '_adagrad_update': (1, R.adagrad, [dict(lr=0.1),
                                       dict(lr=0.05, epsilon=1e-5, wd=0.01, rescale_grad=0.5,
                                            clip_gradient=0.3)]),
    '_adadelta_update': (2, R.adadelta, [dict(),
                                         dict(rho=0.8, epsilon=1e-4, wd=0.01, rescale_grad=2.0,
                                              clip_gradient=1.0)]),
}

MP_SPECS = {
    'mp_sgd_update': (0, R.sgd, SPECS['sgd_update'][2]),
    'mp_sgd_mom_update': (1, R.sgd_mom, SPECS['sgd_mom_update'][2]),
    'mp_nag_mom_update': (1, R.nag_mom, SPECS['nag_mom_update'][2]),
}


def _run_steps(rng, name, nstates, ref, attrs, shape, dtype, steps=STEPS):
    op = getattr(nd, name)
    w_np = rng.standard_normal(shape).astype(dtype)
    states_np = [np.zeros(shape, dtype) for _ in range(nstates)]
    w = nd.array(w_np, dtype=dtype)
    states = [nd.array(s, dtype=dtype) for s in states_np]
    for _ in range(steps):
        g_np = rng.standard_normal(shape).astype(dtype)
        out = op(w, nd.array(g_np, dtype=dtype), *states, out=w, **attrs)
        assert out is w
        w_np = ref(w_np, g_np, states_np, **attrs)
        np.testing.assert_allclose(w.asnumpy(), w_np, **TOL[dtype])
        for s, s_np in zip(states, states_np):
            np.testing.assert_allclose(s.asnumpy(), s_np, **TOL[dtype])


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('shape', SHAPES)
@pytest.mark.parametrize('name', sorted(SPECS))
def test_update_matches_reference(rng, name, shape, dtype):
    nstates, ref, attr_sets = SPECS[name]
    for attrs in attr_sets:
        _run_steps(rng, name, nstates, ref, attrs, shape, dtype)


@pytest.mark.parametrize('name', ['adam_update', 'sgd_mom_update', 'ftrl_update'])
def test_large_tensor_multithreaded(rng, name):
    nstates, ref, attr_sets = SPECS[name]
    _run_steps(rng, name, nstates, ref, attr_sets[-1], (300, 1001), 'float32', steps=2)


@pytest.mark.parametrize('name', sorted(SPECS))
def test_update_not_in_place(rng, name):
    """Without out=, the op returns a new weight and leaves the weight unchanged."""
    nstates, ref, attr_sets = SPECS[name]
    attrs = attr_sets[-1]
    w_np = rng.standard_normal((3, 4)).astype('float32')
    g_np = rng.standard_normal((3, 4)).astype('float32')
    states_np = [np.zeros((3, 4), 'float32') for _ in range(nstates)]
    w = nd.array(w_np)
    states = [nd.array(s) for s in states_np]
    out = getattr(nd, name)(w, nd.array(g_np), *states, **attrs)
    if name == 'nag_mom_update':  # its momentum reads the updated weight only when in place
        attrs = dict(attrs, wd=0.0)
        states = [nd.array(s) for s in states_np]
        out = getattr(nd, name)(w, nd.array(g_np), *states, **attrs)
    expect = ref(w_np, g_np, states_np, **attrs)
    np.testing.assert_allclose(out.asnumpy(), expect, **TOL['float32'])
    np.testing.assert_array_equal(w.asnumpy(), w_np)
    for s, s_np in zip(states, states_np):
        np.testing.assert_allclose(s.asnumpy(), s_np, **TOL['float32'])


@pytest.mark.parametrize('name', sorted(SPECS))
def test_float16_weights(rng, name):
    """float16 weights and states compute in float: one step against a float32 reference."""
    nstates, ref, attr_sets = SPECS[name]
    attrs = attr_sets[-1]
    w_np = rng.standard_normal((4, 5)).astype('float16')
    g_np = rng.standard_normal((4, 5)).astype('float16')
    w = nd.array(w_np, dtype='float16')
    states = [nd.zeros((4, 5), dtype='float16') for _ in range(nstates)]
    getattr(nd, name)(w, nd.array(g_np, dtype='float16'), *states, out=w, **attrs)
    states_np = [np.zeros((4, 5), 'float32') for _ in range(nstates)]
    expect = ref(w_np.astype('float32'), g_np.astype('float32'), states_np, **attrs)
    assert w.dtype == np.float16
    np.testing.assert_allclose(w.asnumpy().astype('float32'), expect, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize('wdtype', ['float16', 'float32'])
@pytest.mark.parametrize('name', sorted(MP_SPECS))
def test_mp_update_master_copy(rng, name, wdtype):
    nstates, ref, attr_sets = MP_SPECS[name]
    op = getattr(nd, name)
    shape = (3, 7)
    for attrs in attr_sets:
        w_np = rng.standard_normal(shape).astype(wdtype)
        states_np = [np.zeros(shape, 'float32') for _ in range(nstates)] + [w_np.astype('float32')]
        w = nd.array(w_np, dtype=wdtype)
        states = [nd.array(s, dtype='float32') for s in states_np]
        mp_ref = R.mp(ref)
        for _ in range(STEPS):
            g_np = rng.standard_normal(shape).astype(wdtype)
            op(w, nd.array(g_np, dtype=wdtype), *states, out=w, **attrs)
            w_np = mp_ref(w_np, g_np, states_np, **attrs)
            for s, s_np in zip(states, states_np):  # float32 master copy and states
                assert s.dtype == np.float32
                np.testing.assert_allclose(s.asnumpy(), s_np, rtol=2e-5, atol=1e-6)
            # the weight is the master copy rounded to its dtype (allow one rounding step)
            assert w.dtype == np.dtype(wdtype)
            np.testing.assert_allclose(w.asnumpy(), w_np, rtol=1e-3 if wdtype == 'float16'
                                       else 2e-5, atol=1e-6)
            np.testing.assert_allclose(w.asnumpy().astype('float32'),
                                       states[-1].asnumpy().astype(wdtype).astype('float32'))


# ---------------------------------------------------------------------------------------------
# AdamW: rescale_grad is an input array; non-finite or zero skips the step


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_adamw_update(rng, dtype):
    attrs = dict(lr=0.5, eta=0.02, beta1=0.85, beta2=0.99, epsilon=1e-6, wd=0.1,
                 clip_gradient=0.7)
    shape = (5, 6)
    w_np = rng.standard_normal(shape).astype(dtype)
    s_np = [np.zeros(shape, dtype), np.zeros(shape, dtype)]
    w = nd.array(w_np, dtype=dtype)
    mean, var = nd.zeros(shape, dtype=dtype), nd.zeros(shape, dtype=dtype)
    for scale in [0.5, 2.0, float('nan'), 1.0, 0.0, float('inf'), 0.25]:
        g_np = rng.standard_normal(shape).astype(dtype)
        nd._adamw_update(w, nd.array(g_np, dtype=dtype), mean, var, nd.array([scale]), out=w,
                         **attrs)
        w_np = R.adamw(w_np, g_np, s_np, rescale_grad=scale, **attrs)
        np.testing.assert_allclose(w.asnumpy(), w_np, **TOL[dtype])
        np.testing.assert_allclose(mean.asnumpy(), s_np[0], **TOL[dtype])
        np.testing.assert_allclose(var.asnumpy(), s_np[1], **TOL[dtype])


def test_adamw_skip_without_out_copies_weight(rng):
    w = nd.array(rng.standard_normal((3,)))
    out = nd._adamw_update(w, nd.ones((3,)), nd.zeros((3,)), nd.zeros((3,)),
                           nd.array([float('nan')]), lr=0.1, eta=1.0)
    np.testing.assert_array_equal(out.asnumpy(), w.asnumpy())


def test_adamw_alias_and_rescale_checks():
    w = nd.ones((2, 2))
    nd._contrib_adamw_update(w, w, nd.zeros((2, 2)), nd.zeros((2, 2)), nd.array([1.0]),
                             lr=0.1, eta=1.0, out=w)
    with pytest.raises(mx.MXNetError, match='rescale_grad must be float32'):
        nd._adamw_update(w, w, nd.zeros((2, 2)), nd.zeros((2, 2)),
                         nd.array([1.0], dtype='float64'), lr=0.1, eta=1.0)
    with pytest.raises(mx.MXNetError, match='eta'):
        nd._adamw_update(w, w, nd.zeros((2, 2)), nd.zeros((2, 2)), nd.array([1.0]), lr=0.1)


# ---------------------------------------------------------------------------------------------
# LAMB


@pytest.mark.parametrize('dtype', ['float32', 'float64'])
@pytest.mark.parametrize('attrs', [dict(wd=0.0), dict(wd=0.01, beta1=0.8, beta2=0.99,
                                                      epsilon=1e-5, rescale_grad=0.5,
                                                      clip_gradient=0.4),
                                   dict(wd=0.02, bias_correction=False)])
def test_lamb_phases(rng, dtype, attrs):
    shape = (4, 6)
    w_np = rng.standard_normal(shape).astype(dtype)
    s_np = [np.zeros(shape, dtype), np.zeros(shape, dtype)]
    w = nd.array(w_np, dtype=dtype)
    mean, var = nd.zeros(shape, dtype=dtype), nd.zeros(shape, dtype=dtype)
    for t in range(1, STEPS + 1):
        g_np = rng.standard_normal(shape).astype(dtype)
        g = nd.lamb_update_phase1(w, nd.array(g_np, dtype=dtype), mean, var, t=t, **attrs)
        g_ref = R.lamb_phase1(w_np, g_np, s_np, t=t, **attrs)
        np.testing.assert_allclose(g.asnumpy(), g_ref, **TOL[dtype])
        np.testing.assert_allclose(mean.asnumpy(), s_np[0], **TOL[dtype])
        np.testing.assert_allclose(var.asnumpy(), s_np[1], **TOL[dtype])
        r1, r2 = w.norm(), g.norm()
        assert r1.shape == (1,)
        nd.lamb_update_phase2(w, g, r1, r2, lr=0.01, out=w)
        w_np = R.lamb_phase2(w_np, g.asnumpy(), r1.asscalar(), r2.asscalar(), lr=0.01)
        np.testing.assert_allclose(w.asnumpy(), w_np, **TOL[dtype])


def test_lamb_phase2_bounds_and_zero_norms(rng):
    w_np = rng.standard_normal((5,)).astype('float32')
    g_np = rng.standard_normal((5,)).astype('float32')
    w, g = nd.array(w_np), nd.array(g_np)
    cases = [(3.0, 2.0, {}), (3.0, 2.0, dict(lower_bound=4.0)),
             (3.0, 2.0, dict(upper_bound=1.0)), (0.0, 2.0, {}), (3.0, 0.0, {}),
             (0.0, 2.0, dict(lower_bound=0.5))]
    for r1, r2, kw in cases:
        out = nd.lamb_update_phase2(w, g, nd.array([r1]), nd.array([r2]), lr=0.1, **kw)
        expect = R.lamb_phase2(w_np, g_np, np.float32(r1), np.float32(r2), lr=0.1, **kw)
        np.testing.assert_allclose(out.asnumpy(), expect, rtol=1e-6, atol=1e-7)


def test_lamb_errors():
    w = nd.ones((3, 2))
    with pytest.raises(mx.MXNetError, match='r1 must be a norm of shape'):
        nd.lamb_update_phase2(w, w, nd.ones((2,)), nd.ones((1,)), lr=0.1)
    with pytest.raises(mx.MXNetError, match="'t'|t"):
        nd.lamb_update_phase1(w, w, nd.zeros((3, 2)), nd.zeros((3, 2)), wd=0.0)


# ---------------------------------------------------------------------------------------------
# Errors, symbols, attributes


def test_shape_and_dtype_errors():
    w = nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match=r'sgd_mom_update: mom shape \[3\] does not match '
                                             r'weight shape \[2,3\]'):
        nd.sgd_mom_update(w, w, nd.zeros((3,)), lr=0.1)
    with pytest.raises(mx.MXNetError, match='adam_update: grad shape'):
        nd.adam_update(w, nd.ones((3, 2)), nd.zeros((2, 3)), nd.zeros((2, 3)), lr=0.1)
    with pytest.raises(mx.MXNetError, match='var must be float32'):
        nd.adam_update(w, w, nd.zeros((2, 3)), nd.zeros((2, 3), dtype='float64'), lr=0.1)
    with pytest.raises(mx.MXNetError, match='weight must be float16, float32 or float64'):
        wi = nd.ones((2,), dtype='int32')
        nd.sgd_update(wi, wi, lr=0.1)
    w16 = nd.ones((2, 3), dtype='float16')
    with pytest.raises(mx.MXNetError, match='weight32 must be float32'):
        nd.mp_sgd_update(w16, w16, w16, lr=0.1)
    with pytest.raises(mx.MXNetError, match='grad must be float16'):
        nd.mp_sgd_update(w16, nd.ones((2, 3)), nd.ones((2, 3)), lr=0.1)
    with pytest.raises(mx.MXNetError, match='lr'):
        nd.sgd_update(w, w)
    with pytest.raises(mx.MXNetError, match='out'):
        nd.sgd_update(w, w, lr=0.1, out=nd.ones((3, 2)))


def test_state_inputs_are_auxiliary_in_symbols():
    s = mx.sym.var
    cases = {
        'sgd_update': [], 'sgd_mom_update': ['mom'], 'mp_sgd_update': ['weight32'],
        'mp_sgd_mom_update': ['mom', 'weight32'], 'adam_update': ['mean', 'var'],
        'rmspropalex_update': ['n', 'g', 'delta'], 'ftrl_update': ['z', 'n'],
        'lamb_update_phase1': ['mean', 'var'], '_adadelta_update': ['acc_g', 'acc_delta'],
        '_adamw_update': ['mean', 'var'], 'lamb_update_phase2': [],
    }
    for name, aux in cases.items():
        info = mx._core.op_info(name)
        inputs = [s(n) for n in info['inputs']]
        kw = {'lamb_update_phase1': dict(t=1, wd=0.0), '_adadelta_update': {},
              '_adamw_update': dict(lr=1.0, eta=0.1)}.get(name, dict(lr=0.1))
        out = getattr(mx.sym, name)(*inputs, **kw)
        assert out.list_auxiliary_states() == aux, name
        assert out.list_arguments() == [n for n in info['inputs'] if n not in aux], name


def test_symbol_shape_and_type_inference():
    s = mx.sym.var
    out = mx.sym.mp_sgd_mom_update(s('w'), s('g'), s('m'), s('w32'), lr=0.1, momentum=0.9)
    arg, outs, aux = out.infer_shape(w=(4, 5))
    assert arg == [(4, 5), (4, 5)] and outs == [(4, 5)] and aux == [(4, 5), (4, 5)]
    arg, outs, aux = out.infer_type(w='float16', g='float16')
    assert outs == [np.float16] and aux == [np.float32, np.float32]
    out = mx.sym._adamw_update(s('w'), s('g'), s('m'), s('v'), s('scale'), lr=1.0, eta=0.1)
    arg, outs, aux = out.infer_shape(w=(3,))
    assert arg == [(3,), (3,), (1,)]


def test_attributes_as_mxnet_writes_them():
    info = {a['name']: a for a in mx._core.op_info('adam_update')['attrs']}
    assert list(info) == ['lr', 'beta1', 'beta2', 'epsilon', 'wd', 'rescale_grad',
                          'clip_gradient', 'lazy_update']
    assert info['lr']['required'] and info['clip_gradient']['default'] == '-1'
    assert info['lazy_update']['default'] == 'True'
    names = lambda op: [a['name'] for a in mx._core.op_info(op)['attrs']]  # noqa: E731
    assert names('sgd_mom_update') == ['lr', 'momentum', 'wd', 'rescale_grad', 'clip_gradient',
                                       'lazy_update']
    assert names('lamb_update_phase1') == ['beta1', 'beta2', 'epsilon', 't', 'bias_correction',
                                           'wd', 'rescale_grad', 'clip_gradient']
    assert names('_adamw_update') == ['lr', 'beta1', 'beta2', 'epsilon', 'wd', 'eta',
                                      'clip_gradient']
    assert mx._core.op_info('_adamw_update')['inputs'] == ['weight', 'grad', 'mean', 'var',
                                                           'rescale_grad']
    for name in OPS_COVERED:
        assert not mx._core.op_info(name)['has_grad'], name


def test_float64_params_are_float32_rounded():
    """MXNet's op parameters are float32: lr=0.1 acts as float32(0.1) on float64 weights."""
    w = nd.array([1.0], dtype='float64')
    nd.sgd_update(w, nd.array([1.0], dtype='float64'), lr=0.1, out=w)
    assert w.asnumpy()[0] == 1.0 - float(np.float32(0.1))


# ---------------------------------------------------------------------------------------------
# AdamW's mixed-precision and multi-weight forms, and nd.contrib's front ends


def _mp_adamw_ref(w32, g, s, **attrs):
    """mp_adamw: the float32 master copy updated from the float16 gradient read as float32."""
    return R.adamw(w32, g.astype(np.float32), s, **attrs)


SCALES = [0.5, 2.0, float('nan'), 1.0, 0.0, float('inf'), 0.25]


@pytest.mark.parametrize('wdtype', ['float16', 'float32', 'float64'])
@pytest.mark.parametrize('shape', SHAPES + [(0,)])
def test_mp_adamw_update(rng, shape, wdtype):
    attrs = dict(lr=0.5, eta=0.02, beta1=0.85, beta2=0.99, epsilon=1e-6, wd=0.1,
                 clip_gradient=0.7)
    w32_np = rng.standard_normal(shape).astype(np.float32)
    s_np = [np.zeros(shape, np.float32), np.zeros(shape, np.float32)]
    w = nd.array(w32_np, dtype=wdtype)
    w32 = nd.array(w32_np)
    mean, var = nd.zeros(shape), nd.zeros(shape)
    for scale in SCALES:
        g_np = rng.standard_normal(shape).astype(wdtype)
        nd._mp_adamw_update(w, nd.array(g_np, dtype=wdtype), mean, var, w32,
                            nd.array([scale]), out=w, **attrs)
        w32_np = _mp_adamw_ref(w32_np, g_np, s_np, rescale_grad=scale, **attrs)
        np.testing.assert_allclose(w32.asnumpy(), w32_np, **TOL['float32'])
        np.testing.assert_allclose(mean.asnumpy(), s_np[0], **TOL['float32'])
        np.testing.assert_allclose(var.asnumpy(), s_np[1], **TOL['float32'])
        assert w.dtype == np.dtype(wdtype)
        np.testing.assert_array_equal(w.asnumpy(), w32_np.astype(wdtype))


def _multi_case(rng, dtype, n, mp):
    shapes = [(1,), (3, 4), (2, 3, 5), (7,), (4, 1), (2, 2)][:n]
    w_np = [rng.standard_normal(sh).astype(np.float32 if mp else dtype) for sh in shapes]
    s_np = [[np.zeros(sh, w.dtype), np.zeros(sh, w.dtype)] for sh, w in zip(shapes, w_np)]
    lrs = list(rng.uniform(0.1, 0.9, n))
    wds = list(rng.uniform(0.0, 0.1, n))
    etas = list(rng.uniform(0.5, 1.0, n))
    return shapes, w_np, s_np, lrs, wds, etas


@pytest.mark.parametrize('n', [1, 2, 6])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_multi_adamw_update(rng, n, dtype):
    shapes, w_np, s_np, lrs, wds, etas = _multi_case(rng, dtype, n, mp=False)
    w = [nd.array(x, dtype=dtype) for x in w_np]
    mean = [nd.zeros(sh, dtype=dtype) for sh in shapes]
    var = [nd.zeros(sh, dtype=dtype) for sh in shapes]
    for scale in SCALES:
        g_np = [rng.standard_normal(sh).astype(dtype) for sh in shapes]
        mx.nd.contrib.multi_adamw_update(w, [nd.array(g, dtype=dtype) for g in g_np], mean, var,
                                         scale, out=w, lrs=lrs, wds=wds, etas=etas,
                                         beta1=0.8, epsilon=1e-6, clip_gradient=0.9)
        for k in range(n):
            # the op reads lrs/wds/etas as float32, as MXNet's Tuple<float>
            w_np[k] = R.adamw(w_np[k], g_np[k], s_np[k], lr=np.float32(lrs[k]),
                              eta=np.float32(etas[k]), wd=np.float32(wds[k]),
                              rescale_grad=scale, beta1=0.8, epsilon=1e-6, clip_gradient=0.9)
            tol = TOL['float32'] if dtype == 'float32' else dict(rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(w[k].asnumpy(), w_np[k], **tol)
            np.testing.assert_allclose(mean[k].asnumpy(), s_np[k][0], **tol)
            np.testing.assert_allclose(var[k].asnumpy(), s_np[k][1], **tol)


@pytest.mark.parametrize('n', [1, 3, 6])
def test_multi_mp_adamw_update(rng, n):
    shapes, w32_np, s_np, lrs, wds, etas = _multi_case(rng, 'float32', n, mp=True)
    w = [nd.array(x, dtype='float16') for x in w32_np]
    w32 = [nd.array(x) for x in w32_np]
    mean, var = [nd.zeros(sh) for sh in shapes], [nd.zeros(sh) for sh in shapes]
    for scale in SCALES:
        g_np = [rng.standard_normal(sh).astype(np.float16) for sh in shapes]
        res = mx.nd.contrib.multi_mp_adamw_update(
            w, [nd.array(g, dtype='float16') for g in g_np], mean, var, w32, nd.array([scale]),
            lrs=lrs, wds=wds, etas=etas, clip_gradient=0.5)
        res = res if isinstance(res, list) else [res]
        for k in range(n):
            w32_np[k] = _mp_adamw_ref(w32_np[k], g_np[k], s_np[k], lr=np.float32(lrs[k]),
                                      eta=np.float32(etas[k]), wd=np.float32(wds[k]),
                                      rescale_grad=scale, clip_gradient=0.5)
            np.testing.assert_allclose(w32[k].asnumpy(), w32_np[k], **TOL['float32'])
            np.testing.assert_allclose(var[k].asnumpy(), s_np[k][1], **TOL['float32'])
            assert res[k].dtype == np.float16
            np.testing.assert_array_equal(res[k].asnumpy(), w32_np[k].astype(np.float16))
            w[k][:] = res[k]


def test_contrib_adamw_front_ends_take_a_number(rng):
    w_np = rng.standard_normal((4,)).astype(np.float32)
    g_np = rng.standard_normal((4,)).astype(np.float32)
    w, mean, var = nd.array(w_np), nd.zeros((4,)), nd.zeros((4,))
    mx.nd.contrib.adamw_update(w, nd.array(g_np), mean, var, 2.0, lr=0.1, eta=0.5, out=w)
    s = [np.zeros(4, np.float32), np.zeros(4, np.float32)]
    np.testing.assert_allclose(w.asnumpy(), R.adamw(w_np, g_np, s, lr=0.1, eta=0.5,
                                                    rescale_grad=2.0), **TOL['float32'])
    w16, w32 = nd.array(w_np, dtype='float16'), nd.array(w_np)
    out = mx.nd.contrib.mp_adamw_update(w16, nd.array(g_np, dtype='float16'), nd.zeros((4,)),
                                        nd.zeros((4,)), w32, float('nan'), lr=0.1, eta=0.5)
    np.testing.assert_array_equal(out.asnumpy(), w16.asnumpy())  # skipped step
    np.testing.assert_array_equal(w32.asnumpy(), w_np)


def test_multi_adamw_errors():
    w, z = nd.ones((2,)), nd.zeros((2,))
    args = [w, w, z, z, w, w, z, z, nd.array([1.0])]
    with pytest.raises(mx.MXNetError, match='lrs has 1 values for num_weights=2'):
        nd._multi_adamw_update(*args, num_weights=2, lrs='(0.1)', wds='(0, 0)',
                               etas='(1, 1)')
    with pytest.raises(mx.MXNetError, match=r"attribute wds='\(0, x\)' is not a tuple"):
        nd._multi_adamw_update(*args, num_weights=2, lrs='(0.1, 0.2)', wds='(0, x)',
                               etas='(1, 1)')
    with pytest.raises(mx.MXNetError, match=r'expects 9 input'):
        nd._multi_adamw_update(*args[:5], num_weights=2, lrs='(0.1, 0.2)', wds='(0, 0)',
                               etas='(1, 1)')
    with pytest.raises(mx.MXNetError, match='rescale_grad must be float32'):
        nd._multi_adamw_update(w, w, z, z, nd.array([1.0], dtype='float64'), lrs='(0.1,)',
                               wds='(0,)', etas='(1,)')
    with pytest.raises(mx.MXNetError, match='must be float32 .a float32 master copy'):
        nd._multi_mp_adamw_update(w, w, z, z, nd.ones((2,), dtype='float16'), nd.array([1.0]),
                                  lrs='(0.1,)', wds='(0,)', etas='(1,)')
    with pytest.raises(mx.MXNetError, match='lrs'):
        mx.nd.contrib.multi_adamw_update([w], [w], [z], [z], 1.0, lrs=[0.1, 0.2], wds=[0],
                                         etas=[1])
