"""One rank of the distributed tests (tests/test_distributed.py starts it under mpirun, or
alone for a job of one process).

    python dist_worker.py SCENARIO OUTDIR

collectives: every collective against values each rank can compute itself (NumPy); a failed
             check raises, which ends the job with a non-zero status.
train:       trains a small MLP data-parallel with each trainer API, optimizer and hybridize
             setting, and writes this rank's final parameters to OUTDIR/train-<rank>.npz (the
             test compares them with a single-process run of the same global batches); also
             writes checkpoints that only rank 0 may create.
mxnet_ref:   tests/mxnet_ref/gen_dist_ref.py's scenario, whose results real MXNet recorded.
raise:       rank 1 raises in the middle of training.
exit:        rank 1 leaves with os._exit in the middle of training.
hang:        rank 1 stops calling collectives (sleeps); the others must time out.
"""
import os
import sys
import time

import numpy as np

import hybridgluon as mx
from hybridgluon import autograd, gluon
from hybridgluon import distributed as dist
from hybridgluon.base import MXNetError

GLOBAL_BATCH = 12
STEPS = 4


def _raises(fn, match):
    try:
        fn()
    except MXNetError as e:
        assert match in str(e), (match, str(e))
        return
    raise AssertionError('expected MXNetError matching %r' % match)


