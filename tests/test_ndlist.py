"""nd.save / nd.load / nd.load_frombuffer: MXNet's binary NDArray-list format (.params).

Fixtures written by a real MXNet are not available here, so the MXNet-side bytes are built by
hand from the layout in MXNET_COMPAT.md section 2 (and the spec's 81-byte example).
"""
import glob
import os
import random
import struct
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.ndarray.utils import _save_bytes

DTYPES = ['float32', 'float64', 'float16', 'uint8', 'int32', 'int8', 'int64', 'bool']
FLAGS = {d: i for i, d in enumerate(DTYPES)}

V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA


# ----------------------------------------------------------------------------------------------
# Hand-built files

def header(n):
    return struct.pack('<QQQ', 0x112, 0, n)


def names_block(names):
    if names is None:
        return struct.pack('<Q', 0)
    out = struct.pack('<Q', len(names))
    for nm in names:
        b = nm.encode('utf-8') if isinstance(nm, str) else nm
        out += struct.pack('<Q', len(b)) + b
    return out


def rec_v2(arr, dev=(1, 0), magic=V2, stype=0):
    arr = np.ascontiguousarray(arr)
    flag = FLAGS[arr.dtype.name]
    return (struct.pack('<Iii', magic, stype, arr.ndim) + struct.pack('<%dq' % arr.ndim, *arr.shape)
            + struct.pack('<iii', dev[0], dev[1], flag) + arr.tobytes())


def rec_v1(arr):
    arr = np.ascontiguousarray(arr)
    return (struct.pack('<Ii', V1, arr.ndim) + struct.pack('<%dq' % arr.ndim, *arr.shape)
            + struct.pack('<iii', 1, 0, FLAGS[arr.dtype.name]) + arr.tobytes())


def rec_prev1(arr):
    arr = np.ascontiguousarray(arr)
    return (struct.pack('<I', arr.ndim) + struct.pack('<%dI' % arr.ndim, *arr.shape)
            + struct.pack('<iii', 1, 0, FLAGS[arr.dtype.name]) + arr.tobytes())


def build(records, names=None):
    return header(len(records)) + b''.join(records) + names_block(names)


def load_err(buf, match=None):
    with pytest.raises(mx.MXNetError, match=match) as info:
        mx.nd.load_frombuffer(buf)
    return str(info.value)


def assert_same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# ----------------------------------------------------------------------------------------------
# Round trips

def test_spec_example_81_bytes(tmp_path):
    f = str(tmp_path / 'f')
    mx.nd.save(f, {'a': mx.nd.array([1, 2])})
    expect = bytes.fromhex(
        '1201000000000000' '0000000000000000' '0100000000000000'
        'c9fa93f9' '00000000' '01000000' '0200000000000000'
        '01000000' '00000000' '00000000' '0000803f' '00000040'
        '0100000000000000' '0100000000000000' '61')
    data = open(f, 'rb').read()
    assert len(data) == 81 and data == expect
    assert _save_bytes({'a': mx.nd.array([1, 2])}) == expect
    out = mx.nd.load(f)
    assert list(out) == ['a']
    np.testing.assert_array_equal(out['a'].asnumpy(), [1, 2])
    assert out['a'].dtype == np.float32
    # The same bytes built from the layout description.
    assert build([rec_v2(np.array([1, 2], np.float32))], ['a']) == expect


def test_list_round_trip(tmp_path, rng):
    f = str(tmp_path / 'l.params')
    xs = [mx.nd.array(rng.standard_normal((3, 4))), mx.nd.array(rng.standard_normal(5)),
          mx.nd.array(rng.standard_normal((2, 1, 3, 2)))]
    mx.nd.save(f, xs)
    out = mx.nd.load(f)
    assert isinstance(out, list) and len(out) == 3
    for a, b in zip(xs, out):
        assert_same(a, b)
    assert isinstance(out[0], mx.nd.NDArray)
    # A list file has an empty name block: K = 0 in the last 8 bytes.
    assert open(f, 'rb').read()[-8:] == b'\0' * 8
    assert open(f, 'rb').read() == _save_bytes(xs)


def test_single_ndarray_and_tuple(tmp_path):
    f = str(tmp_path / 's')
    x = mx.nd.array([[1, 2], [3, 4]])
    mx.nd.save(f, x)
    out = mx.nd.load(f)
    assert isinstance(out, list) and len(out) == 1
    assert_same(x, out[0])
    mx.nd.save(f, (x, x + 1))
    out = mx.nd.load(f)
    assert len(out) == 2
    assert_same(x + 1, out[1])


