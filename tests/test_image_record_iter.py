"""mx.io.ImageRecordIter and its uint8/int8 variants: against real MXNet 1.9.1's outputs on the
same .rec (tests/mxnet_ref/recordio/, tests/mxnet_ref/gen_recordio.py) and against a NumPy
reference built on OpenCV-decoded images."""
import os
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.base import MXNetError

cv2 = pytest.importorskip('cv2')

REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref', 'recordio')
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref'))
from recordio_cases import CASES, iterator_kwargs  # noqa: E402
REC = os.path.join(REF, 'images.rec')
IDX = os.path.join(REF, 'images.idx')



def _images(path=REC, idx=IDX, flag=cv2.IMREAD_COLOR):
    """[(label, RGB HxWxC uint8)] of every record, decoded here with OpenCV."""
    r = mx.recordio.MXIndexedRecordIO(idx, path, 'r')
    out = []
    for k in r.keys:
        h, img = mx.recordio.unpack_img(r.read_idx(k), flag)
        img = img[:, :, ::-1] if img.ndim == 3 else img[:, :, None]
        out.append((h.label, np.ascontiguousarray(img)))
    return out


def _center(img, h, w):
    y, x = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return img[y:y + h, x:x + w]


@pytest.mark.parametrize('name', sorted(CASES))
def test_matches_mxnet(name):
    cls, kw = CASES[name]
    kw = iterator_kwargs(kw, REF)
    exp = np.load(os.path.join(REF, 'expected.npz'))
    batches = list(getattr(mx.io, cls)(**kw))
    assert len(batches) == len(exp[name + '_data'])
    for b, data, label, pad in zip(batches, exp[name + '_data'], exp[name + '_label'],
                                   exp[name + '_pad']):
        got = b.data[0].asnumpy()
        assert got.dtype == data.dtype and got.shape == data.shape
        # Same JPEG bytes, and OpenCV's libjpeg-turbo on both sides: identical pixels are the
        # norm; one level of slack allows for a decoder build that rounds differently.
        diff = np.abs(got.astype(np.float64) - data)
        tol = 1.0 if data.dtype != np.float32 or 'norm' not in name else 0.5 / 57
        if name.startswith('aff'):
            # warpAffine's fixed-point weights differ between OpenCV releases (MXNet bundles
            # its own): a few levels at most, a tenth of a level on average.
            tol = 3.0
            assert diff.mean() < 0.3, (name, diff.mean())
        assert diff.max() <= tol + 1e-4, (name, diff.max())
        np.testing.assert_array_equal(b.label[0].asnumpy(), label)
        assert b.pad == pad


def test_numpy_reference_center_crop_and_normalise():
    imgs = _images()
    mean, std, scale = np.array([10.0, 20.0, 30.0]), np.array([2.0, 4.0, 8.0]), 0.25
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 30, 34), batch_size=5,
                               mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=4, std_b=8,
                               scale=scale, preprocess_threads=3)
    assert it.provide_data[0].shape == (5, 3, 30, 34)
    assert it.provide_label[0].shape == (5,)
    seen = 0
    for b in it:
        got = b.data[0].asnumpy()
        n = 5 - b.pad
        for i in range(n):
            label, img = imgs[seen + i]
            crop = _center(img, 30, 34).astype(np.float64)
            want = ((crop - mean) / std * scale).transpose(2, 0, 1)
            np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-5)
            assert b.label[0].asnumpy()[i] == label
        seen += n
    assert seen == len(imgs)


