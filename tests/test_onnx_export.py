"""mx.onnx.export_model: every exported graph passes onnx.checker and runs in onnxruntime with
the outputs hybridgluon computes for the same inputs (the reference is our own forward, which
the op tests check against NumPy and real MXNet). Covers one network per op group, the seeds'
MLP and LeNet, the 34 model-zoo networks (the VGGs but vgg11 only with HG_LONG_TESTS=1), the
dynamic batch axis and the errors."""
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import MXNetError
from hybridgluon.gluon import nn

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

LONG = os.environ.get('HG_LONG_TESTS', '') not in ('', '0')
V = mx.sym.var


def _session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    # Graph optimisations fuse ops and change the rounding; the test compares plain kernels.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, opts, providers=['CPUExecutionProvider'])


def _ours(sym, params, inputs):
    args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in params.items()}
    args.update({k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()})
    return [o.asnumpy() for o in sym.eval(ctx=mx.cpu(), **args)]


def _close(got, want, rtol=1e-4, atol=1e-5):
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in 'iub':
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_export(sym, params, inputs, path, rtol=1e-4, atol=1e-5, dynamic=False,
                 other_batch=None, static=(), **kw):
    """Exports, checks the model, runs it in onnxruntime and compares with our forward;
    with dynamic, the first dimension of each input but those in static is dynamic, and
    with other_batch the same session also runs batch size other_batch."""
    names = [n for n in sym.list_inputs() if n not in params]
    shapes = [inputs[n].shape for n in names]
    types = [inputs[n].dtype for n in names]
    dyn = [s if n in static else (None,) + s[1:] for n, s in zip(names, shapes)] \
        if dynamic else None
    out = mx.onnx.export_model(sym, {k: mx.nd.array(v, dtype=v.dtype) for k, v in params.items()},
                               shapes, types, str(path), dynamic=dynamic,
                               dynamic_input_shapes=dyn, **kw)
    assert out == str(path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    sess = _session(str(path))
    feeds = [inputs]
    if other_batch:
        rng = np.random.RandomState(7)
        feeds.append({k: v if k in static else _grow(v, other_batch, rng)
                      for k, v in inputs.items()})
    for feed in feeds:
        got = sess.run(None, {k: feed[k] for k in names if k in
                              {i.name for i in sess.get_inputs()}})
        want = _ours(sym, params, feed)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            try:
                _close(g, w, rtol, atol)
            except AssertionError as e:
                raise AssertionError('output %d: %s' % (k, e)) from None
    return model


def _grow(v, batch, rng):
    """v with `batch` rows (repeated), noise added to float data (not to 0/1 masks)."""
    w = np.concatenate([v] * batch)[:batch]
    if v.dtype.kind == 'f' and len(np.unique(v)) > 2:
        w = w + rng.uniform(0, 0.1, w.shape).astype(v.dtype)
    return w


def _r(*shape, lo=-1.0, hi=1.0, seed=0, dtype='float32'):
    return np.random.RandomState(seed + len(shape)).uniform(lo, hi, shape).astype(dtype)


# ---- one network per op group ------------------------------------------------------------
def _conv():
    x = V('data')
    y = mx.sym.Convolution(x, V('w1'), V('b1'), kernel=(3, 3), num_filter=8, pad=(1, 2),
                           stride=(2, 1), dilate=(1, 2), num_group=2)
    y = mx.sym.Convolution(y, V('w2'), kernel=(1, 1), num_filter=4, no_bias=True)
    t = mx.sym.Deconvolution(y, V('w4'), kernel=(3, 3), num_filter=2, stride=(2, 2),
                             target_shape=(10, 11))
    y = mx.sym.Deconvolution(y, V('w3'), V('b3'), kernel=(3, 3), num_filter=6, stride=(2, 2),
                             pad=(1, 1), adj=(1, 1), num_group=2, no_bias=False)
    return mx.sym.Group([y, t]), {'w1': _r(8, 2, 3, 3), 'b1': _r(8), 'w2': _r(4, 8, 1, 1),
                                  'w3': _r(4, 3, 3, 3), 'b3': _r(6), 'w4': _r(4, 2, 3, 3)}, \
        {'data': _r(2, 4, 9, 10)}


def _conv1d3d():
    a = mx.sym.Convolution(V('a'), V('w1'), V('b1'), kernel=(3,), num_filter=4, pad=(1,))
    c = mx.sym.Convolution(V('c'), V('w2'), kernel=(2, 3, 3), num_filter=2, no_bias=True,
                           stride=(1, 2, 2))
    return mx.sym.Group([a, c]), {'w1': _r(4, 3, 3), 'b1': _r(4), 'w2': _r(2, 3, 2, 3, 3)}, \
        {'a': _r(2, 3, 7), 'c': _r(1, 3, 4, 6, 6)}


def _dense():
    x = V('data')
    a = mx.sym.FullyConnected(x, V('w1'), V('b1'), num_hidden=5)
    b = mx.sym.FullyConnected(x, V('w2'), num_hidden=3, no_bias=True, flatten=False)
    c = mx.sym.FullyConnected(b, V('w3'), V('b3'), num_hidden=2, flatten=False)
    return mx.sym.Group([a, c]), {'w1': _r(5, 24), 'b1': _r(5), 'w2': _r(3, 4),
                                  'w3': _r(2, 3), 'b3': _r(2)}, {'data': _r(2, 2, 3, 4)}


def _activations():
    x = V('data')
    outs = [mx.sym.Activation(x, act_type=t)
            for t in ('relu', 'sigmoid', 'tanh', 'softrelu', 'softsign')]
    outs += [mx.sym.LeakyReLU(x, act_type='leaky', slope=0.1),
             mx.sym.LeakyReLU(x, act_type='elu', slope=0.7),
             mx.sym.LeakyReLU(x, act_type='selu'), mx.sym.LeakyReLU(x, act_type='gelu'),
             mx.sym.LeakyReLU(x, V('g'), act_type='prelu'),
             mx.sym.LeakyReLU(x, act_type='rrelu', lower_bound=0.1, upper_bound=0.3)[0],
             mx.sym.hard_sigmoid(x, alpha=0.3, beta=0.4), mx.sym.log_sigmoid(x),
             mx.sym.relu(x), mx.sym.sigmoid(x), mx.sym.softsign(x)]
    return mx.sym.Group(outs), {'g': _r(3, lo=0, hi=0.5)}, {'data': _r(2, 3, 4, 5, lo=-3, hi=3)}


def _batchnorm():
    x = V('data')
    p = {}
    outs = []
    for i, (fix, axis, shape) in enumerate([(False, 1, 4), (True, 1, 4), (False, -1, 5)]):
        for k, lo in (('g', 0.5), ('b', -1), ('m', -1), ('v', 0.5)):
            p['%s%d' % (k, i)] = _r(shape, lo=lo, hi=1.5, seed=i)
        outs.append(mx.sym.BatchNorm(x, V('g%d' % i), V('b%d' % i), V('m%d' % i),
                                     V('v%d' % i), fix_gamma=fix, axis=axis, eps=1e-3))
    inorm = mx.sym.InstanceNorm(x, V('ig'), V('ib'), eps=1e-4)
    p.update(ig=_r(4, seed=5), ib=_r(4, seed=6))
    lnorm = mx.sym.LayerNorm(x, V('lg'), V('lb'))
    lnorm1 = mx.sym.LayerNorm(x, V('lg1'), V('lb1'), axis=1)
    p.update(lg=_r(5, seed=7), lb=_r(5, seed=8), lg1=_r(4, seed=9), lb1=_r(4, seed=10))
    gnorm = mx.sym.GroupNorm(x, V('gg'), V('gb'), num_groups=2)
    p.update(gg=_r(2, seed=11), gb=_r(2, seed=12))
    l2 = [mx.sym.L2Normalization(x, mode=m) for m in ('instance', 'channel', 'spatial')]
    lrn = mx.sym.LRN(x, nsize=3, alpha=0.01, beta=0.6, knorm=1.5)
    return mx.sym.Group(outs + [inorm, lnorm, lnorm1, gnorm, lrn] + l2), p, \
        {'data': _r(2, 4, 3, 5, lo=-2, hi=2)}


def _pooling():
    x = V('data')
    outs = [mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='max'),
            mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg'),
            mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg',
                           count_include_pad=False),
            mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max',
                           pooling_convention='full'),
            mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type='avg',
                           pooling_convention='full'),
            mx.sym.Pooling(x, kernel=(2, 3), stride=(2, 2), pad=(0, 1), pool_type='avg',
                           pooling_convention='full', count_include_pad=False),
            mx.sym.Pooling(x, kernel=(3, 2), stride=(1, 2), pool_type='sum'),
            mx.sym.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type='lp', p_value=2),
            mx.sym.Pooling(x, global_pool=True, pool_type='max', kernel=(1, 1)),
            mx.sym.Pooling(x, global_pool=True, pool_type='avg', kernel=(1, 1)),
            mx.sym.Pooling(x, global_pool=True, pool_type='sum', kernel=(1, 1)),
            mx.sym.contrib.AdaptiveAvgPooling2D(x, output_size=1),
            mx.sym.contrib.AdaptiveAvgPooling2D(x, output_size=(3, 2)),
            mx.sym.Pooling(V('seq'), kernel=(3,), stride=(2,), pool_type='max')]
    return mx.sym.Group(outs), {}, {'data': _r(2, 3, 9, 8), 'seq': _r(2, 3, 11)}


