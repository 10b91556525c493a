"""Gradient rules of the element-wise ops (csrc/ops/elemwise_unary.c, elemwise_binary.c): every
rule against float64 finite differences, MXNet 1.9.1's conventions at kinks and ties, the ops
without a gradient, dtype preservation, and the internal ops the rules emit (_digamma,
_backward_<act>) with their own forward tests and second-order rules."""
import math
import zlib

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from gradcheck import check_grad, symbolic_grad

SHAPES = [(1,), (1, 1), (5,), (3, 4), (2, 3, 2)]
BCAST_PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((2, 1, 4), (3, 1)),
               ((3, 1), (2, 1, 4)), ((1,), (2, 3)), ((2, 3), (1,)), ((4, 1), (1, 5)),
               ((1,), (1,))]
ACT_TYPES = ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign']


def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, size=shape)


def _nonzero(lo, hi):
    """Magnitudes in (lo, hi), random signs: away from a kink or pole at 0."""
    return lambda rng, shape: rng.uniform(lo, hi, size=shape) * rng.choice([-1, 1], size=shape)


def _gamma_domain(rng, shape):
    """Positive values and negative ones between the poles."""
    x = rng.uniform(0.3, 4, size=shape)
    neg = rng.random(shape) < 0.3
    return np.where(neg, -rng.integers(0, 3, size=shape) - rng.uniform(0.2, 0.8, size=shape), x)


# op -> input generator for finite differences (domains away from kinks and poles)
UNARY = {
    'relu': _nonzero(0.1, 2), 'sigmoid': _uniform(-3, 3), 'tanh': _uniform(-2, 2),
    'softsign': _nonzero(0.1, 3), 'exp': _uniform(-2, 2), 'expm1': _uniform(-2, 2),
    'log': _uniform(0.3, 3), 'log1p': _uniform(-0.5, 3), 'log2': _uniform(0.3, 3),
    'log10': _uniform(0.3, 3), 'sqrt': _uniform(0.3, 3), 'rsqrt': _uniform(0.3, 3),
    'cbrt': _nonzero(0.3, 3), 'rcbrt': _nonzero(0.3, 3), 'square': _uniform(-2, 2),
    'abs': _nonzero(0.1, 2), 'negative': _uniform(-2, 2), 'reciprocal': _nonzero(0.3, 3),
    'sin': _uniform(-3, 3), 'cos': _uniform(-3, 3), 'tan': _uniform(-1.2, 1.2),
    'arcsin': _uniform(-0.9, 0.9), 'arccos': _uniform(-0.9, 0.9), 'arctan': _uniform(-3, 3),
    'sinh': _uniform(-2, 2), 'cosh': _uniform(-2, 2), 'arcsinh': _uniform(-3, 3),
    'arccosh': _uniform(1.2, 3), 'arctanh': _uniform(-0.9, 0.9), 'degrees': _uniform(-3, 3),
    'radians': _uniform(-90, 90), 'erf': _uniform(-2, 2), 'gamma': _gamma_domain,
    'gammaln': _gamma_domain, '_copy': _uniform(-2, 2),
}


def _mod_pair(rng, sa, sb):
    """|lhs| in (k + 0.2, k + 0.8) for k < 4 and |rhs| near 1: lhs / rhs stays away from the
    integers (the jumps of mod) for every broadcast pair."""
    k = rng.integers(0, 4, size=sa)
    a = (k + rng.uniform(0.2, 0.8, size=sa)) * rng.choice([-1, 1], size=sa)
    b = rng.uniform(0.97, 1.03, size=sb) * rng.choice([-1, 1], size=sb)
    return a, b


def _select_pair(rng, sa, sb):
    """lhs - rhs is at least 0.3 away from 0 (no ties), and either side wins."""
    a = rng.integers(-3, 3, size=sa) + 0.25 + rng.uniform(-0.1, 0.1, size=sa)
    b = rng.integers(-3, 3, size=sb) + 0.75 + rng.uniform(-0.1, 0.1, size=sb)
    return a, b


