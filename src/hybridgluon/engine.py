"""MXNet's `mx.engine`: the bulk-execution size (set_bulk_size, the bulk(size) scope).

In MXNet the size caps how many operators its threaded engine bundles into one scheduled
block. hybridgluon has no engine queue: imperative operators run synchronously as they are
called, and hybridized graphs run as one planned CachedOp. The size is therefore a
scheduling hint with nothing to schedule; it is kept per thread as MXNet keeps it, so that
set_bulk_size returns the previous value (0 initially) and bulk() restores it on exit, and
changing it never changes a result.
"""
import threading

from .base import MXNetError

__all__ = ['set_bulk_size', 'bulk']

_STATE = threading.local()


def set_bulk_size(size):
    """Sets the bulk size limit of this thread; returns the previous one."""
    size = int(size)
    if size < 0:
        raise MXNetError('set_bulk_size: size must be >= 0, got %d' % size)
    prev = getattr(_STATE, 'size', 0)
    _STATE.size = size
    return prev


class _BulkScope:
    """A `with` scope that sets the bulk size and restores the previous one on exit."""

    def __init__(self, size):
        self._size = size
        self._old_size = None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, ptype, value, trace):
        set_bulk_size(self._old_size)


def bulk(size):
    """A scope in which up to `size` operators may be bundled (a hint; see the module doc)."""
    return _BulkScope(size)
