"""ONNX import (`mx.onnx.import_model`, `import_to_gluon`, `get_model_metadata`).

References are independent of our code: onnxruntime runs the same ONNX file, PyTorch runs the
module it was exported from, and real MXNet 1.9.1 wrote the files under tests/data/onnx/ (with
its own outputs, see gen_mxnet_onnx.py there).
"""
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx

onnx = pytest.importorskip('onnx')
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

try:
    import onnxruntime as ort
except ImportError:  # the tests against real MXNet's files and PyTorch still run
    ort = None

DATA = os.path.join(os.path.dirname(__file__), 'data', 'onnx')
BENCH = os.path.join(os.path.dirname(__file__), '..', 'benchmarks')
LONG = os.environ.get('HG_LONG_TESTS', '') not in ('', '0')


def _model(nodes, feeds, inits, outputs, opset):
    """A model of `nodes`: graph inputs from `feeds` (name -> array), initializers from
    `inits`, outputs named `outputs` (their types left to inference)."""
    ins = [helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()]
    outs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()]
    graph = helper.make_graph(nodes, 'g', ins, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 8
    # onnxruntime wants the outputs typed: take the types from ONNX's own shape inference
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             if v.type.tensor_type.elem_type}
    for o in model.graph.output:
        o.type.CopyFrom(known[o.name].type)
    return model


def _run_ort(model, feeds):
    if ort is None:
        pytest.skip('needs onnxruntime')
    sess = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    return sess.run(None, feeds)


def _run_ours(model, feeds, hybridize=False):
    net = mx.onnx.import_to_gluon(model, mx.cpu())
    if hybridize:
        net.hybridize()
    out = net(*[mx.nd.array(v, dtype=v.dtype) for v in feeds.values()])
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.asnumpy() for o in outs]


def _check(model, feeds, tol=1e-4):
    want = _run_ort(model, feeds)
    for hyb in (False, True):
        got = _run_ours(model, feeds, hyb)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (g.shape, w.shape)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=tol, atol=tol)


R = np.random.default_rng(3)


def _f(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape).astype(np.float32)


def _i64(*vals):
    return np.array(vals, dtype=np.int64)


N = helper.make_node

# name -> (opsets, builder(opset) -> (nodes, feeds, inits, outputs))
CASES = {}


def case(name, opsets=(13, 17)):
    def deco(fn):
        CASES[name] = (opsets, fn)
        return fn
    return deco


@case('conv_group_dilation')
def _c(op):
    return ([N('Conv', ['x', 'w', 'b'], ['y'], group=2, dilations=[2, 1], strides=[1, 2],
               pads=[1, 1, 1, 1])],
            {'x': _f(2, 4, 9, 9)}, {'w': _f(6, 2, 3, 3), 'b': _f(6)}, ['y'])


@case('conv_asymmetric_pads')
def _c(op):
    return ([N('Conv', ['x', 'w'], ['y'], pads=[0, 1, 2, 0], strides=[2, 2])],
            {'x': _f(1, 3, 8, 7)}, {'w': _f(4, 3, 3, 3)}, ['y'])


@case('conv_same_upper')
def _c(op):
    return ([N('Conv', ['x', 'w'], ['y'], auto_pad='SAME_UPPER', strides=[2, 2])],
            {'x': _f(1, 3, 10, 9)}, {'w': _f(4, 3, 4, 4)}, ['y'])


@case('conv1d')
def _c(op):
    return ([N('Conv', ['x', 'w', 'b'], ['y'], pads=[2, 2], dilations=[2])],
            {'x': _f(2, 3, 11)}, {'w': _f(5, 3, 3), 'b': _f(5)}, ['y'])


@case('conv_transpose')
def _c(op):
    return ([N('ConvTranspose', ['x', 'w', 'b'], ['y'], strides=[2, 2], pads=[1, 1, 1, 1],
               output_padding=[1, 1], group=2)],
            {'x': _f(1, 4, 5, 6)}, {'w': _f(4, 3, 3, 3), 'b': _f(6)}, ['y'])


@case('conv_transpose_asymmetric')
def _c(op):
    return ([N('ConvTranspose', ['x', 'w'], ['y'], strides=[2, 2], pads=[0, 1, 1, 0])],
            {'x': _f(1, 2, 4, 4)}, {'w': _f(2, 3, 3, 3)}, ['y'])


@case('gemm_fc')
def _c(op):
    return ([N('Gemm', ['x', 'w', 'b'], ['y'], transB=1)],
            {'x': _f(4, 6)}, {'w': _f(5, 6), 'b': _f(5)}, ['y'])


@case('gemm_general')
def _c(op):
    return ([N('Gemm', ['x', 'w', 'c'], ['y'], transA=1, alpha=0.5, beta=2.0)],
            {'x': _f(6, 4), 'w': _f(6, 5)}, {'c': _f(4, 5)}, ['y'])


@case('matmul_shapes')
def _c(op):
    return ([N('MatMul', ['a', 'w'], ['y1']), N('MatMul', ['a', 'b'], ['y2']),
             N('MatMul', ['p', 'q'], ['y3']), N('MatMul', ['m', 'n'], ['y4'])],
            {'a': _f(2, 3, 4), 'b': _f(2, 4, 5), 'p': _f(2, 3, 4, 5), 'q': _f(2, 3, 5, 2),
             'm': _f(3, 4), 'n': _f(4, 2)},
            {'w': _f(4, 6)}, ['y1', 'y2', 'y3', 'y4'])


