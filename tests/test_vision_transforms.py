"""gluon.data.vision.transforms against NumPy / OpenCV references and MXNet 1.9.1's
semantics: hybridizable transforms give the same result imperatively and hybridized (random
ones under the same seed), the plain Blocks decide crops, angles and coins in Python."""
import math
import random

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon.data.vision import transforms as T

nd = mx.nd


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def _u8(rng, shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def _hybrid_equal(make, x, seed=None):
    """make() run imperatively and hybridized (twice) on x: all equal. Random transforms are
    compared under the same mx.random seed."""
    block = make()
    if seed is not None:
        mx.random.seed(seed)
    a = block(x).asnumpy()
    hb = make()
    hb.hybridize()
    for _ in range(2):
        if seed is not None:
            mx.random.seed(seed)
        np.testing.assert_allclose(hb(x).asnumpy(), a, rtol=1e-6, atol=1e-6)
    return a


def _cv_resize(img, w, h, interp=1):
    cv2 = pytest.importorskip('cv2')
    return cv2.resize(img, (w, h), interpolation=interp).reshape(h, w, img.shape[2])


@pytest.mark.parametrize('shape', [(5, 7, 3), (2, 4, 6, 1)])
def test_to_tensor(rng, shape):
    img = _u8(rng, shape)
    got = _hybrid_equal(T.ToTensor, nd.array(img, dtype=np.uint8))
    axes = (2, 0, 1) if len(shape) == 3 else (0, 3, 1, 2)
    np.testing.assert_allclose(got, img.transpose(axes).astype(np.float32) / 255, rtol=1e-6)
    assert got.dtype == np.float32
    with pytest.raises(mx.MXNetError):
        T.ToTensor()(nd.ones((2, 2, 3, 4, 3), dtype='uint8'))


@pytest.mark.parametrize('shape', [(3, 4, 5), (2, 3, 4, 5), (1, 2, 2)])
def test_normalize(rng, shape):
    x = rng.random(shape).astype(np.float32)
    c = shape[-3]
    mean, std = (0.1, 0.2, 0.3)[:c], (0.5, 0.25, 2.0)[:c]
    m = np.array(mean, np.float32).reshape(c, 1, 1)
    s = np.array(std, np.float32).reshape(c, 1, 1)
    got = _hybrid_equal(lambda: T.Normalize(mean, std), nd.array(x))
    np.testing.assert_allclose(got, (x - m) / s, rtol=1e-5, atol=1e-6)
    got = _hybrid_equal(lambda: T.Normalize(0.5, 0.25), nd.array(x))
    np.testing.assert_allclose(got, (x - 0.5) / 0.25, rtol=1e-5, atol=1e-6)


def test_normalize_bad_input():
    with pytest.raises(mx.MXNetError):  # neither (C, H, W) nor (N, C, H, W)
        T.Normalize((0, 1, 2), (3, 2, 1))(nd.ones((5, 5, 3, 4, 4)))
    with pytest.raises(mx.MXNetError):  # 4 channels
        T.Normalize((0, 1, 2), (3, 2, 1))(nd.ones((5, 4, 4, 4)))
    with pytest.raises(mx.MXNetError):  # 2 means for 3 channels
        T.Normalize((0.1, 0.2), (1.0, 2.0, 3.0))(nd.ones((3, 4, 4)))


def test_cast(rng):
    x = _u8(rng, (3, 4))
    got = _hybrid_equal(lambda: T.Cast('float64'), nd.array(x, dtype=np.uint8))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x)
    assert T.Cast()(nd.array(x, dtype=np.uint8)).dtype == np.float32


@pytest.mark.parametrize('dtype', ['uint8', 'float32', 'float64'])
@pytest.mark.parametrize('interp', [0, 1, 2, 3, 4])
def test_resize_matches_opencv(rng, dtype, interp):
    img = (rng.random((30, 20, 3)) * 255).astype(dtype)
    got = _hybrid_equal(lambda: T.Resize((12, 17), interpolation=interp),
                        nd.array(img, dtype=dtype))
    want = _cv_resize(img, 12, 17, interp)
    assert got.shape == (17, 12, 3) and got.dtype == np.dtype(dtype)
    if dtype == 'uint8':
        assert np.abs(got.astype(int) - want).max() <= (1 if interp == 2 else 0)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


