"""Threads (issue #12, B2): one hybridized block (or SymbolBlock) called from several Python
threads gives the results of serial calls (the C call runs with the GIL released; each plan
serialises its own runs), parameters rebound meanwhile stay alive, and autograd's recording and
training modes and name scopes belong to the thread that set them, as in MXNet."""
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.gluon import nn

THREADS = 4


def _run_threads(fn, n=THREADS):
    """Runs fn(i) in n threads started together; re-raises the first failure."""
    errors, start = [], threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            fn(i)
        except BaseException as e:  # noqa: B902 - reported to the test below
            errors.append(e)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(64, activation='relu', in_units=32), nn.Dense(10, in_units=64))
    return net


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=8),
            nn.Activation('relu'), nn.GlobalAvgPool2D(), nn.Dense(4, in_units=8))
    return net


def _inputs(shapes, seed=0):
    rs = np.random.RandomState(seed)
    return [rs.randn(*s).astype(np.float32) for s in shapes]


def _serial_then_threaded(net, xs, rounds=20):
    """Each thread calls net on every x (in its own order) `rounds` times; every result must
    equal the serial one."""
    want = [net(nd.array(x)).asnumpy() for x in xs]

    def work(i):
        arrs = [nd.array(x) for x in xs]
        for r in range(rounds):
            k = (i + r) % len(xs)
            got = net(arrs[k]).asnumpy()
            np.testing.assert_allclose(got, want[k], rtol=1e-6, atol=1e-6)

    _run_threads(work)


@pytest.mark.parametrize('flags', [{}, {'static_alloc': True},
                                   {'static_alloc': True, 'static_shape': True}],
                         ids=['dynamic', 'static_alloc', 'static_shape'])
def test_one_block_many_threads_same_shape(flags):
    mx.random.seed(1)
    net = _mlp()
    net.initialize()
    net.hybridize(**flags)
    _serial_then_threaded(net, _inputs([(8, 32)] * 3))


@pytest.mark.parametrize('flags', [{}, {'static_alloc': True, 'static_shape': True}],
                         ids=['dynamic', 'static_shape'])
def test_one_block_many_threads_changing_shapes(flags):
    """Threads with different batch sizes: the plan re-plans back and forth under its lock."""
    mx.random.seed(2)
    net = _convnet()
    net.initialize()
    net.hybridize(**flags)
    _serial_then_threaded(net, _inputs([(1, 3, 8, 8), (5, 3, 8, 8), (2, 3, 12, 10)]), rounds=12)


def test_symbolblock_many_threads(tmp_path):
    mx.random.seed(3)
    net = _convnet()
    net.initialize()
    net.hybridize()
    net(nd.ones((1, 3, 8, 8)))
    prefix = str(tmp_path / 'm')
    net.export(prefix)
    blk = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'], prefix + '-0000.params')
    blk.hybridize(static_alloc=True)
    _serial_then_threaded(blk, _inputs([(2, 3, 8, 8), (3, 3, 8, 8)]), rounds=12)


def test_first_call_from_many_threads():
    """Tracing, deferred initialisation and building the cached op happen once, whichever
    thread gets there first; every thread gets the same answer."""
    mx.random.seed(4)
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation='relu'), nn.Dense(3))  # in_units deferred
    net.initialize()
    net.hybridize(static_alloc=True)
    x = _inputs([(4, 7)])[0]
    results = [None] * THREADS

    def work(i):
        results[i] = net(nd.array(x)).asnumpy()

    _run_threads(work)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    ref = nn.HybridSequential()
    ref.add(nn.Dense(16, activation='relu', in_units=7), nn.Dense(3, in_units=16))
    ref.initialize()
    for p, q in zip(ref.collect_params().values(), net.collect_params().values()):
        p.set_data(q.data())
    np.testing.assert_allclose(ref(nd.array(x)).asnumpy(), results[0], rtol=1e-6, atol=1e-6)