def _reshapes():
    x, col, dts = V('data'), V('col'), V('dts')   # (2, 3, 4, 5)
    outs = [mx.sym.Reshape(x, shape=(0, -1)), mx.sym.Reshape(x, shape=(-2,)),
            mx.sym.Reshape(x, shape=(0, -3, 5)), mx.sym.Reshape(x, shape=(0, 0, -4, 2, -1, 5)),
            mx.sym.Reshape(x, shape=(-1, 5), reverse=True), mx.sym.Flatten(x),
            mx.sym.transpose(x, axes=(0, 2, 1, 3)), mx.sym.transpose(x),
            mx.sym.SwapAxis(x, dim1=1, dim2=3), mx.sym.expand_dims(x, axis=2),
            mx.sym.squeeze(mx.sym.expand_dims(x, axis=1), axis=1),
            mx.sym.tile(x, reps=(1, 2, 1, 2)), mx.sym.tile(x, reps=(2,)),
            mx.sym.repeat(x, repeats=2, axis=2), mx.sym.repeat(x, repeats=3),
            mx.sym.reshape_like(x, V('like')), mx.sym.broadcast_to(col, shape=(0, 3, 4, 5)),
            mx.sym.broadcast_like(col, x), mx.sym.broadcast_axis(col, axis=3, size=5),
            mx.sym.reverse(x, axis=1), mx.sym.depth_to_space(dts, block_size=2),
            mx.sym.space_to_depth(dts, block_size=2)]
    return mx.sym.Group(outs), {}, {'data': _r(2, 3, 4, 5), 'like': _r(6, 20),
                                    'col': _r(2, 3, 4, 1), 'dts': _r(2, 8, 2, 4)}


def _join_split():
    a, c, small = V('a'), V('c'), V('small')
    outs = [mx.sym.Concat(a, c, dim=1), mx.sym.Concat(a, c, dim=0), mx.sym.stack(a, c, axis=1),
            mx.sym.add_n(a, c, a)]
    outs += list(mx.sym.SliceChannel(a, num_outputs=3, axis=1))
    outs += list(mx.sym.split(a, num_outputs=2, axis=2, squeeze_axis=False))
    outs += list(mx.sym.split(V('one'), num_outputs=4, axis=1, squeeze_axis=True))
    outs += list(mx.sym.split_v2(a, indices_or_sections=(1, 3), axis=2))
    outs += [mx.sym.slice(a, begin=(None, 1), end=(None, 3)),
             mx.sym.slice(a, begin=(1, None, 3), end=(None, 0, None), step=(1, -1, -2)),
             mx.sym.slice_axis(a, axis=2, begin=1, end=None),
             mx.sym.slice_axis(a, axis=-1, begin=-3, end=-1),
             mx.sym.slice_like(a, small), mx.sym.slice_like(a, small, axes=(2,))]
    return mx.sym.Group(outs), {}, {'a': _r(2, 3, 4, 5), 'c': _r(2, 3, 4, 5, seed=3),
                                    'one': _r(2, 4, 3), 'small': _r(1, 2, 3, 4)}


