"""The GPU backend (CUDA build, docs/gpu.md): arrays on gpu(i), copies, the device allocator,
error paths, and every op conformance case run on gpu(0) against the same case on the CPU.

Without a GPU (the CPU build, or the CUDA build on a machine without one) only the tests of
what a missing GPU does run; the rest skip. One command runs the GPU suite on a machine with
a GPU: `python -m pytest -m gpu tests/test_gpu.py` (README).
"""
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.base import MXNetError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import refs  # noqa: E402

HAVE_GPU = mx.context.num_gpus() > 0
gpu = pytest.mark.skipif(not HAVE_GPU, reason='no GPU in this process (num_gpus() == 0)')
pytestmark = pytest.mark.gpu

DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int8', 'int32', 'int64', 'bool']
# Largest |gpu - cpu| / max |cpu| by dtype: the GPU's math library and its summation order
# differ from the CPU's in the last bits; integers and booleans are exact.
TOL = {'float16': 2e-3, 'float32': 2e-5, 'float64': 1e-12}


# ---- without a GPU ---------------------------------------------------------------------------

@pytest.mark.skipif(HAVE_GPU, reason='this process has a GPU')
def test_missing_gpu_is_a_clear_error():
    assert mx.context.num_gpus() == 0
    built = mx._core.built_with_cuda()
    want = 'no CUDA support' if not built else 'sees 0 GPU'
    with pytest.raises(MXNetError, match=want):
        mx.nd.array([1, 2], ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match=want):
        mx.nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match=want):
        mx.nd.ones((2,)).as_in_context(mx.gpu(0))
    with pytest.raises(MXNetError, match=want):
        with mx.gpu(0):
            pass
    with pytest.raises(MXNetError, match=want):
        mx.context.gpu_memory_info(0)
    # the CPU is untouched: waitall and empty_cache have nothing to wait for
    mx.nd.waitall()
    mx.cpu().empty_cache()


def test_gpu_labels_cannot_be_faked():
    """A host array can never be labelled as living on a GPU (host code would then hand its
    pointer to GPU kernels, or the reverse)."""
    a = mx.nd.ones((2,))
    with pytest.raises(MXNetError, match='host memory'):
        a._set_device(2, 0)


def test_op_info_reports_gpu_kernels():
    info = mx._core.op_info('elemwise_add')
    assert isinstance(info['gpu'], bool)
    if not mx._core.built_with_cuda():
        assert not any(mx._core.op_info(op)['gpu'] for op in mx._core.list_ops())


@pytest.mark.skipif(not mx._core.built_with_cuda(), reason='the CPU build has no GPU kernels')
def test_every_op_has_a_gpu_kernel_or_is_listed_as_cpu_only():
    """The CUDA build's op coverage is what docs/gpu.md says: every op without a GPU kernel is
    listed there (and nothing else is), so a new op, or a new kernel, updates the list."""
    import re
    with open(os.path.join(HERE, '..', 'docs', 'gpu.md'), encoding='utf-8') as f:
        text = f.read()
    part = text.split('## Ops without a GPU kernel yet', 1)[1].split('\n## ', 1)[0]
    listed = set()
    for line in part.splitlines():
        if line.startswith(('- Forward ops', '- Gradient ops')):
            listed |= set(re.findall(r'`([^`]+)`', line))
    missing = {op for op in mx._core.list_ops() if not mx._core.op_info(op)['gpu']}
    assert missing - listed == set(), 'ops without a GPU kernel, not in docs/gpu.md'
    assert listed - missing == set(), 'listed in docs/gpu.md, but they have a GPU kernel'


# ---- arrays and copies -----------------------------------------------------------------------

@gpu
@pytest.mark.parametrize('dtype', DTYPES)
@pytest.mark.parametrize('shape', [(), (0,), (1,), (3, 5), (2, 0, 4), (7, 3, 2)])
def test_round_trip(dtype, shape):
    x = np.asarray(np.random.RandomState(0).rand(*shape) * 100).astype(dtype)
    a = mx.nd.array(x, ctx=mx.gpu(0), dtype=dtype)
    assert a.context == mx.gpu(0) and a.shape == x.shape and a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.asnumpy(), x)
    b = a.as_in_context(mx.cpu())
    assert b.context == mx.cpu()
    np.testing.assert_array_equal(b.asnumpy(), x)
    c = b.copyto(mx.gpu(0))
    np.testing.assert_array_equal(c.asnumpy(), x)
    zero = np.zeros(shape, dtype=dtype)  # nd.zeros(()) needs np_shape; a 0-d array does not
    d = mx.nd.array(zero, ctx=mx.gpu(0), dtype=dtype)
    a.copyto(d)  # into an existing GPU array
    np.testing.assert_array_equal(d.asnumpy(), x)
    e = mx.nd.array(zero, dtype=dtype)
    d.copyto(e)  # GPU to an existing CPU array
    np.testing.assert_array_equal(e.asnumpy(), x)
    np.testing.assert_array_equal(a.copy().asnumpy(), x)
    assert a.copy().context == mx.gpu(0)


