"""The Module API (mx.mod, mx.model, mx.callback, mx.monitor): training and prediction against
real MXNet 1.9.1 (fixtures in tests/mxnet_ref/module/, written by
tests/mxnet_ref/gen_module_ref.py, whose scenario functions run here unchanged), forward and
backward against NumPy, checkpoints both ways, bucketing, data parallelism and errors."""
import json
import logging
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.module.executor_group import _split_input_slice

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import gen_module_ref as G  # noqa: E402

FIX = os.path.join(HERE, 'mxnet_ref', 'module')


@pytest.fixture(scope='module')
def ref():
    return (np.load(os.path.join(FIX, 'module.npz')),
            json.load(open(os.path.join(FIX, 'module.json'))))


def _mlp_numpy(x, p):
    h = np.tanh(x @ p['fc1_weight'].T + p['fc1_bias'])
    z = h @ p['fc2_weight'].T + p['fc2_bias']
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return h, e / e.sum(axis=1, keepdims=True)


# ---- against MXNet -------------------------------------------------------------------------
@pytest.mark.parametrize('scenario', sorted(G.FIT_SCENARIOS))
def test_fit_matches_mxnet(ref, scenario):
    arrays, meta = ref
    x, y = G.data()
    got, got_meta = G.fit(mx, scenario, x, y, G.init_params())
    for key, value in got.items():
        np.testing.assert_allclose(value, arrays[key], rtol=1e-4, atol=1e-5, err_msg=key)
    for key, value in got_meta.items():
        assert value == pytest.approx(meta[key], rel=1e-4), key


def test_bucketing_matches_mxnet(ref):
    arrays, _ = ref
    for key, value in G.bucketing(mx).items():
        np.testing.assert_allclose(value, arrays[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_checkpoint_written_by_mxnet_loads_and_predicts(ref):
    arrays, _ = ref
    x, y = G.data()
    prefix = os.path.join(FIX, 'mlp')
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 2)
    assert sorted(arg_params) == ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight']
    assert aux_params == {} and sym.list_outputs() == ['softmax_output']
    mod = mx.mod.Module.load(prefix, 2)
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    np.testing.assert_allclose(mod.predict(it).asnumpy(), arrays['ckpt_predict'], rtol=1e-5,
                               atol=1e-6)
    # The same numbers from NumPy on the loaded parameters.
    _, prob = _mlp_numpy(x, {k: v.asnumpy() for k, v in arg_params.items()})
    np.testing.assert_allclose(arrays['ckpt_predict'], prob, rtol=1e-4, atol=1e-6)


# ---- training ------------------------------------------------------------------------------
def test_fit_separable_data_reaches_high_accuracy():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 4, size=400)
    x = rng.normal(0, 0.6, size=(400, 8)).astype(np.float32)
    x[np.arange(400), y] += 2.5
    train = mx.io.NDArrayIter(x[:300], y[:300].astype(np.float32), batch_size=20, shuffle=True)
    val = mx.io.NDArrayIter(x[300:], y[300:].astype(np.float32), batch_size=20)
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=16, name='fc1')
    net = mx.sym.Activation(net, act_type='relu')
    net = mx.sym.FullyConnected(net, num_hidden=4, name='fc2')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    mx.random.seed(0)
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    seen = []
    mod.fit(train, eval_data=val, num_epoch=8, optimizer='sgd',
            optimizer_params={'learning_rate': 0.2, 'momentum': 0.9},
            initializer=mx.init.Xavier(),
            epoch_end_callback=lambda epoch, sym, arg, aux: seen.append(epoch))
    assert seen == list(range(8))
    assert mod.score(val, 'acc')[0][1] > 0.95
    # predict keeps the example order and drops nothing.
    pred = mod.predict(val).asnumpy()
    assert pred.shape == (100, 4)
    assert (pred.argmax(axis=1) == y[300:]).mean() > 0.95


