"""mx.image: decoding, resizing and borders against OpenCV called directly; crops, augmenters,
rotation and detection augmenters against what real MXNet 1.9.1 gave with the same seeds
(tests/mxnet_ref/image.npz, written by tests/mxnet_ref/gen_image_ref.py); ImageIter and
ImageDetIter on image files written here, against batches assembled from OpenCV and NumPy."""
import json
import os
import random
import sys

import numpy as np
import pytest

import hybridgluon as mx

cv2 = pytest.importorskip('cv2')

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import gen_image_ref as G  # noqa: E402

FIXTURE = os.path.join(HERE, 'mxnet_ref', 'image.npz')


@pytest.fixture(scope='module')
def ref():
    d = np.load(FIXTURE, allow_pickle=False)
    out = {k: d[k] for k in d.files}
    out['meta'] = json.loads(bytes(out['meta']).decode('utf-8'))
    return out


def _smooth_bgr(h, w, seed):
    rng = np.random.RandomState(seed)
    return cv2.GaussianBlur((rng.rand(h, w, 3) * 255).astype(np.uint8), (5, 5), 0)


def _encode(img, ext):
    ok, buf = cv2.imencode(ext, img)
    assert ok
    return buf.tobytes()


# ---------------------------------------------------------------- decoding and reading


@pytest.mark.parametrize('ext', ['.png', '.jpg', '.bmp'])
def test_imdecode_matches_opencv_for_every_buffer_type(ext):
    bgr = _smooth_bgr(21, 34, 0)
    data = _encode(bgr, ext)
    expect = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    for buf in (data, bytearray(data), np.frombuffer(data, np.uint8),
                mx.nd.array(np.frombuffer(data, np.uint8), dtype='uint8')):
        img = mx.image.imdecode(buf)
        assert img.dtype == np.uint8 and img.shape == (21, 34, 3)
        np.testing.assert_array_equal(img.asnumpy(), expect[:, :, ::-1])
        np.testing.assert_array_equal(mx.image.imdecode(buf, to_rgb=False).asnumpy(), expect)
    gray = mx.image.imdecode(data, flag=0)
    assert gray.shape == (21, 34, 1)
    np.testing.assert_array_equal(gray.asnumpy()[:, :, 0],
                                  cv2.imdecode(np.frombuffer(data, np.uint8), 0))


def test_imdecode_out_and_internal_names():
    bgr = _smooth_bgr(9, 11, 1)
    data = _encode(bgr, '.png')
    out = mx.nd.zeros((9, 11, 3), dtype='uint8')
    res = mx.image.imdecode(data, out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), bgr[:, :, ::-1])
    buf = mx.nd.array(np.frombuffer(data, np.uint8), dtype='uint8')
    np.testing.assert_array_equal(mx.nd._internal._cvimdecode(buf).asnumpy(), bgr[:, :, ::-1])
    with pytest.raises(mx.MXNetError, match='out has shape'):
        mx.image.imdecode(data, out=mx.nd.zeros((9, 10, 3), dtype='uint8'))


def test_imread_equals_imdecode_and_names_missing_file(tmp_path):
    bgr = _smooth_bgr(17, 13, 2)
    path = str(tmp_path / 'a.png')
    cv2.imwrite(path, bgr)
    np.testing.assert_array_equal(mx.image.imread(path).asnumpy(), bgr[:, :, ::-1])
    np.testing.assert_array_equal(mx.img.image.imread(path, to_rgb=0).asnumpy(), bgr)
    np.testing.assert_array_equal(mx.nd._internal._cvimread(path, flag=0).asnumpy()[:, :, 0],
                                  cv2.imread(path, 0))
    missing = str(tmp_path / 'nope' / 'b.jpg')
    with pytest.raises(mx.MXNetError, match='b.jpg'):
        mx.image.imread(missing)


def test_imdecode_rejects_bad_input():
    with pytest.raises(mx.MXNetError, match='empty'):
        mx.image.imdecode(b'', to_rgb=0)
    with pytest.raises(mx.MXNetError, match='decoding failed'):
        mx.image.imdecode(b'clearly not image content')
    with pytest.raises(ValueError, match='bytes'):
        mx.image.imdecode('a str is not bytes')
    with pytest.raises(mx.MXNetError, match='flag'):
        mx.image.imdecode(_encode(_smooth_bgr(4, 4, 3), '.png'), flag=7)


def test_missing_opencv_names_the_package_and_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'cv2', None)  # makes `import cv2` raise ImportError
    with pytest.raises(mx.MXNetError, match=r'opencv-python-headless.*hybridgluon\[image\]'):
        mx.image.imdecode(b'\x89PNG....')
    with pytest.raises(mx.MXNetError, match='opencv-python-headless'):
        mx.image.imresize(mx.nd.zeros((4, 4, 3)), 2, 2)


