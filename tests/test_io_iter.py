"""mx.io: DataDesc, DataBatch, NDArrayIter, ResizeIter and PrefetchingIter, against hand
computation and against batches real MXNet 1.9.1 produced (tests/mxnet_ref/module/, written by
tests/mxnet_ref/gen_module_ref.py)."""
import json
import os
import sys
import threading

import numpy as np
import pytest

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import gen_module_ref as G  # noqa: E402

FIX = os.path.join(HERE, 'mxnet_ref', 'module')


def _batches(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy() if b.label else None, b.pad)
            for b in it]


def test_datadesc_and_batch():
    d = mx.io.DataDesc('data', (2, 3), np.float16, layout='TNC')
    assert d == ('data', (2, 3)) and d.name == 'data' and d.shape == (2, 3)
    assert d.dtype == np.float16 and d.layout == 'TNC'
    assert repr(d) == "DataDesc[data,(2, 3),<class 'numpy.float16'>,TNC]"
    assert mx.io.DataDesc.get_batch_axis('TNC') == 1
    assert mx.io.DataDesc.get_batch_axis(None) == 0
    assert mx.io.DataDesc.get_batch_axis('CHW') == -1
    descs = mx.io.DataDesc.get_list([('a', (1,)), ('b', (2,))], [('a', np.int32),
                                                                   ('b', np.float64)])
    assert [(x.name, x.shape, x.dtype) for x in descs] == [('a', (1,), np.int32),
                                                          ('b', (2,), np.float64)]
    batch = mx.io.DataBatch([mx.nd.ones((2, 3)), mx.nd.ones((7, 8))], [mx.nd.ones((4, 5))])
    assert str(batch) == 'DataBatch: data shapes: [(2, 3), (7, 8)] label shapes: [(4, 5)]'
    with pytest.raises(AssertionError):
        mx.io.DataBatch(mx.nd.ones((2, 3)))


@pytest.mark.parametrize('case', sorted(G.ITER_CASES))
def test_ndarrayiter_matches_mxnet(case):
    meta = json.load(open(os.path.join(FIX, 'module.json')))
    ref = np.load(os.path.join(FIX, 'module.npz'))
    epochs = G.iterate(mx, case)
    layout = meta['iter_%s' % case]
    assert [[pad for _, _, pad in e] for e in epochs] == layout
    for e, epoch in enumerate(epochs):
        for b, (data, label, _) in enumerate(epoch):
            np.testing.assert_array_equal(data, ref['iter_%s_e%d_b%d_data' % (case, e, b)])
            np.testing.assert_array_equal(label, ref['iter_%s_e%d_b%d_label' % (case, e, b)])


