"""Gradient rules of the deformable convolutions (csrc/ops/deform_conv.c) against float64
central finite differences: data, offset, mask, weight and bias. Offsets are drawn so that no
sample sits on a grid line or a border, where the bilinear samples have kinks. Also
nd.image.normalize and BatchNorm_v1 (with moving statistics, and in training with batch
statistics: finite differences of the training-mode forward)."""
import numpy as np
import pytest

from gradcheck import check_grad

GRADS_COVERED = ['_contrib_DeformableConvolution', '_contrib_ModulatedDeformableConvolution',
                 '_image_normalize', 'BatchNorm_v1']

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


@pytest.mark.parametrize('fix_gamma', [True, False])
def test_batchnorm_v1_grad_global(fix_gamma):
    rng = np.random.RandomState(3)
    xs = [rng.randn(3, 2, 2, 2), rng.randn(2), rng.randn(2), rng.randn(2), rng.rand(2) + 0.5]
    check_grad('BatchNorm_v1', xs, attrs={'fix_gamma': fix_gamma}, wrt=[0, 1, 2])


@pytest.mark.parametrize('shape', [(4, 3), (2, 2, 2, 3)])
@pytest.mark.parametrize('fix_gamma', [True, False])
def test_batchnorm_v1_grad_training(shape, fix_gamma):
    import hybridgluon as mx
    rng = np.random.RandomState(len(shape))
    c = shape[1]
    x, g, b = rng.randn(*shape), rng.randn(c), rng.randn(c)
    head = rng.randn(*shape)

    def run(xv, gv, bv, grad=False):
        arrs = [mx.nd.array(a, dtype='float64') for a in (xv, gv, bv)]
        aux = [mx.nd.zeros((c,), dtype='float64'), mx.nd.ones((c,), dtype='float64')]
        for a in arrs:
            a.attach_grad()
        with mx.autograd.record(train_mode=True):
            y = mx.nd.BatchNorm_v1(*arrs, *aux, fix_gamma=fix_gamma)
        if not grad:
            return float((y.asnumpy() * head).sum())
        y.backward(mx.nd.array(head, dtype='float64'))
        return [a.grad.asnumpy() for a in arrs]

    got = run(x, g, b, grad=True)
    vals, eps = [x, g, b], 1e-6
    for i, v in enumerate(vals):
        num = np.zeros(v.shape)
        for j in range(v.size):
            plus = [a.copy() for a in vals]
            minus = [a.copy() for a in vals]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            num.reshape(-1)[j] = (run(*plus) - run(*minus)) / (2 * eps)
        np.testing.assert_allclose(got[i], num, rtol=1e-5, atol=1e-6,
                                   err_msg='BatchNorm_v1 gradient of input %d' % i)
