"""gluon.data: datasets, samplers, DataLoader (in-process, threads, worker processes) and the
MNIST-format readers, against NumPy references (transforms: test_vision_transforms.py)."""
import gc
import gzip
import multiprocessing
import os
import struct
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import data as gdata
from hybridgluon.gluon.data import vision
from hybridgluon.gluon.data.vision import transforms as T

nd = mx.nd


@pytest.fixture
def rng():
    return np.random.default_rng(5)


# ---- datasets -----------------------------------------------------------------------------
def test_simple_and_array_dataset(rng):
    x = rng.standard_normal((6, 2)).astype(np.float32)
    y = np.arange(6)
    ds = gdata.ArrayDataset(nd.array(x), nd.array(y))
    assert len(ds) == 6
    a, b = ds[2]
    np.testing.assert_allclose(a.asnumpy(), x[2])
    # a 1-D NDArray is kept as NumPy: its samples are NumPy scalars, as in MXNet
    assert isinstance(b, np.float32) and b == 2
    single = gdata.ArrayDataset(x)
    np.testing.assert_array_equal(single[1], x[1])
    s = gdata.SimpleDataset([1, 2, 3])
    assert len(s) == 3 and s[1] == 2


def test_array_dataset_length_mismatch():
    with pytest.raises(mx.MXNetError, match=r'same length.*array\[0\] has length 3 while '
                                            r'array\[1\] has 2'):
        gdata.ArrayDataset(np.zeros(3), np.zeros(2))
    with pytest.raises(AssertionError):  # MXNet asserts: the same error is an AssertionError
        gdata.ArrayDataset([1, 2], [1, 2], [1])
    with pytest.raises(AssertionError):
        gdata.ArrayDataset()


def test_transform_lazy_and_first():
    calls = []

    def double(x, y):
        calls.append(x)
        return x * 2, y

    ds = gdata.ArrayDataset(np.arange(4), np.arange(4) + 10)
    lazy = ds.transform(double)
    assert calls == []
    assert lazy[1] == (2, 11) and len(calls) == 1
    eager = ds.transform(double, lazy=False)
    assert len(calls) == 5 and isinstance(eager, gdata.SimpleDataset)
    assert eager[3] == (6, 13)
    first = ds.transform_first(lambda x: x + 100)
    assert first[0] == (100, 10)
    plain = gdata.SimpleDataset([1, 2]).transform_first(lambda x: -x)
    assert plain[1] == -2


def test_filter_shard_take_sample():
    ds = gdata.SimpleDataset(list(range(10)))
    assert list(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError):
        ds.shard(3, 3)
    assert list(ds.take(3)) == [0, 1, 2] and len(ds.take(None)) == 10
    assert list(ds.sample(gdata.SequentialSampler(2, 5))) == [5, 6]


# ---- samplers -----------------------------------------------------------------------------
def test_samplers():
    assert list(gdata.SequentialSampler(4)) == [0, 1, 2, 3]
    assert list(gdata.SequentialSampler(3, start=2)) == [2, 3, 4]
    np.random.seed(0)
    a = list(gdata.RandomSampler(20))
    np.random.seed(0)
    b = list(gdata.RandomSampler(20))
    assert a == b and sorted(a) == list(range(20)) and a != list(range(20))
    assert all(isinstance(i, int) for i in a)
    assert list(gdata.IntervalSampler(6, 3)) == [0, 3, 1, 4, 2, 5]
    assert list(gdata.IntervalSampler(6, 3, rollover=False)) == [0, 3]


def test_batch_sampler_last_batch():
    seq = gdata.SequentialSampler(10)
    keep = gdata.BatchSampler(seq, 3, 'keep')
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(keep) == 4
    discard = gdata.BatchSampler(seq, 3, 'discard')
    assert list(discard) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(discard) == 3
    roll = gdata.BatchSampler(seq, 3, 'rollover')
    assert len(roll) == 3
    assert list(roll) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(roll) == 3  # (1 left over + 10) // 3
    assert list(roll)[0] == [9, 0, 1]
    assert len(roll) == 4  # 2 left over: (2 + 10) // 3
    with pytest.raises(ValueError, match="'keep', 'discard', or 'rollover'"):
        gdata.BatchSampler(seq, 3, 'other')
    with pytest.raises(ValueError, match='batch_size'):
        gdata.BatchSampler(seq, 0)