def test_forward_backward_match_numpy_on_two_devices():
    x, y = G.data()
    x, y = x[:6], y[:6]
    p = G.init_params()
    mod = mx.mod.Module(G.mlp(mx), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[2, 1])
    mod.bind([('data', x.shape)], [('softmax_label', y.shape)], inputs_need_grad=True)
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in p.items()})
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    mod.backward()
    h, prob = _mlp_numpy(x, p)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), prob, rtol=1e-5, atol=1e-6)
    # SoftmaxOutput's gradient is prob - onehot (normalization 'null'), then the chain rule.
    dz = prob - np.eye(G.CLASSES)[y.astype(int)]
    dh = dz @ p['fc2_weight'] * (1 - h ** 2)
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), dh @ p['fc1_weight'],
                               rtol=1e-4, atol=1e-6)
    # The batch went 4 + 2 to the devices; the gradients of the halves sum to the whole.
    group = mod._exec_group
    assert group.slices == [slice(0, 4), slice(4, 6)]
    assert [e.arg_dict['data'].shape for e in group.execs] == [(4, 5), (2, 5)]
    names = group.param_names
    w2 = [g for n, g in zip(names, group.grad_arrays) if n == 'fc2_weight'][0]
    np.testing.assert_allclose(w2[0].asnumpy() + w2[1].asnumpy(), dz.T @ h, rtol=1e-4,
                               atol=1e-6)


def test_update_applies_sgd_with_rescaled_gradient():
    sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    sym = mx.sym.LinearRegressionOutput(sym, name='lro')
    x = np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)
    t = np.random.RandomState(1).normal(size=(4, 2)).astype(np.float32)
    w = np.random.RandomState(2).normal(size=(2, 3)).astype(np.float32)
    b = np.zeros(2, np.float32)
    mod = mx.mod.Module(sym, label_names=['lro_label'], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([('data', (4, 3))], [('lro_label', (4, 2))])
    mod.init_params(arg_params={'fc_weight': mx.nd.array(w), 'fc_bias': mx.nd.array(b)})
    mod.init_optimizer(kvstore='device', optimizer_params={'learning_rate': 0.5})
    assert mod._optimizer.rescale_grad == pytest.approx(0.25)
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(t)]))
    mod.update()
    # LinearRegressionOutput: d/dpred = (pred - label) / outputs per example.
    err = (x @ w.T + b - t) / 2
    new_w = w - 0.5 * 0.25 * err.T @ x
    new_b = b - 0.5 * 0.25 * err.sum(axis=0)
    args, _ = mod.get_params()
    np.testing.assert_allclose(args['fc_weight'].asnumpy(), new_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(args['fc_bias'].asnumpy(), new_b, rtol=1e-5, atol=1e-6)
    # Every device holds the updated weight.
    for arr in mod._exec_group.param_arrays[mod._exec_group.param_names.index('fc_weight')]:
        np.testing.assert_allclose(arr.asnumpy(), new_w, rtol=1e-5, atol=1e-6)


def test_forward_with_new_batch_size_reshapes():
    sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=3, name='fc')
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([('data', (4, 2))])
    mod.init_params(initializer=mx.init.One())
    for n in (4, 7, 2):
        mod.forward(mx.io.DataBatch([mx.nd.ones((n, 2))]), is_train=False)
        out = mod.get_outputs()[0].asnumpy()
        assert out.shape == (n, 3)
        np.testing.assert_allclose(out, np.full((n, 3), 2.0))
    assert mod.data_shapes[0].shape == (2, 2)


def test_fixed_params_and_grad_req_add():
    sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    sym = mx.sym.MakeLoss(mx.sym.sum(sym))
    mod = mx.mod.Module(sym, label_names=None, fixed_param_names=['fc_bias'])
    mod.bind([('data', (3, 2))], grad_req='add')
    mod.init_params(initializer=mx.init.One())
    batch = mx.io.DataBatch([mx.nd.ones((3, 2))])
    for _ in range(2):
        mod.forward_backward(batch)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    np.testing.assert_allclose(grads['fc_weight'][0].asnumpy(), np.full((2, 2), 6.0))
    assert grads['fc_bias'][0] is None and mod._exec_group.grad_req['fc_bias'] == 'null'


