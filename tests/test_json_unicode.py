"""Symbol JSON with non-ASCII names (B3): MXNet writes them as raw UTF-8; standard JSON writers
(Python's json with ensure_ascii) write \\uXXXX escapes, an emoji as a UTF-16 surrogate pair.
Both load with the same names; a lone surrogate is a parse error naming where it is."""
import json

import pytest

import hybridgluon as mx
from hybridgluon import sym

# Written by MXNet 1.9.1: d = var('données'); e = relu(d, name='ré_😀_日本');
# FullyConnected(e, num_hidden=2, name='fc_é😀').tojson()
MXNET_JSON = (
    '{\n  "nodes": [\n    {\n      "op": "null", \n      "name": "données", \n      "inputs": []'
    '\n    }, \n    {\n      "op": "relu", \n      "name": "ré_😀_日本", \n      "inputs": '
    '[[0, 0, 0]]\n    }, \n    {\n      "op": "null", \n      "name": "fc_é😀_weight", \n     '
    ' "attrs": {"num_hidden": "2"}, \n      "inputs": []\n    }, \n    {\n      "op": "null", '
    '\n      "name": "fc_é😀_bias", \n      "attrs": {"num_hidden": "2"}, \n      "inputs": []'
    '\n    }, \n    {\n      "op": "FullyConnected", \n      "name": "fc_é😀", \n      "attrs":'
    ' {"num_hidden": "2"}, \n      "inputs": [[1, 0, 0], [2, 0, 0], [3, 0, 0]]\n    }\n  ], \n'
    '  "arg_nodes": [0, 2, 3], \n  "node_row_ptr": [0, 1, 2, 3, 4, 5], \n  "heads": [[4, 0, 0]]'
    ', \n  "attrs": {"mxnet_version": ["int", 10901]}\n}')
ARGS = ['données', 'fc_é😀_weight', 'fc_é😀_bias']


def _ours():
    d = sym.var('données')
    e = sym.relu(d, name='ré_😀_日本')
    return sym.FullyConnected(e, num_hidden=2, name='fc_é😀')


def test_we_write_what_mxnet_writes_and_read_it_back(tmp_path):
    assert _ours().tojson() == MXNET_JSON
    theirs = sym.load_json(MXNET_JSON)
    assert theirs.list_arguments() == ARGS
    assert theirs.name == 'fc_é😀'
    assert [s.name for s in theirs.get_internals()] == ['données', 'ré_😀_日本'] + ARGS[1:] + \
        ['fc_é😀']
    f = tmp_path / 'uni-symbol.json'
    _ours().save(str(f))
    assert f.read_bytes() == MXNET_JSON.encode('utf-8')
    assert sym.load(str(f)).tojson() == MXNET_JSON


def test_surrogate_pair_escapes_decode_to_the_same_names(tmp_path):
    escaped = json.dumps(json.loads(MXNET_JSON))  # ensure_ascii: "\ud83d\ude00", "\u00e9"
    assert '\\ud83d\\ude00' in escaped and '😀' not in escaped
    s = sym.load_json(escaped)  # was: SystemError "returned a result with an exception set"
    assert s.list_arguments() == ARGS
    assert s.tojson() == MXNET_JSON
    f = tmp_path / 'esc-symbol.json'
    f.write_text(escaped, encoding='ascii')
    assert sym.load(str(f)).list_arguments() == ARGS
    # every plane: BMP escapes, a pair for U+10000 and U+10FFFF
    text = MXNET_JSON.replace('données', '\\u00e9\\u65e5\\ud800\\udc00\\udbff\\udfff')
    assert sym.load_json(text).list_arguments()[0] == 'é日\U00010000\U0010ffff'


def _with_name(escaped_name):  # the name starts at column 36
    return '{"nodes": [{"op": "null", "name": "%s", "inputs": []}], "arg_nodes": [0], ' \
           '"heads": [[0, 0, 0]]}' % escaped_name


