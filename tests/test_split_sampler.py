"""gluon.data.SplitSampler (a rank's part of the indices for data-parallel training) and
Dataset.shard, against references computed here with NumPy and plain Python."""
import numpy as np
import pytest

from hybridgluon.base import MXNetError
from hybridgluon.gluon import data as gdata

LENGTHS = (0, 1, 2, 5, 7, 12, 13, 24, 31)
PARTS = (1, 2, 3, 4)


# ---- references -----------------------------------------------------------------------------
def _order(length, shuffle, seed=0, epoch=0):
    """The order one process would use: range(length) or the seeded permutation."""
    if shuffle:
        return np.random.RandomState(seed + epoch).permutation(length).tolist()
    return list(range(length))


def _global_batches(order, big, last_batch):
    """What one process's BatchSampler(batch_size=big) yields over `order`."""
    batches = [order[i:i + big] for i in range(0, len(order), big)]
    if batches and len(batches[-1]) < big and last_batch == 'discard':
        batches.pop()
    return batches


def _chunks(indices, size):
    return [indices[i:i + size] for i in range(0, len(indices), size)]


def _rank_chunk_sizes(rest, parts):
    """np.array_split's sizes, written out: the first rest % parts ranks get one more."""
    return [rest // parts + (1 if r < rest % parts else 0) for r in range(parts)]


def _parts(length, parts, **kw):
    return [gdata.SplitSampler(length, parts, p, **kw) for p in range(parts)]


def _merge_by_batch(per_part):
    """Batch k of every part, concatenated in rank order (parts may have one batch fewer)."""
    merged = []
    for k in range(max((len(b) for b in per_part), default=0)):
        merged.append([i for batches in per_part if k < len(batches) for i in batches[k]])
    return merged


# ---- export ---------------------------------------------------------------------------------
def test_exported_from_gluon_data():
    from hybridgluon.gluon.data import SplitSampler
    from hybridgluon.gluon.data import sampler

    assert 'SplitSampler' in sampler.__all__
    assert SplitSampler is sampler.SplitSampler is gdata.SplitSampler
    assert isinstance(SplitSampler(4), gdata.Sampler)


# ---- without batch_size: contiguous equal parts ---------------------------------------------
@pytest.mark.parametrize('parts', PARTS)
def test_contiguous_parts(parts):
    for length in LENGTHS:
        n = length // parts
        samplers = _parts(length, parts)
        got = [list(s) for s in samplers]
        assert got == [list(range(p * n, (p + 1) * n)) for p in range(parts)]
        assert [len(s) for s in samplers] == [n] * parts
        # disjoint, and together all but the trailing length % parts indices
        flat = [i for g in got for i in g]
        assert len(set(flat)) == len(flat) == n * parts
        assert sorted(flat) == list(range(n * parts))


@pytest.mark.parametrize('parts', PARTS)
def test_contiguous_parts_shuffled(parts):
    for length in LENGTHS:
        n = length // parts
        for seed in (0, 7):
            samplers = _parts(length, parts, shuffle=True, seed=seed)
            for epoch in range(3):
                got = [list(s) for s in samplers]
                for p, g in enumerate(got):
                    perm = np.random.RandomState(seed + epoch).permutation(n)
                    assert g == (p * n + perm).tolist()
                    assert sorted(g) == list(range(p * n, (p + 1) * n))
                    assert len(samplers[p]) == len(g) == n
                flat = [i for g in got for i in g]
                assert len(set(flat)) == len(flat)


def test_contiguous_shuffle_changes_per_epoch():
    s = gdata.SplitSampler(40, 2, 1, shuffle=True, seed=3)
    epochs = [list(s) for _ in range(3)]
    assert all(sorted(e) == list(range(20, 40)) for e in epochs)
    assert epochs[0] != epochs[1] != epochs[2] != epochs[0]


# ---- with batch_size: sub-batches of the global batches --------------------------------------
@pytest.mark.parametrize('parts', PARTS)
def test_batches_union_is_single_process(parts):
    for length in LENGTHS:
        for b in (1, 3):
            big = b * parts
            for shuffle in (False, True):
                for last_batch in ('keep', 'discard'):
                    seed = length  # a different seed per case
                    samplers = _parts(length, parts, shuffle=shuffle, batch_size=big,
                                      seed=seed, last_batch=last_batch)
                    for epoch in range(2):
                        order = _order(length, shuffle, seed, epoch)
                        want = _global_batches(order, big, last_batch)
                        got = [list(s) for s in samplers]
                        per_part = [_chunks(g, b) for g in got]
                        assert _merge_by_batch(per_part) == want
                        # every full global batch: rank p holds exactly slice p of it
                        for k in range(length // big):
                            for p in range(parts):
                                assert per_part[p][k] == order[k * big + p * b:
                                                               k * big + (p + 1) * b]
                        # disjoint parts, __len__ agrees with iteration
                        flat = [i for g in got for i in g]
                        assert len(set(flat)) == len(flat)
                        assert sorted(flat) == sorted(i for w in want for i in w)
                        assert [len(s) for s in samplers] == [len(g) for g in got]


@pytest.mark.parametrize('parts', PARTS)
def test_batches_last_batch_split(parts):
    b = 3
    big = b * parts
    for length in LENGTHS:
        full, rest = divmod(length, big)
        keep = [list(s) for s in _parts(length, parts, batch_size=big)]
        tails = [g[full * b:] for g in keep]
        sizes = _rank_chunk_sizes(rest, parts)
        assert [len(t) for t in tails] == sizes
        assert [i for t in tails for i in t] == list(range(full * big, length))
        assert all(size <= b for size in sizes)
        # discard: every part has the same length, full sub-batches only
        disc = _parts(length, parts, batch_size=big, last_batch='discard')
        assert [len(s) for s in disc] == [full * b] * parts
        assert [list(s) for s in disc] == [g[:full * b] for g in keep]


def test_batches_example():
    # length 10, 3 ranks, global batch 6: [0..5] is split 2/2/2, the tail [6..9] as 2/1/1
    got = [list(s) for s in _parts(10, 3, batch_size=6)]
    assert got == [[0, 1, 6, 7], [2, 3, 8], [4, 5, 9]]
    got = [list(s) for s in _parts(10, 3, batch_size=6, last_batch='discard')]
    assert got == [[0, 1], [2, 3], [4, 5]]
    # fewer tail indices than ranks: the last ranks get none
    got = [list(s) for s in _parts(7, 4, batch_size=4)]
    assert got == [[0, 4], [1, 5], [2, 6], [3]]
    assert [len(s) for s in _parts(7, 4, batch_size=4)] == [2, 2, 2, 1]


def test_batches_shuffle_changes_per_epoch_and_agrees_across_instances():
    length, parts, big = 30, 3, 6
    a = _parts(length, parts, shuffle=True, batch_size=big, seed=11)
    b = _parts(length, parts, shuffle=True, batch_size=big, seed=11)
    orders = []
    for epoch in range(3):
        got_a = [list(s) for s in a]
        got_b = [list(s) for s in reversed(b)][::-1]  # other instances, other call order
        assert got_a == got_b
        order = [i for batch in _merge_by_batch([_chunks(g, 2) for g in got_a]) for i in batch]
        assert order == _order(length, True, 11, epoch)
        orders.append(order)
    assert orders[0] != orders[1] != orders[2] != orders[0]
    other = [list(s) for s in _parts(length, parts, shuffle=True, batch_size=big, seed=12)]
    assert other != [list(s) for s in _parts(length, parts, shuffle=True, batch_size=big,
                                                 seed=11)]


def test_set_epoch():
    s = gdata.SplitSampler(20, 2, 1, shuffle=True, batch_size=4, seed=5)
    s.set_epoch(4)
    assert len(s) == 10
    assert list(s) == [i for k in range(5) for i in _order(20, True, 5, 4)[4 * k + 2:4 * k + 4]]
    # the count goes on from the set epoch
    assert list(s) == [i for k in range(5) for i in _order(20, True, 5, 5)[4 * k + 2:4 * k + 4]]
    s.set_epoch(np.int64(0))
    fresh = gdata.SplitSampler(20, 2, 1, shuffle=True, batch_size=4, seed=5)
    assert list(s) == list(fresh)
    # contiguous path too
    c = gdata.SplitSampler(9, 3, 2, shuffle=True, seed=1)
    c.set_epoch(2)
    assert list(c) == (6 + np.random.RandomState(3).permutation(3)).tolist()


def test_len_does_not_advance_epoch_and_global_rng_untouched():
    s = gdata.SplitSampler(12, 2, 0, shuffle=True, batch_size=4)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    for _ in range(3):
        len(s)
    first = list(s)
    assert np.array_equal(np.random.get_state()[1], before)
    assert first == [i for k in range(3) for i in _order(12, True, 0, 0)[4 * k:4 * k + 2]]


def test_numpy_int_arguments():
    s = gdata.SplitSampler(np.int64(10), np.int32(2), np.int64(1), batch_size=np.int64(4))
    assert list(s) == [2, 3, 6, 7, 9]
    assert len(s) == 5


# ---- through DataLoader ----------------------------------------------------------------------
def _loader_batches(loader):
    return [[x.asnumpy(), y.asnumpy()] for x, y in loader]


@pytest.mark.parametrize('length,parts,b,last_batch', [
    (23, 3, 2, 'keep'), (23, 3, 2, 'discard'), (24, 4, 3, 'keep'), (5, 4, 1, 'keep'),
    (9, 2, 4, 'keep'), (0, 2, 2, 'keep'), (1, 1, 3, 'keep')])
@pytest.mark.parametrize('shuffle', [False, True])
def test_dataloader_parts_reproduce_single_process(length, parts, b, last_batch, shuffle):
    big = b * parts
    data = np.arange(length * 2, dtype=np.float32).reshape(length, 2) * 10
    label = np.arange(length, dtype=np.float32) + 0.5
    ds = gdata.ArrayDataset(data, label)
    seed = 4
    loaders = [gdata.DataLoader(ds, batch_size=b, sampler=gdata.SplitSampler(
        length, parts, p, shuffle=shuffle, batch_size=big, seed=seed, last_batch=last_batch))
        for p in range(parts)]
    for epoch in range(2):
        order = _order(length, shuffle, seed, epoch)
        single = _loader_batches(gdata.DataLoader(ds, batch_size=big, sampler=order,
                                                  last_batch=last_batch))
        per_part = [_loader_batches(ld) for ld in loaders]
        assert [len(ld) for ld in loaders] == [len(bs) for bs in per_part]
        assert max((len(bs) for bs in per_part), default=0) == len(single)
        for k, (x, y) in enumerate(single):
            parts_k = [bs[k] for bs in per_part if k < len(bs)]
            np.testing.assert_array_equal(np.concatenate([q[0] for q in parts_k]), x)
            np.testing.assert_array_equal(np.concatenate([q[1] for q in parts_k]), y)
            np.testing.assert_array_equal(y, label[order[k * big:(k + 1) * big]])


# ---- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize('kwargs,words', [
    (dict(length=-1), ['length', '-1']),
    (dict(length=2.5), ['length', '2.5']),
    (dict(length='10'), ['length', "'10'"]),
    (dict(length=True), ['length', 'True']),
    (dict(length=10, num_parts=0), ['num_parts', '0']),
    (dict(length=10, num_parts=-2), ['num_parts', '-2']),
    (dict(length=10, num_parts=2.0), ['num_parts', '2.0']),
    (dict(length=10, num_parts=3, part_index=3), ['part_index', '3']),
    (dict(length=10, num_parts=3, part_index=-1), ['part_index', '-1']),
    (dict(length=10, part_index=None), ['part_index', 'None']),
    (dict(length=10, batch_size=0), ['batch_size', '0']),
    (dict(length=10, batch_size=-4), ['batch_size', '-4']),
    (dict(length=10, batch_size=4.0), ['batch_size', '4.0']),
    (dict(length=10, num_parts=3, batch_size=10), ['batch_size', '10', 'num_parts', '3']),
    (dict(length=10, num_parts=4, batch_size=6), ['6', '4', 'multiple']),
    (dict(length=10, seed=-1), ['seed', '-1']),
    (dict(length=10, batch_size=2, last_batch='rollover'), ['rollover', 'keep', 'discard']),
    (dict(length=10, last_batch=None), ['last_batch', 'None', 'keep', 'discard']),
])
def test_errors(kwargs, words):
    with pytest.raises(MXNetError) as err:
        gdata.SplitSampler(**kwargs)
    for word in words:
        assert word in str(err.value)