def test_dict_round_trip_keeps_order(tmp_path, rng):
    f = str(tmp_path / 'd.params')
    d = {'zeta': mx.nd.array(rng.standard_normal(3)), 'alpha': mx.nd.ones((2, 2)),
         'arg:dense0_weight': mx.nd.zeros((4, 5)), 'mid': mx.nd.array([7])}
    mx.nd.save(f, d)
    out = mx.nd.load(f)
    assert isinstance(out, dict)
    assert list(out) == list(d)  # file order = dict order
    for k in d:
        assert_same(d[k], out[k])


@pytest.mark.parametrize('dtype', DTYPES)
def test_each_dtype(dtype, rng):
    if dtype == 'bool':
        src = rng.integers(0, 2, (3, 5)).astype(bool)
    elif dtype.startswith('float'):
        src = rng.standard_normal((3, 5)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        src = rng.integers(max(info.min, -1000), min(info.max, 1000), (3, 5)).astype(dtype)
    x = mx.nd.array(src, dtype=dtype)
    buf = _save_bytes({'x': x})
    # The record's type flag and the raw bytes are MXNet's.
    assert buf == build([rec_v2(src)], ['x'])
    out = mx.nd.load_frombuffer(buf)['x']
    assert out.dtype == np.dtype(dtype).type
    np.testing.assert_array_equal(out.asnumpy(), src)


@pytest.mark.parametrize('shape', [(0,), (3, 0), (0, 2, 5), (1,), (1, 1, 1)])
def test_zero_size_and_one_element(shape):
    x = mx.nd.zeros(shape)
    out = mx.nd.load_frombuffer(_save_bytes([x]))
    assert out[0].shape == shape and out[0].dtype == np.float32


def test_empty_list_and_empty_dict(tmp_path):
    f = str(tmp_path / 'e')
    mx.nd.save(f, [])
    assert open(f, 'rb').read() == header(0) + struct.pack('<Q', 0)
    assert mx.nd.load(f) == []
    mx.nd.save(f, {})
    assert mx.nd.load(f) == []  # MXNet: an empty dict reloads as []


def test_many_arrays(rng):
    xs = {'p%d' % i: mx.nd.array(rng.standard_normal(i % 7 + 1)) for i in range(500)}
    out = mx.nd.load_frombuffer(_save_bytes(xs))
    assert list(out) == list(xs)
    for k in ('p0', 'p123', 'p499'):
        assert_same(xs[k], out[k])


def test_unicode_names():
    d = {'héllo': mx.nd.array([1]), '权重': mx.nd.array([2]), 'emoji🙂': mx.nd.array([3]),
         '': mx.nd.array([4])}
    buf = _save_bytes(d)
    assert buf == build([rec_v2(np.array([v], np.float32)) for v in (1, 2, 3, 4)], list(d))
    out = mx.nd.load_frombuffer(buf)
    assert list(out) == list(d)
    assert out['权重'].asscalar() == 2


def test_view_and_large_array(tmp_path, rng):
    base = mx.nd.array(rng.standard_normal((6, 4)))
    view = base[2:5]
    out = mx.nd.load_frombuffer(_save_bytes([view]))
    np.testing.assert_array_equal(out[0].asnumpy(), base.asnumpy()[2:5])
    big = mx.nd.array(rng.standard_normal((512, 1024)))  # 2 MiB through the file path
    f = str(tmp_path / 'big')
    mx.nd.save(f, {'big': big})
    assert_same(big, mx.nd.load(f)['big'])


def test_overwrite_and_pathlike(tmp_path):
    p = tmp_path / 'o.params'
    mx.nd.save(p, [mx.nd.ones((100,))])
    mx.nd.save(str(p), [mx.nd.array([5])])
    out = mx.nd.load(p)
    assert len(out) == 1 and out[0].asscalar() == 5
    assert os.listdir(tmp_path) == ['o.params']


def test_load_frombuffer_accepts_bytes_like():
    buf = _save_bytes([mx.nd.array([1, 2, 3])])
    for b in (buf, bytearray(buf), memoryview(buf)):
        np.testing.assert_array_equal(mx.nd.load_frombuffer(b)[0].asnumpy(), [1, 2, 3])
    with pytest.raises(TypeError):
        mx.nd.load_frombuffer([1, 2])


def test_concurrent_saves_same_path(tmp_path):
    f = str(tmp_path / 'c')
    xs = [mx.nd.full((1000,), i) for i in range(8)]
    errors = []

    def work(i):
        try:
            for _ in range(5):
                mx.nd.save(f, [xs[i]])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    out = mx.nd.load(f)[0].asnumpy()
    assert (out == out[0]).all() and 0 <= out[0] < 8  # one whole file, not a mix
    assert os.listdir(tmp_path) == ['c']


# ----------------------------------------------------------------------------------------------
# Older and other record kinds (read compatibility)

def test_read_v1_and_pre_v1_records():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, -2, 3], np.int64)
    c = np.array([[7]], np.uint8)
    buf = build([rec_v1(a), rec_prev1(b), rec_v2(c)], ['a', 'b', 'c'])
    out = mx.nd.load_frombuffer(buf)
    np.testing.assert_array_equal(out['a'].asnumpy(), a)
    np.testing.assert_array_equal(out['b'].asnumpy(), b)
    assert out['b'].dtype == np.int64
    np.testing.assert_array_equal(out['c'].asnumpy(), c)
    # pre-V1 only: a list file
    out = mx.nd.load_frombuffer(build([rec_prev1(a), rec_prev1(np.zeros((0, 2), np.float64))]))
    np.testing.assert_array_equal(out[0].asnumpy(), a)
    assert out[1].shape == (0, 2) and out[1].dtype == np.float64


