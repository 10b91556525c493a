"""The deep direct convolution (csrc/kernels/cpu/conv_deep.c): in a hybridized network's
inference, a 3x3 convolution (alone, or with the BatchNorm folded into it, exec/fold.c) with at
least 128 input channels and at most 128 output positions in the batch, where Winograd does not
take it (ResNet's last stage at batch 1 and 2), runs on weights the plan packed once and keeps.
The kernel runs on AVX2 + FMA CPUs without AVX-512.

It sums each output in (channel, tap row, tap column) order with fused multiply-adds, so it
rounds differently from im2col + GEMM: the tests compare with float64 references at 1e-5 of the
output's scale (a wrong tap, border or filter block moves outputs by O(1)), and check from the
plan's description that the packed weights are there, so that a route change cannot make them
pass on another kernel."""
import numpy as np
import pytest

import hybridgluon as mx
from conftest import run_python
from hybridgluon.gluon import nn
from test_grad_conv import conv_ref


def _cpu_takes_it():
    """AVX2 + FMA without AVX-512 (conv_deep.c, cpu_ok)."""
    try:
        with open('/proc/cpuinfo') as f:
            flags = f.read().split()
    except OSError:
        return False
    return 'avx2' in flags and 'fma' in flags and 'avx512f' not in flags


pytestmark = pytest.mark.skipif(not _cpu_takes_it(),
                                reason='the kernel runs on AVX2 CPUs without AVX-512')

EPS = 1e-5

# N, C, H (= W), filters, stride, pad
CASES = [
    (1, 128, 7, 200, 1, 1),    # ResNet's last stage, smaller; filters not a multiple of 16
    (1, 256, 14, 512, 2, 1),   # its stride-2 layer into 7x7
    (2, 128, 7, 200, 1, 0),    # two images, no padding (5x5 outputs)
    (1, 136, 9, 144, 2, 2),    # channels past a block of 64; padding 2 at stride 2
    (1, 192, 6, 257, 1, 1),    # one filter in the last block
    (2, 160, 5, 140, 2, 1),    # 3x3 outputs: positions in one partial tile per image
]


def _build(case, rs, relu=True, bias=False, bn=True):
    n, c, h, f, s, p = case
    net = nn.HybridSequential()
    net.add(nn.Conv2D(f, 3, strides=s, padding=p, in_channels=c, use_bias=bias))
    if bn:
        net.add(nn.BatchNorm(in_channels=f))
    if relu:
        net.add(nn.Activation('relu'))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(rs.randn(n, c, h, h).astype(np.float32))
    net(x)
    for prm in net.collect_params().values():  # statistics away from (0, 1)
        if prm.name.endswith('running_mean'):
            prm.set_data(mx.nd.array(rs.randn(*prm.shape).astype(np.float32) * 0.3))
        elif prm.name.endswith(('running_var', 'gamma')):
            prm.set_data(mx.nd.array(rs.uniform(0.5, 2.0, prm.shape).astype(np.float32)))
        elif prm.name.endswith('beta') or (bias and prm.name.endswith('bias')):
            prm.set_data(mx.nd.array(rs.randn(*prm.shape).astype(np.float32) * 0.2))
    return net, x


def _param(net, suffix):
    return [p for p in net.collect_params().values() if p.name.endswith(suffix)][0]


def _reference(net, x, case, relu, bn=True):
    """float64: the convolution of the float32 values, BatchNorm with the moving statistics."""
    _, _, _, f, s, p = case
    w = _param(net, 'weight').data().asnumpy().astype('f8')
    y = conv_ref(x.asnumpy().astype('f8'), w, (3, 3), (s, s), (1, 1), (p, p), 1)
    b = [q for q in net.collect_params().values() if q.name.endswith('_bias')]
    if b:
        y = y + b[0].data().asnumpy().astype('f8').reshape(1, -1, 1, 1)
    if not bn:
        return np.maximum(y, 0) if relu else y
    stat = {k: _param(net, k).data().asnumpy().astype('f8').reshape(1, -1, 1, 1)
            for k in ('gamma', 'beta', 'running_mean', 'running_var')}
    y = (y - stat['running_mean']) / np.sqrt(stat['running_var'] + EPS) * stat['gamma'] + \
        stat['beta']
    return np.maximum(y, 0) if relu else y


