"""A pointwise convolution (+ BatchNorm + ReLU/clip) and the depthwise convolution (+ BatchNorm
+ ReLU/clip) that alone reads it run as one step in inference (exec/fold.c, kernels/cpu/pwdw.c):
the expanded tensor is made a group of channels at a time into a per-thread buffer and never
written out. Checked against a float64 NumPy reference of the four (six) layers, against the
plan with the pairing switched off (HG_NO_PWDW=1), and in training (batch statistics: the two
steps run as they are)."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import nn


def _act(kind):
    if kind == 'relu':
        return nn.Activation('relu')
    if kind == 'clip':
        return nn.HybridLambda(lambda F, x: F.clip(x, 0, 6))
    return None


def _pair(C, F, stride, post1, post2, use_bias, k=3):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(F, 1, in_channels=C, use_bias=use_bias), nn.BatchNorm(in_channels=F))
    if _act(post1):
        net.add(_act(post1))
    net.add(nn.Conv2D(F, k, strides=stride, padding=k // 2, groups=F, in_channels=F,
                      use_bias=use_bias),
            nn.BatchNorm(in_channels=F))
    if _act(post2):
        net.add(_act(post2))
    net.initialize(mx.init.Xavier())
    rng = np.random.default_rng(C * 131 + F)
    for p in net.collect_params().values():
        name = p.name
        if 'running_var' in name:
            p.set_data(mx.nd.array(rng.uniform(0.5, 2, p.shape)))
        elif 'running_mean' in name or 'beta' in name:
            p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
        elif 'gamma' in name:
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif 'bias' in name:
            p.set_data(mx.nd.array(rng.uniform(-0.3, 0.3, p.shape)))
    return net


def _ref(net, x, stride, post1, post2, k=3):
    """float64 NumPy: conv1x1, BN, act, depthwise kxk (pad k//2), BN, act."""
    convs = [b for b in net._children.values() if isinstance(b, nn.Conv2D)]
    bns = [b for b in net._children.values() if isinstance(b, nn.BatchNorm)]

    def bn(y, b):
        g, be = b.gamma.data().asnumpy(), b.beta.data().asnumpy()
        m, v = b.running_mean.data().asnumpy(), b.running_var.data().asnumpy()
        s = (g / np.sqrt(v.astype('f8') + 1e-5))[None, :, None, None]
        return (y - m[None, :, None, None]) * s + be[None, :, None, None]

    def act(y, kind):
        if kind == 'relu':
            return np.maximum(y, 0)
        if kind == 'clip':
            return np.clip(y, 0, 6)
        return y
    x = x.astype('f8')
    w1 = convs[0].weight.data().asnumpy().astype('f8')[:, :, 0, 0]
    y = np.einsum('fc,nchw->nfhw', w1, x)
    if convs[0].bias is not None:
        y = y + convs[0].bias.data().asnumpy()[None, :, None, None]
    y = act(bn(y, bns[0]), post1)
    w2 = convs[1].weight.data().asnumpy().astype('f8')[:, 0]
    N, F, H, W = y.shape
    p = k // 2
    yp = np.zeros((N, F, H + 2 * p, W + 2 * p))
    yp[:, :, p:p + H, p:p + W] = y
    Ho, Wo = (H + 2 * p - k) // stride + 1, (W + 2 * p - k) // stride + 1
    out = np.zeros((N, F, Ho, Wo))
    for a in range(k):
        for b in range(k):
            out += w2[None, :, a, b, None, None] * \
                yp[:, :, a:a + stride * (Ho - 1) + 1:stride, b:b + stride * (Wo - 1) + 1:stride]
    if convs[1].bias is not None:
        out = out + convs[1].bias.data().asnumpy()[None, :, None, None]
    return act(bn(out, bns[1]), post2)


def _hybrid(net, x, pwdw=True):
    old = os.environ.pop('HG_NO_PWDW', None)
    if not pwdw:
        os.environ['HG_NO_PWDW'] = '1'
    try:
        net.hybridize(False)
        net.hybridize(static_alloc=True)
        out = net(x).asnumpy()
        return out, net._cached_op.stats()
    finally:
        os.environ.pop('HG_NO_PWDW', None)
        if old is not None:
            os.environ['HG_NO_PWDW'] = old


CASES = [
    # (N, C, H, W), F, stride, post1, post2, bias
    ((2, 16, 56, 56), 96, 1, 'clip', 'clip', False),   # groups of 48 channels (56x56 planes)
    ((1, 16, 112, 112), 24, 2, 'clip', 'clip', False),  # the buffer's limit: groups of 12
    ((3, 8, 9, 7), 40, 2, 'relu', None, True),          # odd sizes, a last partial group
    ((1, 24, 14, 14), 144, 1, 'clip', 'clip', False),   # small planes: the blocked dw kernel
    ((2, 32, 7, 7), 200, 2, None, 'relu', True),        # no post-op on the expansion
    ((4, 3, 1, 1), 5, 1, 'relu', 'relu', True),         # 1-element planes
    ((1, 1, 5, 6), 2, 1, 'clip', None, False),          # one channel in
]


@pytest.mark.parametrize('xshape,F,stride,post1,post2,bias', CASES)
def test_pointwise_depthwise_pair_matches_reference(xshape, F, stride, post1, post2, bias):
    net = _pair(xshape[1], F, stride, post1, post2, bias)
    rng = np.random.default_rng(sum(xshape) + F)
    x = rng.standard_normal(xshape).astype('f4')
    ref = _ref(net, x, stride, post1, post2)
    imp = net(mx.nd.array(x)).asnumpy()
    fused, st = _hybrid(net, mx.nd.array(x))
    assert 'runs the pointwise step before it too' in st['plan'], st['plan']
    assert 'made inside the depthwise step' in st['plan'], st['plan']
    sep, st2 = _hybrid(net, mx.nd.array(x), pwdw=False)
    assert 'pointwise step' not in st2['plan'], st2['plan']
    tol = dict(rtol=2e-5, atol=2e-5 * max(1.0, np.abs(ref).max()))
    for got in (imp, fused, sep):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, **tol)
    # the same arithmetic as the two steps, up to the route of the product
    np.testing.assert_allclose(fused, sep, rtol=1e-5, atol=1e-6)


