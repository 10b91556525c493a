"""The gradient of _identity_with_attr_like_rhs against finite differences: all of it goes to
lhs, rhs (which only lends its shape) gets zero."""
import numpy as np
import pytest

from gradcheck import check_grad

GRADS_COVERED = ['_identity_with_attr_like_rhs']


@pytest.mark.parametrize('shape', [(3, 4), (2, 1, 3), (1,)])
def test_grad(shape):
    rng = np.random.RandomState(1)
    check_grad('_identity_with_attr_like_rhs', [rng.randn(*shape), rng.randn(*shape)])
