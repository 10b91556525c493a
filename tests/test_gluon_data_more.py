"""gluon.data.DataLoader: pin_memory's context, auto_reload / refresh / clean (when a pass's
prefetching starts), with workers and without."""
import threading
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import gluon


class _Counting(gluon.data.Dataset):
    """Records how many times each sample was read (threads share the counter)."""

    def __init__(self, n):
        self.n = n
        self.reads = 0
        self._lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        with self._lock:
            self.reads += 1
        return mx.nd.full((3,), idx)


def _expected(n, bs):
    return [np.repeat(np.arange(i, min(i + bs, n))[:, None], 3, 1) for i in range(0, n, bs)]


@pytest.mark.parametrize('num_workers', [0, 2])
def test_pin_memory_context_and_values(num_workers):
    x = np.random.RandomState(3).rand(10, 4).astype(np.float32)
    y = np.arange(10, dtype=np.int32)
    ds = gluon.data.ArrayDataset(x, y)
    plain = gluon.data.DataLoader(ds, 4, num_workers=num_workers)
    pinned = gluon.data.DataLoader(ds, 4, pin_memory=True, pin_device_id=1,
                                   num_workers=num_workers)
    for (a, la), (b, lb) in zip(plain, pinned):
        assert a.context == mx.cpu(0) and la.context == mx.cpu(0)
        assert b.context == mx.cpu_pinned(1) and lb.context == mx.cpu_pinned(1)
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
        np.testing.assert_array_equal(la.asnumpy(), lb.asnumpy())
    assert len(list(pinned)) == 3


def test_auto_reload_prefetches_the_next_pass():
    ds = _Counting(8)
    loader = gluon.data.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True,
                                   prefetch=1, auto_reload=True)
    # The first pass started at construction: its first batch loads without being asked.
    deadline = time.monotonic() + 10
    while ds.reads < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ds.reads == 2  # one batch of 2 (prefetch=1), before anything iterated
    first = iter(loader)
    got = [b.asnumpy() for b in first]
    for g, e in zip(got, _expected(8, 2)):
        np.testing.assert_array_equal(g, e)
    # The end of that pass started the next one.
    assert loader._iter is not None
    assert [b.shape for b in loader] == [(2, 3)] * 4


def test_without_auto_reload_nothing_loads_before_iteration():
    ds = _Counting(6)
    loader = gluon.data.DataLoader(ds, batch_size=3, num_workers=1, thread_pool=True,
                                   prefetch=2)
    assert loader.auto_reload is False and loader._iter is None and ds.reads == 0
    loader.refresh()
    assert loader._iter is not None
    loader.clean()
    assert loader._iter is None
    got = [b.asnumpy() for b in loader]
    assert len(got) == 2 and loader._iter is None
    for g, e in zip(got, _expected(6, 3)):
        np.testing.assert_array_equal(g, e)


def test_prefetched_pass_is_used_once():
    # Two iterators made before either is used: the first takes the prefetched pass, the
    # second gets a pass of its own; both see every batch in order.
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    loader = gluon.data.DataLoader(x, batch_size=2, auto_reload=True)
    it1, it2 = iter(loader), iter(loader)
    a = [b.asnumpy() for b in it2]
    b = [b.asnumpy() for b in it1]
    np.testing.assert_array_equal(np.concatenate(a), x)
    np.testing.assert_array_equal(np.concatenate(b), x)


def test_auto_reload_restarts_workers_after_an_error():
    class Failing(gluon.data.Dataset):
        def __init__(self):
            self.fail = True

        def __len__(self):
            return 4

        def __getitem__(self, idx):
            if self.fail and idx == 2:
                raise ValueError('bad sample 2')
            return mx.nd.full((1,), idx)

    ds = Failing()
    loader = gluon.data.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True)
    with pytest.raises(ValueError, match='bad sample 2'):
        list(loader)
    ds.fail = False
    assert [b.asnumpy().ravel().tolist() for b in loader] == [[0, 1], [2, 3]]