@case('broadcast_arithmetic')
def _c(op):
    return ([N('Add', ['x', 'v'], ['a']), N('Sub', ['s', 'x'], ['b']),
             N('Mul', ['x', 'col'], ['c']), N('Div', ['one', 'p'], ['d']),
             N('Pow', ['p', 'two'], ['e']), N('Div', ['x', 'p'], ['f']),
             N('Sum', ['x', 'v', 'col'], ['g']), N('Mean', ['x', 'v'], ['h']),
             N('Max', ['x', 'v'], ['i']), N('Min', ['x', 'col'], ['j'])],
            {'x': _f(2, 3, 4), 'v': _f(4), 'p': _f(2, 3, 4, lo=0.5, hi=2.0)},
            {'s': np.array(0.5, np.float32), 'col': _f(3, 1), 'one': np.array([1.5], 'f'),
             'two': np.array(2.0, np.float32)}, list('abcdefghij'))


@case('unary')
def _c(op):
    names = ['Relu', 'Sigmoid', 'Tanh', 'Exp', 'Abs', 'Neg', 'Floor', 'Ceil', 'Erf',
             'Softplus', 'Softsign', 'Sin', 'Cos', 'Atan', 'Sign']
    pos = ['Log', 'Sqrt', 'Reciprocal']
    nodes = [N(n, ['x'], [n]) for n in names] + [N(n, ['p'], [n]) for n in pos]
    return nodes, {'x': _f(3, 5, lo=-3, hi=3), 'p': _f(3, 5, lo=0.2, hi=3)}, {}, names + pos


@case('activations')
def _c(op):
    nodes = [N('LeakyRelu', ['x'], ['a'], alpha=0.2), N('Elu', ['x'], ['b'], alpha=0.7),
             N('Selu', ['x'], ['c']), N('Selu', ['x'], ['d'], alpha=1.2, gamma=0.9),
             N('HardSigmoid', ['x'], ['e'], alpha=0.3, beta=0.4),
             N('PRelu', ['x', 'slope'], ['f']), N('Identity', ['x'], ['g']),
             N('Dropout', ['x'], ['h'])]
    outs = list('abcdefgh')
    if op >= 14:
        nodes.append(N('HardSwish', ['x'], ['i']))
        outs.append('i')
    return nodes, {'x': _f(2, 3, 4, 4, lo=-4, hi=4)}, {'slope': _f(3, 1, 1)}, outs


@case('gelu', opsets=(20,))
def _c(op):
    return ([N('Gelu', ['x'], ['a']), N('Gelu', ['x'], ['b'], approximate='tanh')],
            {'x': _f(3, 7, lo=-4, hi=4)}, {}, ['a', 'b'])


@case('clip')
def _c(op):
    return ([N('Clip', ['x', 'lo', 'hi'], ['a']), N('Clip', ['x', 'lo'], ['b']),
             N('Clip', ['x', '', 'hi'], ['c'])],
            {'x': _f(3, 4, lo=-2, hi=2)},
            {'lo': np.array(-0.5, 'f'), 'hi': np.array(0.7, 'f')}, ['a', 'b', 'c'])


@case('normalization')
def _c(op):
    nodes = [N('BatchNormalization', ['x', 'g', 'b', 'm', 'v'], ['a'], epsilon=1e-3),
             N('InstanceNormalization', ['x', 'g', 'b'], ['c'], epsilon=1e-4)]
    outs = ['a', 'c']
    if op >= 17:
        nodes.append(N('LayerNormalization', ['x', 'lg', 'lb'], ['d'], epsilon=1e-5))
        outs.append('d')
    return (nodes, {'x': _f(2, 3, 4, 5)},
            {'g': _f(3, lo=0.5, hi=1.5), 'b': _f(3), 'm': _f(3), 'v': _f(3, lo=0.5, hi=2),
             'lg': _f(5), 'lb': _f(5)}, outs)


