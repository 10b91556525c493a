"""Gradient rules of the spatial sampling ops against float64 central finite differences."""
import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

GRADS_COVERED = ['im2col', 'col2im', 'GridGenerator', 'BilinearSampler', 'SpatialTransformer',
                 'ROIPooling', 'Correlation']


@pytest.mark.parametrize('shape,kw', [
    ((2, 2, 5, 4), dict(kernel=(3, 2), stride=(2, 1), dilate=(1, 2), pad=(1, 1))),
    ((1, 2, 7), dict(kernel=(3,), stride=(2,), pad=(2,))),
    ((1, 1, 3, 4, 3), dict(kernel=(2, 2, 2), pad=(1, 0, 1)))])
def test_im2col_col2im_grad(shape, kw):
    rng = np.random.default_rng(0)
    check_grad('im2col', [rng.standard_normal(shape)], kw)
    col = mx.nd.im2col(mx.nd.array(np.zeros(shape), dtype='float64'), **kw)
    check_grad('col2im', [rng.standard_normal(col.shape)], dict(kw, output_size=shape[2:]))


@pytest.mark.parametrize('attrs,shape', [
    (dict(transform_type='affine', target_shape=(3, 4)), (2, 6)),
    (dict(transform_type='warp'), (2, 2, 3, 4))])
def test_grid_generator_grad(attrs, shape):
    check_grad('GridGenerator', [np.random.default_rng(1).standard_normal(shape)], attrs)


@pytest.mark.parametrize('dshape,gshape', [((2, 3, 4, 5), (2, 2, 3, 4)),
                                           ((1, 1, 3, 3), (1, 2, 2, 2))])
def test_bilinear_sampler_grad(dshape, gshape):
    rng = np.random.default_rng(2)
    check_grad('BilinearSampler', [rng.standard_normal(dshape), rng.uniform(-1.2, 1.2, gshape)],
               rtol=1e-4, atol=1e-6)


def test_spatial_transformer_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 4, 5))
    loc = np.array([0.8, 0.15, 0.05, -0.1, 0.9, 0.02]) + 0.1 * rng.standard_normal((2, 6))
    check_grad('SpatialTransformer', [x, loc],
               dict(target_shape=(3, 4), transform_type='affine', sampler_type='bilinear'),
               rtol=1e-4, atol=1e-6)


def test_roi_pooling_grad():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 2, 6, 7))
    rois = np.array([[0, 0, 0, 5, 5], [1, 1, 1, 6, 4], [0, 2, 2, 3, 3]], dtype=np.float64)
    check_grad('ROIPooling', [x, rois], dict(pooled_size=(2, 3), spatial_scale=1.0), wrt=[0])


@pytest.mark.parametrize('kw', [dict(kernel_size=3, max_displacement=1, pad_size=1),
                                dict(kernel_size=1, max_displacement=2, stride2=2, pad_size=2,
                                     is_multiply=False)])
def test_correlation_grad(kw):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 2, 5, 5)), rng.standard_normal((2, 2, 5, 5))
    check_grad('Correlation', [a, b], kw, rtol=1e-4, atol=1e-6)
