"""Gradient rules of the deformable convolutions (csrc/ops/deform_conv.c) against float64
central finite differences: data, offset, mask, weight and bias. Offsets are drawn so that no
sample sits on a grid line or a border, where the bilinear samples have kinks. Also
nd.image.normalize."""
import numpy as np
import pytest

from gradcheck import check_grad

GRADS_COVERED = ['_contrib_DeformableConvolution', '_contrib_ModulatedDeformableConvolution',
                 '_image_normalize']

# (N, C, H, W, F, groups, deformable groups, kernel, stride, pad, dilate)
CASES = [(1, 4, 4, 5, 4, 2, 2, (3, 3), (1, 1), (1, 1), (1, 1)),
         (2, 2, 5, 5, 2, 1, 1, (2, 3), (2, 1), (0, 1), (1, 2))]


def _inputs(case, modulated, seed):
    n, c, h, wd, f, g, dg, k, s, p, d = case
    rng = np.random.RandomState(seed)
    ho = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (wd + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    # integer part in [-2, 2], fraction in [0.1, 0.9]: away from grid lines
    off = rng.randint(-2, 3, (n, 2 * dg * k[0] * k[1], ho, wo)) + rng.uniform(
        0.1, 0.9, (n, 2 * dg * k[0] * k[1], ho, wo))
    xs = [rng.randn(n, c, h, wd), off]
    if modulated:
        xs.append(rng.rand(n, dg * k[0] * k[1], ho, wo))
    xs += [rng.randn(f, c // g, *k), rng.randn(f)]
    attrs = dict(kernel=k, stride=s, pad=p, dilate=d, num_filter=f, num_group=g,
                 num_deformable_group=dg)
    return xs, attrs


@pytest.mark.parametrize('modulated', [False, True])
@pytest.mark.parametrize('case', CASES)
def test_deformable_convolution_grad(modulated, case):
    xs, attrs = _inputs(case, modulated, seed=case[1])
    op = ('_contrib_ModulatedDeformableConvolution' if modulated
          else '_contrib_DeformableConvolution')
    check_grad(op, xs, attrs=attrs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('modulated', [False, True])
def test_deformable_convolution_grad_no_bias(modulated):
    xs, attrs = _inputs(CASES[0], modulated, seed=7)
    op = ('_contrib_ModulatedDeformableConvolution' if modulated
          else '_contrib_DeformableConvolution')
    check_grad(op, xs[:-1], attrs=dict(attrs, no_bias=True), wrt=[1, len(xs) - 2],
               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('shape,mean,std', [((3, 2, 4), (0.1, 0.2, 0.3), (0.5, 2.0, 4.0)),
                                            ((2, 1, 3, 3), 0.5, 0.25),
                                            ((2, 3, 2, 2), 1.0, (3.0, 0.5, 1.5))])
def test_image_normalize_grad(shape, mean, std):
    x = np.random.RandomState(len(shape)).randn(*shape)
    check_grad('_image_normalize', [x], attrs={'mean': mean, 'std': std})
