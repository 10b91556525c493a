"""mx.recordio: byte compatibility with files real MXNet 1.9.1 wrote (tests/mxnet_ref/recordio/,
made by tests/mxnet_ref/gen_recordio.py), the chunk format against an independent parser,
pack/unpack, images, pickling and errors."""
import os
import pickle
import random
import struct
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.base import MXNetError

REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref', 'recordio')
MAGIC = 0xced7230a


def _payloads():
    d = np.load(os.path.join(REF, 'expected.npz'))
    blob, out, pos = d['payloads_blob'].tobytes(), [], 0
    for n in d['payloads_len']:
        out.append(blob[pos:pos + n])
        pos += n
    return out


def _chunks(data):
    """Independent reading of dmlc's format: [(cflag, payload)] of every chunk, checking the
    magic and the zero padding."""
    out, pos = [], 0
    while pos < len(data):
        magic, lrec = struct.unpack_from('<II', data, pos)
        assert magic == MAGIC
        n, cflag = lrec & ((1 << 29) - 1), lrec >> 29
        out.append((cflag, data[pos + 8:pos + 8 + n]))
        pad = -n % 4
        assert data[pos + 8 + n:pos + 8 + n + pad] == b'\0' * pad
        pos += 8 + n + pad
    return out


def _join(chunks):
    """Records from chunks: a record ends at cflag 0 or 3; split points held the magic."""
    records, cur = [], []
    for cflag, p in chunks:
        cur.append(p)
        if cflag in (0, 3):
            records.append(struct.pack('<I', MAGIC).join(cur))
            cur = []
    assert not cur
    return records


def test_writer_bytes_equal_mxnet(tmp_path):
    payloads = _payloads()
    idx, rec = str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec')
    w = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    w.close()
    for ext in ('rec', 'idx'):
        with open(os.path.join(REF, 'payloads.' + ext), 'rb') as f:
            want = f.read()
        with open(str(tmp_path / ('a.' + ext)), 'rb') as f:
            assert f.read() == want, ext


def test_reader_reads_mxnet_file():
    payloads = _payloads()
    r = mx.recordio.MXRecordIO(os.path.join(REF, 'payloads.rec'), 'r')
    for p in payloads:
        assert r.read() == p
    assert r.read() is None
    r.reset()
    assert r.read() == payloads[0]
    r.close()
    r = mx.recordio.MXIndexedRecordIO(os.path.join(REF, 'payloads.idx'),
                                      os.path.join(REF, 'payloads.rec'), 'r')
    assert r.keys == list(range(len(payloads)))
    order = list(range(len(payloads)))
    random.Random(3).shuffle(order)
    for i in order:
        assert r.read_idx(i) == payloads[i]


def test_random_payloads_split_at_aligned_magic(tmp_path):
    rng = np.random.RandomState(5)
    magic = struct.pack('<I', MAGIC)
    payloads = []
    for _ in range(200):
        parts = [rng.randint(0, 256, rng.randint(0, 12)).astype(np.uint8).tobytes()
                 for _ in range(rng.randint(1, 5))]
        payloads.append(magic.join(parts) if rng.rand() < 0.7 else b''.join(parts))
    path = str(tmp_path / 'r.rec')
    w = mx.recordio.MXRecordIO(path, 'w')
    for p in payloads:
        w.write(p)
    w.close()
    with open(path, 'rb') as f:
        data = f.read()
    chunks = _chunks(data)
    assert _join(chunks) == payloads
    # A chunk never holds the magic at an aligned offset: a reader resyncing on it would break.
    for _, p in chunks:
        assert all(p[i:i + 4] != magic for i in range(0, len(p) - 3, 4))
    r = mx.recordio.MXRecordIO(path, 'r')
    assert [r.read() for _ in payloads] == payloads and r.read() is None


def test_tell_and_index_file(tmp_path):
    idx, rec = str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec')
    w = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
    assert w.tell() == 0
    expect = 0
    for i in range(5):
        w.write_idx(i, b'record_%d' % i)
        expect += 8 + 8  # chunk header + 'record_i' (8 bytes: no padding)
        assert w.tell() == expect
    w.close()
    with open(idx) as f:
        assert f.read() == ''.join('%d\t%d\n' % (i, 16 * i) for i in range(5))
    r = mx.recordio.MXIndexedRecordIO(idx, rec, 'r', key_type=str)
    assert r.keys == [str(i) for i in range(5)]
    assert r.read_idx('3') == b'record_3'