def test_set_epoch_errors():
    s = gdata.SplitSampler(10)
    for bad, word in ((-1, '-1'), (1.0, '1.0'), ('2', "'2'")):
        with pytest.raises(MXNetError) as err:
            s.set_epoch(bad)
        assert 'epoch' in str(err.value) and word in str(err.value)


# ---- Dataset.shard (MXNet 1.9.1) -------------------------------------------------------------
def test_shard_matches_mxnet_semantics():
    for length in range(0, 14):
        ds = gdata.SimpleDataset(list(range(100, 100 + length)))
        for num in range(1, 6):
            shards = [list(ds.shard(num, i)) for i in range(num)]
            # the first length % num shards get one item more, in order, contiguous
            sizes = [length // num + (1 if i < length % num else 0) for i in range(num)]
            assert [len(s) for s in shards] == sizes
            assert [len(ds.shard(num, i)) for i in range(num)] == sizes
            assert [v for s in shards for v in s] == list(range(100, 100 + length))
    ds = gdata.SimpleDataset(list(range(10)))
    assert [list(ds.shard(4, i)) for i in range(4)] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert [list(ds.shard(12, i)) for i in range(12)] == [[i] for i in range(10)] + [[], []]


@pytest.mark.parametrize('num,index,message', [
    (3, 3, 'Shard index of out bound: 3 out of 3'),
    (0, 0, 'Shard index of out bound: 0 out of 0'),
    (-1, -2, 'Number of shards must be greater than 0'),
    (3, -1, 'Index must be non-negative'),
])
def test_shard_errors_like_mxnet(num, index, message):
    ds = gdata.SimpleDataset(list(range(10)))
    # MXNet asserts: an AssertionError; here also an MXNetError and a ValueError
    for kind in (AssertionError, MXNetError, ValueError):
        with pytest.raises(kind, match=message):
            ds.shard(num, index)