@case('pooling')
def _c(op):
    return ([N('MaxPool', ['x'], ['a'], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             N('MaxPool', ['x'], ['b'], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
             N('MaxPool', ['x'], ['c'], kernel_shape=[3, 2], pads=[0, 1, 1, 0]),
             N('AveragePool', ['x'], ['d'], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             N('AveragePool', ['x'], ['e'], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               count_include_pad=1, strides=[2, 2]),
             N('AveragePool', ['x'], ['f'], kernel_shape=[2, 2], pads=[1, 0, 0, 1],
               count_include_pad=1),
             N('GlobalAveragePool', ['x'], ['g']), N('GlobalMaxPool', ['x'], ['h']),
             N('MaxPool', ['x'], ['i'], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad='SAME_UPPER')],
            {'x': _f(2, 3, 9, 9)}, {}, list('abcdefghi'))


@case('pool_ceil_edges')
def _c(op):
    # ceil_mode windows that would start in the right padding are dropped (ONNX and PyTorch)
    return ([N('MaxPool', ['x'], ['a'], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1],
               ceil_mode=1),
             N('AveragePool', ['x'], ['b'], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], ceil_mode=1),
             N('MaxPool', ['y'], ['c'], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
            {'x': _f(1, 2, 7, 7), 'y': _f(1, 2, 13, 13)}, {}, ['a', 'b', 'c'])


@case('lrn_depth_space')
def _c(op):
    return ([N('LRN', ['x'], ['a'], size=3, alpha=0.01, beta=0.6, bias=1.5),
             N('DepthToSpace', ['x'], ['b'], blocksize=2),
             N('DepthToSpace', ['x'], ['c'], blocksize=2, mode='CRD'),
             N('SpaceToDepth', ['x'], ['d'], blocksize=2)],
            {'x': _f(2, 8, 4, 6)}, {}, ['a', 'b', 'c', 'd'])


@case('recurrent')
def _c(op):
    t, b, i, h = 5, 3, 4, 6
    return ([N('LSTM', ['x', 'lw', 'lr', 'lb', '', 'h0', 'c0'], ['y1', 'yh1', 'yc1'],
               hidden_size=h),
             N('LSTM', ['x', 'lw2', 'lr2'], ['y2', 'yh2'], hidden_size=h,
               direction='bidirectional'),
             N('GRU', ['x', 'gw', 'gr', 'gb'], ['y3', 'yh3'], hidden_size=h,
               linear_before_reset=1, direction='bidirectional'),
             N('RNN', ['x', 'rw', 'rr', 'rb', '', 'h0'], ['y4', 'yh4'], hidden_size=h),
             N('RNN', ['x', 'rw', 'rr'], ['y5'], hidden_size=h, activations=['Relu'])],
            {'x': _f(t, b, i), 'h0': _f(1, b, h)},
            {'lw': _f(1, 4 * h, i), 'lr': _f(1, 4 * h, h), 'lb': _f(1, 8 * h),
             'c0': _f(1, b, h), 'lw2': _f(2, 4 * h, i), 'lr2': _f(2, 4 * h, h),
             'gw': _f(2, 3 * h, i), 'gr': _f(2, 3 * h, h), 'gb': _f(2, 6 * h),
             'rw': _f(1, h, i), 'rr': _f(1, h, h), 'rb': _f(1, 2 * h)},
            ['y1', 'yh1', 'yc1', 'y2', 'yh2', 'y3', 'yh3', 'y4', 'yh4', 'y5'])


@case('softmax', opsets=(11, 13, 17))
def _c(op):
    return ([N('Softmax', ['x'], ['a'], axis=1), N('LogSoftmax', ['x'], ['b'], axis=1),
             N('Softmax', ['x'], ['c'], axis=-1), N('Softmax', ['x'], ['d'], axis=0)],
            {'x': _f(2, 3, 4, lo=-3, hi=3)}, {}, list('abcd'))


@case('reshape_family')
def _c(op):
    return ([N('Flatten', ['x'], ['a'], axis=2), N('Flatten', ['x'], ['b']),
             N('Reshape', ['x', 's'], ['c']), N('Transpose', ['x'], ['d'], perm=[2, 0, 3, 1]),
             N('Transpose', ['x'], ['e']), N('Unsqueeze', ['x', 'ua'], ['f']),
             N('Squeeze', ['f', 'sa'], ['g']), N('Concat', ['x', 'x'], ['h'], axis=-2),
             N('Tile', ['x', 'reps'], ['i']), N('Expand', ['col', 'es'], ['j'])],
            {'x': _f(2, 3, 4, 5), 'col': _f(3, 1)},
            {'s': _i64(0, -1, 10), 'ua': _i64(0, -1), 'sa': _i64(0), 'reps': _i64(1, 2, 1, 2),
             'es': _i64(2, 1, 4)}, list('abcdefghij'))


@case('split_slice')
def _c(op):
    return ([N('Split', ['x', 'sp'], ['a', 'b'], axis=1), N('Split', ['x'], ['c', 'd', 'e'],
                                                             axis=2),
             N('Slice', ['x', 'st', 'en', 'ax', 'stp'], ['f']),
             N('Slice', ['x', 'st2', 'en2'], ['g'])],
            {'x': _f(2, 6, 9)},
            {'sp': _i64(2, 4), 'st': _i64(-1, 1), 'en': _i64(-2 ** 63, 8), 'ax': _i64(2, 1),
             'stp': _i64(-2, 3), 'st2': _i64(1), 'en2': _i64(2 ** 62)}, list('abcdefg'))


@case('gather_where_compare')
def _c(op):
    return ([N('Gather', ['x', 'idx'], ['a'], axis=1), N('Gather', ['x', 'i0'], ['b'], axis=2),
             N('Gather', ['x', 'ri'], ['c'], axis=0), N('Greater', ['x', 'y'], ['gt']),
             N('Where', ['gt', 'x', 'z'], ['d']), N('Less', ['x', 'half'], ['lt']),
             N('Equal', ['ri', 'ri'], ['eq']), N('Not', ['gt'], ['ng']),
             N('And', ['gt', 'ng'], ['e']), N('Or', ['gt', 'lt'], ['f']),
             N('Cast', ['f'], ['g'], to=TensorProto.FLOAT)],
            {'x': _f(3, 4, 5), 'y': _f(3, 4, 5), 'ri': np.array([[2, 0], [1, -1]], np.int64)},
            {'idx': np.array([[0, -1], [2, 1]], np.int64), 'i0': np.array(3, np.int64),
             'z': _f(4, 1), 'half': np.array(0.5, 'f')}, ['a', 'b', 'c', 'd', 'g', 'eq'])


@case('reductions', opsets=(11, 13, 18))
def _c(op):
    def red(name, out, axes, keep):
        if op >= 18 or (name == 'ReduceSum' and op >= 13):
            return N(name, ['x', axes], [out], keepdims=keep)
        return N(name, ['x'], [out], axes=list(AXES[axes]), keepdims=keep)
    return ([red('ReduceMean', 'a', 'ax1', 1), red('ReduceSum', 'b', 'ax02', 0),
             red('ReduceMax', 'c', 'axm1', 0), red('ReduceMin', 'd', 'ax1', 1),
             red('ReduceProd', 'e', 'ax02', 1), red('ReduceSumSquare', 'f', 'ax1', 0),
             red('ReduceL2', 'g', 'axm1', 1), N('ReduceMean', ['x'], ['h'], keepdims=1),
             N('ArgMax', ['x'], ['i'], axis=1), N('ArgMin', ['x'], ['j'], axis=-1, keepdims=0),
             N('ReduceSum', ['x'] + (['none'] if op >= 13 else []), ['s'], keepdims=1),
             N('TopK', ['x', 'k'], ['v', 'ix'], axis=1),
             N('TopK', ['x', 'k'], ['v2', 'ix2'], axis=-1, largest=0)],
            {'x': _f(3, 4, 5, lo=0.5, hi=1.5)},
            {k: _i64(*v) for k, v in AXES.items()} | {'k': _i64(2), 'none': _i64()},
            list('abcdefghijs') + ['v', 'ix', 'v2', 'ix2'])


AXES = {'ax1': (1,), 'ax02': (0, 2), 'axm1': (-1,)}


@case('pad_resize')
def _c(op):
    nodes = [N('Pad', ['x', 'pads', 'cv'], ['a'], mode='constant'),
             N('Pad', ['x', 'pads'], ['b'], mode='reflect'),
             N('Pad', ['x', 'pads'], ['c'], mode='edge'),
             N('Resize', ['x', '', 'sc'], ['d'], mode='nearest',
               coordinate_transformation_mode='asymmetric', nearest_mode='floor'),
             N('Resize', ['x', '', 'sc'], ['e'], mode='nearest'),
             N('Resize', ['x', '', '', 'sz'], ['f'], mode='linear',
               coordinate_transformation_mode='align_corners'),
             N('Resize', ['x', '', 'sc'], ['g'], mode='linear'),
             N('Resize', ['x', '', 'sc'], ['h'], mode='linear',
               coordinate_transformation_mode='pytorch_half_pixel')]
    return (nodes, {'x': _f(2, 3, 5, 6)},
            {'pads': _i64(0, 0, 1, 2, 0, 0, 2, 1), 'cv': np.array(0.25, 'f'),
             'sc': np.array([1, 1, 2, 2], 'f'), 'sz': _i64(2, 3, 7, 11)}, list('abcdefgh'))


@case('shape_arithmetic')
def _c(op):
    # torch's x.view(x.size(0), -1) and friends: Shape -> Gather -> Unsqueeze -> Concat
    return ([N('Shape', ['x'], ['s']), N('Gather', ['s', 'zero'], ['n']),
             N('Unsqueeze', ['n', 'ax0'], ['n1']), N('Concat', ['n1', 'm1'], ['t'], axis=0),
             N('Reshape', ['x', 't'], ['a']), N('Shape', ['x'], ['s2']),
             N('Slice', ['s2', 'one', 'big'], ['tail']),
             N('ConstantOfShape', ['tail'], ['ones'],
               value=numpy_helper.from_array(np.array([2.0], 'f'))),
             N('Mul', ['x', 'ones'], ['b']),
             N('Constant', [], ['c3'], value=numpy_helper.from_array(_f(5))),
             N('Add', ['x', 'c3'], ['c']), N('Size', ['x'], ['sz']),
             N('Cast', ['sz'], ['szf'], to=TensorProto.FLOAT), N('Div', ['x', 'szf'], ['d'])],
            {'x': _f(2, 3, 4, 5)},
            {'zero': np.array(0, np.int64), 'ax0': _i64(0), 'm1': _i64(-1), 'one': _i64(1),
             'big': _i64(100)}, ['a', 'b', 'c', 'd'])


@pytest.mark.parametrize('name,opset', [(n, o) for n, (ops, _) in CASES.items() for o in ops])
def test_op_against_onnxruntime(name, opset):
    nodes, feeds, inits, outputs = CASES[name][1](opset)
    _check(_model(nodes, feeds, inits, outputs, opset), feeds)


def test_run_time_dimensions():
    """Shapes read off a tensor whose batch and length are dynamic feed ConstantOfShape,
    Expand, Reshape and Gather (negative index) without being known at import."""
    nodes = [N('Shape', ['x'], ['s']), N('Gather', ['s', 'i0'], ['b']),
             N('Unsqueeze', ['b', 'ax0'], ['b1']), N('Concat', ['two', 'b1', 'four'], ['st'],
                                                     axis=0),
             N('ConstantOfShape', ['st'], ['z'],
               value=numpy_helper.from_array(np.array([1.5], 'f'))),
             N('Gather', ['x', 'last'], ['xl'], axis=1),
             N('Slice', ['s', 'zero', 'two_s'], ['s01']),
             N('Concat', ['s01', 'one', 'four'], ['et'], axis=0),
             N('Expand', ['row', 'et'], ['e']),
             N('Concat', ['s01', 'm1'], ['rt'], axis=0), N('Reshape', ['x', 'rt'], ['r'])]
    inits = {'i0': np.array(0, np.int64), 'ax0': _i64(0), 'two': _i64(2), 'four': _i64(4),
             'last': np.array(-1, np.int64), 'zero': _i64(0), 'two_s': _i64(2),
             'one': _i64(1), 'row': _f(4), 'm1': _i64(-1)}
    model = _model(nodes, {'x': _f(3, 5, 2, 2)}, inits, ['z', 'xl', 'e', 'r'], 13)
    for k, p in ((0, 'n'), (1, 't')):
        model.graph.input[0].type.tensor_type.shape.dim[k].dim_param = p
    net = mx.onnx.import_to_gluon(model, mx.cpu())
    net.hybridize()
    for shape in ((3, 5, 2, 2), (2, 7, 2, 2)):
        x = _f(*shape)
        want = _run_ort(model, {'x': x})
        got = net(mx.nd.array(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)


def test_upsample_opset9():
    x = _f(1, 2, 3, 4)
    model = _model([N('Upsample', ['x', 's'], ['y'], mode='nearest')], {'x': x},
                   {'s': np.array([1, 1, 2, 3], 'f')}, ['y'], 9)
    # nearest with unequal integer factors is refused clearly; equal ones run
    with pytest.raises(mx.MXNetError, match="Upsample"):
        _run_ours(model, {'x': x})
    model = _model([N('Upsample', ['x', 's'], ['y'], mode='nearest')], {'x': x},
                   {'s': np.array([1, 1, 3, 3], 'f')}, ['y'], 9)
    _check(model, {'x': x})


def test_split_opset18_num_outputs():
    x = _f(2, 7)
    model = _model([N('Split', ['x'], ['a', 'b', 'c'], axis=1, num_outputs=3)], {'x': x}, {},
                   ['a', 'b', 'c'], 18)
    _check(model, {'x': x})


def test_old_opset_attributes():
    """Before opset 13 axes, splits and clip bounds were attributes; before 10 Slice's too."""
    x = _f(2, 6, 4)
    nodes = [N('Unsqueeze', ['x'], ['u'], axes=[0]), N('Squeeze', ['u'], ['a'], axes=[0]),
             N('Split', ['x'], ['b', 'c'], axis=1, split=[1, 5]),
             N('Slice', ['x'], ['d'], starts=[1, 0], ends=[100, -1], axes=[1, 2]),
             N('ReduceSum', ['x'], ['e'], axes=[1], keepdims=0),
             N('Clip', ['x'], ['f'], min=-0.2, max=0.3)]
    _check(_model(nodes, {'x': x}, {}, list('abcdef'), 9), {'x': x})


def test_unsupported_op_names_op_and_node():
    x = _f(2, 3)
    model = _model([N('Relu', ['x'], ['r'], name='first'),
                    N('Det', ['r'], ['y'], name='my_det')], {'x': _f(2, 3, 3)}, {}, ['y'], 13)
    with pytest.raises(mx.MXNetError, match="my_det.*Det"):
        mx.onnx.import_model(model)
    model = _model([N('Resize', ['x', '', 'sc'], ['y'], mode='cubic', name='rs')],
                   {'x': _f(1, 1, 2, 2)}, {'sc': np.array([1, 1, 2, 2], 'f')}, ['y'], 13)
    with pytest.raises(mx.MXNetError, match="'rs' \\(Resize\\).*cubic"):
        mx.onnx.import_model(model)
    model = _model([N('Reshape', ['x', 'x'], ['y'], name='dyn')], {'x': x}, {}, ['y'], 13)
    with pytest.raises(mx.MXNetError, match="'dyn'.*computed at run time"):
        mx.onnx.import_model(model)
    # a malformed node (Concat without its required axis), unnamed: named by its output
    model = _model([N('Identity', ['x'], ['y'])], {'x': x}, {}, ['y'], 13)
    model.graph.node.append(N('Concat', ['y', 'x'], ['z']))
    model.graph.output[0].name = 'z'
    with pytest.raises(mx.MXNetError, match="producing z.*Concat.*axis"):
        mx.onnx.import_model(model)
    # arithmetic on a dynamic batch size is refused, not miscomputed
    model = _model([N('Shape', ['x'], ['s']), N('Mul', ['s', 'two'], ['t'], name='dbl'),
                    N('Reshape', ['x', 't'], ['y'])], {'x': x}, {'two': _i64(1, 1)}, ['y'], 13)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = 'n'
    with pytest.raises(mx.MXNetError, match="'dbl'.*run time"):
        mx.onnx.import_model(model)


def test_bad_file_and_missing_package(tmp_path, monkeypatch):
    bad = tmp_path / 'bad.onnx'
    bad.write_bytes(b'\x00not a model\xff' * 10)
    with pytest.raises(mx.MXNetError, match='bad.onnx'):
        mx.onnx.import_model(str(bad))
    with pytest.raises(mx.MXNetError):
        mx.onnx.import_model(str(tmp_path / 'missing.onnx'))
    monkeypatch.setitem(sys.modules, 'onnx', None)
    with pytest.raises(mx.MXNetError, match=r'hybridgluon\[onnx\]'):
        mx.onnx.import_model(str(bad))


@pytest.mark.parametrize('name', ['mxnet_mlp', 'mxnet_convnet'])
def test_metadata_and_params_split(name):
    """Metadata and the arg/aux split are what MXNet's own importer gives for the file."""
    import json
    with open(os.path.join(DATA, 'mxnet_import.json')) as f:
        ref = json.load(f)[name]
    path = os.path.join(DATA, name + '.onnx')
    meta = mx.onnx.get_model_metadata(path)
    assert meta == {k: [tuple(tuple(x) if isinstance(x, list) else x for x in e) for e in v]
                    for k, v in ref['metadata'].items()}
    sym, arg, aux = mx.onnx.import_model(path)
    assert sorted(arg) == ref['arg'] and sorted(aux) == ref['aux']
    assert set(sym.list_auxiliary_states()) == set(aux)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    for k, v in list(arg.items()) + list(aux.items()):
        np.testing.assert_array_equal(v.asnumpy(), inits[k])


@pytest.mark.parametrize('name', ['mxnet_mlp', 'mxnet_convnet'])
def test_models_exported_by_mxnet(name):
    ref = np.load(os.path.join(DATA, name + '.npz'))
    model = onnx.load(os.path.join(DATA, name + '.onnx'))
    for hyb in (False, True):
        (got,) = _run_ours(model, {'data': ref['x']}, hyb)
        np.testing.assert_allclose(got, ref['y'], rtol=1e-4, atol=1e-4)
    # the symbol API: bind the imported graph with its parameters
    sym, arg, aux = mx.onnx.import_model(model)
    args = dict(arg, data=mx.nd.array(ref['x']))
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), ref['y'], rtol=1e-4, atol=1e-4)


# -- models exported by PyTorch ---------------------------------------------------------------

def _torch_models():
    torch = pytest.importorskip('torch')
    sys.path.insert(0, BENCH)
    try:
        import workloads_torch as wt
    finally:
        sys.path.remove(BENCH)
    return torch, wt


def _randomize_bn(torch, model):
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)
                m.weight.uniform_(0.5, 1.5, generator=g)
                m.bias.uniform_(-0.5, 0.5, generator=g)
    return model.eval()


def _export_torch(torch, model, x, path, **kw):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, (torch.from_numpy(x),), str(path), dynamo=False,
                          input_names=['x'], output_names=['y'], **kw)
    with torch.no_grad():
        return model(torch.from_numpy(x))


