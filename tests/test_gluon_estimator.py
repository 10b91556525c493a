"""gluon.contrib.estimator: Estimator.fit / evaluate against hand-written training loops and
NumPy, each event handler's behaviour (stopping, metrics, validation, logging, checkpoints and
resuming, early stopping, gradient updates), custom batch processors, and the errors.

The reference for fit() is the loop MXNet's Estimator stands for: split_and_load, forward and
loss under autograd.record(), backward, trainer.step(batch size), run by hand on a net with the
same starting weights; the two must agree to float32 rounding.
"""
import io
import logging
import math
import os
import re

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.base import MXNetError
from hybridgluon.gluon.contrib.estimator import (BatchProcessor, Estimator, BatchBegin,
                                                 BatchEnd, CheckpointHandler,
                                                 EarlyStoppingHandler, EpochBegin, EpochEnd,
                                                 GradientUpdateHandler, LoggingHandler,
                                                 MetricHandler, StoppingHandler, TrainBegin,
                                                 TrainEnd, ValidationHandler)

N, D_IN, D_OUT, BATCH = 24, 5, 3, 8      # 3 batches an epoch


def _regression_data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D_IN)).astype(np.float32)
    w = rng.normal(size=(D_OUT, D_IN)).astype(np.float32)
    y = (x @ w.T + 0.5).astype(np.float32)
    return x, y


def _loader(x, y, batch=BATCH):
    return gluon.data.DataLoader(gluon.data.ArrayDataset(nd.array(x), nd.array(y)),
                                 batch_size=batch)


def _weights(seed=1):
    rng = np.random.default_rng(seed)
    return {'weight': rng.normal(scale=0.3, size=(D_OUT, D_IN)).astype(np.float32),
            'bias': rng.normal(scale=0.1, size=(D_OUT,)).astype(np.float32)}


def _net(weights=None, ctx=None, hybridize=False):
    """One Dense layer holding `weights` (a fresh, initialized net)."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(D_OUT, in_units=D_IN))
    net.initialize(ctx=ctx or mx.cpu())
    for name, value in (weights or _weights()).items():
        net[0].params.get(name).set_data(nd.array(value))
    if hybridize:
        net.hybridize()
    return net


def _params(net):
    return {name: net[0].params.get(name).data().asnumpy()
            for name in ('weight', 'bias')}


def _sgd(net, **kw):
    opts = {'learning_rate': 0.05}
    opts.update(kw)
    return gluon.Trainer(net.collect_params(), 'sgd', opts)


def _manual_fit(net, trainer, loss_fn, x, y, epochs, ctx_list):
    """The training loop fit() stands for; returns the per-epoch mean loss."""
    means = []
    for _ in range(epochs):
        total, count = 0.0, 0
        for data, label in _loader(x, y):
            datas = gluon.utils.split_and_load(data, ctx_list)
            labels = gluon.utils.split_and_load(label, ctx_list)
            with autograd.record():
                losses = [loss_fn(net(d), l) for d, l in zip(datas, labels)]
            for part in losses:
                part.backward()
            trainer.step(sum(part.shape[0] for part in losses))
            total += sum(float(part.sum().asscalar()) for part in losses)
            count += sum(part.shape[0] for part in losses)
        means.append(total / count)
    return means


class _Recorder(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Records every event, and the training loss metric at each epoch end."""

    def __init__(self, priority=0, stop_at_batch=None):
        self.events = []
        self.losses = []
        self.priority = priority
        self.stop_at_batch = stop_at_batch

    def train_begin(self, estimator, *args, **kwargs):
        self.events.append('train_begin')

    def train_end(self, estimator, *args, **kwargs):
        self.events.append('train_end')

    def epoch_begin(self, estimator, *args, **kwargs):
        self.events.append('epoch_begin')

    def epoch_end(self, estimator, *args, **kwargs):
        self.events.append('epoch_end')
        self.losses.append(estimator.train_metrics[-1].get()[1])
        return False

    def batch_begin(self, estimator, *args, **kwargs):
        self.events.append('batch_begin')

    def batch_end(self, estimator, *args, **kwargs):
        self.events.append('batch_end')
        return self.events.count('batch_end') == self.stop_at_batch


def _estimator(net, trainer=None, loss=None, **kw):
    est = Estimator(net, loss or gluon.loss.L2Loss(), trainer=trainer or _sgd(net), **kw)
    est.logger.handlers = []   # keep the test output quiet; tests that read logs add one
    return est


