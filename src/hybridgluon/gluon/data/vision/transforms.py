"""Image transforms (MXNet 1.9.1's `gluon.data.vision.transforms`), written with the registry's
`image.*` ops (csrc/ops/image*.c) so that the hybridizable ones trace into graphs.

Images are HWC (or NHWC batches) until ToTensor makes them CHW float32 in [0, 1]. As in MXNet:
the element-wise colour transforms and the flips take one (H, W, C) image; Resize, CropResize,
ToTensor and Normalize also take batches; CenterCrop, RandomResizedCrop, Rotate,
RandomRotation and RandomApply are plain Blocks that decide in Python (crop boxes, angles,
coins). Random choices made in Python use Python's `random` (RandomResizedCrop, RandomApply) or
NumPy's global generator (RandomRotation), as MXNet's do; the ops draw from `mx.random`.

Interpolation codes follow OpenCV, as MXNet's do: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
4 Lanczos; CenterCrop and RandomResizedCrop also take 9 (auto) and 10 (random), which pick one
as MXNet's image module does.
"""
import math
import random as _pyrandom
from numbers import Number

import numpy as _np

from .... import ndarray as nd
from ....base import MXNetError
from ....ndarray import NDArray
from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'Rotate', 'RandomRotation',
           'RandomResizedCrop', 'CropResize', 'CenterCrop', 'Resize', 'RandomFlipLeftRight',
           'RandomFlipTopBottom', 'RandomBrightness', 'RandomContrast', 'RandomSaturation',
           'RandomHue', 'RandomColorJitter', 'RandomLighting', 'RandomApply']


class Compose(Sequential):
    """Applies transforms in order. Runs of consecutive HybridBlocks are grouped into one
    hybridized HybridSequential, as MXNet does, so they run as one cached graph."""

    def __init__(self, transforms):
        super().__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                hybrid.append(t)
                continue
            if len(hybrid) == 1:
                self.add(hybrid[0])
            elif len(hybrid) > 1:
                block = HybridSequential()
                block.add(*hybrid)
                block.hybridize()
                self.add(block)
            hybrid = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Converts the input to `dtype` (default 'float32')."""

    def __init__(self, dtype='float32'):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.Cast(x, dtype=self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) or (N, H, W, C) images of any number dtype -> (C, H, W) or (N, C, H, W)
    float32 divided by 255."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """(x - mean[c]) / std[c] of a (C, H, W) or (N, C, H, W) tensor, C in {1, 3}. `mean` and
    `std` are a number (every channel) or one value per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, mean=self._mean, std=self._std)


# ---- rotation (plain Blocks: the angle is drawn in Python) --------------------------------
def _imrotate(src, degrees, zoom_in=False, zoom_out=False):
    """Rotates a float32 (C, H, W) image or (N, C, H, W) batch by `degrees` (a number, or a
    sequence of one angle per image) about its centre, sampling bilinearly with zero padding.
    zoom_in scales so that no padding shows; zoom_out so that the whole image stays visible."""
    if zoom_in and zoom_out:
        raise ValueError('zoom_in and zoom_out cannot both be True')
    if src.dtype != _np.float32:
        raise TypeError('Rotate supports float32 images only (got %s): apply it after '
                        'ToTensor' % _np.dtype(src.dtype).name)
    single = src.ndim == 3
    if single:
        if not isinstance(degrees, Number):
            raise TypeError('a single image takes one rotation angle (a number)')
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise MXNetError('Rotate: expected a (C, H, W) image or an (N, C, H, W) batch, got '
                         'shape %s' % (src.shape,))
    n, _, h, w = src.shape
    angles = [float(degrees)] * n if isinstance(degrees, Number) else [float(a) for a in degrees]
    if len(angles) != n:
        raise ValueError('%d images but %d rotation angles' % (n, len(angles)))
    hs, ws = (h - 1) / 2.0, (w - 1) / 2.0
    # Target grid in pixels about the centre; rotate it, then normalise to [-1, 1] per axis
    # (after the rotation, so that the aspect ratio is kept).
    ys = (nd.arange(h, dtype='float32') - hs).reshape((1, h, 1))
    xs = (nd.arange(w, dtype='float32') - ws).reshape((1, 1, w))
    rad = [math.pi * a / 180.0 for a in angles]
    cos = nd.array([math.cos(r) for r in rad]).reshape((n, 1, 1))
    sin = nd.array([math.sin(r) for r in rad]).reshape((n, 1, 1))
    gx = nd.broadcast_sub(nd.broadcast_mul(xs, cos), nd.broadcast_mul(ys, sin))
    gy = nd.broadcast_add(nd.broadcast_mul(xs, sin), nd.broadcast_mul(ys, cos))
    gx = gx / (ws if ws else 1.0)
    gy = gy / (hs if hs else 1.0)
    if zoom_in or zoom_out:
        scales = [_zoom_scale(h, w, r, zoom_out) for r in rad]
        scale = nd.array(scales).reshape((n, 1, 1))
        gx = nd.broadcast_mul(gx, scale)
        gy = nd.broadcast_mul(gy, scale)
    grid = nd.stack(gx, gy, axis=1)
    out = nd.BilinearSampler(src, grid)
    return out[0] if single else out