# ---------------------------------------------------------------- resize and borders


@pytest.mark.parametrize('dtype', ['uint8', 'float32'])
@pytest.mark.parametrize('interp', range(5))
def test_imresize_matches_opencv(dtype, interp):
    bgr = _smooth_bgr(31, 45, 4).astype(dtype)
    x = mx.nd.array(bgr, dtype=dtype)
    for w, h in [(20, 13), (70, 50), (45, 7)]:
        expect = cv2.resize(bgr, (w, h), interpolation=interp)
        got = mx.image.imresize(x, w, h, interp=interp)
        assert got.dtype == np.dtype(dtype) and got.shape == (h, w, 3)
        np.testing.assert_array_equal(got.asnumpy(), expect)
        out = mx.nd.zeros((h, w, 3), dtype=dtype)
        assert mx.image.imresize(x, w, h, interp=interp, out=out) is out
        np.testing.assert_array_equal(out.asnumpy(), expect)
        np.testing.assert_array_equal(
            mx.nd._internal._cvimresize(x, w, h, interp=interp).asnumpy(), expect)


def test_imresize_interp_codes_are_mxnets(ref):
    # MXNet hands interp to OpenCV as it is (2 is bicubic, 3 area), whatever its docstring says;
    # its OpenCV 3.4 and ours may round bicubic differently by one level.
    x = mx.nd.array(ref['src_u'], dtype='uint8')
    for interp in range(5):
        for key, (w, h) in [('resize%d_out', (23, 17)), ('resize_up%d_out', (80, 61))]:
            got = mx.image.imresize(x, w, h, interp=interp).asnumpy().astype(int)
            np.testing.assert_allclose(got, ref[key % interp], atol=1 if interp == 2 else 0)
    assert mx.image.imresize(x, 23, 17).asnumpy().tolist() == ref['resize1_out'].tolist()


def test_imresize_rejects_bad_input():
    x = mx.nd.zeros((5, 6, 3), dtype='uint8')
    with pytest.raises(mx.MXNetError, match='interp'):
        mx.image.imresize(x, 3, 3, interp=7)
    with pytest.raises(mx.MXNetError, match='w must be'):
        mx.image.imresize(x, 0, 3)
    with pytest.raises(mx.MXNetError, match='3 dimensions'):
        mx.image.imresize(mx.nd.zeros((5, 6)), 3, 3)
    with pytest.raises(mx.MXNetError, match='int64'):
        mx.image.imresize(mx.nd.zeros((5, 6, 3), dtype='int64'), 3, 3)


@pytest.mark.parametrize('btype', range(5))
def test_copy_make_border_matches_opencv_and_mxnet(btype, ref):
    bgr = _smooth_bgr(12, 9, 5)
    for dtype in ('uint8', 'float32'):
        x = mx.nd.array(bgr, dtype=dtype)
        expect = cv2.copyMakeBorder(bgr.astype(dtype), 3, 1, 4, 2, btype, value=[7, 8, 9])
        got = mx.image.copyMakeBorder(x, 3, 1, 4, 2, type=btype, values=[7, 8, 9])
        np.testing.assert_array_equal(got.asnumpy(), expect)
        out = mx.nd.zeros((16, 15, 3), dtype=dtype)
        mx.image.copyMakeBorder(x, 3, 1, 4, 2, type=btype, values=[7, 8, 9], out=out)
        np.testing.assert_array_equal(out.asnumpy(), expect)
    x = mx.nd.array(ref['src_u'], dtype='uint8')
    got = mx.nd._internal._cvcopyMakeBorder(x, 2, 3, 4, 5, type=btype, values=[9, 19, 29])
    np.testing.assert_array_equal(got.asnumpy(), ref['border%d_out' % btype])


def test_copy_make_border_single_value_and_errors():
    x = mx.nd.array(_smooth_bgr(4, 5, 6), dtype='uint8')
    got = mx.image.copyMakeBorder(x, 1, 1, 1, 1, value=33).asnumpy()
    assert (got[0] == 33).all() and (got[:, -1] == 33).all()
    np.testing.assert_array_equal(got[1:-1, 1:-1], x.asnumpy())
    with pytest.raises(mx.MXNetError, match='top'):
        mx.image.copyMakeBorder(x, -1, 0, 0, 0)
    with pytest.raises(mx.MXNetError, match='border type'):
        mx.image.copyMakeBorder(x, 1, 1, 1, 1, type=9)


