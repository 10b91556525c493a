"""CUDA graphs (docs/gpu.md): a block hybridized with static_alloc and static_shape, called on
GPU arrays without recording, replays one CUDA graph per call. Each test checks the replayed
results against the same network run op by op, and the graph's state through the cached op's
stats. Without a GPU every test here skips.
"""
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon
from hybridgluon.gluon import nn

HAVE_GPU = mx.context.num_gpus() > 0
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not HAVE_GPU, reason='no GPU in this process (num_gpus() == 0)')]


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
            nn.MaxPool2D(2), nn.Conv2D(16, 3, strides=2, use_bias=False),
            nn.Activation('tanh'), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(10))
    return net


def _pair(make=_convnet, shape=(2, 3, 12, 12)):
    """The same network twice on gpu(0): one static (graphs), one hybridized op by op."""
    mx.random.seed(3)
    ctx = mx.gpu(0)
    ref = make()
    ref.initialize(mx.init.Xavier(), ctx=ctx)
    ref(mx.nd.zeros(shape, ctx=ctx))
    net = make()
    net.initialize(ctx=ctx)
    net(mx.nd.zeros(shape, ctx=ctx))
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        p.set_data(q.data())
    # different running statistics than the initial ones, so inference BatchNorm matters
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        if 'running' in p.name:
            v = mx.nd.array(np.random.RandomState(1).rand(*p.shape) + 0.5, ctx=ctx)
            p.set_data(v)
            q.set_data(v)
    ref.hybridize()
    net.hybridize(static_alloc=True, static_shape=True)
    return net, ref


def _graph(net):
    return net._cached_op.stats()['cuda_graph']


def _x(shape, seed):
    return mx.nd.array(np.random.RandomState(seed).randn(*shape).astype(np.float32),
                       ctx=mx.gpu(0))


def _close(a, b):
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_static_block_replays_its_graph():
    net, ref = _pair()
    outs = []
    for i in range(6):
        x = _x((2, 3, 12, 12), i)
        y = net(x)
        assert y.context == mx.gpu(0)
        _close(y, ref(x))
        outs.append((y, ref(x)))
    g = _graph(net)
    assert g['state'] == 'recorded', g
    assert g['captures'] == 1 and g['replays'] == 5, g
    assert _graph(ref)['state'] == 'none'
    # each call's output is its own array: later replays did not overwrite earlier results
    for y, r in outs:
        _close(y, r)


def test_one_input_array_updated_in_place():
    net, ref = _pair()
    x = _x((2, 3, 12, 12), 0)
    for i in range(4):
        x[:] = _x((2, 3, 12, 12), 10 + i)
        _close(net(x), ref(x))
    assert _graph(net)['state'] == 'recorded'


def test_parameter_updates_are_seen():
    net, ref = _pair()
    for i in range(3):
        _close(net(_x((2, 3, 12, 12), i)), ref(_x((2, 3, 12, 12), i)))
    # in place (what Trainer.step does): the graph reads the parameter where it is
    for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
        if p.name.endswith('weight'):
            w = q.data() * 0.5
            q.set_data(w)
            p.set_data(w)
    x = _x((2, 3, 12, 12), 7)
    _close(net(x), ref(x))
    assert _graph(net)['captures'] == 1
    # moved (new arrays): the graph is recorded again for the new addresses, then replayed
    net.collect_params().reset_ctx(mx.cpu())
    net.collect_params().reset_ctx(mx.gpu(0))
    caps = []
    for i in range(6):
        x = _x((2, 3, 12, 12), 20 + i)
        _close(net(x), ref(x))
        caps.append(_graph(net)['captures'])
    g = _graph(net)
    assert g['state'] == 'recorded' and caps[0] >= 2 and caps[-1] == caps[2], (g, caps)


def test_new_shape_records_again():
    net, ref = _pair()
    for shape in [(2, 3, 12, 12)] * 3 + [(5, 3, 16, 16)] * 3 + [(2, 3, 12, 12)] * 2:
        x = _x(shape, sum(shape))
        _close(net(x), ref(x))
    g = _graph(net)
    assert g['state'] == 'recorded' and g['captures'] == 3, g


def test_many_shapes_end_in_op_by_op():
    net, ref = _pair()
    for b in range(1, 12):
        for _ in range(2):
            x = _x((b, 3, 12, 12), b)
            _close(net(x), ref(x))
    g = _graph(net)
    assert g['state'] == 'off' and 'too many' in g['why'], g
    x = _x((3, 3, 12, 12), 99)
    _close(net(x), ref(x))


def test_recording_and_training_calls_run_op_by_op():
    net, ref = _pair()
    x = _x((2, 3, 12, 12), 0)
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    x2 = _x((2, 3, 12, 12), 0)
    x2.attach_grad()
    with autograd.record():
        y2 = ref(x2)
    y2.backward()
    _close(y, y2)
    _close(x.grad, x2.grad)
    assert _graph(net)['state'] == 'none'
    with autograd.train_mode():
        net(x)
    assert _graph(net)['state'] == 'none'