def test_writer_reset_truncates(tmp_path):
    path = str(tmp_path / 'a.rec')
    w = mx.recordio.MXRecordIO(path, 'w')
    w.write(b'abc')
    w.reset()
    w.write(b'xyz12')  # 5 bytes: 3 of padding
    assert w.handle.tell() == 16
    w.close()
    assert _join(_chunks(open(path, 'rb').read())) == [b'xyz12']


def test_pack_unpack_scalar_and_array_labels():
    h = mx.recordio.IRHeader(7, 2.5, 123456789012, 3)
    s = mx.recordio.pack(h, b'payload')
    # flag is 0 for a scalar label, whatever was passed
    assert s == struct.pack('<IfQQ', 0, 2.5, 123456789012, 3) + b'payload'
    h2, body = mx.recordio.unpack(s)
    assert h2 == (0, 2.5, 123456789012, 3) and body == b'payload'
    label = np.array([1.5, -2.0, 3.25], np.float32)
    s = mx.recordio.pack((0, label, 9, 0), b'xy')
    assert s == struct.pack('<IfQQ', 3, 0.0, 9, 0) + label.tobytes() + b'xy'
    h3, body = mx.recordio.unpack(s)
    assert h3.flag == 3 and h3.id == 9 and body == b'xy'
    np.testing.assert_array_equal(h3.label, label)
    # a list label is stored as float32
    h4, _ = mx.recordio.unpack(mx.recordio.pack((0, [1, 2], 0, 0), b''))
    np.testing.assert_array_equal(h4.label, np.array([1, 2], np.float32))


def test_unpack_rejects_short_records():
    with pytest.raises(MXNetError, match='header'):
        mx.recordio.unpack(b'abc')
    with pytest.raises(MXNetError, match='labels'):
        mx.recordio.unpack(struct.pack('<IfQQ', 4, 0, 0, 0) + b'\0' * 8)


def test_pack_img_unpack_img():
    cv2 = pytest.importorskip('cv2')
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, (20, 30, 3)).astype(np.uint8)
    s = mx.recordio.pack_img((0, 4.0, 1, 0), img, quality=3, img_fmt='.png')
    h, out = mx.recordio.unpack_img(s)
    assert h.label == 4.0
    np.testing.assert_array_equal(out, img)  # PNG is lossless
    _, body = mx.recordio.unpack(s)
    np.testing.assert_array_equal(cv2.imdecode(np.frombuffer(body, np.uint8), -1), img)
    smooth = cv2.GaussianBlur(img, (7, 7), 0)
    s = mx.recordio.pack_img((0, [1, 2], 1, 0), smooth, quality=80)
    h, out = mx.recordio.unpack_img(s)
    np.testing.assert_array_equal(h.label, [1, 2])
    jpg = cv2.imencode('.jpg', smooth, [cv2.IMWRITE_JPEG_QUALITY, 80])[1]
    assert mx.recordio.unpack(s)[1] == jpg.tobytes()
    np.testing.assert_array_equal(out, cv2.imdecode(jpg, cv2.IMREAD_UNCHANGED))
    gray = mx.recordio.unpack_img(mx.recordio.pack_img((0, 0, 0, 0), smooth, quality=9,
                                                       img_fmt='.png'), 0)[1]
    # libpng's grey conversion rounds a little differently from cvtColor's
    assert gray.shape == smooth.shape[:2]
    assert np.abs(gray.astype(int) - cv2.cvtColor(smooth, cv2.COLOR_BGR2GRAY)).max() <= 2
    with pytest.raises(MXNetError, match='decode'):
        mx.recordio.unpack_img(mx.recordio.pack((0, 0, 0, 0), b'not an image'))


def test_missing_opencv_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, 'cv2', None)
    with pytest.raises(MXNetError, match=r'hybridgluon\[image\]'):
        mx.recordio.pack_img((0, 0, 0, 0), np.zeros((2, 2, 3), np.uint8))


def test_pickle_reopens(tmp_path):
    idx, rec = str(tmp_path / 'a.idx'), str(tmp_path / 'a.rec')
    w = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
    for i in range(4):
        w.write_idx(i, b'r%d' % i)
    w.close()
    r = mx.recordio.MXIndexedRecordIO(idx, rec, 'r')
    assert r.read_idx(2) == b'r2'
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.is_open and r2.keys == [0, 1, 2, 3]
    assert r2.read() == b'r0'  # a fresh handle starts at the first record
    assert r2.read_idx(3) == b'r3'
    # pickling closes the original, as MXNet does; it can be reopened
    assert not r.is_open
    r.open()
    assert r.read_idx(1) == b'r1'
    r.close()
    closed = pickle.loads(pickle.dumps(r))
    assert not closed.is_open