def test_resize_sizes_and_batches(rng):
    img = nd.array(rng.random((6, 10, 3)).astype(np.float32))
    assert T.Resize(4)(img).shape == (4, 4, 3)
    assert T.Resize(4, keep_ratio=True)(img).shape == (4, 6, 3)   # shorter side (h) -> 4
    tall = nd.array(rng.random((10, 6, 3)).astype(np.float32))
    assert T.Resize(3, keep_ratio=True)(tall).shape == (5, 3, 3)
    batch = nd.array(rng.random((2, 6, 10, 3)).astype(np.float32))
    out = _hybrid_equal(lambda: T.Resize((5, 4)), batch)
    assert out.shape == (2, 4, 5, 3)
    np.testing.assert_array_equal(out[1], T.Resize((5, 4))(batch[1]).asnumpy())
    for bad in (T.Resize(-150, keep_ratio=True), T.Resize((100, 100, 100)),
                T.Resize(3, interpolation=5)):
        with pytest.raises(mx.MXNetError):
            bad(img)
    with pytest.raises(mx.MXNetError, match='image'):
        T.Resize(3)(nd.ones((4, 4)))


@pytest.mark.parametrize('dtype', ['uint8', 'float32', 'float64'])
def test_crop_resize(rng, dtype):
    x = np.arange(60).reshape(5, 4, 3).astype(dtype)
    got = _hybrid_equal(lambda: T.CropResize(0, 0, 3, 2), nd.array(x, dtype=dtype))
    np.testing.assert_array_equal(got, x[0:2, 0:3])
    xb = np.arange(180).reshape(2, 6, 5, 3).astype(dtype)
    got = T.CropResize(1, 2, 3, 4)(nd.array(xb, dtype=dtype)).asnumpy()
    np.testing.assert_array_equal(got, xb[:, 2:6, 1:4])
    img = (rng.random((30, 20, 3)) * 255).astype(dtype)
    got = _hybrid_equal(lambda: T.CropResize(2, 1, 10, 5, (7, 6), 1), nd.array(img, dtype=dtype))
    want = _cv_resize(np.ascontiguousarray(img[1:6, 2:12]), 7, 6, 1)
    np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-5, atol=1e-3)
    for bad in (T.CropResize(0, 0, 10, 5, (-25, 25), 1), T.CropResize(0, 0, -10, -5),
                T.CropResize(15, 20, 20, 50)):
        with pytest.raises(mx.MXNetError):
            bad(nd.array(img, dtype=dtype))


def test_center_crop(rng):
    img = _u8(rng, (9, 12, 3))
    got = T.CenterCrop((4, 5))(nd.array(img, dtype=np.uint8)).asnumpy()
    np.testing.assert_array_equal(got, img[2:7, 4:8])
    got = T.CenterCrop(6)(nd.array(img, dtype=np.uint8)).asnumpy()
    np.testing.assert_array_equal(got, img[1:7, 3:9])
    # larger than the image: the largest centred region of that aspect ratio, resized
    small = rng.random((4, 6, 1)).astype(np.float32)
    got = T.CenterCrop(8)(nd.array(small)).asnumpy()
    np.testing.assert_allclose(got, _cv_resize(np.ascontiguousarray(small[:, 1:5]), 8, 8),
                               rtol=1e-5, atol=1e-5)


def test_random_resized_crop(rng):
    img = rng.random((10, 10, 2)).astype(np.float32)
    x = nd.array(img)
    for _ in range(5):
        assert T.RandomResizedCrop((6, 4))(x).shape == (4, 6, 2)
    # the whole image at ratio 1: a plain resize
    got = T.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(1.0, 1.0))(x).asnumpy()
    np.testing.assert_allclose(got, _cv_resize(img, 5, 5), rtol=1e-5, atol=1e-5)
    # an impossible area falls back to a centre crop
    got = T.RandomResizedCrop(4, scale=(5.0, 6.0))(x).asnumpy()
    np.testing.assert_allclose(got, T.CenterCrop(4)(x).asnumpy())
    # the box is drawn with Python's random, as MXNet's: the same seed, the same crop
    random.seed(3)
    a = T.RandomResizedCrop(4)(x).asnumpy()
    random.seed(3)
    np.testing.assert_array_equal(T.RandomResizedCrop(4)(x).asnumpy(), a)


