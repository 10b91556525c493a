"""Op attributes given as NumPy values (issue #12): strings are made from the values, so NumPy
1.x and 2.x give MXNet's spelling ('(1, 0)', never '(np.int64(1), np.int64(0))'), and nd.*,
sym.* and Gluon layers accept NumPy scalars of every kind. Runs under either NumPy major."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, sym
from hybridgluon.gluon import nn
from hybridgluon.symbol.symbol import _attr_str

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize('kind', INTS)
def test_int_scalars_and_tuples_are_spelled_as_python_ints(kind):
    assert _attr_str(kind(3)) == '3'
    assert _attr_str((kind(1), kind(0))) == '(1, 0)'
    assert _attr_str((kind(2),)) == '(2,)'
    assert _attr_str([kind(2), kind(5)]) == '[2, 5]'
    assert _attr_str(tuple(np.array([1, 0], dtype=kind))) == '(1, 0)'


def test_bool_float_nested_and_mixed_values():
    assert _attr_str(np.bool_(True)) == 'True'
    assert _attr_str(np.bool_(False)) == 'False'
    assert _attr_str((np.bool_(True), False)) == '(True, False)'
    # NumPy floats keep their own shortest digits (str(np.float32(0.1)) is '0.1' in 1.x and 2.x)
    assert _attr_str(np.float32(0.1)) == '0.1'
    assert _attr_str(np.float16(0.5)) == '0.5'
    assert _attr_str(np.float64(1e-7)) == '1e-07'
    assert _attr_str((np.float32(0.25), np.float64(2.0))) == '(0.25, 2.0)'
    assert _attr_str(np.array(7)) == '7'  # 0-d arrays are scalars too
    assert _attr_str(((np.int64(1), np.int32(2)), [np.uint8(3)])) == '((1, 2), [3])'
    assert _attr_str((np.int64(0), None, -1)) == '(0, None, -1)'
    assert _attr_str(('a', np.str_('b'))) == "('a', 'b')"
    assert _attr_str(()) == '()'
    # Python values are unchanged: exactly str() as MXNet's front end does
    for v in [3, -1, 0.1, 1e20, True, None, (1, 2), [3], 'relu', (0.5,)]:
        assert _attr_str(v) == str(v)


def test_strings_match_python_ints_under_every_op_builder():
    a = sym.var('a')
    assert sym.transpose(a, axes=tuple(np.array([1, 0]))).attr('axes') == '(1, 0)'
    assert sym.reshape(a, shape=list(np.array([2, -1]))).attr('shape') == '[2, -1]'
    s = sym.sum(a, axis=(np.int32(1),), keepdims=np.bool_(True))
    assert (s.attr('axis'), s.attr('keepdims')) == ('(1,)', 'True')
    s = sym.clip(a, a_min=np.float32(0.1), a_max=np.float64(0.7))
    assert (s.attr('a_min'), s.attr('a_max')) == ('0.1', '0.7')
    s = sym.slice(a, begin=(np.int64(0), None), end=(np.int32(2), None))
    assert (s.attr('begin'), s.attr('end')) == ('(0, None)', '(2, None)')
    assert a.reshape((np.int64(2), -1)).attr('shape') == '(2, -1)'
    assert sym.var('x', shape=(np.int64(2), np.int64(3))).attr('__shape__') == '(2, 3)'
    assert sym.var('x', __foo__=(np.float32(0.5),)).attr('__foo__') == '(0.5,)'
    s = sym.relu(a, attr={'__shape__': (np.int64(2),), '__x__': 'y'})
    assert s.list_attr() == {'__shape__': '(2,)', '__x__': 'y'}
    assert 'np.' not in sym.transpose(a, axes=(np.int64(1), np.int64(0))).tojson()


def test_symbol_arithmetic_with_numpy_scalars_on_either_side():
    a = sym.var('a')
    x = nd.array([[1.0, 2.0]])
    for v in [np.float32(2), np.int64(2), np.float64(2)]:
        for s, want in [(a + v, [[3, 4]]), (v + a, [[3, 4]]), (v - a, [[1, 0]]),
                        (a * v, [[2, 4]]), (a / v, [[0.5, 1]])]:
            assert isinstance(s, sym.Symbol), (type(v), s)
            np.testing.assert_allclose(s.eval(a=x)[0].asnumpy(), want)


def test_imperative_ops_take_numpy_scalars():
    x = nd.ones((2, 3))
    assert nd.transpose(x, axes=tuple(np.array([1, 0]))).shape == (3, 2)
    assert nd.sum(x, axis=(np.int32(1),), keepdims=np.bool_(True)).shape == (2, 1)
    assert nd.sum(x, axis=1, keepdims=np.bool_(False)).shape == (2,)
    np.testing.assert_allclose(nd.clip(x * 0.5, a_min=np.float32(0.1),
                                       a_max=np.float64(0.25)).asnumpy(), 0.25)
    assert nd.reshape(x, shape=(np.uint8(3), np.uint16(2))).shape == (3, 2)
    # a NumPy bool is a truth value, never an integer (as a Python bool is not)
    with pytest.raises(mx.MXNetError, match='expect int'):
        nd.one_hot(nd.array([0, 1]), depth=np.bool_(True))
    with pytest.raises(mx.MXNetError, match='expect int'):
        nd.one_hot(nd.array([0, 1]), depth=True)


def test_attribute_strings_without_utf8_form_are_errors_not_crashes():
    x = nd.ones((2, 3))
    # A lone surrogate has no UTF-8: it used to reach the attribute parser as NULL (SIGSEGV).
    with pytest.raises(mx.MXNetError, match="axes expect Shape"):
        nd.transpose(x, axes='\ud800')
    with pytest.raises(mx.MXNetError, match="dtype expect dtype"):
        nd.cast(x, dtype='\ud800')
    with pytest.raises(mx.MXNetError, match="axes expect Shape"):
        nd.transpose(x, axes=[object()])


@pytest.mark.parametrize('hybridize', [False, True])
def test_gluon_layers_built_from_numpy_ints(hybridize, tmp_path):
    x = nd.ones((1, 2, 5, 5))
    conv = nn.Conv2D(np.int64(4), kernel_size=(np.int64(3),) * 2, strides=np.int32(1),
                     padding=(np.int64(1),) * 2)
    dense = nn.Dense(np.int64(3), in_units=np.int64(100))
    bn = nn.BatchNorm(axis=np.int64(1), momentum=np.float32(0.9), epsilon=np.float32(1e-5))
    net = nn.HybridSequential()
    net.add(conv, bn, dense)
    net.initialize()
    if hybridize:
        net.hybridize()
    assert net(x).shape == (1, 3)
    if hybridize:
        net.export(str(tmp_path / 'm'))
        text = (tmp_path / 'm-symbol.json').read_text()
        assert '"kernel": "(3, 3)"' in text and 'np.' not in text
        back = mx.gluon.SymbolBlock.imports(str(tmp_path / 'm-symbol.json'), ['data'],
                                            str(tmp_path / 'm-0000.params'))
        np.testing.assert_allclose(back(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)


# What MXNet 1.9.1 (NumPy 1.23) stores for the same calls (list_attr() of each node).
MXNET_ATTRS = {'t': {'axes': '(1, 0)'}, 's': {'keepdims': 'True', 'axis': '(1,)'},
               'c': {'a_max': '0.7', 'a_min': '0.1'}, 'r': {'shape': '[-1, 1]'},
               'sl': {'end': '(2, None)', 'begin': '(0, None)'}}


def test_same_strings_as_mxnet_with_numpy_1():
    a = sym.var('a')
    s = sym.transpose(a, axes=tuple(np.array([1, 0])), name='t')
    s = sym.sum(s, axis=(np.int32(1),), keepdims=np.bool_(True), name='s')
    s = sym.clip(s, a_min=np.float32(0.1), a_max=np.float64(0.7), name='c')
    s = sym.reshape(s, shape=[np.int64(-1), np.uint8(1)], name='r')
    s = sym.slice(s, begin=(np.int64(0), None), end=(np.int32(2), None), name='sl')
    internals = s.get_internals()
    got = {n: internals[n + '_output'].list_attr() for n in MXNET_ATTRS}
    assert got == MXNET_ATTRS


def test_narrow_numpy_floats_read_as_their_decimal_spelling():
    """A float32/float16 NumPy scalar given as an op's double attribute is read from its
    string, as MXNet 1.9.1 reads every attribute (str(np.float32(0.1)) is '0.1'), while
    NDArray arithmetic converts the scalar's value, as MXNet's does too. Values observed under
    MXNet 1.9.1: _mul_scalar(x, scalar=v) gives [0.1, 0.2, 0.30000000000000004], x * v gives
    float(v) * x (0.10000000149011612... for float32)."""
    x = nd.array([1.0, 2.0, 3.0], dtype='float64')
    for v in (np.float32(0.1), np.float16(0.1), np.float64(0.1), 0.1):
        np.testing.assert_array_equal(nd._mul_scalar(x, scalar=v).asnumpy(),
                                      [0.1, 0.2, 0.30000000000000004])
        np.testing.assert_array_equal(nd.full((1,), v, dtype='float64').asnumpy(), [0.1])
        np.testing.assert_array_equal(nd.arange(0, 0.25, v, dtype='float64').asnumpy(),
                                      [0.0, 0.1, 0.2])
        np.testing.assert_array_equal((x * v).asnumpy(), np.array([1.0, 2.0, 3.0]) * float(v))
