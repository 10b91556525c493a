"""Datasets (MXNet's `gluon.data.dataset`): anything with `__getitem__` and `__len__`, plus
lazy transforms, filtering, sharding and the in-memory SimpleDataset / ArrayDataset."""
from ...base import MXNetError, MXNetValueError
from ...ndarray import NDArray

__all__ = ['Dataset', 'SimpleDataset', 'ArrayDataset']


class _DatasetError(MXNetError, AssertionError):
    """A malformed dataset (MXNet asserts here, so this is also an AssertionError)."""


class _ShardError(MXNetValueError, AssertionError):
    """A bad `shard` argument: MXNet asserts, so an AssertionError; also a ValueError."""


class Dataset:
    """Abstract dataset: subclasses implement `__getitem__(idx)` and `__len__()`."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """A dataset of the samples for which `fn(sample)` is true."""
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Part `index` of `num_shards` contiguous parts, as in MXNet: the first
        `len % num_shards` parts get one sample more (parts past the data are empty). Shard
        before shuffling so that each worker gets a distinct subset. A bad argument raises an
        MXNetError that is also an AssertionError (MXNet asserts) and a ValueError."""
        # MXNet's three asserts, in its order and with its messages.
        if not index < num_shards:
            raise _ShardError('Shard index of out bound: %d out of %d' % (index, num_shards))
        if not num_shards > 0:
            raise _ShardError('Number of shards must be greater than 0')
        if not index >= 0:
            raise _ShardError('Index must be non-negative')
        length = len(self)
        size = length // num_shards
        rest = length % num_shards
        start = size * index + min(index, rest)
        end = start + size + (1 if index < rest else 0)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """The first `count` samples (all of them when count is None or too large)."""
        if count is None or count > len(self):
            count = len(self)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """The samples at the indices `sampler` yields."""
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """A dataset whose samples are `fn(*sample)` (a tuple sample is unpacked). With
        lazy=False every sample is transformed now and kept in memory."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Like transform, but `fn` only sees the first element of each sample (the data;
        the label passes through)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """Wraps a list, an array or anything indexable with a length."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """A picklable `fn` on the first element (worker processes may need to pickle it)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Zips arrays of the same length: sample i is `(a[i], b[i], ...)` (just `a[i]` for one
    array). A 1-D NDArray is kept as a NumPy array, so its samples are NumPy scalars, as in
    MXNet."""

    def __init__(self, *args):
        if not args:
            raise _DatasetError('ArrayDataset needs at least 1 array')
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise _DatasetError(
                    'All arrays must have the same length; array[0] has length %d while '
                    'array[%d] has %d.' % (self._length, i, len(data)))
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


# --- RecordFileDataset (the recordio slice) ----------------------------------------------------
__all__ += ['RecordFileDataset']


class RecordFileDataset(Dataset):
    """The records of a RecordIO file as a dataset of bytes, in the order of its index file
    (the .idx next to `filename`, as im2rec and MXIndexedRecordIO write it).

    Parameters
    ----------
    filename : str
        Path of the .rec file.
    """

    def __init__(self, filename):
        import os

        from ... import recordio
        self.idx_file = os.path.splitext(filename)[0] + '.idx'
        self.filename = filename
        if not os.path.isfile(self.idx_file):
            raise MXNetError('RecordFileDataset: no index file %s next to %s (write one with '
                             'MXIndexedRecordIO or im2rec)' % (self.idx_file, filename))
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, 'r')

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