def test_resize_reference():
    imgs = _images()
    it = mx.io.ImageRecordUInt8Iter(path_imgrec=REC, data_shape=(3, 50, 50), batch_size=12,
                                    resize=60)
    got = next(it).data[0].asnumpy()
    for i, (_, img) in enumerate(imgs):
        h, w = img.shape[:2]
        size = (60, 60 * h // w) if h > w else (60 * w // h, 60)
        want = _center(cv2.resize(img, size, interpolation=cv2.INTER_LINEAR), 50, 50)
        np.testing.assert_array_equal(got[i], want.transpose(2, 0, 1))


def test_random_crop_and_mirror_are_windows_and_seeded():
    imgs = _images()

    def run(seed):
        it = mx.io.ImageRecordUInt8Iter(path_imgrec=REC, data_shape=(3, 20, 20),
                                        batch_size=12, rand_crop=True, rand_mirror=True,
                                        seed=seed, preprocess_threads=2)
        return next(it).data[0].asnumpy()

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    mirrored = 0
    for i, (_, img) in enumerate(imgs):
        out = a[i].transpose(1, 2, 0)
        found = None
        for y in range(img.shape[0] - 19):
            for x in range(img.shape[1] - 19):
                win = img[y:y + 20, x:x + 20]
                if np.array_equal(win, out):
                    found = 'plain'
                elif np.array_equal(win[:, ::-1], out):
                    found = 'mirror'
                if found:
                    break
            if found:
                break
        assert found, i
        mirrored += found == 'mirror'
    assert 0 < mirrored < len(imgs)


def test_shuffle_covers_every_record_once_per_epoch():
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=4,
                               shuffle=True, seed=3)
    epochs = []
    for _ in range(3):
        labels = np.concatenate([b.label[0].asnumpy() for b in it])
        assert sorted(labels) == list(range(12))
        epochs.append(labels)
        it.reset()
    assert any(not np.array_equal(epochs[0], e) for e in epochs[1:])
    again = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=4,
                                  shuffle=True, seed=3)
    np.testing.assert_array_equal(
        np.concatenate([b.label[0].asnumpy() for b in again]), epochs[0])


def test_round_batch_pads_and_carries_over():
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=5)
    # What MXNet 1.9.1 gives on this file: the padded batch borrows from the start, and the
    # next epoch starts after the records it borrowed.
    want = [[(0, [0, 1, 2, 3, 4]), (0, [5, 6, 7, 8, 9]), (3, [10, 11, 0, 1, 2])],
            [(0, [3, 4, 5, 6, 7]), (1, [8, 9, 10, 11, 0])],
            [(0, [1, 2, 3, 4, 5]), (0, [6, 7, 8, 9, 10]), (4, [11, 0, 1, 2, 3])]]
    for epoch in want:
        assert [(b.pad, list(b.label[0].asnumpy())) for b in it] == epoch
        it.reset()
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=5,
                               round_batch=False)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 3]
    assert list(batches[-1].label[0].asnumpy()[:2]) == [10, 11]
    assert not batches[-1].data[0].asnumpy()[2:].any()


def test_iter_next_protocol_and_threads_agree():
    kw = dict(path_imgrec=REC, data_shape=(3, 24, 24), batch_size=3)
    one = mx.io.ImageRecordIter(preprocess_threads=1, prefetch_buffer=1, **kw)
    many = mx.io.ImageRecordIter(preprocess_threads=4, prefetch_buffer=3, **kw)
    n = 0
    while one.iter_next():
        assert many.iter_next()
        np.testing.assert_array_equal(one.getdata()[0].asnumpy(), many.getdata()[0].asnumpy())
        np.testing.assert_array_equal(one.getlabel()[0].asnumpy(),
                                      many.getlabel()[0].asnumpy())
        assert one.getpad() == many.getpad() == 0
        n += 1
    assert n == 4 and not many.iter_next()
    # reset in the middle of an epoch starts it over
    many.reset()
    next(many)
    many.reset()
    assert list(next(many).label[0].asnumpy()) == [0, 1, 2]
    many.close()
    assert not many.iter_next()
    with pytest.raises(MXNetError, match='close'):
        many.reset()


def test_mean_img_computed_saved_and_used(tmp_path):
    imgs = _images()
    path = str(tmp_path / 'mean.nd')
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=12,
                               mean_img=path)
    want_mean = np.mean([_center(img, 20, 20).astype(np.float64) for _, img in imgs],
                        axis=0).transpose(2, 0, 1)
    saved = mx.nd.load(path)
    np.testing.assert_allclose(saved['mean_img'].asnumpy(), want_mean, rtol=1e-5)
    got = next(it).data[0].asnumpy()
    for i, (_, img) in enumerate(imgs):
        want = _center(img, 20, 20).transpose(2, 0, 1) - want_mean
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-4)
    # a second iterator loads the file instead of computing it
    mx.nd.save(path, {'mean_img': mx.nd.ones((3, 20, 20)) * 7})
    it2 = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=12,
                                mean_img=path)
    np.testing.assert_allclose(next(it2).data[0].asnumpy()[0],
                               _center(imgs[0][1], 20, 20).transpose(2, 0, 1) - 7.0)