def _log_lines(est):
    stream = io.StringIO()
    est.logger.addHandler(logging.StreamHandler(stream))
    return stream


# ---- fit and evaluate against references ---------------------------------------------------
@pytest.mark.parametrize('ctx_list', [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]],
                         ids=['1ctx', '2ctx'])
@pytest.mark.parametrize('hybridize', [False, True])
def test_fit_matches_manual_loop(ctx_list, hybridize):
    x, y = _regression_data()
    ref_net = _net(ctx=ctx_list, hybridize=hybridize)
    ref_means = _manual_fit(ref_net, _sgd(ref_net, momentum=0.9), gluon.loss.L2Loss(), x, y,
                            3, ctx_list)

    net = _net(ctx=ctx_list, hybridize=hybridize)
    est = _estimator(net, trainer=_sgd(net, momentum=0.9), context=ctx_list)
    rec = _Recorder()
    est.fit(_loader(x, y), epochs=3, event_handlers=[rec])

    for name, value in _params(ref_net).items():
        np.testing.assert_allclose(_params(net)[name], value, rtol=1e-5, atol=1e-6)
    # The loss metric is the mean per-sample loss of each epoch, reset between epochs.
    np.testing.assert_allclose(rec.losses, ref_means, rtol=1e-5)
    assert est.train_metrics[-1].name == 'training l2loss'


def test_fit_learns_regression():
    x, y = _regression_data()
    net = _net()
    est = _estimator(net, trainer=_sgd(net, learning_rate=0.1))
    rec = _Recorder()
    est.fit(_loader(x, y), epochs=30, event_handlers=[rec])
    assert rec.losses[-1] < 0.05 * rec.losses[0]
    assert all(b <= a for a, b in zip(rec.losses[5:], rec.losses[6:]))


def test_fit_learns_classification():
    rng = np.random.default_rng(4)
    centers = rng.normal(scale=3.0, size=(D_OUT, D_IN)).astype(np.float32)
    labels = rng.integers(0, D_OUT, size=60)
    x = (centers[labels] + rng.normal(size=(60, D_IN))).astype(np.float32)
    net = _net()
    est = _estimator(net, trainer=_sgd(net, learning_rate=0.1),
                     loss=gluon.loss.SoftmaxCrossEntropyLoss())
    assert [m.name for m in est.train_metrics] == ['training accuracy',
                                                   'training softmaxcrossentropyloss']
    est.fit(_loader(x, labels.astype(np.float32), batch=10), epochs=15)
    pred = net(nd.array(x)).asnumpy().argmax(axis=1)
    assert (pred == labels).mean() > 0.9
    # The accuracy metric holds the last epoch's running accuracy, between 0 and 1.
    assert 0.8 < est.train_metrics[0].get()[1] <= 1.0


def test_evaluate_matches_numpy():
    x, y = _regression_data(seed=5, n=20)
    weights = _weights(seed=6)
    net = _net(weights)
    mae = mx.metric.MAE()
    est = _estimator(net, val_metrics=[mae], val_loss=gluon.loss.L1Loss())
    assert [m.name for m in est.val_metrics] == ['validation mae']
    est.evaluate(_loader(x, y, batch=6))      # batches of 6, 6, 6, 2
    pred = x @ weights['weight'].T + weights['bias']
    err = np.abs(pred - y)
    # MXNet's MAE averages the per-batch means, so the short last batch weighs as much.
    batch_means = [err[i:i + 6].mean() for i in range(0, 20, 6)]
    np.testing.assert_allclose(mae.get()[1], np.mean(batch_means), rtol=1e-5)

    # Default validation metrics: copies of the training ones, renamed, updated with val_loss.
    est = _estimator(net, val_loss=gluon.loss.L1Loss())
    assert [m.name for m in est.val_metrics] == ['validation l2loss']
    assert est.val_metrics[0] is not est.train_metrics[0]
    est.evaluate(_loader(x, y, batch=6))
    # The loss metric averages over samples: the L1 loss of each sample is its mean error.
    np.testing.assert_allclose(est.val_metrics[0].get()[1], err.mean(), rtol=1e-5)
    assert math.isnan(est.train_metrics[0].get()[1])  # evaluate leaves training metrics alone


def test_evaluate_uses_val_net():
    x, y = _regression_data(seed=2)
    net, other = _net(_weights(1)), _net(_weights(2))
    est = _estimator(net, val_net=other)
    est.evaluate(_loader(x, y))
    w = _weights(2)
    pred = x @ w['weight'].T + w['bias']
    # L2Loss: half the squared error, averaged over the output axis.
    want = (0.5 * (pred - y) ** 2).mean()
    np.testing.assert_allclose(est.val_metrics[0].get()[1], want, rtol=1e-5)