def _pair(lo_a, hi_a, lo_b, hi_b, nonzero_b=False):
    def gen(rng, sa, sb):
        b = rng.uniform(lo_b, hi_b, size=sb)
        if nonzero_b:
            b = b * rng.choice([-1, 1], size=sb)
        return rng.uniform(lo_a, hi_a, size=sa), b
    return gen


BINARY = {  # suffix -> (same-shape op, input generator)
    'add': ('elemwise_add', _pair(-2, 2, -2, 2)),
    'sub': ('elemwise_sub', _pair(-2, 2, -2, 2)),
    'mul': ('elemwise_mul', _pair(-2, 2, -2, 2)),
    'div': ('elemwise_div', _pair(-2, 2, 0.5, 2, nonzero_b=True)),
    'mod': ('_mod', _mod_pair),
    'power': ('_power', _pair(0.5, 2, -2, 2)),
    'maximum': ('_maximum', _select_pair),
    'minimum': ('_minimum', _select_pair),
    'hypot': ('_hypot', _pair(-2, 2, 0.5, 2, nonzero_b=True)),
}


def _quotients(rng, shape):
    """Signed values with |q| in (k + 0.2, k + 0.8), k < 4: away from the integers, where the
    quotient inside mod jumps."""
    q = rng.integers(0, 4, size=shape) + rng.uniform(0.2, 0.8, size=shape)
    return q * rng.choice([-1, 1], size=shape)


def _mod_gen(rng, shape):      # x / 1.3 is a safe quotient
    return 1.3 * _quotients(rng, shape)


def _rmod_gen(rng, shape):     # 5.3 / x is a safe quotient
    return 5.3 / _quotients(rng, shape)


def _select_scalar_gen(rng, shape):
    return 0.3 + _nonzero(0.1, 2)(rng, shape)


SCALAR = [  # (op, scalar, input generator)
    ('_plus_scalar', 1.5, _uniform(-2, 2)),
    ('_minus_scalar', 1.5, _uniform(-2, 2)),
    ('_rminus_scalar', 1.5, _uniform(-2, 2)),
    ('_mul_scalar', -2.5, _uniform(-2, 2)),
    ('_div_scalar', -2.5, _uniform(-2, 2)),
    ('_rdiv_scalar', 1.7, _nonzero(0.3, 2)),
    ('_mod_scalar', 1.3, _mod_gen),
    ('_rmod_scalar', 5.3, _rmod_gen),
    ('_power_scalar', 2.5, _uniform(0.3, 2)),
    ('_power_scalar', 3.0, _uniform(-2, 2)),
    ('_power_scalar', -1.5, _uniform(0.3, 2)),
    ('_rpower_scalar', 1.7, _uniform(-2, 2)),
    ('_rpower_scalar', 0.4, _uniform(-2, 2)),
    ('_maximum_scalar', 0.3, _select_scalar_gen),
    ('_minimum_scalar', 0.3, _select_scalar_gen),
    ('_hypot_scalar', 1.5, _uniform(-2, 2)),
]

# _backward_<act>(ograd, v): v is the forward output (input for softsign), in its range
BACKWARD = {
    '_backward_relu': (_nonzero(0.1, 2), lambda a, v: a * (v > 0)),
    '_backward_sigmoid': (_uniform(0.05, 0.95), lambda a, v: a * v * (1 - v)),
    '_backward_tanh': (_uniform(-0.95, 0.95), lambda a, v: a * (1 - v * v)),
    '_backward_softrelu': (_uniform(0.05, 3), lambda a, v: a * (1 - np.exp(-v))),
    '_backward_softsign': (_uniform(-3, 3), lambda a, v: a / (1 + np.abs(v)) ** 2),
}

