"""gluon.data.vision's CIFAR10/CIFAR100 (binary batch files written here in MXNet's layout),
ImageFolderDataset and ImageListDataset (PNG files written with OpenCV, so pixels compare
exactly). Missing and malformed files raise MXNetError naming them."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import data as gdata
from hybridgluon.gluon.data import vision

cv2 = pytest.importorskip('cv2')


def _cifar_records(rng, n, label_bytes):
    labels = rng.integers(0, 100, (n, label_bytes)).astype(np.uint8)
    planes = rng.integers(0, 256, (n, 3, 32, 32)).astype(np.uint8)  # CHW, R then G then B
    raw = np.concatenate([labels, planes.reshape(n, -1)], axis=1)
    return raw.tobytes(), labels, planes.transpose(0, 2, 3, 1)


def _write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def test_cifar10(tmp_path):
    rng = np.random.default_rng(0)
    train = [_cifar_records(rng, 3 + i, 1) for i in range(5)]
    for i, (raw, _, _) in enumerate(train):
        _write(tmp_path / ('data_batch_%d.bin' % (i + 1)), raw)
    test_raw, test_lab, test_img = _cifar_records(rng, 4, 1)
    _write(tmp_path / 'test_batch.bin', test_raw)
    ds = vision.CIFAR10(root=str(tmp_path))
    assert len(ds) == sum(3 + i for i in range(5))
    imgs = np.concatenate([t[2] for t in train])
    labs = np.concatenate([t[1][:, 0] for t in train])
    for idx in (0, 7, len(ds) - 1):
        img, lab = ds[idx]
        assert isinstance(img, mx.nd.NDArray) and img.dtype == np.uint8
        assert img.shape == (32, 32, 3)
        np.testing.assert_array_equal(img.asnumpy(), imgs[idx])
        assert lab == labs[idx] and np.asarray(lab).dtype == np.int32
    te = vision.CIFAR10(root=str(tmp_path), train=False,
                        transform=lambda d, l: (d.astype('float32') / 255, l + 1))
    img, lab = te[2]
    np.testing.assert_allclose(img.asnumpy(), test_img[2] / 255.0, rtol=1e-6)
    assert lab == test_lab[2, 0] + 1
    xb, yb = next(iter(gdata.DataLoader(te, batch_size=4)))
    assert xb.shape == (4, 32, 32, 3) and yb.shape == (4,)


def test_cifar10_official_subfolder(tmp_path):
    rng = np.random.default_rng(1)
    sub = tmp_path / 'cifar-10-batches-bin'
    sub.mkdir()
    raw, lab, img = _cifar_records(rng, 2, 1)
    _write(sub / 'test_batch.bin', raw)
    ds = vision.CIFAR10(root=str(tmp_path), train=False)
    np.testing.assert_array_equal(ds[1][0].asnumpy(), img[1])


@pytest.mark.parametrize('fine', [False, True])
def test_cifar100(tmp_path, fine):
    rng = np.random.default_rng(2)
    raw, lab, img = _cifar_records(rng, 5, 2)
    _write(tmp_path / 'train.bin', raw)
    _write(tmp_path / 'test.bin', _cifar_records(rng, 2, 2)[0])
    ds = vision.CIFAR100(root=str(tmp_path), fine_label=fine)
    assert len(ds) == 5 and len(vision.CIFAR100(root=str(tmp_path), train=False)) == 2
    for i in range(5):
        np.testing.assert_array_equal(ds[i][0].asnumpy(), img[i])
        assert ds[i][1] == lab[i, 1 if fine else 0]


def test_cifar_missing_and_truncated(tmp_path):
    with pytest.raises(mx.MXNetError, match='data_batch_1.bin.*downloads nothing'):
        vision.CIFAR10(root=str(tmp_path))
    with pytest.raises(mx.MXNetError, match='test.bin'):
        vision.CIFAR100(root=str(tmp_path), train=False)
    _write(tmp_path / 'test_batch.bin', b'\x01' * 3000)
    with pytest.raises(mx.MXNetError, match='3073-byte records'):
        vision.CIFAR10(root=str(tmp_path), train=False)
    _write(tmp_path / 'test.bin', b'')
    with pytest.raises(ValueError, match='test.bin'):
        vision.CIFAR100(root=str(tmp_path), train=False)


def _make_folder(root, rng):
    """root/cat/*.png, root/dog/*.png (+ a .txt and a stray file); returns {path: RGB array}."""
    written = {}
    for cls, n in (('dog', 2), ('cat', 3)):
        d = root / cls
        d.mkdir()
        for i in range(n):
            img = rng.integers(0, 256, (5 + i, 7, 3)).astype(np.uint8)
            path = str(d / ('%d.png' % i))
            cv2.imwrite(path, img[:, :, ::-1])  # OpenCV writes BGR
            written[path] = img
        (d / 'notes.txt').write_text('not an image')
    (root / 'README').write_text('a stray file')
    return written


def test_image_folder_dataset(tmp_path):
    rng = np.random.default_rng(3)
    written = _make_folder(tmp_path, rng)
    with pytest.warns(UserWarning):
        ds = vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ['cat', 'dog']
    assert len(ds) == len(ds.items) == 5
    assert [lab for _, lab in ds.items] == [0, 0, 0, 1, 1]
    for i, (path, lab) in enumerate(ds.items):
        img, got_lab = ds[i]
        assert got_lab == lab and img.dtype == np.uint8
        np.testing.assert_array_equal(img.asnumpy(), written[path])
    with pytest.warns(UserWarning):
        grey = vision.ImageFolderDataset(str(tmp_path), flag=0,
                                         transform=lambda d, l: (d.astype('float32'), l * 10))
    img, lab = grey[4]
    want = cv2.imread(grey.items[4][0], cv2.IMREAD_GRAYSCALE)
    assert img.shape == want.shape + (1,) and lab == 10
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], want)


def test_image_folder_errors(tmp_path):
    with pytest.raises(mx.MXNetError, match='not a directory'):
        vision.ImageFolderDataset(str(tmp_path / 'nowhere'))
    d = tmp_path / 'c'
    d.mkdir()
    (d / 'broken.jpg').write_bytes(b'not a jpeg')
    ds = vision.ImageFolderDataset(str(tmp_path))
    with pytest.raises(mx.MXNetError, match='broken.jpg'):
        ds[0]


def test_image_list_dataset(tmp_path):
    rng = np.random.default_rng(4)
    written = _make_folder(tmp_path, rng)
    rel = sorted(os.path.relpath(p, str(tmp_path)) for p in written)
    lines = ['%d\t%d\t%.1f\t%s' % (i, i % 2, i * 0.5, r) for i, r in enumerate(rel)]
    (tmp_path / 'list.lst').write_text('\n'.join(lines) + '\n')
    ds = vision.ImageListDataset(root=str(tmp_path), imglist='list.lst')
    assert len(ds) == len(rel)
    for i, r in enumerate(rel):
        img, label = ds[i]
        np.testing.assert_array_equal(img.asnumpy(), written[str(tmp_path / r)])
        assert label.dtype == np.float32
        np.testing.assert_allclose(label.asnumpy(), [i % 2, i * 0.5])
    ds = vision.ImageListDataset(str(tmp_path), [[3, rel[0]], [1, 2, rel[1]], [[4, 5], rel[2]]],
                                 flag=0)
    assert ds[0][0].shape[2] == 1
    np.testing.assert_allclose(ds[0][1].asnumpy(), [3])
    np.testing.assert_allclose(ds[1][1].asnumpy(), [1, 2])
    np.testing.assert_allclose(ds[2][1].asnumpy(), [4, 5])


def test_image_list_errors(tmp_path):
    with pytest.raises(mx.MXNetError, match='imglist'):
        vision.ImageListDataset(str(tmp_path))
    with pytest.raises(mx.MXNetError, match='cannot open'):
        vision.ImageListDataset(str(tmp_path), 'missing.lst')
    (tmp_path / 'bad.lst').write_text('0\tlabel\timg.png\n')
    with pytest.raises(mx.MXNetError, match='bad.lst:1'):
        vision.ImageListDataset(str(tmp_path), 'bad.lst')
    with pytest.raises(mx.MXNetError, match='entry 0'):
        vision.ImageListDataset(str(tmp_path), [['a.png']])
    ds = vision.ImageListDataset(str(tmp_path), [[0, 'absent.png']])
    with pytest.raises(mx.MXNetError, match='absent.png: no such file'):
        ds[0]


def test_missing_opencv_names_the_extra(tmp_path, monkeypatch):
    import sys
    rng = np.random.default_rng(5)
    _make_folder(tmp_path, rng)
    with pytest.warns(UserWarning):
        ds = vision.ImageFolderDataset(str(tmp_path))
    monkeypatch.setitem(sys.modules, 'cv2', None)  # import cv2 now raises ImportError
    with pytest.raises(mx.MXNetError, match=r'hybridgluon\[image\].*opencv-python-headless'):
        ds[0]