@pytest.mark.parametrize('name, what, column', [
    ('ab\\ud83d', 'high surrogate not followed by a low surrogate', 38),
    ('\\ud83dx', 'high surrogate not followed by a low surrogate', 36),
    ('\\ud83d\\u0041', 'high surrogate not followed by a low surrogate', 36),
    ('\\ud83d\\ud83d', 'high surrogate not followed by a low surrogate', 36),
    ('a\\ude00', 'low surrogate without a high surrogate', 37),
    ('\\ude00\\ud83d', 'low surrogate without a high surrogate', 36),
])
def test_unpaired_surrogate_is_a_parse_error_naming_the_position(name, what, column):
    with pytest.raises(mx.MXNetError, match='line 1, column %d: UTF-16 %s' % (column, what)):
        sym.load_json(_with_name(name))


@pytest.mark.parametrize('name, what', [
    ('\\u0000', 'NUL character'), ('\\ud83d\\u00', 'bad \\\\u escape'), ('\\uZZZZ', 'bad'),
    ('a\\q', 'unknown escape'), ('a\nb', 'line break in string'),
])
def test_other_bad_strings_are_parse_errors(name, what):
    with pytest.raises(mx.MXNetError, match='malformed JSON at line 1, column .*%s' % what):
        sym.load_json(_with_name(name))


def test_lone_surrogate_in_the_python_str_is_an_mxnet_error():
    with pytest.raises(mx.MXNetError, match='character 35 is a lone UTF-16 surrogate'):
        sym.load_json(_with_name('\ud83d'))  # the str itself holds half a pair


def test_control_characters_round_trip_like_mxnet():
    # MXNet escapes only \r \n \\ \t and " and reads other control characters raw.
    s = sym.relu(sym.var('x'), name='a\x01b\x1fc\td\\e"f\x7f')
    text = s.tojson()
    assert '"a\x01b\x1fc\\td\\\\e\\"f\x7f"' in text
    assert sym.load_json(text).name == 'a\x01b\x1fc\td\\e"f\x7f'


def test_internals_and_attrs_with_non_ascii_values():
    x = sym.var('x', __doc__='ключ 😀')
    s = sym.relu(x, name='ρ')
    back = sym.load_json(json.dumps(json.loads(s.tojson())))
    assert back.get_internals()[0].attr('__doc__') == 'ключ 😀'
    assert back.attr_dict() == {'x': {'__doc__': 'ключ 😀'}}


def test_c_reader_rejects_malformed_utf8_bytes():
    # Python always hands the reader valid UTF-8; the C API (hg_predictor_create) takes raw
    # bytes, which must be well-formed UTF-8 so every name the core returns decodes.
    import ctypes
    import os
    lib = ctypes.CDLL(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'))
    lib.hg_predictor_create.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_int, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p)]
    lib.hg_predictor_create.restype = ctypes.c_int
    lib.hg_last_error.restype = ctypes.c_char_p

    def create(name_bytes):
        text = _with_name('N').encode().replace(b'"N"', b'"' + name_bytes + b'"')
        out = ctypes.c_void_p()
        st = lib.hg_predictor_create(text, len(text), None, 0, 1, 0, 0, None, ctypes.byref(out))
        assert out.value is None or st == 0
        if out.value:
            lib.hg_predictor_free.argtypes = [ctypes.c_void_p]
            lib.hg_predictor_free(out)
        return st, lib.hg_last_error().decode('utf-8', 'replace') if st else ''

    for bad in [b'\xff', b'a\xc0\xaf', b'\xed\xa0\x80', b'\xe2\x82', b'\xf4\x90\x80\x80',
                b'\x80', b'\xf0\x9f\x98']:
        st, msg = create(bad)
        assert st != 0 and 'invalid UTF-8 in string' in msg, (bad, msg)
    for good in ['données'.encode(), '😀'.encode(), '\U0010ffff'.encode()]:
        st, msg = create(good)  # parsed; refused later, naming the variable intact
        assert "variable '%s' is neither" % good.decode() in msg, (good, msg)
