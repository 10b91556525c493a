"""Data iterators (MXNet's `mx.io`): DataDesc, DataBatch, the DataIter protocol and the
Python iterators NDArrayIter, ResizeIter and PrefetchingIter."""
from . import io, utils  # noqa: F401
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = ['DataBatch', 'DataDesc', 'DataIter', 'NDArrayIter', 'PrefetchingIter', 'ResizeIter']