@pytest.mark.parametrize('cls,axis', [(T.RandomFlipLeftRight, 1), (T.RandomFlipTopBottom, 0)])
def test_random_flips(rng, cls, axis):
    img = _u8(rng, (4, 5, 3))
    x = nd.array(img, dtype=np.uint8)
    seen = set()
    for seed in range(12):
        out = _hybrid_equal(cls, x, seed=seed)
        assert out.dtype == np.uint8
        if np.array_equal(out, img):
            seen.add('same')
        else:
            np.testing.assert_array_equal(out, np.flip(img, axis))
            seen.add('flipped')
    assert seen == {'same', 'flipped'}


@pytest.mark.parametrize('make,lo,hi', [(lambda: T.RandomBrightness(0.3), 0.7, 1.3),
                                        (lambda: T.RandomBrightness(1.5), 0.0, 2.5)])
def test_random_brightness(rng, make, lo, hi):
    img = (rng.random((4, 5, 3)) * 200 + 10).astype(np.float32)
    for seed in range(6):
        got = _hybrid_equal(make, nd.array(img), seed=seed)
        factor = got / img
        np.testing.assert_allclose(factor, factor.flat[0], rtol=1e-5)
        assert lo - 1e-6 <= factor.flat[0] <= hi + 1e-6


def test_random_contrast_saturation_hue_lighting(rng):
    img = (rng.random((4, 5, 3)) * 255).astype(np.float32)
    gray_mean = (img @ np.array([0.299, 0.587, 0.114], np.float32)).mean()
    for seed in range(4):
        got = _hybrid_equal(lambda: T.RandomContrast(0.5), nd.array(img), seed=seed)
        # got = a * img + (1 - a) * gray_mean for one a in [0.5, 1.5]
        a = (got[0, 0, 0] - gray_mean) / (img[0, 0, 0] - gray_mean)
        assert 0.5 - 1e-4 <= a <= 1.5 + 1e-4
        np.testing.assert_allclose(got, a * img + (1 - a) * gray_mean, rtol=1e-4, atol=1e-3)
        got = _hybrid_equal(lambda: T.RandomSaturation(0.5), nd.array(img), seed=seed)
        assert got.shape == img.shape
        got = _hybrid_equal(lambda: T.RandomHue(0.5), nd.array(img), seed=seed)
        # a hue rotation keeps each pixel's max + min (HLS lightness)
        np.testing.assert_allclose(got.max(-1) + got.min(-1), img.max(-1) + img.min(-1),
                                   rtol=1e-4, atol=1e-2)
        got = _hybrid_equal(lambda: T.RandomLighting(0.1), nd.array(img), seed=seed)
        shift = got - img  # one offset per channel
        np.testing.assert_allclose(shift, np.broadcast_to(shift[0, 0], shift.shape), atol=1e-3)


def test_random_color_jitter(rng):
    img = _u8(rng, (6, 5, 3))
    x = nd.array(img, dtype=np.uint8)
    np.testing.assert_array_equal(T.RandomColorJitter()(x).asnumpy(), img)
    for seed in range(4):
        got = _hybrid_equal(lambda: T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), x, seed=seed)
        assert got.dtype == np.uint8 and got.shape == img.shape


def test_rotate(rng):
    with pytest.raises(TypeError):
        T.Rotate(10.)(nd.ones((3, 30, 60), dtype='uint8'))
    assert T.Rotate(10.)(nd.ones((3, 30, 60))).shape == (3, 30, 60)
    assert T.Rotate(10.)(nd.ones((3, 3, 30, 60))).shape == (3, 3, 30, 60)
    img = rng.random((2, 5, 5)).astype(np.float32)
    # quarter turns of a square image move pixels exactly (counter-clockwise for positive
    # angles in image coordinates, as MXNet's grid rotation)
    for k, deg in enumerate((90., 180., 270., 360.)):
        got = T.Rotate(deg)(nd.array(img)).asnumpy()
        np.testing.assert_allclose(got, np.rot90(img, k=k + 1, axes=(1, 2)), atol=1e-5)
    single = nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    np.testing.assert_allclose(T.Rotate(90.)(single).asnumpy(),
                               [[[0., 1., 0.], [0., 0., 0.], [0., 0., 0.]]], atol=1e-6)
    # 45 degrees: the centre stays, zoom_in shows no zero padding, zoom_out keeps the corners
    ones = nd.ones((1, 9, 9))
    plain = T.Rotate(45.)(ones).asnumpy()
    assert plain[0, 4, 4] == pytest.approx(1.0) and plain[0, 0, 0] == 0
    assert T.Rotate(45., zoom_in=True)(ones).asnumpy().min() > 0.99
    out = T.Rotate(45., zoom_out=True)(nd.array(img[:1])).asnumpy()
    assert out[0, 0, 0] == 0 and out[0, 2, 2] == pytest.approx(img[0, 2, 2])
    with pytest.raises(ValueError):
        T.Rotate(10., zoom_in=True, zoom_out=True)(ones)


