"""hybridize benchmarks (issue: symbols/executor): the seeds' 512-256-128-2 MLP at batch 1,
1000 forwards before and after hybridize, beside PyTorch eager, torch.jit.trace, torch.compile
and ONNX Runtime; and a
20-layer MLP's internal memory with and without the executor releasing values early."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, peer_workload, peers_available, table  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402


def _mlp(widths):
    net = nn.HybridSequential()
    with net.name_scope():
        for w in widths[:-1]:
            net.add(nn.Dense(w, activation='relu'))
        net.add(nn.Dense(widths[-1]))
    net.initialize()
    return net


def run(quick=False):
    peers = ['hybridgluon', 'hybridgluon imperative']
    avail = peers_available()
    if 'mxnet' in avail:
        peers += ['mxnet', 'mxnet imperative']
    if 'torch' in avail:
        peers += ['torch', 'torch.jit']
    extra = [p for p in peers_available(('onnxruntime', 'torch.compile')) if p not in avail]
    peers += extra  # issue 16's inference engines, each in its own worker
    rep, number = (5, 300) if quick else (9, 1000)
    cases = {'hybridgluon': wg.mlp_forward(mx, hybrid=True),
             'hybridgluon imperative': wg.mlp_forward(mx, hybrid=False),
             'mxnet': peer_workload('mxnet', 'mlp_forward', hybrid=True),
             'mxnet imperative': peer_workload('mxnet', 'mlp_forward', hybrid=False),
             'torch': peer_workload('torch', 'mlp_forward'),
             'torch.jit': peer_workload('torch', 'mlp_forward', jit=True)}
    cases.update({p: peer_workload(p, 'mlp_forward') for p in extra})
    res = compare(cases, rep, number)
    rows = [('MLP 512-256-128-2, batch 1, one forward', res,
             'hybridized / imperative speed-up %.2fx; target >= 3x and <= 10 us'
             % (res['hybridgluon imperative'] / res['hybridgluon']))]
    text = table('hybridize (medians; ratio > 1 means hybridized hybridgluon is faster)', rows,
                 peers)
    deep = _mlp([256] * 19 + [10])
    xd = mx.nd.ones((64, 256))

    def peak_bytes(record):
        """Tensor memory one forward needed beyond what existed before it (output included)."""
        base = mx._core.alloc_stats(True)['live']
        if record:
            with mx.autograd.record():
                out = deep(xd)
        else:
            out = deep(xd)
        out.wait_to_read()
        return mx._core.alloc_stats()['peak'] - base

    deep(xd)
    imperative = peak_bytes(False), peak_bytes(True)
    deep.hybridize()
    deep(xd)
    with mx.autograd.record():
        deep(xd)
    hybrid = peak_bytes(False), peak_bytes(True)
    st = deep._cached_op.stats()
    kib = 1.0 / 1024
    text += ('\n\n20-layer MLP (batch 64, width 256), one forward: %d kernels hybridized; planned '
             'internal memory %.1f KiB vs %.1f KiB if every intermediate were kept (%.1fx less). '
             'Tensor memory a call needs (allocator peak, output included): hybridized %.1f KiB, '
             'imperative %.1f KiB; under autograd.record (kept for backward) hybridized %.1f KiB, '
             'imperative %.1f KiB.'
             % (st['kernels'], st['peak_internal_bytes'] * kib,
                st['unplanned_internal_bytes'] * kib,
                st['unplanned_internal_bytes'] / max(1, st['peak_internal_bytes']),
                hybrid[0] * kib, imperative[0] * kib, hybrid[1] * kib, imperative[1] * kib))
    return text


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