# ---------------------------------------------------------------- crops and geometry


def test_scale_down_and_interp_selection():
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((360, 1000), (480, 500)) == (360, 375)
    assert mx.image.scale_down((300, 400), (0, 0)) == (0, 0)
    assert mx.image._get_interp_method(9, (10, 10, 20, 20)) == 2
    assert mx.image._get_interp_method(9, (10, 10, 5, 5)) == 3
    assert mx.image._get_interp_method(9, (10, 10, 20, 5)) == 1
    random.seed(3)
    picks = {mx.image._get_interp_method(10) for _ in range(200)}
    assert picks == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match='interp'):
        mx.image._get_interp_method(6)


def test_fixed_center_random_crops(ref):
    src = ref['src_u']
    x = mx.nd.array(src, dtype='uint8')
    np.testing.assert_array_equal(mx.image.fixed_crop(x, 3, 5, 10, 7).asnumpy(),
                                  src[5:12, 3:13])
    resized = mx.image.fixed_crop(x, 3, 5, 10, 7, size=(20, 14), interp=0).asnumpy()
    np.testing.assert_array_equal(resized, cv2.resize(src[5:12, 3:13], (20, 14),
                                                      interpolation=0))
    with pytest.raises(mx.MXNetError, match='outside'):
        mx.image.fixed_crop(x, 50, 0, 10, 10)
    out, box = mx.image.center_crop(x, (30, 20))
    assert box == tuple(ref['center_crop_box'])
    np.testing.assert_array_equal(out.asnumpy(), ref['center_crop_out'])
    G.seed(7)
    out, box = mx.image.random_crop(x, (20, 15))
    assert box == tuple(ref['random_crop_box'])
    np.testing.assert_array_equal(out.asnumpy(), ref['random_crop_out'])
    np.testing.assert_array_equal(mx.image.resize_short(x, 20, interp=1).asnumpy(),
                                  ref['resize_short_out'])
    assert mx.image.resize_short(mx.nd.zeros((50, 20, 3)), 10).shape == (25, 10, 3)


def test_random_size_crop_draws_as_mxnet(ref):
    x = mx.nd.array(ref['src_u'], dtype='uint8')
    boxes = []
    for k in range(20):
        G.seed(200 + k)
        out, box = mx.image.random_size_crop(x, (16, 16), 0.2, (0.5, 2.0), interp=1)
        assert out.shape == (16, 16, 3)
        boxes.append(box)
    np.testing.assert_array_equal(np.array(boxes), ref['random_size_crop_box'])


def test_random_size_crop_respects_bounds():
    src = mx.nd.zeros((200, 300, 3))
    random.seed(0)
    for _ in range(50):
        _, (x0, y0, w, h) = mx.image.random_size_crop(src, (30, 30), (0.3, 0.6), (0.75, 1.0))
        assert x0 + w <= 300 and y0 + h <= 200
        if (x0, y0, w, h) != (50, 0, 200, 200):  # not the centre-crop fallback
            assert 0.75 - 0.05 <= w / h <= 1.0 + 0.05
            assert 0.3 * 60000 * 0.9 <= w * h <= 0.6 * 60000 * 1.1
    with pytest.raises(TypeError, match='unexpected'):
        mx.image.random_size_crop(src, (3, 3), 0.5, (1, 1), bogus=1)


@pytest.mark.parametrize('name,kw', [('rot', {}), ('rot_in', {'zoom_in': True}),
                                     ('rot_out', {'zoom_out': True})])
def test_imrotate_matches_mxnet(ref, name, kw):
    chw = mx.nd.array(ref['src_f'].transpose(2, 0, 1) / 255.0)
    np.testing.assert_allclose(mx.image.imrotate(chw, 17, **kw).asnumpy(), ref[name + '_out'],
                               atol=1e-5)
    batch = mx.image.imrotate(mx.nd.stack(chw, chw), mx.nd.array([17, 17]), **kw).asnumpy()
    np.testing.assert_allclose(batch[1], ref[name + '_out'], atol=1e-5)


def test_imrotate_zero_is_identity_and_errors(ref):
    chw = mx.nd.array(ref['src_f'].transpose(2, 0, 1))
    np.testing.assert_allclose(mx.image.imrotate(chw, 0).asnumpy(), chw.asnumpy(), rtol=1e-5,
                               atol=1e-3)
    with pytest.raises(ValueError):
        mx.image.imrotate(chw, 5, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError):
        mx.image.imrotate(chw, mx.nd.array([1.0, 2.0]))
    with pytest.raises(TypeError):
        mx.image.imrotate(chw.astype('float64'), 5)
    with pytest.raises(ValueError):
        mx.image.imrotate(mx.nd.stack(chw, chw), mx.nd.array([1.0, 2.0, 3.0]))
    G.seed(11)
    out = mx.image.random_rotate(mx.nd.stack(chw / 255.0, chw / 255.0 * 0.5), (-30, 30))
    np.testing.assert_allclose(out.asnumpy(), ref['random_rotate_out'], atol=1e-5)


