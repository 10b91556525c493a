"""mx.io.MNISTIter and mx.io.LibSVMIter against what real MXNet 1.9.1 gave on the same files
(tests/mxnet_ref/io_iters.npz, written by gen_io_ref.py from io_cases.py), plus the values
against the files' own contents and the errors for bad input."""
import gzip
import os
import struct
import sys

import numpy as np
import pytest

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import io_cases as C  # noqa: E402

REF = np.load(os.path.join(HERE, 'mxnet_ref', 'io_iters.npz'))


@pytest.mark.parametrize('name,kwargs', C.MNIST_CASES, ids=[c[0] for c in C.MNIST_CASES])
def test_mnist_same_as_mxnet(tmp_path, name, kwargs):
    order, labels, nb = C.run_mnist(mx, str(tmp_path), kwargs)
    assert nb == int(REF['mnist_%s_batches' % name])
    np.testing.assert_array_equal(order, REF['mnist_%s_order' % name])
    np.testing.assert_array_equal(labels, REF['mnist_%s_label' % name])


def test_mnist_values_shapes_and_reset(tmp_path):
    img, lab, images, labels = C.write_mnist(str(tmp_path))
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=50, shuffle=False, silent=True)
    assert it.provide_data[0].shape == (50, 1, 28, 28)
    assert it.provide_label[0] == ('softmax_label', (50,))
    batches = list(it)
    assert len(batches) == C.N_IMAGES // 50  # the short last batch is dropped, as in MXNet
    b = batches[1]
    assert b.data[0].dtype == np.float32 and b.pad == 0
    np.testing.assert_array_equal(b.data[0].asnumpy()[:, 0], images[50:100] / np.float32(256))
    np.testing.assert_array_equal(b.label[0].asnumpy(), labels[50:100])
    it.reset()
    assert it.iter_next()
    np.testing.assert_array_equal(it.getlabel().asnumpy(), labels[:50])
    flat = mx.io.MNISTIter(image=img, label=lab, batch_size=10, flat=True, silent=True)
    assert next(flat).data[0].shape == (10, 784)


def test_mnist_gzip_and_silent(tmp_path, capsys):
    img, lab, images, labels = C.write_mnist(str(tmp_path))
    for path in (img, lab):
        with open(path, 'rb') as f, gzip.open(path + '.gz', 'wb') as g:
            g.write(f.read())
    it = mx.io.MNISTIter(image=img + '.gz', label=lab + '.gz', batch_size=13, shuffle=False)
    assert 'MNISTIter: load 130 images, shuffle=0, shape=[13,1,28,28]' in capsys.readouterr().err
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), labels[:13])


def test_mnist_errors(tmp_path):
    img, lab, _, _ = C.write_mnist(str(tmp_path))
    with pytest.raises(mx.MXNetError, match='cannot open image file'):
        mx.io.MNISTIter(image=str(tmp_path / 'nope'), label=lab)
    with pytest.raises(mx.MXNetError, match='magic number 2049'):
        mx.io.MNISTIter(image=lab, label=lab)
    short = str(tmp_path / 'short')
    with open(short, 'wb') as f:
        f.write(struct.pack('>iiii', 2051, 1000, 28, 28) + b'\0' * 100)
    with pytest.raises(mx.MXNetError, match='holds 100 bytes of data'):
        mx.io.MNISTIter(image=short, label=lab)
    with open(short, 'wb') as f:
        f.write(b'\0\0\x08')
    with pytest.raises(mx.MXNetError, match='too short'):
        mx.io.MNISTIter(image=short, label=lab)
    with pytest.raises(mx.MXNetError, match='fewer than batch_size'):
        mx.io.MNISTIter(image=img, label=lab, batch_size=500, silent=True)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.io.MNISTIter(image=img, label=lab, dtype='float64', silent=True)
    with pytest.raises(mx.MXNetError, match='part_index'):
        mx.io.MNISTIter(image=img, label=lab, num_parts=2, part_index=2, silent=True)


@pytest.mark.parametrize('name,kwargs', C.LIBSVM_CASES, ids=[c[0] for c in C.LIBSVM_CASES])
def test_libsvm_same_as_mxnet(tmp_path, name, kwargs):
    data, label, pads = C.run_libsvm(mx, str(tmp_path), kwargs)
    np.testing.assert_array_equal(pads, REF['libsvm_%s_pad' % name])
    np.testing.assert_array_equal(data, REF['libsvm_%s_data' % name])
    np.testing.assert_array_equal(label, REF['libsvm_%s_label' % name])