def _close(out, ref):
    np.testing.assert_allclose(out.astype('f8'), ref, rtol=1e-5,
                               atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def _packed(net):
    return 'weights kept packed' in net._cached_op.stats()['plan']


@pytest.mark.parametrize('case', CASES)
def test_forward_matches_float64(case, threads):
    rs = np.random.RandomState(0)
    for relu, bias in ((True, False), (False, True)):
        net, x = _build(case, rs, relu=relu, bias=bias)
        net.hybridize(static_alloc=True, static_shape=True)
        for _ in range(2):  # the first call packs the weights, the second reuses them
            _close(net(x).asnumpy(), _reference(net, x, case, relu))
        assert _packed(net), net._cached_op.stats()['plan']


@pytest.mark.parametrize('case', CASES[:3])
def test_convolution_without_batchnorm(case, threads):
    """A convolution step of its own (no BatchNorm to fold: VGG, ResNet v2) keeps packed
    weights too, and packs again after its weights change."""
    rs = np.random.RandomState(4)
    net, x = _build(case, rs, relu=True, bias=True, bn=False)
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(2):
        _close(net(x).asnumpy(), _reference(net, x, case, True, bn=False))
    assert _packed(net), net._cached_op.stats()['plan']
    w = _param(net, 'weight')
    w.set_data(mx.nd.array(rs.randn(*w.shape).astype(np.float32)))
    _close(net(x).asnumpy(), _reference(net, x, case, True, bn=False))
    w.data()[0:1] = w.data()[0:1] * 3
    _close(net(x).asnumpy(), _reference(net, x, case, True, bn=False))


def test_packed_weights_follow_changes():
    """New weights, gamma or moving variance: the next call packs again."""
    case = CASES[0]
    rs = np.random.RandomState(1)
    net, x = _build(case, rs)
    net.hybridize(static_alloc=True, static_shape=True)
    _close(net(x).asnumpy(), _reference(net, x, case, True))
    w = _param(net, 'weight')
    w.set_data(mx.nd.array(rs.randn(*w.shape).astype(np.float32)))
    _close(net(x).asnumpy(), _reference(net, x, case, True))
    g = _param(net, 'gamma').data()
    g += 0.5
    _close(net(x).asnumpy(), _reference(net, x, case, True))
    v = _param(net, 'running_var').data()
    v[:] = v * 4
    _close(net(x).asnumpy(), _reference(net, x, case, True))
    assert _packed(net)


def test_training_and_other_shapes_keep_their_routes():
    """Training (batch statistics), a large batch and few channels pack nothing."""
    rs = np.random.RandomState(2)
    net, x = _build(CASES[0], rs)
    net.hybridize(static_alloc=True, static_shape=True)
    with mx.autograd.record():
        net(x)
    assert not _packed(net)
    big, xb = _build((8, 128, 7, 200, 1, 1), rs)  # 392 positions
    big.hybridize()
    big(xb)
    assert not _packed(big)
    few, xf = _build((1, 64, 7, 300, 1, 1), rs)
    few.hybridize()
    few(xf)
    assert not _packed(few)


def test_switch_off_gives_the_same_outputs():
    """HG_NO_CONV_DEEP=1 (read once) keeps the layer on im2col + GEMM: no packed weights, and
    the same values up to rounding."""
    import os
    code = (
        'import sys, numpy as np\n'
        'sys.path.insert(0, %r)\n'
        'import test_conv_deep as t\n'
        'net, x = t._build(t.CASES[1], np.random.RandomState(3))\n'
        'net.hybridize()\n'
        't._close(net(x).asnumpy(), t._reference(net, x, t.CASES[1], True))\n'
        'print("packed" if t._packed(net) else "not packed")\n'
    ) % os.path.dirname(os.path.abspath(__file__))
    for env, want in (({'HG_NO_CONV_DEEP': '1'}, 'not packed'), ({}, 'packed')):
        r = run_python(['-c', code], env=dict(os.environ, **env))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().splitlines()[-1] == want


def test_computed_weights_are_not_kept():
    """Weights the graph computes (here twice a parameter, which is also an output and so
    lives in fresh memory at every call) are taken as they are, never kept packed: a copy
    made at every call would only add a pass over them."""

    class Scaled(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.weight = self.params.get('weight', shape=(200, 128, 3, 3))

        def hybrid_forward(self, F, x, weight):
            w2 = weight * 2  # also an output: fresh memory at every call, not the arena's
            return F.Convolution(x, w2, kernel=(3, 3), pad=(1, 1), num_filter=200,
                                 no_bias=True), w2

    rs = np.random.RandomState(5)
    x = mx.nd.array(rs.randn(1, 128, 7, 7).astype(np.float32))
    for static in (True, False):  # the product in the plan's arena, or in fresh memory
        net = Scaled()
        net.initialize(mx.init.Xavier())
        net.hybridize(static_alloc=static, static_shape=static)
        for _ in range(2):
            w = net.weight.data().asnumpy().astype('f8') * 2
            ref = conv_ref(x.asnumpy().astype('f8'), w, (3, 3), (1, 1), (1, 1), (1, 1), 1)
            _close(net(x)[0].asnumpy(), ref)
            net.weight.set_data(mx.nd.array(rs.randn(200, 128, 3, 3).astype(np.float32)))
        assert not _packed(net), net._cached_op.stats()['plan']