# ---------------------------------------------------------------- augmenters


def test_color_normalize_against_numpy():
    rng = np.random.RandomState(8)
    src = rng.rand(20, 30, 3) * 255
    mean, std = rng.rand(3) * 255, rng.rand(3) + 1
    got = mx.image.color_normalize(mx.nd.array(src), mx.nd.array(mean), mx.nd.array(std))
    np.testing.assert_allclose(got.asnumpy(), (src - mean) / std, rtol=1e-5, atol=1e-3)
    aug = mx.image.ColorNormalizeAug(mean=mx.nd.array(mean), std=std)
    np.testing.assert_allclose(aug(mx.nd.array(src)).asnumpy(), (src - mean) / std, atol=1e-3)


def test_augmenters_give_mxnets_numbers_and_dumps(ref):
    for k, (name, aug) in enumerate(sorted(G.augmenter_cases(mx, ref['src_f']).items())):
        G.seed(100 + k)
        got = aug(mx.nd.array(ref['src_f']))
        assert got.dtype == ref[name + '_out'].dtype, name
        np.testing.assert_allclose(got.asnumpy(), ref[name + '_out'], rtol=1e-5, atol=1e-3,
                                   err_msg=name)
        if ref['meta'][name] is not None:
            assert aug.dumps() == ref['meta'][name], name


def test_create_augmenter_list_is_mxnets(ref):
    augs = mx.image.CreateAugmenter((3, 24, 24), resize=30, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=True, brightness=0.1,
                                    contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                                    rand_gray=0.2, inter_method=1)
    kinds = [type(a).__name__ for a in augs]
    assert kinds == ['ResizeAug', 'RandomSizedCropAug', 'HorizontalFlipAug', 'CastAug',
                     'ColorJitterAug', 'HueJitterAug', 'LightingAug', 'RandomGrayAug',
                     'ColorNormalizeAug']
    dumps = [a.dumps() for a in augs if not isinstance(a, mx.image.RandomOrderAug)]
    assert dumps == ref['meta']['create_augmenter']
    plain = mx.image.CreateAugmenter((3, 8, 8))
    assert [type(a).__name__ for a in plain] == ['CenterCropAug', 'CastAug']
    with pytest.raises(mx.MXNetError, match='rand_resize'):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(mx.MXNetError, match='mean'):
        mx.image.CreateAugmenter((3, 8, 8), mean=[1, 2])
    seq = mx.image.SequentialAug([mx.image.CastAug(), mx.image.HorizontalFlipAug(1)])
    assert seq.dumps() == ['sequentialaug', ['["castaug", {"type": "float32"}]',
                                             '["horizontalflipaug", {"p": 1}]']]


def test_jitter_properties():
    rng = np.random.RandomState(9)
    src = rng.rand(10, 12, 3).astype(np.float32) * 255
    luma = np.array([0.299, 0.587, 0.114], np.float32)
    random.seed(4)
    for _ in range(5):
        out = mx.image.SaturationJitterAug(0.5)(mx.nd.array(src)).asnumpy()
        # Saturation blends each pixel with its own grey: the grey level stays.
        np.testing.assert_allclose(out.dot(luma), src.dot(luma), rtol=1e-4, atol=1e-2)
        out = mx.image.ContrastJitterAug(0.5)(mx.nd.array(src)).asnumpy()
        # Contrast blends with the mean grey: the mean grey level stays.
        np.testing.assert_allclose(out.dot(luma).mean(), src.dot(luma).mean(), rtol=1e-4)
        alpha = mx.image.BrightnessJitterAug(0.2)(mx.nd.array(src)).asnumpy() / src
        assert np.ptp(alpha) < 1e-5 and 0.8 <= alpha.mean() <= 1.2
    np.testing.assert_allclose(mx.image.HueJitterAug(0.0)(mx.nd.array(src)).asnumpy(), src,
                               rtol=2e-2, atol=1.0)
    grey = mx.image.RandomGrayAug(1.0)(mx.nd.array(src)).asnumpy()
    assert np.allclose(grey[..., 0], grey[..., 1]) and np.allclose(grey[..., 1], grey[..., 2])
    random.seed(5)
    flips = sum(mx.image.HorizontalFlipAug(0.5)(mx.nd.array(src)).asnumpy()[0, 0, 0]
                == src[0, -1, 0] for _ in range(400))
    assert 160 < flips < 240