def _arith():
    a, c, col = V('a'), V('c'), V('col')
    outs = [a + c, a - c, a * c, a / c, mx.sym.elemwise_add(a, c), mx.sym.elemwise_mul(a, c),
            mx.sym.broadcast_add(a, col), mx.sym.broadcast_sub(a, col),
            mx.sym.broadcast_mul(a, col), mx.sym.broadcast_div(a, col),
            mx.sym.broadcast_maximum(a, col), mx.sym.broadcast_minimum(a, col),
            mx.sym.broadcast_power(mx.sym.abs(a) + 0.5, col), mx.sym.broadcast_mod(a, col),
            mx.sym.broadcast_hypot(a, col), mx.sym.maximum(a, c), mx.sym.minimum(a, c),
            a + 2.5, a - 1.5, a * 3, a / 4, 2 - a, 3 / c, a ** 2, 2 ** a, a % 0.7, 1.3 % c,
            mx.sym.maximum(a, 0.1), mx.sym.minimum(a, 0.2), mx.sym._hypot(a, c)]
    return mx.sym.Group(outs), {}, {'a': _r(2, 3, 4), 'c': _r(2, 3, 4, lo=0.5, hi=2, seed=3),
                                    'col': _r(2, 3, 1, lo=0.5, hi=2, seed=5)}


def _compare():
    a, c, col = V('a'), V('c'), V('col')
    outs = [a == c, a != c, a > c, a >= c, a < c, a <= c, a > 0.5, a <= 0.5, a == 0.5,
            mx.sym.broadcast_greater(a, col), mx.sym.broadcast_lesser_equal(a, col),
            mx.sym.broadcast_not_equal(a, col),
            mx.sym.broadcast_logical_and(a > 0.5, col), mx.sym.broadcast_logical_or(a, col),
            mx.sym.broadcast_logical_xor(a, col), mx.sym.logical_not(a)]
    rng = np.random.RandomState(2)
    av = rng.randint(0, 3, (2, 3, 4)).astype('float32')
    return mx.sym.Group(outs), {}, {'a': av, 'c': rng.randint(0, 3, (2, 3, 4)).astype('float32'),
                                    'col': rng.randint(0, 2, (2, 3, 1)).astype('float32')}


def _unary():
    x, p = V('data'), V('pos')
    outs = [f(x) for f in (mx.sym.exp, mx.sym.abs, mx.sym.negative, mx.sym.sin, mx.sym.cos,
                           mx.sym.tan, mx.sym.arcsin, mx.sym.arccos, mx.sym.arctan,
                           mx.sym.sinh, mx.sym.cosh, mx.sym.tanh, mx.sym.arcsinh,
                           mx.sym.arctanh, mx.sym.floor, mx.sym.ceil, mx.sym.round,
                           mx.sym.rint, mx.sym.trunc, mx.sym.fix, mx.sym.sign, mx.sym.erf,
                           mx.sym.square, mx.sym.expm1, mx.sym.degrees, mx.sym.radians,
                           mx.sym.cbrt)]
    outs += [f(p) for f in (mx.sym.log, mx.sym.sqrt, mx.sym.rsqrt, mx.sym.reciprocal,
                            mx.sym.log1p, mx.sym.log2, mx.sym.log10, mx.sym.rcbrt)]
    outs += [mx.sym.arccosh(p + 1), mx.sym.clip(x, -0.3, 0.4), mx.sym.smooth_l1(x, scalar=2.0)]
    xv = _r(3, 7, lo=-0.95, hi=0.95)
    xv[0, :4] = [0.5, -0.5, 1.5, -2.5]   # halves: round goes away from zero, rint down
    return mx.sym.Group(outs), {}, {'data': xv, 'pos': _r(3, 7, lo=0.2, hi=3)}


def _softmaxes():
    x = V('data')
    outs = [mx.sym.softmax(x), mx.sym.softmax(x, axis=1, temperature=2.0),
            mx.sym.log_softmax(x, axis=2), mx.sym.softmin(x, axis=0),
            mx.sym.SoftmaxActivation(x, mode='channel'), mx.sym.SoftmaxActivation(x),
            mx.sym.SoftmaxOutput(x, V('label'), multi_output=True),
            mx.sym.SoftmaxOutput(mx.sym.Flatten(x), V('label2')),
            mx.sym.Dropout(x, p=0.5), mx.sym.BlockGrad(x), mx.sym.make_loss(x),
            mx.sym.LinearRegressionOutput(x, V('lab3')),
            mx.sym.LogisticRegressionOutput(x, V('lab4'))]
    return mx.sym.Group(outs), {}, {'data': _r(2, 3, 4, lo=-3, hi=3), 'label': _r(2, 4),
                                    'label2': _r(2), 'lab3': _r(2, 3, 4), 'lab4': _r(2, 3, 4)}


def _reductions():
    x = V('data')
    outs = []
    for f in (mx.sym.sum, mx.sym.mean, mx.sym.max, mx.sym.min, mx.sym.prod):
        outs += [f(x), f(x, axis=1), f(x, axis=(0, 2), keepdims=True),
                 f(x, axis=1, exclude=True)]
    outs += [mx.sym.norm(x), mx.sym.norm(x, ord=1, axis=1), mx.sym.norm(x, axis=(1, 2),
                                                                        keepdims=True)]
    outs += [mx.sym.argmax(x, axis=1), mx.sym.argmin(x, axis=2, keepdims=True),
             mx.sym.argmax(x), mx.sym.argmax_channel(V('m')),
             mx.sym.topk(x, k=2), mx.sym.topk(x, k=2, axis=1, ret_typ='value'),
             mx.sym.topk(x, k=3, ret_typ='both', is_ascend=True, dtype='int32'),
             mx.sym.sort(x, axis=1), mx.sym.sort(x, is_ascend=False),
             mx.sym.argsort(x, axis=0)]
    rng = np.random.RandomState(4)
    xv = rng.permutation(24).reshape(2, 3, 4).astype('float32') / 10   # no ties
    return mx.sym.Group(outs), {}, {'data': xv, 'm': _r(3, 5)}


