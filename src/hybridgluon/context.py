"""Devices (MXNet's `mx.context`): `mx.cpu()`, `mx.gpu(i)`, `with ctx:` and the current one."""
import threading
import warnings

from . import _core
from .base import MXNetError

__all__ = ['Context', 'cpu', 'gpu', 'cpu_pinned', 'num_gpus', 'gpu_memory_info',
           'current_context']


class _ContextMeta(type):
    """Gives Context MXNet 1.x's deprecated class property `default_ctx` (the current
    context; still used by MXNet's own tests and older scripts)."""

    @property
    def default_ctx(cls):
        warnings.warn('Context.default_ctx has been deprecated. Please use '
                      'mx.context.current_context() instead.', DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, val):
        warnings.warn('Context.default_ctx has been deprecated. Please use `with ctx:` to set '
                      'the current context.', DeprecationWarning, stacklevel=2)
        Context._default.value = val


class Context(metaclass=_ContextMeta):
    """A device: `cpu(0)` or `gpu(i)`. Equal by device type and id; usable as `with ctx:`."""
    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _default = threading.local()

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            self.device_typeid, self.device_id = device_type.device_typeid, device_type.device_id
        else:
            if device_type not in self.devstr2type:
                raise MXNetError('unknown device type %r' % (device_type,))
            self.device_typeid = self.devstr2type[device_type]
            self.device_id = int(device_id)
        self._old = []

    @property
    def device_type(self):
        return self.devtype2str[self.device_typeid]

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid and
                self.device_id == other.device_id)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return '%s(%d)' % (self.device_type, self.device_id)

    __str__ = __repr__

    def __enter__(self):
        _check_available(self)
        self._old.append(current_context())
        Context._default.value = self
        return self

    def __exit__(self, *exc):
        Context._default.value = self._old.pop()

    def empty_cache(self):
        """Gives the memory a GPU's allocator keeps for reuse back to the driver (the arrays
        in use stay); for a CPU context, nothing."""
        if self.device_typeid == 2:
            _check_available(self)
            _core.gpu_memory(self.device_id, True)


def _check_available(ctx):
    if ctx.device_typeid == 2 and ctx.device_id >= num_gpus():
        if not _core.built_with_cuda():
            raise MXNetError('GPU %d is not available: this build of hybridgluon has no CUDA '
                             'support (build it with HG_CUDA=1, see docs/gpu.md). Use mx.cpu() '
                             'instead.' % ctx.device_id)
        raise MXNetError('GPU %d is not available: this process sees %d GPU(s). Use mx.cpu() '
                         'instead.' % (ctx.device_id, num_gpus()))


def cpu(device_id=0):
    """The CPU context."""
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    """Pinned CPU memory context (the same memory as cpu() without a GPU build)."""
    return Context('cpu_pinned', device_id)


def gpu(device_id=0):
    """A GPU context. Creating it is fine; using it without that GPU raises MXNetError."""
    return Context('gpu', device_id)


def num_gpus():
    """Number of GPUs this process can use: 0 in the CPU build, and in the CUDA build on a
    machine without a GPU or a driver."""
    return _core.num_gpus()


def gpu_memory_info(device_id=0):
    """(free, total) bytes of gpu(device_id)'s memory, as MXNet's; the allocator's cache
    counts as used."""
    _check_available(gpu(device_id))
    return _core.gpu_mem_info(device_id)


def current_context():
    """The default context: cpu(0) unless inside `with ctx:`."""
    return getattr(Context._default, 'value', None) or Context('cpu', 0)
