"""MXNet's Python data iterators (`mx.io`): DataDesc, DataBatch, the DataIter protocol and the
iterators written over it: NDArrayIter (batches of in-memory arrays), ResizeIter (a fixed
number of batches an epoch) and PrefetchingIter (batches read ahead on a thread).

An iterator hands out DataBatch objects whose arrays are fresh NDArrays (slices, takes or
concatenations made by ops), so a batch stays valid after the next one is read.
"""
import threading
from collections import namedtuple

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .utils import _getdata_by_idx, _has_instance, _init_data, _slice_along_batch_axis

__all__ = ['DataDesc', 'DataBatch', 'DataIter', 'ResizeIter', 'PrefetchingIter', 'NDArrayIter']

_LAST_BATCH_HANDLES = ('pad', 'discard', 'roll_over')


class DataDesc(namedtuple('DataDesc', ['name', 'shape'])):
    """The name and shape of one input (a (name, shape) tuple) with its dtype and layout as
    attributes. The layout's 'N' marks the batch axis a data-parallel module splits."""

    def __new__(cls, name, shape, dtype=np.float32, layout='NCHW'):
        desc = super(DataDesc, cls).__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return 'DataDesc[%s,%s,%s,%s]' % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The axis of 'N' in `layout` (0 when layout is None, -1 when it has no 'N')."""
        if layout is None:
            return 0
        return layout.find('N')

    @staticmethod
    def get_list(shapes, types):
        """DataDescs for [(name, shape)] and optionally [(name, dtype)]."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch(object):
    """One batch: lists of data and label arrays, the number of padded examples at its end,
    the example indices, a bucket key and, optionally, descriptions of its arrays."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise AssertionError('Data must be list of NDArrays')
        if label is not None and not isinstance(label, (list, tuple)):
            raise AssertionError('Label must be list of NDArrays')
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        label_shapes = [a.shape for a in self.label] if self.label else None
        return '%s: data shapes: %s label shapes: %s' % (
            type(self).__name__, [a.shape for a in self.data], label_shapes)


class DataIter(object):
    """The iterator protocol: `next()` returns a DataBatch or raises StopIteration; `reset()`
    starts the next epoch. A subclass defines iter_next and getdata/getlabel/getpad (and
    getindex), or overrides next."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Starts over from the beginning of the data."""

    def next(self):
        """The next DataBatch; StopIteration at the end of the data."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                         index=self.getindex())

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; whether there was one."""

    def getdata(self):
        """The data arrays of the current batch."""

    def getlabel(self):
        """The label arrays of the current batch."""

    def getindex(self):
        """The example indices of the current batch (None: not known)."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are padding."""


