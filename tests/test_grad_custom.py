"""The Custom op's gradient rule (one _backward_Custom node calling the Python backward) against
central finite differences of the imperative op, in float64: several arguments, several
outputs, an auxiliary state that gets no gradient."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

OPS_COVERED = ['Custom', '_backward_Custom']
GRADS_COVERED = ['Custom']


class _MulTanh(mx.operator.CustomOp):
    """out0 = a * tanh(b) * scale, out1 = a + b."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * mx.nd.tanh(b) * self.scale)
        self.assign(out_data[1], req[1], a + b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        g0, g1 = out_grad
        t = mx.nd.tanh(b)
        self.assign(in_grad[0], req[0], g0 * t * self.scale + g1)
        self.assign(in_grad[1], req[1], g0 * a * (1 - t * t) * self.scale + g1)


@mx.operator.register('gc_multanh')
class _MulTanhProp(mx.operator.CustomOpProp):
    def __init__(self, scale='1'):
        super().__init__(need_top_grad=True)
        self.scale = float(scale)

    def list_arguments(self):
        return ['a', 'b']

    def list_outputs(self):
        return ['prod', 'sum']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _MulTanh(self.scale)


class _CubeCount(mx.operator.CustomOp):
    """out = x ** 3; the auxiliary state counts forward calls."""

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1
        self.assign(out_data[0], req[0], in_data[0] ** 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 3 * in_data[0] ** 2 * out_grad[0])


@mx.operator.register('gc_cube')
class _CubeProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ['count']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def infer_type(self, in_type):
        return in_type, [in_type[0]], [in_type[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _CubeCount()


@pytest.mark.parametrize('shape', [(3, 4), (2, 1, 3), (5,)])
@pytest.mark.parametrize('scale', [1.0, -2.5])
def test_two_arguments_two_outputs(shape, scale):
    rng = np.random.RandomState(3)
    check_grad('Custom', [rng.randn(*shape), rng.randn(*shape)],
               attrs={'op_type': 'gc_multanh', 'scale': scale})


def test_only_one_argument_wanted():
    rng = np.random.RandomState(4)
    check_grad('Custom', [rng.randn(2, 3), rng.randn(2, 3)], wrt=[1],
               attrs={'op_type': 'gc_multanh', 'scale': 0.5})


@pytest.mark.parametrize('shape', [(4,), (2, 3)])
def test_auxiliary_state_gets_no_gradient(shape):
    rng = np.random.RandomState(5)
    check_grad('Custom', [rng.randn(*shape), np.zeros((1,))], wrt=[0],
               attrs={'op_type': 'gc_cube'})
