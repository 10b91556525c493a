"""The functions of `mx.image`: decoding, reading, resizing, borders, crops, normalisation and
rotation of (H, W, C) images (rotation: (C, H, W) float32, as MXNet's imrotate). `image.py`
re-exports them next to the augmenters, so `mx.image.image.imread` and friends exist as in MXNet.
Random crops draw from Python's `random` (rotation angles from `np.random`), as MXNet does.
"""
import random
import warnings
from numbers import Number

import numpy as np

from ..base import MXNetValueError, MXNetTypeError, numeric_types
from .. import ndarray as nd
from . import _cv

__all__ = ['imread', 'imdecode', 'imresize', 'scale_down', 'copyMakeBorder', 'resize_short',
           'fixed_crop', 'random_crop', 'center_crop', 'color_normalize', 'random_size_crop',
           'imrotate', 'random_rotate']


def imread(filename, *args, **kwargs):
    """Reads an image file into an (H, W, C) uint8 NDArray (RGB unless to_rgb=False).

    flag: 1 colour (3 channels), 0 grayscale (1 channel). out: an NDArray to write into."""
    return _cv.cvimread(filename, *args, **kwargs)


def imdecode(buf, *args, **kwargs):
    """Decodes an encoded image (bytes, bytearray, numpy.ndarray or NDArray of uint8) into an
    (H, W, C) uint8 NDArray. flag, to_rgb and out as in imread."""
    if not isinstance(buf, (nd.NDArray, bytes, bytearray, np.ndarray)):
        raise MXNetValueError('imdecode: buf must be of type bytes, bytearray or numpy.ndarray '
                              '(got %s); encode a str to bytes first' % type(buf).__name__)
    return _cv.cvimdecode(buf, *args, **kwargs)


def imresize(src, w, h, *args, **kwargs):
    """Resizes an (H, W, C) image to width w and height h. interp (default 1) is OpenCV's code:
    0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos. out: an NDArray to write into."""
    return _cv.cvimresize(src, w, h, *args, **kwargs)


def copyMakeBorder(src, top, bot, left, right, *args, **kwargs):
    """Pads an image by top/bot/left/right pixels; type is OpenCV's border type (0 constant,
    1 replicate, 2 reflect, 3 wrap, 4 reflect-101), value/values fill a constant border."""
    return _cv.cvcopyMakeBorder(src, top, bot, left, right, *args, **kwargs)


def scale_down(src_size, size):
    """Shrinks the crop size (w, h) to fit inside src_size (w, h), keeping its aspect ratio."""
    w, h = size
    src_w, src_h = src_size
    if src_h < h:
        w, h = float(w * src_h) / h, src_h
    if src_w < w:
        w, h = src_w, float(h * src_w) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    """Turns 9 (pick by the resize direction) and 10 (random) into a concrete OpenCV code;
    sizes is (old_h, old_w, new_h, new_w)."""
    if interp == 9:
        if not sizes:
            return 2
        if len(sizes) != 4:
            raise MXNetValueError('sizes must be (old_h, old_w, new_h, new_w), got %r'
                                  % (sizes,))
        old_h, old_w, new_h, new_w = sizes
        if new_h > old_h and new_w > old_w:
            return 2
        if new_h < old_h and new_w < old_w:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetValueError('Unknown interp method %r (0-4, 9 auto, 10 random)' % (interp,))
    return interp


def _hwc_shape(src, what):
    if not isinstance(src, nd.NDArray) or src.ndim != 3:
        raise MXNetValueError('%s: src must be an (H, W, C) NDArray, got %s'
                              % (what, getattr(src, 'shape', type(src).__name__)))
    return src.shape