def _dense_reference(path, width):
    """Label and dense rows of a LibSVM file, by reading it line by line."""
    labels, rows = [], []
    for line in open(path):
        tok = line.split()
        if not tok:
            continue
        labels.append(float(tok[0]))
        row = np.zeros(width, np.float32)
        for t in tok[1:]:
            i, v = t.split(':')
            row[int(i)] = np.float32(float(v))
        rows.append(row)
    return np.array(labels, np.float32), np.array(rows)


def test_libsvm_values_and_round_batch(tmp_path):
    data_path, _ = C.write_libsvm(str(tmp_path))
    labels, rows = _dense_reference(data_path, 7)
    n = len(rows)
    it = mx.io.LibSVMIter(data_libsvm=data_path, data_shape=(7,), batch_size=8)
    assert it.provide_data[0].shape == (8, 7) and it.provide_label[0].shape == (8,)
    got = list(it)
    assert len(got) == -(-n // 8) and got[-1].pad == 8 - n % 8
    seq = np.concatenate([np.arange(n), np.arange(8 - n % 8)])
    # MXNet's float parser may differ from a correctly rounded one in the last bit (the
    # fixtures above check the bits): compare within one float32 ulp here.
    np.testing.assert_allclose(np.concatenate([b.data[0].asnumpy() for b in got]), rows[seq],
                               rtol=1.2e-7, atol=0)
    np.testing.assert_array_equal(np.concatenate([b.label[0].asnumpy() for b in got]),
                                  labels[seq])
    it.reset()  # the next epoch starts after the rows the last batch borrowed
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), labels[8 - n % 8:][:8])
    null = mx.io.LibSVMIter(data_libsvm=data_path, data_shape=(7,), batch_size=8,
                            label_libsvm='NULL')  # MXNet's default: labels from the data file
    np.testing.assert_array_equal(next(null).label[0].asnumpy(), labels[:8])


def test_libsvm_directory_reads_every_file(tmp_path):
    # Files come in the order the file system lists them (MXNet's); one lacks a final newline.
    d = tmp_path / 'dir'
    d.mkdir()
    files = {'a.t': ['1 0:1.5', '2 2:2.5'], 'b.t': ['3 1:-1'], 'c.t': ['4', '5 0:2', '6 1:3']}
    for name, lines in files.items():
        (d / name).write_text('\n'.join(lines) + ('' if name == 'c.t' else '\n'))
    order = [float(line.split()[0]) for name in os.listdir(d) for line in files[name]]
    it = mx.io.LibSVMIter(data_libsvm=str(d), data_shape=(3,), batch_size=6)
    b = next(it)
    np.testing.assert_array_equal(b.label[0].asnumpy(), order)
    dense = {1: [1.5, 0, 0], 2: [0, 0, 2.5], 3: [0, -1, 0], 4: [0, 0, 0], 5: [2, 0, 0],
             6: [0, 3, 0]}
    np.testing.assert_array_equal(b.data[0].asnumpy(), [dense[int(v)] for v in order])
    # Parts of a directory: together, in part order, every example once, in the same order.
    for parts in (2, 3, 4):
        got = []
        for k in range(parts):
            try:
                part = mx.io.LibSVMIter(data_libsvm=str(d), data_shape=(3,), batch_size=1,
                                        num_parts=parts, part_index=k)
            except mx.MXNetError as err:  # a part may be empty: parts are cut on bytes
                assert 'holds no examples' in str(err)
                continue
            got += [float(x.label[0].asnumpy()[0]) for x in part]
        assert got == order


def test_libsvm_errors(tmp_path):
    bad = tmp_path / 'bad.t'
    bad.write_text('1.0 0:0.5 2:1.2\n-2.0\n-3.0 -1:0.6 1:2.4\n')
    with pytest.raises(mx.MXNetError, match=r'line 3: column index -1'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2)
    bad.write_text('1.0 0:0.5 3:1.2\n')
    with pytest.raises(mx.MXNetError, match=r'line 1: column index 3 is out of range \[0, 3\)'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2)
    bad.write_text('1.0 0:0.5 2\n')
    with pytest.raises(mx.MXNetError, match='malformed'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2)
    bad.write_text('x 0:0.5\n')
    with pytest.raises(mx.MXNetError, match='bad label'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2)
    with pytest.raises(mx.MXNetError, match='cannot find data file'):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / 'nope'), data_shape=(3,), batch_size=2)
    bad.write_text('1 0:1\n')
    with pytest.raises(mx.MXNetError, match='round_batch'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2, round_batch=False)
    lab = tmp_path / 'lab.t'
    lab.write_text('1\n2\n')
    with pytest.raises(mx.MXNetError, match='holds 1 examples'):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=2,
                         label_libsvm=str(lab), label_shape=(2,))