def test_forked_reader_reopens_on_seek(tmp_path):
    path = str(tmp_path / 'a.rec')
    idx = str(tmp_path / 'a.idx')
    w = mx.recordio.MXIndexedRecordIO(idx, path, 'w')
    for i in range(3):
        w.write_idx(i, b'%d' % i)
    w.close()
    r = mx.recordio.MXIndexedRecordIO(idx, path, 'r')
    r.pid = -1  # as if this object came from another process
    with pytest.raises(RuntimeError):
        r.read()
    assert r.read_idx(2) == b'2'  # seek reopens the file for this process


def test_errors(tmp_path):
    with pytest.raises(ValueError, match='Invalid flag'):
        mx.recordio.MXRecordIO(str(tmp_path / 'a.rec'), 'x')
    with pytest.raises(MXNetError, match='cannot open'):
        mx.recordio.MXRecordIO(str(tmp_path / 'missing.rec'), 'r')
    bad = tmp_path / 'bad.rec'
    bad.write_bytes(b'\x01\x02\x03\x04\x05\x00\x00\x00abcde')
    with pytest.raises(MXNetError, match='magic'):
        mx.recordio.MXRecordIO(str(bad), 'r').read()
    trunc = tmp_path / 'trunc.rec'
    trunc.write_bytes(struct.pack('<II', MAGIC, 10) + b'abc')
    with pytest.raises(MXNetError, match='truncated'):
        mx.recordio.MXRecordIO(str(trunc), 'r').read()
    split = tmp_path / 'split.rec'
    split.write_bytes(struct.pack('<II', MAGIC, (1 << 29) | 4) + b'abcd')
    with pytest.raises(MXNetError, match='inside a record'):
        mx.recordio.MXRecordIO(str(split), 'r').read()
    w = mx.recordio.MXRecordIO(str(tmp_path / 'w.rec'), 'w')
    with pytest.raises(TypeError):
        w.write('text')
    idx = tmp_path / 'bad.idx'
    idx.write_text('0\tnot-a-number\n')
    with pytest.raises(MXNetError, match='line 1'):
        mx.recordio.MXIndexedRecordIO(str(idx), str(tmp_path / 'w.rec'), 'r')


def test_record_file_dataset():
    payloads = _payloads()
    ds = mx.gluon.data.RecordFileDataset(os.path.join(REF, 'payloads.rec'))
    assert len(ds) == len(payloads)
    assert [ds[i] for i in range(len(ds))] == payloads
    assert ds[-1] == payloads[-1]


def test_record_file_dataset_needs_index(tmp_path):
    w = mx.recordio.MXRecordIO(str(tmp_path / 'a.rec'), 'w')
    w.write(b'x')
    w.close()
    with pytest.raises(MXNetError, match='index'):
        mx.gluon.data.RecordFileDataset(str(tmp_path / 'a.rec'))


def _transform(x, y):
    return x.astype('float32') / 2, y + 100


def test_image_record_dataset_and_loader():
    cv2 = pytest.importorskip('cv2')
    rec = os.path.join(REF, 'images.rec')
    raw = mx.recordio.MXIndexedRecordIO(os.path.join(REF, 'images.idx'), rec, 'r')
    ds = mx.gluon.data.vision.ImageRecordDataset(rec)
    assert len(ds) == 12
    for i in range(len(ds)):
        img, label = ds[i]
        h, want = mx.recordio.unpack_img(raw.read_idx(i), cv2.IMREAD_COLOR)
        assert img.dtype == np.uint8 and label == h.label == i
        np.testing.assert_array_equal(img.asnumpy(), want[:, :, ::-1])
    grey = mx.gluon.data.vision.ImageRecordDataset(rec, flag=0)[3][0].asnumpy()
    want = mx.recordio.unpack_img(raw.read_idx(3), cv2.IMREAD_GRAYSCALE)[1]
    np.testing.assert_array_equal(grey, want[:, :, None])
    multi = mx.gluon.data.vision.ImageRecordDataset(os.path.join(REF, 'labels3.rec'))
    np.testing.assert_array_equal(multi[2][1], np.array([2, 2.5, -2], np.float32))
    # worker processes get the dataset pickled or forked: each reopens its own file
    for workers in (0, 2):
        loader = mx.gluon.data.DataLoader(
            mx.gluon.data.vision.ImageRecordDataset(rec, transform=_transform), 1,
            num_workers=workers)
        n = 0
        for i, (x, y) in enumerate(loader):
            np.testing.assert_array_equal(x.asnumpy()[0], ds[i][0].asnumpy() / 2)
            assert y.asscalar() == i + 100
            n += 1
        assert n == 12