def test_pair_input_made_inside_the_plan_lives_until_the_pair_runs():
    """The pair's input is a value of the plan (a stem convolution's) that nothing reads after
    the pointwise step: the depthwise step still reads it, so its block must not be handed to
    that step's output (which it would fit: 16 -> 32 channels at stride 2 is half the size)."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, in_channels=3), nn.Activation('relu'))
    pair = _pair(16, 32, 2, 'clip', 'clip', False)
    net.add(pair)
    net[0].initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(8).standard_normal((2, 3, 20, 20)).astype('f4'))
    stem = net[1](net[0](x)).asnumpy()
    ref = _ref(pair, stem, 2, 'clip', 'clip')
    fused, st = _hybrid(net, x)
    assert 'made inside the depthwise step' in st['plan'], st['plan']
    sep, _ = _hybrid(net, x, pwdw=False)
    np.testing.assert_allclose(fused, ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(fused, sep, rtol=1e-6, atol=1e-6)


def test_empty_batch_runs_the_pair():
    net = _pair(8, 16, 1, 'clip', 'clip', False)
    x = mx.nd.zeros((1, 8, 6, 6))
    net(x)
    out, st = _hybrid(net, mx.nd.zeros((0, 8, 6, 6)))
    assert out.shape == (0, 16, 6, 6)


def test_pair_in_training_runs_unfused_with_batch_statistics():
    net = _pair(8, 24, 2, 'clip', 'clip', False)
    x = mx.nd.array(np.random.default_rng(3).standard_normal((4, 8, 10, 10)).astype('f4'))
    with mx.autograd.train_mode():
        imp = net(x).asnumpy()
    net.hybridize(static_alloc=True)
    with mx.autograd.train_mode():
        hyb = net(x).asnumpy()
    np.testing.assert_allclose(hyb, imp, rtol=1e-5, atol=1e-5)
    # and the inference call after it is the fused one, with the moving statistics
    _, st = _hybrid(net, x)
    assert 'made inside the depthwise step' in st['plan'], st['plan']
    # gradients through the hybridized pair equal the imperative ones
    grads = []
    for hybrid in (False, True):
        net.hybridize(hybrid)
        with mx.autograd.record():
            y = (net(x) * mx.nd.arange(imp.size).reshape(imp.shape)).sum()
        y.backward()
        grads.append([p.grad().asnumpy().copy() for p in net.collect_params().values()
                      if p.grad_req != 'null'])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


class _Shared(mx.gluon.HybridBlock):
    """The expansion's output is read twice (the depthwise layer and an add): not paired."""

    def __init__(self):
        super().__init__()
        self.pw = nn.Conv2D(8, 1, in_channels=8, use_bias=False)
        self.bn = nn.BatchNorm(in_channels=8)
        self.dw = nn.Conv2D(8, 3, padding=1, groups=8, in_channels=8, use_bias=False)
        self.bn2 = nn.BatchNorm(in_channels=8)

    def hybrid_forward(self, F, x):
        e = F.clip(self.bn(self.pw(x)), 0, 6)
        return self.bn2(self.dw(e)) + e