@pytest.mark.parametrize('arch,shape,kw', [
    ('mlp', (3, 512), {'opset_version': 13}),
    ('lenet', (2, 1, 28, 28), {'opset_version': 17}),
    ('resnet18_v1', (2, 3, 32, 32), {'opset_version': 13}),
    ('mobilenetv2_1.0', (1, 3, 32, 32), {'opset_version': 17, 'do_constant_folding': False}),
])
def test_models_exported_by_torch(tmp_path, arch, shape, kw):
    torch, wt = _torch_models()
    torch.manual_seed(0)
    model = {'mlp': lambda: wt._mlp(512, (256, 128, 2)), 'lenet': wt.LeNet,
             'resnet18_v1': lambda: wt.resnet18_v1(10),
             'mobilenetv2_1.0': lambda: wt.mobilenetv2_1_0(10)}[arch]()
    model = _randomize_bn(torch, model)
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    path = tmp_path / 'm.onnx'
    want = _export_torch(torch, model, x, path, **kw).numpy()
    scale = max(1.0, float(np.abs(want).max()))
    net = mx.onnx.import_to_gluon(str(path), mx.cpu())
    got = net(mx.nd.array(x)).asnumpy()
    np.testing.assert_allclose(got / scale, want / scale, atol=1e-4)
    if ort is not None:
        want_ort = _run_ort(onnx.load(str(path)), {'x': x})[0]
        np.testing.assert_allclose(got / scale, want_ort / scale, atol=1e-4)
    net.hybridize()
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy() / scale, want / scale, atol=1e-4)
    if kw.get('do_constant_folding') is False:
        _, _, aux = mx.onnx.import_model(str(path))
        assert aux, 'BatchNorm running statistics must arrive as aux params'