class _WrappingIter(DataIter):
    """An iterator over another iterator's batches: the accessors read the batch it holds."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_WrappingIter):
    """Gives `size` batches an epoch from `data_iter`, starting it over when it runs out;
    reset_internal: whether reset() also resets `data_iter`."""

    def __init__(self, data_iter, size, reset_internal=True):
        super(ResizeIter, self).__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, 'default_bucket_key'):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class _Prefetcher(object):
    """The reading thread of one iterator of a PrefetchingIter. It reads one batch ahead:
    `wanted` tells it to read, `ready` that `batch` holds the result (None at the end)."""

    def __init__(self, data_iter):
        self.iter = data_iter
        self.batch = None
        self.error = None
        self.ready = threading.Event()
        self.wanted = threading.Event()
        self.running = True
        self.wanted.set()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while True:
            self.wanted.wait()
            if not self.running:
                return
            self.wanted.clear()
            try:
                self.batch = self.iter.next()
            except StopIteration:
                self.batch = None
            except Exception as err:  # handed to the reading thread, raised there
                self.batch, self.error = None, err
            self.ready.set()

    def take(self):
        self.ready.wait()
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        return self.batch

    def request(self):
        self.ready.clear()
        self.wanted.set()

    def stop(self):
        self.running = False
        self.wanted.set()
        # The collector may run the iterator's __del__ on this very thread (its next() can
        # allocate); a thread cannot join itself, and it ends when the loop sees running.
        if threading.current_thread() is not self.thread:
            self.thread.join()


class PrefetchingIter(_WrappingIter):
    """Reads the next batch of each iterator in `iters` on its own thread while the caller
    works on the current one; the batches of the iterators are joined into one.
    rename_data / rename_label: one {old name: new name} dict per iterator."""

    def __init__(self, iters, rename_data=None, rename_label=None):
        super(PrefetchingIter, self).__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError('PrefetchingIter needs at least one iterator')
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._workers = [_Prefetcher(it) for it in iters]

    def close(self):
        """Stops the reading threads (also done when the iterator is collected)."""
        for worker in getattr(self, '_workers', ()):
            if worker.running:
                worker.stop()

    def __del__(self):
        self.close()

    @staticmethod
    def _renamed(descs_per_iter, renames):
        if renames is None:
            return sum(descs_per_iter, [])
        out = []
        for rename, descs in zip(renames, descs_per_iter):
            for d in descs:
                if isinstance(d, DataDesc):
                    out.append(DataDesc(rename[d.name], d.shape, d.dtype))
                else:
                    out.append(DataDesc(*d))
        return out

    @property
    def provide_data(self):
        return self._renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([it.provide_label for it in self.iters], self.rename_label)

    def reset(self):
        for worker in self._workers:  # let a read in flight finish before resetting under it
            worker.ready.wait()
        for it in self.iters:
            it.reset()
        for worker in self._workers:
            worker.request()

    def iter_next(self):
        batches = [worker.take() for worker in self._workers]
        if batches[0] is None:
            if any(b is not None for b in batches):
                raise AssertionError('Number of entry mismatches between iterators')
            return False
        for b in batches:
            if b is None or b.pad != batches[0].pad:
                raise AssertionError('Number of entry mismatches between iterators')
        self.current_batch = DataBatch(sum([b.data for b in batches], []),
                                       sum([b.label for b in batches], []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for worker in self._workers:
            worker.request()
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self.current_batch


class NDArrayIter(DataIter):
    """Batches of in-memory arrays. data / label: an NDArray, NumPy array or h5py.Dataset, a
    list of them or a dict name -> array (names sort the inputs); all share their length along
    the batch axis (the 'N' of `layout`).

    last_batch_handle decides what happens to the examples left over at the end of an epoch:
    'pad' fills the last batch from the start of the data (its `pad` counts the filler),
    'discard' drops them, 'roll_over' keeps them to open the next epoch's first batch.
    shuffle: a new random order (NumPy's generator) at every reset."""

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle='pad',
                 data_name='data', label_name='softmax_label', layout='NCHW'):
        super(NDArrayIter, self).__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError("last_batch_handle must be one of %s, got %r"
                             % (', '.join(_LAST_BATCH_HANDLES), last_batch_handle))
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError('batch_size must be a positive int, got %r' % (batch_size,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        from ..ndarray.sparse import CSRNDArray
        if (_has_instance(self.data, CSRNDArray) or _has_instance(self.label, CSRNDArray)) \
                and last_batch_handle != 'discard':
            raise NotImplementedError('`NDArrayIter` only supports ``CSRNDArray`` with '
                                      '`last_batch_handle` set to `discard`.')
        self.layout = layout
        axis = self._batch_axis()
        self.num_data = self.data[0][1].shape[axis]
        for name, arr in self.data + self.label:
            # A longer source is allowed (its extra examples are never read, as in MXNet).
            if arr.shape[axis] < self.num_data:
                raise ValueError('NDArrayIter: %s has %d examples along the batch axis, %s only '
                                 '%d' % (self.data[0][0], self.num_data, name, arr.shape[axis]))
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -batch_size
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [arr for _, arr in self.data] + [arr for _, arr in self.label]
        self.num_source = len(self.data_list)

    def _batch_axis(self):
        return max(self.layout.find('N'), 0)

    def _descs(self, sources):
        axis = self._batch_axis()
        return [DataDesc(name, tuple(arr.shape[:axis]) + (self.batch_size,)
                         + tuple(arr.shape[axis + 1:]), arr.dtype, layout=self.layout)
                for name, arr in sources]

    @property
    def provide_data(self):
        return self._descs(self.data)

    @property
    def provide_label(self):
        return self._descs(self.label)

    def hard_reset(self):
        """Starts over, dropping any examples kept for roll_over."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == 'roll_over' and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            # The examples left at the end (kept by next()) open the next epoch: its first
            # batch takes batch_size minus their count from the start, so the cursor moves
            # back below zero by that count.
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self._batch_axis()] != self.batch_size:
            # A short last batch ('roll_over', or 'discard'): kept for the next epoch.
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, sources, start=None, end=None):
        """Examples start:end (in the current order) of every source."""
        start = 0 if start is None else start
        if end is None:
            end = sources[0][1].shape[self._batch_axis()] if sources else 0
        out = []
        for _, arr in sources:
            if isinstance(arr, NDArray):
                out.append(_slice_along_batch_axis(arr, slice(start, end), self._batch_axis()))
            else:
                # h5py reads need increasing indices. The rows are then arranged as MXNet
                # arranges them: row j is the sorted row at the position that sorted row j
                # holds in the shuffled order (the inverse permutation, so a shuffled h5py
                # epoch gives MXNet's batches; data and label stay paired).
                rows = [int(i) for i in self.idx[start:end]]
                order = sorted(rows)
                arrange = [rows.index(i) for i in order]
                out.append(nd.array(arr[order][arrange]))
        return out

    def _concat(self, first, second):
        if not first or not second:
            return first if first else second
        axis = self._batch_axis()
        return [nd.concat(a, b, dim=axis) for a, b in zip(first, second)]

    def _batchify(self, sources):
        if self.cursor >= self.num_data:
            raise AssertionError('DataIter needs reset.')
        bs, n, cur = self.batch_size, self.num_data, self.cursor
        if self.last_batch_handle == 'roll_over' and -bs < cur < 0:
            cached = self._cache_data if self._cache_data is not None else self._cache_label
            if cached is None:
                raise AssertionError('next epoch should have cached data')
            head = self._getdata(sources, end=cur + bs)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cached, head)
        if self.last_batch_handle == 'pad' and cur + bs > n:
            pad = cur + bs - n
            tail = self._getdata(sources, start=cur)
            whole, rest = divmod(pad, n)
            filler = []
            if whole:
                filler = [nd.concat(*([a] * whole), dim=self._batch_axis()) if whole > 1 else a
                          for a in self._getdata(sources, end=n)]
            if rest:
                filler = self._concat(filler, self._getdata(sources, end=rest))
            return self._concat(tail, filler)
        return self._getdata(sources, cur, min(cur + bs, n))

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        bs, n, cur = self.batch_size, self.num_data, self.cursor
        if self.last_batch_handle == 'pad' and cur + bs > n:
            return cur + bs - n
        if self.last_batch_handle == 'roll_over' and -bs < cur < 0:
            return -cur
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self.data = _getdata_by_idx(self.data, self.idx)
        self.label = _getdata_by_idx(self.label, self.idx)