def _indexing():
    x, idx, pidx = V('data'), V('idx'), V('pidx')
    outs = [mx.sym.take(x, idx), mx.sym.take(x, idx, axis=1, mode='wrap'),
            mx.sym.Embedding(idx, V('emb'), input_dim=6, output_dim=3),
            mx.sym.pick(x, pidx, axis=1), mx.sym.pick(x, pidx, axis=1, keepdims=True),
            mx.sym.where(V('cond'), x, x * 2), mx.sym.where(V('cond1'), x, -x),
            mx.sym.one_hot(idx, depth=5, on_value=2, off_value=-1),
            mx.sym.gather_nd(x, V('gidx')), mx.sym.batch_take(V('m'), V('bidx')),
            mx.sym.Cast(x, dtype='float64'), mx.sym.Cast(x * 3, dtype='int32'),
            mx.sym.zeros_like(x), mx.sym.ones_like(x), mx.sym.shape_array(x),
            mx.sym.size_array(x)]
    return mx.sym.Group(outs), {'emb': _r(6, 3)}, {
        'data': _r(3, 4, 2), 'idx': np.array([[0, 2], [-1, 5]], 'float32'),
        'pidx': np.array([[0, 3], [1, 2], [3, 3]], 'float32'),
        'cond': (_r(3, 4, 2) > 0).astype('float32'), 'cond1': np.array([1, 0, 1], 'float32'),
        'gidx': np.array([[0, 2, 1], [1, 3, 0]], 'float32'), 'm': _r(3, 5),
        'bidx': np.array([4, 0, 2], 'int32')}


def _matmul():
    a, c, b1, b2, v = V('a'), V('c'), V('b1'), V('b2'), V('v')
    outs = [mx.sym.dot(a, c), mx.sym.dot(a, c, transpose_a=True, transpose_b=True),
            mx.sym.dot(V('a3'), c), mx.sym.dot(v, v),
            mx.sym.batch_dot(b1, b2), mx.sym.batch_dot(b1, b1, transpose_b=True),
            mx.sym.batch_dot(b2, b2, transpose_a=True), mx.sym.linalg.gemm2(b1, b2, alpha=0.5)]
    return mx.sym.Group(outs), {}, {'a': _r(4, 4), 'c': _r(4, 4, seed=1), 'a3': _r(2, 3, 4),
                                    'v': _r(6), 'b1': _r(2, 3, 4), 'b2': _r(2, 4, 5)}


def _resize_pad():
    x = V('data')
    outs = [mx.sym.UpSampling(x, scale=2, sample_type='nearest'),
            mx.sym.contrib.BilinearResize2D(x, height=7, width=9),
            mx.sym.contrib.BilinearResize2D(x, height=8, width=5, align_corners=False),
            mx.sym.Pad(x, mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                       constant_value=0.5),
            mx.sym.Pad(x, mode='edge', pad_width=(0, 0, 0, 0, 1, 1, 2, 2)),
            mx.sym.Pad(x, mode='reflect', pad_width=(0, 0, 0, 0, 2, 1, 1, 2))]
    return mx.sym.Group(outs), {}, {'data': _r(2, 3, 4, 5)}


def _sequence_attention():
    x, lens, qkv = V('data'), V('lens'), V('qkv')
    att = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2)
    q, kv = V('q'), V('kv')
    ed = mx.sym.contrib.interleaved_matmul_encdec_qk(q, kv, heads=2)
    outs = [mx.sym.SequenceMask(x, lens, use_sequence_length=True, value=-2.0),
            mx.sym.SequenceMask(mx.sym.swapaxes(x, 0, 1), lens, use_sequence_length=True,
                                axis=1),
            mx.sym.SequenceMask(x), mx.sym.contrib.arange_like(x),
            mx.sym.contrib.arange_like(x, start=1.5, step=0.5, axis=1),
            att, mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, mx.sym.softmax(att),
                                                                  heads=2),
            ed, mx.sym.contrib.interleaved_matmul_encdec_valatt(kv, mx.sym.softmax(ed), heads=2)]
    # data (seq 5, batch 3, 2), qkv (seq 4, batch 3, heads 2 * 3 * d 3)
    # q (seq 2, batch 3, heads 2 * d 3), kv (seq 4, batch 3, heads 2 * 2 * d 3)
    return mx.sym.Group(outs), {}, {'data': _r(5, 3, 2), 'lens': np.array([2, 5, 0], 'f'),
                                    'qkv': _r(4, 3, 18), 'q': _r(2, 3, 6), 'kv': _r(4, 3, 12)}


def _misc():
    x, lens, img = V('data'), V('lens'), V('img')
    nanx = V('nanx')
    outs = [mx.sym.cumsum(x, axis=1), mx.sym.cumsum(x), mx.sym.cumsum(x, axis=0, dtype='float64'),
            mx.sym.nansum(nanx, axis=1), mx.sym.nanprod(nanx), mx.sym.contrib.div_sqrt_dim(x),
            mx.sym.contrib.quadratic(x, a=0.5, b=-1, c=2), mx.sym.contrib.round_ste(x * 3),
            mx.sym.contrib.sign_ste(x)]
    outs += list(mx.sym.moments(x, axes=(0, 2)))
    outs += list(mx.sym.moments(x, axes=(1,), keepdims=True))
    outs += [mx.sym.SequenceReverse(x), mx.sym.SequenceReverse(x, lens, use_sequence_length=True),
             mx.sym.SequenceLast(x), mx.sym.SequenceLast(x, lens, use_sequence_length=True),
             mx.sym.SequenceLast(mx.sym.swapaxes(x, 0, 1), lens, use_sequence_length=True,
                                 axis=1),
             mx.sym.Crop(img, h_w=(3, 4), offset=(1, 2)),
             mx.sym.Crop(img, h_w=(3, 3), center_crop=True),
             mx.sym.image.to_tensor(V('hwc')), mx.sym.image.to_tensor(V('nhwc')),
             mx.sym.image.normalize(img, mean=(0.1, 0.2, 0.3), std=(0.5, 0.6, 0.7)),
             mx.sym._internal._sum_to_like(x, mx.sym.sum(x, axis=1, keepdims=True))]
    nan = _r(3, 4, seed=9)
    nan[0, 1] = nan[2, 3] = np.nan
    return mx.sym.Group(outs), {}, {
        'data': _r(5, 3, 2), 'lens': np.array([2, 5, 1], 'f'), 'img': _r(2, 3, 6, 7),
        'nanx': nan, 'hwc': np.random.RandomState(1).randint(0, 256, (4, 5, 3)).astype('uint8'),
        'nhwc': np.random.RandomState(2).randint(0, 256, (2, 4, 5, 3)).astype('uint8')}