def test_validation_during_fit_and_batch_period():
    x, y = _regression_data()
    net = _net()
    est = _estimator(net)
    calls = []

    def eval_fn(val_data, batch_axis, event_handlers):
        calls.append((est.trainer.optimizer.num_update, batch_axis, event_handlers))

    marker = _Recorder()
    handler = ValidationHandler(_loader(x, y), eval_fn, epoch_period=2, batch_period=4,
                                event_handlers=marker)
    est.fit(_loader(x, y), epochs=4, event_handlers=[handler])
    # 12 batches: after batches 4, 8, 12 and after epochs 2 and 4 (batch 6 and 12).
    assert [c[0] for c in calls] == [4, 6, 8, 12, 12]
    assert all(c[1] == 0 and c[2] is marker for c in calls)

    # Default ValidationHandler: the validation metrics hold the last epoch's evaluation.
    est = _estimator(net)
    est.fit(_loader(x, y), val_data=_loader(x, y), epochs=1)
    ref = _estimator(net)
    ref.evaluate(_loader(x, y))
    assert est.val_metrics[0].get()[1] == pytest.approx(ref.val_metrics[0].get()[1], rel=1e-6)


# ---- the loop, stopping and handler order --------------------------------------------------
def test_stopping_by_epochs_and_batches():
    x, y = _regression_data()
    est = _estimator(_net())
    rec = _Recorder()
    est.fit(_loader(x, y), epochs=2, event_handlers=[rec])
    epoch = ['epoch_begin'] + ['batch_begin', 'batch_end'] * 3 + ['epoch_end']
    assert rec.events == ['train_begin'] + epoch * 2 + ['train_end']
    assert (est.max_epoch, est.max_batch) == (2, None)

    rec = _Recorder()
    est.fit(_loader(x, y), batches=7, event_handlers=[rec])
    assert rec.events.count('batch_end') == 7
    # A stop inside an epoch still ends that epoch: 3 epoch ends for 3 + 3 + 1 batches.
    assert rec.events.count('epoch_end') == 3
    assert (est.max_epoch, est.max_batch) == (None, 7)

    rec = _Recorder(stop_at_batch=2)          # a handler asking to stop at its 2nd batch
    est.fit(_loader(x, y), epochs=5, event_handlers=[rec])
    # That ends epoch 0 early, but only an epoch end returning True ends training: the
    # StoppingHandler's epoch count goes on to 5 epochs (2 + 4 * 3 batches).
    assert rec.events.count('batch_end') == 14
    assert rec.events.count('epoch_end') == 5


def test_stopping_handler_counts():
    class _Est:
        max_epoch, max_batch = 2, None
    handler = StoppingHandler(max_epoch=9)
    handler.train_begin(_Est())
    assert handler.max_epoch == 2
    assert [handler.batch_end(_Est()) for _ in range(5)] == [False] * 5
    assert [handler.epoch_end(_Est()) for _ in range(2)] == [False, True]


def test_handlers_sorted_by_priority_user_first():
    est = _estimator(_net())
    est.max_epoch, est.max_batch = 1, None
    early = EarlyStoppingHandler(est.val_metrics[0], mode='min')
    late = _Recorder(priority=5000)
    handlers = est._prepare_default_handlers(None, [late, early])
    kinds = [type(h).__name__ for h in handlers]
    assert kinds == ['GradientUpdateHandler', 'MetricHandler', 'EarlyStoppingHandler',
                     'StoppingHandler', '_Recorder', 'LoggingHandler']
    # Handlers given by the user replace the default of the same class.
    mine = GradientUpdateHandler(priority=10)
    handlers = est._prepare_default_handlers(None, mine)
    assert sum(isinstance(h, GradientUpdateHandler) for h in handlers) == 1
    assert handlers[-2] is mine

    cats = est._categorize_handlers([late, early, MetricHandler(est.train_metrics)])
    assert [len(c) for c in cats] == [2, 2, 1, 2, 2, 2]