def test_ndarrayiter_pad_discard_rollover_by_hand():
    x = np.arange(10, dtype=np.float32)
    got = _batches(mx.io.NDArrayIter(x, batch_size=4, last_batch_handle='pad'))
    assert [list(d) for d, _, _ in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert [p for _, _, p in got] == [0, 0, 2]
    got = _batches(mx.io.NDArrayIter(x, batch_size=4, last_batch_handle='discard'))
    assert [list(d) for d, _, _ in got] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it = mx.io.NDArrayIter(x, batch_size=4, last_batch_handle='roll_over')
    assert [list(d) for d, _, _ in _batches(it)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    first = it.next()  # the two left over, then the next epoch's first two
    assert list(first.data[0].asnumpy()) == [8, 9, 0, 1] and first.pad == 2
    assert [list(d) for d, _, _ in _batches(it)] == [[2, 3, 4, 5], [6, 7, 8, 9]]
    it.hard_reset()
    assert list(it.next().data[0].asnumpy()) == [0, 1, 2, 3]
    # A batch larger than the data repeats it (MXNet's tiling).
    got = _batches(mx.io.NDArrayIter(np.arange(3), batch_size=8))
    assert list(got[0][0]) == [0, 1, 2, 0, 1, 2, 0, 1] and got[0][2] == 5


def test_ndarrayiter_shuffle_follows_numpy_seed():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6, dtype=np.float32)
    np.random.seed(3)
    it = mx.io.NDArrayIter(x, y, batch_size=2, shuffle=True)
    np.random.seed(3)
    order = np.arange(6)
    np.random.shuffle(order)
    np.testing.assert_array_equal(it.idx, order)
    got = _batches(it)
    np.testing.assert_array_equal(np.concatenate([d for d, _, _ in got]), x[order])
    np.testing.assert_array_equal(np.concatenate([lab for _, lab, _ in got]), y[order])


def test_ndarrayiter_sources_and_descs():
    a = np.ones((6, 3))  # float64 NumPy input becomes float32, as in MXNet
    b = mx.nd.zeros((6, 2), dtype='int32')
    it = mx.io.NDArrayIter({'b': b, 'a': a}, batch_size=4)
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [
        ('a', (4, 3), np.float32), ('b', (4, 2), np.int32)]
    assert it.provide_label == []
    batch = it.next()
    assert not batch.label and len(batch.data) == 2
    it = mx.io.NDArrayIter([a, a], np.zeros(6), batch_size=3, label_name='lab')
    assert [d.name for d in it.provide_data] == ['_0_data', '_1_data']
    assert [d.name for d in it.provide_label] == ['lab']
    # A 'TNC' layout batches along axis 1.
    seq = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
    it = mx.io.NDArrayIter(seq, batch_size=3, layout='TNC', last_batch_handle='discard')
    assert it.provide_data[0].shape == (2, 3, 2)
    got = _batches(it)
    np.testing.assert_array_equal(got[1][0], seq[:, 3:6])


def test_ndarrayiter_bad_arguments():
    with pytest.raises(ValueError, match='last_batch_handle'):
        mx.io.NDArrayIter(np.ones(4), last_batch_handle='wrap')
    with pytest.raises(ValueError, match='batch_size'):
        mx.io.NDArrayIter(np.ones(4), batch_size=0)
    with pytest.raises(TypeError):
        mx.io.NDArrayIter(42)
    with pytest.raises(ValueError, match='data must'):
        mx.io.NDArrayIter(None)
    with pytest.raises(ValueError, match='examples'):
        mx.io.NDArrayIter(np.ones(4), np.ones(3))


def test_resize_iter():
    base = mx.io.NDArrayIter(np.arange(6, dtype=np.float32), batch_size=4)
    it = mx.io.ResizeIter(base, 3)
    assert it.provide_data == base.provide_data and it.batch_size == 4
    got = _batches(it)
    assert [list(d) for d, _, _ in got] == [[0, 1, 2, 3], [4, 5, 0, 1], [0, 1, 2, 3]]
    assert [p for _, _, p in got] == [0, 2, 0]
    it.reset()
    assert len(_batches(it)) == 3


def test_prefetching_iter():
    x1 = np.arange(8, dtype=np.float32).reshape(4, 2)
    x2 = -x1
    it = mx.io.PrefetchingIter([mx.io.NDArrayIter(x1, batch_size=2),
                                mx.io.NDArrayIter(x2, batch_size=2)],
                               rename_data=[{'data': 'd1'}, {'data': 'd2'}])
    assert [d.name for d in it.provide_data] == ['d1', 'd2'] and it.batch_size == 2
    for _ in range(2):  # two epochs, reset in between
        got = [(b.data[0].asnumpy(), b.data[1].asnumpy()) for b in it]
        assert len(got) == 2
        np.testing.assert_array_equal(np.concatenate([a for a, _ in got]), x1)
        np.testing.assert_array_equal(np.concatenate([b for _, b in got]), x2)
        it.reset()
    threads = [w.thread for w in it._workers]
    assert all(t.is_alive() for t in threads)
    it.close()
    assert not any(t.is_alive() for t in threads)


def test_prefetching_iter_passes_errors_and_stops():
    class Broken(mx.io.DataIter):
        provide_data = [mx.io.DataDesc('data', (2, 2))]
        provide_label = []

        def next(self):
            raise RuntimeError('reader failed')

    before = threading.active_count()
    it = mx.io.PrefetchingIter(Broken())
    with pytest.raises(RuntimeError, match='reader failed'):
        it.next()
    it.close()
    assert threading.active_count() == before


def _write_csv(path, rows):
    with open(path, 'w') as f:
        for row in rows:
            f.write(','.join(str(v) for v in row) + '\n')


def test_csv_iter_epochs_round_batch(tmp_path):
    _write_csv(tmp_path / 'd.csv', [[10 * i + j for j in range(4)] for i in range(10)])
    _write_csv(tmp_path / 'l.csv', [[i] for i in range(10)])
    it = mx.io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape=(2, 2),
                       label_csv=str(tmp_path / 'l.csv'), batch_size=4)
    assert [(d.name, d.shape) for d in it.provide_data] == [('data', (4, 2, 2))]
    assert [(d.name, d.shape) for d in it.provide_label] == [('softmax_label', (4,))]

    def epoch():
        out = [(b.label[0].asnumpy().tolist(), b.pad, b.index.tolist()) for b in it]
        it.reset()
        return out

    # The short batch borrows rows 0, 1; the next epoch starts after them (ends on a full
    # batch), and the one after starts over.
    first = epoch()
    assert first == [([0, 1, 2, 3], 0, [0, 1, 2, 3]), ([4, 5, 6, 7], 0, [4, 5, 6, 7]),
                     ([8, 9, 0, 1], 2, [8, 9, 0, 1])]
    assert epoch() == [([2, 3, 4, 5], 0, [2, 3, 4, 5]), ([6, 7, 8, 9], 0, [6, 7, 8, 9])]
    assert epoch() == first
    batch = it.next()  # after the third epoch's borrowed rows: rows 2..5
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], [[30, 31], [32, 33]])
    assert it.getdata() is batch.data[0] and it.getpad() == 0