def collectives():
    r, n = dist.rank(), dist.size()
    ranks = np.arange(n)
    for dtype in ('float32', 'float64', 'float16', 'int32', 'int64'):
        for shape in ((), (0,), (1,), (3, 5), (1000, 3)):
            base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 7
            mine = mx.nd.array(base * (r + 1), dtype=dtype)
            want = sum(base * (k + 1) for k in ranks).astype(dtype)
            got = dist.allreduce(mine, average=False)
            assert got.dtype == np.dtype(dtype) and got.shape == shape
            np.testing.assert_array_equal(got.asnumpy(), want)
            np.testing.assert_array_equal(mine.asnumpy(), (base * (r + 1)).astype(dtype))
            if dtype.startswith('float'):
                avg = dist.allreduce(mine).asnumpy()
                tol = 1e-3 if dtype == 'float16' else 1e-6
                np.testing.assert_allclose(avg, want.astype(np.float64) / n, rtol=tol)
    # float16 compression: float32 values that float16 holds exactly come back exactly
    x = mx.nd.array(np.arange(10) * (r + 1))
    got = dist.allreduce(x, average=False, compression=dist.Compression.fp16)
    np.testing.assert_array_equal(got.asnumpy(), np.arange(10) * ranks.sum() + np.arange(10) * n)
    y = mx.nd.array([0.1 * (r + 1)])
    want = np.float16(sum(np.float16(0.1 * (k + 1)) for k in ranks))
    got = dist.allreduce(y, average=False, compression=dist.Compression.fp16).asnumpy()
    assert abs(got[0] - want) <= 2e-3, (got, want)
    # grouped: many small arrays of two dtypes plus ones larger than a bucket (HG_DIST_BUCKET_MB)
    specs = [((7,), 'float32'), ((3, 2), 'float64'), ((400000,), 'float32'), ((0,), 'float32'),
             ((1,), 'float64'), ((300000,), 'float64'), ((5,), 'int32'), ((2, 2), 'float32')]

    def arrays_of(k):
        rng = np.random.RandomState(k)
        return [rng.randint(0, 9, size=s).astype(d) for s, d in specs]

    arrays = arrays_of(r)
    every = [arrays_of(k) for k in ranks]
    nds = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    assert dist.grouped_allreduce_(nds, average=False) is not None
    for i, got in enumerate(nds):
        np.testing.assert_array_equal(got.asnumpy(), sum(e[i] for e in every))
    # allgather: first dims differ by rank
    part = mx.nd.array(np.full((r + 1, 3), r, dtype=np.float32))
    got = dist.allgather(part).asnumpy()
    np.testing.assert_array_equal(got, np.concatenate([np.full((k + 1, 3), k) for k in ranks]))
    if n > 1:  # every rank sees every shape, so all of them raise
        _raises(lambda: dist.allgather(mx.nd.zeros((1, 2 + (r % 2)))), 'must agree')
    # broadcast from the last rank, in place and as a copy
    b = mx.nd.array([r, r + 1.0])
    assert dist.broadcast_(b, root_rank=n - 1) is b
    np.testing.assert_array_equal(b.asnumpy(), [n - 1, n])
    c = mx.nd.array([[r]], dtype='int64')
    np.testing.assert_array_equal(dist.broadcast(c, 0).asnumpy(), [[0]])
    np.testing.assert_array_equal(c.asnumpy(), [[r]])
    _raises(lambda: dist.broadcast_(b, root_rank=n), 'root rank')
    # errors every rank raises the same way, so none waits for the others
    _raises(lambda: dist.allreduce(mx.nd.array([1], dtype='int32')), 'average=True')
    _raises(lambda: dist.allreduce(mx.nd.array([1], dtype='int8'), average=False), 'int8')
    _raises(lambda: dist.allreduce(mx.nd.ones((2,)), compression='zip'), 'compression')
    _raises(lambda: dist.grouped_allreduce_(mx.nd.ones((2,))), 'list')
    # the dist_sync kvstore: rank 0's init, sums over workers, MXNet's key rules
    kv = mx.kv.create('dist_sync')
    assert (kv.rank, kv.num_workers, kv.type) == (r, n, 'dist_sync')
    kv.init(3, mx.nd.ones((2, 2)) * (r + 5))
    out = mx.nd.zeros((2, 2))
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 5))
    kv.push(3, [mx.nd.ones((2, 2)) * (r + 1), mx.nd.ones((2, 2))])  # two contexts
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), ranks.sum() + 2 * n))
    kv.init([4, 5], [mx.nd.zeros((1,)), mx.nd.zeros((3,))])
    out2 = mx.nd.zeros((3,))
    kv.pushpull([4, 5], [mx.nd.ones((1,)) * r, mx.nd.ones((3,))], out=[mx.nd.zeros((1,)), out2])
    np.testing.assert_array_equal(out2.asnumpy(), np.full((3,), n))
    _raises(lambda: kv.init(3, mx.nd.ones((2, 2))), 'duplicate init')
    _raises(lambda: kv.init([7, 7], [mx.nd.ones((1,)), mx.nd.ones((1,))]), 'duplicate init')
    _raises(lambda: kv.push(9, mx.nd.ones((1,))), 'has not been inited')
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.push(4, mx.nd.ones((1,)))  # the weight (the sum of the ranks) - 0.5 * n
    w = mx.nd.zeros((1,))
    kv.pull(4, out=w)
    np.testing.assert_allclose(w.asnumpy(), [ranks.sum() - 0.5 * n])
    kv.barrier()
    dist.barrier()
    # the Module API on the same store: each rank's own data and initial weights, the same
    # weights after fit (rank 0's start, the summed gradients)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3,
                                                     name='fc'), name='softmax')
    rng = np.random.RandomState(r)
    it = mx.io.NDArrayIter(rng.uniform(size=(8, 4)).astype('float32'),
                           rng.randint(0, 3, size=8).astype('float32'), batch_size=4)
    mx.random.seed(r)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=2, kvstore='dist_sync', optimizer='sgd',
            optimizer_params={'learning_rate': 0.1})
    weight = mod.get_params()[0]['fc_weight']
    rows = dist.allgather(weight.reshape((1, -1))).asnumpy()
    assert (rows == rows[:1]).all(), 'Module weights differ between ranks'


def _data():
    rng = np.random.RandomState(42)
    x = rng.uniform(-1, 1, size=(GLOBAL_BATCH * STEPS + 5, 10)).astype(np.float32)
    y = rng.randint(0, 4, size=len(x)).astype(np.float32)
    return x, y


def make_net(seed, hybridize):
    """A small MLP whose initial weights depend on `seed` (so broadcast matters)."""
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(16, activation='relu'), gluon.nn.Dense(4))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net


OPTIMIZERS = {'sgd': ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}),
              'adam': ('adam', {'learning_rate': 0.01})}
