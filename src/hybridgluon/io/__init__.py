"""Data iterators (MXNet's `mx.io`): DataDesc, DataBatch, the DataIter protocol and the
Python iterators NDArrayIter, ResizeIter, PrefetchingIter and CSVIter."""
from . import csv_iter, io, utils  # noqa: F401
from .csv_iter import CSVIter
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = ['CSVIter', 'DataBatch', 'DataDesc', 'DataIter', 'NDArrayIter', 'PrefetchingIter',
           'ResizeIter']