def test_parameters_replaced_while_threads_call():
    """cast() and reset_ctx() from one thread replace every parameter array (same values)
    while others call the block through its bound fast path: the arrays a running call reads
    stay alive (the binding holds them) and every result is the serial one."""
    mx.random.seed(5)
    net = _mlp()
    net.initialize()
    net.hybridize(static_alloc=True)
    x = nd.array(_inputs([(4, 32)])[0])
    want = net(x).asnumpy()
    stop = threading.Event()

    def caller():
        n = 0
        while not stop.is_set() or n < 10:
            np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-6, atol=1e-6)
            n += 1

    def swapper():
        try:
            for r in range(60):
                before = net.collect_params().values()
                before = [p._data[0] for p in before]
                if r % 2:
                    net.cast('float32')
                else:
                    net.collect_params().reset_ctx(mx.cpu())
                after = [p._data[0] for p in net.collect_params().values()]
                assert all(a is not b for a, b in zip(before, after))
                del before, after
        finally:
            stop.set()

    _run_threads(lambda i: (swapper if i == 0 else caller)(), 3)


def test_recording_and_training_are_per_thread():
    """While one thread records in train mode, another thread's calls are neither recorded nor
    in train mode (Dropout is the identity there)."""
    net = nn.HybridSequential()
    net.add(nn.Dropout(0.5))
    net.hybridize()
    x = nd.ones((400,))
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def recorder():
        with autograd.record():
            inside.set()
            done.wait(10)
            y = net(x)
            seen['rec_mode'] = (autograd.is_recording(), autograd.is_training())
            seen['rec_zeros'] = int((y.asnumpy() == 0).sum())

    def other():
        inside.wait(10)
        seen['other_mode'] = (autograd.is_recording(), autograd.is_training())
        z = x.copy()
        z.attach_grad()
        y = net(z)
        seen['other_out'] = y.asnumpy()
        with pytest.raises(mx.MXNetError):
            y.backward()  # nothing was recorded in this thread
        done.set()

    _run_threads(lambda i: (recorder if i == 0 else other)(), 2)
    assert seen['rec_mode'] == (True, True)
    assert seen['other_mode'] == (False, False)
    assert 100 < seen['rec_zeros'] < 300
    np.testing.assert_array_equal(seen['other_out'], 1)


def test_name_scopes_are_per_thread():
    """A block created in one thread while another thread sits in a name scope gets the
    default prefix, not the other thread's."""
    inside, done = threading.Event(), threading.Event()
    names = {}

    def scoped():
        outer = nn.HybridSequential(prefix='outer_')
        with outer.name_scope():
            inside.set()
            done.wait(10)
            names['scoped'] = nn.Dense(2).prefix

    def plain():
        inside.wait(10)
        with mx.name.Prefix('mine_'):
            names['plain'] = nn.Dense(2).prefix
        done.set()

    _run_threads(lambda i: (scoped if i == 0 else plain)(), 2)
    assert names['scoped'].startswith('outer_dense')
    assert names['plain'].startswith('mine_dense')


def test_training_in_threads_on_separate_blocks_matches_serial():
    """Each thread trains its own copy of a model (forward, backward, Trainer.step) at the
    same time; every thread ends with the parameters a serial run gives."""
    mx.random.seed(7)
    first = _mlp()
    first.initialize()
    init = [p.data().asnumpy() for p in first.collect_params().values()]

    def train(seed):
        net = _mlp()
        net.initialize()
        for p, v in zip(net.collect_params().values(), init):
            p.set_data(nd.array(v))
        net.hybridize(static_alloc=True)
        tr = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
        rs = np.random.RandomState(seed)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(5):
            x = nd.array(rs.randn(8, 32).astype(np.float32))
            y = nd.array(rs.randint(0, 10, size=8).astype(np.float32))
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            tr.step(8)
        return [p.data().asnumpy() for p in net.collect_params().values()]

    want = [train(i) for i in range(THREADS)]
    got = [None] * THREADS

    def work(i):
        got[i] = train(i)

    _run_threads(work)
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
