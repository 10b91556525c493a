"""Activation layers (MXNet's `gluon.nn.activations`)."""
from ..block import HybridBlock

__all__ = ['Activation']


class Activation(HybridBlock):
    """Applies an activation function: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'.

    Its automatic prefix uses the activation's name (`relu0_`), as in MXNet.
    """

    def __init__(self, activation, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name='fwd')

    def __repr__(self):
        return '{name}({act})'.format(name=self.__class__.__name__, act=self._act_type)