def _detection_linalg():
    x, rois, logits, label, A, C = V('data'), V('rois'), V('logits'), V('label'), V('A'), V('C')
    outs = [mx.sym.ROIPooling(x, rois, pooled_size=(2, 3), spatial_scale=0.5),
            mx.sym.contrib.ROIAlign(x, rois, pooled_size=(3, 2), spatial_scale=0.5,
                                    sample_ratio=2),
            mx.sym.softmax_cross_entropy(logits, label), mx.sym.SVMOutput(logits, label),
            mx.sym.linalg.gemm(A, V('B'), C, transpose_b=True, alpha=0.5, beta=2.0),
            mx.sym.linalg.det(V('sq')), mx.sym.all_finite(x), mx.sym.all_finite(V('nanx')),
            mx.sym.scatter_nd(V('vals'), V('sidx'), shape=(3, 4)),
            mx.sym._internal._rnn_param_concat(A, C, dim=2, num_args=2)]
    nan = _r(2, 3)
    nan[1, 1] = np.inf
    return mx.sym.Group(outs), {}, {
        'data': _r(2, 3, 8, 9), 'rois': np.array([[0, 1, 1, 6, 5], [1, 0, 2, 12, 14],
                                                  [1, 3.5, 0.5, 9.2, 7.7]], 'f'),
        'logits': _r(4, 5), 'label': np.array([0, 3, 4, 1], 'f'), 'A': _r(2, 3, 4),
        'B': _r(2, 5, 4), 'C': _r(2, 3, 5), 'sq': _r(2, 3, 3), 'nanx': nan,
        'vals': _r(3), 'sidx': np.array([[0, 2, 1], [3, 0, 2]], 'f')}


def _folded():
    # All-constant subgraphs (parameter arithmetic, _zeros/_arange) are folded at export.
    x = V('data')
    w = V('w') * 2 + 1
    y = mx.sym.broadcast_add(mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True),
                             mx.sym.arange(3))
    return y + mx.sym.ones((2, 3)), {'w': _r(3, 4)}, {'data': _r(2, 4)}


OP_GROUPS = {f.__name__[1:]: f for f in (
    _conv, _conv1d3d, _dense, _activations, _batchnorm, _pooling, _reshapes, _join_split,
    _arith, _compare, _unary, _softmaxes, _reductions, _indexing, _matmul, _resize_pad,
    _sequence_attention, _misc, _detection_linalg, _folded)}


@pytest.mark.parametrize('group', sorted(OP_GROUPS))
def test_op_group(group, tmp_path):
    sym, params, inputs = OP_GROUPS[group]()
    model = check_export(sym, params, inputs, tmp_path / ('%s.onnx' % group))
    assert model.ir_version == 7 and model.opset_import[0].version == 13


@pytest.mark.parametrize('opset', [17, 18])
def test_opsets(opset, tmp_path):
    # 17 brings LayerNormalization, 18 takes the axes of every Reduce* as an input.
    for group, make in sorted(OP_GROUPS.items()):
        sym, params, inputs = make()
        model = check_export(sym, params, inputs, tmp_path / ('%s.onnx' % group),
                             opset_version=opset)
        assert [o.version for o in model.opset_import if o.domain == ''] == [opset]
        assert model.ir_version == 8     # the oldest IR version these opsets allow


# ---- dynamic shapes ----------------------------------------------------------------------
@pytest.mark.parametrize('group', ['conv', 'dense', 'reshapes', 'pooling', 'indexing',
                                   'batchnorm', 'softmaxes', 'reductions',
                                   'sequence_attention'])
def test_dynamic_batch(group, tmp_path):
    sym, params, inputs = OP_GROUPS[group]()
    # Inputs whose first dimension is no batch (indices, shapes to copy) stay static.
    static = {'reshapes': ('dts',), 'indexing': ('idx', 'gidx', 'm', 'bidx'),
              'sequence_attention': ('lens',)}.get(group, ())   # there axis 0 is the time
    if group == 'indexing':
        static += ('emb',)
    model = check_export(sym, params, inputs, tmp_path / 'dyn.onnx', dynamic=True,
                         other_batch=5 if group != 'reshapes' else None, static=static)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert not dims[0].HasField('dim_value') and dims[1].HasField('dim_value')


def test_dynamic_reshape_codes(tmp_path):
    x = V('data')
    y = mx.sym.Group([mx.sym.Reshape(x, shape=(0, -1)), mx.sym.Reshape(x, shape=(-3, 0)),
                      mx.sym.Reshape(x, shape=(0, 2, -1)), mx.sym.Flatten(x),
                      mx.sym.repeat(x, repeats=2, axis=1),
                      mx.sym.broadcast_to(mx.sym.sum(x, axis=2, keepdims=True),
                                          shape=(0, 3, 4)),
                      mx.sym.take(x, V('i'), axis=0, mode='clip'),
                      mx.sym.dot(x, V('w'))])
    check_export(y, {'w': _r(4, 2)}, {'data': _r(2, 3, 4), 'i': np.array([0., 1., 7.], 'f')},
                 tmp_path / 'r.onnx', dynamic=True, other_batch=None)
    path = str(tmp_path / 'r.onnx')
    sess = _session(path)
    for batch in (1, 6):
        xv = _r(batch, 3, 4, seed=batch)
        feed = {'data': xv, 'i': np.array([0., 1., 7.], 'f')}
        got = sess.run(None, feed)
        want = _ours(y, {'w': _r(4, 2)}, feed)
        for g, w in zip(got, want):
            _close(g, w)