# ---- batchify and DataLoader --------------------------------------------------------------
def test_default_batchify_types():
    b = gdata.default_batchify_fn([nd.array([1, 2]), nd.array([3, 4])])
    assert isinstance(b, nd.NDArray) and b.shape == (2, 2)
    assert gdata.default_batchify_fn([np.int32(1), np.int32(2)]).dtype == np.int32
    assert gdata.default_batchify_fn([1, 2]).dtype == np.int64
    assert gdata.default_batchify_fn([1.5, 2.5]).dtype == np.float64
    u8 = gdata.default_batchify_fn([np.zeros((2, 2), np.uint8)] * 3)
    assert u8.shape == (3, 2, 2) and u8.dtype == np.uint8
    pair = gdata.default_batchify_fn([(nd.ones((2,)), 0), (nd.zeros((2,)), 1)])
    assert isinstance(pair, list) and pair[0].shape == (2, 2)
    np.testing.assert_array_equal(pair[1].asnumpy(), [0, 1])


def _dataset(n=23):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int32)
    return gdata.ArrayDataset(nd.array(x), y), x, y


def _collect(loader):
    xs, ys = [], []
    for xb, yb in loader:
        xs.append(xb.asnumpy())
        ys.append(yb.asnumpy())
    return xs, ys


def test_dataloader_sequential():
    ds, x, y = _dataset()
    loader = gdata.DataLoader(ds, batch_size=5)
    assert len(loader) == 5
    xs, ys = _collect(loader)
    assert [b.shape for b in xs] == [(5, 3)] * 4 + [(3, 3)]
    np.testing.assert_array_equal(np.concatenate(xs), x)
    np.testing.assert_array_equal(np.concatenate(ys), y)
    assert ys[0].dtype == np.int32
    xs, _ = _collect(gdata.DataLoader(ds, batch_size=5, last_batch='discard'))
    assert len(xs) == 4
    roll = gdata.DataLoader(ds, batch_size=5, last_batch='rollover')
    first = _collect(roll)[1]
    second = _collect(roll)[1]
    assert len(first) == 4 and second[0][:3].tolist() == [20, 21, 22]


def test_dataloader_shuffle_and_sampler():
    ds, _, y = _dataset()
    np.random.seed(1)
    _, ys = _collect(gdata.DataLoader(ds, batch_size=4, shuffle=True))
    order = np.concatenate(ys)
    assert sorted(order.tolist()) == y.tolist() and order.tolist() != y.tolist()
    _, ys = _collect(gdata.DataLoader(ds, batch_size=4, sampler=gdata.SequentialSampler(6, 3)))
    assert np.concatenate(ys).tolist() == [3, 4, 5, 6, 7, 8]
    bs = gdata.BatchSampler(gdata.SequentialSampler(4), 2)
    _, ys = _collect(gdata.DataLoader(ds, batch_sampler=bs))
    assert [b.tolist() for b in ys] == [[0, 1], [2, 3]]


def test_dataloader_argument_errors():
    ds, _, _ = _dataset()
    with pytest.raises(ValueError, match='batch_size must be specified'):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match='shuffle must not be specified'):
        gdata.DataLoader(ds, 2, shuffle=True, sampler=gdata.SequentialSampler(3))
    bs = gdata.BatchSampler(gdata.SequentialSampler(4), 2)
    with pytest.raises(ValueError, match='must not be specified if batch_sampler'):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=bs)
    with pytest.raises(ValueError, match='timeout'):
        gdata.DataLoader(ds, 2, timeout=0)


def test_dataloader_custom_batchify():
    ds, x, _ = _dataset(6)

    def first_only(samples):
        return nd.stack(*[s[0] for s in samples])

    out = list(gdata.DataLoader(ds, batch_size=4, batchify_fn=first_only))
    np.testing.assert_array_equal(out[1].asnumpy(), x[4:])


def _no_children_left(timeout=10.0):
    gc.collect()  # a loader kept alive by a reference cycle (a traceback) is freed here
    deadline = time.time() + timeout
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


@pytest.mark.parametrize('thread_pool', [False, True])
def test_dataloader_workers_match_single_process(thread_pool):
    ds, x, y = _dataset(37)
    ds = ds.transform_first(lambda v: v * 2)  # a lambda: workers inherit it, no pickling
    ref = _collect(gdata.DataLoader(ds, batch_size=4))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, thread_pool=thread_pool,
                              prefetch=3)
    for _ in range(2):  # the pool serves several passes
        got = _collect(loader)
        assert len(got[0]) == len(ref[0]) == 10
        for a, b in zip(got[0] + got[1], ref[0] + ref[1]):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    first = next(iter(loader))
    assert isinstance(first[0], nd.NDArray)
    del loader, first
    assert _no_children_left()