def test_gradient_update_handler_steps_with_batch_size():
    x, y = _regression_data()
    net = _net()
    est = _estimator(net)
    steps = []
    real_step = est.trainer.step
    est.trainer.step = lambda size, *a, **k: (steps.append(size), real_step(size, *a, **k))
    est.fit(_loader(x, y, batch=10), epochs=1)   # batches of 10, 10, 4
    assert steps == [10, 10, 4]

    # With a user GradientUpdateHandler that skips updates, the weights do not move.
    class _Frozen(GradientUpdateHandler):
        def batch_end(self, estimator, *args, **kwargs):
            pass
    net = _net()
    est = _estimator(net)
    est.fit(_loader(x, y), epochs=1, event_handlers=[_Frozen()])
    for name, value in _weights().items():
        np.testing.assert_array_equal(_params(net)[name], value)


def test_metric_handler_updates_and_resets():
    metric, loss_metric = mx.metric.MAE(), mx.metric.Loss()
    handler = MetricHandler([metric, loss_metric])
    pred, label = [nd.array([[1.0, 2.0]])], [nd.array([[0.0, 4.0]])]
    loss = [nd.array([3.0, 5.0])]
    handler.batch_end(None, pred=pred, label=label, loss=loss)
    assert metric.get()[1] == pytest.approx(1.5)
    assert loss_metric.get()[1] == pytest.approx(4.0)
    handler.epoch_begin(None)
    assert math.isnan(metric.get()[1]) and math.isnan(loss_metric.get()[1])


# ---- logging ---------------------------------------------------------------------------
def test_logging_epoch_messages():
    x, y = _regression_data()
    net = _net()
    est = _estimator(net, trainer=_sgd(net, learning_rate=0.125))
    stream = _log_lines(est)
    rec = _Recorder()
    est.fit(_loader(x, y), val_data=_loader(x, y), epochs=2, event_handlers=[rec])
    lines = stream.getvalue().splitlines()
    assert lines[0] == 'Training begin: using optimizer SGD with current learning rate 0.1250 '
    assert lines[1] == 'Train for 2 epochs.'
    assert lines[2] == '[Epoch 0] Begin, current learning rate: 0.1250'
    # The validation pass, run by the ValidationHandler before the epoch's own log line.
    assert lines[3] == 'Validation Begin'
    val = est.val_metrics[0].get()[1]
    assert re.fullmatch(r'\[Epoch 0\] Finished in \d+\.\d{3}s, validation l2loss: \d+\.\d{4}',
                        lines[4])
    finished = r'\[Epoch %d\] Finished in \d+\.\d{3}s, training l2loss: %.4f'
    assert re.fullmatch(finished % (0, rec.losses[0]), lines[5])
    assert lines[6] == '[Epoch 1] Begin, current learning rate: 0.1250'
    assert re.fullmatch(finished % (1, rec.losses[1]), lines[9])
    assert lines[10] == 'Train finished using total %ds with 2 epochs. training l2loss: %.4f' % (
        int(re.search(r'total (\d+)s', lines[10]).group(1)), rec.losses[1])
    assert '%.4f' % val in lines[8]
    assert len(lines) == 11


def test_logging_batch_interval_and_stdout(capsys):
    x, y = _regression_data()
    net = _net()
    est = Estimator(net, gluon.loss.L2Loss(), trainer=_sgd(net))   # logs to sys.stdout
    handler = LoggingHandler(log_interval=2, metrics=est.train_metrics)
    est.fit(_loader(x, y, batch=5), batches=7, event_handlers=[handler])
    out = capsys.readouterr().out.splitlines()
    batch_lines = [line for line in out if line.startswith('[Epoch') and '[Batch' in line]
    # 5 batches an epoch (5, 5, 5, 5, 4 samples): batches 0, 2, 4 of epoch 0, 0 of epoch 1.
    pattern = (r'\[Epoch (\d)\]\[Batch (\d)\]\[Samples (\d+)\] time/interval: \d+\.\d{3}s '
               r'training l2loss: \d+\.\d{4}')
    got = [re.fullmatch(pattern, line).groups() for line in batch_lines]
    assert got == [('0', '0', '5'), ('0', '2', '15'), ('0', '4', '24'), ('1', '0', '29')]
    assert 'Train for 7 batches.' in out
    # The stop at batch 7 (2nd of epoch 1) still ends the epoch, which resets batch_index.
    assert handler.batch_index == 0 and handler.current_epoch == 2


def test_logging_handler_rejects_bad_interval():
    for bad in ('batch', 1.5, None):
        with pytest.raises(ValueError, match='log_interval'):
            LoggingHandler(log_interval=bad)


