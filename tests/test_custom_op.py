"""Operators written in Python (mx.operator.CustomOp / CustomOpProp / register, the Custom op):
imperative forward and backward against NumPy, imperative == hybridized == bound Symbol,
keywords reaching the properties as strings, auxiliary states, need_top_grad=False (a loss),
one operator instance for forward and backward, errors naming the op_type, MXNet's JSON form
and reloading, the C predictor refusing it, calls from several threads, the older NumpyOp /
NDArrayOp, and autograd.Function traced into a graph while recording."""
import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon

CC = shutil.which('cc') or shutil.which('gcc')


# ---- operators used below ------------------------------------------------------------------------

class _Affine(mx.operator.CustomOp):
    """out0 = a * b * scale + shift, out1 = a - b; records what it saw."""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale, self.shift = scale, shift
        self.seen = []

    def forward(self, is_train, req, in_data, out_data, aux):
        self.seen.append(('forward', is_train, autograd.is_recording(), autograd.is_training(),
                          list(req)))
        a, b = in_data
        self.assign(out_data[0], req[0], a * b * self.scale + self.shift)
        self.assign(out_data[1], req[1], a - b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.seen.append(('backward', autograd.is_recording(), list(req)))
        a, b = in_data
        g0, g1 = out_grad
        self.assign(in_grad[0], req[0], g0 * b * self.scale + g1)
        self.assign(in_grad[1], req[1], g0 * a * self.scale - g1)


_MADE = []  # (kwargs the property received, operators it created)


@mx.operator.register('t_affine')
class _AffineProp(mx.operator.CustomOpProp):
    def __init__(self, scale='1', shift='0'):
        super().__init__(need_top_grad=True)
        self.kwargs = {'scale': scale, 'shift': shift}
        self.ops = []
        _MADE.append((self.kwargs, self.ops))

    def list_arguments(self):
        return ['a', 'b']

    def list_outputs(self):
        return ['out', 'diff']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        op = _Affine(float(self.kwargs['scale']), float(self.kwargs['shift']))
        self.ops.append((ctx, shapes, dtypes, op))
        return op


def _affine_np(a, b, scale, shift):
    return a * b * scale + shift, a - b


class _Counter(mx.operator.CustomOp):
    """out = 2 * x; the auxiliary state counts forward calls, and backward checks it."""

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert aux[0].asnumpy()[0] >= 1
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register('t_counter')
class _CounterProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ['count']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return _Counter()


class _SoftmaxLoss(mx.operator.CustomOp):
    """Softmax forward; backward is softmax - onehot(label), whatever the output gradient."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.assign(out_data[0], req[0], mx.nd.array(e / e.sum(axis=1, keepdims=True)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().astype(int)
        y = out_data[0].asnumpy()
        y[np.arange(label.shape[0]), label] -= 1.0
        self.assign(in_grad[0], req[0], mx.nd.array(y))
        self.assign(in_grad[1], req[1], 0)


@mx.operator.register('t_softmax_loss')
class _SoftmaxLossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _SoftmaxLoss()


class _Stash(mx.operator.CustomOp):
    """Keeps a value from forward for backward (needs one instance for both)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.mask = (in_data[0] > 0).asnumpy()
        self.assign(out_data[0], req[0], mx.nd.relu(in_data[0]))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * mx.nd.array(self.mask))


@mx.operator.register('t_stash')
class _StashProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Stash()


class _Ones(mx.operator.CustomOp):
    def __init__(self, shape):
        super().__init__()
        self.value = np.ones(shape, dtype=np.float32)

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.value)


@mx.operator.register('t_ones')
class _OnesProp(mx.operator.CustomOpProp):
    def __init__(self, rows, cols):
        super().__init__()
        self.shape = (int(rows), int(cols))

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return [], [self.shape], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Ones(self.shape)


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)


# ---- imperative ----------------------------------------------------------------------------------

