"""Samplers (MXNet's `gluon.data.sampler`): iterables of dataset indices, and BatchSampler,
which groups another sampler's indices into lists.

RandomSampler shuffles with NumPy's global generator, as MXNet does, so `np.random.seed`
makes the order reproducible. Shuffling indices is bookkeeping, not work on the data.
"""
import numpy as _np

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'FilterSampler', 'BatchSampler',
           'IntervalSampler']

_LAST_BATCH = ('keep', 'discard', 'rollover')


class Sampler:
    """Base class for samplers: iterate to get indices; `len()` is how many."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices start, start + 1, ..., start + length - 1 in order."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """The indices 0 .. length - 1 in a new random order on every pass."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = _np.arange(self._length)
        _np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which `fn(sample)` is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class IntervalSampler(Sampler):
    """0, k, 2k, ..., then 1, k + 1, ... (with `rollover`; else only the first sweep)."""

    def __init__(self, length, interval, rollover=True):
        if interval >= length:
            raise ValueError('Interval %d must be smaller than length %d' % (interval, length))
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for i in range(self._interval if self._rollover else 1):
            for j in range(i, self._length, self._interval):
                yield j

    def __len__(self):
        return len(range(0, self._length, self._interval)) if not self._rollover \
            else self._length


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size`.

    last_batch: what happens to a final short batch: 'keep' yields it, 'discard' drops it,
    'rollover' keeps its indices and puts them at the front of the next pass.
    """

    def __init__(self, sampler, batch_size, last_batch='keep'):
        if last_batch not in _LAST_BATCH:
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', "
                             "but got %s" % last_batch)
        if not isinstance(batch_size, (int, _np.integer)) or batch_size <= 0:
            raise ValueError('batch_size must be a positive integer, got %r' % (batch_size,))
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == 'keep':
                yield batch
            elif self._last_batch == 'rollover':
                self._prev = batch

    def __len__(self):
        if self._last_batch == 'keep':
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == 'discard':
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size