VARIANTS = [(api, opt, hyb) for api in ('hvd', 'hvd_sync', 'hvd_fp16', 'kv', 'kv_local_update')
            for opt in OPTIMIZERS for hyb in (False, True)]


def train_one(api, opt, hybridize, x, y):
    """Trains on this rank's part of each global batch; returns {name: array}."""
    r, n = dist.rank(), dist.size()
    net = make_net(100 + r, hybridize)  # a different start on each rank
    net(mx.nd.array(x[:1]))  # finish the deferred initialization
    params = net.collect_params()
    name, kwargs = OPTIMIZERS[opt]
    if api.startswith('hvd'):
        dist.broadcast_parameters(params)
        comp = dist.Compression.fp16 if api == 'hvd_fp16' else dist.Compression.none
        # small buckets: several per step, most of them summed during backward
        trainer = dist.DistributedTrainer(params, name, dict(kwargs), compression=comp,
                                          overlap=api != 'hvd_sync', bucket_mb=0.001)
        batch_arg = GLOBAL_BATCH // n  # Horovod: the local batch, gradients are averaged
    else:
        trainer = gluon.Trainer(params, name, dict(kwargs), kvstore='dist_sync',
                                update_on_kvstore=api == 'kv')
        batch_arg = GLOBAL_BATCH  # MXNet dist_sync: gradients are summed, the global batch
    sampler = gluon.data.SplitSampler(len(x), num_parts=n, part_index=r,
                                      batch_size=GLOBAL_BATCH, last_batch='discard')
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=GLOBAL_BATCH // n,
                                   sampler=sampler)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    steps = 0
    for data, label in loader:
        if steps == 1:  # a backward whose gradients the next one overwrites (grad_req write)
            with autograd.record():
                loss = loss_fn(net(data * 3), label)
            loss.backward()
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        if api == 'hvd':  # summed during backward: every rank holds the same gradients now
            w = params[sorted(params.keys())[0]].grad()
            rows = dist.allgather(w.reshape((1, -1))).asnumpy()
            assert (rows == rows[:1]).all(), 'gradients differ between ranks after backward'
        trainer.step(batch_arg)
        steps += 1
    assert steps == STEPS, steps
    if api == 'hvd':
        overlapped, at_step = trainer.overlap_stats()
        assert overlapped >= STEPS and at_step == 0, (overlapped, at_step)
    return ({k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}, net,
            trainer)


def train(outdir):
    r = dist.rank()
    x, y = _data()
    results = {}
    for api, opt, hyb in VARIANTS:
        params, net, trainer = train_one(api, opt, hyb, x, y)
        for k, v in params.items():
            results['%s/%s/%d/%s' % (api, opt, hyb, k)] = v
    # checkpoints: every rank asks, rank 0 writes
    net.save_parameters(os.path.join(outdir, 'ckpt-%d.params' % r))
    trainer.save_states(os.path.join(outdir, 'ckpt-%d.states' % r))
    net.export(os.path.join(outdir, 'model-%d' % r))
    dist.barrier()
    np.savez(os.path.join(outdir, 'train-%d.npz' % r), **results)


def fail(kind):
    r = dist.rank()
    x = mx.nd.ones((4,))
    for step in range(50):
        if r == 1 and step == 2:
            if kind == 'raise':
                raise RuntimeError('rank 1 fails on purpose at step 2')
            if kind == 'exit':
                os._exit(3)
            time.sleep(600)  # 'hang'
        dist.allreduce_(x)


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    dist.init()
    if scenario == 'collectives':
        collectives()
    elif scenario == 'mxnet_ref':  # tests/mxnet_ref/gen_dist_ref.py's calls, on hybridgluon
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref'))
        import json
        from gen_dist_ref import scenario as ref_scenario
        with open(os.path.join(outdir, 'mxnet_ref-%d.json' % dist.rank()), 'w') as f:
            json.dump(ref_scenario(mx), f)
    elif scenario == 'train':
        train(outdir)
    else:
        fail(scenario)
    with open(os.path.join(outdir, '%s-done-%d' % (scenario, dist.rank())), 'w') as f:
        f.write('ok')


if __name__ == '__main__':
    main()