def test_random_rotation(rng):
    with pytest.raises(ValueError):
        T.RandomRotation([-10, 10.], rotate_with_proba=1.1)
    with pytest.raises(ValueError):
        T.RandomRotation([10, -10.])
    with pytest.raises(TypeError):
        T.RandomRotation([-10, 10.])(nd.ones((3, 30, 60), dtype='uint8'))
    data = nd.array(rng.standard_normal((3, 30, 60)).astype(np.float32))
    np.testing.assert_array_equal(T.RandomRotation([-100., 100.], rotate_with_proba=0.0)(data)
                                  .asnumpy(), data.asnumpy())
    # the angle comes from NumPy's global generator, as in MXNet
    np.random.seed(4)
    got = T.RandomRotation([-30., 30.])(data).asnumpy()
    np.random.seed(4)
    np.random.random()
    angle = np.random.uniform(-30., 30.)
    np.testing.assert_allclose(got, T.Rotate(angle)(data).asnumpy(), rtol=1e-6, atol=1e-6)
    assert T.RandomRotation([-10, 10.])(nd.ones((2, 3, 8, 6))).shape == (2, 3, 8, 6)


def test_random_apply(rng):
    img = nd.array(_u8(rng, (10, 10, 3)), dtype='uint8')
    inner = T.Compose([T.Resize(30), T.RandomResizedCrop(24)])
    assert T.RandomApply(inner, 1.0)(img).shape == (24, 24, 3)
    assert T.RandomApply(inner, 0.0)(img) is img
    random.seed(0)
    hits = sum(T.RandomApply(inner, 0.5)(img).shape[0] == 24 for _ in range(200))
    assert 60 < hits < 140


def test_compose_groups_hybrid_blocks(rng):
    c = T.Compose([T.Resize(6), T.ToTensor(), T.Normalize(0.5, 0.5), T.CenterCrop(3),
                   T.Cast('float64')])
    kinds = [type(b).__name__ for b in c._children.values()]
    assert kinds == ['HybridSequential', 'CenterCrop', 'Cast']
    img = _u8(rng, (8, 8, 3))
    c2 = T.Compose([T.ToTensor(), T.Normalize((0.1, 0.2, 0.3), (0.3, 0.2, 0.1))])
    got = c2(nd.array(img, dtype=np.uint8)).asnumpy()
    m = np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1, 1)
    s = np.array([0.3, 0.2, 0.1], np.float32).reshape(3, 1, 1)
    np.testing.assert_allclose(got, (img.transpose(2, 0, 1) / 255.0 - m) / s, rtol=1e-5,
                               atol=1e-5)
    transforms = [T.ToTensor()]
    T.Compose(transforms)
    assert len(transforms) == 1  # the caller's list is left alone


def test_full_pipeline():
    """MXNet's own pipeline of every transform runs end to end."""
    transform = T.Compose([
        T.Resize(300), T.Resize(300, keep_ratio=True), T.CenterCrop(256),
        T.RandomResizedCrop(224), T.RandomFlipLeftRight(),
        T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), T.RandomBrightness(0.1),
        T.RandomContrast(0.1), T.RandomSaturation(0.1), T.RandomHue(0.1),
        T.RandomLighting(0.1), T.ToTensor(), T.RandomRotation([-10., 10.]),
        T.Normalize([0, 0, 0], [1, 1, 1])])
    out = transform(nd.ones((245, 480, 3), dtype='uint8'))
    assert out.shape == (3, 224, 224) and out.dtype == np.float32
    assert math.isfinite(float(out.sum().asscalar()))