@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('shape', [(3, 4), (2, 3, 2), (7,)])
def test_imperative_forward_backward_match_numpy(shape, dtype):
    a, b = _rand(*shape, seed=1).astype(dtype), _rand(*shape, seed=2).astype(dtype)
    x, y = mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype)
    x.attach_grad()
    y.attach_grad()
    g0, g1 = _rand(*shape, seed=3).astype(dtype), _rand(*shape, seed=4).astype(dtype)
    with autograd.record():
        out, diff = mx.nd.Custom(x, y, op_type='t_affine', scale=1.5, shift=-0.25)
    autograd.backward([out, diff], [mx.nd.array(g0, dtype=dtype), mx.nd.array(g1, dtype=dtype)])
    ref0, ref1 = _affine_np(a, b, 1.5, -0.25)
    assert out.dtype == dtype and out.shape == shape
    np.testing.assert_allclose(out.asnumpy(), ref0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(diff.asnumpy(), ref1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), g0 * b * 1.5 + g1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), g0 * a * 1.5 - g1, rtol=1e-5, atol=1e-6)


def test_keywords_reach_the_properties_as_strings_and_inputs_by_name():
    x, y = mx.nd.array(_rand(2, 3, seed=5)), mx.nd.array(_rand(2, 3, seed=6))
    out = mx.nd.Custom(a=x, b=y, op_type='t_affine', scale=3, shift=0.5)
    np.testing.assert_allclose(out[0].asnumpy(), _affine_np(x.asnumpy(), y.asnumpy(), 3, 0.5)[0],
                               rtol=1e-6)
    kwargs = [k for k, _ in _MADE if k == {'scale': '3', 'shift': '0.5'}]
    assert kwargs, 'the property got %r' % [k for k, _ in _MADE]


def test_forward_runs_outside_the_tape_with_the_training_flag():
    x, y = mx.nd.ones((2,)), mx.nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        mx.nd.Custom(x, y, op_type='t_affine', scale=7)
    with autograd.record(train_mode=False):
        mx.nd.Custom(x, y, op_type='t_affine', scale=7)
    ops = [op for k, made in _MADE if k['scale'] == '7' for *_, op in made]
    seen = [s for op in ops for s in op.seen]
    assert seen == [('forward', True, False, True, ['write', 'write']),
                    ('forward', False, False, False, ['write', 'write'])]


def test_base_class_defaults():
    prop = mx.operator.CustomOpProp()
    assert prop.list_arguments() == ['data'] and prop.list_outputs() == ['output']
    assert prop.list_auxiliary_states() == [] and prop.need_top_grad_
    assert prop.declare_backward_dependency([0], [1], [2]) == [0, 1, 2]
    assert mx.operator.CustomOpProp(need_top_grad=False).declare_backward_dependency(
        [0], [1], [2]) == [1, 2]
    # 'custom_op' is the base class itself (as MXNet registers it): shapes and dtypes pass
    # through from the first argument.
    y = mx.nd.Custom(mx.nd.ones((2, 5), dtype=np.float64), op_type='custom_op')
    assert y.shape == (2, 5) and y.dtype == np.float64


def test_one_operator_for_forward_and_backward():
    data = _rand(3, 4, seed=7)
    x = mx.nd.array(data)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x, op_type='t_stash')
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), np.maximum(data, 0))
    np.testing.assert_allclose(x.grad.asnumpy(), (data > 0).astype(np.float32))


def test_operator_without_inputs():
    with autograd.record():
        y = mx.nd.Custom(rows=2, cols=5, op_type='t_ones')
    np.testing.assert_array_equal(y.asnumpy(), np.ones((2, 5), np.float32))
    s = mx.sym.Custom(rows=3, cols=1, op_type='t_ones')
    np.testing.assert_array_equal(s.eval()[0].asnumpy(), np.ones((3, 1), np.float32))


def test_auxiliary_state_is_updated_imperatively():
    x, count = mx.nd.array([1.0, -2.0]), mx.nd.zeros((1,))
    x.attach_grad()
    for _ in range(3):
        with autograd.record():
            y = mx.nd.Custom(x, count, op_type='t_counter')
        y.backward()
    assert count.asnumpy()[0] == 3
    np.testing.assert_allclose(y.asnumpy(), [2.0, -4.0])
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])