def _zoom_scale(h, w, rad, zoom_out):
    """The grid scale that fits the rotated image's corners inside (zoom_in) or around
    (zoom_out) the original frame."""
    rho, corner = math.hypot(h, w), math.atan(h / w)
    x1 = abs(rho * math.cos(corner + abs(rad)))
    y1 = abs(rho * math.sin(corner + abs(rad)))
    x2 = abs(rho * math.cos(corner - abs(rad)))
    y2 = abs(rho * math.sin(corner - abs(rad)))
    max_x, max_y = max(x1, x2), max(y1, y2)
    if zoom_out:
        return max(max_x / w, max_y / h)
    return min(w / max_x, h / max_y)


class Rotate(Block):
    """Rotates a float32 (C, H, W) image or (N, C, H, W) batch by `rotation_degrees`,
    keeping its shape (zoom_in / zoom_out: see RandomRotation)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        return _imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotates a float32 (C, H, W) image or (N, C, H, W) batch by an angle drawn uniformly
    from angle_limits (one per image), with probability rotate_with_proba."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError('angle_limits must be an ordered pair (lower < upper)')
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError('rotate_with_proba must be between 0 and 1, got %s'
                             % (rotate_with_proba,))
        self._args = ((lower, upper), zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if _np.random.random() > self._rotate_with_proba:
            return x
        limits, zoom_in, zoom_out = self._args
        if not isinstance(x, NDArray) or x.dtype != _np.float32:
            raise TypeError('RandomRotation supports float32 images only: apply it after '
                            'ToTensor')
        if x.ndim == 3:
            angle = _np.random.uniform(*limits)
        else:
            angle = list(_np.random.uniform(*limits, size=x.shape[0]))
        return _imrotate(x, angle, zoom_in, zoom_out)


# ---- resizing and cropping ------------------------------------------------------------------
def _interp_method(interp, sizes):
    """MXNet's interpolation choice: 9 picks by the direction of the resize, 10 at random."""
    if interp == 9:
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return _pyrandom.randint(0, 4)
    return interp


def _fixed_crop(src, x0, y0, w, h, size=None, interp=1):
    """The w x h region at (x0, y0) of an HWC image, resized to size (w, h) if given."""
    out = nd.image.crop(src, x=x0, y=y0, width=w, height=h)
    if size is not None and (w, h) != tuple(size):
        interp = _interp_method(interp, (h, w, size[1], size[0]))
        out = nd.image.resize(out, size=tuple(size), interp=interp)
    return out


