"""The pooled allocator's zeroed path (nd.zeros): recycled blocks are cleared, fresh mapped ones
are zero without being written, and the live/peak accounting is the same as for any array."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core, nd

from conftest import rss_kb

# Element counts (float32) around the 128 KiB class where fresh blocks start to come from mmap,
# around other class edges, and 0 and 1.
_SIZES = [0, 1, 7, 16, 17, 24, 25, 1000, 24575, 24576, 24577, 32767, 32768, 32769, 49152,
          49153, 65536, 65537, 1 << 20, (1 << 20) + 1]


def _sanitized():
    with open('/proc/self/maps') as f:
        maps = f.read()
    return 'libasan' in maps or 'libtsan' in maps


def _dirty(n, dtype='float32'):
    """Puts blocks of the classes that hold n elements back in the pool with non-zero bytes."""
    arrays = [nd.full((n,), 7, dtype=dtype) for _ in range(3)]
    del arrays


@pytest.mark.parametrize('n', _SIZES)
def test_zeros_after_the_pool_recycled_dirty_blocks(n):
    _dirty(n)
    for _ in range(3):
        z = nd.zeros((n,))
        assert z.shape == (n,) and z.dtype == np.float32
        assert not z.asnumpy().any()
        z[:] = 5           # dirty this block too; the next round must clear it again
        del z


def test_zeros_come_from_blocks_the_pool_holds():
    """The test above is only meaningful if the dirty blocks are really reused."""
    if _sanitized():
        pytest.skip('sanitizer builds have no pool (HG_NO_POOL)')
    _core.alloc_cached_bytes(True)
    _dirty(32769)
    cached = _core.alloc_cached_bytes()
    assert cached >= 32769 * 4
    z = nd.zeros((32769,))
    assert _core.alloc_cached_bytes() < cached
    assert not z.asnumpy().any()


@pytest.mark.parametrize('dtype', ['float16', 'float64', 'int8', 'uint8', 'int32', 'int64',
                                   'bool'])
@pytest.mark.parametrize('shape', [(0,), (3, 0, 2), (), (5, 7), (257, 129), (3, 40000)])
def test_zeros_dtypes_and_shapes(dtype, shape):
    n = int(np.prod(shape))
    _dirty(max(n, 1), dtype='uint8' if dtype == 'bool' else dtype)
    with mx.np_shape(shape == ()):  # zeros(()) needs it, as in MXNet
        z = nd.zeros(shape, dtype=dtype)
    want = np.zeros(shape if shape else (), dtype=dtype)
    assert z.shape == want.shape and z.dtype == want.dtype
    assert np.array_equal(z.asnumpy(), want)


def test_zeros_accepts_an_int_shape_and_numpy_dtypes():
    assert nd.zeros(4, dtype=np.int32).asnumpy().tolist() == [0, 0, 0, 0]
    assert nd.zeros((2, 2), ctx=mx.cpu(), dtype=np.float64).dtype == np.float64


def test_zeros_errors():
    with pytest.raises(mx.MXNetError, match='negative dimension') as e:
        nd.zeros((2, -1))
    assert isinstance(e.value, ValueError)
    with pytest.raises(mx.MXNetError, match='at most'):
        nd.zeros((1,) * 40)
    with pytest.raises(TypeError):
        nd.zeros((2,), dtype='complex64')


@pytest.mark.parametrize('n', [0, 5, 32768, 32769, 1 << 20])
def test_zeros_live_and_peak_accounting_match_empty(n):
    base = _core.alloc_stats(True)['live']
    e = nd.empty((n,))
    grown_empty = _core.alloc_stats()['live'] - base
    del e
    assert _core.alloc_stats()['live'] == base
    _core.alloc_stats(True)
    z = nd.zeros((n,))
    st = _core.alloc_stats()
    assert st['live'] - base == grown_empty
    assert st['peak'] - base == grown_empty
    assert grown_empty >= max(n, 1) * 4
    del z
    assert _core.alloc_stats()['live'] == base


def test_cache_release_gives_back_mapped_and_malloc_blocks():
    arrays = [nd.zeros((n,)) for n in (10, 1000, 40000, 1 << 20)]
    del arrays
    assert _core.alloc_cached_bytes() > 0 or _sanitized()
    assert _core.alloc_cached_bytes(True) == 0
    # Blocks made after the release (mapped afresh) are zero too.
    assert not nd.zeros((1 << 20,)).asnumpy().any()


def test_large_unpooled_zeros():
    """Over 256 MiB a block bypasses the pool (mapped and unmapped on each use)."""
    n = (256 << 20) // 4 + 16
    a = nd.full((n,), 3)
    del a
    z = nd.zeros((n,))
    assert z.size == n
    assert not z[::4096].asnumpy().any() and not z[n - 16:].asnumpy().any()


@pytest.mark.skipif(not os.path.exists('/proc/self/status'), reason='needs /proc')
def test_fresh_zeros_are_not_touched():
    """A fresh large zeros array is not written, so it adds no resident memory until used."""
    if _sanitized():
        pytest.skip('sanitizer builds clear every block (HG_NO_POOL)')
    _core.alloc_cached_bytes(True)
    before = rss_kb()
    z = [nd.zeros((4 << 20,)) for _ in range(4)]  # 64 MiB in four 16 MiB arrays
    after = rss_kb()
    assert after - before < 16 * 1024, (before, after)
    z[0][:] = 1
    assert rss_kb() - before >= 12 * 1024   # writing one array does make it resident
    assert not z[1].asnumpy().any()


def test_parameter_gradients_are_zero_after_dirty_reuse():
    from hybridgluon.gluon import nn
    shapes = [(64, 1000), (1000,), (256, 256)]
    for s in shapes:
        _dirty(int(np.prod(s)))
    with mx.name.NameManager():   # leave the global name counters to other tests
        net = nn.HybridSequential()
        net.add(nn.Dense(1000, in_units=64), nn.Dense(256, in_units=1000))
    net.initialize()
    for p in net.collect_params().values():
        assert not p.grad().asnumpy().any(), p.name
        assert p.data().asnumpy().any() or p.name.endswith('bias')


def _vm_kb(field):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


@pytest.mark.skipif(not os.path.exists('/proc/self/status'), reason='needs /proc')
def test_unpooled_blocks_of_odd_sizes_are_unmapped_whole():
    """Blocks over 256 MiB are mapped 2 MiB-aligned and trimmed; every byte of one is usable and
    giving it back unmaps all of it (address space does not grow)."""
    n = (256 << 20) // 4 + 12345
    for dtype in ('float32', 'int8'):
        a = nd.zeros((n,), dtype=dtype)
        a[n - 1] = 3
        assert a[n - 1].asscalar() == 3 and a[0].asscalar() == 0
        del a
    before = _vm_kb('VmSize')
    for _ in range(20):
        a = nd.zeros((n,))
        a[n - 1] = 1
        b = nd.empty((n + 7,))
        b[n + 6] = 1
        del a, b
    assert _vm_kb('VmSize') - before < 16 * 1024
    z = nd.zeros((n,))
    assert not z[n - 4096:].asnumpy().any() and not z[:4096].asnumpy().any()


def test_cache_keeps_a_working_set_above_512_mib():
    """Freed blocks stay cached up to the most memory that was live at once (at least 512 MiB,
    at most a quarter of physical memory): a loop that frees and asks again for 768 MiB of
    arrays gets them from the pool instead of mapping (and faulting in) fresh pages."""
    if _sanitized():
        pytest.skip('sanitizer builds have no pool (HG_NO_POOL)')
    phys = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    if phys // 4 < (1 << 30):
        pytest.skip('needs 4 GiB of memory')
    _core.alloc_cached_bytes(True)
    n = (64 << 20) // 4
    arrays = [nd.full((n,), 1) for _ in range(12)]   # 768 MiB live
    del arrays
    cached = _core.alloc_cached_bytes()
    assert cached >= 12 * n * 4, cached
    arrays = [nd.full((n,), 2) for _ in range(12)]   # all from the cache
    assert _core.alloc_cached_bytes() <= cached - 12 * n * 4
    assert all(float(a[n - 1].asscalar()) == 2 for a in arrays[:2])
    del arrays
    assert _core.alloc_cached_bytes(True) == 0