# ---- checkpoints ------------------------------------------------------------------------
class _Snapshots(EpochEnd, BatchEnd):
    """The net's weights after every batch and every epoch (run after the update)."""

    def __init__(self, net):
        self.net, self.after_batch, self.after_epoch = net, [], []

    def batch_end(self, estimator, *args, **kwargs):
        self.after_batch.append(_params(self.net))

    def epoch_end(self, estimator, *args, **kwargs):
        self.after_epoch.append(_params(self.net))


def _loaded(path):
    net = _net()
    net.load_parameters(path)
    return _params(net)


def _assert_params_equal(a, b):
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


def test_checkpoint_epochs_rotation_and_contents(tmp_path):
    x, y = _regression_data()
    net = _net()
    est = _estimator(net)
    snaps = _Snapshots(net)
    ckpt = CheckpointHandler(str(tmp_path / 'ck'), model_prefix='m', max_checkpoints=2)
    est.fit(_loader(x, y), epochs=3, event_handlers=[ckpt, snaps])
    files = sorted(os.listdir(tmp_path / 'ck'))
    assert files == ['m-epoch1batch6.params', 'm-epoch1batch6.states',
                     'm-epoch2batch9.params', 'm-epoch2batch9.states']
    _assert_params_equal(_loaded(str(tmp_path / 'ck' / 'm-epoch2batch9.params')),
                         snaps.after_epoch[2])
    _assert_params_equal(_loaded(str(tmp_path / 'ck' / 'm-epoch1batch6.params')),
                         snaps.after_epoch[1])
    assert (ckpt.current_epoch, ckpt.current_batch) == (3, 9)


def test_checkpoint_batch_period_and_symbol(tmp_path):
    x, y = _regression_data()
    net = _net(hybridize=True)
    est = _estimator(net)
    snaps = _Snapshots(net)
    ckpt = CheckpointHandler(str(tmp_path), model_prefix='b', epoch_period=None, batch_period=2,
                             max_checkpoints=10)
    est.fit(_loader(x, y), batches=7, event_handlers=[ckpt, snaps])
    names = sorted(f for f in os.listdir(tmp_path) if f.endswith('.params'))
    # Batch counter 1, 3, 5 (the 2nd, 4th and 6th batch), with the epoch it fell in.
    assert names == ['b-epoch0batch1.params', 'b-epoch1batch3.params', 'b-epoch1batch5.params']
    _assert_params_equal(_loaded(str(tmp_path / 'b-epoch1batch5.params')), snaps.after_batch[5])
    sym = mx.sym.load(str(tmp_path / 'b-symbol.json'))
    assert any(a.endswith('weight') for a in sym.list_arguments())
    out = sym.eval(data=nd.array(x), **{a: net.collect_params()[a].data()
                                        for a in sym.list_arguments() if a != 'data'})
    np.testing.assert_allclose(out[0].asnumpy(), net(nd.array(x)).asnumpy(), rtol=1e-6)


def test_checkpoint_symbol_not_saved_for_plain_block(tmp_path):
    x, y = _regression_data()
    net = gluon.nn.Sequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(D_OUT))
    net.initialize()
    est = _estimator(net)
    stream = _log_lines(est)
    est.fit(_loader(x, y), epochs=1, event_handlers=[CheckpointHandler(str(tmp_path))])
    assert 'model-symbol.json' not in os.listdir(tmp_path)
    assert 'Model architecture (symbol file) is not saved' in stream.getvalue()


class _Scripted(mx.metric.EvalMetric):
    """A metric whose value at the k-th epoch end is values[k] (get() is read once an epoch
    by the handler under test; explicit modes keep the handlers from reading it earlier)."""

    def __init__(self, values):
        super().__init__('scripted')
        self.values = list(values)
        self.reads = 0

    def update(self, labels, preds):
        pass

    def get(self):
        value = self.values[min(self.reads, len(self.values) - 1)]
        self.reads += 1
        return self.name, value


def test_checkpoint_save_best(tmp_path):
    x, y = _regression_data()
    net = _net()
    est = _estimator(net)
    snaps = _Snapshots(net)
    monitor = _Scripted([3.0, 1.0, 2.0, 1.5])
    ckpt = CheckpointHandler(str(tmp_path), monitor=monitor, save_best=True, mode='min',
                             verbose=1)
    stream = _log_lines(est)
    est.fit(_loader(x, y), epochs=4, event_handlers=[ckpt, snaps])
    # The best value came at epoch 1: -best holds that epoch's weights, not the last ones.
    _assert_params_equal(_loaded(str(tmp_path / 'model-best.params')), snaps.after_epoch[1])
    assert os.path.exists(tmp_path / 'model-best.states')
    assert len([f for f in os.listdir(tmp_path) if f.endswith('.params')]) == 5
    log = stream.getvalue()
    assert 'scripted improved from inf to 3.00000' in log
    assert 'scripted improved from 3.00000 to 1.00000' in log
    assert '[Epoch 2] CheckpointHandler: scripted did not improve from 1.00000' in log
    assert 'saving model at %s with prefix: model-epoch3batch12' % tmp_path in log

    with pytest.raises(ValueError, match='monitor'):
        CheckpointHandler(str(tmp_path), save_best=True)


