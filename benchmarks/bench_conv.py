"""Convolution benchmark (issue: convnets): Conv2D 3x3, 64->64 channels, 56x56, pad 1, batch 8,
float32. Reports the GFLOP/s our `mx.nd.Convolution` (and a hybridized nn.Conv2D) achieve beside
the GFLOP/s of the sgemm it reduces to, measured in the same run through our own GEMM path:
`mx.nd.dot` of the im2col-shaped product (64 x 576) . (576 x 25088), the whole batch's
convolution as one matrix product. Target: convolution >= 70% of that sgemm. PyTorch's conv2d
(CPU, same thread count) stands beside them. Also the forward + backward (data and weight
gradients) of the same layer.

    python benchmarks/bench_conv.py [--quick]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, fmt_time, try_torch  # noqa: E402

import numpy as np  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon import autograd  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402

N, C, F, H, W, KS = 8, 64, 64, 56, 56, 3
FLOPS = 2.0 * N * F * H * W * C * KS * KS  # multiply-adds x 2 (pad 1 keeps 56x56)


def _cases(torch):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((N, C, H, W), dtype=np.float32)
    wn = rng.standard_normal((F, C, KS, KS), dtype=np.float32) * 0.05
    bn = rng.standard_normal(F, dtype=np.float32)
    x, w, b = mx.nd.array(xn), mx.nd.array(wn), mx.nd.array(bn)
    # The sgemm the convolution reduces to: W[F, C*9] . col[C*9, N*H*W].
    a = mx.nd.array(rng.standard_normal((F, C * KS * KS), dtype=np.float32))
    col = mx.nd.array(rng.standard_normal((C * KS * KS, N * H * W), dtype=np.float32))

    def sgemm():
        mx.nd.dot(a, col).wait_to_read()

    def nd_conv():
        mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=F).wait_to_read()

    layer = nn.Conv2D(F, KS, padding=1, in_channels=C)
    layer.initialize()
    layer.hybridize(static_alloc=True, static_shape=True)

    def hybrid_conv():
        layer(x).wait_to_read()

    xg = x.copy()
    xg.attach_grad()
    layer.collect_params().setattr('grad_req', 'write')

    def hybrid_train():
        with autograd.record():
            y = layer(xg)
        y.backward()
        xg.grad.wait_to_read()

    fwd = {'sgemm (hybridgluon mx.nd.dot 64x576 . 576x25088)': sgemm,
           'hybridgluon mx.nd.Convolution': nd_conv,
           'hybridgluon nn.Conv2D hybridized': hybrid_conv}
    train = {'hybridgluon nn.Conv2D hybridized': hybrid_train}
    if torch:
        tx, tw, tb = torch.from_numpy(xn), torch.from_numpy(wn), torch.from_numpy(bn)
        ta, tcol = torch.from_numpy(a.asnumpy()), torch.from_numpy(col.asnumpy())

        def t_sgemm():
            torch.mm(ta, tcol)

        def t_conv():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, tb, padding=1)

        txg, twg, tbg = (t.clone().requires_grad_() for t in (tx, tw, tb))

        def t_train():
            txg.grad = twg.grad = tbg.grad = None
            torch.nn.functional.conv2d(txg, twg, tbg, padding=1).backward(
                torch.ones(N, F, H, W))

        fwd['sgemm (torch.mm, same shape)'] = t_sgemm
        fwd['torch conv2d'] = t_conv
        train['torch conv2d'] = t_train
    return fwd, train


def run(quick=False):
    torch = try_torch()
    rep, number = (3, 3) if quick else (7, 10)
    fwd, train = _cases(torch)
    res = compare(fwd, rep, number)
    tr = compare(train, rep, max(1, number // 2))
    ref = res['sgemm (hybridgluon mx.nd.dot 64x576 . 576x25088)']
    lines = ['### Conv2D 3x3, 64->64, 56x56, pad 1, batch 8, float32 (%.2f GFLOP per call; '
             'medians)' % (FLOPS / 1e9), '',
             '| variant | time | GFLOP/s | % of our sgemm |', '|---|---|---|---|']
    for k, t in res.items():
        lines.append('| %s | %s | %.1f | %.0f%% |' % (k, fmt_time(t), FLOPS / t / 1e9,
                                                      100.0 * ref / t))
    for k, t in tr.items():
        # forward + data gradient + weight gradient: three products of the forward's size
        lines.append('| %s, forward + backward (data, weight, bias) | %s | %.1f | %.0f%% |'
                     % (k, fmt_time(t), 3 * FLOPS / t / 1e9, 100.0 * 3 * ref / t))
    lines.append('')
    lines.append('Target: our convolution >= 70%% of our sgemm: mx.nd.Convolution %.0f%%, '
                 'hybridized %.0f%%.' % (100.0 * ref / res['hybridgluon mx.nd.Convolution'],
                                         100.0 * ref / res['hybridgluon nn.Conv2D hybridized']))
    return '\n'.join(lines)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
