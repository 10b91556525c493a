"""Contrib optimizers (MXNet's `mx.optimizer.contrib`): GroupAdaGrad, AdaGrad with one
learning-rate scale per row, stepped by the C op `contrib.group_adagrad_update`."""
from ..ndarray import contrib as _contrib
from ..ndarray import zeros as _zeros
from .optimizer import Optimizer

register = Optimizer.register

__all__ = ['GroupAdaGrad']


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with a single history value per row of the weight::

        grad = clip(grad * rescale_grad, clip_gradient)
        history += mean(square(grad), axis=1, keepdims=True)
        weight -= lr * grad / sqrt(history + eps)

    Weight decay is not supported (wd must be 0), as in MXNet.

    Parameters
    ----------
    eps : float, optional
        Added to the history under the square root. Avoids division by 0.
    """
    def __init__(self, eps=1e-5, **kwargs):
        super(GroupAdaGrad, self).__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        assert len(weight.shape) == 2, 'GroupAdaGrad takes 2-D weights'
        return _zeros((weight.shape[0], 1), weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        lr, wd = self._begin_update(index, weight, grad)
        assert wd == 0, 'Weight decay is not supported for GroupAdaGrad'
        # MXNet's dense step clips whenever clip_gradient is set (a clip of 0 included)
        kwargs = self._op_kwargs(clip_set=True, epsilon=self.float_stable_eps)
        _contrib.group_adagrad_update(weight, grad, state, out=weight, lr=lr, **kwargs)