@gpu
def test_views_creation_and_scalars():
    a = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4), ctx=mx.gpu(0))
    np.testing.assert_array_equal(a[1].asnumpy(), [4, 5, 6, 7])
    np.testing.assert_array_equal(a[1:3].asnumpy(), np.arange(4, 12).reshape(2, 4))
    assert a[1:3].context == mx.gpu(0)
    assert float(a[2, 3].asscalar()) == 11.0
    assert bool(mx.nd.array([2], ctx=mx.gpu(0))) and not bool(mx.nd.array([0], ctx=mx.gpu(0)))
    with mx.gpu(0):
        z = mx.nd.zeros((2, 3))
        o = mx.nd.ones((2, 3))
    assert z.context == o.context == mx.gpu(0)
    np.testing.assert_array_equal(o.asnumpy(), np.ones((2, 3)))
    f = mx.nd.full((4,), 2.5, ctx=mx.gpu(0))
    np.testing.assert_array_equal(f.asnumpy(), [2.5] * 4)


@gpu
def test_no_host_pointer_escapes():
    a = mx.nd.ones((3,), ctx=mx.gpu(0))
    with pytest.raises(BufferError, match='gpu'):
        memoryview(a)
    assert a.__dlpack_device__() == (2, 0)  # kDLCUDA


@gpu
def test_save_and_load_gpu_arrays(tmp_path):
    x = np.random.RandomState(1).rand(4, 5).astype(np.float32)
    a = mx.nd.array(x, ctx=mx.gpu(0))
    f = str(tmp_path / 'a.params')
    mx.nd.save(f, {'a': a})
    back = mx.nd.load(f)
    assert back['a'].context == mx.cpu()  # as MXNet's nd.load
    np.testing.assert_array_equal(back['a'].asnumpy(), x)


@gpu
def test_mixing_devices_is_an_error():
    a = mx.nd.ones((2,), ctx=mx.gpu(0))
    b = mx.nd.ones((2,))
    with pytest.raises(MXNetError, match='same device'):
        mx.nd.elemwise_add(a, b)
    with pytest.raises(MXNetError, match='same device'):
        mx.nd.elemwise_add(b, a)
    with pytest.raises(MXNetError, match='same device'):
        mx.nd.elemwise_add(b, b, out=mx.nd.zeros((2,), ctx=mx.gpu(0)))


@gpu
def test_op_without_gpu_kernel_names_the_op():
    missing = [op for op in mx._core.list_ops()
               if not mx._core.op_info(op)['gpu'] and op == 'Convolution']
    if not missing:
        pytest.skip('Convolution has a GPU kernel')
    x = mx.nd.ones((1, 1, 4, 4), ctx=mx.gpu(0))
    w = mx.nd.ones((1, 1, 3, 3), ctx=mx.gpu(0))
    with pytest.raises(MXNetError, match='Convolution has no GPU kernel'):
        mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=1, no_bias=True)


@gpu
def test_hybridized_block_on_gpu_matches_imperative():
    """A hybridized block on a GPU runs its graph op by op (no plan yet): same outputs and
    gradients as the imperative block, and its BatchNorm updates its running statistics."""
    from hybridgluon.gluon import nn
    mx.random.seed(3)
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation='relu'), nn.Dense(3))
    net.initialize(ctx=mx.gpu(0))
    x = mx.nd.array(np.random.RandomState(2).rand(4, 5).astype(np.float32), ctx=mx.gpu(0))
    with mx.autograd.record():
        y0 = net(x)
    y0.backward()
    g0 = [p.grad().asnumpy() for p in net.collect_params().values()]
    net.hybridize()
    with mx.autograd.record():
        y1 = net(x)
    y1.backward()
    g1 = [p.grad().asnumpy() for p in net.collect_params().values()]
    assert y1.context == mx.gpu(0)
    _close('output', y1.asnumpy(), y0.asnumpy())
    for k, (a, b) in enumerate(zip(g1, g0)):
        _close('gradient %d' % k, a, b)
    np.testing.assert_allclose(net(x).asnumpy(), y0.asnumpy(), rtol=1e-6, atol=1e-6)


