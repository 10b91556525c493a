"""MXNet's NumPy shape semantics (mx.np_shape / set_np_shape / use_np_shape) for the classic
NDArray API: a per-thread flag under which () is a scalar shape and 0 a zero-size dimension
for the creation functions and the NDArray file format."""
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, util


@pytest.fixture(autouse=True)
def _off_after():
    yield
    util.set_np_shape(False)


def test_flag_scope_and_previous_state():
    assert mx.is_np_shape() is False
    assert util.set_np_shape(True) is False and mx.is_np_shape() is True
    assert util.set_np_shape(True) is True
    assert util.set_np_shape(False) is True and mx.is_np_shape() is False
    with mx.np_shape():
        assert mx.is_np_shape()
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    with pytest.raises(RuntimeError):
        with mx.np_shape(True):
            raise RuntimeError('boom')
    assert not mx.is_np_shape()              # restored on the way out of an exception


def test_flag_is_per_thread():
    seen = []
    with mx.np_shape():
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
        assert mx.is_np_shape()
    assert seen == [False]


def test_use_np_shape_function_and_class():
    @mx.use_np_shape
    def scalar_one():
        """doc"""
        return nd.ones(())
    assert scalar_one.__name__ == 'scalar_one' and scalar_one.__doc__ == 'doc'
    assert scalar_one().shape == () and not mx.is_np_shape()

    @util.use_np_shape
    class Holder:
        def __init__(self):
            self.x = nd.zeros((2, 0))

        @property
        def state(self):
            return mx.is_np_shape()

        @staticmethod
        def make():
            return nd.ones(())
    h = Holder()
    assert h.x.shape == (2, 0) and h.state is True and Holder.make().shape == ()
    assert not mx.is_np_shape()
    with pytest.raises(TypeError, match='use_np_shape'):
        util.use_np_shape(3)


@pytest.mark.parametrize('shape', [(), (0,), (2, 0), (0, 1, 3, 0)])
@pytest.mark.parametrize('dtype', ['float32', 'int64', 'bool'])
def test_creation_of_scalar_and_zero_size(shape, dtype):
    for f, ref in ((nd.zeros, np.zeros), (nd.ones, np.ones)):
        if shape == ():   # legacy semantics: () is an unknown shape (zero-size is accepted)
            with pytest.raises(mx.MXNetError, match='is not known'):
                f(shape, dtype=dtype)
        with mx.np_shape(shape == () or None):
            x = f(shape, dtype=dtype)
        assert x.shape == shape and x.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(x.asnumpy(), ref(shape, dtype))


def test_array_of_a_scalar_is_0d_in_both_modes():
    for active in (False, True):
        with mx.np_shape(active):
            a = nd.array(np.float64(2.5))
            assert a.shape == () and a.dtype == np.float32 and a.asnumpy() == 2.5
            assert nd.array(3, dtype='int32').asnumpy().dtype == np.int32
            assert (a * 2).asscalar() == 5.0


def test_save_load_follow_the_semantics(tmp_path):
    f = str(tmp_path / 'x')
    zero_size = [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 4), np.float32)]
    # Legacy: V2 records; zero-size arrays are fine, 0-d ones are refused.
    nd.save(f, [nd.array(a) for a in zero_size])
    out = nd.load(f)
    for a, b in zip(zero_size, out):
        assert b.shape == a.shape
        np.testing.assert_array_equal(b.asnumpy(), a)
    with pytest.raises(mx.MXNetError, match='0-d'):
        nd.save(f, [nd.array(1.0)])
    with mx.np_shape():
        with pytest.raises(mx.MXNetError, match='not saved in np shape semantics'):
            nd.load(f)
        arrays = {'s': nd.array(np.float32(7)), 'z': nd.array(zero_size[1]),
                  'm': nd.array(zero_size[0])}
        nd.save(f, arrays)
        out = nd.load(f)
    assert sorted(out) == ['m', 's', 'z']
    assert out['s'].shape == () and out['s'].asscalar() == 7
    assert out['z'].shape == (0, 4)
    np.testing.assert_array_equal(out['m'].asnumpy(), zero_size[0])
    with pytest.raises(mx.MXNetError, match='saved in np shape semantics'):
        nd.load(f)
    with mx.np_shape():                      # bytes: the same rules
        buf = open(f, 'rb').read()
        assert nd.load_frombuffer(buf)['s'].shape == ()
    with pytest.raises(mx.MXNetError, match='saved in np shape semantics'):
        nd.load_frombuffer(buf)


def test_pickle_round_trips_in_either_mode():
    import pickle
    for save_mode in (False, True):
        with mx.np_shape(save_mode):
            blobs = [pickle.dumps(nd.array(a)) for a in
                     (np.float32(3.5), np.zeros((0, 2), np.float32), np.arange(6.0).reshape(2, 3))]
        for load_mode in (False, True):
            with mx.np_shape(load_mode):
                s, z, m = (pickle.loads(b) for b in blobs)
            assert s.shape == () and s.asscalar() == 3.5
            assert z.shape == (0, 2)
            np.testing.assert_array_equal(m.asnumpy(), np.arange(6.0).reshape(2, 3))
    x = nd.zeros((2,))
    x.__setstate__(nd.array(np.float32(1.5)).__getstate__())   # in place, as MXNet's
    assert x.shape == () and x.asscalar() == 1.5