def test_read_v3_scalar_and_gpu_saved_arrays():
    s = np.array(2.5, np.float32)
    rec = struct.pack('<Iii', V3, 0, 0) + struct.pack('<iii', 1, 0, 0) + s.tobytes()
    with mx.np_shape():  # V3 records load only there, as in MXNet
        out = mx.nd.load_frombuffer(build([rec, rec_v2(np.ones(3, np.float32), magic=V3)]))
    assert out[0].shape == () and out[0].asnumpy() == 2.5
    assert out[1].shape == (3,)
    # Saved from gpu(1), cpu_pinned and cpu_shared: all load onto the CPU.
    devs = [(2, 1), (3, 0), (5, 0)]
    recs = [rec_v2(np.array([i], np.float32), dev=d) for i, d in enumerate(devs)]
    out = mx.nd.load_frombuffer(build(recs))
    assert [o.asscalar() for o in out] == [0, 1, 2]
    assert all(o.context == mx.cpu(0) for o in out)


def test_duplicate_names_keep_last():
    buf = build([rec_v2(np.array([1], np.float32)), rec_v2(np.array([2], np.float32))],
                ['w', 'w'])
    assert mx.nd.load_frombuffer(buf)['w'].asscalar() == 2


def test_trailing_bytes_ignored():
    buf = build([rec_v2(np.array([1], np.float32))]) + b'junk'
    assert mx.nd.load_frombuffer(buf)[0].asscalar() == 1


# ----------------------------------------------------------------------------------------------
# Unsupported content: clear errors naming the record

def test_none_array_is_an_error():
    none_v2 = struct.pack('<Iii', V2, -1, 0)
    msg = load_err(build([rec_v2(np.ones(2, np.float32)), none_v2]), 'none arrays')
    assert 'record 1 of 2' in msg
    load_err(build([struct.pack('<I', 0)]), 'none arrays')       # pre-V1 ndim 0
    load_err(build([struct.pack('<Ii', V1, 0)]), 'none arrays')  # V1 ndim 0
    with mx.np_shape():
        load_err(build([struct.pack('<Iii', V3, 0, -1)]), 'none arrays')


@pytest.mark.parametrize('stype,name', [(1, 'row_sparse'), (2, 'csr')])
def test_sparse_is_unsupported(stype, name):
    rec = struct.pack('<Iii', V2, stype, 1) + struct.pack('<q', 4) + b'\0' * 40
    msg = load_err(build([rec_v2(np.ones(1, np.float32)), rec], ['a', 'b']))
    assert name in msg and 'not supported' in msg and 'record 1 of 2' in msg


@pytest.mark.parametrize('flag,name', [(8, 'int16'), (9, 'uint16'), (10, 'uint32'),
                                       (11, 'uint64'), (12, 'bfloat16')])
def test_other_mxnet_dtypes_unsupported(flag, name):
    rec = struct.pack('<Iiiq', V2, 0, 1, 2) + struct.pack('<iii', 1, 0, flag) + b'\0' * 16
    msg = load_err(build([rec]))
    assert name in msg and 'flag %d' % flag in msg and 'record 0' in msg


def test_invalid_type_flag_and_device():
    rec = struct.pack('<Iiiq', V2, 0, 1, 2) + struct.pack('<iii', 1, 0, 13) + b'\0' * 16
    load_err(build([rec]), 'invalid type flag 13')
    rec = struct.pack('<Iiiq', V2, 0, 1, 2) + struct.pack('<iii', 7, 0, 0) + b'\0' * 16
    load_err(build([rec]), 'unknown device type 7')


