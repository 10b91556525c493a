"""MNISTIter (MXNet's `mx.io.MNISTIter`): batches of the MNIST idx files (images and labels;
gzip-compressed files are read too).

As MXNet's C++ iterator does, it reads its part of the files once at construction (part k of
num_parts: images [n*k//P, n*(k+1)//P)), shuffles that part once with the seed (the same
order as MXNet: a Mersenne Twister seeded with `seed` driving libstdc++'s std::shuffle, see
_mxnet_shuffle), scales pixels by 1/256, and gives only whole batches (a last, short batch is
dropped). Batches are (batch_size, 1, rows, cols), or (batch_size, rows * cols) with flat=True;
labels are float32 of shape (batch_size,). getindex() is zeros, as MXNet's.
"""
import gzip
import struct
import sys

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, DataIter

__all__ = ['MNISTIter']

_IMAGE_MAGIC = 2051
_LABEL_MAGIC = 2049


def _read_bytes(path, what):
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as err:
        raise MXNetError('MNISTIter: cannot open %s file %s: %s' % (what, path, err.strerror)) \
            from None
    if raw[:2] == b'\x1f\x8b':
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise MXNetError('MNISTIter: %s file %s: bad gzip data (%s)' % (what, path, err)) \
                from None
    return raw


def _read_idx(path, magic, ndim, what):
    """(dimensions, the data bytes) of an idx file holding unsigned bytes, checked against
    its header before anything is allocated."""
    raw = _read_bytes(path, what)
    header = 4 * (1 + ndim)
    if len(raw) < header:
        raise MXNetError('MNISTIter: %s file %s is too short for an idx header (%d bytes)'
                         % (what, path, len(raw)))
    fields = struct.unpack('>%di' % (1 + ndim), raw[:header])
    if fields[0] != magic:
        raise MXNetError('MNISTIter: %s file %s: magic number %d, expected %d (an idx%d file '
                         'of unsigned bytes)' % (what, path, fields[0], magic, ndim))
    dims = fields[1:]
    if any(d < 0 for d in dims):
        raise MXNetError('MNISTIter: %s file %s: negative dimension in %s' % (what, path, dims))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header < size:
        raise MXNetError('MNISTIter: %s file %s holds %d bytes of data, its header %s needs %d'
                         % (what, path, len(raw) - header, list(dims), size))
    return dims, np.frombuffer(raw, dtype=np.uint8, count=size, offset=header)


class _MT19937:
    """The 32-bit Mersenne Twister's output stream for a seed (std::mt19937(seed)): NumPy's
    RandomState seeded with an int is that generator, and full-range 32-bit draws are its raw
    outputs."""

    def __init__(self, seed):
        self._rs = np.random.RandomState(seed & 0xFFFFFFFF)
        self._buf = []

    def __call__(self):
        if not self._buf:
            self._buf = self._rs.randint(0, 1 << 32, size=1024, dtype=np.uint64).tolist()[::-1]
        return self._buf.pop()


def _uniform_int(gen, high):
    """libstdc++'s uniform_int_distribution(0, high) over a 32-bit generator (the
    down-scaling with rejection of the versions MXNet 1.9.1's binaries were built with)."""
    if high == 0:
        return 0
    span = high + 1
    scaling = 0xFFFFFFFF // span
    past = span * scaling
    while True:
        r = gen()
        if r < past:
            return r // scaling


def _mxnet_shuffle(n, seed):
    """The permutation std::shuffle(0..n-1, std::mt19937(seed)) gives with libstdc++: for i from
    1, swap element i with a uniform one of 0..i."""
    gen = _MT19937(seed)
    order = list(range(n))
    for i in range(1, n):
        j = _uniform_int(gen, i)
        order[i], order[j] = order[j], order[i]
    return order


class MNISTIter(DataIter):
    """Batches of the MNIST images in `image` and labels in `label` (idx files, optionally
    gzip-compressed), as MXNet's MNISTIter (see the module's note).

    dtype: None or 'float32' (MXNet's iterator fails on any other); prefetch_buffer and ctx
    are accepted for compatibility and change nothing.
    """

    def __init__(self, image='./train-images-idx3-ubyte', label='./train-labels-idx1-ubyte',
                 batch_size=128, shuffle=True, flat=False, seed=0, silent=False, num_parts=1,
                 part_index=0, prefetch_buffer=4, ctx='gpu', dtype=None, data_name='data',
                 label_name='softmax_label', **kwargs):
        super().__init__(batch_size)
        if kwargs:
            raise MXNetError('MNISTIter: unknown arguments %s' % ', '.join(sorted(kwargs)))
        if dtype not in (None, 'float32', np.float32):
            raise MXNetError("MNISTIter: dtype %r is not supported: MNISTIter gives float32 "
                             "(dtype None or 'float32')" % (dtype,))
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise MXNetError('MNISTIter: batch_size must be a positive int, got %r'
                             % (batch_size,))
        if not 0 <= part_index < num_parts:
            raise MXNetError('MNISTIter: part_index must be in [0, num_parts), got part_index=%d'
                             ', num_parts=%d' % (part_index, num_parts))
        dims, pixels = _read_idx(image, _IMAGE_MAGIC, 3, 'image')
        (num_labels,), labels = _read_idx(label, _LABEL_MAGIC, 1, 'label')
        n, rows, cols = dims
        if num_labels != n:
            raise MXNetError('MNISTIter: %s holds %d images but %s holds %d labels'
                             % (image, n, label, num_labels))
        begin, end = n * part_index // num_parts, n * (part_index + 1) // num_parts
        count = end - begin
        if count < batch_size:
            raise MXNetError('MNISTIter: part %d of %d holds %d images, fewer than batch_size=%d'
                             ' (MXNet gives no batch at all)' % (part_index, num_parts, count,
                                                                 batch_size))
        order = np.arange(begin, end)
        if shuffle:
            order = order[_mxnet_shuffle(count, int(seed))]
        order = nd.array(order, dtype='int64')
        sample = (rows * cols,) if flat else (1, rows, cols)
        images = nd.array(pixels.reshape(n, rows * cols), dtype='uint8')
        # Exact in float32: 1/256 is a power of two, as MXNet scales.
        self._data = (nd.take(images, order, axis=0).astype('float32') * (1.0 / 256)
                      ).reshape((count,) + sample)
        self._label = nd.take(nd.array(labels, dtype='uint8'), order).astype('float32')
        if not silent:
            print('MNISTIter: load %d images, shuffle=%d, shape=[%s]'
                  % (count, int(bool(shuffle)), ','.join(str(d) for d in (batch_size,) + sample)),
                  file=sys.stderr)
        self._num_batches = count // batch_size
        self._index = np.zeros(batch_size, dtype=np.uint64)
        self.provide_data = [DataDesc(data_name, (batch_size,) + sample, np.float32)]
        self.provide_label = [DataDesc(label_name, (batch_size,), np.float32)]
        self._batch = -1

    def reset(self):
        self._batch = -1

    def iter_next(self):
        if self._batch + 1 >= self._num_batches:
            return False
        self._batch += 1
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=0,
                         index=self._index)

    def _rows(self, arr):
        if self._batch < 0:
            raise MXNetError('MNISTIter: no current batch; call iter_next() or next() first')
        start = self._batch * self.batch_size
        return arr[start:start + self.batch_size]

    def getdata(self):
        return self._rows(self._data)

    def getlabel(self):
        return self._rows(self._label)

    def getindex(self):
        return self._index

    def getpad(self):
        return 0
