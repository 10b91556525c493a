"""Gradient rules of the contrib ops (csrc/ops/contrib_*.c) against float64 central finite
differences. The straight-through estimators (round_ste, sign_ste) pass the incoming gradient
on by definition, which finite differences of rounding cannot show: their rule is checked
against that definition instead."""
import numpy as np
import pytest

from gradcheck import check_grad, symbolic_grad

GRADS_COVERED = ['_contrib_quadratic', '_contrib_gradientmultiplier', '_contrib_round_ste',
                 '_contrib_sign_ste']


def rand(shape, seed=0):
    return np.random.RandomState(seed).uniform(-2, 2, shape)


@pytest.mark.parametrize('shape', [(1,), (4,), (2, 3)])
def test_quadratic_grad(shape):
    check_grad('_contrib_quadratic', [rand(shape)], attrs={'a': 0.75, 'b': -1.5, 'c': 0.5})


@pytest.mark.parametrize('scalar', [1.0, -0.5, 3.0])
def test_gradientmultiplier_grad(scalar):
    """Not a derivative: the rule scales the incoming gradient by scalar (MXNet's definition),
    so the check is against scalar times the head gradient."""
    x = rand((2, 3))
    hg = rand((2, 3), seed=1)
    g, = symbolic_grad('_contrib_gradientmultiplier', [x], {'scalar': scalar}, [0], [hg])
    np.testing.assert_allclose(g, scalar * hg)


@pytest.mark.parametrize('op', ['_contrib_round_ste', '_contrib_sign_ste'])
def test_ste_grad_is_identity(op):
    x = rand((3, 4))
    hg = rand((3, 4), seed=2)
    g, = symbolic_grad(op, [x], {}, [0], [hg])
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, hg)


def test_quadratic_and_multiplier_compose():
    """Finite differences of quadratic, through the multiplier set to 1 (the identity)."""
    check_grad('_contrib_gradientmultiplier', [rand((3,))], attrs={'scalar': 1.0})