def resize_short(src, size, interp=2):
    """Resizes so that the shorter edge is `size` pixels, keeping the aspect ratio."""
    h, w, _ = _hwc_shape(src, 'resize_short')
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops the (w, h) window at (x0, y0), then resizes it to size (w, h) if given."""
    height, width, channels = _hwc_shape(src, 'fixed_crop')
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > width or y0 + h > height:
        raise MXNetValueError('fixed_crop: window x0=%d y0=%d w=%d h=%d is outside the %dx%d '
                              'image' % (x0, y0, w, h, width, height))
    out = nd.slice(src, begin=(int(y0), int(x0), 0), end=(int(y0 + h), int(x0 + w), channels))
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, *size, interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def random_crop(src, size, interp=2):
    """Crops a random window of size (w, h) (scaled down to fit) and resizes it to size.
    Returns (image, (x0, y0, w, h))."""
    h, w, _ = _hwc_shape(src, 'random_crop')
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crops the central window of size (w, h) (scaled down to fit) and resizes it to size.
    Returns (image, (x0, y0, w, h))."""
    h, w, _ = _hwc_shape(src, 'center_crop')
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std over the channel axis, computed in place in src and returned."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Crops a window whose area is a random fraction `area` (a number: (area, 1)) of the image
    and whose aspect ratio is log-uniform in `ratio`, then resizes it to size; falls back to a
    centre crop after 10 tries. Returns (image, (x0, y0, w, h))."""
    h, w, _ = _hwc_shape(src, 'random_size_crop')
    if 'min_area' in kwargs:
        warnings.warn('`min_area` is deprecated. Please use `area` instead.', DeprecationWarning)
        area = kwargs.pop('min_area')
    if kwargs:
        raise MXNetTypeError('random_size_crop: unexpected keyword arguments %s'
                             % sorted(kwargs))
    if isinstance(area, numeric_types):
        area = (area, 1.0)
    log_lo, log_hi = np.log(ratio[0]), np.log(ratio[1])
    for _ in range(10):
        target = random.uniform(area[0], area[1]) * h * w
        aspect = np.exp(random.uniform(log_lo, log_hi))
        new_w = int(round(np.sqrt(target * aspect)))
        new_h = int(round(np.sqrt(target / aspect)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def _rotation_scale(h, w, rad, zoom_out):
    """The factor that makes the rotated image fit (zoom_out) or fill (zoom_in) the frame."""
    hh, ww = nd.array([h]), nd.array([w])
    rho = nd.sqrt(hh * hh + ww * ww)
    corner = nd.arctan(hh / ww)
    x1 = nd.abs(rho * nd.cos(corner + nd.abs(rad)))
    y1 = nd.abs(rho * nd.sin(corner + nd.abs(rad)))
    x2 = nd.abs(rho * nd.cos(corner - nd.abs(rad)))
    y2 = nd.abs(rho * nd.sin(corner - nd.abs(rad)))
    max_x, max_y = nd.maximum(x1, x2), nd.maximum(y1, y2)
    if zoom_out:
        scale = nd.maximum(max_x / ww, max_y / hh)
    else:
        scale = nd.minimum(ww / max_x, hh / max_y)
    return scale.expand_dims(axis=3)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates float32 images in (C, H, W) or (N, C, H, W) layout by rotation_degrees
    (anticlockwise; a number, or one angle per image) around their centres with bilinear
    sampling; zoom_in crops to avoid empty corners, zoom_out shrinks to keep the whole image."""
    if zoom_in and zoom_out:
        raise ValueError('`zoom_in` and `zoom_out` cannot be both True')
    if src.dtype is not np.float32:
        raise TypeError('Only `float32` images are supported by this function')
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, Number):
            raise TypeError('When a single image is passed the rotation angle is required to '
                            'be a scalar.')
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError('Only 3D and 4D are supported by this function')
    if isinstance(rotation_degrees, Number):
        rotation_degrees = nd.array([rotation_degrees] * src.shape[0], ctx=src.context)
    if src.shape[0] != len(rotation_degrees):
        raise ValueError('The number of images must be equal to the number of rotation angles')
    rad = (rotation_degrees.as_in_context(src.context) * (np.pi / 180))
    rad = rad.expand_dims(axis=1).expand_dims(axis=2)
    _, _, h, w = src.shape
    # BilinearSampler's grid is in [-1, 1]: pixel centres relative to the image centre.
    half_h, half_w = float(h - 1) / 2, float(w - 1) / 2
    rows = (nd.repeat(nd.arange(h, ctx=src.context).reshape(h, 1), w, axis=1) - half_h)
    cols = (nd.repeat(nd.arange(w, ctx=src.context).reshape(1, w), h, axis=0) - half_w)
    rows, cols = rows.expand_dims(axis=0), cols.expand_dims(axis=0)
    cos_a, sin_a = nd.cos(rad), nd.sin(rad)
    grid_x = (cols * cos_a - rows * sin_a) / half_w
    grid_y = (cols * sin_a + rows * cos_a) / half_h
    grid = nd.concat(grid_x.expand_dims(axis=1), grid_y.expand_dims(axis=1), dim=1)
    if zoom_in or zoom_out:
        grid = grid * _rotation_scale(h, w, rad, zoom_out)
    rotated = nd.BilinearSampler(src, grid)
    return rotated[0] if single else rotated


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """imrotate by an angle drawn uniformly from angle_limits (one per image of a batch)."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