def test_errors(tmp_path):
    with pytest.raises(MXNetError, match='channels'):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(5, 16, 16), batch_size=2)
    with pytest.raises(MXNetError, match='cannot open'):
        mx.io.ImageRecordIter(path_imgrec=str(tmp_path / 'none.rec'), data_shape=(3, 8, 8),
                              batch_size=2)
    with pytest.raises(MXNetError, match='pca_noise'):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                              pca_noise=0.1)
    with pytest.raises(MXNetError, match='inter_method'):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                              inter_method=7)
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                               label_width=2)
    with pytest.raises(MXNetError, match='label_width'):
        next(it)
    with pytest.raises(MXNetError, match='part_index'):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                              num_parts=2, part_index=2)
    short = tmp_path / 'short.lst'
    short.write_text('0\t1.0\ta.jpg\n')
    with pytest.raises(MXNetError, match='label_width'):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                              label_width=2, path_imglist=str(short))
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=1,
                               path_imglist=str(short))
    assert next(it).label[0].asnumpy()[0] == 1.0  # record id 0 is listed, id 1 is not
    with pytest.raises(MXNetError, match='not in path_imglist'):
        next(it)
    bad = tmp_path / 'bad.rec'
    w = mx.recordio.MXRecordIO(str(bad), 'w')
    w.write(mx.recordio.pack((0, 0.0, 0, 0), b'not a jpeg'))
    w.close()
    it = mx.io.ImageRecordIter(path_imgrec=str(bad), data_shape=(3, 8, 8), batch_size=1)
    with pytest.raises(MXNetError, match='decode'):
        next(it)
    garbage = tmp_path / 'garbage.rec'
    garbage.write_bytes(b'\0' * 64)
    with pytest.raises(MXNetError, match='magic'):
        mx.io.ImageRecordIter(path_imgrec=str(garbage), data_shape=(3, 8, 8), batch_size=1)


def test_kernel_rejects_bad_windows():
    """The C kernel checks the window and the output size itself (it is public C API)."""
    from hybridgluon.io.image_record import _kernel
    fn, lib = _kernel()
    img = np.zeros((10, 12, 3), np.uint8)
    out = np.zeros((3, 4, 4), np.float32)
    args = [img.ctypes.data, 10, 12, 3, 36]
    assert fn(*args, 6, 8, 4, 4, 0, 1, None, 0, out.ctypes.data, out.nbytes) == 0
    assert fn(*args, 7, 0, 4, 4, 0, 1, None, 0, out.ctypes.data, out.nbytes) != 0
    assert b'does not fit' in lib.hg_last_error()
    assert fn(*args, 0, 0, 4, 4, 0, 1, None, 0, out.ctypes.data, out.nbytes - 1) != 0
    assert b'needs' in lib.hg_last_error()
    assert fn(*args[:3], 5, 36, 0, 0, 4, 4, 0, 1, None, 0, out.ctypes.data, out.nbytes) != 0
    assert fn(*args, 0, 0, 4, 4, 0, 1, None, 6, out.ctypes.data, out.nbytes) != 0