def test_all_dims_dynamic(tmp_path):
    # MXNet's default with dynamic=True and no dynamic_input_shapes: every dimension dynamic.
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
            nn.GlobalAvgPool2D(), nn.Dense(3))
    net.initialize()
    x = mx.nd.array(_r(2, 3, 8, 8))
    net(x)
    path = mx.onnx.export_model(net, None, [(2, 3, 8, 8)], np.float32,
                                str(tmp_path / 'a.onnx'), dynamic=True)
    sess = _session(path)
    assert sess.get_inputs()[0].shape[2] != 8
    for shape in ((2, 3, 8, 8), (3, 3, 12, 10)):
        xv = _r(*shape)
        _close(sess.run(None, {'data': xv})[0], net(mx.nd.array(xv)).asnumpy())


# ---- seeds, files, blocks ----------------------------------------------------------------
# The seeds' LeNet (000_*): the last layer a dot with a weight Parameter.
from hybridgluon.demo import Net as _LeNet  # noqa: E402


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'),
                nn.Dense(2))
    return net


@pytest.mark.parametrize('which', ['mlp', 'lenet'])
def test_seed_networks(which, tmp_path):
    net = _mlp() if which == 'mlp' else _LeNet()
    net.initialize(mx.init.Xavier())
    shape = (4, 512) if which == 'mlp' else (4, 1, 28, 28)
    x = mx.nd.array(_r(*shape))
    net.hybridize()
    want = net(x).asnumpy()
    # Through the files MXNet's export writes (-symbol.json + .params with arg: prefixes).
    prefix = str(tmp_path / which)
    net.export(prefix)
    path = mx.onnx.export_model(prefix + '-symbol.json', prefix + '-0000.params', [shape],
                                np.float32, str(tmp_path / 'f.onnx'), dynamic=True,
                                dynamic_input_shapes=[(None,) + shape[1:]])
    onnx.checker.check_model(onnx.load(path))
    sess = _session(path)
    _close(sess.run(None, {'data': x.asnumpy()})[0], want)
    x2 = mx.nd.array(_r(7, *shape[1:], seed=3))
    _close(sess.run(None, {'data': x2.asnumpy()})[0], net(x2).asnumpy())
    # Directly from the block, and through mx.contrib.onnx (MXNet's older path).
    path = mx.contrib.onnx.export_model(net, None, [shape], onnx_file_path=str(tmp_path / 'b.onnx'))
    _close(_session(path).run(None, {'data': x.asnumpy()})[0], want)


@pytest.mark.parametrize('name', ['mobilenet0.25', 'squeezenet1.1'])
def test_files_written_by_mxnet(name, tmp_path):
    # -symbol.json and .params written by real MXNet 1.9.1's export, with MXNet's own output
    # for the same input: the ONNX model must give MXNet's numbers.
    d = os.path.join(os.path.dirname(__file__), 'mxnet_ref', 'models', name)
    with np.load(os.path.join(d, 'io.npz')) as z:
        x, y = z['x'], z['y']
    path = mx.onnx.export_model(os.path.join(d, 'model-symbol.json'),
                                os.path.join(d, 'model-0000.params'), [x.shape], np.float32,
                                str(tmp_path / 'm.onnx'), dynamic=True,
                                dynamic_input_shapes=[(None,) + x.shape[1:]])
    onnx.checker.check_model(path)
    sess = _session(path)
    scale = float(np.abs(y).max())
    np.testing.assert_allclose(sess.run(None, {'data': x})[0], y, rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(sess.run(None, {'data': x[:1]})[0], y[:1], rtol=1e-4,
                               atol=1e-4 * scale)


def test_params_forms(tmp_path):
    sym, params, inputs = _batchnorm()
    nd_params = {k: mx.nd.array(v) for k, v in params.items()}
    aux = set(sym.list_auxiliary_states())
    arg = {k: v for k, v in nd_params.items() if k not in aux}
    auxp = {k: v for k, v in nd_params.items() if k in aux}
    want = _ours(sym, params, inputs)
    for form in ([arg, auxp], {('aux:' if k in aux else 'arg:') + k: v
                               for k, v in nd_params.items()}):
        path = mx.onnx.export_model(sym, form, input_shape=[(2, 4, 3, 5)],
                                    input_type=np.float32,
                                    onnx_file_path=str(tmp_path / 'p.onnx'),
                                    run_shape_inference=True, verbose=True)
        model = onnx.load(path)
        assert len(model.graph.value_info) > 0      # what onnx's shape inference added
        got = _session(path).run(None, inputs)
        for g, w in zip(got, want):
            _close(g, w)


def test_label_input_needs_no_shape(tmp_path):
    # A training symbol (SoftmaxOutput with its label): the label's shape is inferred and,
    # unused at inference, it is no input of the ONNX graph.
    y = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(V('data'), num_hidden=3, name='fc'),
                             name='softmax')
    params = {'fc_weight': _r(3, 4), 'fc_bias': _r(3)}
    path = mx.onnx.export_model(y, {k: mx.nd.array(v) for k, v in params.items()}, [(2, 4)],
                                onnx_file_path=str(tmp_path / 's.onnx'))
    sess = _session(path)
    assert [i.name for i in sess.get_inputs()] == ['data']
    x = _r(2, 4)
    want = _ours(y, params, {'data': x, 'softmax_label': np.zeros(2, 'f')})[0]
    _close(sess.run(None, {'data': x})[0], want)


def test_large_model_external_data(tmp_path):
    sym = mx.sym.FullyConnected(V('data'), V('w'), V('b'), num_hidden=64)
    params, inputs = {'w': _r(64, 24), 'b': _r(64)}, {'data': _r(2, 24)}
    path = str(tmp_path / 'big.onnx')
    mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()}, [(2, 24)],
                         onnx_file_path=path, large_model=True)
    assert os.path.getsize(path) < 64 * 24 * 4
    assert os.path.exists(path + '.data')
    onnx.checker.check_model(path)
    got = _session(path).run(None, inputs)
    _close(got[0], _ours(sym, params, inputs)[0])


