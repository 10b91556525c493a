"""The activation after a folded Convolution+BatchNorm runs inside the convolution's step (a
post-op, core/post.h): the ReLU or clip is applied to each tile of the output as it is written,
and the activation's own step becomes a view of that output. Every convolution path (Winograd,
im2col + GEMM by tiles, whole images, packed small images, pointwise, grouped, depthwise) is
compared with the unfused plan and with NumPy."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core
from hybridgluon.gluon import nn


def _conv_ref(x, w, stride, pad, groups):
    """Direct NumPy convolution, float64: x (N, C, H, W), w (F, C/groups, KH, KW)."""
    N, C, H, W = x.shape
    F, Cg, KH, KW = w.shape
    xp = np.pad(x.astype('f8'), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    y = np.zeros((N, F, OH, OW))
    Fg = F // groups
    for f in range(F):
        g = f // Fg
        for i in range(KH):
            for j in range(KW):
                patch = xp[:, g * Cg:(g + 1) * Cg, i:i + stride * OH:stride,
                           j:j + stride * OW:stride]
                y[:, f] += np.einsum('nchw,c->nhw', patch, w[f, :, i, j].astype('f8'))
    return y


ACTS = {
    'relu': (lambda y: mx.sym.Activation(y, act_type='relu'), lambda v: np.maximum(v, 0),
             'Activation'),
    'relu_op': (lambda y: mx.sym.relu(y), lambda v: np.maximum(v, 0), 'relu'),
    'relu6': (lambda y: mx.sym.clip(y, 0, 6), lambda v: np.clip(v, 0, 6), 'clip'),
    'clip': (lambda y: mx.sym.clip(y, -0.5, 0.25), lambda v: np.clip(v, -0.5, 0.25), 'clip'),
}

# (name, x shape, filters, kernel, stride, pad, groups): one per path of the convolution's
# forward (ops/conv.c) at the sizes that select it.
GEOMS = [
    ('winograd', (1, 16, 14, 14), 16, 3, 1, 1, 1),
    ('tiles', (2, 4, 16, 16), 8, 3, 2, 1, 1),
    ('whole image, scaled output', (1, 64, 4, 4), 64, 3, 1, 1, 1),
    ('pointwise', (1, 8, 10, 10), 16, 1, 1, 0, 1),
    ('pointwise whole images', (9, 8, 5, 5), 16, 1, 1, 0, 1),
    ('packed small images', (16, 3, 12, 12), 6, 5, 1, 0, 1),
    ('grouped', (2, 4, 9, 9), 6, 3, 1, 1, 2),
    ('depthwise', (1, 8, 11, 11), 8, 3, 1, 1, 8),
    ('depthwise stride 2', (2, 8, 12, 12), 8, 3, 2, 1, 8),
    ('empty batch', (0, 4, 6, 6), 4, 3, 1, 1, 1),
    ('one element', (1, 1, 1, 1), 1, 1, 1, 0, 1),
]


def _net(act, F, k, stride, pad, groups, tail=True):
    x, w = mx.sym.var('x'), mx.sym.var('w')
    g, b, m, v = (mx.sym.var(n) for n in ('gamma', 'beta', 'mean', 'var'))
    y = mx.sym.Convolution(x, w, kernel=(k, k), stride=(stride, stride), pad=(pad, pad),
                           num_filter=F, num_group=groups, no_bias=True)
    y = mx.sym.BatchNorm(y, g, b, m, v, fix_gamma=False, eps=1e-3)
    y = ACTS[act][0](y)
    # a reader after it (not element-wise, which would fuse with the activation instead): the
    # activation's output is then no output of the graph
    return mx.sym.sum(y, axis=1) if tail else y


def _feed(xshape, F, k, groups, seed=0):
    rng = np.random.default_rng(seed)
    C = xshape[1]
    return {'x': rng.standard_normal(xshape).astype('f4'),
            'w': (rng.standard_normal((F, C // groups, k, k)) / np.sqrt(C * k * k / groups))
            .astype('f4'),
            'gamma': rng.uniform(0.5, 1.5, F).astype('f4'),
            'beta': rng.standard_normal(F).astype('f4') * 0.3,
            'mean': rng.standard_normal(F).astype('f4') * 0.3,
            'var': rng.uniform(0.5, 2, F).astype('f4')}


def _run(sym, feed, **kw):
    names = sym.list_inputs()
    co = _core.CachedOp(sym, names, **kw)
    out = co(*[mx.nd.array(feed[n]) for n in names])
    return [o.asnumpy() for o in out], co.stats()


def _numpy(feed, act, stride, pad, groups):
    y = _conv_ref(feed['x'], feed['w'], stride, pad, groups)
    sh = (1, -1, 1, 1)
    y = (y - feed['mean'].reshape(sh)) / np.sqrt(feed['var'].reshape(sh) + 1e-3) \
        * feed['gamma'].reshape(sh) + feed['beta'].reshape(sh)
    return ACTS[act][1](y).sum(axis=1)


@pytest.mark.parametrize('act', sorted(ACTS))
@pytest.mark.parametrize('geom', GEOMS, ids=[g[0] for g in GEOMS])
def test_activation_applied_by_the_fold(geom, act):
    _, xshape, F, k, stride, pad, groups = geom
    feed = _feed(xshape, F, k, groups)
    sym = _net(act, F, k, stride, pad, groups)
    out, st = _run(sym, feed)
    name = ACTS[act][2]
    assert 'Convolution+BatchNorm+%s (folded' % name in st['plan'], st['plan']
    assert 'applied by its fold' in st['plan'], st['plan']
    unfused, st2 = _run(sym, feed, fusion=False)
    assert 'folded' not in st2['plan']
    np.testing.assert_allclose(out[0], unfused[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[0], _numpy(feed, act, stride, pad, groups), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize('act', ['relu', 'relu6'])
def test_nan_passes_through_the_post_op_as_unfused(act):
    """relu and clip keep NaN (MXNet's kernels do): the fused step must too."""
    feed = _feed((1, 16, 14, 14), 16, 3, 1)
    feed['x'][0, 3, 5, 5] = np.nan
    sym = _net(act, 16, 3, 1, 1, 1)
    out, st = _run(sym, feed)
    assert 'applied by its fold' in st['plan'], st['plan']
    unfused, _ = _run(sym, feed, fusion=False)
    assert np.isnan(out[0]).sum() > 0
    np.testing.assert_array_equal(np.isnan(out[0]), np.isnan(unfused[0]))
    ok = ~np.isnan(out[0])
    np.testing.assert_allclose(out[0][ok], unfused[0][ok], rtol=1e-5, atol=1e-5)


def test_activation_that_is_an_output_stays_a_step():
    """An output gets a fresh array: the activation is not a view there, so it runs itself."""
    feed = _feed((1, 16, 14, 14), 16, 3, 1)
    sym = _net('relu6', 16, 3, 1, 1, 1, tail=False)
    out, st = _run(sym, feed)
    assert 'Convolution+BatchNorm (folded' in st['plan'] and 'applied by' not in st['plan']
    unfused, _ = _run(sym, feed, fusion=False)
    np.testing.assert_allclose(out[0], unfused[0], rtol=1e-5, atol=1e-5)


def test_batchnorm_output_read_twice_is_not_overwritten():
    """The fold's output also read by another op keeps its values: no post-op."""
    feed = _feed((1, 16, 14, 14), 16, 3, 1)
    x, w = mx.sym.var('x'), mx.sym.var('w')
    g, b, m, v = (mx.sym.var(n) for n in ('gamma', 'beta', 'mean', 'var'))
    y = mx.sym.BatchNorm(mx.sym.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                            no_bias=True), g, b, m, v, fix_gamma=False, eps=1e-3)
    sym = mx.sym.sum(mx.sym.clip(y, 0, 6) + y, axis=1)
    out, st = _run(sym, feed)
    assert 'applied by' not in st['plan'], st['plan']
    unfused, _ = _run(sym, feed, fusion=False)
    np.testing.assert_allclose(out[0], unfused[0], rtol=1e-5, atol=1e-5)