def test_random_order_and_sized_crop_augmenters():
    random.seed(6)
    src = mx.nd.array(np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3))
    aug = mx.image.RandomOrderAug([mx.image.CastAug('float64'), mx.image.HorizontalFlipAug(1)])
    out = aug(src)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[:, ::-1])
    crop = mx.image.RandomSizedCropAug((4, 4), 0.5, (0.8, 1.25))(mx.nd.zeros((30, 40, 3)))
    assert crop.shape == (4, 4, 3)
    with pytest.warns(DeprecationWarning):
        mx.image.RandomSizedCropAug((4, 4), None, (0.8, 1.25), min_area=0.5)
    assert mx.image.ForceResizeAug((7, 5))(mx.nd.zeros((30, 40, 3))).shape == (5, 7, 3)
    assert mx.image.CenterCropAug((7, 5))(mx.nd.zeros((30, 40, 3))).shape == (5, 7, 3)
    assert mx.image.RandomCropAug((7, 5))(mx.nd.zeros((30, 40, 3))).shape == (5, 7, 3)
    assert mx.image.ResizeAug(10)(mx.nd.zeros((30, 40, 3))).shape == (10, 13, 3)


# ---------------------------------------------------------------- ImageIter


@pytest.fixture(scope='module')
def image_dir(tmp_path_factory):
    """Seven images of different sizes (all >= 32 pixels a side), PNG so that decoding is
    exact; returns (folder, names, BGR arrays)."""
    root = tmp_path_factory.mktemp('images')
    names, arrays = [], []
    for k in range(7):
        img = _smooth_bgr(32 + 5 * k, 40 + 3 * k, 10 + k)
        name = 'img%d.png' % k
        cv2.imwrite(str(root / name), img)
        names.append(name)
        arrays.append(img)
    return str(root), names, arrays


def _expected_chw(bgr, size):
    """center_crop of (size, size) without resize, RGB, CHW, float32."""
    h, w, _ = bgr.shape
    y0, x0 = (h - size) // 2, (w - size) // 2
    return bgr[y0:y0 + size, x0:x0 + size, ::-1].transpose(2, 0, 1).astype(np.float32)


