"""Data iterators (MXNet's `mx.io`): DataDesc, DataBatch, the DataIter protocol and the
Python iterators NDArrayIter, ResizeIter, PrefetchingIter, CSVIter, LibSVMIter, MNISTIter and
ImageRecordIter (+ the uint8/int8 variants)."""
from . import csv_iter, io, libsvm_iter, mnist_iter, utils  # noqa: F401
from .csv_iter import CSVIter
from .image_record import ImageRecordInt8Iter, ImageRecordIter, ImageRecordUInt8Iter
from .libsvm_iter import LibSVMIter
from .mnist_iter import MNISTIter
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = ['CSVIter', 'DataBatch', 'DataDesc', 'DataIter', 'ImageRecordInt8Iter',
           'ImageRecordIter', 'ImageRecordUInt8Iter', 'LibSVMIter', 'MNISTIter', 'NDArrayIter',
           'PrefetchingIter', 'ResizeIter']
