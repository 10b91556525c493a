"""Convolution benchmark (issue: convnets): Conv2D 3x3, 64->64 channels, 56x56, pad 1, batch 8,
float32. Reports the GFLOP/s of our `mx.nd.Convolution` and of a hybridized nn.Conv2D beside the
GFLOP/s of the sgemm the layer reduces to, measured in the same run through our own GEMM path:
`mx.nd.dot` of the im2col-shaped product (64 x 576) . (576 x 25088), the whole batch's
convolution as one matrix product, and of a square 1024 x 1024 . 1024 x 1024. Target:
convolution >= 70% of the faster of the two (in GFLOP/s). PyTorch's conv2d and
real MXNet 1.9.1's Convolution run the same layer in their own processes (peers.py), rounds
interleaved. Also our forward + backward (data, weight and bias gradients) of the layer.

    python benchmarks/bench_conv.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, fmt_time, peer_workload  # noqa: E402
import peers  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import numpy as np  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon import autograd  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402

N, C, F, H, W, KS = 8, 64, 64, 56, 56, 3
FLOPS = 2.0 * N * F * H * W * C * KS * KS  # pad 1 keeps 56x56
SGEMM = 'sgemm, hybridgluon mx.nd.dot (64x576).(576x25088)'
SQUARE = 'sgemm, hybridgluon mx.nd.dot 1024^3'
SQUARE_FLOPS = 2.0 * 1024 ** 3


def _ours():
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((N, C, H, W), dtype=np.float32))
    a = mx.nd.array(rng.standard_normal((F, C * KS * KS), dtype=np.float32))
    col = mx.nd.array(rng.standard_normal((C * KS * KS, N * H * W), dtype=np.float32))
    layer = nn.Conv2D(F, KS, padding=1, in_channels=C)
    layer.initialize()
    layer.hybridize(static_alloc=True, static_shape=True)
    xg = x.copy()
    xg.attach_grad()

    def hybrid():
        layer(x).wait_to_read()

    def train():
        with autograd.record():
            y = layer(xg)
        y.backward()
        xg.grad.wait_to_read()
    return ({SGEMM: lambda: mx.nd.dot(a, col).wait_to_read(),
             SQUARE: wg.sgemm(mx, k=1024),
             'hybridgluon mx.nd.Convolution': wg.conv3x3(mx, batch=N, channels=C, size=H),
             'hybridgluon nn.Conv2D hybridized': hybrid},
            {'hybridgluon nn.Conv2D hybridized': train})


def run(quick=False):
    rep, number = (3, 3) if quick else (7, 10)
    fwd, train = _ours()
    for fw in ('torch', 'mxnet'):
        r = peer_workload(fw, 'conv3x3', batch=N, channels=C, size=H)
        if r is not None:
            fwd['%s conv (own process)' % fw] = r
    res = compare(fwd, rep, number)
    tr = compare(train, rep, max(1, number // 2))
    peak = max(FLOPS / res[SGEMM], SQUARE_FLOPS / res[SQUARE])  # GFLOP/s of the better sgemm
    ref = FLOPS / peak  # the time the layer's flops take at that rate
    lines = ['### Conv2D 3x3, 64->64, 56x56, pad 1, batch 8, float32 (%.2f GFLOP per forward; '
             'medians)' % (FLOPS / 1e9), '',
             '| variant | time | GFLOP/s | % of our better sgemm |', '|---|---|---|---|']
    for k, t in res.items():
        fl = SQUARE_FLOPS if k == SQUARE else FLOPS
        lines.append('| %s | %s | %.1f | %.0f%% |' % (k, fmt_time(t), fl / t / 1e9,
                                                      100.0 * fl / t / peak))
    for k, t in tr.items():  # forward + data gradient + weight gradient: 3 products that size
        lines.append('| %s, forward + backward (data, weight, bias) | %s | %.1f | %.0f%% |'
                     % (k, fmt_time(t), 3 * FLOPS / t / 1e9, 100.0 * 3 * ref / t))
    lines += ['', 'Target: our convolution >= 70%% of our better sgemm (%.1f GFLOP/s): '
              'mx.nd.Convolution %.0f%%, hybridized nn.Conv2D %.0f%%.' % (
                  peak / 1e9, 100.0 * ref / res['hybridgluon mx.nd.Convolution'],
                  100.0 * ref / res['hybridgluon nn.Conv2D hybridized'])]
    return '\n'.join(lines)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
    peers.close_all()