def test_imageiter_from_list_gives_the_cropped_images(image_dir):
    root, names, arrays = image_dir
    imglist = [[float(k), name] for k, name in enumerate(names)]
    it = mx.image.ImageIter(3, (3, 24, 24), imglist=imglist, path_root=root,
                            data_name='img', label_name='lab')
    assert it.provide_data == [('img', (3, 3, 24, 24))]
    assert it.provide_label == [('lab', (3,))]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    order = list(range(7)) + [0, 1]  # 'pad' fills the last batch from the start
    data = np.concatenate([b.data[0].asnumpy() for b in batches])
    label = np.concatenate([b.label[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(label, np.array(order, np.float32))
    for row, k in enumerate(order):
        np.testing.assert_array_equal(data[row], _expected_chw(arrays[k], 24))
    it.reset()
    assert len(list(it)) == 3


def test_imageiter_last_batch_handles(image_dir):
    root, names, _ = image_dir
    imglist = [[k, name] for k, name in enumerate(names)]

    def run(handle, epochs=1):
        it = mx.image.ImageIter(3, (3, 16, 16), imglist=imglist, path_root=root,
                                last_batch_handle=handle)
        out = []
        for _ in range(epochs):
            out.append([(b.label[0].asnumpy().tolist(), b.pad) for b in it])
            it.reset()
        return out

    assert run('discard') == [[([0, 1, 2], 0), ([3, 4, 5], 0)]]
    # roll_over keeps the partial batch [6] and completes it from the next epoch.
    assert run('roll_over', 3) == [
        [([0, 1, 2], 0), ([3, 4, 5], 0)],
        [([6, 0, 1], 2), ([2, 3, 4], 0)],
        [([5, 6, 0], 1), ([1, 2, 3], 0), ([4, 5, 6], 0)]]
    with pytest.raises(mx.MXNetError, match='last_batch_handle'):
        mx.image.ImageIter(3, (3, 16, 16), imglist=imglist, last_batch_handle='bogus')
    # hard_reset drops the held-over batch: the next epoch starts clean.
    it = mx.image.ImageIter(3, (3, 16, 16), imglist=imglist, path_root=root,
                            last_batch_handle='roll_over')
    assert len(list(it)) == 2 and it._cache_data is not None
    it.hard_reset()
    assert [b.label[0].asnumpy().tolist() for b in it] == [[0, 1, 2], [3, 4, 5]]


def test_imageiter_list_file_shuffle_parts_and_label_width(image_dir, tmp_path):
    root, names, _ = image_dir
    lst = tmp_path / 'list.lst'
    lst.write_text(''.join('%d\t%d\t%d\t%s\n' % (10 + k, k, 2 * k, os.path.join(root, n))
                           for k, n in enumerate(names)))
    it = mx.image.ImageIter(7, (3, 16, 16), label_width=2, path_imglist=str(lst),
                            path_root='', dtype='int32')
    assert it.provide_label[0][1] == (7, 2)
    assert it.seq == list(range(10, 17))
    batch = it.next()
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [[k, 2 * k] for k in range(7)])
    random.seed(1)
    shuffled = mx.image.ImageIter(7, (3, 16, 16), label_width=2, path_imglist=str(lst),
                                  path_root='', shuffle=True)
    labels = shuffled.next().label[0].asnumpy()[:, 0]
    assert sorted(labels) == list(range(7)) and labels.tolist() != list(range(7))
    parts = [mx.image.ImageIter(1, (3, 16, 16), label_width=2, path_imglist=str(lst),
                                path_root='', part_index=p, num_parts=3) for p in range(3)]
    assert [p.seq for p in parts] == [[10, 11], [12, 13], [14, 15]]


def test_imageiter_with_augmenters_and_errors(image_dir, tmp_path):
    root, names, _ = image_dir
    imglist = [[0, n] for n in names]
    random.seed(2)
    np.random.seed(2)
    it = mx.image.ImageIter(4, (3, 20, 20), imglist=imglist, path_root=root, resize=30,
                            rand_crop=True, rand_resize=True, rand_mirror=True, mean=True,
                            std=True, brightness=0.1, contrast=0.1,
                            saturation=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2,
                            inter_method=10, shuffle=True)
    for batch in it:
        data = batch.data[0].asnumpy()
        assert data.shape == (4, 3, 20, 20) and np.isfinite(data).all()
        assert np.abs(data).max() < 5  # normalised by ImageNet's mean and std
    broken = tmp_path / 'broken.png'
    broken.write_bytes(b'not an image')
    bad = mx.image.ImageIter(1, (3, 8, 8), imglist=[[0, str(broken)]], path_root='')
    with pytest.raises(RuntimeError, match='broken.png'):
        bad.next()
    with pytest.raises(mx.MXNetError, match='imglist'):
        mx.image.ImageIter(1, (3, 8, 8))
    with pytest.raises(ValueError, match='3 channels'):
        mx.image.ImageIter(1, (1, 8, 8), imglist=imglist)
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.image.ImageIter(1, (3, 8, 8), imglist=imglist, dtype='uint8')


def _recordio_or_skip():
    try:
        from hybridgluon import recordio
    except ImportError:
        pytest.skip('hybridgluon.recordio is not in this build')
    return recordio


def test_imageiter_reads_rec_files(image_dir, tmp_path):
    recordio = _recordio_or_skip()
    root, names, arrays = image_dir
    rec, idx = str(tmp_path / 'x.rec'), str(tmp_path / 'x.idx')
    writer = recordio.MXIndexedRecordIO(idx, rec, 'w')
    for k, n in enumerate(names):
        with open(os.path.join(root, n), 'rb') as f:
            writer.write_idx(k, recordio.pack(recordio.IRHeader(0, float(k), k, 0), f.read()))
    writer.close()
    seq = mx.image.ImageIter(7, (3, 24, 24), path_imgrec=rec)
    batch = seq.next()
    np.testing.assert_array_equal(batch.label[0].asnumpy(), np.arange(7))
    for k in range(7):
        np.testing.assert_array_equal(batch.data[0].asnumpy()[k], _expected_chw(arrays[k], 24))
    random.seed(3)
    indexed = mx.image.ImageIter(7, (3, 24, 24), path_imgrec=rec, path_imgidx=idx,
                                 shuffle=True)
    labels = indexed.next().label[0].asnumpy()
    assert sorted(labels.tolist()) == list(range(7))
    part = mx.image.ImageIter(2, (3, 24, 24), path_imgrec=rec, path_imgidx=idx,
                              part_index=1, num_parts=3)
    np.testing.assert_array_equal(part.next().label[0].asnumpy(), [2, 3])
    # A list file next to the .rec gives the labels; its keys are the record indices.
    lst = tmp_path / 'x.lst'
    lst.write_text(''.join('%d\t%d\t%s\n' % (k, 10 * k, n) for k, n in enumerate(names)))
    relabelled = mx.image.ImageIter(3, (3, 24, 24), path_imgrec=rec, path_imgidx=idx,
                                    path_imglist=str(lst), last_batch_handle='discard')
    labels = [b.label[0].asnumpy().tolist() for b in relabelled]
    assert labels == [[0, 10, 20], [30, 40, 50]]
    with pytest.raises(mx.MXNetError, match='path_imgidx'):
        mx.image.ImageIter(2, (3, 24, 24), path_imgrec=rec, shuffle=True)


# ---------------------------------------------------------------- detection


def test_det_augmenters_give_mxnets_boxes_and_pixels(ref):
    det_cases = {
        'det_flip': mx.image.DetHorizontalFlipAug(1.0),
        'det_crop': mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 0.9)),
        'det_pad': mx.image.DetRandomPadAug(area_range=(1.2, 3.0), pad_val=(10, 20, 30)),
        'det_multi': mx.image.CreateMultiRandCropAugmenter(
            min_object_covered=[0.1, 0.5], area_range=[(0.1, 1.0)], skip_prob=0.2),
    }
    for k, (name, aug) in enumerate(sorted(det_cases.items())):
        for rep in range(3):
            G.seed(300 + 10 * k + rep)
            img, label = aug(mx.nd.array(ref['src_u'], dtype='uint8'), ref['label'].copy())
            np.testing.assert_array_equal(img.asnumpy(), ref['%s%d_out' % (name, rep)])
            np.testing.assert_allclose(label, ref['%s%d_label' % (name, rep)], rtol=1e-12)


