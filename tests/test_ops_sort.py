"""Ordering ops (topk, sort, argsort) against NumPy stable sorts."""
import numpy as np
import pytest

import hybridgluon as mx

nd = mx.nd

OPS_COVERED = ['topk', 'sort', 'argsort']

DTYPES = ['float32', 'float64', 'int32', 'int64', 'int8', 'uint8']
SHAPES_AXES = [((0,), -1), ((1,), 0), ((7,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1),
               ((2, 0, 3), 2), ((4, 1, 6), -1), ((2, 40, 3), 1)]


def _data(rng, shape, dtype):
    """Small integers, so that every dtype sees many ties."""
    vals = rng.integers(0, 6, size=shape)
    if np.dtype(dtype).kind == 'f':
        return (vals * 0.5 - 1).astype(dtype)
    return vals.astype(dtype)


def _ref_argsort(x, axis, ascend):
    """Stable order; equal values keep index order in both directions."""
    key = x.astype(np.float64)
    if axis is None:
        key = key.reshape(-1)
        axis = 0
    return np.argsort(key if ascend else -key, axis=axis, kind='stable')


def _ref_topk(x, axis, k, ascend):
    order = _ref_argsort(x, axis, ascend)
    flat = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    n = flat.shape[ax]
    k = n if k < 1 else k
    idx = np.take(order, np.arange(k), axis=ax)
    vals = np.take_along_axis(flat, idx, axis=ax)
    mask = np.zeros(flat.shape, dtype=x.dtype)
    np.put_along_axis(mask, idx, 1, axis=ax)
    return vals, idx, mask.reshape(x.shape)


# ------------------------------------------------------------------------------------------------
# sort / argsort
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('shape,axis', SHAPES_AXES + [((3, 4), None), ((0, 2), None)])
@pytest.mark.parametrize('ascend', [True, False])
@pytest.mark.parametrize('dtype', DTYPES)
def test_sort_argsort(shape, axis, ascend, dtype, rng):
    x = _data(rng, shape, dtype)
    order = _ref_argsort(x, axis, ascend)
    ref_vals = np.take_along_axis(x.reshape(-1) if axis is None else x, order,
                                  axis=0 if axis is None else axis)
    xs = nd.array(x, dtype=dtype)
    vals = nd.sort(xs, axis=axis, is_ascend=ascend)
    assert vals.dtype == np.dtype(dtype)
    assert vals.shape == ref_vals.shape
    np.testing.assert_array_equal(vals.asnumpy(), ref_vals)
    idx = nd.argsort(xs, axis=axis, is_ascend=ascend)
    assert idx.dtype == np.float32
    assert idx.shape == order.shape
    np.testing.assert_array_equal(idx.asnumpy(), order)


def test_sort_defaults_ascending_last_axis(rng):
    x = rng.standard_normal((4, 9)).astype(np.float32)
    np.testing.assert_array_equal(nd.sort(nd.array(x)).asnumpy(), np.sort(x, axis=-1))
    np.testing.assert_array_equal(nd.argsort(nd.array(x)).asnumpy(), np.argsort(x, axis=-1))


def test_sort_is_stable_on_ties():
    x = np.array([3, 1, 2, 1, 3, 1, 2], dtype=np.float32)
    np.testing.assert_array_equal(nd.argsort(nd.array(x)).asnumpy(), [1, 3, 5, 2, 6, 0, 4])
    np.testing.assert_array_equal(nd.argsort(nd.array(x), is_ascend=False).asnumpy(),
                                  [0, 4, 2, 6, 1, 3, 5])
    # Long runs of ties across the merge-sort run boundaries.
    y = np.repeat(np.array([2, 0, 1], dtype=np.int32), 100)
    np.testing.assert_array_equal(nd.argsort(nd.array(y, dtype='int32')).asnumpy(),
                                  np.argsort(y, kind='stable'))


@pytest.mark.parametrize('dtype', ['int32', 'int64', 'uint8', 'float16', 'float64'])
def test_argsort_index_dtype(dtype, rng):
    x = rng.standard_normal((3, 50)).astype(np.float32)
    idx = nd.argsort(nd.array(x), dtype=dtype)
    assert idx.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(idx.asnumpy(), np.argsort(x, axis=-1, kind='stable'))


def test_sort_nan_ranks_highest():
    x = np.array([1.0, np.nan, -1.0, np.nan, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(nd.argsort(nd.array(x)).asnumpy(), [2, 4, 0, 1, 3])
    np.testing.assert_array_equal(nd.argsort(nd.array(x), is_ascend=False).asnumpy(),
                                  [1, 3, 0, 4, 2])
    np.testing.assert_array_equal(nd.topk(nd.array(x), k=3).asnumpy(), [1, 3, 0])
    np.testing.assert_array_equal(nd.topk(nd.array(x), k=2, is_ascend=True).asnumpy(), [2, 4])
    np.testing.assert_array_equal(nd.sort(nd.array(x)).asnumpy(), np.sort(x))


def test_sort_large_parallel(rng):
    x = rng.standard_normal((300, 1000)).astype(np.float32)
    np.testing.assert_array_equal(nd.sort(nd.array(x), axis=1).asnumpy(), np.sort(x, axis=1))
    np.testing.assert_array_equal(nd.argsort(nd.array(x), axis=0).asnumpy(),
                                  np.argsort(x, axis=0, kind='stable'))
    y = rng.integers(-1000, 1000, size=200000).astype(np.int64)
    np.testing.assert_array_equal(nd.sort(nd.array(y, dtype='int64'), axis=None).asnumpy(),
                                  np.sort(y))


def test_sort_errors():
    x = nd.array(np.zeros((2, 3)))
    with pytest.raises(mx.MXNetError, match='sort: axis=2 is out of range'):
        nd.sort(x, axis=2)
    with pytest.raises(mx.MXNetError, match='argsort: axis=-3'):
        nd.argsort(x, axis=-3)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'k'"):
        nd.sort(x, k=1)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'kind'"):
        nd.argsort(x, kind='stable')
    with pytest.raises(mx.MXNetError, match='dtype float16 is not supported'):
        nd.sort(nd.array(np.zeros(3), dtype='float16'))
    with pytest.raises(mx.MXNetError, match='not supported for indices'):
        nd.argsort(x, dtype='int8')
    with pytest.raises(mx.MXNetError, match='cannot represent'):
        nd.argsort(nd.array(np.zeros(300)), dtype='uint8')


# ------------------------------------------------------------------------------------------------
# topk
# ------------------------------------------------------------------------------------------------

TOPK_CASES = [((1,), -1, 1), ((7,), -1, 3), ((7,), 0, 7), ((3, 5), -1, 2), ((3, 5), 0, 1),
              ((2, 3, 4), 1, 2), ((2, 0, 4), 2, 3), ((4, 64), -1, 3), ((4, 64), -1, 0),
              ((3, 4), None, 5), ((2, 2, 3), None, 0), ((5, 100, 2), 1, 4)]


@pytest.mark.parametrize('shape,axis,k', TOPK_CASES)
@pytest.mark.parametrize('ascend', [False, True])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32', 'uint8'])
def test_topk(shape, axis, k, ascend, dtype, rng):
    x = _data(rng, shape, dtype)
    xs = nd.array(x, dtype=dtype)
    vals, idx, mask = _ref_topk(x, axis, k, ascend)
    kw = dict(axis=axis, k=k, is_ascend=ascend)

    out = nd.topk(xs, **kw)  # ret_typ='indices' by default
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), idx)

    out = nd.topk(xs, ret_typ='value', **kw)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), vals)

    out = nd.topk(xs, ret_typ='mask', **kw)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), mask)

    both = nd.topk(xs, ret_typ='both', dtype='int32', **kw)
    assert isinstance(both, list) and len(both) == 2
    assert both[0].dtype == np.dtype(dtype) and both[1].dtype == np.int32
    np.testing.assert_array_equal(both[0].asnumpy(), vals)
    np.testing.assert_array_equal(both[1].asnumpy(), idx)