def test_csv_iter_no_round_batch_and_dtypes(tmp_path):
    _write_csv(tmp_path / 'd.csv', [[10 * i + j for j in range(4)] for i in range(10)])
    it = mx.io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape=(4,), batch_size=4,
                       round_batch=False)
    for _ in range(2):
        got = [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
        # The short batch keeps the previous batch's rows in its last two places.
        assert got == [([0, 10, 20, 30], 0), ([40, 50, 60, 70], 0), ([80, 90, 60, 70], 2)]
        it.reset()
    assert it.next().label[0].asnumpy().tolist() == [0, 0, 0, 0]  # no label file: zeros
    big = 2 ** 53 + 1
    _write_csv(tmp_path / 'big.csv', [[big, 1], [2, 3]])
    it = mx.io.CSVIter(data_csv=str(tmp_path / 'big.csv'), data_shape=(2,), batch_size=2,
                       dtype='int64')
    batch = it.next()
    assert batch.data[0].dtype == np.int64 and int(batch.data[0].asnumpy()[0, 0]) == big


def test_csv_iter_errors(tmp_path):
    _write_csv(tmp_path / 'd.csv', [[1, 2, 3, 4]] * 3)
    path = str(tmp_path / 'd.csv')
    with pytest.raises(mx.MXNetError, match='do not match size of shape'):
        mx.io.CSVIter(data_csv=path, data_shape=(3,))
    with pytest.raises(mx.MXNetError, match='cannot find'):
        mx.io.CSVIter(data_csv=str(tmp_path / 'missing.csv'), data_shape=(4,))
    with pytest.raises(mx.MXNetError, match='bigger than batch size'):
        mx.io.CSVIter(data_csv=path, data_shape=(4,), batch_size=7).next()
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.io.CSVIter(data_csv=path, data_shape=(4,), dtype='float16')
    _write_csv(tmp_path / 'bad.csv', [[1, 'x']])
    with pytest.raises(mx.MXNetError, match='line 1'):
        mx.io.CSVIter(data_csv=str(tmp_path / 'bad.csv'), data_shape=(2,))