def test_create_det_augmenter_is_mxnets(ref):
    augs = mx.image.CreateDetAugmenter((3, 30, 30), resize=40, rand_crop=0.5, rand_pad=0.5,
                                       rand_gray=0.1, rand_mirror=True, mean=True, std=True,
                                       hue=0.1, pca_noise=0.1, inter_method=1)
    assert [a.dumps() for a in augs] == ref['meta']['create_det_augmenter']
    with pytest.raises(TypeError):
        mx.image.DetBorrowAug('not an augmenter')
    with pytest.raises(ValueError):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    assert mx.image.DetRandomSelectAug([]).skip_prob == 1


def test_det_crop_keeps_covered_objects():
    label = np.array([[0, 0.1, 0.1, 0.4, 0.4, 0], [1, 0.5, 0.5, 0.9, 0.8, 0]])
    aug = mx.image.DetRandomCropAug(min_object_covered=0.5, area_range=(0.3, 1.0),
                                    min_eject_coverage=0.3)
    random.seed(12)
    for _ in range(30):
        img, out = aug(mx.nd.zeros((100, 120, 3), dtype='uint8'), label.copy())
        assert out.shape[1] == 6 and 1 <= out.shape[0] <= 2
        assert (out[:, 1:5] >= 0).all() and (out[:, 1:5] <= 1).all()
        assert (out[:, 3] > out[:, 1]).all() and (out[:, 4] > out[:, 2]).all()
        assert img.shape[0] <= 100 and img.shape[1] <= 120


def _det_label(rng):
    num = rng.randint(1, 4)
    xy = rng.rand(num, 2) * 0.5
    wh = rng.rand(num, 2) * 0.4 + 0.1
    boxes = np.hstack([xy, xy + wh])
    cls = rng.randint(0, 5, size=(num, 1))
    return [2, 5] + np.hstack([cls, boxes]).ravel().tolist()