def test_topk_defaults_and_ties():
    x = np.array([[1, 5, 5, 2], [7, 7, 7, 0]], dtype=np.float32)
    # Default: k=1, axis=-1, largest, indices as float32; ties keep the lower index.
    np.testing.assert_array_equal(nd.topk(nd.array(x)).asnumpy(), [[1], [0]])
    np.testing.assert_array_equal(nd.topk(nd.array(x), k=3).asnumpy(), [[1, 2, 3], [0, 1, 2]])
    np.testing.assert_array_equal(nd.topk(nd.array(x), k=2, is_ascend=True).asnumpy(),
                                  [[0, 3], [3, 0]])


def test_topk_heap_path_matches_full_sort(rng):
    # k * 8 <= n selects with a heap; the result must equal the stable full-sort order.
    x = rng.integers(0, 20, size=(50, 400)).astype(np.float32)
    for ascend in (False, True):
        vals, idx, _ = _ref_topk(x, 1, 10, ascend)
        both = nd.topk(nd.array(x), k=10, ret_typ='both', is_ascend=ascend)
        np.testing.assert_array_equal(both[0].asnumpy(), vals)
        np.testing.assert_array_equal(both[1].asnumpy(), idx)


def test_topk_infer_shapes():
    op = mx._core.get_op('topk')
    x = nd.array(np.zeros((2, 5, 3)))
    assert op._infer(x, k=2, axis=1)[0][0] == (2, 2, 3)
    assert op._infer(x, k=2, axis=None)[0][0] == (2,)
    assert op._infer(x, k=2, ret_typ='mask')[0][0] == (2, 5, 3)
    assert [s for s, _ in op._infer(x, k=0, ret_typ='both')] == [(2, 5, 3), (2, 5, 3)]
    # 'value' keeps MXNet's hidden int32 indices (for the gradient); one output is visible
    assert op._infer(x, k=2, ret_typ='value') == [((2, 5, 2), 0), ((2, 5, 2), 4)]
    assert isinstance(nd.topk(x, k=2, ret_typ='value'), nd.NDArray)


def test_topk_errors():
    x = nd.array(np.zeros((2, 5)))
    with pytest.raises(mx.MXNetError, match=r'topk: k=6 must be in \[1, 5\]'):
        nd.topk(x, k=6)
    with pytest.raises(mx.MXNetError, match=r'k=11 must be in \[1, 10\]'):
        nd.topk(x, k=11, axis=None)
    with pytest.raises(mx.MXNetError, match='topk: axis=2 is out of range'):
        nd.topk(x, axis=2)
    with pytest.raises(mx.MXNetError, match='valid values'):
        nd.topk(x, ret_typ='values')
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'largest'"):
        nd.topk(x, largest=True)
    with pytest.raises(mx.MXNetError, match=r'k=1 must be in \[1, 0\]'):
        nd.topk(nd.array(np.zeros((2, 0))))
    with pytest.raises(mx.MXNetError, match='not supported'):
        nd.topk(nd.array(np.zeros(3), dtype='bool'))
