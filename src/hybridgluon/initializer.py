"""Weight initializers (MXNet's `mx.init` / `mx.initializer`).

An Initializer is called as `init(desc, arr)`: `desc` is an `InitDesc` (a str naming the array,
plus the attributes of its variable) and `arr` an NDArray filled in place. A per-array
initializer recorded in `desc.attrs['__init__']` wins; otherwise the name's suffix decides
(`weight` -> `_init_weight`, `bias`/`beta`/`*min`/`running_mean` -> 0, `gamma`/`*max`/
`running_var` -> 1), and any other name is an error. Initializers are registered by lower-case
class name (plus aliases) so that `create('xavier')`, `create(Xavier())` and
`create('["xavier", {"magnitude": 2}]')` all work, as do the strings Gluon layers pass
(`bias_initializer='zeros'`).

All random draws go through `nd.random` (seeded by `mx.random.seed`); NumPy only converts
user-supplied constants.
"""
import json
import logging
import math
import re
import warnings

import numpy as _np

from . import _core
from . import ndarray as _nd
from .base import _FLAG_TO_NAME
from .ndarray import NDArray

__all__ = ['InitDesc', 'Initializer', 'register', 'alias', 'create', 'Load', 'Mixed', 'Zero',
           'One', 'Constant', 'Uniform', 'Normal', 'Orthogonal', 'Xavier', 'MSRAPrelu',
           'Bilinear', 'LSTMBias']


class InitDesc(str):
    """Names the array to initialize (it *is* that name, as a str).

    Parameters
    ----------
    name : str
        Name of the variable.
    attrs : dict of str to str
        Attributes of the variable; `'__init__'` holds a per-variable initializer.
    global_init : Initializer
        The initializer to fall back to (filled in by the first Initializer called).
    """

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


class Initializer:
    """Base class of initializers; subclasses implement `_init_weight(name, arr)`.

    The keyword arguments given to `__init__` are what `dumps()` serialises, so a subclass
    passes its own constructor arguments up.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Switches logging of each initialized array on or off.

        `print_func(arr) -> str` summarises an array; by default its root mean square.
        """
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str((_nd.norm(x) / math.sqrt(x.size)).asscalar())
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info('Initialized %s as %s: %s', desc, init, self._print_func(arr))

    def dumps(self):
        """The initializer as a JSON string: `'["xavier", {"rnd_type": "uniform", ...}]'`."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __eq__(self, other):  # MXNet: same class, same arguments (shared Parameters compare)
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None  # as in MXNet, where __eq__ without __hash__ makes instances unhashable

    def __call__(self, desc, arr):
        """Initializes `arr` (an NDArray, in place) for the variable described by `desc`."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get('__init__', '')
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """`init(str, arr)`: the pre-InitDesc calling convention, dispatched on the name."""
        warnings.warn('Calling initializer with init(str, NDArray) has been deprecated. '
                      'please use init(mx.init.InitDesc(...), NDArray) instead.',
                      DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError('name must be string')
        if not isinstance(arr, NDArray):
            raise TypeError('arr must be NDArray')
        if name.startswith('upsampling'):
            self._init_bilinear(name, arr)
            return
        for suffix, method in _LEGACY_SUFFIX_RULES:
            if name.endswith(suffix):
                getattr(self, method)(name, arr)
                return
        self._init_default(name, arr)

    def _init_zero(self, _, arr):
        _fill(arr, 0.0)

    def _init_one(self, _, arr):
        _fill(arr, 1.0)

    def _init_bias(self, _, arr):
        _fill(arr, 0.0)

    def _init_gamma(self, _, arr):
        _fill(arr, 1.0)

    def _init_beta(self, _, arr):
        _fill(arr, 0.0)

    def _init_bilinear(self, _, arr):
        _fill_bilinear(arr)

    def _init_weight(self, name, arr):
        """Initializes a weight; every concrete initializer overrides this."""
        raise NotImplementedError('Must override it')

    def _init_default(self, name, _):
        raise ValueError(
            'Unknown initialization pattern for %s. Default initialization is now limited to '
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0).Please use '
            'mx.sym.Variable(init=mx.init.*) to set initialization pattern' % name)


# Suffix -> method, tried in order (InitDesc path). `running_*` cover Gluon's BatchNorm names.
_SUFFIX_RULES = (('weight', '_init_weight'), ('bias', '_init_bias'), ('gamma', '_init_gamma'),
                 ('beta', '_init_beta'), ('running_mean', '_init_zero'),
                 ('running_var', '_init_one'), ('min', '_init_zero'), ('max', '_init_one'))