@gpu
def test_symbol_executor_on_gpu():
    """A bound Symbol runs through the same cached graph, op by op on the GPU."""
    x = mx.sym.var('x')
    ex = (x * 2).bind(mx.gpu(0), {'x': mx.nd.array([1, 3], ctx=mx.gpu(0))})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [2, 6])


@gpu
def test_allocator_reuses_and_releases():
    mx.nd.waitall()
    mx.gpu(0).empty_cache()
    base = mx._core.gpu_memory(0)
    a = mx.nd.zeros((1 << 20,), ctx=mx.gpu(0))  # 4 MiB
    grown = mx._core.gpu_memory(0)
    assert grown['live'] >= base['live'] + (4 << 20)
    del a
    freed = mx._core.gpu_memory(0)
    assert freed['cached'] >= 4 << 20 and freed['live'] == base['live']
    b = mx.nd.zeros((1 << 20,), ctx=mx.gpu(0))  # the cached block again
    assert mx._core.gpu_memory(0)['cached'] == freed['cached'] - (grown['live'] - base['live'])
    del b
    mx.gpu(0).empty_cache()
    assert mx._core.gpu_memory(0)['cached'] == 0
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total


@gpu
def test_out_of_memory_is_an_mxneterror():
    free, total = mx.context.gpu_memory_info(0)
    with pytest.raises(MXNetError, match=r'out of memory on gpu\(0\)'):
        mx.nd.zeros((int(total * 4) // 4,), ctx=mx.gpu(0))  # 4x the device
    a = mx.nd.ones((10,), ctx=mx.gpu(0))  # and the device still works
    assert a.asnumpy().sum() == 10


# ---- every op conformance case: gpu(0) against the CPU ----------------------------------------

def _cases():
    out = []
    for op in refs.fixture_ops():
        info = mx._core.op_info(op)
        if info['random']:
            continue  # its values depend on the generator; covered by the statistics tests
        meta, _ = refs.load_op_fixture(op)
        for i in range(len(meta['cases'])):
            out.append(pytest.param(op, i, id='%s-%d' % (op, i)))
    return out


_FIXTURES = {}


def _fixture(op):
    if op not in _FIXTURES:
        _FIXTURES[op] = refs.load_op_fixture(op)
    return _FIXTURES[op]


def _close(what, got, want):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if want.dtype.kind in 'biu':
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    err, idx = refs.rel_err(got, want)
    assert err <= TOL[want.dtype.name], '%s: error %.3g at %s' % (what, err, idx)


@gpu
@pytest.mark.parametrize('op,i', _cases())
def test_op_case_on_gpu_matches_cpu(op, i):
    if not mx._core.op_info(op)['gpu']:
        pytest.skip('%s has no GPU kernel yet (docs/gpu.md)' % op)
    meta, arrays = _fixture(op)
    ys, _, ms = refs.run_case(op, meta, arrays, i, grads=False)
    gys, _, gms = refs.run_case(op, meta, arrays, i, ctx=mx.gpu(0), grads=False)
    for k, (g, c) in enumerate(zip(gys, ys)):
        _close('output %d' % k, g, c)
    for j in ms:
        _close('updated input %d' % j, gms[j], ms[j])
    case = meta['cases'][i]
    if not case['grad']:
        return
    _, dxs, _ = refs.run_case(op, meta, arrays, i)
    try:
        _, gdxs, _ = refs.run_case(op, meta, arrays, i, ctx=mx.gpu(0))
    except MXNetError as e:
        if 'has no GPU kernel' in str(e):
            pytest.skip('backward: %s' % str(e).split(';')[0])
        raise
    for j in dxs:
        _close('gradient of input %d' % j, gdxs[j], dxs[j])


# ---- training on the GPU ----------------------------------------------------------------------

def _mlp_steps(ctx, steps=5):
    mx.random.seed(0)
    net = mx.gluon.nn.Sequential()
    net.add(mx.gluon.nn.Dense(64, activation='relu'), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1,
                                                             'momentum': 0.9})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    rs = np.random.RandomState(0)
    x = mx.nd.array(rs.rand(32, 20).astype(np.float32), ctx=ctx)
    y = mx.nd.array(rs.randint(0, 10, 32).astype(np.float32), ctx=ctx)
    for _ in range(steps):
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(32)
    return [v.data().asnumpy() for v in net.collect_params().values()], loss.asnumpy()


@gpu
def test_mlp_training_on_gpu_matches_cpu():
    want, lw = _mlp_steps(mx.cpu())
    got, lg = _mlp_steps(mx.gpu(0))
    assert len(got) == len(want) == 4
    for k, (g, w) in enumerate(zip(got, want)):
        _close('parameter %d' % k, g, w)
    _close('loss', lg, lw)


# ---- the fused RNN op (kernels/cuda/rnn.cu) ---------------------------------------------------

def _rnn_cases():
    meta, _ = refs.load_op_fixture('RNN')
    return [pytest.param('RNN', i, id='RNN-%d' % i) for i in range(len(meta['cases']))]


@gpu
@pytest.mark.parametrize('op,i', _rnn_cases())
def test_rnn_case_on_gpu_matches_cpu(op, i):
    """RNN is a random op (dropout between layers), so _cases() leaves its fixtures out; they all
    use p = 0, which draws nothing, so they run as every other op's."""
    assert _fixture(op)[0]['cases'][i]['attrs'].get('p', 0) == 0
    test_op_case_on_gpu_matches_cpu(op, i)


def _rel(got, want):
    err, _ = refs.rel_err(got, want)
    return err


def _rnn_op_run(ctx, mode, T, N, I, H, L=1, D=1, P=None, lens=None, clip=None, p=0.0,
                train=True, dtype='float64', seed=0):
    """mx.nd.RNN forward and backward on ctx: [outputs..., gradients of data, parameters,
    state(s)], all NumPy."""
    rs = np.random.RandomState(seed)
    G = {'lstm': 4, 'gru': 3}.get(mode, 1)
    R = P or H
    nparam = sum(D * (G * H * (I if l == 0 else D * R) + G * H * R + (P or 0) * H + 2 * G * H)
                 for l in range(L))
    lstm = mode == 'lstm'
    shapes = [(T, N, I), (nparam,), (L * D, N, R)] + ([(L * D, N, H)] if lstm else [])
    args = [mx.nd.array(rs.uniform(-0.6, 0.6, s), ctx=ctx, dtype=dtype) for s in shapes]
    for a in args:
        a.attach_grad()
    kw = dict(state_size=H, num_layers=L, bidirectional=D == 2, mode=mode, state_outputs=True,
              p=p, projection_size=P)
    if clip:
        kw.update(lstm_state_clip_min=clip[0], lstm_state_clip_max=clip[1])
    extra = []
    if lens is not None:
        kw['use_sequence_length'] = True
        extra = [mx.nd.array(lens, ctx=ctx, dtype='int32')]
    with mx.autograd.record(train_mode=train):
        outs = mx.nd.RNN(*(args + extra), **kw)
    heads = [mx.nd.array(rs.uniform(-1, 1, o.shape), ctx=ctx, dtype=dtype) for o in outs]
    mx.autograd.backward(outs, head_grads=heads)
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in args]