# The Gluon model zoo as PyTorch writes it (tests/torch_zoo.py: the same layers, paddings, pools
# and concat orders): every zoo family, each network with its opset, at the smallest image it
# takes, batch 2. BatchNorm is not folded into the convolutions on export, so the imported
# parameters are torch's, one for one. vgg11 (vgg11_bn without the BatchNorms, 28M
# parameters at 32x32), DenseNet and Inception (the largest images, 3 and 6 GFLOPs an image;
# 3 to 7 s each) run with HG_LONG_TESTS=1.
TORCH_ZOO = [('alexnet', 13), ('vgg11', 17), ('vgg11_bn', 13), ('squeezenet1.0', 17),
             ('squeezenet1.1', 13), ('densenet121', 17), ('inceptionv3', 13),
             ('resnet18_v2', 17), ('resnet50_v1', 13), ('resnet50_v2', 17),
             ('mobilenet1.0', 13), ('mobilenetv2_0.25', 17)]
TORCH_ZOO_LONG = {'vgg11', 'densenet121', 'inceptionv3'}


@pytest.fixture
def torch_zoo():
    """torch and tests/torch_zoo.py, torch on one thread for the test: on shared cores its
    OpenMP threads wait for each other at every layer (mobilenetv2_0.25's forward pass, 107
    layers at 32x32, took 2.5 s on two threads of a busy 2-core machine, 20 ms on one)."""
    torch = pytest.importorskip('torch')
    import torch_zoo as tz   # tests/, next to this file; it imports torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch, tz
    torch.set_num_threads(threads)


