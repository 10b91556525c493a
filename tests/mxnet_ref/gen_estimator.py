"""Estimator fixtures: runs the scenarios below under real MXNet 1.9.1 and writes estimator.json,
which tests/test_gluon_estimator_mxnet.py replays on hybridgluon without MXNet.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_estimator.py [--out DIR]

`run(mx, est_pkg, workdir)` is a plain function of the library's modules, imported by the test
as well, so both libraries run the same code. Nothing here imports MXNet at module level.

Each scenario trains a one-layer net from fixed NumPy weights on fixed NumPy data through
gluon.contrib.estimator and records: the log (elapsed times replaced by 'T' / 'N', the work
directory by 'DIR'), the final weights, the metrics' (name, value) pairs, the checkpoint files
left in the model directory, and the handlers' counters. Also the `__all__` of the package's
three modules.
"""
import argparse
import io
import json
import logging
import os
import re
import shutil
import tempfile
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _data(seed, n, d_in, d_out, classes=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d_in)).astype(np.float32)
    if classes:
        centers = rng.normal(scale=2.0, size=(d_out, d_in)).astype(np.float32)
        y = rng.integers(0, d_out, size=n)
        x = (centers[y] + x).astype(np.float32)
        return x, y.astype(np.float32)
    w = rng.normal(size=(d_out, d_in)).astype(np.float32)
    return x, (x @ w.T + 0.5).astype(np.float32)


class _Env:
    """Builds nets, loaders and estimators of one library, logging into a string."""

    def __init__(self, mx, est_pkg, workdir):
        self.mx, self.pkg, self.workdir = mx, est_pkg, workdir
        self.x, self.y = _data(0, 24, 5, 3)
        self.cx, self.cy = _data(1, 30, 5, 3, classes=True)
        rng = np.random.default_rng(2)
        self.w = rng.normal(scale=0.3, size=(3, 5)).astype(np.float32)
        self.b = rng.normal(scale=0.1, size=(3,)).astype(np.float32)

    def loader(self, batch=8, classes=False):
        gluon, nd = self.mx.gluon, self.mx.nd
        x, y = (self.cx, self.cy) if classes else (self.x, self.y)
        return gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(x), nd.array(y)),
                                     batch_size=batch)

    def net(self, ctx=None, hybridize=False):
        gluon, nd = self.mx.gluon, self.mx.nd
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(gluon.nn.Dense(3, in_units=5))
        net.initialize(ctx=ctx)
        net[0].weight.set_data(nd.array(self.w))
        net[0].bias.set_data(nd.array(self.b))
        if hybridize:
            net.hybridize()
        return net

    def estimator(self, net, loss=None, momentum=0.9, **kwargs):
        gluon = self.mx.gluon
        trainer = gluon.Trainer(net.collect_params(), 'sgd',
                                {'learning_rate': 0.05, 'momentum': momentum})
        est = self.pkg.Estimator(net, loss or gluon.loss.L2Loss(), trainer=trainer, **kwargs)
        est.logger.handlers = []
        stream = io.StringIO()
        est.logger.addHandler(logging.StreamHandler(stream))
        return est, stream

    def mask(self, text):
        text = re.sub(r'\d+\.\d{3}s', 'T', text)
        text = re.sub(r'total \d+s', 'total Ns', text)
        return text.replace(self.workdir, 'DIR')

    def files(self, sub):
        return sorted(os.listdir(os.path.join(self.workdir, sub)))

    def dir(self, sub):
        return os.path.join(self.workdir, sub)


def _weights(net):
    return [round(float(v), 6) for p in (net[0].weight, net[0].bias)
            for v in p.data().asnumpy().ravel()]


def _metrics(est):
    return [[name, round(float(value), 6)] for name, value in
            (m.get() for m in est.train_metrics + est.val_metrics)]


def _fit_logging(env, eh):
    mx = env.mx
    out = {}
    ctx = [mx.cpu(0), mx.cpu(1)]
    net = env.net(ctx=ctx)
    est, log = env.estimator(net, context=ctx)
    handler = eh.LoggingHandler(log_interval=2, metrics=est.train_metrics)
    est.fit(env.loader(), val_data=env.loader(12), epochs=3, event_handlers=[handler])
    out['fit_2ctx'] = {'log': env.mask(log.getvalue()), 'w': _weights(net),
                       'metrics': _metrics(est),
                       'counters': [handler.batch_index, handler.current_epoch,
                                    handler.processed_samples]}
    net = env.net(hybridize=True)
    est, log = env.estimator(net, loss=mx.gluon.loss.SoftmaxCrossEntropyLoss())
    est.fit(env.loader(batch=7, classes=True), batches=9)
    out['fit_classes_batches'] = {'log': env.mask(log.getvalue()), 'w': _weights(net),
                                  'metrics': _metrics(est)}
    net = env.net()
    est, log = env.estimator(net, val_loss=mx.gluon.loss.L1Loss(),
                             val_metrics=[mx.metric.MAE(), mx.metric.RMSE()])
    est.evaluate(env.loader(7))
    out['evaluate'] = {'log': env.mask(log.getvalue()), 'metrics': _metrics(est)}
    return out