@pytest.mark.parametrize('momentum', [0.0, 0.9])
def test_checkpoint_resume_continues_training(tmp_path, momentum):
    x, y = _regression_data()
    # Reference: 4 epochs in one go.
    ref = _net()
    _estimator(ref, trainer=_sgd(ref, momentum=momentum)).fit(_loader(x, y), epochs=4)

    net = _net()
    est = _estimator(net, trainer=_sgd(net, momentum=momentum))
    est.fit(_loader(x, y), epochs=2,
            event_handlers=[CheckpointHandler(str(tmp_path), max_checkpoints=1)])
    assert sorted(os.listdir(tmp_path)) == ['model-epoch1batch6.params',
                                            'model-epoch1batch6.states']
    # A new process would start from scratch: new weights and a new trainer.
    net = _net(_weights(seed=9))
    est = _estimator(net, trainer=_sgd(net, momentum=momentum))
    stream = _log_lines(est)
    ckpt = CheckpointHandler(str(tmp_path), max_checkpoints=1, resume_from_checkpoint=True)
    rec = _Recorder()
    est.fit(_loader(x, y), epochs=4, event_handlers=[ckpt, rec])
    assert est.max_epoch == 2
    assert rec.events.count('epoch_end') == 2
    assert 'Checkpoint resumed from epoch 1 batch 6, continue to train for 2 epochs' in \
        stream.getvalue()
    assert 'model-epoch3batch12.params' in os.listdir(tmp_path)
    # Weights and optimizer state (momentum) both came back: the result is the straight run's.
    for name, value in _params(ref).items():
        np.testing.assert_allclose(_params(net)[name], value, rtol=1e-5, atol=1e-6)


def test_checkpoint_resume_by_batches_and_errors(tmp_path):
    x, y = _regression_data()
    net = _net()
    est = _estimator(net)
    est.fit(_loader(x, y), batches=4, event_handlers=[
        CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2)])
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith('.params')) == [
        'model-epoch0batch1.params', 'model-epoch1batch3.params']
    ckpt = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2,
                             resume_from_checkpoint=True)
    rec = _Recorder()
    est.fit(_loader(x, y), batches=8, event_handlers=[ckpt, rec])
    assert est.max_batch == 4 and rec.events.count('batch_end') == 4
    # Numbering goes on from the checkpoint: batches 5 and 7 of the whole run.
    assert {'model-epoch2batch5.params', 'model-epoch3batch7.params'} <= set(os.listdir(tmp_path))

    # Nothing left to train.
    ckpt = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2,
                             resume_from_checkpoint=True)
    with pytest.raises(ValueError, match='maximum number of batch'):
        est.fit(_loader(x, y), batches=4, event_handlers=[ckpt])
    # Resuming needs the same kind of period as the training.
    ckpt = CheckpointHandler(str(tmp_path), resume_from_checkpoint=True, batch_period=2)
    with pytest.raises(AssertionError, match='same kind of period'):
        est.fit(_loader(x, y), epochs=10, event_handlers=[ckpt])
    # A file with the checkpoint prefix that is not a checkpoint name.
    (tmp_path / 'model-epochX.params').write_bytes(b'')
    ckpt = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2,
                             resume_from_checkpoint=True)
    with pytest.raises(ValueError, match='cannot parse'):
        est.fit(_loader(x, y), batches=20, event_handlers=[ckpt])


def test_checkpoint_resume_without_checkpoint(tmp_path):
    x, y = _regression_data()
    est = _estimator(_net())
    stream = _log_lines(est)
    ckpt = CheckpointHandler(str(tmp_path / 'new'), resume_from_checkpoint=True)
    est.fit(_loader(x, y), epochs=2, event_handlers=[ckpt])
    assert 'No checkpoint found, training from scratch for 2 epochs' in stream.getvalue()
    assert est.max_epoch == 2 and 'model-epoch1batch6.params' in os.listdir(tmp_path / 'new')