@gpu
@pytest.mark.parametrize('kw', [
    dict(mode='lstm', T=6, N=4, I=3, H=5, L=2, D=2, lens=[6, 3, 0, 4]),
    dict(mode='gru', T=6, N=4, I=3, H=5, L=2, D=2, lens=[2, 6, 1, 9]),
    dict(mode='rnn_tanh', T=5, N=3, I=4, H=4, L=3, lens=[5, 1, 0]),
    dict(mode='lstm', T=5, N=3, I=4, H=6, P=3, L=2, D=2),
    dict(mode='lstm', T=5, N=3, I=4, H=3, P=5, L=2, D=2, lens=[5, 2, 0]),
    dict(mode='lstm', T=5, N=3, I=4, H=5, L=2, D=2, clip=(-0.3, 0.4)),
    dict(mode='lstm', T=5, N=3, I=4, H=5, L=3, D=2, p=0.5, train=False),
    dict(mode='rnn_relu', T=7, N=5, I=6, H=8, L=2, D=2, dtype='float32'),
    dict(mode='lstm', T=0, N=3, I=4, H=5, L=2, D=2),
    dict(mode='gru', T=4, N=0, I=4, H=5, L=2, D=2),
], ids=lambda kw: '-'.join('%s=%s' % i for i in sorted(kw.items())))
def test_rnn_features_on_gpu_match_cpu(kw):
    """What the fixtures do not cover: sequence lengths, projection, cell clipping, dropout
    outside training (masks of ones), empty sequences and batches."""
    want = _rnn_op_run(mx.cpu(), **kw)
    got = _rnn_op_run(mx.gpu(0), **kw)
    tol = 2e-5 if kw.get('dtype') == 'float32' else 1e-12
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and _rel(g, w) <= tol, 'result %d: error %.3g' % (k, _rel(g, w))