@pytest.mark.parametrize('kind', ['lstm', 'gru', 'rnn_tanh', 'rnn_relu'])
def test_rnn_layers(kind, tmp_path):
    # Stacked bidirectional layers with zero begin states, then one layer given its states.
    from hybridgluon.gluon import rnn
    make = {'lstm': rnn.LSTM, 'gru': rnn.GRU}.get(kind)
    kwargs = {} if make else {'activation': kind[4:]}
    make = make or rnn.RNN
    net = nn.HybridSequential()
    net.add(make(5, num_layers=2, bidirectional=True, input_size=3, **kwargs))
    net.add(make(4, num_layers=1, input_size=10, **kwargs))
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    x = mx.nd.array(_r(6, 2, 3))
    want = net(x).asnumpy()
    path = mx.onnx.export_model(net, None, [x.shape], np.float32, str(tmp_path / 'r.onnx'),
                                dynamic=True, dynamic_input_shapes=[(None, None, 3)])
    onnx.checker.check_model(path)
    sess = _session(path)
    _close(sess.run(None, {'data': x.asnumpy()})[0], want)
    x2 = mx.nd.array(_r(4, 3, 3, seed=2))
    _close(sess.run(None, {'data': x2.asnumpy()})[0], net(x2).asnumpy())

    layer = make(4, num_layers=2, bidirectional=True, input_size=3, **kwargs)
    layer.initialize(mx.init.Uniform(0.5))
    states = [mx.sym.var('h')] + ([mx.sym.var('c')] if kind == 'lstm' else [])
    out, new_states = layer(mx.sym.var('data'), states)
    sym = mx.sym.Group([out] + list(new_states))
    params = {p.name: p.data().asnumpy() for p in layer.collect_params().values()}
    inputs = {'data': _r(5, 2, 3), 'h': _r(4, 2, 4, seed=4)}
    if kind == 'lstm':
        inputs['c'] = _r(4, 2, 4, seed=5)
    check_export(sym, params, inputs, tmp_path / 's.onnx')


def test_dynamic_fill_error(tmp_path):
    # zeros of the dynamic batch's size feeding an op that needs its values: a clear error.
    x = V('data')
    y = mx.sym.elemwise_add(x, mx.sym.ones(shape=(0, 3)), name='addz')
    with pytest.raises(MXNetError, match="'addz'.*dynamic"):
        mx.onnx.export_model(y, {}, [(2, 3)], onnx_file_path=str(tmp_path / 'x.onnx'),
                             dynamic=True)
    check_export(y, {}, {'data': _r(2, 3)}, tmp_path / 'ok.onnx')


def test_random_generators(tmp_path):
    # Random draws cannot match ours value by value: shapes, dtypes and ranges must.
    y = mx.sym.Group([mx.sym.random.uniform(low=2, high=3, shape=(50, 4)),
                      mx.sym.random.normal(loc=5, scale=0.1, shape=(400,), dtype='float64'),
                      mx.sym.random.randint(low=-2, high=3, shape=(300,)),
                      V('data') + 1])
    path = mx.onnx.export_model(y, {}, [(2,)], onnx_file_path=str(tmp_path / 'r.onnx'))
    onnx.checker.check_model(path)
    u, g, i, d = _session(path).run(None, {'data': np.zeros(2, 'f')})
    assert i.dtype == np.int32 and sorted(set(i.tolist())) == [-2, -1, 0, 1, 2]
    assert u.shape == (50, 4) and u.dtype == np.float32 and 2 <= u.min() and u.max() <= 3
    assert u.std() > 0.2
    assert g.shape == (400,) and g.dtype == np.float64 and abs(g.mean() - 5) < 0.05
    np.testing.assert_array_equal(d, np.ones(2, 'f'))


def test_dropout_always(tmp_path):
    y = mx.sym.Dropout(V('data'), p=0.25, mode='always')
    path = mx.onnx.export_model(y, {}, [(100, 100)], onnx_file_path=str(tmp_path / 'd.onnx'))
    out = _session(path).run(None, {'data': np.ones((100, 100), 'f')})[0]
    kept = out != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)


def test_operator_support():
    ops = mx.onnx.get_operator_support()
    for op in ('Convolution', 'BatchNorm', 'Pooling', 'FullyConnected', 'Reshape', 'softmax',
               'Concat', 'Embedding', 'topk'):
        assert op in ops
    assert '_linalg_potrf' not in ops and '_add_scalar' not in ops
    assert '_zeros' in ops and '_random_uniform' in ops   # folded; converted


# ---- errors ------------------------------------------------------------------------------
def test_unknown_op_names_op_and_node(tmp_path):
    y = mx.sym.linalg.potrf(V('data'), name='chol')
    path = tmp_path / 'x.onnx'
    with pytest.raises(MXNetError, match=r"_linalg_potrf.*'chol'"):
        mx.onnx.export_model(y, {}, [(3, 3)], onnx_file_path=str(path))
    assert not path.exists()


def test_unsupported_attribute(tmp_path):
    y = mx.sym.Pooling(V('data'), kernel=(2,), pool_type='max', pooling_convention='same',
                       name='pool')
    with pytest.raises(MXNetError, match="'pool'.*pooling_convention=same"):
        mx.onnx.export_model(y, {}, [(1, 1, 4)], onnx_file_path=str(tmp_path / 'x.onnx'))
    y = mx.sym.topk(V('data'), ret_typ='mask', name='tk')
    with pytest.raises(MXNetError, match="'tk'.*ret_typ=mask"):
        mx.onnx.export_model(y, {}, [(2, 4)], onnx_file_path=str(tmp_path / 'x.onnx'))
    y = mx.sym.contrib.AdaptiveAvgPooling2D(V('data'), output_size=(3, 3))
    with pytest.raises(MXNetError, match='does not divide'):
        mx.onnx.export_model(y, {}, [(1, 1, 8, 8)], onnx_file_path=str(tmp_path / 'x.onnx'))


