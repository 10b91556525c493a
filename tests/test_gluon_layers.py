"""Every layer of gluon.nn, imperative against hybridized.

For each case two copies of a layer are built under a fresh NameManager (so both get MXNet's
automatic names), one imperative and one hybridized, each initialised by its own first forward
pass (deferred initialisation in both modes when no in_channels / in_units is given). The
Parameter names and shapes are asserted, the parameters are set to the same random values, and
then the two must give
- the same output in predict mode (<= 1e-6 relative to the output's scale, float32),
- the same output, parameter gradients and input gradient under autograd.record() / backward
  with a random head gradient (<= 1e-5 relative),
- the same auxiliary states afterwards (BatchNorm's running statistics).
Layers added with this file (transposed convolutions, ReflectionPad2D, Embedding, the
LeakyReLU family, Swish) and the simple basic layers are also checked against NumPy.
Dropout's mask is hidden, so train-mode Dropout is checked statistically and through the
consistency of its output with its gradient.
"""
import json
import math

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, nd
from hybridgluon.gluon import nn

FWD_TOL = 1e-6
GRAD_TOL = 1e-5
REF_TOL = 1e-5

SELU_LAMBDA = 1.0507009873554805
SELU_ALPHA = 1.6732632423543772


def assert_rel(actual, expected, tol, what=''):
    """Element-wise agreement within tol relative to the expected tensor's largest magnitude."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, '%s: shape %s, expected %s' % (what, a.shape, e.shape)
    scale = float(np.abs(e).max()) if e.size else 0.0
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale, err_msg=what)


# ---- NumPy references -------------------------------------------------------------------

def np_deconv(x, w, b, stride, pad, adj, dilate, groups):
    """Transposed convolution: every input element scatters its kernel-weighted copy into the
    output at i * stride + k * dilate - pad."""
    n, c = x.shape[:2]
    nsp = x.ndim - 2
    cg, fg = c // groups, w.shape[1]
    ksz = w.shape[2:]
    full = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (ksz[i] - 1) + 1 for i in range(nsp)]
    buf = np.zeros((n, fg * groups) + tuple(f + a for f, a in zip(full, adj)))
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        wg = w[g * cg:(g + 1) * cg].astype(np.float64)
        for kk in np.ndindex(*ksz):
            sl = tuple(slice(kk[i] * dilate[i], kk[i] * dilate[i]
                             + stride[i] * (x.shape[2 + i] - 1) + 1, stride[i])
                       for i in range(nsp))
            contrib = np.einsum('nc...,cf->nf...', xg, wg[(slice(None), slice(None)) + kk])
            buf[(slice(None), slice(g * fg, (g + 1) * fg)) + sl] += contrib
    out_sz = [full[i] - 2 * pad[i] + adj[i] for i in range(nsp)]
    out = buf[(slice(None), slice(None))
              + tuple(slice(pad[i], pad[i] + out_sz[i]) for i in range(nsp))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nsp)
    return out


def _deconv_ref(stride, pad, adj, dilate, groups, act=None):
    def ref(x, p):
        w = next(v for k, v in p.items() if k.endswith('weight'))
        b = next((v for k, v in p.items() if k.endswith('bias')), None)
        out = np_deconv(x, w, b, stride, pad, adj, dilate, groups)
        return np.maximum(out, 0) if act == 'relu' else out
    return ref


def np_erf(x):
    return np.vectorize(math.erf)(x)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_elu(x, a):
    return np.where(x > 0, x, a * np.expm1(np.minimum(x, 0)))


NP_ACT = {
    'relu': lambda x: np.maximum(x, 0),
    'sigmoid': np_sigmoid,
    'tanh': np.tanh,
    'softrelu': lambda x: np.log1p(np.exp(x)),
    'softsign': lambda x: x / (1 + np.abs(x)),
}


def _dense_ref(flatten, act=None):
    def ref(x, p):
        w = next(v for k, v in p.items() if k.endswith('weight'))
        b = next((v for k, v in p.items() if k.endswith('bias')), None)
        x = x.reshape(x.shape[0], -1) if flatten else x
        out = x.astype(np.float64) @ w.T.astype(np.float64)
        if b is not None:
            out = out + b
        return NP_ACT[act](out) if act else out
    return ref


def _prelu_ref(x, p):
    alpha = p['prelu0_alpha']
    if alpha.size > 1:
        alpha = alpha.reshape((1, -1) + (1,) * (x.ndim - 2))
    return np.where(x > 0, x, alpha * x)


def _embedding_ref(x, p):
    return p['embedding0_weight'][x.astype(np.int64)]


# ---- the harness ------------------------------------------------------------------------

def _build(factory, x, hybrid, expect_deferred=None):
    """A fresh copy of the layer (names from a fresh NameManager), initialised by its first
    forward pass in the given mode."""
    with mx.name.NameManager():
        net = factory()
    if expect_deferred is not None:
        assert [(k, p.shape) for k, p in net.collect_params().items()] == expect_deferred
    if hybrid:
        net.hybridize()
    net.initialize(mx.init.Xavier())
    net(x)
    return net


def _randomize(net, rng):
    """Random values for every Parameter; positive ones for variances and scales."""
    for name, p in net.collect_params().items():
        if name.endswith(('running_var', 'gamma')):
            v = rng.uniform(0.5, 1.5, p.shape)
        else:
            v = rng.normal(0, 0.5, p.shape)
        p.set_data(nd.array(v, dtype=p.dtype))


def _copy_params(src, dst):
    for (ka, pa), (kb, pb) in zip(src.collect_params().items(), dst.collect_params().items()):
        assert ka == kb
        pb.set_data(nd.array(pa.data().asnumpy(), dtype=pa.dtype))


def _train_step(net, x, head, wrt_input):
    xin = nd.array(x)
    if wrt_input:
        xin.attach_grad()
    with autograd.record():
        y = net(xin)
    y.backward(nd.array(head))
    grads = {k: p.grad().asnumpy() for k, p in net.collect_params().items()
             if p.grad_req != 'null'}
    if wrt_input:
        grads['<input>'] = xin.grad.asnumpy()
    aux = {k: p.data().asnumpy() for k, p in net.collect_params().items()
           if p.grad_req == 'null'}
    return y.asnumpy(), grads, aux


def check_layer(factory, x, params, ref=None, wrt_input=True, deferred=None, seed=0):
    """Imperative == hybridized in predict and in train mode, forward and backward; the
    Parameter names and shapes are `params` (a list of (name, shape)), `deferred` the shapes
    before the first forward pass; `ref(x, params)` is the NumPy output in predict mode."""
    rng = np.random.default_rng(seed)
    a = _build(factory, nd.array(x), False, deferred)
    b = _build(factory, nd.array(x), True, deferred)
    for net in (a, b):
        got = [(k, p.shape) for k, p in net.collect_params().items()]
        assert got == params
        assert [p.data().shape for p in net.collect_params().values()] == [s for _, s in params]
    if isinstance(b, nn.HybridBlock):
        assert b._cached_op is not None and a._cached_op is None  # the two paths really differ
    _randomize(a, rng)
    _copy_params(a, b)

    ya = a(nd.array(x)).asnumpy()
    yb = b(nd.array(x)).asnumpy()
    yb2 = b(nd.array(x)).asnumpy()  # the cached graph, second call
    assert_rel(yb, ya, FWD_TOL, 'hybridized forward')
    assert_rel(yb2, ya, FWD_TOL, 'hybridized forward (cached)')
    if ref is not None:
        pnp = {k: p.data().asnumpy() for k, p in a.collect_params().items()}
        assert_rel(ya, ref(x.astype(np.float64), pnp), REF_TOL, 'NumPy reference')

    head = rng.standard_normal(ya.shape)
    ta, ga, auxa = _train_step(a, x, head, wrt_input)
    tb, gb, auxb = _train_step(b, x, head, wrt_input)
    assert_rel(tb, ta, FWD_TOL, 'train-mode forward')
    assert sorted(ga) == sorted(gb)
    assert sorted(ga) == sorted([k for k, p in a.collect_params().items()
                                 if p.grad_req != 'null'] + (['<input>'] if wrt_input else []))
    for k in ga:
        assert_rel(gb[k], ga[k], GRAD_TOL, 'gradient of ' + k)
        assert np.isfinite(ga[k]).all()
    for k in auxa:
        assert_rel(auxb[k], auxa[k], FWD_TOL, 'auxiliary state ' + k)
    return a, b


def _normal(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- the cases ----------------------------------------------------------------------------
# (id, factory, input shape, [(parameter name, shape)], NumPy reference or None)

DENSE_CASES = [
    ('dense', lambda: nn.Dense(5), (3, 4),
     [('dense0_weight', (5, 4)), ('dense0_bias', (5,))], _dense_ref(True)),
    ('dense_flatten_relu', lambda: nn.Dense(5, activation='relu', in_units=12), (3, 3, 4),
     [('dense0_weight', (5, 12)), ('dense0_bias', (5,))], _dense_ref(True, 'relu')),
    ('dense_noflatten_tanh_nobias',
     lambda: nn.Dense(6, flatten=False, use_bias=False, activation='tanh'), (2, 3, 4),
     [('dense0_weight', (6, 4))], _dense_ref(False, 'tanh')),
    ('dense_noflatten_sigmoid', lambda: nn.Dense(3, flatten=False, activation='sigmoid'),
     (2, 5, 7), [('dense0_weight', (3, 7)), ('dense0_bias', (3,))],
     _dense_ref(False, 'sigmoid')),
]

ACT_CASES = [('activation_' + t, (lambda t=t: nn.Activation(t)), (3, 4, 5), [],
              (lambda x, p, t=t: NP_ACT[t](x))) for t in NP_ACT]

BASIC_CASES = [
    ('flatten', nn.Flatten, (2, 3, 4, 5), [], lambda x, p: x.reshape(2, -1)),
    ('identity', nn.Identity, (3, 4), [], lambda x, p: x),
    ('dropout_rate0', lambda: nn.Dropout(0), (3, 4), [], lambda x, p: x),
    ('lambda_name', lambda: nn.Lambda('tanh'), (3, 4), [], lambda x, p: np.tanh(x)),
    ('lambda_func', lambda: nn.Lambda(lambda x: nd.LeakyReLU(x, slope=0.1)), (3, 4), [],
     lambda x, p: np.where(x > 0, x, 0.1 * x)),
    ('hybridlambda_name', lambda: nn.HybridLambda('tanh'), (3, 4), [],
     lambda x, p: np.tanh(x)),
    ('hybridlambda_func', lambda: nn.HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.1)),
     (3, 4), [], lambda x, p: np.where(x > 0, x, 0.1 * x)),
]

CONV_CASES = [
    ('conv1d', lambda: nn.Conv1D(4, 3, strides=2, padding=1), (2, 3, 11),
     [('conv0_weight', (4, 3, 3)), ('conv0_bias', (4,))], None),
    ('conv1d_dil_groups', lambda: nn.Conv1D(4, 3, dilation=2, groups=2, in_channels=4),
     (2, 4, 10), [('conv0_weight', (4, 2, 3)), ('conv0_bias', (4,))], None),
    ('conv2d', lambda: nn.Conv2D(4, 3, activation='relu', use_bias=False), (2, 3, 7, 7),
     [('conv0_weight', (4, 3, 3, 3))], None),
    ('conv2d_all', lambda: nn.Conv2D(6, (3, 2), strides=(2, 1), padding=(1, 0),
                                     dilation=(1, 2), groups=3), (2, 3, 9, 8),
     [('conv0_weight', (6, 1, 3, 2)), ('conv0_bias', (6,))], None),
    ('conv2d_depthwise', lambda: nn.Conv2D(4, 3, padding=1, groups=4, in_channels=4),
     (2, 4, 6, 6), [('conv0_weight', (4, 1, 3, 3)), ('conv0_bias', (4,))], None),
    ('conv3d', lambda: nn.Conv3D(4, 2, strides=2, padding=1), (1, 2, 5, 6, 4),
     [('conv0_weight', (4, 2, 2, 2, 2)), ('conv0_bias', (4,))], None),
    ('conv3d_dil_groups', lambda: nn.Conv3D(4, (1, 2, 3), dilation=(1, 2, 1), groups=2),
     (2, 4, 3, 6, 7), [('conv0_weight', (4, 2, 1, 2, 3)), ('conv0_bias', (4,))], None),
]

DECONV_CASES = [
    ('conv1dT', lambda: nn.Conv1DTranspose(4, 3, strides=2, padding=1, output_padding=1),
     (2, 3, 5), [('conv0_weight', (3, 4, 3)), ('conv0_bias', (4,))],
     _deconv_ref((2,), (1,), (1,), (1,), 1)),
    ('conv1dT_dil_groups', lambda: nn.Conv1DTranspose(6, 2, dilation=2, groups=3, in_channels=3,
                                                      use_bias=False),
     (2, 3, 4), [('conv0_weight', (3, 2, 2))], _deconv_ref((1,), (0,), (0,), (2,), 3)),
    ('conv2dT', lambda: nn.Conv2DTranspose(5, 3), (2, 3, 4, 4),
     [('conv0_weight', (3, 5, 3, 3)), ('conv0_bias', (5,))],
     _deconv_ref((1, 1), (0, 0), (0, 0), (1, 1), 1)),
    ('conv2dT_all', lambda: nn.Conv2DTranspose(6, (3, 2), strides=(2, 3), padding=(1, 0),
                                               output_padding=(1, 2), dilation=(1, 2), groups=2),
     (2, 4, 3, 5), [('conv0_weight', (4, 3, 3, 2)), ('conv0_bias', (6,))],
     _deconv_ref((2, 3), (1, 0), (1, 2), (1, 2), 2)),
    ('conv2dT_relu', lambda: nn.Conv2DTranspose(4, 4, strides=2, padding=1, activation='relu',
                                                use_bias=False, in_channels=2),
     (1, 2, 5, 3), [('conv0_weight', (2, 4, 4, 4))],
     _deconv_ref((2, 2), (1, 1), (0, 0), (1, 1), 1, 'relu')),
    ('conv3dT', lambda: nn.Conv3DTranspose(3, 2, strides=2, padding=(0, 1, 0),
                                           output_padding=(1, 0, 0)),
     (1, 2, 3, 3, 2), [('conv0_weight', (2, 3, 2, 2, 2)), ('conv0_bias', (3,))],
     _deconv_ref((2, 2, 2), (0, 1, 0), (1, 0, 0), (1, 1, 1), 1)),
]

POOL_CASES = [
    ('maxpool1d', lambda: nn.MaxPool1D(), (2, 3, 9)),
    ('maxpool1d_ceil', lambda: nn.MaxPool1D(3, 2, 1, ceil_mode=True), (2, 3, 10)),
    ('maxpool2d', lambda: nn.MaxPool2D(), (2, 3, 8, 7)),
    ('maxpool2d_pad', lambda: nn.MaxPool2D((3, 2), strides=(2, 1), padding=1), (2, 3, 7, 6)),
    ('maxpool3d', lambda: nn.MaxPool3D(), (1, 2, 4, 5, 6)),
    ('avgpool1d', lambda: nn.AvgPool1D(3, 1, 1), (2, 3, 9)),
    ('avgpool2d_nopadcount', lambda: nn.AvgPool2D(3, 2, 1, count_include_pad=False),
     (2, 3, 7, 7)),
    ('avgpool2d_ceil', lambda: nn.AvgPool2D(3, ceil_mode=True), (1, 2, 8, 8)),
    ('avgpool3d', lambda: nn.AvgPool3D(2, 1, 1, ceil_mode=True), (1, 2, 3, 4, 5)),
    ('globalmaxpool1d', nn.GlobalMaxPool1D, (2, 3, 9)),
    ('globalmaxpool2d', nn.GlobalMaxPool2D, (2, 3, 5, 6)),
    ('globalmaxpool3d', nn.GlobalMaxPool3D, (2, 3, 2, 5, 6)),
    ('globalavgpool1d', nn.GlobalAvgPool1D, (2, 3, 9)),
    ('globalavgpool2d', nn.GlobalAvgPool2D, (2, 3, 5, 6)),
    ('globalavgpool3d', nn.GlobalAvgPool3D, (2, 3, 2, 5, 6)),
    ('pool2d_max', lambda: nn.Pool2D(kernel_size=2), (2, 3, 8, 6)),
    ('pool2d_avg', lambda: nn.Pool2D(pool_size=3, strides=1, pool_type='avg'), (1, 2, 5, 5)),
    ('pool2d_sum', lambda: nn.Pool2D(pool_size=2, pool_type='sum'), (1, 2, 4, 6)),
]
POOL_CASES = [(i, f, s, [], None) for i, f, s in POOL_CASES]


def _bn_params(c, prefix='batchnorm0_'):
    return [(prefix + n, (c,)) for n in ('gamma', 'beta', 'running_mean', 'running_var')]


NORM_CASES = [
    ('batchnorm', nn.BatchNorm, (4, 3, 5, 5), _bn_params(3), None),
    ('batchnorm_last_axis_noscale', lambda: nn.BatchNorm(axis=-1, scale=False, momentum=0.5),
     (6, 4), _bn_params(4), None),
    ('batchnorm_nocenter', lambda: nn.BatchNorm(center=False, epsilon=1e-3, in_channels=2),
     (3, 2, 7), _bn_params(2), None),
    ('batchnorm_global_stats', lambda: nn.BatchNorm(use_global_stats=True), (4, 3, 2, 2),
     _bn_params(3), None),
    ('layernorm', nn.LayerNorm, (3, 4, 6),
     [('layernorm0_gamma', (6,)), ('layernorm0_beta', (6,))], None),
    ('layernorm_axis1', lambda: nn.LayerNorm(axis=1, in_channels=4), (3, 4, 5),
     [('layernorm0_gamma', (4,)), ('layernorm0_beta', (4,))], None),
    ('instancenorm', nn.InstanceNorm, (2, 3, 5),
     [('instancenorm0_gamma', (3,)), ('instancenorm0_beta', (3,))], None),
    ('instancenorm_axis2_scale', lambda: nn.InstanceNorm(axis=2, scale=True), (2, 3, 4, 5),
     [('instancenorm0_gamma', (4,)), ('instancenorm0_beta', (4,))], None),
    ('groupnorm', lambda: nn.GroupNorm(num_groups=2), (2, 4, 3, 3),
     [('groupnorm0_gamma', (2,)), ('groupnorm0_beta', (2,))], None),
]

NEW_ACT_CASES = [
    ('leakyrelu', lambda: nn.LeakyReLU(0.1), (3, 4, 5), [],
     lambda x, p: np.where(x > 0, x, 0.1 * x)),
    ('leakyrelu_zero', lambda: nn.LeakyReLU(0), (3, 4), [], lambda x, p: np.maximum(x, 0)),
    ('prelu', nn.PReLU, (2, 3, 4), [('prelu0_alpha', (1,))], _prelu_ref),
    ('prelu_channels', lambda: nn.PReLU(in_channels=3), (2, 3, 4, 2),
     [('prelu0_alpha', (3,))], _prelu_ref),
    ('prelu_2d', lambda: nn.PReLU(in_channels=5), (4, 5), [('prelu0_alpha', (5,))],
     _prelu_ref),
    ('elu', nn.ELU, (3, 4, 5), [], lambda x, p: np_elu(x, 1.0)),
    ('elu_alpha', lambda: nn.ELU(0.5), (3, 4), [], lambda x, p: np_elu(x, 0.5)),
    ('selu', nn.SELU, (3, 4, 5), [], lambda x, p: SELU_LAMBDA * np_elu(x, SELU_ALPHA)),
    ('gelu', nn.GELU, (3, 4, 5), [],
     lambda x, p: 0.5 * x * (1 + np_erf(x / math.sqrt(2)))),
    ('swish', nn.Swish, (3, 4, 5), [], lambda x, p: x * np_sigmoid(x)),
    ('swish_beta', lambda: nn.Swish(2.0), (3, 4), [], lambda x, p: x * np_sigmoid(2 * x)),
    ('silu', nn.SiLU, (3, 4), [], lambda x, p: x * np_sigmoid(x)),
]

PAD_CASES = [
    ('reflectionpad2d', lambda: nn.ReflectionPad2D(2), (2, 3, 5, 6), [],
     lambda x, p: np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode='reflect')),
    ('reflectionpad2d_tuple', lambda: nn.ReflectionPad2D((0, 0, 0, 0, 1, 2, 3, 0)),
     (1, 2, 4, 5), [], lambda x, p: np.pad(x, ((0, 0), (0, 0), (1, 2), (3, 0)),
                                           mode='reflect')),
    ('reflectionpad2d_zero', nn.ReflectionPad2D, (1, 2, 3, 3), [], lambda x, p: x),
]

ALL_CASES = (DENSE_CASES + ACT_CASES + BASIC_CASES + CONV_CASES + DECONV_CASES + POOL_CASES
             + NORM_CASES + NEW_ACT_CASES + PAD_CASES)


@pytest.mark.parametrize('case', ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_imperative_equals_hybridized(case):
    _, factory, shape, params, ref = case
    check_layer(factory, _normal(shape), params, ref)


def test_deferred_shapes_before_first_forward():
    """The Parameter shapes MXNet gives a layer before it has seen data (0 = unknown)."""
    cases = [
        (lambda: nn.Dense(5), (2, 4), [('dense0_weight', (5, 0)), ('dense0_bias', (5,))]),
        (lambda: nn.Conv2D(6, 3, groups=2), (1, 4, 5, 5),
         [('conv0_weight', (6, 0, 3, 3)), ('conv0_bias', (6,))]),
        (lambda: nn.Conv1DTranspose(4, 3), (2, 3, 5),
         [('conv0_weight', (0, 4, 3)), ('conv0_bias', (4,))]),
        (lambda: nn.Conv2DTranspose(6, (2, 3), groups=3), (2, 3, 4, 4),
         [('conv0_weight', (0, 2, 2, 3)), ('conv0_bias', (6,))]),
        (lambda: nn.Conv3DTranspose(2, 2, use_bias=False), (1, 3, 2, 2, 2),
         [('conv0_weight', (0, 2, 2, 2, 2))]),
        (nn.BatchNorm, (2, 3), _bn_params(0)),
        (nn.LayerNorm, (2, 3), [('layernorm0_gamma', (0,)), ('layernorm0_beta', (0,))]),
        (nn.InstanceNorm, (2, 3, 4),
         [('instancenorm0_gamma', (0,)), ('instancenorm0_beta', (0,))]),
    ]
    for factory, shape, deferred in cases:
        final = None
        for hybrid in (False, True):
            net = _build(factory, nd.array(_normal(shape)), hybrid, deferred)
            got = [(k, p.data().shape) for k, p in net.collect_params().items()]
            assert all(0 not in s for _, s in got)
            assert final is None or got == final
            final = got


@pytest.mark.parametrize('hybrid', [False, True])
@pytest.mark.parametrize('factory,shape,wshape', [
    (lambda: nn.Dense(3, flatten=False), (2, 4, 5), (3, 5)),
    (lambda: nn.Conv2DTranspose(4, 3, strides=2, groups=2), (2, 6, 3, 3), (6, 2, 3, 3)),
    (lambda: nn.Conv1D(4, 3, groups=2), (2, 6, 7), (4, 3, 3)),
    (nn.BatchNorm, (4, 3, 2), None),
    (nn.LayerNorm, (4, 3, 2), None),
])
def test_deferred_init_on_a_first_call_under_record(hybrid, factory, shape, wshape):
    """The common training loop: initialize(), then the first forward pass is recorded."""
    with mx.name.NameManager():
        net = factory()
    if hybrid:
        net.hybridize()
    net.initialize()
    x = nd.array(_normal(shape))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    assert np.isfinite(x.grad.asnumpy()).all()
    for p in net.collect_params().values():
        assert 0 not in p.data().shape
        if p.grad_req != 'null':
            assert p.grad().shape == p.data().shape
    if wshape is not None:
        assert net.weight.shape == wshape


def test_deferred_transposed_conv_fills_in_channels():
    for hybrid in (False, True):
        net = _build(lambda: nn.Conv2DTranspose(6, 3, strides=2, groups=2), nd.ones((2, 4, 3, 3)),
                     hybrid)
        assert net.weight.shape == (4, 3, 3, 3)
        assert net(nd.ones((2, 4, 3, 3))).shape == (2, 6, 7, 7)
        with pytest.raises(mx.MXNetError):
            net(nd.ones((2, 2, 3, 3)))  # 2 channels no longer match the weight


def test_nested_hybrid_sequential():
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'))
            inner = nn.HybridSequential()
            with inner.name_scope():
                inner.add(nn.Conv2DTranspose(2, 2, strides=2), nn.PReLU(),
                          nn.MaxPool2D(), nn.Dropout(0))
            net.add(inner, nn.LeakyReLU(0.2), nn.Flatten(), nn.Dense(3))
        return net

    p = 'hybridsequential0_'
    q = p + 'hybridsequential0_'
    params = ([(p + 'conv0_weight', (4, 2, 3, 3)), (p + 'conv0_bias', (4,))]
              + _bn_params(4, p + 'batchnorm0_')
              + [(q + 'conv0_weight', (4, 2, 2, 2)), (q + 'conv0_bias', (2,)),
                 (q + 'prelu0_alpha', (1,)),
                 (p + 'dense0_weight', (3, 72)), (p + 'dense0_bias', (3,))])
    check_layer(make, _normal((2, 2, 6, 6)), params)


def test_hybrid_sequential_of_sequentials_and_getitem():
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            for _ in range(2):
                block = nn.HybridSequential()
                with block.name_scope():
                    block.add(nn.Dense(4, activation='tanh'), nn.LayerNorm())
                net.add(block)
            net.add(nn.Identity())
        return net

    p = 'hybridsequential0_'
    params = []
    for i in range(2):
        q = p + 'hybridsequential%d_' % i
        params += [(q + 'dense0_weight', (4, 5 if i == 0 else 4)), (q + 'dense0_bias', (4,)),
                   (q + 'layernorm0_gamma', (4,)), (q + 'layernorm0_beta', (4,))]
    a, _ = check_layer(make, _normal((3, 5)), params)
    assert len(a) == 3 and isinstance(a[2], nn.Identity)
    assert isinstance(a[:2], nn.HybridSequential) and len(a[:2]) == 2


# ---- Embedding ---------------------------------------------------------------------------

def _indices(shape, n, seed=2):
    return np.random.default_rng(seed).integers(0, n, size=shape).astype(np.float32)


@pytest.mark.parametrize('shape', [(5,), (3, 4), (2, 3, 2)])
@pytest.mark.parametrize('sparse_grad', [False, True])
def test_embedding(shape, sparse_grad):
    x = _indices(shape, 7)
    x.flat[0] = x.flat[-1] = 3  # a repeated index: its rows' gradients add up
    check_layer(lambda: nn.Embedding(7, 4, sparse_grad=sparse_grad), x,
                [('embedding0_weight', (7, 4))], _embedding_ref, wrt_input=False)


def test_embedding_gradient_vs_numpy():
    x = np.array([[0, 2, 2], [5, 0, 2]], dtype=np.float32)
    for hybrid in (False, True):
        net = _build(lambda: nn.Embedding(6, 3), nd.array(x), hybrid)
        head = _normal((2, 3, 3), seed=4)
        with autograd.record():
            y = net(nd.array(x))
        y.backward(nd.array(head))
        want = np.zeros((6, 3))
        np.add.at(want, x.astype(int).ravel(), head.reshape(-1, 3))
        assert_rel(net.weight.grad().asnumpy(), want, 1e-6)


def test_embedding_args_dtype_repr():
    e = nn.Embedding(10, 4, dtype='float64', weight_initializer=mx.init.Constant(0.5))
    assert repr(e) == 'Embedding(10 -> 4, float64)'
    assert np.dtype(e.weight.dtype) == np.float64 and e.weight.shape == (10, 4)
    assert e.weight._grad_stype == 'default'
    assert nn.Embedding(3, 2, sparse_grad=True).weight._grad_stype == 'row_sparse'
    e.initialize()
    out = e(nd.array([[1, 9]]))
    assert out.dtype == np.float64 and out.shape == (1, 2, 4)
    np.testing.assert_array_equal(out.asnumpy(), np.full((1, 2, 4), 0.5))
    e.hybridize()
    assert e(nd.array([[1, 9]])).dtype == np.float64


# ---- Dropout -----------------------------------------------------------------------------

@pytest.mark.parametrize('hybrid', [False, True])
def test_dropout_predict_mode_is_identity(hybrid):
    x = _normal((4, 5))
    net = nn.Dropout(0.5)
    if hybrid:
        net.hybridize()
    np.testing.assert_array_equal(net(nd.array(x)).asnumpy(), x)
    xin = nd.array(x)
    xin.attach_grad()
    with autograd.record(train_mode=False):
        y = net(xin)
    y.backward(nd.array(2 * x))
    np.testing.assert_array_equal(y.asnumpy(), x)
    np.testing.assert_array_equal(xin.grad.asnumpy(), 2 * x)


@pytest.mark.parametrize('hybrid', [False, True])
@pytest.mark.parametrize('rate', [0.3, 0.75])
def test_dropout_train_mode_statistics(hybrid, rate):
    """The hidden mask, seen through the output: a fraction `rate` of zeros, the rest scaled by
    1 / (1 - rate), and a gradient that is head / (1 - rate) exactly where the output is kept."""
    mx.random.seed(11)
    rng = np.random.default_rng(3)
    x = rng.uniform(1, 2, size=(200, 500)).astype(np.float32)
    head = rng.standard_normal(x.shape).astype(np.float32)
    net = nn.Dropout(rate)
    if hybrid:
        net.hybridize()
    masks = []
    for _ in range(2):
        xin = nd.array(x)
        xin.attach_grad()
        with autograd.record():
            y = net(xin)
        y.backward(nd.array(head))
        y = y.asnumpy()
        kept = y != 0
        n = kept.size
        assert abs((~kept).mean() - rate) < 5 * math.sqrt(rate * (1 - rate) / n)
        assert_rel(y[kept], x[kept] / (1 - rate), FWD_TOL)
        assert_rel(xin.grad.asnumpy(), np.where(kept, head / (1 - rate), 0), GRAD_TOL)
        # inverted dropout keeps the expectation
        assert abs(y.mean() / x.mean() - 1) < 5 * math.sqrt(rate / (1 - rate) / n) * 2
        masks.append(kept)
    assert (masks[0] != masks[1]).any()  # a fresh mask each call


@pytest.mark.parametrize('hybrid', [False, True])
def test_dropout_shared_axes(hybrid):
    mx.random.seed(12)
    x = np.random.default_rng(4).uniform(1, 2, size=(300, 6, 40)).astype(np.float32)
    net = nn.Dropout(0.4, axes=(1,))
    if hybrid:
        net.hybridize()
    with autograd.record():
        y = net(nd.array(x)).asnumpy()
    kept = y != 0
    assert (kept == kept[:, :1, :]).all()  # one mask along axis 1
    assert abs((~kept[:, 0, :]).mean() - 0.4) < 0.03
    assert_rel(y[kept], x[kept] / 0.6, FWD_TOL)


@pytest.mark.parametrize('hybrid', [False, True])
def test_dropout_train_mode_without_recording(hybrid):
    mx.random.seed(13)
    net = nn.Dropout(0.5)
    if hybrid:
        net.hybridize()
    x = nd.ones((50, 50))
    with autograd.train_mode():
        y = net(x).asnumpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    np.testing.assert_array_equal(net(x).asnumpy(), np.ones((50, 50)))


def test_dropout_repr_and_node():
    net = nn.Dropout(0.25, axes=(1, 2))
    assert repr(net) == 'Dropout(p = 0.25, axes=(1, 2))'
    graph = json.loads(net(mx.sym.var('data')).tojson())
    node = [n for n in graph['nodes'] if n['op'] == 'Dropout'][0]
    assert node['name'] == net.prefix + 'fwd'
    assert node['attrs']['p'] == '0.25' and node['attrs']['axes'] == '(1, 2)'


# ---- BatchNorm running statistics --------------------------------------------------------

@pytest.mark.parametrize('hybrid', [False, True])
@pytest.mark.parametrize('axis,shape', [(1, (4, 3, 5, 5)), (-1, (8, 4))])
def test_batchnorm_running_stats_update_after_backward(hybrid, axis, shape):
    rng = np.random.default_rng(5)
    x = rng.normal(2.0, 3.0, size=shape).astype(np.float32)
    net = _build(lambda: nn.BatchNorm(axis=axis, momentum=0.8), nd.array(x), hybrid)
    c = shape[axis]
    _randomize(net, rng)
    mean0, var0 = net.running_mean.data().asnumpy(), net.running_var.data().asnumpy()
    gamma, beta = net.gamma.data().asnumpy(), net.beta.data().asnumpy()
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    bshape = [1] * len(shape)
    bshape[axis] = c
    mu, var = x.astype(np.float64).mean(axis=red), x.astype(np.float64).var(axis=red)

    # predict mode: the running statistics
    y = net(nd.array(x)).asnumpy()
    want = ((x - mean0.reshape(bshape)) / np.sqrt(var0.reshape(bshape) + 1e-5)
            * gamma.reshape(bshape) + beta.reshape(bshape))
    assert_rel(y, want, REF_TOL)

    # train mode: the batch statistics; the running ones move once backward has run
    with autograd.record():
        y = net(nd.array(x))
    want = ((x - mu.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5)
            * gamma.reshape(bshape) + beta.reshape(bshape))
    assert_rel(y.asnumpy(), want, REF_TOL)
    y.backward(nd.array(rng.standard_normal(shape)))
    assert_rel(net.running_mean.data().asnumpy(), 0.8 * mean0 + 0.2 * mu, REF_TOL)
    assert_rel(net.running_var.data().asnumpy(), 0.8 * var0 + 0.2 * var, REF_TOL)
    for p in (net.running_mean, net.running_var):
        assert p.grad_req == 'null'


@pytest.mark.parametrize('hybrid', [False, True])
def test_batchnorm_global_stats_never_update(hybrid):
    x = _normal((4, 3, 2))
    net = _build(lambda: nn.BatchNorm(use_global_stats=True), nd.array(x), hybrid)
    with autograd.record():
        y = net(nd.array(x))
    y.backward()
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(net.running_var.data().asnumpy(), np.ones(3))
    assert_rel(y.asnumpy(), x / np.sqrt(1 + 1e-5), REF_TOL)


# ---- names, arguments and reprs of the added layers --------------------------------------

def test_activation_layers_names_and_args():
    with mx.name.NameManager():
        assert nn.LeakyReLU(0.1).prefix == 'leakyrelu0_'
        p = nn.PReLU()
        assert p.prefix == 'prelu0_' and p.alpha.name == 'prelu0_alpha'
        assert nn.ELU().prefix == 'elu0_' and nn.SELU().prefix == 'selu0_'
        assert nn.GELU().prefix == 'gelu0_' and nn.Swish().prefix == 'swish0_'
    assert repr(nn.LeakyReLU(0.1)) == 'LeakyReLU(0.1)'
    with pytest.raises(AssertionError):
        nn.LeakyReLU(-0.1)
    p = nn.PReLU(alpha_initializer=mx.init.Constant(0.1), in_channels=4)
    p.initialize()
    np.testing.assert_allclose(p.alpha.data().asnumpy(), np.full(4, 0.1), rtol=1e-7)
    p = nn.PReLU()
    p.initialize()
    np.testing.assert_allclose(p.alpha.data().asnumpy(), [0.25])  # MXNet's default
    out = p(nd.array([-2., 3.])).asnumpy()
    np.testing.assert_allclose(out, [-0.5, 3.])


def test_prelu_alpha_trains():
    """alpha gets the summed gradient of the negative inputs and a Trainer step moves it."""
    net = nn.PReLU(in_channels=2)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0})
    x = np.array([[-1., 2.], [-3., -4.]], dtype=np.float32)
    with autograd.record():
        y = net(nd.array(x)).sum()
    y.backward()
    np.testing.assert_allclose(net.alpha.grad().asnumpy(), [-4., -4.])
    trainer.step(1)
    np.testing.assert_allclose(net.alpha.data().asnumpy(), [4.25, 4.25])


def _node_names(net):
    graph = json.loads(net(mx.sym.var('data')).tojson())
    return [(n['op'], n['name']) for n in graph['nodes'] if n['op'] != 'null']


def test_traced_node_names_match_mxnet():
    with mx.name.NameManager():
        cases = [
            (nn.LeakyReLU(0.2), [('LeakyReLU', 'leakyrelu0_fwd')]),
            (nn.PReLU(), [('LeakyReLU', 'prelu0_fwd')]),
            (nn.ELU(), [('LeakyReLU', 'elu0_leakyrelu0')]),
            (nn.SELU(), [('LeakyReLU', 'selu0_fwd')]),
            (nn.GELU(), [('LeakyReLU', 'gelu0_fwd')]),
            (nn.Embedding(5, 2), [('Embedding', 'embedding0_fwd')]),
            (nn.Conv2DTranspose(2, 3), [('Deconvolution', 'conv0_fwd')]),
            (nn.ReflectionPad2D(1), [('Pad', 'reflectionpad2d0_pad0')]),
        ]
        for net, want in cases:
            assert _node_names(net) == want
        ops = [op for op, _ in _node_names(nn.Swish(2.0))]
        # MXNet writes elemwise_mul for Symbol * Symbol; hybridgluon's Symbol arithmetic
        # deliberately uses the broadcasting ops NDArray uses.
        assert ops[:2] == ['_mul_scalar', 'sigmoid']
        assert ops[2] in ('elemwise_mul', 'broadcast_mul') and len(ops) == 3
    graph = json.loads(nn.Conv2DTranspose(3, (2, 3), strides=2, output_padding=1, groups=1)(
        mx.sym.var('data')).tojson())
    node = [n for n in graph['nodes'] if n['op'] == 'Deconvolution'][0]
    assert node['attrs']['adj'] == '(1, 1)' and node['attrs']['kernel'] == '(2, 3)'
    assert node['attrs']['num_filter'] == '3' and node['attrs']['stride'] == '(2, 2)'
    pad = [n for n in json.loads(nn.ReflectionPad2D(2)(mx.sym.var('data')).tojson())['nodes']
           if n['op'] == 'Pad'][0]
    assert pad['attrs']['mode'] == 'reflect'
    assert pad['attrs']['pad_width'] == '(0, 0, 0, 0, 2, 2, 2, 2)'


def test_transposed_conv_args_and_repr():
    c = nn.Conv2DTranspose(8, 3, strides=2, padding=1, output_padding=1, in_channels=4)
    assert c.weight.shape == (4, 8, 3, 3) and c.bias.shape == (8,)
    assert c.outpad == (1, 1)
    assert c._kwargs['adj'] == (1, 1)
    # MXNet 1.x's repr: (weight.shape[1] -> weight.shape[0]), output_padding not shown
    assert repr(c) == ('Conv2DTranspose(8 -> 4, kernel_size=(3, 3), stride=(2, 2), '
                       'padding=(1, 1))')
    assert nn.Conv1DTranspose(2, 3, output_padding=1).outpad == (1,)
    assert nn.Conv3DTranspose(2, 3).weight.shape == (0, 2, 3, 3, 3)
    # channel-last: the weight is (in_channels, *kernel, channels / groups), as MXNet's shape
    # rule gives; the CPU kernel supports channel-first layouts only
    c = nn.Conv2DTranspose(4, 3, layout='NHWC', groups=2, in_channels=2)
    assert c.weight.shape == (2, 3, 3, 2)
    c.initialize()
    with pytest.raises(mx.MXNetError, match='layout'):
        c(nd.ones((1, 5, 5, 2)))
    with pytest.raises(AssertionError):
        nn.Conv2DTranspose(4, (3, 3, 3))
    with pytest.raises(AssertionError):
        nn.Conv2DTranspose(4, 3, output_padding=(1, 1, 1))
    with pytest.raises(AssertionError):
        nn.Conv1DTranspose(4, 3, layout='NWC')
    # output_padding must be smaller than strides
    net = nn.Conv2DTranspose(2, 3, strides=2, output_padding=2, in_channels=1)
    net.initialize()
    with pytest.raises(mx.MXNetError, match='adj'):
        net(nd.ones((1, 1, 3, 3)))
    net = nn.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    net.initialize()
    with pytest.raises(ValueError, match='adj'):  # wrapped by deferred initialisation
        net(nd.ones((1, 1, 3, 3)))


def test_reflection_pad_errors():
    with pytest.raises(AssertionError):
        nn.ReflectionPad2D((1, 2))
    net = nn.ReflectionPad2D(3)
    with pytest.raises(mx.MXNetError):
        net(nd.ones((1, 1, 3, 3)))  # a reflection needs pad < size


def test_hybrid_lambda_checks_both_namespaces():
    with pytest.raises(AssertionError):
        nn.HybridLambda('not_an_op')
    with pytest.raises(AssertionError):
        nn.Lambda('not_an_op')
    with pytest.raises(ValueError):
        nn.Lambda(3)
    assert repr(nn.HybridLambda('tanh')) == 'HybridLambda(tanh)'
    assert repr(nn.Lambda('tanh')) == 'Lambda(tanh)'


def test_basic_reprs_match_mxnet():
    assert repr(nn.Dense(3, activation='relu')) == 'Dense(None -> 3, Activation(relu))'
    assert repr(nn.Dense(3, in_units=4)) == 'Dense(4 -> 3, linear)'
    assert repr(nn.Flatten()) == 'Flatten'
    assert repr(nn.Activation('tanh')) == 'Activation(tanh)'
    with mx.name.NameManager():
        d = nn.Dense(2, activation='relu')
        assert d.act.prefix == 'dense0_relu_'
        assert nn.Activation('sigmoid').prefix == 'sigmoid0_'
        assert nn.Flatten().prefix == 'flatten0_'
        assert nn.Dropout(0.1).prefix == 'dropout0_'