def _lively(torch, model, size):
    """`model` with weights that carry the image to the output: torch's default initialisation
    and drawn BatchNorm statistics leave deep nets' outputs the same for any input (the biases
    and BatchNorm shifts win), where a wrong padding or pool would go unseen. He-normal
    weights, small biases, drawn BatchNorm scales and shifts, and running statistics measured
    on other images, then perturbed, keep every layer's activations of order one."""
    g = torch.Generator().manual_seed(1)
    bns = []
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                m.weight.normal_(0, (2.0 / fan_in) ** 0.5, generator=g)
                if m.bias is not None:
                    m.bias.uniform_(-0.1, 0.1, generator=g)
            elif isinstance(m, torch.nn.BatchNorm2d):
                bns.append(m)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5, generator=g)
                    m.bias.uniform_(-0.5, 0.5, generator=g)
        for m in bns:   # the statistics of the calibration images, layer by layer
            m.train()
            m.momentum = 1.0
        model(torch.rand(4, 3, size, size, generator=g) * 2 - 1)
        model.eval()
        for m in bns:
            m.running_mean.add_(torch.empty_like(m.running_mean).uniform_(-0.2, 0.2, generator=g)
                                * m.running_var.sqrt())
            m.running_var.mul_(torch.empty_like(m.running_var).uniform_(0.7, 1.4, generator=g))
            # a floor: the channels of a 1x1 map, seen 4 times, can have next to no variance,
            # and dividing by it makes the output a matter of float32 rounding
            m.running_var.add_(0.2 * m.running_var.mean())
    return model