def test_bad_shapes_and_inputs(tmp_path):
    sym, params, _ = _dense()
    p = {k: mx.nd.array(v) for k, v in params.items()}
    with pytest.raises(MXNetError, match='in_shapes is required'):
        mx.onnx.export_model(sym, p, onnx_file_path=str(tmp_path / 'x.onnx'))
    with pytest.raises(MXNetError, match='shape inference failed'):
        mx.onnx.export_model(sym, p, [(2, 5, 5)], onnx_file_path=str(tmp_path / 'x.onnx'))
    with pytest.raises(MXNetError, match='input shapes'):
        mx.onnx.export_model(sym, p, [(2, 24), (3, 3)], onnx_file_path=str(tmp_path / 'x.onnx'))
    with pytest.raises(MXNetError, match='2 dynamic_input_shapes for 1 in_shapes'):
        mx.onnx.export_model(sym, p, [(2, 24)], onnx_file_path=str(tmp_path / 'x.onnx'),
                             dynamic=True, dynamic_input_shapes=[(None, 24), (None, 1)])
    with pytest.raises(MXNetError, match='sym must be a Symbol'):
        mx.onnx.export_model(42, p, [(2, 24)], onnx_file_path=str(tmp_path / 'x.onnx'))
    with pytest.raises(MXNetError, match='opset_version 12'):
        mx.onnx.export_model(sym, p, [(2, 24)], onnx_file_path=str(tmp_path / 'x.onnx'),
                             opset_version=12)
    assert not list(tmp_path.iterdir())


def test_failed_export_keeps_old_file(tmp_path):
    path = tmp_path / 'model.onnx'
    path.write_bytes(b'old')
    with pytest.raises(MXNetError):
        mx.onnx.export_model(mx.sym.linalg.potrf(V('data')), {}, [(3, 3)],
                             onnx_file_path=str(path))
    assert path.read_bytes() == b'old'
    assert [p.name for p in tmp_path.iterdir()] == ['model.onnx']


def test_missing_onnx_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, 'onnx', None)
    with pytest.raises(MXNetError, match=r'onnx package.*hybridgluon\[onnx\]'):
        mx.onnx.export_model(mx.sym.relu(V('data')), {}, [(2, 3)],
                             onnx_file_path=str(tmp_path / 'x.onnx'))


# ---- the model zoo -----------------------------------------------------------------------
ZOO = ['alexnet', 'densenet121', 'densenet161', 'densenet169', 'densenet201', 'inceptionv3',
       'mobilenet0.25', 'mobilenet0.5', 'mobilenet0.75', 'mobilenet1.0', 'mobilenetv2_0.25',
       'mobilenetv2_0.5', 'mobilenetv2_0.75', 'mobilenetv2_1.0', 'resnet18_v1', 'resnet34_v1',
       'resnet50_v1', 'resnet101_v1', 'resnet152_v1', 'resnet18_v2', 'resnet34_v2',
       'resnet50_v2', 'resnet101_v2', 'resnet152_v2', 'squeezenet1.0', 'squeezenet1.1',
       'vgg11', 'vgg13', 'vgg16', 'vgg19', 'vgg11_bn', 'vgg13_bn', 'vgg16_bn', 'vgg19_bn']
# The VGGs hold 130M parameters each (half a minute apiece to initialise, serialise and run
# on a busy machine): they run with HG_LONG_TESTS=1. The deepest nets run one batch size only
# in the default run (the dynamic batch axis is checked on the others).
LONG_ONLY = {'vgg11', 'vgg13', 'vgg16', 'vgg19', 'vgg11_bn', 'vgg13_bn', 'vgg16_bn',
             'vgg19_bn'}
ONE_BATCH = {'resnet101_v1', 'resnet152_v1', 'resnet101_v2', 'resnet152_v2', 'densenet161',
             'densenet201', 'alexnet'}


def test_zoo_list_is_complete():
    from hybridgluon.gluon.model_zoo.vision import _models
    assert sorted(ZOO) == sorted(_models) and len(ZOO) == 34


def _randomize_batchnorm(net, seed):
    # Fresh running statistics (mean 0, var 1) make deep nets' outputs vanish, and the
    # comparison with them; drawn statistics keep the activations of order one.
    rng = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        if name.endswith(('running_mean', 'beta')):
            p.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, p.shape)))
        elif name.endswith(('running_var', 'gamma')):
            p.set_data(mx.nd.array(rng.uniform(0.8, 1.2, p.shape)))


@pytest.fixture
def fast_dir(tmp_path):
    """A folder in memory where there is one: the zoo's models are 5-550 MB each."""
    if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK):
        import tempfile
        import shutil
        d = tempfile.mkdtemp(dir='/dev/shm')
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield str(tmp_path)


@pytest.mark.parametrize('name', ZOO)
def test_model_zoo(name, fast_dir):
    if name in LONG_ONLY and not LONG:
        pytest.skip('%s: long model test, run with HG_LONG_TESTS=1' % name)
    from hybridgluon.gluon.model_zoo import vision
    net = vision.get_model(name)
    # Without normalisation layers, a larger initial scale keeps the output of order one.
    net.initialize(mx.init.Xavier(magnitude=6.0 if 'squeezenet' in name else 2.0))
    size = 299 if name == 'inceptionv3' else 224
    x = mx.nd.array(_r(1, 3, size, size, lo=0, hi=1))
    net(x)
    _randomize_batchnorm(net, 1)
    net.hybridize()
    want = net(x).asnumpy()
    path = mx.onnx.export_model(net, None, [x.shape], np.float32,
                                os.path.join(fast_dir, 'm.onnx'), dynamic=True,
                                dynamic_input_shapes=[(None, 3, size, size)])
    onnx.checker.check_model(path)
    sess = _session(path)
    scale = float(np.abs(want).max())
    assert scale > 1e-3
    got = sess.run(None, {'data': x.asnumpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
    if name in ONE_BATCH and not LONG:
        return
    x2 = mx.nd.array(_r(2, 3, size, size, lo=0, hi=1, seed=9))
    got2 = sess.run(None, {'data': x2.asnumpy()})[0]
    np.testing.assert_allclose(got2, net(x2).asnumpy(), rtol=1e-4, atol=1e-4 * scale)
