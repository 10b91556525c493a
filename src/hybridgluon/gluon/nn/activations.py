"""Activation layers (MXNet's `gluon.nn.activations`): Activation, LeakyReLU, PReLU, ELU, SELU,
GELU, Swish and SiLU.

All but Swish/SiLU run on the LeakyReLU op's act_types (leaky, prelu, elu, selu, gelu), as in
MXNet 1.x; Swish is composed of registered ops (`x * sigmoid(beta * x)`), so its gradient comes
from theirs. Automatic prefixes are the lower-case class names (`leakyrelu0_`, `prelu0_`), and
PReLU's one Parameter is `prelu0_alpha`.
"""
from ... import initializer
from ..block import HybridBlock

__all__ = ['Activation', 'LeakyReLU', 'PReLU', 'ELU', 'SELU', 'GELU', 'Swish', 'SiLU']


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


class LeakyReLU(HybridBlock):
    """Leaky ReLU: `x` where x >= 0, `alpha * x` below; alpha must be >= 0."""

    def __init__(self, alpha, **kwargs):
        assert alpha >= 0, 'Slope coefficient for LeakyReLU must be no less than 0.'
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='leaky', slope=self._alpha, name='fwd')

    def __repr__(self):
        return '{name}({alpha})'.format(name=self.__class__.__name__, alpha=self._alpha)


class PReLU(HybridBlock):
    """Parametric ReLU: `x` where x >= 0, `alpha * x` below, with alpha learned.

    Parameters
    ----------
    alpha_initializer : Initializer, default Constant(0.25)
        Initializer of alpha.
    in_channels : int, default 1
        Number of slopes: 1 (shared) or the size of the input's axis 1 (one per channel).
    """

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get('alpha', shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type='prelu', name='fwd')


class ELU(HybridBlock):
    """Exponential linear unit: `x` where x > 0, `alpha * (exp(x) - 1)` below."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='elu', slope=self._alpha)


class SELU(HybridBlock):
    """Scaled ELU: `lambda * x` where x > 0, `lambda * alpha * (exp(x) - 1)` below, with
    Klambauer et al.'s constants (lambda ~ 1.0507, alpha ~ 1.6733)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='selu', name='fwd')


class GELU(HybridBlock):
    """Gaussian error linear unit: `x * Phi(x)` (Phi the standard normal CDF, with erf)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='gelu', name='fwd')


class Swish(HybridBlock):
    """Swish: `x * sigmoid(beta * x)`."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name='fwd')


class SiLU(HybridBlock):
    """Sigmoid linear unit: `x * sigmoid(x)` (Swish with beta = 1)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(x, name='fwd')
