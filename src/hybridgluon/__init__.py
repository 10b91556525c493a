"""hybridgluon: a deep-learning library with a C core and the Gluon API of Apache MXNet 1.x.

`import hybridgluon as mx` stands in for `import mxnet as mx`.
"""
from .libinfo import _load_core

_core = _load_core()
from .base import MXNetError, MXNetValueError, MXNetTypeError, MXNetIndexError
from . import base
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from . import context
from . import ndarray
from . import ndarray as nd
from . import random
from . import autograd
from . import name
from . import symbol
from . import symbol as sym
from . import executor, attribute  # noqa: F401
from .attribute import AttrScope  # noqa: F401
from . import initializer
from . import initializer as init
from . import metric
from . import lr_scheduler
from . import optimizer
from . import kvstore
from . import kvstore as kv
from . import gluon
from . import distributed  # noqa: F401
from . import rnn  # noqa: F401
from . import runtime
from . import operator
from . import engine  # noqa: F401
from . import profiler  # noqa: F401
from . import util
from . import contrib
from . import io
from . import image, image as img  # noqa: F401
from . import onnx  # noqa: F401 (the onnx package itself is imported on first use)
from . import recordio
from . import model, callback, monitor, monitor as mon  # noqa: F401
from . import module, module as mod  # noqa: F401
from .util import np_shape, is_np_shape, is_np_array, use_np_shape  # noqa: F401 (as in MXNet)
from .util import np_array, use_np_array, use_np  # noqa: F401
from . import numpy, numpy as np, numpy_extension, numpy_extension as npx  # noqa: F401
from . import test_utils
from . import visualization, visualization as viz  # noqa: F401
from .libinfo import get_include, get_lib_dir

__version__ = '0.1.0'

__all__ = ['MXNetError', 'MXNetValueError', 'MXNetTypeError', 'MXNetIndexError', 'Context',
           'cpu', 'gpu', 'cpu_pinned', 'current_context', 'num_gpus', 'nd', 'ndarray', 'random',
           'sym', 'symbol', 'gluon', 'init', 'initializer', 'name', 'autograd', 'metric',
           'optimizer', 'kv', 'kvstore', 'lr_scheduler', 'get_include', 'get_lib_dir']