@pytest.mark.parametrize('name,kwargs', C.CSV_CASES, ids=[c[0] for c in C.CSV_CASES])
def test_csv_same_as_mxnet(tmp_path, name, kwargs):
    # Bit for bit, including MXNet's own rounding of decimals, exponent clamping and int wrap.
    data, label, pads = C.run_csv(mx, str(tmp_path), kwargs)
    np.testing.assert_array_equal(pads, REF['csv_%s_pad' % name])
    ref = REF['csv_%s_data' % name]
    assert data.dtype == ref.dtype
    np.testing.assert_array_equal(data.view(np.uint8), ref.view(np.uint8))
    np.testing.assert_array_equal(label, REF['csv_%s_label' % name])


def test_csv_float_parse_close_to_correct_rounding(tmp_path):
    # Independently of MXNet: every value is within 2 ulp of the correctly rounded float32.
    rs = np.random.RandomState(4)
    vals = rs.randn(400) * 10.0 ** rs.randint(-30, 30, size=400)
    text = '\n'.join('%.12g' % v for v in vals)
    (tmp_path / 'v.csv').write_text(text)
    it = mx.io.CSVIter(data_csv=str(tmp_path / 'v.csv'), data_shape=(1,), batch_size=400)
    got = next(it).data[0].asnumpy().ravel()
    want = np.array([float('%.12g' % v) for v in vals]).astype(np.float32)
    ulp = np.spacing(np.abs(want))
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2 * ulp)


def test_csv_parser_errors_and_line_numbers(tmp_path):
    from hybridgluon import _core
    path = tmp_path / 'e.csv'
    path.write_bytes(b'1,2,3\r\n\r\n4,5\r\n')
    with pytest.raises(mx.MXNetError, match=r"line 3: the data size in CSV do not match size "
                       r"of shape: the row holds 2 values, the shape 3"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,))
    path.write_text('1,2,3\n4,five,6\n')
    with pytest.raises(mx.MXNetError, match="line 2: field 2 'five' is not a number"):
        mx.io.CSVIter(data_csv=str(path), data_shape=(3,))
    path.write_text('1,,3\n')  # an empty field reads 0, as in MXNet
    np.testing.assert_array_equal(next(mx.io.CSVIter(data_csv=str(path), data_shape=(3,)))
                                  .data[0].asnumpy(), [[1, 0, 3]])
    with pytest.raises(mx.MXNetError, match='float64 is not supported'):
        _core.text_parse_csv(b'1', 1, 'x', 1, 1)
    with pytest.raises(mx.MXNetError):
        _core.text_parse_csv(b'1', 1, 'x', 0, 0)
    empty = _core.text_parse_csv(b'\n\n', 1, 'x', 4, 0)
    assert empty.shape == (0, 4)


def test_libsvm_parser_direct():
    from hybridgluon import _core
    lab, ptr, col, val = _core.text_parse_libsvm(b'1 0:0.5 2:1.2\r\n\n-2\n3:0.5 1:2.4', 7, 'x', 3)
    np.testing.assert_array_equal(lab.asnumpy(), [1, -2, 3])  # "label:weight" keeps the label
    np.testing.assert_array_equal(ptr.asnumpy(), [0, 2, 2, 3])
    np.testing.assert_array_equal(col.asnumpy(), [0, 2, 1])
    np.testing.assert_array_equal(val.asnumpy(), np.float32([0.5, 1.2, 2.4]))
    with pytest.raises(mx.MXNetError, match=r'LibSVM x line 9: column index 5 is out of range'):
        _core.text_parse_libsvm(b'1 0:0.5\n\n2 5:1', 7, 'x', 3)
    with pytest.raises(mx.MXNetError, match=r"line 1: malformed value in '1:abc'"):
        _core.text_parse_libsvm(b'1 1:abc', 1, 'x', 3)
    with pytest.raises(mx.MXNetError, match='column index 99999999999999999999999 is out of'):
        _core.text_parse_libsvm(b'1 99999999999999999999999:1', 1, 'x', 3)


def test_parsers_run_in_threads(tmp_path):
    # The binding releases the GIL around parsing: parses in threads give the same arrays.
    import threading
    from hybridgluon import _core
    rs = np.random.RandomState(0)
    text = '\n'.join(','.join('%.6g' % v for v in rs.randn(50)) for _ in range(400)).encode()
    want = _core.text_parse_csv(text, 1, 'x', 50, 0).asnumpy()
    out = [None] * 4

    def work(i):
        out[i] = _core.text_parse_csv(text, 1, 'x', 50, 0).asnumpy()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in out:
        np.testing.assert_array_equal(o, want)
