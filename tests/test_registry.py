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