def test_need_top_grad_false_is_a_loss():
    data, label = _rand(4, 5, seed=8), np.array([0, 3, 1, 4], np.float32)
    x, lab = mx.nd.array(data), mx.nd.array(label)
    x.attach_grad()
    with autograd.record():
        p = mx.nd.Custom(x, lab, op_type='t_softmax_loss')
    p.backward()
    e = np.exp(data - data.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(p.asnumpy(), soft, rtol=1e-5)
    ref = soft.copy()
    ref[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(x.grad.asnumpy(), ref, rtol=1e-5, atol=1e-6)


# ---- graphs: bound symbols and hybridized blocks -------------------------------------------------

class _Net(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4, in_units=3)

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        out, diff = F.Custom(h, F.tanh(h), op_type='t_affine', scale=2, shift=0.1)
        return out + F.Custom(diff, op_type='t_stash')


def _run(net, x):
    with autograd.record():
        y = net(x)
    y.backward()
    return y.asnumpy(), net.dense.weight.grad().asnumpy().copy()


@pytest.mark.parametrize('flags', [{}, {'static_alloc': True, 'static_shape': True}])
def test_hybridized_equals_imperative(flags):
    net = _Net()
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(_rand(5, 3, seed=9))
    y1, g1 = _run(net, x)
    net.hybridize(**flags)
    y2, g2 = _run(net, x)
    y3, g3 = _run(net, x)
    np.testing.assert_allclose(y2, y1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y3, y1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g3, g1, rtol=1e-5, atol=1e-6)
    with autograd.pause():
        np.testing.assert_allclose(net(x).asnumpy(), y1, rtol=1e-6, atol=1e-7)


def test_bound_symbol_auxiliary_state_and_gradients():
    data = mx.sym.var('data')
    y = mx.sym.Custom(data=data, op_type='t_counter', name='cnt')
    assert y.list_arguments() == ['data']
    assert y.list_auxiliary_states() == ['cnt_count']
    assert y.list_outputs() == ['cnt_output']
    x, grad, count = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.zeros((3,)), mx.nd.zeros((1,))
    ex = y.bind(mx.cpu(), {'data': x}, args_grad={'data': grad}, aux_states={'cnt_count': count})
    for i in range(2):
        ex.forward(is_train=True)
        ex.backward(mx.nd.array([1.0, -1.0, 0.5]))
        assert count.asnumpy()[0] == i + 1
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(grad.asnumpy(), [2.0, -2.0, 1.0])
    arg, out, aux = y.infer_shape(data=(3,))
    assert (arg, out, aux) == ([(3,)], [(3,)], [(1,)])


def test_infer_shape_fills_an_argument_from_the_data():
    class Prop(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ['data', 'weight']

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][1], 2)], [(in_shape[0][0], 2)], []

        def create_operator(self, ctx, shapes, dtypes):
            class Op(mx.operator.CustomOp):
                def forward(self, is_train, req, in_data, out_data, aux):
                    self.assign(out_data[0], req[0], mx.nd.dot(in_data[0], in_data[1]))
            return Op()
    mx.operator.register('t_matmul')(Prop)
    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_matmul', name='mm')
    arg, out, _ = y.infer_shape(x=(4, 3))
    assert arg == [(4, 3), (3, 2)] and out == [(4, 2)]


def test_threads_share_a_hybridized_block():
    net = _Net()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    xs = [mx.nd.array(_rand(2 + i, 3, seed=20 + i)) for i in range(4)]
    with autograd.pause():
        want = [net(x).asnumpy() for x in xs]
    got, errors = {}, []

    def work(i):
        try:
            got[i] = [net(xs[i]).asnumpy() for _ in range(15)]
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    for i in range(4):
        for y in got[i]:
            np.testing.assert_allclose(y, want[i], rtol=1e-6, atol=1e-7)


# ---- errors --------------------------------------------------------------------------------------