def _scale_down(src_size, size):
    """The largest (w, h) with the aspect ratio of `size` that fits in src_size."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _check_hwc(x, who):
    if not isinstance(x, NDArray) or x.ndim != 3:
        raise MXNetError('%s: expected an (H, W, C) NDArray image, got %s'
                         % (who, getattr(x, 'shape', type(x))))


def _size_pair(size):
    if isinstance(size, Number):
        return (int(size), int(size))
    return tuple(size)


class RandomResizedCrop(Block):
    """Crops a random region of an (H, W, C) image, of `scale` times its area and aspect ratio
    in `ratio`, and resizes it to `size` (int or (width, height)). After 10 failed tries it
    falls back to a centre crop."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._args = (_size_pair(size), scale, ratio, interpolation)

    def forward(self, x):
        _check_hwc(x, 'RandomResizedCrop')
        size, area, ratio, interp = self._args
        h, w = x.shape[0], x.shape[1]
        if isinstance(area, Number):
            area = (area, 1.0)
        for _ in range(10):
            target_area = _pyrandom.uniform(area[0], area[1]) * h * w
            new_ratio = math.exp(_pyrandom.uniform(math.log(ratio[0]), math.log(ratio[1])))
            new_w = int(round(math.sqrt(target_area * new_ratio)))
            new_h = int(round(math.sqrt(target_area / new_ratio)))
            if new_w <= w and new_h <= h:
                x0 = _pyrandom.randint(0, w - new_w)
                y0 = _pyrandom.randint(0, h - new_h)
                return _fixed_crop(x, x0, y0, new_w, new_h, size, interp)
        return _center_crop(x, size, interp)


def _center_crop(src, size, interp):
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = _scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return _fixed_crop(src, x0, y0, new_w, new_h, size, interp)


class CropResize(HybridBlock):
    """Crops the (width, height) window at (x, y) of an (H, W, C) image or (N, H, W, C)
    batch, then resizes it to `size` ((w, h) or an int) if given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x = x
        self._y = y
        self._width = width
        self._height = height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, x=self._x, y=self._y, width=self._width, height=self._height)
        if self._size:
            interp = 1 if self._interpolation is None else self._interpolation
            out = F.image.resize(out, size=self._size, keep_ratio=False, interp=interp)
        return out


class CenterCrop(Block):
    """Crops the centre of an (H, W, C) image to `size` (int or (width, height)), first
    scaling the crop region down to fit if the image is smaller (then resizing up)."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._args = (_size_pair(size), interpolation)

    def forward(self, x):
        _check_hwc(x, 'CenterCrop')
        return _center_crop(x, *self._args)


class Resize(HybridBlock):
    """Resizes an (H, W, C) image or (N, H, W, C) batch to `size`: an int (a square, or with
    keep_ratio the shorter side) or (width, height)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, size=self._size, keep_ratio=self._keep,
                              interp=self._interpolation)


# ---- flips and colour ---------------------------------------------------------------------
class RandomFlipLeftRight(HybridBlock):
    """Flips an (H, W, C) image left to right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flips an (H, W, C) image top to bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomFactor(HybridBlock):
    """A colour op with a factor drawn from [max(0, 1 - v), 1 + v]."""
    _op = None

    def __init__(self, value):
        super().__init__()
        self._args = (max(0, 1 - value), 1 + value)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, min_factor=self._args[0],
                                          max_factor=self._args[1])


class RandomBrightness(_RandomFactor):
    """Scales an (H, W, C) image by a factor from [max(0, 1 - brightness), 1 + brightness]."""
    _op = 'random_brightness'

    def __init__(self, brightness):
        super().__init__(brightness)


class RandomContrast(_RandomFactor):
    """Blends an (H, W, C) image with its mean grey by a factor from
    [max(0, 1 - contrast), 1 + contrast]."""
    _op = 'random_contrast'

    def __init__(self, contrast):
        super().__init__(contrast)


class RandomSaturation(_RandomFactor):
    """Blends an (H, W, C) image with its grey by a factor from
    [max(0, 1 - saturation), 1 + saturation]."""
    _op = 'random_saturation'

    def __init__(self, saturation):
        super().__init__(saturation)


class RandomHue(_RandomFactor):
    """Rotates the hue of an (H, W, C) image by factor * 360 degrees, the factor from
    [max(0, 1 - hue), 1 + hue] (MXNet's range)."""
    _op = 'random_hue'

    def __init__(self, hue):
        super().__init__(hue)


class RandomColorJitter(HybridBlock):
    """Jitters brightness, contrast, saturation and hue of an (H, W, C) image in a random
    order; a value of 0 leaves that property alone."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        b, c, s, h = self._args
        return F.image.random_color_jitter(x, brightness=b, contrast=c, saturation=s, hue=h)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise of an (H, W, C) image, alphas ~ normal(0, alpha)."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, alpha_std=self._alpha)


class RandomApply(Sequential):
    """Applies `transforms` (a Block) with probability p, else passes the input through."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < _pyrandom.random():
            return x
        return self.transforms(x)