def test_expansion_read_elsewhere_is_not_paired():
    net = _Shared()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(4).standard_normal((2, 8, 12, 12)).astype('f4'))
    ref = net(x).asnumpy()
    out, st = _hybrid(net, x)
    assert 'pointwise step' not in st['plan'], st['plan']
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_deep_layer_with_more_weights_than_outputs_is_not_paired():
    """MobileNetV2's 7x7 stage at batch 1: the pair would fold 153600 weights at every call
    for 47040 outputs; alone, the fold scales the output. At batch 4 the pair forms."""
    net = _pair(160, 960, 1, 'clip', 'clip', False)
    for n, paired in ((1, False), (4, True)):
        x = mx.nd.array(np.random.default_rng(n).standard_normal((n, 160, 7, 7)).astype('f4'))
        ref = _ref(net, x.asnumpy(), 1, 'clip', 'clip')
        out, st = _hybrid(net, x)
        assert ('made inside the depthwise step' in st['plan']) == paired, st['plan']
        np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


def test_plane_larger_than_the_buffer_is_not_paired():
    net = _pair(1, 2, 1, 'relu', 'relu', False)
    x = mx.nd.array(np.random.default_rng(6).standard_normal((1, 1, 410, 410)).astype('f4'))
    ref = _ref(net, x.asnumpy(), 1, 'relu', 'relu')
    out, st = _hybrid(net, x)
    assert 'pointwise step' not in st['plan'], st['plan']
    np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)


def test_mobilenet_v2_fused_equals_unfused():
    net = mx.gluon.model_zoo.vision.get_model('mobilenetv2_0.25')
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.default_rng(7).uniform(size=(2, 3, 96, 96)).astype('f4'))
    imp = net(x).asnumpy()
    fused, st = _hybrid(net, x)
    # 17 bottlenecks; the last stage's three (40 -> 240 channels on 3x3 planes: 9600 weights,
    # 4320 outputs) keep their steps apart, where the fold scales the output
    assert st['plan'].count('made inside the depthwise step') == 14, st['plan']
    sep, _ = _hybrid(net, x, pwdw=False)
    scale = np.abs(imp).max()
    np.testing.assert_allclose(fused, sep, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(fused, imp, rtol=0, atol=1e-5 * scale)
