"""Data-parallel training over MPI (hybridgluon.distributed): samples per second of the
Fashion-MNIST MLP and LeNet trained by 1 and 2 processes, and the allreduce bandwidth of
`distributed.allreduce_` against mpi4py's own `Allreduce` on the same buffers.

Training: the same global batch (64) either way; one process uses every core, two processes
one core each (HG_NUM_THREADS=1), on this machine, over Open MPI's shared memory. Each row is
the median over rounds of the time of a step (forward, backward with the gradient sums
overlapped, Adam update), hybridized, on random data of Fashion-MNIST's shape. Allreduce: float32
buffers summed in place by 2 processes, ours and mpi4py's interleaved round by round; bandwidth
is the buffer's bytes over the median time.

    python benchmarks/bench_dist.py [--quick] [--out benchmarks/RESULTS_DIST.md]

The file it writes is the section benchmarks/run.py puts into RESULTS.md.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GLOBAL_BATCH = 64


def _env(threads):
    env = dict(os.environ)
    env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                'OMPI_MCA_btl_vader_single_copy_mechanism': 'none',
                'OMPI_MCA_rmaps_base_oversubscribe': '1'})
    if threads:
        env['HG_NUM_THREADS'] = env['OMP_NUM_THREADS'] = str(threads)
    import hybridgluon
    root = os.path.dirname(os.path.dirname(os.path.abspath(hybridgluon.__file__)))
    env['PYTHONPATH'] = os.pathsep.join([root, env.get('PYTHONPATH', '')])
    return env


def _launch(nproc, args, threads=None):
    """Runs this file's worker on nproc ranks; returns rank 0's JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'result.json')
        cmd = [sys.executable, os.path.abspath(__file__), '--worker', out] + args
        if nproc > 1:
            cmd = ['mpirun', '-np', str(nproc), '--oversubscribe', '--bind-to', 'core'] + cmd
        proc = subprocess.run(cmd, env=_env(threads), capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError('bench_dist worker failed:\n%s%s' % (proc.stdout, proc.stderr))
        with open(out) as f:
            return json.load(f)


# ---- the worker (one rank) ---------------------------------------------------------------

def _net(kind):
    from hybridgluon import gluon
    from hybridgluon.gluon import nn
    net = nn.HybridSequential()
    if kind == 'mlp':
        net.add(nn.Flatten(), nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'),
                nn.Dense(10))
    else:
        net.add(nn.Conv2D(6, kernel_size=5, activation='relu'), nn.MaxPool2D(pool_size=2),
                nn.Conv2D(16, kernel_size=5, activation='relu'), nn.MaxPool2D(pool_size=2),
                nn.Flatten(), nn.Dense(120, activation='relu'), nn.Dense(84, activation='relu'),
                nn.Dense(10))
    return net, gluon


def _train(kind, overlap, rounds, steps):
    import hybridgluon as mx
    from hybridgluon import autograd
    from hybridgluon import distributed as dist
    distributed = 'OMPI_COMM_WORLD_SIZE' in os.environ
    rank, size = 0, 1
    if distributed:
        dist.init()
        rank, size = dist.rank(), dist.size()
    net, gluon = _net(kind)
    net.initialize(mx.init.Xavier())
    local = GLOBAL_BATCH // size
    x = mx.nd.random.uniform(shape=(local, 1, 28, 28))
    y = mx.nd.random.randint(0, 10, shape=(local,)).astype('float32')
    net(x)
    net.hybridize(static_alloc=True)
    if distributed:
        dist.broadcast_parameters(net.collect_params())
        trainer = dist.DistributedTrainer(net.collect_params(), 'adam',
                                          {'learning_rate': 1e-3}, overlap=overlap)
    else:
        trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 1e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(local)

    for _ in range(5):
        step()
    times = []
    for _ in range(rounds):
        if distributed:
            dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        mx.nd.waitall()
        times.append((time.perf_counter() - t0) / steps)
    if distributed:  # the slowest rank sets the pace
        times = list(dist.allreduce(mx.nd.array(times, dtype='float64'), average=False)
                     .asnumpy() / size)
    return {'step_s': statistics.median(times), 'rank': rank}


def _allreduce(sizes_mb, rounds):
    import numpy as np
    import hybridgluon as mx
    from hybridgluon import distributed as dist
    from mpi4py import MPI
    dist.init()
    comm = MPI.COMM_WORLD
    res = {}
    for key in sizes_mb:
        n = int(float(key) * (1 << 20)) // 4
        arr = mx.nd.ones((n,))
        view = np.asarray(arr)  # the same memory, for mpi4py (the buffer protocol)
        view[0] = 5.0
        assert arr[0].asscalar() == 5.0, 'np.asarray copied the NDArray'
        ours, theirs = [], []
        for r in range(rounds + 2):
            comm.Barrier()
            t0 = time.perf_counter()
            dist.allreduce_(arr, average=False)
            t1 = time.perf_counter()
            comm.Barrier()
            t2 = time.perf_counter()
            comm.Allreduce(MPI.IN_PLACE, view, op=MPI.SUM)
            t3 = time.perf_counter()
            if r >= 2:  # warm-up rounds
                ours.append(t1 - t0)
                theirs.append(t3 - t2)
            view[:] = 1.0
        res[key] = {'ours': statistics.median(ours), 'mpi4py': statistics.median(theirs),
                        'bytes': n * 4}
    return res


def worker(argv):
    out, what = argv[0], argv[1]
    if what == 'train':
        result = _train(argv[2], argv[3] == '1', int(argv[4]), int(argv[5]))
    else:
        result = _allreduce(argv[2].split(','), int(argv[3]))
    if result.get('rank', 0) == 0 and int(os.environ.get('OMPI_COMM_WORLD_RANK', '0')) == 0:
        with open(out, 'w') as f:
            json.dump(result, f)


# ---- the table --------------------------------------------------------------------------

def run(quick=False):
    if not shutil.which('mpirun'):
        return '## Distributed training (MPI)\n\nNot run: mpirun not found.\n'
    rounds, steps = (3, 10) if quick else (7, 20)
    lines = ['## Distributed training (MPI)', '',
             'Data-parallel training on this machine (%d cores): global batch %d, hybridized, '
             'Adam, random data of Fashion-MNIST\'s shape; 1 process on every core against 2 '
             'processes of one thread each under `mpirun -np 2` (Open MPI, shared memory). '
             'samples/s = global batch / median step time (slowest rank).' % (os.cpu_count(),
                                                                              GLOBAL_BATCH), '',
             '| network | 1 process | 2 processes, overlap | 2 processes, no overlap | '
             '2 vs 1 |', '|---|---|---|---|---|']
    for kind, label in (('mlp', 'MLP 784-256-128-10'), ('lenet', 'LeNet')):
        one = _launch(1, ['train', kind, '1', str(rounds), str(steps)])['step_s']
        two = _launch(2, ['train', kind, '1', str(rounds), str(steps)], threads=1)['step_s']
        two_sync = _launch(2, ['train', kind, '0', str(rounds), str(steps)], threads=1)['step_s']
        sps = [GLOBAL_BATCH / t for t in (one, two, two_sync)]
        lines.append('| %s | %.0f | %.0f | %.0f | %.2fx |' % (label, sps[0], sps[1], sps[2],
                                                             sps[1] / sps[0]))
    sizes = [1, 16] if quick else [1, 4, 16, 64]
    ar = _launch(2, ['allreduce', ','.join(str(s) for s in sizes), str(rounds * 3)], threads=1)
    lines += ['', 'Allreduce (sum, in place, float32) by 2 processes: '
              '`hybridgluon.distributed.allreduce_` against mpi4py\'s `comm.Allreduce(IN_PLACE)` '
              'on the same buffer, interleaved; bandwidth = bytes / median time. Target: ours '
              'within 10% of mpi4py.', '',
              '| buffer | ours | mpi4py | ours / mpi4py bandwidth |', '|---|---|---|---|']
    for mb in sizes:
        r = ar[str(mb)]
        gb = r['bytes'] / 1e9
        lines.append('| %g MiB | %.2f GB/s | %.2f GB/s | %.2f |'
                     % (mb, gb / r['ours'], gb / r['mpi4py'], r['mpi4py'] / r['ours']))
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--worker':
        worker(sys.argv[2:])
    else:
        sys.path.insert(0, HERE)
        import common  # noqa: F401  (an in-place build when hybridgluon is not installed)
        text = run(quick='--quick' in sys.argv)
        print(text)
        if '--out' in sys.argv:  # written whole or not at all
            out = sys.argv[sys.argv.index('--out') + 1]
            with open(out + '.tmp', 'w') as f:
                f.write(text)
            os.replace(out + '.tmp', out)
