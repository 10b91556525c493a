"""Data iterators (MXNet's `mx.io`): DataDesc, DataBatch, the DataIter protocol and the
Python iterators NDArrayIter, ResizeIter, PrefetchingIter, CSVIter and ImageRecordIter (+ the
uint8/int8 variants)."""
from . import csv_iter, io, utils  # noqa: F401
from .csv_iter import CSVIter
from .image_record import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = ['CSVIter', 'DataBatch', 'DataDesc', 'DataIter', 'NDArrayIter', 'PrefetchingIter',
           'ResizeIter']
__all__ += ['ImageRecordInt8Iter', 'ImageRecordIter', 'ImageRecordUInt8Iter']