_LEGACY_SUFFIX_RULES = (('bias', '_init_bias'), ('gamma', '_init_gamma'),
                        ('beta', '_init_beta'), ('weight', '_init_weight'),
                        ('moving_mean', '_init_zero'), ('moving_var', '_init_one'),
                        ('moving_inv_var', '_init_zero'), ('moving_avg', '_init_zero'),
                        ('running_mean', '_init_zero'), ('running_var', '_init_one'),
                        ('min', '_init_zero'), ('max', '_init_one'))

# ---- registry ---------------------------------------------------------------------------------
_REGISTRY = {}


def _register_as(klass, name):
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError('Can only register subclass of Initializer')
    name = name.lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn('New initializer %s.%s registered with name %s is overriding existing '
                      'initializer %s.%s' % (klass.__module__, klass.__name__, name,
                                             _REGISTRY[name].__module__,
                                             _REGISTRY[name].__name__), UserWarning,
                      stacklevel=3)
    _REGISTRY[name] = klass
    return klass


def register(klass):
    """Registers an Initializer subclass under its lower-case class name (a class decorator).

    Afterwards `create('<name>')` and string arguments such as `initialize(init='<name>')`
    build it.
    """
    return _register_as(klass, klass.__name__)


def alias(*aliases):
    """A class decorator registering an Initializer subclass under extra names."""
    def reg(klass):
        for name in aliases:
            _register_as(klass, name)
        return klass
    return reg


def create(initializer, *args, **kwargs):
    """An Initializer from an instance (returned as is), a registered name, a `dumps()` JSON
    string (`'["normal", {"sigma": 0.5}]'`) or a dict `{'initializer': name, **kwargs}`."""
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise AssertionError('initializer is already an instance. '
                                 'Additional arguments are invalid')
        return initializer
    if isinstance(initializer, dict):
        kwargs = dict(initializer)
        return create(kwargs.pop('initializer'), **kwargs)
    if not isinstance(initializer, str):
        raise TypeError('initializer must be of string type, got %r' % (initializer,))
    if initializer.startswith('['):
        name, kw = json.loads(initializer)
        return create(name, **kw)
    if initializer.startswith('{'):
        return create(json.loads(initializer))
    name = initializer.lower()
    if name not in _REGISTRY:
        raise AssertionError('%s is not registered. Please register with initializer.register '
                             'first' % name)
    return _REGISTRY[name](*args, **kwargs)


# ---- helpers ----------------------------------------------------------------------------------
_FULL = _core.get_op('_full')


def _fill(arr, value):
    """`arr[:] = value` for a number, straight to the fill op: a model's biases and norm
    parameters are all filled this way when its first call initializes them."""
    if isinstance(arr, NDArray):
        _FULL(shape=arr.shape, value=value, dtype=_FLAG_TO_NAME[arr._dtype_flag], out=arr)
    else:
        arr[:] = value


def _fill_uniform(arr, low, high):
    _nd.random.uniform(low, high, shape=arr.shape, dtype=arr.dtype, out=arr)


def _fill_normal(arr, loc, scale):
    _nd.random.normal(loc, scale, shape=arr.shape, dtype=arr.dtype, out=arr)


def _fill_bilinear(arr):
    """The bilinear-upsampling kernel over the last two axes, computed as MXNet does."""
    shape = arr.shape
    size = 1
    for d in shape:
        size *= d
    f = math.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    i = _nd.arange(size, dtype='float64')
    x = i % shape[3]
    y = _nd.floor(i / shape[3]) % shape[2]
    w = (1 - _nd.abs(x / f - c)) * (1 - _nd.abs(y / f - c))
    arr[:] = w.reshape(shape).astype(arr.dtype)


def _orthonormal_rows(a):
    """Gram-Schmidt (applied twice, which keeps float rounding from eroding orthogonality) on
    the rows of a 2-D float64 NDArray with rows <= columns; returns the orthonormal rows."""
    rows, cols = a.shape
    q = _nd.zeros((rows, cols), dtype='float64')
    for i in range(rows):
        v = a[i].reshape((1, cols))
        if i:
            basis = q[:i]
            for _ in range(2):
                v = v - _nd.dot(_nd.dot(v, basis, transpose_b=True), basis)
        q[i] = (v / _nd.norm(v)).reshape((cols,))
    return q