def test_image_det_iter_pads_labels_and_syncs(image_dir):
    root, names, arrays = image_dir
    rng = np.random.RandomState(0)
    labels = [_det_label(rng) for _ in names]
    imglist = [lab + [n] for lab, n in zip(labels, names)]
    most = max((len(lab) - 2) // 5 for lab in labels)
    it = mx.image.ImageDetIter(3, (3, 20, 20), imglist=imglist, path_root=root)
    assert it.label_shape == (most, 5)
    assert it.provide_label == [('label', (3, most, 5))]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    first = batches[0]
    for row in range(3):
        objs = np.array(labels[row][2:]).reshape(-1, 5)
        got = first.label[0].asnumpy()[row]
        np.testing.assert_allclose(got[:len(objs)], objs, rtol=1e-6)
        assert (got[len(objs):] == -1).all()
        # Default augmenters: force-resize to 20x20, no crop.
        expect = cv2.resize(arrays[row], (20, 20), interpolation=2)[:, :, ::-1]
        np.testing.assert_array_equal(first.data[0].asnumpy()[row],
                                      expect.transpose(2, 0, 1).astype(np.float32))
    other = mx.image.ImageDetIter(2, (3, 20, 20), imglist=[[2, 5, 0, .1, .1, .5, .5] +
                                                           [1, .2, .2, .3, .3] * 5 +
                                                           [names[0]]], path_root=root)
    assert other.label_shape == (6, 5)
    assert it.sync_label_shape(other) is other
    assert it.label_shape == (6, 5) and it.provide_label[0][1] == (3, 6, 5)
    it.reset()
    assert it.next().label[0].shape == (3, 6, 5)
    with pytest.raises(ValueError, match='reduce'):
        it.reshape(label_shape=(2, 5))
    with pytest.raises(ValueError, match='width'):
        it.reshape(label_shape=(8, 6))
    it.reshape(data_shape=(3, 12, 12))  # the augmenters stay as they are, as in MXNet
    assert it.provide_data == [('data', (3, 3, 12, 12))] and it.data_shape == (3, 12, 12)
    with pytest.raises(ValueError, match='3 channels'):
        it.reshape(data_shape=(1, 12, 12))


def test_image_det_iter_flips_boxes_with_pixels(image_dir):
    root, names, arrays = image_dir
    label = [2, 5, 3, 0.1, 0.2, 0.3, 0.6]
    aug = [mx.image.DetBorrowAug(mx.image.ForceResizeAug((16, 16), 1)),
           mx.image.DetHorizontalFlipAug(1.0), mx.image.DetBorrowAug(mx.image.CastAug())]
    it = mx.image.ImageDetIter(1, (3, 16, 16), imglist=[label + [names[2]]], path_root=root,
                               aug_list=aug)
    batch = it.next()
    np.testing.assert_allclose(batch.label[0].asnumpy()[0], [[3, 0.7, 0.2, 0.9, 0.6]],
                               rtol=1e-6)
    expect = cv2.resize(arrays[2], (16, 16), interpolation=1)[:, ::-1, ::-1]
    np.testing.assert_array_equal(batch.data[0].asnumpy()[0], expect.transpose(2, 0, 1))


def test_image_det_iter_with_all_augmenters_and_bad_labels(image_dir):
    root, names, _ = image_dir
    rng = np.random.RandomState(1)
    imglist = [_det_label(rng) + [n] for n in names]
    random.seed(5)
    np.random.seed(5)
    it = mx.image.ImageDetIter(2, (3, 24, 24), imglist=imglist, path_root=root, resize=40,
                               rand_crop=1, rand_pad=1, rand_gray=0.1, rand_mirror=True,
                               mean=True, std=np.array([1.1, 1.03, 1.05]), brightness=0.1,
                               contrast=0.1, saturation=0.1, pca_noise=0.1, hue=0.1,
                               inter_method=10, min_object_covered=0.5,
                               aspect_ratio_range=(0.2, 5), area_range=(0.1, 4.0),
                               min_eject_coverage=0.5, max_attempts=50)
    for batch in it:
        lab = batch.label[0].asnumpy()
        valid = lab[lab[:, :, 0] >= 0]
        assert valid.size and (valid[:, 1:] >= 0).all() and (valid[:, 1:] <= 1).all()
    with pytest.raises(RuntimeError, match='no valid label'):
        mx.image.ImageDetIter(1, (3, 8, 8), imglist=[[2, 5, 0, .5, .5, .4, .4, names[0]]],
                              path_root=root)


def test_image_det_iter_draw_next_draws_the_boxes(image_dir):
    root, names, arrays = image_dir
    label = [2, 5, 1, 0.25, 0.25, 0.75, 0.75]
    aug = [mx.image.DetBorrowAug(mx.image.ForceResizeAug((40, 40), 0)),
           mx.image.DetBorrowAug(mx.image.CastAug())]
    it = mx.image.ImageDetIter(1, (3, 40, 40), imglist=[label + [names[0]]], path_root=root,
                               aug_list=aug)
    images = list(it.draw_next(color=(255, 0, 0), thickness=1))
    assert len(images) == 1
    drawn = images[0]
    base = cv2.resize(arrays[0], (40, 40), interpolation=0)
    assert drawn.dtype == np.uint8 and drawn.shape == (40, 40, 3)
    # OpenCV draws in BGR: the RGB colour (255, 0, 0) is (0, 0, 255) there.
    np.testing.assert_array_equal(drawn[10, 10:31], np.tile([0, 0, 255], (21, 1)))
    np.testing.assert_array_equal(drawn[10:31, 30], np.tile([0, 0, 255], (21, 1)))
    np.testing.assert_array_equal(drawn[12:29, 12:29], base[12:29, 12:29])