# make_loss's rule is not its derivative (it passes ones): test_make_loss_passes_ones checks it
GRADS_COVERED = (list(UNARY) + ['make_loss', 'Activation'] + [same for same, _ in BINARY.values()] +
                 ['broadcast_' + k for k in BINARY] + sorted({op for op, _, _ in SCALAR}) +
                 list(BACKWARD))

_CMP = ['equal', 'not_equal', 'greater', 'greater_equal', 'lesser', 'lesser_equal',
        'logical_and', 'logical_or', 'logical_xor']
NO_GRAD_COVERED = (['sign', 'floor', 'ceil', 'round', 'rint', 'trunc', 'fix', 'BlockGrad',
                    'zeros_like', 'ones_like'] + ['_' + c for c in _CMP] +
                   ['broadcast_' + c for c in _CMP] + ['_%s_scalar' % c for c in _CMP])

OPS_COVERED = ['_digamma'] + list(BACKWARD)

HG_OP_NO_GRAD = _core.OP_NO_GRAD


# ---- every rule against finite differences -----------------------------------------------

@pytest.mark.parametrize('op', sorted(UNARY))
def test_unary_grad(op):
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    for shape in SHAPES:
        check_grad(op, [UNARY[op](rng, shape)])


@pytest.mark.parametrize('act', ACT_TYPES)
def test_activation_grad(act):
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        x = _nonzero(0.1, 3)(rng, shape)
        check_grad('Activation', [x], {'act_type': act})
    # softrelu's linear branch (x > 20) and its far negative tail
    check_grad('Activation', [np.array([-30.0, -5.0, 25.0, 40.0])], {'act_type': 'softrelu'})


@pytest.mark.parametrize('name', sorted(BINARY))
def test_same_shape_binary_grad(name):
    op, gen = BINARY[name]
    rng = np.random.default_rng(11)
    for shape in SHAPES:
        check_grad(op, list(gen(rng, shape, shape)))


@pytest.mark.parametrize('name', sorted(BINARY))
@pytest.mark.parametrize('sa,sb', BCAST_PAIRS)
def test_broadcast_binary_grad(name, sa, sb):
    _, gen = BINARY[name]
    rng = np.random.default_rng(13)
    check_grad('broadcast_' + name, list(gen(rng, sa, sb)))


@pytest.mark.parametrize('op,scalar,gen', SCALAR)
def test_scalar_grad(op, scalar, gen):
    rng = np.random.default_rng(17)
    for shape in SHAPES:
        check_grad(op, [gen(rng, shape)], {'scalar': scalar})


def test_grad_wrt_one_input_only():
    rng = np.random.default_rng(19)
    a, b = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, (4,))
    for op in ['broadcast_div', 'broadcast_power', 'broadcast_sub', 'broadcast_maximum']:
        check_grad(op, [a, b], wrt=[0])
        check_grad(op, [a, b], wrt=[1])


# ---- MXNet's conventions at kinks and ties -------------------------------------------------

def _sym_grads(op, xs, attrs=None, head=None):
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    out = getattr(mx.nd, op)(*[mx.nd.array(x, dtype=x.dtype) for x in xs], **(attrs or {}))
    head = np.ones(out.shape) if head is None else head
    return symbolic_grad(op, xs, attrs, None, [head])