IM2REC = os.path.join(REF, 'im2rec')
# Same runs as IM2REC in tests/mxnet_ref/gen_recordio.py (None: the list file is given).
IM2REC_RUNS = {
    'passthrough': (['--no-shuffle'], ['--pass-through']),
    'png_crop': ([], ['--resize', '6', '--center-crop', '--encoding', '.png']),
    'jpg_gray': (['--no-shuffle'], ['--quality', '90', '--color', '0', '--num-thread', '2']),
    'split': (['--train-ratio', '0.5', '--test-ratio', '0.25'], ['--pass-through']),
    'multi': (None, ['--pass-through', '--pack-label']),
}


def _records(stem):
    r = mx.recordio.MXIndexedRecordIO(stem + '.idx', stem + '.rec', 'r')
    return [(k, r.read_idx(k)) for k in r.keys]


@pytest.mark.parametrize('name', sorted(IM2REC_RUNS))
def test_im2rec_matches_mxnet(name, tmp_path, capsys):
    pytest.importorskip('cv2')
    import shutil

    from hybridgluon.tools import im2rec
    src = str(tmp_path / 'src')
    shutil.copytree(os.path.join(IM2REC, 'src'), src)
    prefix = str(tmp_path / name)
    list_opts, pack_opts = IM2REC_RUNS[name]
    if list_opts is None:
        shutil.copy(os.path.join(IM2REC, name + '.lst'), prefix + '.lst')
    else:
        assert im2rec.main(['--list', '--recursive'] + list_opts + [prefix, src]) == 0
    assert im2rec.main(pack_opts + [prefix, src]) == 0
    lists = sorted(f for f in os.listdir(IM2REC) if f.startswith(name) and f.endswith('.lst'))
    assert lists == sorted(f for f in os.listdir(str(tmp_path)) if f.endswith('.lst'))
    for lst in lists:
        with open(os.path.join(IM2REC, lst)) as f, open(str(tmp_path / lst)) as g:
            assert g.read() == f.read(), lst
        stem = lst[:-4]
        want, got = _records(os.path.join(IM2REC, stem)), _records(str(tmp_path / stem))
        assert [k for k, _ in got] == [k for k, _ in want]
        if '--pass-through' in pack_opts:
            for ext in ('.rec', '.idx'):
                with open(os.path.join(IM2REC, stem + ext), 'rb') as f:
                    assert f.read() == (tmp_path / (stem + ext)).read_bytes()
            continue
        for (_, a), (_, b) in zip(want, got):
            ha, ia = mx.recordio.unpack_img(a, -1)
            hb, ib = mx.recordio.unpack_img(b, -1)
            assert ha == hb
            assert ia.shape == ib.shape
            # PNG is lossless; JPEG encoders of two OpenCV builds may round differently
            tol = 0 if '.png' in pack_opts else 2
            assert np.abs(ia.astype(int) - ib).max() <= tol
    if name == 'multi':
        (k0, r0), _ = _records(prefix)
        h, _ = mx.recordio.unpack(r0)
        assert k0 == 3 and list(h.label) == [1.5, -2.0]
        assert 'bad line' in capsys.readouterr().out


def test_im2rec_command_line(tmp_path):
    cv2 = pytest.importorskip('cv2')
    src = tmp_path / 'imgs'
    src.mkdir()
    rng = np.random.RandomState(1)
    for i in range(3):
        cv2.imwrite(str(src / ('%d.png' % i)), rng.randint(0, 256, (9, 13, 3)).astype(np.uint8))
    from conftest import run_python  # the hybridgluon under test, from a neutral directory
    prefix = str(tmp_path / 'data')
    for opts in (['--list'], ['--resize', '4', '--encoding', '.png']):
        res = run_python(['-m', 'hybridgluon.tools.im2rec'] + opts + [prefix, str(src)],
                         text=True)
        assert res.returncode == 0, res.stderr
    recs = _records(prefix)
    assert sorted(k for k, _ in recs) == [0, 1, 2]
    for k, r in recs:
        _, img = mx.recordio.unpack_img(r)
        want = cv2.resize(cv2.imread(str(src / ('%d.png' % k))), (5, 4))  # 13*4//9 = 5
        np.testing.assert_array_equal(img, want)
    missing = run_python(['-m', 'hybridgluon.tools.im2rec', str(tmp_path / 'nothing'), str(src)],
                         text=True)
    assert missing.returncode == 1 and 'Did not find' in missing.stdout
