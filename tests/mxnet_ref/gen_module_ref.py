"""Module API fixtures: runs the scenarios below under real MXNet 1.9.1 and writes
tests/mxnet_ref/module/ (module.npz, module.json and a checkpoint MXNet's Module saved),
which tests/test_module_api.py replays on hybridgluon without MXNet.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_module_ref.py [--out DIR]

The scenarios are plain functions of the `mx` module, imported by the test as well, so both
libraries run the same code. Nothing here imports MXNet at module level.

What is recorded:
- fit scenarios (FIT_SCENARIOS): a small MLP (FullyConnected, Activation, SoftmaxOutput)
  trained by Module.fit from fixed initial parameters, on one or two CPU contexts, with SGD
  (momentum, wd) or Adam, with and without a kvstore: the parameters after fit, the training
  metric, score() on the data and predict() outputs.
- a bucketing scenario: a BucketingModule over two sequence lengths sharing an FC layer,
  trained from fixed parameters with batches alternating between the buckets.
- iterator cases (ITER_CASES): the batches (data, label, pad) of NDArrayIter for each
  last_batch_handle, over two epochs, with shuffle under a fixed NumPy seed.
- a checkpoint: mlp-symbol.json and mlp-0002.params from Module.save_checkpoint, plus the
  predictions of the saved module on the data.

Format: module.npz (allow_pickle=False) holds the arrays; module.json the metrics and batch
layouts.
"""
import argparse
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N, IN_UNITS, HIDDEN, CLASSES, BATCH = 24, 5, 7, 3, 8

# name: (contexts, kvstore, optimizer, optimizer params, epochs)
FIT_SCENARIOS = {
    'sgd_1ctx': (1, 'local', 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}, 3),
    'sgd_2ctx_device': (2, 'device', 'sgd', {'learning_rate': 0.1, 'momentum': 0.9}, 3),
    'sgd_2ctx_nokv': (2, None, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9}, 3),
    'adam_2ctx_local': (2, 'local', 'adam', {'learning_rate': 0.01}, 2),
}

# name: (n examples, batch size, last_batch_handle, shuffle)
ITER_CASES = {
    'pad_10_4': (10, 4, 'pad', False),
    'discard_10_4': (10, 4, 'discard', False),
    'roll_10_4': (10, 4, 'roll_over', False),
    'roll_10_3': (10, 3, 'roll_over', False),
    'pad_3_7': (3, 7, 'pad', False),
    'pad_shuffle_9_4': (9, 4, 'pad', True),
    'roll_shuffle_9_4': (9, 4, 'roll_over', True),
}


