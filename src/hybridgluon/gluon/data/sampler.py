"""Samplers (MXNet's `gluon.data.sampler`): iterables of dataset indices, and BatchSampler,
which groups another sampler's indices into lists.

RandomSampler shuffles with NumPy's global generator, as MXNet does, so `np.random.seed`
makes the order reproducible. Shuffling indices is bookkeeping, not work on the data.

SplitSampler (not in MXNet; GluonCV has one without batch_size) gives each rank of a
data-parallel job its part of the indices; it shuffles with its own seeded generator, so all
ranks agree on the order without communicating.
"""
import numpy as _np

from ...base import MXNetTypeError, MXNetValueError

__all__ = ['Sampler', 'SequentialSampler', 'RandomSampler', 'FilterSampler', 'BatchSampler',
           'IntervalSampler', 'SplitSampler']

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


def _check_int(name, value, low, high=None):
    """`value` as an int in [low, high) (high None: no upper bound), else an MXNetError that
    names the argument and the value."""
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        raise MXNetTypeError('SplitSampler: %s must be an int, got %r' % (name, value))
    value = int(value)
    if value < low or (high is not None and value >= high):
        bound = '>= %d' % low if high is None else 'in [%d, %d)' % (low, high)
        raise MXNetValueError('SplitSampler: %s must be %s, got %d' % (name, bound, value))
    return value


class SplitSampler(Sampler):
    """The indices of part `part_index` of `num_parts` parts of range(length), for
    data-parallel training with one process per rank (pass the rank's number as
    `part_index` and the number of ranks as `num_parts`).

    Without batch_size (GluonCV's SplitSampler): the contiguous part
    range(part_index * n, (part_index + 1) * n) with n = length // num_parts, so every part
    has the same length and the last `length % num_parts` indices are left out. With
    shuffle=True the part is yielded in the order `start + P`, P a permutation of range(n).

    With batch_size=B, the global batch size (a multiple of num_parts): let `order` be
    range(length), or a permutation of it with shuffle=True, and b = B // num_parts. For
    each full global batch k the sampler yields its sub-batch part_index,
    order[k*B + part_index*b : k*B + (part_index + 1)*b]. So DataLoader(dataset,
    batch_size=b, sampler=SplitSampler(...)) on rank r yields the r-th slice of each batch
    that DataLoader(dataset, batch_size=B) over `order` yields in one process, and the
    ranks' batches concatenated in rank order are those batches. The final global batch of
    R = length % B < B indices: last_batch='keep' splits it as
    np.array_split(order[length - R:], num_parts)[part_index], i.e. the first
    R % num_parts ranks get R // num_parts + 1 indices and the others R // num_parts (at most
    b each, so it is that DataLoader's last, short batch; a rank that gets none has one batch
    fewer than the others, which a distributed job cannot have: every rank must take the same
    steps, so use 'discard' when length % B may be below num_parts); last_batch='discard'
    drops it, so all ranks have the same number of full batches.

    With shuffle=True the permutation is np.random.RandomState(seed + epoch).permutation,
    seed + epoch taken modulo 2**32, where epoch counts this sampler's passes (calls to
    iter), starting at 0, or is set with `set_epoch`. Ranks that build the sampler with the
    same arguments but part_index thus share the order of every epoch. NumPy's global
    generator is neither used nor changed.

    Parameters
    ----------
    length : int
        Number of samples in the dataset (>= 0).
    num_parts : int, default 1
        Number of parts (ranks), >= 1.
    part_index : int, default 0
        Which part this sampler yields, 0 <= part_index < num_parts.
    shuffle : bool, default False
        Whether to shuffle (a new order every epoch).
    batch_size : int or None, default None
        The global batch size: a positive multiple of num_parts; None splits range(length)
        into contiguous parts instead.
    seed : int, default 0
        The seed of the first epoch's permutation (>= 0); use the same on every rank.
    last_batch : {'keep', 'discard'}, default 'keep'
        With batch_size: what happens to a final incomplete global batch (see above).

    Bad arguments raise MXNetError (an MXNetTypeError for a non-int, else an
    MXNetValueError) naming the argument and its value.
    """

    def __init__(self, length, num_parts=1, part_index=0, shuffle=False, batch_size=None,
                 seed=0, last_batch='keep'):
        self._length = _check_int('length', length, 0)
        self._num_parts = _check_int('num_parts', num_parts, 1)
        self._part_index = _check_int('part_index', part_index, 0, self._num_parts)
        self._seed = _check_int('seed', seed, 0)
        if batch_size is not None:
            batch_size = _check_int('batch_size', batch_size, 1)
            if batch_size % self._num_parts:
                raise MXNetValueError(
                    'SplitSampler: batch_size %d must be a multiple of num_parts %d'
                    % (batch_size, self._num_parts))
        if last_batch not in ('keep', 'discard'):
            raise MXNetValueError("SplitSampler: last_batch must be 'keep' or 'discard', "
                                  'got %r' % (last_batch,))
        self._batch_size = batch_size
        self._shuffle = bool(shuffle)
        self._last_batch = last_batch
        self._epoch = 0

    def set_epoch(self, epoch):
        """Makes the next pass use `epoch` (>= 0) for its permutation; later passes count on
        from it."""
        self._epoch = _check_int('epoch', epoch, 0)

    def _permutation(self, n):
        state = _np.random.RandomState((self._seed + self._epoch) % 2**32)
        return state.permutation(n)

    def _indices(self):
        p, parts = self._part_index, self._num_parts
        if self._batch_size is None:
            n = self._length // parts
            part = _np.arange(p * n, (p + 1) * n)
            return (part[self._permutation(n)] if self._shuffle else part).tolist()
        order = (self._permutation(self._length) if self._shuffle
                 else _np.arange(self._length))
        big = self._batch_size
        b = big // parts
        full = self._length // big
        # Row k of the (full, parts, b) view is global batch k; column p is this part's slice.
        out = order[:full * big].reshape(full, parts, b)[:, p, :].reshape(-1)
        if self._last_batch == 'keep' and full * big < self._length:
            out = _np.concatenate([out, _np.array_split(order[full * big:], parts)[p]])
        return out.tolist()

    def __iter__(self):
        # Eager, so the epoch counts when iter() is called rather than at the first next().
        indices = self._indices()
        self._epoch += 1
        return iter(indices)

    def __len__(self):
        parts = self._num_parts
        if self._batch_size is None:
            return self._length // parts
        full, rest = divmod(self._length, self._batch_size)
        n = full * (self._batch_size // parts)
        if self._last_batch == 'keep':
            n += rest // parts + (1 if self._part_index < rest % parts else 0)
        return n