def test_save_rejects_bad_input(tmp_path):
    f = str(tmp_path / 'x')
    x = mx.nd.ones((2,))
    with pytest.raises(TypeError):
        mx.nd.save(f, [x, np.ones(2)])
    with pytest.raises(TypeError):
        mx.nd.save(f, {1: x})
    with pytest.raises(TypeError):
        mx.nd.save(f, {'a': 1.0})
    with pytest.raises(ValueError):
        mx.nd.save(f, 3)
    with pytest.raises(ValueError):
        mx.nd.save(f, 'abc')
    with pytest.raises(TypeError):
        mx.nd.save(5, [x])
    with pytest.raises(TypeError):
        mx.nd.load(5)
    with pytest.raises(ValueError):
        mx.nd.save(f, {'a\0b': x})
    scalar = mx.nd.from_dlpack(np.array(1.0, np.float32))
    assert scalar.shape == ()
    with pytest.raises(mx.MXNetError, match='0-d'):
        mx.nd.save(f, [x, scalar])
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------------------------
# Malformed input: always MXNetError, never a crash

def small_file():
    return _save_bytes({'w': mx.nd.array([[1, 2, 3], [4, 5, 6]]),
                        'b': mx.nd.array([1, 0], dtype='bool'),
                        'i': mx.nd.array([7], dtype='int64')})


def test_truncated_at_every_offset(tmp_path):
    buf = small_file()
    assert len(mx.nd.load_frombuffer(buf)) == 3
    for n in range(len(buf)):
        load_err(buf[:n])
    # The file path streams instead of slicing memory: check it too, at a stride.
    f = str(tmp_path / 't')
    for n in list(range(0, len(buf), 7)) + [len(buf) - 1]:
        with open(f, 'wb') as fh:
            fh.write(buf[:n])
        with pytest.raises(mx.MXNetError, match="'%s'" % f):
            mx.nd.load(f)


def test_truncation_messages():
    buf = small_file()
    msg = load_err(buf[:60])
    assert 'record 0 of 3' in msg and 'truncated' in msg
    assert 'record 1 of 3' in load_err(buf[:100])
    assert 'name' in load_err(buf[:-1])


def test_byte_flips_load_or_raise():
    buf = small_file()
    r = random.Random(1234)
    outcomes = {'ok': 0, 'err': 0}
    for _ in range(3000):
        b = bytearray(buf)
        for _ in range(r.randint(1, 3)):
            pos = r.randrange(len(b))
            b[pos] = r.choice([b[pos] ^ (1 << r.randrange(8)), r.randrange(256), 0xff, 0])
        try:
            mx.nd.load_frombuffer(bytes(b))
            outcomes['ok'] += 1
        except mx.MXNetError:
            outcomes['err'] += 1
    assert outcomes['ok'] > 0 and outcomes['err'] > 0


def test_every_single_byte_set_to_ff():
    buf = small_file()
    for pos in range(len(buf)):
        b = bytearray(buf)
        b[pos] = 0xff if b[pos] != 0xff else 0
        try:
            mx.nd.load_frombuffer(bytes(b))
        except mx.MXNetError:
            pass


def test_huge_dims_fail_fast_without_allocating():
    # 2^40 float32 elements claimed by a ~100-byte file.
    rec = struct.pack('<Iiiqq', V2, 0, 2, 1 << 20, 1 << 20) + struct.pack('<iii', 1, 0, 0)
    buf = build([rec + b'\0' * 16])
    assert len(buf) < 120
    msg = load_err(buf, 'larger than')
    assert '[1048576,1048576]' in msg and 'record 0' in msg
    # Products that overflow 64 bits.
    rec = struct.pack('<Iii', V2, 0, 4) + struct.pack('<4q', *[(1 << 62) - 1] * 4)
    load_err(build([rec + struct.pack('<iii', 1, 0, 6)]), 'larger than')
    # pre-V1 with 32-bit dims
    rec = struct.pack('<I3I', 3, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF) + struct.pack('<iii', 1, 0, 1)
    load_err(build([rec]), 'larger than')


def test_absurd_counts_fail_fast():
    load_err(header(1 << 62) + b'\0' * 64, 'array count')
    load_err(header(0xFFFFFFFFFFFFFFFF), 'array count')
    # name count that is neither 0 nor N
    load_err(build([rec_v2(np.ones(1, np.float32))], ['a', 'b']), '2 names for 1 arrays')
    # a name length of 2^63
    buf = build([rec_v2(np.ones(1, np.float32))])[:-8] + struct.pack('<QQ', 1, 1 << 63) + b'a'
    load_err(buf, 'name length')