def test_dataloader_worker_custom_batchify_lambda():
    ds, x, _ = _dataset(9)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2,
                              batchify_fn=lambda s: (nd.stack(*[v[0] for v in s]), len(s)))
    out = list(loader)
    assert [n for _, n in out] == [4, 4, 1]
    np.testing.assert_array_equal(out[2][0].asnumpy(), x[8:])
    del loader
    assert _no_children_left()


def test_dataloader_abandoned_mid_pass():
    ds, x, _ = _dataset(40)
    loader = gdata.DataLoader(ds, batch_size=2, num_workers=2, prefetch=6)
    it = iter(loader)
    np.testing.assert_array_equal(next(it)[0].asnumpy(), x[:2])
    del it, loader  # batches still in flight: the pool is terminated all the same
    assert _no_children_left()


class _Failing(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        if idx == 5:
            raise KeyError('sample %d is broken' % idx)
        return np.float32(idx)


def test_dataloader_worker_error_reaches_parent():
    loader = gdata.DataLoader(_Failing(), batch_size=2, num_workers=2)
    with pytest.raises(KeyError, match='sample 5 is broken'):
        list(loader)
    assert loader._worker_pool is None  # terminated after the error
    assert _no_children_left()
    # the loader starts a fresh pool on the next pass
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0, 1]
    del it, loader
    assert _no_children_left()


class _Slow(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, idx):
        time.sleep(3)
        return np.float32(idx)


def test_dataloader_timeout():
    loader = gdata.DataLoader(_Slow(), batch_size=2, num_workers=1, timeout=0.2)
    with pytest.raises(multiprocessing.TimeoutError, match='timed out after 0.2 seconds'):
        list(loader)
    del loader
    assert _no_children_left()