def test_save_load_checkpoint_round_trip_with_optimizer_states(tmp_path):
    x, y = G.data()
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    mod = mx.mod.Module(G.mlp(mx), context=[mx.cpu(0), mx.cpu(1)])
    mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1, 'momentum': 0.9},
            arg_params={k: mx.nd.array(v) for k, v in G.init_params().items()})
    prefix = str(tmp_path / 'net')
    mod.save_checkpoint(prefix, 5, save_optimizer_states=True)
    for name in ('net-symbol.json', 'net-0005.params', 'net-0005.states'):
        assert (tmp_path / name).exists()
    mod2 = mx.mod.Module.load(prefix, 5, load_optimizer_states=True,
                              context=[mx.cpu(0), mx.cpu(1)])
    mod2.bind(it.provide_data, it.provide_label)
    mod2.init_optimizer(optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    states1, states2 = mod._kvstore._updater.states, mod2._kvstore._updater.states
    assert sorted(states1) == sorted(states2) and states1
    for k in states1:
        np.testing.assert_array_equal(states1[k].asnumpy(), states2[k].asnumpy())
    np.testing.assert_array_equal(mod.predict(it).asnumpy(), mod2.predict(it).asnumpy())
    # One more epoch from the same state gives the same parameters.
    for m in (mod, mod2):
        it.reset()  # fit resets the iterator only after each epoch, as MXNet's does
        with pytest.warns(UserWarning, match='already initialized'):  # fit keeps them
            m.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(mod2.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-6)
    # save_params / load_params and mx.model.load_params.
    mod.save_params(str(tmp_path / 'p.params'))
    args, auxs = mx.model.load_params(str(tmp_path / 'net'), 5)
    assert sorted(args) == sorted(mod.get_params()[0]) and auxs == {}
    mod2.load_params(str(tmp_path / 'p.params'))
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(mod2.get_params()[0][k].asnumpy(), v.asnumpy())


def test_bucketing_shares_parameters_and_checkpoints(tmp_path):
    sym_gen = G.bucket_sym_gen(mx)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind([('data', (G.BATCH, 4, G.IN_UNITS))], [('softmax_label', (G.BATCH,))])
    mod.init_params(initializer=mx.init.Uniform(0.3))
    mod.init_optimizer(optimizer_params={'learning_rate': 0.1})
    for batch in G.bucket_batches(mx)[:2]:
        mod.forward_backward(batch)
        mod.update()
    assert sorted(mod._buckets) == [2, 4]
    b4, b2 = mod._buckets[4]._exec_group.execs[0], mod._buckets[2]._exec_group.execs[0]
    assert mx.test_utils.same_array(b4.arg_dict['shared_weight'], b2.arg_dict['shared_weight'])
    assert mod._buckets[2]._optimizer is mod._buckets[4]._optimizer
    prefix = str(tmp_path / 'bk')
    mod.save_checkpoint(prefix, 1)
    mod2 = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen, default_bucket_key=4)
    mod2.bind([('data', (G.BATCH, 4, G.IN_UNITS))], [('softmax_label', (G.BATCH,))],
              for_training=False)
    assert sorted(mod2._buckets) == [2, 4]
    batch = G.bucket_batches(mx)[1]  # a key-2 batch, bound on first sight
    mod.forward(batch, is_train=False)
    mod2.forward(batch, is_train=False)
    np.testing.assert_allclose(mod2.get_outputs()[0].asnumpy(),
                               mod.get_outputs()[0].asnumpy(), rtol=1e-6)
    # A batch without provide_data: its arrays give the shapes of a new bucket.
    bare = mx.io.DataBatch([mx.nd.ones((G.BATCH, 3, G.IN_UNITS))], bucket_key=3)
    with pytest.warns(UserWarning, match="label_shapes don't match"):  # bound without labels
        mod2.forward(bare, is_train=False)
    assert sorted(mod2._buckets) == [2, 3, 4]
    assert mod2.get_outputs()[0].shape == (G.BATCH, G.CLASSES)


