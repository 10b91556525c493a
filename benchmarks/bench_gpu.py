"""GPU rows: hybridgluon on gpu(0) against PyTorch CUDA, the same architectures (the seeds' MLP
and LeNet; resnet18_v1 and mobilenetv2_1.0 from benchmarks/workloads_torch.py), random data and
weights, float32, TF32 off on both sides. A training step is forward, softmax cross-entropy,
backward and an SGD-with-momentum update; inference is a forward pass. Each timing is the median
over rounds of a synchronised call (waitall / torch.cuda.synchronize), after warm-up.

hybridgluon's network is hybridized with static_alloc and static_shape, so inference replays
one CUDA graph per call (docs/gpu.md); the "op by op" column is the same network hybridized
without them, which launches its kernels one by one. Training steps record on the tape and run
op by op (no plans on a GPU yet). A row whose network needs an op without a GPU kernel says
which. PyTorch runs eagerly (no torch.compile, no CUDA graphs).

    python benchmarks/bench_gpu.py [--rounds 20] [--out benchmarks/RESULTS_GPU.md]

The file it writes is the GPU section that benchmarks/run.py puts into RESULTS.md (the CPU
machine that runs run.py has no GPU).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _median_ms(fn, sync, rounds, warmup=3):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


# ---- hybridgluon -------------------------------------------------------------------------------

def _hg_net(mx, name):
    from hybridgluon.gluon import nn
    from hybridgluon.gluon.model_zoo import vision
    if name == 'mlp':
        net = nn.HybridSequential()
        net.add(nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'),
                nn.Dense(10))
        return net, (784,)
    if name == 'lenet':
        net = nn.HybridSequential()
        net.add(nn.Conv2D(6, 5, activation='relu'), nn.MaxPool2D(2, 2),
                nn.Conv2D(16, 3, activation='relu'), nn.MaxPool2D(2, 2),
                nn.Flatten(), nn.Dense(120, activation='relu'), nn.Dense(84, activation='relu'),
                nn.Dense(10))
        return net, (1, 28, 28)
    return vision.get_model(name, classes=1000), (3, 224, 224)


def hg_rows(name, batches, rounds):
    import hybridgluon as mx
    ctx = mx.gpu(0)
    net, shape = _hg_net(mx, name)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    sync = mx.nd.waitall
    out = {}
    rs = np.random.RandomState(0)
    for b in batches['infer']:
        x = mx.nd.array(rs.rand(b, *shape).astype(np.float32), ctx=ctx)
        net.hybridize(static_alloc=True, static_shape=True)
        out['infer', b] = _median_ms(lambda: net(x), sync, rounds)
        graph = net._cached_op.stats()['cuda_graph']
        if graph['state'] != 'recorded':
            print('%s batch %d: no CUDA graph (%s)' % (name, b, graph['why']), flush=True)
        net.hybridize()
        out['eager', b] = _median_ms(lambda: net(x), sync, rounds)
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.01, 'momentum': 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for b in batches['train']:
        x = mx.nd.array(rs.rand(b, *shape).astype(np.float32), ctx=ctx)
        y = mx.nd.array(rs.randint(0, 10, b).astype(np.float32), ctx=ctx)

        def step():
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(b)
        out['train', b] = _median_ms(step, sync, rounds)
    return out


# ---- PyTorch -----------------------------------------------------------------------------------

def _torch_net(torch, name):
    from torch import nn
    import workloads_torch as wt
    if name == 'mlp':
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10)), (784,)
    if name == 'lenet':
        return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
                             nn.Conv2d(6, 16, 3), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10)), (1, 28, 28)
    return wt.MODELS[name](), (3, 224, 224)


def torch_rows(name, batches, rounds):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device('cuda:0')
    net, shape = _torch_net(torch, name)
    net = net.to(dev)
    sync = torch.cuda.synchronize
    out = {}
    net.eval()
    for b in batches['infer']:
        x = torch.rand(b, *shape, device=dev)

        def fwd():
            with torch.inference_mode():
                return net(x)
        out['infer', b] = _median_ms(fwd, sync, rounds)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for b in batches['train']:
        x = torch.rand(b, *shape, device=dev)
        y = torch.randint(0, 10, (b,), device=dev)

        def step():
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        out['train', b] = _median_ms(step, sync, rounds)
    return out


def copy_rows(rounds, mib=64):
    """Host <-> GPU copies of a float32 array from ordinary (pageable) NumPy memory: hybridgluon
    (nd.array(ctx=gpu), asnumpy) against PyTorch (from_numpy().to('cuda'), .cpu().numpy());
    GiB/s from the median time."""
    import torch
    import hybridgluon as mx
    x = np.random.RandomState(0).rand(mib << 18).astype(np.float32)
    nbytes = x.nbytes
    a = mx.nd.array(x, ctx=mx.gpu(0))
    t = torch.from_numpy(x).to('cuda')
    rows = {
        'host to GPU': (_median_ms(lambda: mx.nd.array(x, ctx=mx.gpu(0)), mx.nd.waitall, rounds),
                        _median_ms(lambda: torch.from_numpy(x).to('cuda'),
                                   torch.cuda.synchronize, rounds)),
        'GPU to host': (_median_ms(a.asnumpy, mx.nd.waitall, rounds),
                        _median_ms(lambda: t.cpu().numpy(), torch.cuda.synchronize, rounds)),
    }
    gib = nbytes / float(1 << 30)
    return ['| copy %s, %d MiB (GiB/s) | %.1f | | %.1f | %.2fx |'
            % (k, mib, gib / (ours / 1e3), gib / (theirs / 1e3), theirs / ours)
            for k, (ours, theirs) in rows.items()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--models', default='mlp,lenet,resnet18_v1,mobilenetv2_1.0')
    ap.add_argument('--out')
    ap.add_argument('--copies', action='store_true', help='also time host <-> GPU copies')
    args = ap.parse_args()
    batches = {'infer': [1, 64], 'train': [64]}
    import subprocess
    import torch
    import hybridgluon as mx
    rev = os.environ.get('HG_REV')  # the commit, where the tree came without its .git
    if not rev:
        try:
            rev = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True,
                                 text=True, cwd=HERE).stdout.strip() or 'unknown'
        except OSError:
            rev = 'unknown'
    head = ['### GPU (hybridgluon on gpu(0) against PyTorch CUDA; medians in ms; ratio > 1 means '
            'hybridgluon is faster)', '',
            'Device: %s; PyTorch %s; hybridgluon %s (%d ops with GPU kernels); float32, TF32 off; '
            '%d rounds after 3 warm-up calls; %s UTC. Measured with `python '
            'benchmarks/bench_gpu.py`. Inference: hybridgluon replays a CUDA graph '
            '(static_alloc + static_shape); "op by op" is the same block without them.'
            % (torch.cuda.get_device_name(0), torch.__version__, rev,
               sum(mx._core.op_info(o)['gpu'] for o in mx._core.list_ops()), args.rounds,
               time.strftime('%Y-%m-%d %H:%M', time.gmtime())), '']
    lines = head + ['| workload | hybridgluon (ms) | hybridgluon op by op (ms) | PyTorch CUDA (ms) '
                    '| ratio (PyTorch / ours) |', '|---|---|---|---|---|']
    for name in [m for m in args.models.split(',') if m != 'copy']:
        try:
            ours = hg_rows(name, batches, args.rounds)
        except Exception as e:  # an op without a GPU kernel: say which, go on
            ours = {}
            lines.append('| %s | not run: %s | | |' % (name, str(e).split('\n')[0][:160]))
        theirs = torch_rows(name, batches, args.rounds)
        for key in sorted(theirs):
            kind, b = key
            eager = ours.get(('eager', b)) if kind == 'infer' else None
            if key in ours:
                lines.append('| %s %s, batch %d | %.3f | %s | %.3f | %.2fx |' % (
                    name, 'training step' if kind == 'train' else 'inference', b, ours[key],
                    '%.3f' % eager if eager else '', theirs[key], theirs[key] / ours[key]))
            else:
                lines.append('| %s %s, batch %d | - | | %.3f | |' % (
                    name, 'training step' if kind == 'train' else 'inference', b, theirs[key]))
        print('\n'.join(lines[-len(theirs) - (0 if ours else 1):]), flush=True)
        sys.stdout.flush()
    if 'copy' in args.models.split(',') or args.copies:
        lines += copy_rows(args.rounds)
        print('\n'.join(lines[-2:]), flush=True)
    text = '\n'.join(lines) + '\n'
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)
    print(text)


if __name__ == '__main__':
    main()
