"""LibSVMIter (MXNet's `mx.io.LibSVMIter`): batches of a LibSVM file with zero-based, ascending
column indices ("label idx:value idx:value ...", one example a line).

hybridgluon has no sparse storage, so batches are DENSE NDArrays of shape
(batch_size,) + data_shape where MXNet gives CSRNDArrays with the same values; labels are read
from the first column of `data_libsvm` (shape (batch_size,)), or from `label_libsvm` as dense
(batch_size,) + label_shape arrays. The file (its part, see utils._text_chunks) is parsed once at
construction (in the core, csrc/formats/textparse.c, with MXNet's number conversion: values
equal MXNet's to the bit) into compressed rows; each batch is made dense by one scatter_nd in
the core, so memory stays proportional to the file, not to rows x columns.

Batches follow MXNet's round_batch=True (the only mode MXNet supports here): the last, short
batch is completed with rows from the start and the next epoch starts after those rows.
"""
import numpy as np

from .. import _core
from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, DataIter
from .utils import _text_chunks

__all__ = ['LibSVMIter']


def _read(path, width, num_parts, part_index, what):
    """(labels float32 NDArray, indptr, cols, vals as NumPy arrays) of part `part_index` of
    `num_parts` of the LibSVM file(s) at `path`, parsed in the core (textparse.c)."""
    labels, indptr, cols, vals = [], [np.zeros(1, np.int64)], [], []
    nnz = 0
    for name, first_line, text in _text_chunks(path, 'LibSVMIter', what, num_parts, part_index):
        lab, ptr, col, val = _core.text_parse_libsvm(text, first_line, repr(name), width)
        labels.append(lab)
        indptr.append(ptr.asnumpy()[1:] + nnz)
        nnz += col.shape[0]
        cols.append(col.asnumpy())
        vals.append(val.asnumpy())
    if not labels:
        return None, np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    label = labels[0] if len(labels) == 1 else nd.concat(*labels, dim=0)
    return label, np.concatenate(indptr), np.concatenate(cols), np.concatenate(vals)


class LibSVMIter(DataIter):
    """Batches of a LibSVM file (or directory of files), DENSE: data (batch_size,) + data_shape,
    where MXNet gives a CSRNDArray of the same values (see the module's note).

    data_libsvm / label_libsvm: file or directory; without label_libsvm the labels are the first
    column of data_libsvm, shape (batch_size,); with it, each label is the row of label_libsvm
    as a dense label_shape array (its first column is ignored). num_parts / part_index read one
    part of the bytes, as MXNet's (parts may be uneven). round_batch must be True, as in MXNet;
    dtype None or 'float32'; prefetch_buffer and ctx change nothing.
    """

    def __init__(self, data_libsvm, data_shape, batch_size, label_libsvm=None, label_shape=(1,),
                 num_parts=1, part_index=0, round_batch=True, prefetch_buffer=4, ctx='gpu',
                 dtype=None, data_name='data', label_name='softmax_label', **kwargs):
        super().__init__(batch_size)
        if kwargs:
            raise MXNetError('LibSVMIter: unknown arguments %s' % ', '.join(sorted(kwargs)))
        if not round_batch:
            raise MXNetError("LibSVMIter: round_batch=False is not supported (MXNet's sparse "
                             "batch loader does not support it either)")
        if dtype not in (None, 'float32', np.float32):
            raise MXNetError("LibSVMIter: dtype %r is not supported (None or 'float32')"
                             % (dtype,))
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise MXNetError('LibSVMIter: batch_size must be a positive int, got %r'
                             % (batch_size,))
        if not 0 <= part_index < num_parts:
            raise MXNetError('LibSVMIter: part_index must be in [0, num_parts), got part_index=%d'
                             ', num_parts=%d' % (part_index, num_parts))
        data_shape, label_shape = tuple(data_shape), tuple(label_shape)
        if len(data_shape) != 1 or len(label_shape) != 1:
            raise MXNetError('LibSVMIter: data_shape and label_shape must be 1-D, got %s and %s'
                             % (data_shape, label_shape))
        labels, *self._data = _read(data_libsvm, data_shape[0], num_parts, part_index, 'data')
        self._num = len(self._data[0]) - 1
        if self._num == 0:
            raise MXNetError('LibSVMIter: part %d of %d of %s holds no examples'
                             % (part_index, num_parts, data_libsvm))
        if label_libsvm is None or label_libsvm == 'NULL':  # MXNet's spelling of "none"
            self._label = labels
            label_batch = (batch_size,)
        else:
            self._label = tuple(_read(label_libsvm, label_shape[0], num_parts, part_index,
                                      'label')[1:])
            if len(self._label[0]) - 1 != self._num:
                raise MXNetError('LibSVMIter: %s holds %d examples in this part, %s holds %d'
                                 % (data_libsvm, self._num, label_libsvm,
                                    len(self._label[0]) - 1))
            label_batch = (batch_size,) + label_shape
        self._shapes = (data_shape, label_shape)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, np.float32)]
        self.provide_label = [DataDesc(label_name, label_batch, np.float32)]
        self._pos = 0
        self._overflow = False
        self._current = None

    def reset(self):
        if self._overflow:  # the next epoch starts after the rows the last batch borrowed
            self._overflow = False
        else:
            self._pos = 0
        self._current = None

    @staticmethod
    def _dense(csr, rows, width):
        """The dense (len(rows), width) float32 NDArray of CSR rows `rows` (one scatter_nd)."""
        indptr, cols, vals = csr
        starts, stops = indptr[rows], indptr[rows + 1]
        lengths = stops - starts
        nnz = int(lengths.sum())
        if nnz == 0:
            return nd.zeros((len(rows), width), dtype='float32')
        take = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(nnz)
        where = np.stack([np.repeat(np.arange(len(rows)), lengths), cols[take]])
        return nd.scatter_nd(nd.array(vals[take], dtype='float32'),
                             nd.array(where, dtype='int64'), shape=(len(rows), width))

    def iter_next(self):
        bs = self.batch_size
        if self._overflow or self._pos >= self._num:
            return False
        stop = min(self._pos + bs, self._num)
        rows = np.arange(self._pos, stop)
        pad = bs - len(rows)
        if pad:
            # round_batch: rows from the start fill the batch (cycling a part shorter than it)
            rows = np.concatenate([rows, np.arange(pad) % self._num])
            self._pos, self._overflow = pad % self._num, True
        else:
            self._pos = stop
        data = self._dense(self._data, rows, self._shapes[0][0])
        if isinstance(self._label, tuple):
            label = self._dense(self._label, rows, self._shapes[1][0])
        else:
            label = nd.take(self._label, nd.array(rows, dtype='int64'))
        self._current = (data, label, rows.astype(np.uint64), pad)
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label, index, pad = self._current
        return DataBatch(data=[data], label=[label], pad=pad, index=index)

    def _get(self, i):
        if self._current is None:
            raise MXNetError('LibSVMIter: no current batch; call iter_next() or next() first')
        return self._current[i]

    def getdata(self):
        return self._get(0)

    def getlabel(self):
        return self._get(1)

    def getindex(self):
        return self._get(2)

    def getpad(self):
        return self._get(3)
