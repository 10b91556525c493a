"""MXNet's `mx.contrib.autograd`: the autograd API before `mx.autograd` (train_section,
mark_variables, compute_gradient, grad_and_loss ...), kept by MXNet 1.9.1 for old code.

Everything runs on hybridgluon's autograd (the same tape and gradient rules as mx.autograd); the
one difference of this API is that a training section both records and sets training mode.
"""
import functools

from .. import autograd as _autograd
from ..ndarray import NDArray, zeros_like

__all__ = ['set_is_training', 'TrainingStateScope', 'train_section', 'test_section',
           'mark_variables', 'backward', 'compute_gradient', 'grad_and_loss', 'grad']


def set_is_training(is_train):
    """Turns training mode and recording on or off together; returns the previous recording
    state (what MXNet returns)."""
    _autograd.set_training(is_train)
    return bool(_autograd.set_recording(is_train))


class TrainingStateScope:
    """`with` scope in which set_is_training(enter_state) holds; the previous state comes back
    on exit."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """Scope that records the computation for gradients, in training mode."""
    return TrainingStateScope(True)


def test_section():
    """Scope without recording, in inference mode (e.g. inside a train_section)."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs='write'):
    """Marks `variables` as the arrays whose gradients backward writes into `gradients`
    (grad_reqs: one of 'write', 'add', 'null', or one per variable)."""
    _autograd.mark_variables(list(variables), list(gradients), grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of the list `outputs` with respect to the marked variables. out_grads: one
    head gradient per output, None for ones."""
    if not isinstance(outputs, (list, tuple)):
        raise AssertionError('outputs must be a list or tuple of NDArrays')
    if out_grads is not None and len(out_grads) != len(outputs):
        raise AssertionError('outputs and out_grads must have the same length')
    _autograd.backward(list(outputs), None if out_grads is None else list(out_grads),
                       retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated in MXNet: backward(outputs)."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function that runs func(*args) recorded and returns (gradients of the arguments, func's
    output). argnum: the index (or list of indices) of the arguments to differentiate; all of
    them by default, each an NDArray."""
    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            indices = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in indices]
        for x in variables:
            if not isinstance(x, NDArray):
                raise AssertionError('type of autograd input should NDArray.')
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """A function that returns the gradients of func's arguments (see grad_and_loss)."""
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args):
        return grad_with_loss_func(*args)[0]
    return wrapped