class _Raises(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError('forward went wrong')


@mx.operator.register('t_raises')
class _RaisesProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Raises()


class _BadBackward(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise KeyError('no gradient here')


@mx.operator.register('t_bad_backward')
class _BadBackwardProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _BadBackward()


@mx.operator.register('t_two_shapes')
class _TwoShapesProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []


@mx.operator.register('t_changes_input')
class _ChangesInputProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return [(9, 9)], [(9, 9)], []


@mx.operator.register('t_needs_kw')
class _NeedsKwProp(mx.operator.CustomOpProp):
    def __init__(self, k):
        super().__init__()
        self.k = int(k)


def test_unregistered_op_type_is_named():
    x = mx.nd.ones((2,))
    for make in (lambda: mx.nd.Custom(x, op_type='t_nowhere'),
                 lambda: mx.sym.Custom(mx.sym.var('x'), op_type='t_nowhere')):
        with pytest.raises(mx.MXNetError, match="Custom operator 't_nowhere' is not registered"):
            make()
    with pytest.raises(mx.MXNetError, match='op_type'):
        mx.nd.Custom(x)


def test_exception_in_forward_is_an_error_naming_the_op_type():
    x = mx.nd.ones((2, 2))
    msg = "Custom operator 't_raises': CustomOp.forward raised ValueError: forward went wrong"
    with pytest.raises(mx.MXNetError, match=msg):
        mx.nd.Custom(x, op_type='t_raises')
    y = mx.sym.Custom(mx.sym.var('x'), op_type='t_raises', name='boom')
    with pytest.raises(mx.MXNetError, match="node 'boom' \\(Custom\\): " + msg):
        y.eval(x=x)

    class Net(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.Custom(x * 2, op_type='t_raises')
    net = Net()
    net.hybridize()
    with pytest.raises(mx.MXNetError, match=msg):
        net(x)


def test_exception_in_backward_is_an_error_naming_the_op_type():
    x = mx.nd.ones((3,))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Custom(x, op_type='t_bad_backward')
    with pytest.raises(mx.MXNetError, match="'t_bad_backward': CustomOp.backward raised KeyError"):
        y.backward()
    ex = mx.sym.Custom(mx.sym.var('x'), op_type='t_bad_backward').bind(
        mx.cpu(), {'x': x}, args_grad={'x': mx.nd.zeros((3,))})
    ex.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match="CustomOp.backward raised KeyError"):
        ex.backward(mx.nd.ones((3,)))


def test_bad_shape_rules_are_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.MXNetError, match='expecting 1 entries in returned output shapes, got 2'):
        mx.nd.Custom(x, op_type='t_two_shapes')
    with pytest.raises(mx.MXNetError, match='expecting 1 entries in returned output shapes'):
        mx.sym.Custom(mx.sym.var('x'), op_type='t_two_shapes').eval(x=x)
    with pytest.raises(mx.MXNetError, match=r"shape \(9, 9\) for input 'data', which has shape"):
        mx.nd.Custom(x, op_type='t_changes_input')
    with pytest.raises(mx.MXNetError, match=r"shape \(9, 9\) for input 'data'"):
        mx.sym.Custom(mx.sym.var('x'), op_type='t_changes_input').eval(x=x)


@mx.operator.register('t_no_outputs')
class _NoOutputsProp(mx.operator.CustomOpProp):
    def list_outputs(self):
        return []


@mx.operator.register('t_bad_names')
class _BadNamesProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return 'data'


def test_bad_properties_are_errors():
    x = mx.nd.ones((2,))
    for make in (lambda: mx.nd.Custom(x, op_type='t_no_outputs'),
                 lambda: mx.sym.Custom(mx.sym.var('x'), op_type='t_no_outputs')):
        with pytest.raises(mx.MXNetError, match="'t_no_outputs': has 1 argument.*0 output"):
            make()
    with pytest.raises(mx.MXNetError, match="'t_bad_names': list_arguments must return a list"):
        mx.nd.Custom(x, op_type='t_bad_names')


def test_bad_calls_are_errors():
    x = mx.nd.ones((2,))
    with pytest.raises(mx.MXNetError, match="'t_affine': input 'b' is missing"):
        mx.nd.Custom(x, op_type='t_affine')
    with pytest.raises(mx.MXNetError, match="'t_affine': has no input named 'c'"):
        mx.nd.Custom(x, c=x, op_type='t_affine')
    with pytest.raises(mx.MXNetError, match="'t_affine': takes 2 input"):
        mx.nd.Custom(x, x, x, op_type='t_affine')
    with pytest.raises(mx.MXNetError, match=r"'t_needs_kw': CustomOpProp\(\) raised TypeError"):
        mx.nd.Custom(x, op_type='t_needs_kw')
    with pytest.raises(mx.MXNetError, match=r"CustomOpProp\(k='x'\) raised ValueError"):
        mx.sym.Custom(mx.sym.var('x'), op_type='t_needs_kw', k='x')


# ---- files ---------------------------------------------------------------------------------------

def test_json_form_and_reload():
    y = mx.sym.Custom(mx.sym.var('p'), mx.sym.var('q'), op_type='t_affine', scale=2.5,
                      shift=-1, name='aff')
    text = y.tojson()
    node = [n for n in json.loads(text)['nodes'] if n['op'] == 'Custom'][0]
    assert node['name'] == 'aff'
    assert node['attrs'] == {'op_type': 't_affine', 'scale': '2.5', 'shift': '-1'}
    back = mx.sym.load_json(text)
    assert back.tojson() == text
    assert back.list_outputs() == ['aff_out', 'aff_diff']
    a, b = _rand(3, 2, seed=11), _rand(3, 2, seed=12)
    outs = back.eval(p=mx.nd.array(a), q=mx.nd.array(b))
    for got, want in zip(outs, _affine_np(a, b, 2.5, -1)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(mx.MXNetError, match="Custom operator 't_gone' is not registered"):
        mx.sym.load_json(text.replace('"t_affine"', '"t_gone"'))


@mx.operator.register('t_names')
class _NamesProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ['a', 'b']

    def list_outputs(self):
        return ['out', 'diff']

    def list_auxiliary_states(self):
        return ['cnt']


def test_names_and_json_are_mxnets():
    """What MXNet 1.9.1 writes for this node (its tojson(), read back as a dict): the outputs
    named by list_outputs, missing inputs made variables carrying the node's attributes."""
    y = mx.sym.Custom(mx.sym.var('p'), op_type='t_names', name='aff')
    assert y.list_arguments() == ['p', 'aff_b']
    assert y.list_outputs() == ['aff_out', 'aff_diff']
    assert y.list_auxiliary_states() == ['aff_cnt']
    assert y.get_internals().list_outputs() == ['p', 'aff_b', 'aff_cnt', 'aff_out', 'aff_diff']
    mxnet_json = {
        'nodes': [
            {'op': 'null', 'name': 'p', 'inputs': []},
            {'op': 'null', 'name': 'aff_b', 'attrs': {'op_type': 't_names'}, 'inputs': []},
            {'op': 'null', 'name': 'aff_cnt', 'attrs': {'op_type': 't_names'}, 'inputs': []},
            {'op': 'Custom', 'name': 'aff', 'attrs': {'op_type': 't_names'},
             'inputs': [[0, 0, 0], [1, 0, 0], [2, 0, 1]]}],
        'arg_nodes': [0, 1, 2], 'node_row_ptr': [0, 1, 2, 3, 5],
        'heads': [[3, 0, 0], [3, 1, 0]], 'attrs': {'mxnet_version': ['int', 10901]}}
    assert json.loads(y.tojson()) == mxnet_json


def test_exported_block_reloads(tmp_path):
    net = _Net()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.array(_rand(4, 3, seed=13))
    want = net(x).asnumpy()
    prefix = str(tmp_path / 'net')
    net.export(prefix)
    nodes = json.load(open(prefix + '-symbol.json'))['nodes']
    assert {n['attrs']['op_type'] for n in nodes if n['op'] == 'Custom'} == {'t_affine', 't_stash'}
    sb = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'], prefix + '-0000.params')
    np.testing.assert_allclose(sb(x).asnumpy(), want, rtol=1e-6, atol=1e-7)


def _custom_model(tmp_path):
    y = mx.sym.Custom(mx.sym.var('data'), op_type='t_stash', name='stash')
    path = str(tmp_path / 'custom-symbol.json')
    y.save(path)
    return path


def _predictor_error(path):
    import ctypes
    lib = ctypes.CDLL(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'))
    lib.hg_last_error.restype = ctypes.c_char_p
    lib.hg_predictor_create_from_files.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    pred = ctypes.c_void_p()
    st = lib.hg_predictor_create_from_files(path.encode(), None, 1, 0, 0, None,
                                            ctypes.byref(pred))
    assert st != 0 and not pred.value
    return lib.hg_last_error().decode()


def test_predictor_refuses_custom_in_process(tmp_path):
    msg = _predictor_error(_custom_model(tmp_path))
    assert "node 'stash' is operator Custom (op_type 't_stash')" in msg, msg
    assert 'C predictor' in msg


def test_predictor_refuses_custom_in_a_loop_body(tmp_path):
    # The Custom node lives in the foreach's subgraph, not in the top-level graph.
    def body(x, states):
        return mx.sym.Custom(x, op_type='t_stash', name='stash_in_loop'), states
    out, _ = mx.sym.contrib.foreach(body, mx.sym.var('data'), [mx.sym.var('s')])
    path = str(tmp_path / 'loop-symbol.json')
    out.save(path)
    assert '"Custom"' in open(path).read()
    msg = _predictor_error(path)
    assert "node 'stash_in_loop' is operator Custom (op_type 't_stash')" in msg, msg


@pytest.mark.skipif(not CC, reason='needs a C compiler')
def test_predictor_without_python_names_the_op_type(tmp_path):
    path = _custom_model(tmp_path)
    src = tmp_path / 'load.c'
    src.write_text('#include <stdio.h>\n#include <hybridgluon/predict.h>\n'
                   'int main(int argc, char **argv) {\n'
                   '    hg_predictor *p = NULL;\n'
                   '    hg_status st = hg_predictor_create_from_files(argv[1], NULL, 1, 0, 0, '
                   'NULL, &p);\n'
                   '    printf("%d %s\\n", (int)st, st ? hg_last_error() : "");\n'
                   '    return p != NULL;\n}\n')
    flags = subprocess.run([sys.executable, '-m', 'hybridgluon.config', '--cflags', '--libs'],
                           capture_output=True, text=True, check=True).stdout.split()
    exe = str(tmp_path / 'load')
    res = subprocess.run([CC, '-std=c11', '-o', exe, str(src)] + flags + ['-lpthread', '-lm'],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    res = subprocess.run([exe, path], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "operator Custom (op_type 't_stash') is Python code" in res.stdout, res.stdout
    assert "node 'stash'" in res.stdout


# ---- MXNet's older Python operators --------------------------------------------------------------

def test_numpy_op_and_ndarray_op():
    class Square(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]

    class Half(mx.operator.NDArrayOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] / 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = out_grad[0] / 2

    with pytest.warns(UserWarning, match='deprecated'):
        sq, half = Square(), Half()
    y = half(sq.get_symbol(mx.sym.var('x'), name='sq'), name='half')
    data, dy = _rand(2, 3, seed=14), _rand(2, 3, seed=15)
    dx = mx.nd.zeros((2, 3))
    ex = y.bind(mx.cpu(), {'x': mx.nd.array(data)}, args_grad={'x': dx})
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), data ** 2 / 2, rtol=1e-6)
    ex.backward(mx.nd.array(dy))
    np.testing.assert_allclose(dx.asnumpy(), dy / 2 * 2 * data, rtol=1e-5, atol=1e-7)


# ---- autograd.Function ---------------------------------------------------------------------------

class _Twice(autograd.Function):
    def forward(self, x):
        return x * 2

    def backward(self, dy):
        return dy * 5


class _FunctionNet(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return _Twice()(x) + 1


def test_function_in_a_block_traced_while_recording_is_a_clear_error():
    net = _FunctionNet()
    x = mx.nd.ones((2, 3))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((2, 3), 5.0))
    net.hybridize()
    with pytest.raises(mx.MXNetError, match='autograd.Function _Twice was called on Symbols'):
        with autograd.record():
            net(x)
    net2 = _FunctionNet()
    net2.hybridize()
    np.testing.assert_allclose(net2(x).asnumpy(), np.full((2, 3), 3.0))