def _gluon_twin(torch, name, model, x):
    """The Gluon zoo's `name` run on `x` with `model`'s parameters, and its parameter count:
    the zoo network's parameters (in the order its blocks made them) are the PyTorch network's,
    shape for shape; but Gluon's BatchNorm(scale=False, center=False) keeps a unit gamma and a
    zero beta where torch's BatchNorm2d(affine=False) has none."""
    from hybridgluon.gluon.model_zoo import vision
    net = vision.get_model(name, classes=10)
    sym = net(mx.sym.var('data'))
    arg, _, aux = sym.infer_shape(data=x.shape)
    shapes = dict(zip(sym.list_arguments(), arg), **dict(zip(sym.list_auxiliary_states(), aux)))
    fixed = [k for k, p in net.collect_params().items()
             if p.grad_req == 'null' and k.endswith(('gamma', 'beta'))]
    names = [k for k in net.collect_params() if k not in fixed]
    state = [v for k, v in model.state_dict().items() if not k.endswith('num_batches_tracked')]
    assert [tuple(shapes[k]) for k in names] == [tuple(v.shape) for v in state]
    feeds = {k: mx.nd.array(v.numpy()) for k, v in zip(names, state)}
    feeds.update({k: (mx.nd.ones if k.endswith('gamma') else mx.nd.zeros)(shapes[k])
                  for k in fixed})
    out = sym.eval(ctx=mx.cpu(), data=mx.nd.array(x), **feeds)[0].asnumpy()
    return out, sum(int(np.prod(s)) for s in shapes.values()) - int(np.prod(x.shape))


@pytest.mark.parametrize('name,opset', TORCH_ZOO, ids=[n for n, _ in TORCH_ZOO])
def test_torch_model_zoo(tmp_path, torch_zoo, name, opset):
    """The zoo network `name` written in PyTorch, exported by torch.onnx.export, imports with
    torch's parameters and computes torch's and onnxruntime's outputs, imperative and
    hybridized; and Gluon's own zoo network computes them with those parameters (so the
    PyTorch network is the zoo's)."""
    if name in TORCH_ZOO_LONG and not LONG:
        pytest.skip('%s: long model test, run with HG_LONG_TESTS=1' % name)
    torch, tz = torch_zoo
    size = tz.SIZES[name]
    torch.manual_seed(0)
    model = _lively(torch, tz.build(name, classes=10, size=size), size)
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, size, size)).astype(np.float32)
    path = tmp_path / 'm.onnx'
    want = _export_torch(torch, model, x, path, opset_version=opset,
                         do_constant_folding=False).numpy()
    assert want.shape == (2, 10)
    scale = float(np.abs(want).max())
    assert np.abs(want[0] - want[1]).max() > 0.01 * scale, 'the output must follow the input'
    twin, n_gluon = _gluon_twin(torch, name, model, x)
    np.testing.assert_allclose(twin / scale, want / scale, rtol=1e-4, atol=1e-4)

    net = mx.onnx.import_to_gluon(str(path), mx.cpu())
    # torch's parameters and statistics, one ONNX initializer each (BatchNorm not folded into
    # the convolutions), and the affine-free BatchNorm's unit scale and zero shift as two more
    # constants: as many numbers as the Gluon network holds
    n_torch = sum(v.numel() for k, v in model.state_dict().items()
                  if not k.endswith('num_batches_tracked'))
    affine_free = sum(2 * m.num_features for m in model.modules()
                      if isinstance(m, torch.nn.BatchNorm2d) and not m.affine)
    n_ours = sum(int(np.prod(p.shape)) for p in net.collect_params().values())
    assert n_ours == n_torch + affine_free == n_gluon
    got = net(mx.nd.array(x)).asnumpy()
    net.hybridize()
    got_hyb = net(mx.nd.array(x)).asnumpy()
    want_ort = _run_ort(onnx.load(str(path)), {'x': x})[0] if ort is not None else None
    for g in (got, got_hyb):
        np.testing.assert_allclose(g / scale, want / scale, rtol=1e-4, atol=1e-4)
        if want_ort is not None:
            np.testing.assert_allclose(g / scale, want_ort / scale, rtol=1e-4, atol=1e-4)


def test_torch_dynamic_batch_export_reload(tmp_path):
    """A dynamic batch axis (torch's x.view(x.size(0), -1)) imports, hybridizes, exports as
    -symbol.json/.params and reloads with SymbolBlock.imports at other batch sizes."""
    torch, _ = _torch_models()
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(3, 4, 3)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            y = torch.nn.functional.gelu(self.bn(self.c(x)))
            y = torch.nn.functional.interpolate(y, scale_factor=2, mode='nearest')
            y = torch.nn.functional.avg_pool2d(y, 2)
            return torch.log_softmax(self.fc(y.view(y.size(0), -1)), dim=1)

    model = _randomize_bn(torch, Net())
    x = np.random.default_rng(1).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    path = tmp_path / 'dyn.onnx'
    _export_torch(torch, model, x, path, opset_version=13, dynamic_axes={'x': {0: 'n'}})
    assert mx.onnx.get_model_metadata(str(path))['input_tensor_data'][0][1] == (0, 3, 8, 8)
    net = mx.onnx.import_to_gluon(str(path), mx.cpu())
    net.hybridize()
    for n in (1, 5):
        xb = np.random.default_rng(n).uniform(-1, 1, (n, 3, 8, 8)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(xb)).numpy()
        np.testing.assert_allclose(net(mx.nd.array(xb)).asnumpy(), want, rtol=1e-4, atol=1e-4)
    prefix = str(tmp_path / 'imported')
    net.export(prefix)
    back = mx.gluon.SymbolBlock.imports(prefix + '-symbol.json', ['x'],
                                        prefix + '-0000.params')
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(back(mx.nd.array(x)).asnumpy(), want, rtol=1e-4, atol=1e-4)