def data(seed=0):
    """A separable 3-class problem: class c has its mean at 2 * e_c."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, CLASSES, size=N)
    x = rng.normal(0, 0.5, size=(N, IN_UNITS)).astype(np.float32)
    x[np.arange(N), y] += 2.0
    return x, y.astype(np.float32)


def mlp(mx):
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(net, num_hidden=HIDDEN, name='fc1')
    net = mx.sym.Activation(net, act_type='tanh', name='tanh1')
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name='fc2')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def init_params(seed=1):
    rng = np.random.RandomState(seed)
    shapes = {'fc1_weight': (HIDDEN, IN_UNITS), 'fc1_bias': (HIDDEN,),
              'fc2_weight': (CLASSES, HIDDEN), 'fc2_bias': (CLASSES,)}
    return {k: rng.uniform(-0.5, 0.5, size=s).astype(np.float32)
            for k, s in sorted(shapes.items())}


def fit(mx, scenario, x, y, init):
    """Module.fit of the MLP; returns ({name: array}, {key: value})."""
    nctx, kv, opt, opt_params, epochs = FIT_SCENARIOS[scenario]
    ctx = [mx.cpu(i) for i in range(nctx)]
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=False)
    mod = mx.mod.Module(mlp(mx), context=ctx)
    arg = {k: mx.nd.array(v) for k, v in init.items()}
    mod.fit(it, num_epoch=epochs, kvstore=kv, optimizer=opt, optimizer_params=opt_params,
            arg_params=arg, eval_metric='acc')
    arg_params, _ = mod.get_params()
    arrays = {'%s_%s' % (scenario, k): v.asnumpy() for k, v in arg_params.items()}
    arrays['%s_predict' % scenario] = mod.predict(it).asnumpy()
    meta = {'%s_score' % scenario: mod.score(it, 'acc')[0][1],
            '%s_score_ce' % scenario: mod.score(it, 'ce')[0][1]}
    return arrays, meta


def bucket_sym_gen(mx):
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        weight = mx.sym.Variable('shared_weight')
        bias = mx.sym.Variable('shared_bias')
        steps = mx.sym.split(data, num_outputs=seq_len, axis=1, squeeze_axis=True)
        acc = None
        for t in range(seq_len):
            h = mx.sym.FullyConnected(steps[t], weight=weight, bias=bias, num_hidden=CLASSES,
                                      name='fc_t%d' % t)
            acc = h if acc is None else acc + h
        return mx.sym.SoftmaxOutput(acc, label, name='softmax'), ('data',), ('softmax_label',)
    return sym_gen


def bucket_batches(mx):
    rng = np.random.RandomState(3)
    batches = []
    for key in (4, 2, 4, 2, 2):
        x = rng.normal(size=(BATCH, key, IN_UNITS)).astype(np.float32)
        y = rng.randint(0, CLASSES, size=BATCH).astype(np.float32)
        batches.append(mx.io.DataBatch(
            [mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
            provide_data=[mx.io.DataDesc('data', x.shape)],
            provide_label=[mx.io.DataDesc('softmax_label', y.shape)]))
    return batches


def bucketing(mx):
    """Trains a BucketingModule on batches alternating between keys 4 and 2."""
    rng = np.random.RandomState(4)
    init = {'shared_weight': rng.uniform(-0.5, 0.5, (CLASSES, IN_UNITS)).astype(np.float32),
            'shared_bias': rng.uniform(-0.5, 0.5, (CLASSES,)).astype(np.float32)}
    mod = mx.mod.BucketingModule(bucket_sym_gen(mx), default_bucket_key=4)
    mod.bind([('data', (BATCH, 4, IN_UNITS))], [('softmax_label', (BATCH,))])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in init.items()})
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.2,
                                                          'momentum': 0.5})
    arrays = {}
    for i, batch in enumerate(bucket_batches(mx)):
        mod.forward(batch, is_train=True)
        arrays['bucket_out%d' % i] = mod.get_outputs()[0].asnumpy()
        mod.backward()
        mod.update()
    arg_params, _ = mod.get_params()
    arrays.update({'bucket_%s' % k: v.asnumpy() for k, v in arg_params.items()})
    return arrays


def iterate(mx, case):
    """Two epochs of NDArrayIter batches: ([(data, label, pad)] per epoch)."""
    n, bs, handle, shuffle = ITER_CASES[case]
    np.random.seed(7)
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=bs, shuffle=shuffle, last_batch_handle=handle)
    epochs = []
    for _ in range(2):
        epochs.append([(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it])
        it.reset()
    return epochs


def main():
    import mxnet as mx
    parser = argparse.ArgumentParser()
    parser.add_argument('--out', default=os.path.join(HERE, 'module'))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    x, y = data()
    init = init_params()
    arrays, meta = {'x': x, 'y': y}, {}
    for name in FIT_SCENARIOS:
        a, m = fit(mx, name, x, y, init)
        arrays.update(a)
        meta.update(m)
    arrays.update(bucketing(mx))
    for case in ITER_CASES:
        layout = []
        for e, epoch in enumerate(iterate(mx, case)):
            layout.append([])
            for b, (d, lab, pad) in enumerate(epoch):
                arrays['iter_%s_e%d_b%d_data' % (case, e, b)] = d
                arrays['iter_%s_e%d_b%d_label' % (case, e, b)] = lab
                layout[-1].append(int(pad))
        meta['iter_%s' % case] = layout
    # A checkpoint written by MXNet's Module after one epoch of training.
    mod = mx.mod.Module(mlp(mx))
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    mod.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.5},
            arg_params={k: mx.nd.array(v) for k, v in init.items()})
    mod.save_checkpoint(os.path.join(args.out, 'mlp'), 2)
    arrays['ckpt_predict'] = mod.predict(it).asnumpy()
    np.savez(os.path.join(args.out, 'module.npz'), **arrays)
    with open(os.path.join(args.out, 'module.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