# ---- initializers -------------------------------------------------------------------------
class Load:
    """Initializes arrays from a file or a dict of NDArrays (names may carry `arg:`/`aux:`);
    names not found go to `default_init`."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = _nd.load(param)
        if not isinstance(param, dict):
            raise TypeError('Load expects a dict of name -> NDArray or a file holding one')
        self.param = {}
        for name, arr in param.items():
            if name.startswith('arg:') or name.startswith('aux:'):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise AssertionError(
                    'Parameter %s cannot be initialized from loading. Shape mismatch, target %s '
                    'vs loaded %s' % (name, str(arr.shape), self.param[name].shape))
            arr[:] = self.param[name]
            if self.verbose:
                logging.info('Initialized %s by loading', name)
        else:
            if self.default_init is None:
                raise AssertionError('Cannot Initialize %s. Not found in loaded param and no '
                                     'default Initializer is provided.' % name)
            self.default_init(name, arr)
            if self.verbose:
                logging.info('Initialized %s by default', name)


class Mixed:
    """Picks the initializer of the first regular expression (`re.match`) matching the name."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError('patterns and initializers must have the same length')
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError('Parameter name %s did not match any pattern. Consider add a ".*" '
                         'pattern at the and with default Initializer.' % name)


@register
@alias('zeros')
class Zero(Initializer):
    """Initializes weights to zero."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _fill(arr, 0.0)


@register
@alias('ones')
class One(Initializer):
    """Initializes weights to one."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _fill(arr, 1.0)


@register
class Constant(Initializer):
    """Initializes weights to `value`: a scalar, or an array broadcastable to the weight."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def dumps(self):
        value = self.value
        if isinstance(value, NDArray):
            value = value.asnumpy()
        if isinstance(value, _np.ndarray):
            value = value.tolist()
        return json.dumps(['constant', {'value': value}])

    def _init_weight(self, _, arr):
        arr[:] = self.value


@register
class Uniform(Initializer):
    """Initializes weights with values drawn uniformly from [-scale, scale]."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill_uniform(arr, -self.scale, self.scale)


@register
class Normal(Initializer):
    """Initializes weights with values drawn from N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill_normal(arr, 0, self.sigma)


@register
class Orthogonal(Initializer):
    """Initializes a weight (viewed as `(shape[0], prod(shape[1:]))`) as `scale` times a matrix
    with orthonormal rows (or columns, whichever is fewer), from random `rand_type` draws.
    (Saxe et al., https://arxiv.org/abs/1312.6120)"""

    def __init__(self, scale=1.414, rand_type='uniform'):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = arr.size // nout if nout else 0
        shape = (min(nout, nin), max(nout, nin))
        if self.rand_type == 'uniform':
            tmp = _nd.random.uniform(-1.0, 1.0, shape=shape, dtype='float64')
        elif self.rand_type == 'normal':
            tmp = _nd.random.normal(0.0, 1.0, shape=shape, dtype='float64')
        else:
            raise ValueError('Unknown random type %r' % self.rand_type)
        res = _orthonormal_rows(tmp)
        if nout > nin:
            res = res.T
        arr[:] = (self.scale * res).reshape(arr.shape).astype(arr.dtype)


@register
class Xavier(Initializer):
    """"Xavier" initialization: uniform in [-c, c] (or gaussian with std c) where
    c = sqrt(magnitude / factor) and factor is the average of fan-in and fan-out (`'avg'`),
    the fan-in (`'in'`) or the fan-out (`'out'`); fans count the trailing kernel dims."""

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError('Xavier initializer cannot be applied to vector {0}. It requires at'
                             ' least 2D.'.format(name))
        hw_scale = 1.0
        for d in shape[2:]:
            hw_scale *= d
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == 'avg':
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == 'in':
            factor = fan_in
        elif self.factor_type == 'out':
            factor = fan_out
        else:
            raise ValueError('Incorrect factor type')
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == 'uniform':
            _fill_uniform(arr, -scale, scale)
        elif self.rnd_type == 'gaussian':
            _fill_normal(arr, 0, scale)
        else:
            raise ValueError('Unknown random type')


@register
class MSRAPrelu(Xavier):
    """He et al.'s initialization for (P)ReLU networks: gaussian Xavier with
    magnitude 2 / (1 + slope^2). (https://arxiv.org/abs/1502.01852)"""

    def __init__(self, factor_type='avg', slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super().__init__('gaussian', factor_type, magnitude)
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Bilinear(Initializer):
    """Initializes a 4-D weight as a bilinear upsampling kernel."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        _fill_bilinear(arr)


@register
class LSTMBias(Initializer):
    """Zero LSTM biases except the forget gate's (the second quarter), set to `forget_bias`."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        arr[:] = 0.0
        num_hidden = int(arr.shape[0] / 4)
        arr[num_hidden:2 * num_hidden] = self.forget_bias