def _torch_layer_models(torch):
    nn, fn = torch.nn, torch.nn.functional

    class Vision(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.ct, self.pr = nn.ConvTranspose2d(8, 4, 4, 2, 1), nn.PReLU(4)
            self.inorm = nn.InstanceNorm2d(4, affine=True)

        def forward(self, x):
            y = fn.hardswish(self.bn(self.c(x)))
            y = fn.interpolate(y, scale_factor=2, mode='bilinear', align_corners=False)
            y = self.pr(self.inorm(fn.silu(self.ct(y))))
            y = fn.pad(y, (1, 2, 0, 1), mode='reflect')
            y = torch.cat([y, fn.max_pool2d(y, 3, 1, 1)], 1)
            y = fn.adaptive_avg_pool2d(y, 1).flatten(1)
            return (torch.clamp(fn.elu(y), -0.5, 0.5), y.argmax(1), fn.hardsigmoid(y),
                    fn.leaky_relu(y, 0.1))

    class Encoder(nn.Module):
        """Embedding, multi-head attention, LayerNorm and GELU: a transformer layer."""

        def __init__(self):
            super().__init__()
            self.emb, self.ln = nn.Embedding(50, 16), nn.LayerNorm(16)
            self.mha = nn.MultiheadAttention(16, 2, batch_first=True)
            self.ff = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

        def forward(self, ids):
            x = self.emb(ids)
            h = self.ln(x)
            x = x + self.mha(h, h, h, need_weights=False)[0]
            return x + self.ff(self.ln(x))

    class Heads(nn.Module):
        """Attention written out: view/transpose/batched matmul on run-time batch and length."""

        def __init__(self):
            super().__init__()
            self.q, self.ln = nn.Linear(16, 16), nn.LayerNorm(16)

        def forward(self, x):
            b, t, c = x.shape
            q = self.q(x).view(b, t, 2, 8).transpose(1, 2)
            att = ((q @ q.transpose(-2, -1)) / 8 ** 0.5).softmax(-1)
            y = (att @ q).transpose(1, 2).reshape(b, t, c)
            return self.ln(y).mean(dim=1)

    return Vision, Encoder, Heads


@pytest.mark.parametrize('which,opset', [('vision', 11), ('vision', 17), ('encoder', 14),
                                         ('encoder', 17), ('heads', 13), ('heads', 17)])
def test_torch_layers(tmp_path, which, opset):
    torch, _ = _torch_models()
    torch.manual_seed(0)
    vision, encoder, heads = _torch_layer_models(torch)
    rng = np.random.default_rng(2)
    if which == 'vision':
        model, x, dyn = vision(), rng.uniform(-1, 1, (2, 3, 6, 6)).astype(np.float32), None
    elif which == 'encoder':
        model, x, dyn = encoder(), rng.integers(0, 50, (2, 7)).astype(np.int64), None
    else:
        model, x = heads(), rng.uniform(-1, 1, (2, 5, 16)).astype(np.float32)
        dyn = {'x': {0: 'batch', 1: 'time'}}
    model = _randomize_bn(torch, model)
    path = tmp_path / 'm.onnx'
    _export_torch(torch, model, x, path, opset_version=opset, dynamic_axes=dyn)
    net = mx.onnx.import_to_gluon(str(path), mx.cpu())
    net.hybridize()
    feeds = [x] if dyn is None else [x, rng.uniform(-1, 1, (3, 4, 16)).astype(np.float32)]
    for xb in feeds:
        with torch.no_grad():
            want = model(torch.from_numpy(xb))
        want = want if isinstance(want, tuple) else (want,)
        got = net(mx.nd.array(xb, dtype=xb.dtype))
        got = got if isinstance(got, (list, tuple)) else [got]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.asnumpy().astype(np.float64),
                                       w.numpy().astype(np.float64), rtol=1e-4, atol=1e-4)


def test_torch_dynamo_exporter(tmp_path):
    """torch.onnx.export's default (torch.export-based) exporter writes opset 18+ graphs
    (Gelu, LayerNormalization, Gather on an embedding table)."""
    torch, _ = _torch_models()
    pytest.importorskip('onnxscript')
    torch.manual_seed(0)
    _, encoder, _ = _torch_layer_models(torch)
    path = tmp_path / 'm.onnx'
    import warnings
    for model, x in ((encoder(), np.random.default_rng(0).integers(0, 50, (2, 7))),):
        x = x.astype(np.int64)
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            torch.onnx.export(model, (torch.from_numpy(x),), str(path), dynamo=True,
                              input_names=['x'], verbose=False)
        assert max(o.version for o in onnx.load(str(path)).opset_import) >= 18
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        (got,) = _run_ours(onnx.load(str(path)), {'x': x}, hybridize=True)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('dynamic', [False, True])
def test_torch_recurrent(tmp_path, dynamic):
    """nn.LSTM (2 layers, batch first) and a bidirectional nn.GRU, as torch exports them."""
    torch, _ = _torch_models()
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 12, num_layers=2, batch_first=True)
            self.gru = torch.nn.GRU(12, 6, bidirectional=True)
            self.fc = torch.nn.Linear(12, 3)

        def forward(self, x):
            y, _ = self.lstm(x)
            y, h = self.gru(y.transpose(0, 1))
            return self.fc(y[-1]), h

    model = Net().eval()
    x = np.random.default_rng(0).uniform(-1, 1, (4, 5, 8)).astype(np.float32)
    path = tmp_path / 'rnn.onnx'
    dyn = {'x': {0: 'batch', 1: 'time'}} if dynamic else None
    _export_torch(torch, model, x, path, opset_version=14, dynamic_axes=dyn)
    net = mx.onnx.import_to_gluon(str(path), mx.cpu())
    net.hybridize()
    for shape in [(4, 5, 8)] + ([(2, 7, 8)] if dynamic else []):
        xb = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(xb))
        got = net(mx.nd.array(xb))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.asnumpy(), w.numpy(), rtol=1e-4, atol=1e-4)