def test_bad_ndim_and_dims():
    for nd in (11, 64, -2, 1 << 30):
        rec = struct.pack('<Iii', V2, 0, nd) + b'\0' * 200
        load_err(build([rec]), 'ndim')
    rec = struct.pack('<Iiiq', V2, 0, 1, -3) + struct.pack('<iii', 1, 0, 0)
    load_err(build([rec]), 'negative')
    load_err(build([struct.pack('<I', 0x12345) + b'\0' * 40]), 'unknown record type')
    load_err(build([struct.pack('<Iii', V2, 7, 1)]), 'unknown storage type 7')


def test_wrong_magic_message(tmp_path):
    f = str(tmp_path / 'notparams.json')
    with open(f, 'w') as fh:
        fh.write('{"nodes": [], "arg_nodes": [], "heads": []}')
    with pytest.raises(mx.MXNetError) as info:
        mx.nd.load(f)
    msg = str(info.value)
    assert 'Invalid NDArray file format' in msg and f in msg and 'magic' in msg
    load_err(b'', 'Invalid NDArray file format')
    load_err(b'\x12\x01', 'Invalid NDArray file format')


def test_invalid_utf8_name():
    buf = build([rec_v2(np.ones(1, np.float32))], [b'\xff\xfe'])
    load_err(buf, 'UTF-8')


def test_load_missing_file_and_directory(tmp_path):
    with pytest.raises(mx.MXNetError, match='No such file'):
        mx.nd.load(str(tmp_path / 'nope'))
    with pytest.raises(mx.MXNetError, match='directory'):
        mx.nd.load(str(tmp_path))


# ----------------------------------------------------------------------------------------------
# Failed saves leave nothing behind

def test_failed_save_leaves_no_file(tmp_path):
    x = [mx.nd.ones((3,))]
    missing = tmp_path / 'no_such_dir' / 'f.params'
    with pytest.raises(mx.MXNetError, match='No such file'):
        mx.nd.save(str(missing), x)
    assert not missing.parent.exists()
    # Saving over a directory: the rename fails after the data was written.
    d = tmp_path / 'adir'
    d.mkdir()
    with pytest.raises(mx.MXNetError, match="Cannot save NDArray file '%s'" % d):
        mx.nd.save(str(d), x)
    assert sorted(os.listdir(tmp_path)) == ['adir']
    assert glob.glob(str(tmp_path / '*.tmp.*')) == []
    # An existing file survives a failed save untouched.
    good = tmp_path / 'good.params'
    mx.nd.save(str(good), x)
    before = good.read_bytes()
    with pytest.raises(TypeError):
        mx.nd.save(str(good), [x[0], 'not an array'])
    assert good.read_bytes() == before


_FSIZE_SCRIPT = """
import resource, signal, sys
sys.path.insert(0, sys.argv[2])
import hybridgluon as mx
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    mx.nd.save(sys.argv[1], [mx.nd.ones((100000,))])
except mx.MXNetError as e:
    print(e)
"""


def test_write_error_reports_strerror_and_cleans_up(tmp_path):
    # A file-size limit makes the write fail half-way (EFBIG) in a child process.
    from conftest import run_python
    f = tmp_path / 'w.params'
    mx.nd.save(str(f), [mx.nd.array([1, 2])])
    before = f.read_bytes()
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    out = run_python(['-c', _FSIZE_SCRIPT, str(f), root], timeout=60)
    assert "Cannot save NDArray file '%s': File too large" % f in out.stdout, out
    assert os.listdir(tmp_path) == ['w.params']
    assert f.read_bytes() == before


def test_save_keeps_permissions_and_symlinks(tmp_path):
    f = tmp_path / 'private.params'
    mx.nd.save(str(f), [mx.nd.array([1])])
    os.chmod(f, 0o600)
    mx.nd.save(str(f), [mx.nd.array([2])])
    assert (os.stat(f).st_mode & 0o777) == 0o600
    link = tmp_path / 'link.params'
    os.symlink('private.params', link)
    mx.nd.save(str(link), [mx.nd.array([3])])
    assert os.path.islink(link)
    assert mx.nd.load(str(f))[0].asscalar() == 3
    assert sorted(os.listdir(tmp_path)) == ['link.params', 'private.params']


def test_save_into_fifo_writes_in_place(tmp_path):
    fifo = str(tmp_path / 'pipe')
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, 'rb') as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader)
    t.start()
    x = {'a': mx.nd.array([1, 2])}
    mx.nd.save(fifo, x)
    t.join(10)
    assert got == [_save_bytes(x)]
    assert os.listdir(tmp_path) == ['pipe']
