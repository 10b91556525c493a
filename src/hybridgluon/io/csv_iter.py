"""CSVIter (MXNet's `mx.io.CSVIter`): batches of rows of a CSV file, each row reshaped to
`data_shape`, with labels from a second CSV file (zeros without one).

MXNet's iterator is written in C++ and streams the file; this one parses the file (or a
directory's files, in the order the file system lists them, as MXNet) once, at construction,
in the core with MXNet's number conversion, so values equal MXNet's to the bit (the numbers
become one NDArray; batches are slices of it), and otherwise behaves as MXNet's does:
- round_batch=True (default): the last, short batch is completed with rows from the start of
  the file, and the next epoch starts after those rows (`pad` counts them);
- round_batch=False: the short batch keeps the previous batch's rows in its unused places,
  `pad` counts them, and the next epoch starts at the first row.
getdata() / getlabel() return one NDArray each (not a list), as MXNet's C++ iterators do.
"""
import numpy as np

from .. import _core
from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, DataIter
from .utils import _text_chunks

__all__ = ['CSVIter']

_DTYPES = {'float32': np.float32, 'int32': np.int32, 'int64': np.int64}


def _read_rows(path, shape, dtype, what):
    """The rows of the CSV file (or a directory's files) at `path`, each checked to hold
    prod(shape) values, as an NDArray of shape (rows,) + shape. Parsed in the core
    (csrc/formats/textparse.c) with MXNet's number conversion."""
    width = int(np.prod(shape))
    flag = {np.float32: 0, np.int32: 4, np.int64: 6}[dtype]
    parts = [_core.text_parse_csv(text, first_line, repr(name), width, flag)
             for name, first_line, text in _text_chunks(path, 'CSVIter', what)]
    parts = [p for p in parts if p.shape[0]]
    if not parts:
        raise MXNetError('CSVIter: %s file %s holds no rows' % (what, path))
    rows = parts[0] if len(parts) == 1 else nd.concat(*parts, dim=0)
    return rows.reshape((rows.shape[0],) + tuple(shape))


class CSVIter(DataIter):
    """Batches of `batch_size` rows of `data_csv` (reshaped to data_shape) and `label_csv`
    (reshaped to label_shape; a label of shape (1,) gives a batch of shape (batch_size,)).
    data_csv / label_csv: a file or a directory; label_csv None (or 'NULL') gives zero labels.
    dtype: 'float32', 'int32' or 'int64' (integers wrap into int32 as MXNet's do)."""

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1,
                 round_batch=True, dtype='float32', data_name='data',
                 label_name='softmax_label', prefetch_buffer=4, ctx='cpu', **kwargs):
        super(CSVIter, self).__init__(batch_size)
        if kwargs:
            raise MXNetError('CSVIter: unknown arguments %s' % ', '.join(sorted(kwargs)))
        if dtype not in _DTYPES:
            raise MXNetError("CSVIter: dtype must be one of 'float32', 'int32', 'int64', got %r"
                             % (dtype,))
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise MXNetError('CSVIter: batch_size must be a positive int, got %r' % (batch_size,))
        np_dtype = _DTYPES[dtype]
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        self._data = _read_rows(data_csv, data_shape, np_dtype, 'data')
        self._num = self._data.shape[0]
        if label_csv is None or label_csv == 'NULL':  # MXNet's spelling of "no label file"
            self._label = nd.zeros((self._num,) + label_shape, dtype=np_dtype)
        else:
            self._label = _read_rows(label_csv, label_shape, np_dtype, 'label')
            if self._label.shape[0] < self._num:
                raise MXNetError('CSVIter: %s has %d rows, %s only %d'
                                 % (data_csv, self._num, label_csv, self._label.shape[0]))
        if label_shape == (1,):
            self._label = self._label.reshape((-1,))
        self._round_batch = bool(round_batch)
        self._label_batch_shape = (batch_size,) + tuple(self._label.shape[1:])
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, np_dtype)]
        self.provide_label = [DataDesc(label_name, self._label_batch_shape, np_dtype)]
        self._pos = 0
        self._overflow = 0
        self._current = None
        self._previous = None

    def reset(self):
        if self._round_batch and self._overflow:
            self._overflow = 0  # the next epoch starts after the rows the last batch borrowed
        else:
            self._pos = 0
        self._current = None

    def _rows(self, start, stop):
        return (self._data[start:stop], self._label[start:stop],
                np.arange(start, stop, dtype=np.uint64))

    @staticmethod
    def _join(parts):
        if len(parts) == 1:
            return parts[0]
        if isinstance(parts[0], np.ndarray):
            return np.concatenate(parts)
        return nd.concat(*parts, dim=0)

    def iter_next(self):
        bs = self.batch_size
        if self._overflow or self._pos >= self._num:
            return False
        stop = min(self._pos + bs, self._num)
        pieces = [self._rows(self._pos, stop)]
        top = stop - self._pos
        pad = 0
        if top == bs:
            self._pos = stop
        elif self._round_batch:
            pad = bs - top
            if pad > self._num:
                raise MXNetError('CSVIter: number of input must be bigger than batch size '
                                 '(%d rows, batch_size %d)' % (self._num, bs))
            pieces.append(self._rows(0, pad))
            self._pos = self._overflow = pad
        else:
            pad = bs - top
            if self._previous is not None:  # the places past the data keep the last batch's
                pieces.append(tuple(p[top:] for p in self._previous))
            else:
                pieces.append((nd.zeros((pad,) + tuple(self._data.shape[1:]),
                                        dtype=self._data.dtype),
                               nd.zeros((pad,) + tuple(self._label.shape[1:]),
                                        dtype=self._label.dtype),
                               np.zeros(pad, dtype=np.uint64)))
            self._pos = self._num
        self._current = tuple(self._join([p[i] for p in pieces]) for i in range(3)) + (pad,)
        self._previous = self._current[:3]
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label, index, pad = self._current
        return DataBatch(data=[data], label=[label], pad=pad, index=index)

    def getdata(self):
        return self._current[0]

    def getlabel(self):
        return self._current[1]

    def getindex(self):
        return self._current[2]

    def getpad(self):
        return self._current[3]