# ---- early stopping ---------------------------------------------------------------------
def _early_run(values, epochs=10, **kw):
    est = _estimator(_net())
    stream = _log_lines(est)
    handler = EarlyStoppingHandler(_Scripted(values), **kw)
    rec = _Recorder()
    x, y = _regression_data()
    est.fit(_loader(x, y), epochs=epochs, event_handlers=[handler, rec])
    return handler, rec.events.count('epoch_end'), stream.getvalue()


def test_early_stopping_patience_min_delta_baseline():
    h, epochs, log = _early_run([5, 4, 4.5, 4.2, 3, 2, 1], mode='min', patience=2)
    assert (h.stopped_epoch, h.current_epoch, epochs) == (3, 4, 4)
    assert '[Epoch 3] EarlyStoppingHandler: early stopping due to scripted not improving' in log

    h, epochs, _ = _early_run([5, 4, 3.9, 3.5, 3.4], mode='min', patience=0, min_delta=0.2)
    # 4 improves on 5 by more than 0.2; 3.9 does not.
    assert (h.stopped_epoch, epochs) == (2, 3)

    h, epochs, _ = _early_run([0.5, 0.6, 0.7, 0.95, 0.96], mode='max', patience=3,
                              baseline=0.9)
    assert (h.stopped_epoch, epochs) == (2, 3)
    assert h.best == 0.9

    h, epochs, _ = _early_run([1, 2, 3, 4], mode='max', patience=0, epochs=4)
    assert (h.stop_training, epochs) == (False, 4)


def test_early_stopping_auto_mode_is_greater_as_in_mxnet():
    # MXNet 1.9.1's auto mode picks 'greater' whatever the metric's name; so does ours.
    with pytest.warns(UserWarning, match='`greater` operator'):
        h = EarlyStoppingHandler(_Scripted([9.0]), mode='auto')
    assert h.monitor_op is np.greater
    # An unknown mode falls back to auto, with a warning of its own.
    with pytest.warns(UserWarning, match='`greater` operator'), \
            pytest.warns(RuntimeWarning, match='unknown'):
        h = EarlyStoppingHandler(mx.metric.Loss(), mode='lowest')
    assert h.monitor_op is np.greater


def test_early_stopping_warns_on_stale_metric():
    with pytest.warns(RuntimeWarning, match='not updated'):
        h, epochs, _ = _early_run([float('nan')], mode='min', epochs=2)
    assert epochs == 2 and not h.stop_training


def test_early_stopping_rejects_bad_monitor():
    with pytest.raises(ValueError, match='monitor'):
        EarlyStoppingHandler('accuracy')
    with pytest.raises(ValueError, match='CompositeEvalMetric'):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric([mx.metric.Accuracy()]))


# ---- batch processor --------------------------------------------------------------------
def test_custom_batch_processor():
    class Counting(BatchProcessor):
        def __init__(self):
            super().__init__()
            self.fit_calls, self.eval_calls = 0, 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            self.fit_calls += 1
            return super().fit_batch(estimator, train_batch, batch_axis)

        def evaluate_batch(self, estimator, val_batch, batch_axis=0):
            self.eval_calls += 1
            return super().evaluate_batch(estimator, val_batch, batch_axis)

    x, y = _regression_data()
    proc = Counting()
    est = _estimator(_net(), batch_processor=proc)
    est.fit(_loader(x, y), val_data=_loader(x, y, batch=12), epochs=2)
    assert (proc.fit_calls, proc.eval_calls) == (6, 4)

    # A processor that trains on twice the loss: with plain SGD, twice the learning rate.
    class Doubled(BatchProcessor):
        def fit_batch(self, estimator, train_batch, batch_axis=0):
            data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
            with autograd.record():
                pred = [estimator.net(d) for d in data]
                loss = [2 * estimator.loss(p, l) for p, l in zip(pred, label)]
            for part in loss:
                part.backward()
            return data, label, pred, loss

    net, ref = _net(), _net()
    _estimator(net, batch_processor=Doubled()).fit(_loader(x, y), epochs=2)
    _manual_fit(ref, _sgd(ref, learning_rate=0.1), gluon.loss.L2Loss(), x, y, 2, [mx.cpu()])
    for name, value in _params(ref).items():
        np.testing.assert_allclose(_params(net)[name], value, rtol=1e-5, atol=1e-6)

    with pytest.raises(ValueError, match='fit_batch'):
        _estimator(_net(), batch_processor=object())