class _Random(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        return np.float32(np.random.rand())


def test_workers_get_distinct_random_streams():
    loader = gdata.DataLoader(_Random(), batch_size=1, num_workers=2)
    values = [float(b.asscalar()) for b in loader]
    assert len(set(values)) == len(values)
    del loader
    assert _no_children_left()


# ---- MNIST-format files -------------------------------------------------------------------
def _idx_bytes(arr):
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    return struct.pack('>HBB', 0, 8, arr.ndim) + struct.pack('>%dI' % arr.ndim, *arr.shape) + \
        arr.tobytes()


def _write_mnist(root, n_train=5, n_test=3, gz=True, rng=None):
    rng = rng or np.random.default_rng(0)
    os.makedirs(root, exist_ok=True)
    out = {}
    for prefix, n in (('train', n_train), ('t10k', n_test)):
        images = rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        for name, arr in (('%s-images-idx3-ubyte' % prefix, images),
                          ('%s-labels-idx1-ubyte' % prefix, labels)):
            path = os.path.join(root, name + ('.gz' if gz else ''))
            with (gzip.open(path, 'wb') if gz else open(path, 'wb')) as f:
                f.write(_idx_bytes(arr))
        out[prefix] = (images, labels)
    return out


@pytest.mark.parametrize('gz', [True, False])
@pytest.mark.parametrize('cls', [vision.MNIST, vision.FashionMNIST])
def test_mnist_reads_idx_files(tmp_path, gz, cls):
    ref = _write_mnist(str(tmp_path), gz=gz)
    for train, key in ((True, 'train'), (False, 't10k')):
        ds = cls(root=str(tmp_path), train=train)
        images, labels = ref[key]
        assert len(ds) == len(labels)
        img, lab = ds[1]
        assert isinstance(img, nd.NDArray) and img.shape == (28, 28, 1)
        assert img.dtype == np.uint8
        assert isinstance(lab, np.int32) and lab == labels[1]
        np.testing.assert_array_equal(img.asnumpy()[..., 0], images[1])
    ds = cls(root=str(tmp_path), transform=lambda d, l: (d.astype('float32') / 255, l + 1))
    img, lab = ds[0]
    assert img.dtype == np.float32 and lab == ref['train'][1][0] + 1


def test_mnist_through_dataloader(tmp_path):
    _write_mnist(str(tmp_path), n_train=10)
    ds = vision.MNIST(root=str(tmp_path)).transform_first(T.ToTensor())
    xb, yb = next(iter(gdata.DataLoader(ds, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and xb.dtype == np.float32
    assert yb.shape == (4,) and yb.dtype == np.int32


def test_mnist_missing_files_error(tmp_path):
    with pytest.raises(mx.MXNetError) as err:
        vision.MNIST(root=str(tmp_path / 'nowhere'))
    msg = str(err.value)
    assert 'labels-idx1-ubyte' in msg and 'nowhere' in msg and 'downloads nothing' in msg
    with pytest.raises(mx.MXNetError, match='dataset-fashion-mnist'):
        vision.FashionMNIST(root=str(tmp_path / 'nowhere'))


def test_fashion_mnist_default_root_falls_back(tmp_path, monkeypatch):
    """With the default root, files are also looked for where Debian's package puts them."""
    fallback = tmp_path / 'share'
    ref = _write_mnist(str(fallback))
    home = tmp_path / 'home'
    monkeypatch.setenv('MXNET_HOME', str(home))
    monkeypatch.setattr(vision.FashionMNIST, '_fallback_dirs', (str(fallback),))
    ds = vision.FashionMNIST(root=str(home / 'datasets' / 'fashion-mnist'), train=False)
    assert len(ds) == 3 and ds[2][1] == ref['t10k'][1][2]
    with pytest.raises(mx.MXNetError) as err:  # a root of one's own gets no fallback
        vision.FashionMNIST(root=str(tmp_path / 'mine'))
    assert str(fallback) not in str(err.value)
    # and the message names both places when the fallback is empty too
    monkeypatch.setattr(vision.FashionMNIST, '_fallback_dirs', (str(tmp_path / 'empty'),))
    with pytest.raises(mx.MXNetError, match='empty'):
        vision.FashionMNIST(root=str(home / 'datasets' / 'fashion-mnist'))


@pytest.mark.skipif(not os.path.isdir('/usr/share/datasets/fashion-mnist'),
                    reason="Debian's dataset-fashion-mnist is not installed")
def test_fashion_mnist_debian_package(tmp_path, monkeypatch):
    monkeypatch.setenv('MXNET_HOME', str(tmp_path))
    ds = vision.FashionMNIST(root=str(tmp_path / 'datasets' / 'fashion-mnist'), train=False)
    assert len(ds) == 10000
    img, lab = ds[0]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8 and 0 <= lab <= 9
    labels = np.array([ds[i][1] for i in range(0, 10000, 7)])
    assert set(labels.tolist()) == set(range(10))


def _corrupt(tmp_path, name, data, gz):
    _write_mnist(str(tmp_path), gz=gz)
    path = os.path.join(str(tmp_path), name + ('.gz' if gz else ''))
    with (gzip.open(path, 'wb') if gz else open(path, 'wb')) as f:
        f.write(data)
    return path


@pytest.mark.parametrize('gz', [True, False])
def test_idx_truncated_or_corrupted(tmp_path, gz):
    images = np.zeros((5, 28, 28), np.uint8)
    good = _idx_bytes(images)
    cases = [(good[:-10], 'truncated'),
             (good[:6], 'truncated'),
             (b'\x00\x00\x0c\x03' + good[4:], 'not an IDX file'),
             (good[:4] + struct.pack('>III', 5000, 50000, 50000) + good[16:], 'implausible'),
             (good[:4] + struct.pack('>III', 6, 28, 28) + good[16:], 'truncated'),
             (good + b'extra', 'truncated|past the size')]
    for data, pattern in cases:
        _corrupt(tmp_path, 'train-images-idx3-ubyte', data, gz)
        with pytest.raises(mx.MXNetError, match=pattern):
            vision.MNIST(root=str(tmp_path))


def test_idx_count_mismatch_and_bad_gzip(tmp_path):
    _corrupt(tmp_path, 'train-labels-idx1-ubyte', _idx_bytes(np.zeros(4, np.uint8)), True)
    with pytest.raises(mx.MXNetError, match='5 images but .* 4 labels'):
        vision.MNIST(root=str(tmp_path))
    _write_mnist(str(tmp_path))
    path = os.path.join(str(tmp_path), 'train-labels-idx1-ubyte.gz')
    raw = open(path, 'rb').read()
    with open(path, 'wb') as f:  # cut the compressed stream in the middle
        f.write(raw[:len(raw) // 2])
    with pytest.raises(mx.MXNetError):
        vision.MNIST(root=str(tmp_path))
    with open(path, 'wb') as f:
        f.write(b'this is not gzip at all, just some bytes')
    with pytest.raises(mx.MXNetError):
        vision.MNIST(root=str(tmp_path))