def test_random_affine_and_colour_are_seeded():
    kw = dict(path_imgrec=REC, data_shape=(3, 28, 28), batch_size=12, rand_crop=True,
              rand_mirror=True, max_random_scale=1.3, min_random_scale=0.9, max_rotate_angle=10,
              max_shear_ratio=0.2, max_aspect_ratio=0.2, random_h=10, random_s=20, random_l=30,
              pad=2, preprocess_threads=3)

    def batch(seed_aug):
        return next(mx.io.ImageRecordUInt8Iter(seed_aug=seed_aug, **kw)).data[0].asnumpy()

    a, b, c = batch(3), batch(3), batch(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    plain = next(mx.io.ImageRecordUInt8Iter(path_imgrec=REC, data_shape=(3, 28, 28),
                                            batch_size=12)).data[0].asnumpy()
    assert not np.array_equal(a, plain)


def test_lightness_jitter_is_an_hls_shift():
    """random_l alone: each output is the centre crop shifted in HLS lightness by one integer
    in [-random_l, random_l], clipped to 0..255 (reference: OpenCV's HLS conversion and
    NumPy)."""
    imgs = _images()
    it = mx.io.ImageRecordUInt8Iter(path_imgrec=REC, data_shape=(3, 24, 24), batch_size=12,
                                    random_l=12, seed_aug=5)
    got = next(it).data[0].asnumpy()
    shifts = set()
    for i, (_, img) in enumerate(imgs):
        hls = cv2.cvtColor(np.ascontiguousarray(_center(img, 24, 24)[:, :, ::-1]),
                           cv2.COLOR_BGR2HLS).astype(int)
        match = []
        for d in range(-12, 13):
            moved = hls.copy()
            moved[:, :, 1] = np.clip(moved[:, :, 1] + d, 0, 255)
            rgb = cv2.cvtColor(moved.astype(np.uint8), cv2.COLOR_HLS2BGR)[:, :, ::-1]
            if np.array_equal(rgb.transpose(2, 0, 1), got[i]):
                match.append(d)
        assert match, i
        shifts.update(match)
    assert len(shifts) > 1


def test_contrast_and_illumination_are_affine_per_image():
    """MXNet's lighting noise on float output: per image, out = det * contrast + illumination
    * scale / std[c], with contrast in 1 +- max_random_contrast and one illumination in
    +-max_random_illumination shared by the channels (what real MXNet 1.9.1 gives too)."""
    kw = dict(path_imgrec=REC, data_shape=(3, 20, 20), batch_size=12, std_r=2.0, std_b=4.0,
              mean_g=50, scale=0.5)
    det = next(mx.io.ImageRecordIter(**kw)).data[0].asnumpy().astype(np.float64)
    got = next(mx.io.ImageRecordIter(max_random_contrast=0.3, max_random_illumination=10,
                                     seed_aug=2, **kw)).data[0].asnumpy()
    std = np.array([2.0, 1.0, 4.0])
    contrasts = []
    for i in range(12):
        # least squares for (contrast, illumination) over all pixels of the image
        a = np.stack([det[i].ravel(), np.repeat(0.5 / std, 400)], axis=1)
        (contrast, illum), *_ = np.linalg.lstsq(a, got[i].ravel().astype(np.float64),
                                                rcond=None)
        np.testing.assert_allclose(a @ [contrast, illum], got[i].ravel(), rtol=1e-5, atol=1e-4)
        assert 0.7 - 1e-6 <= contrast <= 1.3 + 1e-6 and abs(illum) <= 10 + 1e-4
        contrasts.append(contrast)
    assert np.ptp(contrasts) > 0.01
    # integer outputs ignore lighting noise, as in MXNet
    u8 = dict(kw, max_random_contrast=0.3, max_random_illumination=10)
    np.testing.assert_array_equal(
        next(mx.io.ImageRecordUInt8Iter(**u8)).data[0].asnumpy(),
        next(mx.io.ImageRecordUInt8Iter(**kw)).data[0].asnumpy())


def test_batches_in_flight_survive_reset_errors_and_collection():
    """Worker tasks write into a batch's NDArray through a raw pointer: the batch must stay
    alive until its last task ends, whether the iterator is reset, hits an error or is
    garbage-collected with batches in flight (the ASan run of the suite checks the memory)."""
    import gc
    kw = dict(path_imgrec=REC, data_shape=(3, 64, 64), batch_size=3, resize=240,
              preprocess_threads=4, prefetch_buffer=4)
    want = next(mx.io.ImageRecordUInt8Iter(**kw)).data[0].asnumpy()
    for _ in range(4):
        it = mx.io.ImageRecordUInt8Iter(**kw)
        it.reset()  # drains the batches queued at construction
        np.testing.assert_array_equal(next(it).data[0].asnumpy(), want)
        del it
        gc.collect()
    it = mx.io.ImageRecordUInt8Iter(label_width=2, **kw)  # every task fails on the labels
    with pytest.raises(MXNetError, match='label_width'):
        next(it)
    del it
    gc.collect()


def test_mean_img_matches_mxnet(tmp_path):
    exp = np.load(os.path.join(REF, 'expected.npz'))
    # a given mean file replaces mean_r/g/b; std and scale still apply
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=12,
                               mean_img=os.path.join(REF, 'mean_given.nd'), std_r=2, std_g=3,
                               scale=0.5, mean_r=50)
    np.testing.assert_allclose(next(it).data[0].asnumpy(), exp['mean_given_data'], atol=1e-4)
    # a missing one is computed (center crops, no augmentation) and saved as MXNet does
    path = str(tmp_path / 'mean.nd')
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 16, 16), batch_size=12,
                               mean_img=path)
    np.testing.assert_allclose(mx.nd.load(path)['mean_img'].asnumpy(),
                               exp['mean_computed_mean'], atol=1e-4)
    np.testing.assert_allclose(next(it).data[0].asnumpy(), exp['mean_computed_data'], atol=1e-4)
