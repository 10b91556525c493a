"""Gradients of nd.image's flips and crop: the deterministic ops against float64 finite
differences; the random flips against the flip each call actually made (a random flip is a
linear map chosen per call, so its derivative is that map's transpose)."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, nd
from gradcheck import check_grad

GRADS_COVERED = ['_image_flip_left_right', '_image_flip_top_bottom', '_image_crop',
                 '_image_random_flip_left_right', '_image_random_flip_top_bottom']


@pytest.mark.parametrize('op', ['_image_flip_left_right', '_image_flip_top_bottom'])
@pytest.mark.parametrize('shape', [(3, 4, 3), (2, 5, 1)])
def test_flip_grad(op, shape):
    check_grad(op, [np.random.RandomState(1).randn(*shape)])


@pytest.mark.parametrize('shape,box', [((5, 4, 3), (1, 2, 2, 3)), ((2, 4, 6, 1), (0, 1, 6, 2))])
def test_crop_grad(shape, box):
    x = np.random.RandomState(2).randn(*shape)
    check_grad('_image_crop', [x], attrs=dict(zip(('x', 'y', 'width', 'height'), box)))


@pytest.mark.parametrize('op,axis', [('random_flip_left_right', 1),
                                     ('random_flip_top_bottom', 0)])
def test_random_flip_grad(op, axis):
    x = np.random.RandomState(3).randn(3, 4, 3)
    w = np.random.RandomState(4).randn(3, 4, 3)
    seen = set()
    for seed in range(12):
        mx.random.seed(seed)
        a = nd.array(x, dtype='float64')
        a.attach_grad()
        with autograd.record():
            y = getattr(nd.image, op)(a)
        y.backward(nd.array(w, dtype='float64'))
        flipped = np.array_equal(y.asnumpy(), np.flip(x, axis))
        seen.add(flipped)
        np.testing.assert_array_equal(a.grad.asnumpy(), np.flip(w, axis) if flipped else w)
    assert seen == {True, False}