def test_block_that_cannot_be_recorded_runs_op_by_op():
    """A random draw cannot be replayed: the block keeps running op by op, with fresh numbers."""
    class Noisy(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.Dropout(x, p=0.5, mode='always')

    net = Noisy()
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.ones((64, 64), ctx=mx.gpu(0))
    outs = [net(x).asnumpy() for _ in range(4)]
    g = _graph(net)
    assert g['state'] == 'off' and 'random' in g['why'], g
    assert not np.array_equal(outs[2], outs[3])


def test_head_that_is_an_input_and_two_heads():
    class Two(nn.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x, F.relu(x) + y

    net = Two()
    net.hybridize(static_alloc=True, static_shape=True)
    for i in range(4):
        x, y = _x((3, 5), i), _x((3, 5), 50 + i)
        a, b = net(x, y)
        np.testing.assert_array_equal(a.asnumpy(), x.asnumpy())
        np.testing.assert_allclose(b.asnumpy(), np.maximum(x.asnumpy(), 0) + y.asnumpy(),
                                   rtol=1e-6)
    assert _graph(net)['state'] == 'recorded'


def test_threads_share_one_static_block():
    net, ref = _pair()
    xs = [_x((2, 3, 12, 12), i) for i in range(8)]
    want = [ref(x).asnumpy() for x in xs]
    net(xs[0])
    net(xs[1])
    errors = []

    def work(k):
        try:
            for _ in range(5):
                for i in range(k, 8, 2):
                    np.testing.assert_allclose(net(xs[i]).asnumpy(), want[i], rtol=1e-5,
                                               atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    assert _graph(net)['state'] == 'recorded'


def test_graph_memory_goes_back_to_the_cache():
    import gc
    net, _ = _pair()
    for i in range(3):
        net(_x((2, 3, 12, 12), i))
    mx.nd.waitall()
    g = _graph(net)
    assert g['state'] == 'recorded' and g['pool_bytes'] > 0, g
    live = mx._core.gpu_memory(0)['live']
    net.hybridize()  # drops the cached op, its graph and the graph's pool
    gc.collect()
    mx.nd.waitall()
    assert mx._core.gpu_memory(0)['live'] <= live - g['pool_bytes']


def test_model_zoo_resnet_graph_matches_op_by_op():
    from hybridgluon.gluon.model_zoo import vision

    def make():
        return vision.resnet18_v1(classes=10)
    net, ref = _pair(make, (1, 3, 32, 32))
    for i in range(3):
        x = _x((1, 3, 32, 32), i)
        np.testing.assert_allclose(net(x).asnumpy(), ref(x).asnumpy(), rtol=1e-4, atol=1e-5)
    assert _graph(net)['state'] == 'recorded'


def test_trainer_updates_between_replays():
    net, ref = _pair()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    loss = gluon.loss.L2Loss()
    for i in range(3):
        x = _x((2, 3, 12, 12), i)
        net(x)
        net(x)  # recorded / replayed
        with autograd.record():
            l = loss(net(x), mx.nd.zeros((2, 10), ctx=mx.gpu(0)))
        l.backward()
        trainer.step(2)
        for p, q in zip(net.collect_params().values(), ref.collect_params().values()):
            q.set_data(p.data())
        _close(net(x), ref(x))


@pytest.mark.parametrize('static', [False, True])
def test_nodes_without_inputs_take_the_inferred_shape(static):
    """An unrolled LSTM cell's own begin states are traced zeros whose batch size the graph's
    inference fills in: made on the GPU with that shape (and recorded in the graph); a random
    draw without a GPU kernel is drawn on the host and copied over (and keeps the block op by
    op)."""
    from hybridgluon.gluon import rnn

    class Unrolled(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.cell = rnn.LSTMCell(6)

        def hybrid_forward(self, F, x):
            out, _ = self.cell.unroll(3, x, layout='NTC', merge_outputs=True)
            return out

    class Noise(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + F.random.uniform(shape=(4, 5)) * 0

    mx.random.seed(0)
    cpu = Unrolled()
    cpu.initialize(mx.init.Xavier())
    cpu.hybridize()
    gpu = Unrolled()
    gpu.initialize(ctx=mx.gpu(0))
    gpu(mx.nd.zeros((4, 3, 5), ctx=mx.gpu(0)))
    cpu(mx.nd.zeros((4, 3, 5)))
    for p, q in zip(gpu.collect_params().values(), cpu.collect_params().values()):
        p.set_data(q.data().as_in_context(mx.gpu(0)))
    gpu.hybridize(static_alloc=static, static_shape=static)
    for i in range(3):
        x = np.random.RandomState(i).randn(4, 3, 5).astype(np.float32)
        np.testing.assert_allclose(gpu(mx.nd.array(x, ctx=mx.gpu(0))).asnumpy(),
                                   cpu(mx.nd.array(x)).asnumpy(), rtol=1e-5, atol=1e-6)
    assert _graph(gpu)['state'] == ('recorded' if static else 'none'), _graph(gpu)

    net = Noise()
    net.hybridize(static_alloc=static, static_shape=static)
    for i in range(3):
        x = _x((4, 5), i)
        np.testing.assert_allclose(net(x).asnumpy(), x.asnumpy(), rtol=1e-6)
    g = _graph(net)
    if not static:
        assert g['state'] == 'none'
    elif mx._core.op_info('_random_uniform')['gpu']:
        assert g['state'] == 'off' and 'random' in g['why'], g
    else:
        assert g['state'] == 'off', g