def test_ties_go_to_lhs():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 5.0, 0.0])
    for op in ['_maximum', 'broadcast_maximum']:
        ga, gb = _sym_grads(op, [a, b])
        np.testing.assert_array_equal(ga, [1, 0, 1])
        np.testing.assert_array_equal(gb, [0, 1, 0])
    for op in ['_minimum', 'broadcast_minimum']:
        ga, gb = _sym_grads(op, [a, b])
        np.testing.assert_array_equal(ga, [1, 1, 0])
        np.testing.assert_array_equal(gb, [0, 0, 1])
    ga, gb = _sym_grads('broadcast_maximum', [np.array([[1.0], [2.0]]), np.array([2.0, 1.0])])
    np.testing.assert_array_equal(ga, [[1], [2]])   # the ties (1, 1) and (2, 2) go to lhs
    np.testing.assert_array_equal(gb, [1, 0])
    x = np.array([0.5, 1.0, 1.5])
    np.testing.assert_array_equal(_sym_grads('_maximum_scalar', [x], {'scalar': 1.0})[0],
                                  [0, 1, 1])
    np.testing.assert_array_equal(_sym_grads('_minimum_scalar', [x], {'scalar': 1.0})[0],
                                  [1, 1, 0])


def test_kinks_at_zero():
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_array_equal(_sym_grads('abs', [x])[0], [-1, 0, 1])
    np.testing.assert_array_equal(_sym_grads('relu', [x])[0], [0, 0, 1])
    np.testing.assert_array_equal(_sym_grads('Activation', [x], {'act_type': 'relu'})[0],
                                  [0, 0, 1])


def test_make_loss_passes_ones():
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    head = np.array([[5.0, -1.0], [0.0, 2.0]])
    np.testing.assert_array_equal(_sym_grads('make_loss', [x], head=head)[0], np.ones((2, 2)))


def test_copy_passes_the_gradient():
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(_sym_grads('_copy', [x], head=np.array([3.0, -4.0]))[0],
                                  [3, -4])


# ---- ops without a gradient ----------------------------------------------------------------

def _no_grad_inputs(op):
    rng = np.random.default_rng(3)
    if op.startswith('broadcast_'):
        return [rng.uniform(-2, 2, (2, 3)), rng.uniform(-2, 2, (3,))], {}
    if op.endswith('_scalar'):
        return [rng.uniform(-2, 2, (2, 3))], {'scalar': 0.5}
    if op.startswith('_'):
        return [rng.uniform(-2, 2, (2, 3)), rng.uniform(-2, 2, (2, 3))], {}
    return [rng.uniform(-2, 2, (2, 3))], {}


@pytest.mark.parametrize('op', NO_GRAD_COVERED)
def test_no_grad_ops(op):
    assert _core.op_info(op)['flags'] & HG_OP_NO_GRAD
    xs, attrs = _no_grad_inputs(op)
    names = ['x%d' % i for i in range(len(xs))]
    vs = [mx.sym.var(n) for n in names]
    y = getattr(mx.sym, op)(*vs, **attrs)
    feed = {n: mx.nd.array(x) for n, x in zip(names, xs)}
    for g, x in zip(y._gradient(names).eval(**feed), xs):
        assert g.shape == x.shape
        np.testing.assert_array_equal(g.asnumpy(), np.zeros(x.shape))
    # next to a differentiable path, only that path's gradient arrives
    z = mx.sym.elemwise_add(mx.sym.broadcast_mul(y, mx.sym.zeros_like(y)), mx.sym.exp(vs[0]))
    g0 = z._gradient([names[0]]).eval(**feed)[0]
    np.testing.assert_allclose(g0.asnumpy(), np.exp(xs[0]), rtol=1e-6)


def test_block_grad_stops_gradients():
    x = mx.sym.var('x')
    y = mx.sym.elemwise_add(mx.sym.BlockGrad(mx.sym.square(x)), mx.sym.square(x))
    g = y._gradient(['x']).eval(x=mx.nd.array([1.0, -2.0]))[0]
    np.testing.assert_allclose(g.asnumpy(), [2.0, -4.0])


# ---- dtypes --------------------------------------------------------------------------------