@gpu
def test_rnn_dropout_on_gpu_replays_with_the_seed():
    """Training with p > 0 draws masks on the GPU from a seed of the global generator: the same
    seed gives the same result, and the masks change it."""
    kw = dict(mode='lstm', T=5, N=4, I=3, H=6, L=3, D=2, p=0.5, dtype='float32')
    mx.random.seed(7)
    a = _rnn_op_run(mx.gpu(0), **kw)
    mx.random.seed(7)
    b = _rnn_op_run(mx.gpu(0), **kw)
    c = _rnn_op_run(mx.gpu(0), **dict(kw, p=0.0))
    for g, w in zip(a, b):
        np.testing.assert_array_equal(g, w)
    assert np.abs(a[0] - c[0]).max() > 1e-3
    assert all(np.isfinite(g).all() for g in a)


def _rnn_layer_steps(cls, ctx):
    """A 2-layer bidirectional gluon layer's forward and backward (states in and out): its
    output, states, and the gradients of the data and of every parameter."""
    mx.random.seed(11)
    net = cls(8, num_layers=2, bidirectional=True, input_size=5)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    rs = np.random.RandomState(12)
    x = mx.nd.array(rs.uniform(-1, 1, (6, 3, 5)).astype(np.float32), ctx=ctx)
    x.attach_grad()
    states = [mx.nd.array(rs.uniform(-1, 1, s['shape']).astype(np.float32), ctx=ctx)
              for s in net.state_info(3)]
    with mx.autograd.record():
        out, hs = net(x, states)
        loss = (out * out).sum() + sum((h * h * 0.5).sum() for h in hs)
    loss.backward()
    grads = [p.grad(ctx).asnumpy() for p in net.collect_params().values()]
    return [out.asnumpy()] + [h.asnumpy() for h in hs] + [x.grad.asnumpy()] + grads


@gpu
@pytest.mark.parametrize('cls', ['LSTM', 'GRU'])
def test_gluon_rnn_layer_on_gpu_matches_cpu(cls):
    layer = getattr(mx.gluon.rnn, cls)
    want = _rnn_layer_steps(layer, mx.cpu())
    got = _rnn_layer_steps(layer, mx.gpu(0))
    assert len(got) == len(want) == (3 if cls == 'LSTM' else 2) + 1 + 16
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and _rel(g, w) <= 1e-4, 'result %d: error %.3g' % (k, _rel(g, w))


# ---- copies between host and device through pinned memory ------------------------------------

@gpu
@pytest.mark.parametrize('nbytes', [(128 << 10) - 4, 128 << 10, (4 << 20) - 4, 4 << 20,
                                    (9 << 20) + 12, 33 << 20])
def test_large_copies_round_trip(nbytes):
    """Copies from 128 KiB up go through two page-locked halves of 4 MiB: sizes around the
    threshold and the halves, and several chunks, arrive whole and in place."""
    x = np.random.RandomState(nbytes % 97).randint(-2**31, 2**31 - 1, nbytes // 4,
                                                   dtype=np.int64).astype(np.int32)
    a = mx.nd.array(x, ctx=mx.gpu(0), dtype='int32')
    np.testing.assert_array_equal(a.asnumpy(), x)
    b = (a + 1).asnumpy()
    np.testing.assert_array_equal(b, x + 1)
    r = mx.nd.array(x[::-1].copy(), ctx=mx.gpu(0), dtype='int32')  # reuses the halves
    np.testing.assert_array_equal(r.asnumpy(), x[::-1])
    np.testing.assert_array_equal(a.asnumpy(), x)


@gpu
def test_copies_from_threads_share_the_halves():
    import threading
    errors = []

    def work(seed):
        try:
            rs = np.random.RandomState(seed)
            for _ in range(4):
                x = rs.rand(3 << 20).astype(np.float32)  # 12 MiB: three chunks
                a = mx.nd.array(x, ctx=mx.gpu(0))
                np.testing.assert_array_equal(a.asnumpy(), x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
