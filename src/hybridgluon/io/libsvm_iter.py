"""LibSVMIter (MXNet's `mx.io.LibSVMIter`): batches of a LibSVM file with zero-based, ascending
column indices ("label idx:value idx:value ...", one example a line).

hybridgluon has no sparse storage, so batches are DENSE NDArrays of shape
(batch_size,) + data_shape where MXNet gives CSRNDArrays with the same values; labels are read
from the first column of `data_libsvm` (shape (batch_size,)), or from `label_libsvm` as dense
(batch_size,) + label_shape arrays. The file (its part, see _part_lines) is parsed once at
construction into compressed rows; each batch is made dense by one scatter_nd in the core, so
memory stays proportional to the file, not to rows x columns.

Batches follow MXNet's round_batch=True (the only mode MXNet supports here): the last, short
batch is completed with rows from the start and the next epoch starts after those rows.
"""
import os

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, DataIter
from .utils import _dmlc_strtof

__all__ = ['LibSVMIter']


def _files(path, what):
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        files = [os.path.join(path, n) for n in names
                 if os.path.isfile(os.path.join(path, n))]
    elif os.path.isfile(path):
        files = [path]
    else:
        raise MXNetError('LibSVMIter: cannot find %s file %s' % (what, path))
    return files


def _part_lines(path, num_parts, part_index, what):
    """[(file name, line number, text)] of the non-empty lines of part `part_index` of
    `num_parts` of the file(s) at `path`, split as MXNet's (dmlc's) line splitter does: all
    files' bytes are cut into ranges of ceil(total / num_parts) bytes; a part starts just after
    the first end of line at or after its range's first byte (at byte 0 for the first part), so
    a line belongs to the part whose range holds the newline before it. Parts may be uneven."""
    blobs = []
    for name in _files(path, what):
        with open(name, 'rb') as f:
            blobs.append((name, f.read()))
    total = sum(len(b) for _, b in blobs)
    step = (total + num_parts - 1) // num_parts
    lo, hi = min(step * part_index, total), min(step * (part_index + 1), total)
    out = []
    base = 0
    for name, blob in blobs:
        pos, lineno = 0, 0
        while pos < len(blob):
            nl = blob.find(b'\n', pos)
            end = len(blob) if nl < 0 else nl + 1
            lineno += 1
            first = base + pos
            owned = (lo == 0 < hi) if first == 0 else lo <= first - 1 < hi
            if owned:
                text = blob[pos:end].decode('utf-8', 'replace').strip()
                if text:
                    out.append((name, lineno, text))
            pos = end
        base += len(blob)
    return out


def _is_number(token):
    try:
        _dmlc_strtof([token], 'label')
    except ValueError:
        return False
    return True


def _parse(lines, width, what):
    """(labels float32 (rows,), indptr int64 (rows + 1,), columns int64, values float32) of
    LibSVM lines, every column checked to lie in [0, width)."""
    label_tokens = []
    counts = np.empty(len(lines), dtype=np.int64)
    pairs = []
    for row, (name, lineno, text) in enumerate(lines):
        tokens = text.split()
        label_tokens.append(tokens[0])
        counts[row] = len(tokens) - 1
        pairs.extend(tokens[1:])
    try:
        labels = _dmlc_strtof(label_tokens, 'label')
    except ValueError:
        row = next(r for r, t in enumerate(label_tokens) if not _is_number(t))
        raise MXNetError('LibSVMIter: %s line %d: bad label %r'
                         % (lines[row][0], lines[row][1], label_tokens[row])) from None
    indptr = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    try:
        flat = ' '.join(pairs).replace(':', ' ').split()
        if len(flat) != 2 * len(pairs):
            raise ValueError('an entry is not index:value')
        cols = np.array(flat[0::2], dtype=np.int64)
        vals = _dmlc_strtof(flat[1::2], 'value')
    except (ValueError, OverflowError) as err:
        raise MXNetError('LibSVMIter: %s: malformed index:value entry (%s)' % (what, err)) \
            from None
    bad = np.nonzero((cols < 0) | (cols >= width))[0]
    if bad.size:
        row = int(np.searchsorted(indptr, bad[0], side='right')) - 1
        name, lineno, _ = lines[row]
        raise MXNetError('LibSVMIter: %s line %d: column index %d is out of range [0, %d) '
                         '(indices are zero-based; the width is from the shape)'
                         % (name, lineno, int(cols[bad[0]]), width))
    return labels, indptr, cols, vals


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
        lines = _part_lines(data_libsvm, num_parts, part_index, 'data')
        labels, *self._data = _parse(lines, data_shape[0], data_libsvm)
        self._num = len(lines)
        if self._num == 0:
            raise MXNetError('LibSVMIter: part %d of %d of %s holds no examples'
                             % (part_index, num_parts, data_libsvm))
        if label_libsvm is None:
            self._label = nd.array(labels, dtype='float32')
            label_batch = (batch_size,)
        else:
            label_lines = _part_lines(label_libsvm, num_parts, part_index, 'label')
            if len(label_lines) != self._num:
                raise MXNetError('LibSVMIter: %s holds %d examples in this part, %s holds %d'
                                 % (data_libsvm, self._num, label_libsvm, len(label_lines)))
            self._label = _parse(label_lines, label_shape[0], label_libsvm)[1:]
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