def test_states_and_get_input_grads_layout():
    data = mx.sym.Variable('data')
    state = mx.sym.Variable('state')
    out = mx.sym.FullyConnected(data, num_hidden=3, name='fc') + state
    mod = mx.mod.Module(out, label_names=None, state_names=['state'],
                        context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([('data', (4, 2))], for_training=False)
    mod.init_params(initializer=mx.init.Zero())
    mod.set_states(value=2)
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 2))]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.full((4, 3), 2.0))
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(2, 3), (2, 3)]
    mod.set_states(states=[[mx.nd.full((2, 3), 5), mx.nd.full((2, 3), 7)]])
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 2))]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy()[:, 0], [5, 5, 7, 7])
    assert len(mod.get_states(merge_multi_context=False)) == 1


def test_split_input_slice():
    assert _split_input_slice(10, [1, 1]) == [slice(0, 5), slice(5, 10)]
    assert _split_input_slice(5, [1, 1]) == [slice(0, 2), slice(2, 5)]  # round half to even
    assert _split_input_slice(9, [1, 2]) == [slice(0, 3), slice(3, 9)]
    with pytest.raises(ValueError, match='empty'):
        _split_input_slice(1, [1, 1])


# ---- monitor and callbacks -----------------------------------------------------------------
def test_monitor_reports_forward_and_backward_arrays():
    x = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc_0')
    x = mx.sym.Activation(x, act_type='sigmoid', name='act_0')
    x = mx.sym.LinearRegressionOutput(x, name='lro')
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.sum(a), sort=True)
    mod = mx.mod.Module(x, label_names=['lro_label'])
    mod.bind([('data', (1, 2))], [('lro_label', (1, 2))])
    mod.install_monitor(mon)
    w = np.array([[.15, .20], [.25, .30]], np.float32)
    b = np.array([.35, .35], np.float32)
    mod.init_params(arg_params={'fc_0_weight': mx.nd.array(w), 'fc_0_bias': mx.nd.array(b)})
    data = np.array([[0.05, 0.1]], np.float32)
    label = np.array([[0.01, 0.99]], np.float32)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)]))
    res = {name: float(v) for _, name, v in mon.toc()}
    # MXNet's names: outputs, arguments, and one output per input of each backward node.
    assert sorted(res) == sorted([
        'act_0_backward_output', 'act_0_output', 'data', 'fc_0_backward_output0',
        'fc_0_backward_output1', 'fc_0_backward_output2', 'fc_0_bias', 'fc_0_output',
        'fc_0_weight', 'lro_backward_output0', 'lro_backward_output1', 'lro_label',
        'lro_output'])
    z = data @ w.T + b
    s = 1 / (1 + np.exp(-z))
    dz = (s - label) / 2 * s * (1 - s)  # LinearRegressionOutput divides by its 2 outputs
    expect = {'fc_0_output': z.sum(), 'act_0_output': s.sum(), 'lro_backward_output0':
              (s - label).sum() / 2, 'act_0_backward_output': dz.sum(),
              'fc_0_backward_output0': (dz @ w).sum(), 'fc_0_backward_output1':
              (dz.T @ data).sum(), 'fc_0_backward_output2': dz.sum()}
    for name, value in expect.items():
        assert res[name] == pytest.approx(float(value), rel=1e-5), name
    mon.tic()  # interval 1: the next batch is collected too
    assert mon.activated


def test_callbacks(tmp_path, caplog):
    x, y = G.data()
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    mod = mx.mod.Module(G.mlp(mx))
    prefix = str(tmp_path / 'cb')
    bar = []
    with caplog.at_level(logging.INFO):
        mod.fit(it, eval_data=it, num_epoch=2, initializer=mx.init.Xavier(),
                epoch_end_callback=mx.callback.do_checkpoint(prefix, period=2),
                batch_end_callback=[mx.callback.Speedometer(G.BATCH, frequent=1),
                                    mx.callback.log_train_metric(1),
                                    mx.callback.ProgressBar(total=3),
                                    lambda p: bar.append((p.epoch, p.nbatch))],
                eval_end_callback=mx.callback.LogValidationMetricsCallback())
    assert bar == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert not os.path.exists(prefix + '-0001.params')
    sym, args, _ = mx.model.load_checkpoint(prefix, 2)
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(args[k].asnumpy(), v.asnumpy())
    text = caplog.text
    assert 'Speed:' in text and 'Train-accuracy=' in text and 'Validation-accuracy=' in text
    assert '[' + '=' * 80 + '] 100%' in text or '=' * 53 in text