def _dtype_cases():
    rng = np.random.default_rng(23)
    for op in sorted(UNARY):
        yield op, [UNARY[op](rng, (3, 4))], {}
    for act in ACT_TYPES:
        yield 'Activation', [_nonzero(0.1, 3)(rng, (3, 4))], {'act_type': act}
    for name, (same, gen) in sorted(BINARY.items()):
        yield same, list(gen(rng, (3, 4), (3, 4))), {}
        yield 'broadcast_' + name, list(gen(rng, (2, 1, 4), (3, 1))), {}
    for op, scalar, gen in SCALAR:
        yield op, [gen(rng, (3, 4))], {'scalar': scalar}


@pytest.mark.parametrize('dtype', ['float32', 'float16'])
def test_gradients_keep_the_dtype(dtype):
    rng = np.random.default_rng(29)
    tol = {'float32': 2e-4, 'float16': 3e-2}[dtype]
    for op, xs, attrs in _dtype_cases():
        xs = [x.astype(dtype).astype(np.float64) for x in xs]   # same values in both runs
        out = getattr(mx.nd, op)(*[mx.nd.array(x) for x in xs], **attrs)
        head = [rng.standard_normal(out.shape).astype(dtype).astype(np.float64)]
        want = symbolic_grad(op, xs, attrs, None, head)
        got = symbolic_grad(op, [x.astype(dtype) for x in xs], attrs, None,
                            [h.astype(dtype) for h in head])
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == np.dtype(dtype), (op, i, g.dtype)
            assert g.shape == xs[i].shape
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol, atol=tol * scale,
                                       err_msg='%s (%s) input %d' % (op, dtype, i))


# ---- internal ops: forward and second order ------------------------------------------------

EULER = 0.57721566490153286061


