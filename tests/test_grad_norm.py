"""Gradient rules of normalisation ops not covered elsewhere, against float64 central finite
differences (predict mode: the moving statistics normalise, as the numeric side sees them)."""
import numpy as np
import pytest

from gradcheck import check_grad

GRADS_COVERED = ['_contrib_SyncBatchNorm']


@pytest.mark.parametrize('shape,fix_gamma', [((2, 3, 4), False), ((3, 2), True),
                                             ((2, 2, 2, 3), False)])
def test_sync_batchnorm_grad(shape, fix_gamma):
    rng = np.random.default_rng(0)
    C = shape[1]
    xs = [rng.standard_normal(shape), rng.uniform(0.5, 1.5, C), rng.standard_normal(C),
          rng.standard_normal(C), rng.uniform(0.5, 2.0, C)]
    check_grad('_contrib_SyncBatchNorm', xs, {'key': 'g', 'fix_gamma': fix_gamma},
               wrt=[0, 1, 2] if not fix_gamma else [0, 2])