def _checkpoints(env, eh):
    out = {}
    net = env.net()
    est, log = env.estimator(net)
    ckpt = eh.CheckpointHandler(env.dir('a'), max_checkpoints=2, verbose=1)
    est.fit(env.loader(), epochs=3, event_handlers=[ckpt])
    out['ckpt_epochs'] = {'log': env.mask(log.getvalue()), 'files': env.files('a'),
                          'counters': [ckpt.current_epoch, ckpt.current_batch]}
    net = env.net(hybridize=True)
    est, log = env.estimator(net)
    ckpt = eh.CheckpointHandler(env.dir('b'), model_prefix='hb', epoch_period=None,
                                batch_period=2, max_checkpoints=10)
    est.fit(env.loader(), batches=7, event_handlers=[ckpt])
    out['ckpt_batches'] = {'files': env.files('b'),
                           'counters': [ckpt.current_epoch, ckpt.current_batch]}
    net = env.net()
    est, log = env.estimator(net)
    est.fit(env.loader(), epochs=2,
            event_handlers=[eh.CheckpointHandler(env.dir('c'), max_checkpoints=1)])
    net = env.net()
    est, log = env.estimator(net)
    est.fit(env.loader(), epochs=4, event_handlers=[
        eh.CheckpointHandler(env.dir('c'), max_checkpoints=1, resume_from_checkpoint=True)])
    out['resume_epochs'] = {'log': env.mask(log.getvalue()), 'files': env.files('c'),
                            'w': _weights(net), 'max_epoch': est.max_epoch}
    net = env.net()
    est, log = env.estimator(net)
    est.fit(env.loader(), batches=4, event_handlers=[
        eh.CheckpointHandler(env.dir('d'), epoch_period=None, batch_period=2)])
    est.fit(env.loader(), batches=8, event_handlers=[
        eh.CheckpointHandler(env.dir('d'), epoch_period=None, batch_period=2,
                             resume_from_checkpoint=True)])
    out['resume_batches'] = {'log': env.mask(log.getvalue()), 'files': env.files('d'),
                             'w': _weights(net), 'max_batch': est.max_batch}
    net = env.net()
    est, log = env.estimator(net)
    ckpt = eh.CheckpointHandler(env.dir('e'), monitor=est.val_metrics[0], save_best=True,
                                mode='min', verbose=1)
    est.fit(env.loader(), val_data=env.loader(), epochs=3, event_handlers=[ckpt])
    out['save_best'] = {'log': env.mask(log.getvalue()), 'files': env.files('e')}
    return out


def _early_stopping(env, eh):
    out = {}
    for mode, patience, delta in (('auto', 1, 0.001), ('min', 1, 0.001), ('max', 0, 0.0),
                                  ('min', 0, 0.3)):
        net = env.net()
        est, log = env.estimator(net, momentum=0.0)
        handler = eh.EarlyStoppingHandler(est.val_metrics[0], mode=mode, patience=patience,
                                          min_delta=delta)
        est.fit(env.loader(), val_data=env.loader(), epochs=6, event_handlers=[handler])
        out['early_%s_%d_%g' % (mode, patience, delta)] = {
            'log': env.mask(log.getvalue()), 'w': _weights(net),
            'counters': [handler.stopped_epoch, handler.current_epoch, handler.wait]}
    return out


def run(mx, est_pkg, workdir):
    """All scenarios, on the library `mx` whose gluon.contrib.estimator is `est_pkg`."""
    env = _Env(mx, est_pkg, workdir)
    eh = est_pkg.event_handler
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        out.update(_fit_logging(env, eh))
        out.update(_checkpoints(env, eh))
        out.update(_early_stopping(env, eh))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', default=HERE)
    args = parser.parse_args()
    import mxnet as mx
    from mxnet.gluon.contrib import estimator
    workdir = tempfile.mkdtemp()
    try:
        result = run(mx, estimator, workdir)
    finally:
        shutil.rmtree(workdir)
    result['mxnet_version'] = mx.__version__
    result['all'] = {mod: sorted(getattr(estimator, mod).__all__)
                     for mod in ('estimator', 'event_handler', 'batch_processor')}
    path = os.path.join(args.out, 'estimator.json')
    with open(path, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote %s (%d bytes)' % (path, os.path.getsize(path)))


if __name__ == '__main__':
    main()