def test_digamma_forward():
    x = np.array([1.0, 0.5, 2.0, 10.0, 1e-3, 100.0, 3.7, -0.5, -1.3, -2.7])
    want = [-EULER, -EULER - 2 * math.log(2), 1 - EULER, sum(1 / k for k in range(1, 10)) - EULER]
    got = mx.nd._digamma(mx.nd.array(x, dtype='float64')).asnumpy()
    np.testing.assert_allclose(got[:4], want, rtol=1e-14, atol=1e-14)
    # psi = d lgamma / dx (central differences of math.lgamma, independent of the C code)
    hs = [1e-5 * min(1.0, abs(v)) for v in x]
    fd = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v, h in zip(x, hs)]
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-7)
    # recurrence psi(x + 1) = psi(x) + 1 / x on both sides of 0
    y = np.array([0.3, 1.7, 6.2, 9.9, 12.5, -0.4, -3.6])
    p0 = mx.nd._digamma(mx.nd.array(y, dtype='float64')).asnumpy()
    p1 = mx.nd._digamma(mx.nd.array(y + 1, dtype='float64')).asnumpy()
    np.testing.assert_allclose(p1, p0 + 1 / y, rtol=1e-13, atol=1e-13)
    poles = mx.nd._digamma(mx.nd.array([0.0, -1.0, -3.0], dtype='float64')).asnumpy()
    assert np.isnan(poles).all()
    f32 = mx.nd._digamma(mx.nd.array(x[:4], dtype='float32'))
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32.asnumpy(), want, rtol=1e-6)
    f16 = mx.nd._digamma(mx.nd.array(x[:4], dtype='float16'))
    assert f16.dtype == np.float16
    np.testing.assert_allclose(f16.asnumpy().astype('f8'), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize('op', sorted(BACKWARD))
def test_backward_act_forward(op):
    gen, ref = BACKWARD[op]
    rng = np.random.default_rng(31)
    for dtype, tol in [('float64', 1e-14), ('float32', 1e-6), ('float16', 2e-3)]:
        for shape in [(1,), (7,), (3, 5)]:
            a = rng.standard_normal(shape).astype(dtype)
            v = gen(rng, shape).astype(dtype)
            got = getattr(mx.nd, op)(mx.nd.array(a, dtype=dtype), mx.nd.array(v, dtype=dtype))
            assert got.dtype == np.dtype(dtype) and got.shape == shape
            np.testing.assert_allclose(got.asnumpy().astype('f8'),
                                       ref(a.astype('f8'), v.astype('f8')), rtol=tol * 4,
                                       atol=tol)


def test_backward_relu_integer_and_zero():
    got = mx.nd._backward_relu(mx.nd.array([3, 4, 5], dtype='int32'),
                               mx.nd.array([0, 2, -1], dtype='int32'))
    np.testing.assert_array_equal(got.asnumpy(), [0, 4, 0])


@pytest.mark.parametrize('op', sorted(BACKWARD))
def test_backward_act_grad(op):
    gen, _ = BACKWARD[op]
    rng = np.random.default_rng(37)
    for shape in [(1,), (5,), (3, 4)]:
        check_grad(op, [rng.standard_normal(shape), gen(rng, shape)])


@pytest.mark.parametrize('act', ACT_TYPES)
def test_second_derivative_of_activation(act):
    x = mx.sym.var('x')
    g1 = mx.sym.Activation(x, act_type=act)._gradient(['x'])
    g2 = g1._gradient(['x'])
    xv = np.array([-2.5, -0.7, 0.4, 1.9])
    got = g2.eval(x=mx.nd.array(xv, dtype='float64'))[0].asnumpy()
    s = 1 / (1 + np.exp(-xv))
    want = {'relu': np.zeros_like(xv), 'sigmoid': s * (1 - s) * (1 - 2 * s),
            'tanh': -2 * np.tanh(xv) * (1 - np.tanh(xv) ** 2), 'softrelu': s * (1 - s),
            'softsign': -2 * np.sign(xv) / (1 + np.abs(xv)) ** 3}[act]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_second_derivative_of_gamma_is_a_clear_error():
    x = mx.sym.var('x')
    g1 = mx.sym.gammaln(x)._gradient(['x'])
    with pytest.raises(mx.MXNetError, match='_digamma has no gradient'):
        g1._gradient(['x'])


def _first_grad(op, xv):
    """d op / dx at xv through autograd, float64."""
    x = mx.nd.array(xv, dtype='float64')
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(x)
    y.backward()
    return x.grad.asnumpy()


@pytest.mark.parametrize('op', ['arcsinh', 'arccosh', 'arctanh', 'radians', 'degrees', 'sin'])
def test_second_order_through_autograd_vs_finite_differences(op):
    """autograd.grad(create_graph=True) twice against central differences of the first
    gradient: the true second derivative (arcsinh's is -x / (1 + x^2)^1.5; MXNet 1.9.1's own
    rule has the opposite sign, a bug not copied here). A constant first derivative (radians,
    degrees) gives zeros, as MXNet's does, not an unreachable-variable error."""
    lo, hi = {'arccosh': (1.2, 3.0), 'arctanh': (-0.8, 0.8)}.get(op, (-2.0, 2.0))
    xv = np.random.default_rng(5).uniform(lo, hi, size=(2, 3))
    head1 = np.random.default_rng(6).standard_normal(xv.shape)
    head2 = np.random.default_rng(7).standard_normal(xv.shape)
    x = mx.nd.array(xv, dtype='float64')
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, op)(x)
        g1 = mx.autograd.grad(y, x, head_grads=mx.nd.array(head1, dtype='float64'),
                              create_graph=True, retain_graph=True)
        assert isinstance(g1, list) and len(g1) == 1
        g2 = mx.autograd.grad(g1[0], x, head_grads=mx.nd.array(head2, dtype='float64'),
                              create_graph=True, retain_graph=True)[0]
    h = 1e-6
    fd = (_first_grad(op, xv + h) - _first_grad(op, xv - h)) / (2 * h)
    np.testing.assert_allclose(g1[0].asnumpy(), head1 * _first_grad(op, xv), rtol=1e-12)
    np.testing.assert_allclose(g2.asnumpy(), head1 * head2 * fd, rtol=1e-6, atol=1e-8)
