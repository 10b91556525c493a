"""IntervalSampler: indices of [0, length) taken every `interval` items."""
from ...data import sampler

__all__ = ['IntervalSampler']


class IntervalSampler(sampler.Sampler):
    """Yields 0, interval, 2*interval, ... below `length`; with `rollover` (the default) then
    1, 1 + interval, ... and so on until every index was given once. `len()` is `length` (in
    MXNet too, even without rollover)."""

    def __init__(self, length, interval, rollover=True):
        if interval > length:
            raise AssertionError('Interval {} must be smaller than or equal to length {}'
                                 .format(interval, length))
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for i in range(self._interval if self._rollover else 1):
            yield from range(i, self._length, self._interval)

    def __len__(self):
        return self._length