# ---- construction: defaults, warnings, errors -------------------------------------------
def test_default_trainer_and_initializer_warnings():
    net = _net()
    with pytest.warns(UserWarning, match='No trainer specified'):
        est = Estimator(net, gluon.loss.L2Loss())
    assert type(est.trainer.optimizer).__name__ == 'SGD'
    assert est.trainer.learning_rate == pytest.approx(0.001)
    assert est.context == [mx.cpu()]

    with pytest.warns(UserWarning, match='Network already fully initialized'):
        _estimator(net, initializer=mx.init.Zero())
    np.testing.assert_array_equal(_params(net)['weight'], _weights()['weight'])

    # Not initialized: the estimator initializes with the initializer given, on its context.
    fresh = gluon.nn.Dense(D_OUT, in_units=D_IN)
    with pytest.warns(UserWarning, match='No trainer specified'):
        Estimator(fresh, gluon.loss.L2Loss(), initializer=mx.init.Constant(0.25))
    np.testing.assert_array_equal(fresh.weight.data().asnumpy(),
                                  np.full((D_OUT, D_IN), 0.25, np.float32))


def test_composite_and_list_metrics_are_flattened():
    acc, mae, mse = mx.metric.Accuracy(), mx.metric.MAE(), mx.metric.MSE()
    est = _estimator(_net(), train_metrics=mx.metric.CompositeEvalMetric([acc, mae]),
                     val_metrics=[mse])
    assert [m.name for m in est.train_metrics] == ['training accuracy', 'training mae']
    assert [m.name for m in est.val_metrics] == ['validation mse']


@pytest.mark.parametrize('kwargs, error, match', [
    ({'loss': 'mse'}, ValueError, 'loss must be'),
    ({'train_metrics': 'acc'}, ValueError, 'metrics must be'),
    ({'val_metrics': [mx.metric.MAE(), 'mse']}, ValueError, 'metrics must be'),
    ({'context': 'cpu'}, ValueError, 'context must be'),
    ({'context': [mx.cpu(), 'gpu']}, ValueError, 'context must be'),
    ({'context': [mx.gpu(0)]}, AssertionError, r'gpu\(0\) is not available'),
    ({'trainer': 'sgd'}, ValueError, 'trainer must be'),
])
def test_constructor_errors(kwargs, error, match):
    args = {'net': _net(), 'loss': gluon.loss.L2Loss(), 'trainer': None}
    args.update(kwargs)
    if args['trainer'] is None:
        args['trainer'] = _sgd(args['net'])
    with pytest.raises(error, match=match) as info:
        Estimator(**args)
    assert isinstance(info.value, MXNetError)


def test_fit_and_evaluate_errors():
    x, y = _regression_data()
    est = _estimator(_net())
    for bad in ([nd.array(x)], nd.array(x), None):
        with pytest.raises(ValueError, match='DataLoader'):
            est.fit(bad, epochs=1)
        with pytest.raises(ValueError, match='DataLoader'):
            est.evaluate(bad)
    with pytest.raises(ValueError, match='exactly one of epochs and batches'):
        est.fit(_loader(x, y), epochs=1, batches=1)
    with pytest.raises(ValueError, match='exactly one of epochs and batches'):
        est.fit(_loader(x, y))
    with pytest.raises(ValueError, match='EventHandler'):
        est.fit(_loader(x, y), epochs=1, event_handlers=['log'])
    empty = gluon.data.DataLoader(gluon.data.ArrayDataset(nd.zeros((0, D_IN)),
                                                          nd.zeros((0, D_OUT))), batch_size=4)
    with pytest.raises(ValueError, match='yielded no batch'):
        est.fit(empty, batches=3)


def test_handlers_must_share_the_estimators_metrics():
    x, y = _regression_data()
    est = _estimator(_net())
    # A metric the estimator does not own would never be updated next to default handlers.
    with pytest.raises(ValueError, match='metric'):
        est.fit(_loader(x, y), epochs=1,
                event_handlers=[LoggingHandler(metrics=[mx.metric.MAE()])])
    with pytest.raises(ValueError, match='metric'):
        est.evaluate(_loader(x, y), event_handlers=[LoggingHandler(metrics=est.train_metrics)])
    # All of the estimator's own metrics are fine, and so is replacing every default.
    est.fit(_loader(x, y), epochs=1, event_handlers=[LoggingHandler(metrics=est.train_metrics)])
    est.evaluate(_loader(x, y), event_handlers=[LoggingHandler(metrics=est.val_metrics)])
