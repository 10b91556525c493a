"""Gradient rules of the tensor_extra and tensor_num families against float64 central finite
differences. Index inputs (gather_nd's and scatter_nd's indices, reshape_like's rhs) are left
out with wrt=."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

GRADS_COVERED = [
    'reshape_like', 'cumsum', 'moments', 'erfinv', 'gather_nd', 'scatter_nd',
    '_backward_gather_nd', '_scatter_add_like_nd', 'depth_to_space', 'space_to_depth',
    'amp_cast', 'amp_multicast', '_split_v2',
]
NO_GRAD_COVERED = [
    'shape_array', 'size_array', 'argmax_channel', '_scatter_set_nd',
    '_ravel_multi_index', '_unravel_index', 'fill_element_0index', '_onehot_encode',
    'khatri_rao', 'logical_not', 'all_finite', 'multi_all_finite', '_histogram', '_linspace',
]

RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape)


def test_reshape_like_grad():
    check_grad('reshape_like', [_x(2, 6), np.zeros((3, 4))], wrt=[0])
    check_grad('reshape_like', [_x(2, 12), np.zeros((6, 3, 4))], wrt=[0],
               attrs=dict(lhs_begin=1, rhs_begin=1))


@pytest.mark.parametrize('shape,axis', [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 2), None),
                                        ((2, 3, 2), -1)])
def test_cumsum_grad(shape, axis):
    check_grad('cumsum', [_x(*shape)], attrs=dict(axis=axis))


@pytest.mark.parametrize('shape,axes,keepdims', [((5,), (0,), False), ((3, 4), (1,), False),
                                                 ((3, 4), (0,), True), ((2, 3, 4), (0, 2), False),
                                                 ((2, 3, 4), (0, 1, 2), True)])
def test_moments_grad(shape, axes, keepdims):
    check_grad('moments', [_x(*shape)], attrs=dict(axes=axes, keepdims=keepdims))


def test_erfinv_grad():
    check_grad('erfinv', [RNG.uniform(-0.9, 0.9, size=(3, 4))], rtol=1e-4)


def test_gather_scatter_nd_grad():
    idx = np.array([[0, 2, 0, -1], [1, 1, 1, 0]], dtype=np.int64)  # (0, 1) repeats
    check_grad('gather_nd', [_x(3, 2, 3), idx], wrt=[0])
    check_grad('gather_nd', [_x(4, 3), idx[:1]], wrt=[0])
    uniq = np.array([[0, 2, 1], [1, 0, 1]], dtype=np.int64)
    check_grad('scatter_nd', [_x(3, 4), uniq], wrt=[0], attrs=dict(shape=(3, 2, 4)))
    check_grad('_backward_gather_nd', [_x(4), idx], wrt=[0], attrs=dict(shape=(3, 2)))
    check_grad('_scatter_add_like_nd', [_x(3, 2), _x(4), idx], wrt=[0, 1])


@pytest.mark.parametrize('op,shape', [('depth_to_space', (2, 8, 2, 3)),
                                      ('space_to_depth', (1, 2, 4, 6))])
def test_depth_space_grad(op, shape):
    check_grad(op, [_x(*shape)], attrs=dict(block_size=2))


def test_amp_grads():
    check_grad('amp_cast', [_x(3, 4)], attrs=dict(dtype='float64'))
    check_grad('amp_multicast', [_x(3, 4), _x(2)], attrs=dict(num_outputs=2))


@pytest.mark.parametrize('attrs', [dict(indices=(0, 2, 3), axis=1),
                                   dict(indices=(), sections=3, axis=0),
                                   dict(indices=(), sections=4, axis=1, squeeze_axis=True)])
def test_split_v2_grad(attrs):
    check_grad('_split_v2', [_x(3, 4, 2)], attrs=attrs)


def test_no_grad_flags():
    for name in NO_GRAD_COVERED:
        assert mx._core.op_info(name)['no_grad'], name


def test_batch_take_is_not_differentiable():
    """MXNet registers no gradient for batch_take: binding it for backward fails."""
    info = mx._core.op_info('batch_take')
    assert not info['no_grad'] and not info['has_grad']
    x = mx.nd.array(_x(3, 4))
    x.attach_grad()
    with pytest.raises(mx.MXNetError, match='batch_take'):
        with mx.autograd.record():
            y = mx.nd.batch_take(x, mx.nd.array([0, 1, 2], dtype='int32'))
        y.backward()
