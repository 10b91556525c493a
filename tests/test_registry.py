"""The registry validates every op definition as it registers it (issue #13): a default that
does not parse, a schema entry without a name (a gap in a designated-initializer table), an
attribute declared twice. The error names the op and the attribute; the real registry is clean
(the import itself would fail otherwise)."""
import pytest

import hybridgluon as mx
from hybridgluon import _core


def test_real_registry_validates_clean():
    _core._registry_check()
    assert len(_core.list_ops()) > 100


def test_good_definition_passes():
    _core._validate_op_def('myop', [('axis', 'int', '-1'), ('kernel', 'tuple', '(3, 3)'),
                                    ('mode', 'enum', 'b'), ('dtype', 'dtype', 'float32'),
                                    ('flag', 'bool', 'False'), ('eps', 'float', '1e-5'),
                                    ('ctx', 'string', ''), ('opt', 'int', None)])


@pytest.mark.parametrize('attrs, words', [
    ([('axis', 'int', 'x')], ['myop', 'axis', "'x'"]),
    ([('kernel', 'tuple', '(3, a)')], ['myop', 'kernel']),
    ([('mode', 'enum', 'c')], ['myop', 'mode']),
    ([('dtype', 'dtype', 'float33')], ['myop', 'dtype']),
    ([('flag', 'bool', 'maybe')], ['myop', 'flag']),
])
def test_bad_default_is_caught(attrs, words):
    with pytest.raises(mx.MXNetError) as e:
        _core._validate_op_def('myop', attrs)
    msg = str(e.value)
    assert 'default' in msg
    for w in words:
        assert w in msg


def test_schema_gap_is_caught():
    with pytest.raises(mx.MXNetError, match=r'myop: schema entry 1 of 3 has no name'):
        _core._validate_op_def('myop', [('a', 'int', '0'), (None, 'int', None),
                                        ('c', 'int', '0')])


def test_duplicate_and_nameless_are_caught():
    with pytest.raises(mx.MXNetError, match='attribute a is declared twice'):
        _core._validate_op_def('myop', [('a', 'int', '0'), ('a', 'float', '0')])
    with pytest.raises(mx.MXNetError, match='no name'):
        _core._validate_op_def(None, [])


def test_op_flags_come_from_c():
    """op_info gives each flag as a named boolean that agrees with the mask; the constants are
    the C values (Python repeats no bit value)."""
    names = {'elemwise': _core.OP_ELEMWISE, 'inplace': _core.OP_INPLACE,
             'random': _core.OP_RANDOM, 'no_inputs': _core.OP_NO_INPUTS,
             'varargs': _core.OP_VARARGS, 'no_grad': _core.OP_NO_GRAD}
    assert len(set(names.values())) == len(names)
    seen = set()
    for op in _core.list_ops():
        info = _core.op_info(op)
        for key, bit in names.items():
            assert info[key] == bool(info['flags'] & bit), (op, key)
            if info[key]:
                seen.add(key)
    assert seen == set(names)
    assert _core.op_info('add_n')['varargs'] and _core.op_info('BlockGrad')['no_grad']


def test_python_tables_match_c_enums():
    """The Python tables keyed by C enum values (dtype flags, grad_req) agree with C's."""
    import numpy as np
    from hybridgluon import autograd, base
    assert _core.DTYPE_FLAGS == {'float32': 0, 'float64': 1, 'float16': 2, 'uint8': 3,
                                 'int32': 4, 'int8': 5, 'int64': 6, 'bool': 7}  # MXNet's flags
    for name, flag in _core.DTYPE_FLAGS.items():
        assert base._NP_TO_FLAG[np.dtype(name)] == flag
        assert base._FLAG_TO_NAME[flag] == name
    assert len(base._FLAG_TO_NP) == len(_core.DTYPE_FLAGS)
    assert autograd._REQS == {'null': _core.GRAD_NULL, 'write': _core.GRAD_WRITE,
                              'add': _core.GRAD_ADD, 'inplace': _core.GRAD_WRITE}