def test_activation_read_by_two_ops():
    """The activation's output (a view of the fold's) read by two later ops."""
    feed = _feed((2, 8, 10, 10), 8, 3, 1)
    sym = _net('relu6', 8, 3, 1, 1, 1, tail=False)
    sym = mx.sym.sum(sym * 2, axis=1) + mx.sym.sum(mx.sym.exp(sym), axis=1)
    out, st = _run(sym, feed)
    assert 'applied by its fold' in st['plan'], st['plan']
    unfused, _ = _run(sym, feed, fusion=False)
    np.testing.assert_allclose(out[0], unfused[0], rtol=1e-5, atol=1e-5)


def test_gluon_block_imperative_hybrid_and_training_agree(tmp_path):
    """MobileNet's pattern in Gluon: inference, batch-statistics training (the fold's step then
    runs the two ops and applies the clip after them) and gradients match the imperative
    block. Two blocks with the same parameters run the same calls, one of them hybridized."""
    def block():
        net = nn.HybridSequential()
        net.add(nn.Conv2D(8, 3, padding=1, use_bias=False, in_channels=4),
                nn.BatchNorm(in_channels=8), nn.HybridLambda(lambda F, v: F.clip(v, 0, 6)),
                nn.Conv2D(6, 3, padding=1, groups=2, in_channels=8),
                nn.BatchNorm(in_channels=6), nn.Activation('relu'), nn.Dense(5, in_units=6 * 81))
        return net
    imp, hyb = block(), block()
    imp.initialize(mx.init.Xavier())
    imp.save_parameters(str(tmp_path / 'p.params'))
    hyb.load_parameters(str(tmp_path / 'p.params'))
    hyb.hybridize(static_alloc=True)
    x = mx.nd.random.normal(shape=(3, 4, 9, 9))
    head = mx.nd.arange(15).reshape((3, 5))
    outs = []
    for net in (imp, hyb):
        got = [net(x).asnumpy()]
        with mx.autograd.train_mode():
            got.append(net(x).asnumpy())
        with mx.autograd.record():
            (net(x) * head).sum().backward()
        got += [p.grad().asnumpy() for p in net.collect_params().values() if p.grad_req != 'null']
        got.append(net(x).asnumpy())  # inference after the moving statistics moved
        outs.append(got)
    assert hyb._cached_op.stats()['plan'].count('applied by its fold') == 2
    assert len(outs[0]) == len(outs[1])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('xshape', [(0, 4, 6, 6), (2, 0, 6, 6)])
@pytest.mark.parametrize('k', [1, 3])
def test_empty_convolution_in_a_plan(xshape, k):
    """Regression: sizing the workspace of an empty batch or of no input channels divided by
    zero when a plan was built (SIGFPE). No channels: the sum over them is zero."""
    x, w = mx.sym.var('x'), mx.sym.var('w')
    y = mx.sym.Convolution(x, w, kernel=(k, k), num_filter=4, no_bias=True)
    rng = np.random.default_rng(1)
    feed = {'x': rng.standard_normal(xshape).astype('f4'),
            'w': rng.standard_normal((4, xshape[1], k, k)).astype('f4')}
    out, _ = _run(y, feed)
    oshape = (xshape[0], 4, 7 - k, 7 - k)
    np.testing.assert_array_equal(out[0], np.zeros(oshape, 'f4'))