# ---- errors --------------------------------------------------------------------------------
def test_errors_for_bad_arguments():
    sym = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    with pytest.raises(ValueError, match="'img' is not found"):
        mx.mod.Module(sym, data_names=['img'])
    with pytest.raises(ValueError, match='work_load_list'):
        mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1])
    with pytest.raises(TypeError, match='context'):
        mx.mod.Module(sym, context='cpu')
    mod = mx.mod.Module(sym, label_names=None)
    with pytest.raises(mx.MXNetError, match='bind'):
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
    with pytest.raises(TypeError):
        mod.bind(data_shapes=[('data', mx.nd.array([2, 3]))])
    assert not mod.binded
    with pytest.raises(ValueError, match="don't match"):
        mod.bind(data_shapes=[('x', (2, 3))])
    mod.bind(data_shapes=[('data', (2, 3))])
    with pytest.raises(mx.MXNetError, match='init_params'):
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
    with pytest.raises(AssertionError):  # MXNet's exception class still catches it
        mod.get_outputs()
    mod.init_params()
    with pytest.raises(mx.MXNetError, match='init_optimizer'):
        mod.update()
    with pytest.raises(mx.MXNetError, match='inputs_need_grad'):
        mod.get_input_grads()
    with pytest.raises(RuntimeError, match='fc_bias is not presented'):
        mod.set_params({'fc_weight': mx.nd.ones((2, 3))}, {})
    extra = {'fc_weight': mx.nd.ones((2, 3)), 'fc_bias': mx.nd.ones(2),
             'fc_extra': mx.nd.ones(1)}
    with pytest.raises(ValueError, match='fc_extra'):
        mod.set_params(extra, {}, allow_missing=True)
    mod.set_params(extra, {}, allow_missing=True, allow_extra=True)
    mod.set_params(extra, {})  # MXNet: without allow_missing, extra names are not looked at
    with pytest.raises(mx.MXNetError, match=r'fc_weight has shape \(2, 3\)'):
        mod.set_params({'fc_weight': mx.nd.ones((3, 3)), 'fc_bias': mx.nd.ones(2)}, {})
    mod.set_params({'fc_weight': np.full((2, 3), 2.0), 'fc_bias': np.zeros(2)}, {})  # NumPy
    np.testing.assert_array_equal(mod.get_params()[0]['fc_weight'].asnumpy(), np.full((2, 3), 2))
    with pytest.raises(TypeError, match='optimizer'):
        mod.init_optimizer(optimizer=42)
    with pytest.raises(ValueError, match='number of epochs'):
        mod.fit(mx.io.NDArrayIter(np.ones((2, 3))))
    with pytest.raises(ValueError, match='DataIter'):
        mod.predict([1, 2, 3])
    with pytest.raises(ValueError, match='default_bucket_key'):
        mx.mod.BucketingModule(G.bucket_sym_gen(mx))
    with pytest.raises(mx.MXNetError, match='inputs_need_grad'):
        mx.mod.Module(sym, label_names=None).bind([('data', (2, 3))], for_training=False,
                                                  inputs_need_grad=True)


# ---- SequentialModule and PythonLossModule -------------------------------------------------
def _two_stage(second_takes_labels=True):
    fc1 = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=G.HIDDEN, name='fc1')
    first = mx.mod.Module(mx.sym.Activation(fc1, act_type='tanh', name='tanh1'),
                          label_names=None)
    fc2 = mx.sym.FullyConnected(mx.sym.Variable('hidden'), num_hidden=G.CLASSES, name='fc2')
    second = mx.mod.Module(mx.sym.SoftmaxOutput(fc2, name='softmax'), data_names=['hidden'])
    seq = mx.mod.SequentialModule()
    seq.add(first).add(second, take_labels=second_takes_labels, auto_wiring=True)
    return seq


