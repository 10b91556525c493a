"""'dist_sync' fixtures: runs `scenario` below in 2 workers of real MXNet 1.9.1's distributed
kvstore (ps-lite: a scheduler, one server and the workers on localhost) and writes
dist_ref.json, which tests/test_distributed.py replays on hybridgluon under `mpirun -np 2`.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_dist_ref.py

`scenario(mx)` is a plain function of the library's module, imported by the test's worker as
well, so both libraries run the same code. Nothing here imports MXNet at module level.

What it records per rank: the kvstore's rank and num_workers; `init` (rank 0's value wins),
`push` of two contexts' values summed over the workers and replacing the stored value,
`pushpull` of a key list, a server-side SGD with momentum and weight decay over two pushes; and
gluon.Trainer on that store training a Dense layer from fixed weights on each rank's own
data for 3 steps of SGD with momentum (the global batch passed to step).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'dist_ref.json')
WORKERS = 2


def scenario(mx):
    """The same calls for both libraries; returns a JSON-able dict of what this rank saw."""
    nd = mx.nd
    kv = mx.kv.create('dist_sync')
    r, n = kv.rank, kv.num_workers
    out = {'rank': r, 'num_workers': n}
    base = np.arange(4, dtype=np.float32).reshape(2, 2)
    kv.init(3, nd.array(base + 10 * (r + 1)))
    o = nd.zeros((2, 2))
    kv.pull(3, out=o)
    out['init'] = o.asnumpy().tolist()
    kv.push(3, [nd.array(base * (r + 1.5)), nd.array(np.full((2, 2), 0.25 * (r + 1)))])
    kv.pull(3, out=o)
    out['push'] = o.asnumpy().tolist()
    kv.init([5, 6], [nd.zeros((3,)), nd.ones((3,)) * 7])
    a, b = nd.zeros((3,)), nd.zeros((3,))
    kv.pushpull([5, 6], [nd.array([1.0, 2.0, 3.0]) * (r + 1), nd.ones((3,)) * 2 ** r],
                out=[a, b])
    out['pushpull'] = [a.asnumpy().tolist(), b.asnumpy().tolist()]
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    for step in range(2):
        kv.push(5, nd.array([0.5, -1.0, 2.0]) * (r + 1 + step))
    kv.pull(5, out=a)
    out['sgd'] = a.asnumpy().tolist()

    # gluon.Trainer on the same kind of store: fixed start, each rank's own data
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    rng = np.random.RandomState(0)
    net.weight.set_data(nd.array(rng.uniform(-1, 1, (3, 4)).astype(np.float32)))
    net.bias.set_data(nd.array(rng.uniform(-1, 1, (3,)).astype(np.float32)))
    # the same store object: MXNet's ps-lite takes one distributed store per process
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.05, 'momentum': 0.9}, kvstore=kv)
    data = np.random.RandomState(1 + r)
    local = 4
    for _ in range(3):
        x = nd.array(data.uniform(-1, 1, (local, 4)).astype(np.float32))
        y = nd.array(data.uniform(-1, 1, (local, 3)).astype(np.float32))
        with mx.autograd.record():
            loss = ((net(x) - y) ** 2).sum()
        loss.backward()
        trainer.step(local * n)
    out['trainer'] = {'weight': net.weight.data().asnumpy().tolist(),
                      'bias': net.bias.data().asnumpy().tolist()}
    return out


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--worker', help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:  # one MXNet worker: run the scenario, write its result
        import mxnet as mx
        with open(args.worker, 'w') as f:
            json.dump(scenario(mx), f)
        return
    env = dict(os.environ, DMLC_PS_ROOT_URI='127.0.0.1', DMLC_PS_ROOT_PORT=str(_free_port()),
               DMLC_NUM_SERVER='1', DMLC_NUM_WORKER=str(WORKERS))
    with tempfile.TemporaryDirectory() as tmp:
        procs = [subprocess.Popen([sys.executable, '-c', 'import mxnet'],
                                  env=dict(env, DMLC_ROLE=role))
                 for role in ('scheduler', 'server')]
        outs = [os.path.join(tmp, 'w%d.json' % k) for k in range(WORKERS)]
        workers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), '--worker', o],
                                    env=dict(env, DMLC_ROLE='worker')) for o in outs]
        for p in workers + procs:
            if p.wait(timeout=300) != 0:
                raise SystemExit('an MXNet process failed')
        results = {}
        for o in outs:
            with open(o) as f:
                res = json.load(f)
            results[str(res['rank'])] = res
    import mxnet as mx
    with open(OUT, 'w') as f:
        json.dump({'mxnet': mx.__version__, 'ranks': results}, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote', OUT)


if __name__ == '__main__':
    main()
