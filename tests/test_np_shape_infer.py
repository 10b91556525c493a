"""Symbol shape inference under MXNet's NumPy shape semantics (mx.np_shape): -1 marks an
unknown dimension and None an unknown shape, in what is given and in what comes back; 0 is a
real zero-size dimension and () a scalar's shape. The expected values are MXNet 1.9.1's answers
to the same calls."""
import threading
import warnings

import pytest

import hybridgluon as mx
from hybridgluon import util


@pytest.fixture(autouse=True)
def _off_after():
    yield
    util.set_np_shape(False)


def _xy():
    return mx.sym.var('x'), mx.sym.var('y')


def test_unknown_shape_is_none_and_scalar_is_empty_tuple():
    x, _ = _xy()
    assert mx.sym.sin(x).infer_shape_partial() == ([()], [()], [])
    with mx.np_shape():
        assert mx.sym.sin(x).infer_shape_partial() == ([None], [None], [])
        # () given is a scalar, not an unknown shape.
        assert mx.sym.sin(x).infer_shape_partial(x=()) == ([()], [()], [])
        assert mx.sym.sin(x).infer_shape(x=()) == ([()], [()], [])


@pytest.mark.parametrize('np_shape, given, expected', [
    (False, ((0, 3, 4), (4, 5)), [(0, 3, 5)]),
    (True, ((-1, 3, 4), (4, 5)), [(-1, 3, 5)]),
    (True, ((-1, 3, 4), (4, -1)), [(-1, 3, -1)]),
    (True, ((0, 3, 4), (4, 5)), [(0, 3, 5)]),       # a real zero-size batch
])
def test_dot_partial(np_shape, given, expected):
    x, y = _xy()
    with mx.np_shape(np_shape):
        args, outs, aux = mx.sym.dot(x, y).infer_shape_partial(x=given[0], y=given[1])
    assert args == list(given) and outs == expected and aux == []


def test_zero_dims_are_known_under_np_shape():
    x, y = _xy()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        # Legacy: 0 is unknown, so complete inference fails.
        assert mx.sym.sin(x).infer_shape(x=(2, 0)) == (None, None, None)
    with mx.np_shape():
        assert mx.sym.sin(x).infer_shape(x=(2, 0)) == ([(2, 0)], [(2, 0)], [])
        assert mx.sym.transpose(x).infer_shape_partial(x=(-1, 0, 3)) == \
            ([(-1, 0, 3)], [(3, 0, -1)], [])
        assert mx.sym.batch_dot(x, y).infer_shape_partial(x=(-1, 3, 4), y=(-1, 4, 0)) == \
            ([(-1, 3, 4), (-1, 4, 0)], [(-1, 3, 0)], [])
        e = mx.sym.sin(x).simple_bind(mx.cpu(), x=(2, 0))
        assert e.forward()[0].shape == (2, 0)


def test_infer_shape_incomplete_under_np_shape():
    x, y = _xy()
    with mx.np_shape():
        with pytest.warns(UserWarning, match=r'(?s)-1s in shape.*x: \(-1, 3, 4\)'):
            assert mx.sym.dot(x, y).infer_shape(x=(-1, 3, 4), y=(4, 5)) == (None, None, None)
        with pytest.raises(RuntimeError, match='cannot decide shapes'):
            mx.sym.dot(x, y).simple_bind(mx.cpu(), x=(-1, 3), y=(3, 2))


def test_elementwise_backward_and_params():
    x, y = _xy()
    with mx.np_shape():
        assert (x + y).infer_shape_partial(x=(-1, 3)) == ([(-1, 3), (-1, 3)], [(-1, 3)], [])
        assert (x + y).infer_shape_partial(x=(-1, 3), y=(2, -1)) == \
            ([(2, 3), (2, 3)], [(2, 3)], [])
        emb = mx.sym.Embedding(x, input_dim=10, output_dim=4)
        assert emb.infer_shape_partial(x=(-1, 5)) == ([(-1, 5), (10, 4)], [(-1, 5, 4)], [])
        fc = mx.sym.FullyConnected(x, num_hidden=4)
        assert fc.infer_shape_partial(x=(-1, 5)) == ([(-1, 5), (4, 5), (4,)], [(-1, 4)], [])
        c = mx.sym.var('c')
        assert mx.sym.where(c, x, y).infer_shape_partial(c=(-1, 2), x=(-1, 2)) == \
            ([(-1, 2), (-1, 2), None], [None], [])


def test_variable_shape_attribute_and_slices():
    with mx.np_shape():
        d = mx.sym.var('d', shape=(-1, 20))
        assert mx.sym.slice(d, begin=(None, 3), end=(None, 10)).infer_shape_partial()[1] == \
            [(-1, 7)]
        d = mx.sym.var('d', shape=(0, -1))
        out = mx.sym.slice_axis(d, axis=1, begin=0, end=2)
        assert out.infer_shape_partial() == ([(0, -1)], [(0, -1)], [])


def test_flag_is_per_thread():
    x, y = _xy()
    seen = {}

    def other():
        with mx.np_shape():
            seen['np'] = mx.sym.dot(x, y).infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1]

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen['np'] == [(-1, 3, 5)]
    # This thread keeps the legacy markers.
    assert mx.sym.dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    assert mx.sym.sin(x).infer_shape_partial() == ([()], [()], [])