def test_sequential_module_trains_like_one_module():
    x, y = G.data()
    init = {k: mx.nd.array(v) for k, v in G.init_params().items()}
    opt = {'learning_rate': 0.1, 'momentum': 0.9}
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    whole = mx.mod.Module(G.mlp(mx))
    whole.fit(it, num_epoch=2, optimizer_params=opt, arg_params=init)
    it.reset()
    seq = _two_stage()
    seq.fit(it, num_epoch=2, optimizer_params=opt, arg_params=init, allow_missing=False)
    assert seq.data_names == ['data'] and seq.output_names == ['softmax_output']
    assert seq.label_shapes[0].name == 'softmax_label'
    got, want = seq.get_params()[0], whole.get_params()[0]
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seq.predict(it).asnumpy(), whole.predict(it).asnumpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match='Unknown meta'):
        seq.add(mx.mod.Module(G.mlp(mx)), take_label=True)
    with pytest.raises(mx.MXNetError, match='empty'):
        mx.mod.SequentialModule().bind([('data', (2, 3))])


def test_python_loss_module_gives_softmax_gradient():
    x, y = G.data()
    init = {k: mx.nd.array(v) for k, v in G.init_params().items()}
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=G.HIDDEN, name='fc1')
    net = mx.sym.Activation(net, act_type='tanh')
    logits = mx.sym.FullyConnected(net, num_hidden=G.CLASSES, name='fc2')

    def grad(scores, labels):  # d(cross-entropy)/d(logits), as SoftmaxOutput's backward
        return mx.nd.softmax(scores) - mx.nd.one_hot(labels, G.CLASSES)

    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(logits, label_names=None))
    seq.add(mx.mod.PythonLossModule(grad_func=grad), take_labels=True, auto_wiring=True)
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    seq.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1}, arg_params=init,
            eval_metric=mx.metric.Loss())
    it.reset()
    whole = mx.mod.Module(G.mlp(mx))
    whole.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1}, arg_params=init)
    got, want = seq.get_params()[0], whole.get_params()[0]
    for k in want:
        np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-5, atol=1e-6)
    loss = mx.mod.PythonLossModule()
    loss.bind([('data', (2, 3))], [('softmax_label', (2,))])
    loss.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones(2)]))
    with pytest.raises(NotImplementedError, match='grad_func'):
        loss.backward()


def test_monitor_backward_with_hidden_outputs_and_aux_states():
    data = mx.sym.Variable('data')
    x = mx.sym.FullyConnected(data, num_hidden=4, name='fc')
    x = mx.sym.BatchNorm(x, moving_mean=mx.sym.var('bn_moving_mean', init=mx.init.Zero()),
                         moving_var=mx.sym.var('bn_moving_var', init=mx.init.One()), name='bn')
    parts = mx.sym.split(x, num_outputs=2, axis=1, name='sp')
    x = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(parts[0] - 2 * parts[1])), name='loss')
    seen = {}
    mon = mx.mon.Monitor(1, stat_func=lambda a: a.copy(), pattern='.*_backward_.*')
    mod = mx.mod.Module(x, label_names=None)
    mod.bind([('data', (5, 3))])
    mod.install_monitor(mon)
    mod.init_params(mx.init.Xavier())
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(np.random.RandomState(0).rand(5, 3))]))
    for _, name, _ in mon.toc():
        seen[name] = True
    # BatchNorm's gradient goes to data, gamma and beta, not to its two auxiliary states.
    assert {'bn_backward_output0', 'bn_backward_output1', 'bn_backward_output2'} <= set(seen)
    assert 'bn_backward_output3' not in seen
    # fc is used once: its per-node weight gradient is the executor's weight gradient.
    got = {}
    exe = mod._exec_group.execs[0]
    exe.set_monitor_callback(lambda name, arr: got.__setitem__(name.decode(), arr.asnumpy()))
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(got['fc_backward_output1'], exe.grad_dict['fc_weight'].asnumpy(),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got['bn_backward_output1'], exe.grad_dict['bn_gamma'].asnumpy(),
                               rtol=1e-4, atol=1e-6)


