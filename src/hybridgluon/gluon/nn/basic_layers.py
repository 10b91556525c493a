"""Basic layers (MXNet's `gluon.nn.basic_layers`): containers, Dense, Dropout, Embedding,
Flatten, Identity and the Lambda wrappers.

Parameter shapes that depend on the input (Dense without `in_units`) are completed on the first
forward pass by shape inference through the traced graph (the FullyConnected shape rule fills
the weight's unknown dimension).
"""
import warnings

from ... import ndarray as nd
from ... import symbol as sym
from ..block import Block, HybridBlock
from ..utils import _indent
from ._args import _int
from .activations import Activation

__all__ = ['Sequential', 'HybridSequential', 'Dense', 'Dropout', 'Embedding', 'Flatten',
           'Identity', 'Lambda', 'HybridLambda']


def _container_repr(block):
    modstr = '\n'.join(['  ({key}): {block}'.format(key=key, block=_indent(repr(child), 2))
                        for key, child in block._children.items()])
    return '{name}(\n{modstr}\n)'.format(name=block.__class__.__name__, modstr=modstr)


def _container_getitem(block, key):
    layers = list(block._children.values())[key]
    if not isinstance(layers, list):
        return layers
    net = type(block)(prefix=block._prefix)
    with net.name_scope():
        net.add(*layers)
    return net


def _run_stack(children, x, args):
    """Feeds x through the children; a tuple/list output's tail becomes the next extra args."""
    for child in children:
        x = child(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args = x[1:]
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x


class Sequential(Block):
    """Stacks Blocks sequentially: `net.add(nn.Dense(10), nn.Dense(20))`.

    Children are keyed '0', '1', ...; `net[i]` is a child, `net[a:b]` a new Sequential.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Adds blocks on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x, *args):
        return _run_stack(self._children.values(), x, args)

    def __repr__(self):
        return _container_repr(self)

    def __getitem__(self, key):
        return _container_getitem(self, key)

    def __len__(self):
        return len(self._children)

    def hybridize(self, active=True, **kwargs):
        """Hybridizes the HybridBlock children (warns if all are: use HybridSequential)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn("All children of this Sequential layer '%s' are HybridBlocks. Consider "
                          "using HybridSequential for the best performance." % self.prefix,
                          stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(HybridBlock):
    """Stacks HybridBlocks sequentially; like Sequential, but hybridizable as a whole."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def add(self, *blocks):
        """Adds blocks on top of the stack."""
        for block in blocks:
            self.register_child(block)

    def hybrid_forward(self, F, x, *args):
        return _run_stack(self._children.values(), x, args)

    def __repr__(self):
        return _container_repr(self)

    def __getitem__(self, key):
        return _container_getitem(self, key)

    def __len__(self):
        return len(self._children)


class Dense(HybridBlock):
    """A fully connected layer: `activation(dot(x, weight.T) + bias)`.

    Parameters
    ----------
    units : int
        Output size.
    activation : str, optional
        Activation applied to the output (see `Activation`); None is linear.
    use_bias : bool, default True
        Whether to add a bias vector.
    flatten : bool, default True
        True: inputs are flattened to `(batch, -1)`. False: the transformation applies on the
        last axis and the other axes are kept.
    dtype : str or numpy.dtype, default 'float32'
        Data type of the Parameters.
    weight_initializer, bias_initializer : str or Initializer
        Initializers of the weight (default: the global one) and of the bias (zeros).
    in_units : int, default 0
        Input size; 0 defers initialization until the first forward pass.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype='float32',
                 weight_initializer=None, bias_initializer='zeros', in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        units, in_units = _int(units), _int(in_units)
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get('weight', shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name='fwd')
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        layout = '{0} -> {1}'.format(shape[1] if shape[1] else None, shape[0])
        return '{name}({layout}, {act})'.format(name=self.__class__.__name__, layout=layout,
                                                act=self.act if self.act else 'linear')


class Dropout(HybridBlock):
    """Zeroes a fraction `rate` of the inputs during training (scaling the rest by
    1 / (1 - rate)); `axes` share one mask along those axes."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = type(axes)(map(_int, axes)) if isinstance(axes, (tuple, list)) else axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name='fwd', cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return '{name}(p = {rate}, axes={axes})'.format(name=self.__class__.__name__,
                                                        rate=self._rate, axes=self._axes)


class Embedding(HybridBlock):
    """Turns integer indices into dense vectors: rows of a (input_dim, output_dim) weight.

    Indices are clipped to [0, input_dim - 1] (MXNet's Embedding op does the same); the output
    has the input's shape plus a last axis of output_dim.

    Parameters
    ----------
    input_dim : int
        Vocabulary size: the largest index + 1.
    output_dim : int
        Size of each vector.
    dtype : str or numpy.dtype, default 'float32'
        Data type of the weight and of the output.
    weight_initializer : Initializer
        Initializer of the weight (default: the global one).
    sparse_grad : bool, default False
        MXNet's row-sparse weight gradient; the Parameter records grad_stype 'row_sparse', but
        the gradient is computed (and stored) dense here: the values are the same.
    """

    def __init__(self, input_dim, output_dim, dtype='float32', weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        grad_stype = 'row_sparse' if sparse_grad else 'default'
        input_dim, output_dim = _int(input_dim), _int(output_dim)
        self._kwargs = {'input_dim': input_dim, 'output_dim': output_dim, 'dtype': dtype,
                        'sparse_grad': sparse_grad}
        self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True, grad_stype=grad_stype)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name='fwd', **self._kwargs)

    def __repr__(self):
        return '{name}({input_dim} -> {output_dim}, {dtype})'.format(
            name=self.__class__.__name__, **self._kwargs)


class Flatten(HybridBlock):
    """Flattens the input to two dimensions: `(batch, -1)`."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class Identity(HybridBlock):
    """Returns its input unchanged (a placeholder layer, e.g. in HybridConcurrent)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x):
        return x


class Lambda(Block):
    """Wraps a function as a Block: `Lambda('tanh')` (an `nd` function name) or
    `Lambda(lambda x: nd.LeakyReLU(x, slope=0.1))`."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(nd, function):
                raise AssertionError('Function name %s is not found in ndarray.' % function)
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError('Unrecognized function in lambda: {} of type {}'
                             .format(function, type(function)))

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return '{name}({function})'.format(name=self.__class__.__name__,
                                           function=self._func_impl.__name__)


class HybridLambda(HybridBlock):
    """Wraps a function as a HybridBlock: `HybridLambda('tanh')` (an op name) or
    `HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.1))`."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not (hasattr(nd, function) and hasattr(sym, function)):
                raise AssertionError('Function name %s is not found in symbol/ndarray.'
                                     % function)
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError('Unrecognized function in lambda: {} of type {}'
                             .format(function, type(function)))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return '{name}({function})'.format(name=self.__class__.__name__,
                                           function=self._func_name)