def test_predict_options_and_iter_predict():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    data = mx.sym.Variable('data')
    sym = mx.sym.Group([data * 2, mx.sym.sum(data, axis=1)])
    mod = mx.mod.Module(sym, label_names=None)
    it = mx.io.NDArrayIter(x, batch_size=2)  # 3 batches, the last padded by 1
    mod.bind(it.provide_data, for_training=False)
    mod.init_params()
    doubled, sums = mod.predict(it)
    np.testing.assert_array_equal(doubled.asnumpy(), 2 * x)  # the padding is dropped
    np.testing.assert_array_equal(sums.asnumpy(), x.sum(axis=1))
    per_batch = mod.predict(it, merge_batches=False)
    assert [len(b) for b in per_batch] == [2, 2, 2]
    assert [b[0].shape[0] for b in per_batch] == [2, 2, 1]
    assert len(mod.predict(it, num_batch=1)[0]) == 2
    got = [(outs[1].asnumpy().tolist(), n, batch.pad) for outs, n, batch in mod.iter_predict(it)]
    assert got == [([1, 5], 0, 0), ([9, 13], 1, 0), ([17], 2, 1)]
    one = mx.mod.Module(mx.sym.Variable('data') + 1, label_names=None)
    one.bind(it.provide_data, for_training=False)
    one.init_params()
    assert isinstance(one.predict(it), mx.nd.NDArray)
    assert isinstance(one.predict(it, always_output_list=True), list)
    np.testing.assert_array_equal(one.predict(x[:2]).asnumpy(), x[:2] + 1)  # a NumPy batch


def test_fit_begin_epoch_and_validation_metric():
    x, y = G.data()
    it = mx.io.NDArrayIter(x, y, batch_size=G.BATCH)
    mod = mx.mod.Module(G.mlp(mx))
    epochs, scores = [], []
    mod.fit(it, eval_data=it, num_epoch=4, begin_epoch=2, eval_metric='acc',
            validation_metric='ce', initializer=mx.init.Xavier(),
            epoch_end_callback=lambda e, *_: epochs.append(e),
            eval_end_callback=lambda p: scores.append(p.eval_metric.get()))
    assert epochs == [2, 3]
    assert [name for name, _ in scores] == ['cross-entropy', 'cross-entropy']
    assert mod.optimizer_initialized and mod.params_initialized and mod.binded


def test_init_params_sets_running_stats_and_prelu_slopes_as_mxnet():
    # The variables BatchNorm and PReLU create for their missing inputs carry MXNet's __init__
    # attribute (its FSetInputVarAttrOnCompose), so the default initializer needs no pattern.
    d = mx.sym.var('data')
    y = mx.sym.BatchNorm(mx.sym.FullyConnected(d, num_hidden=4, name='fc'), name='bn')
    y = mx.sym.LeakyReLU(y, act_type='prelu', name='pr')
    inits = {n: a['__init__'] for n, a in y.attr_dict().items() if '__init__' in a}
    assert inits == {'bn_moving_mean': '["zero", {}]', 'bn_moving_var': '["one", {}]',
                     'pr_gamma': '["Constant", {"value": 0.25}]'}  # MXNet 1.9.1's strings
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(y, name='softmax'))
    mod.bind([('data', (2, 3))], [('softmax_label', (2,))])
    mod.init_params(mx.init.Uniform(0.5))
    arg, aux = mod.get_params()
    np.testing.assert_array_equal(aux['bn_moving_mean'].asnumpy(), np.zeros(4))
    np.testing.assert_array_equal(aux['bn_moving_var'].asnumpy(), np.ones(4))
    np.testing.assert_array_equal(arg['pr_gamma'].asnumpy(), np.full(4, 0.25))
    w = arg['fc_weight'].asnumpy()
    assert np.abs(w).max() <= 0.5 and np.abs(w).max() > 0  # the given initializer
