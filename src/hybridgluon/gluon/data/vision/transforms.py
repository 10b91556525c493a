"""Image transforms (MXNet's `gluon.data.vision.transforms`), written with nd/sym ops.

Images are HWC (or NHWC batches) until ToTensor makes them CHW float32 in [0, 1]. Axes are
counted from the end (width -2, height -3, channel of a tensor -3) so one graph serves both
layouts. Cast, ToTensor, Normalize and the random flips are HybridBlocks that also hybridize;
Resize is a HybridBlock as in MXNet but always runs imperatively: its bilinear weights depend on
the input's size, which a traced graph does not know, and the library has no resize op (MXNet's
`_image_resize`) yet. CenterCrop and RandomResizedCrop are plain Blocks, as in MXNet.

Resize, CenterCrop and RandomResizedCrop interpolate like OpenCV's INTER_NEAREST (0) and
INTER_LINEAR (1, half-pixel centres, edges clamped); integer images are rounded back to their
dtype. OpenCV's fixed-point uint8 arithmetic can differ from this by one grey level.
"""
import math
import random as _pyrandom

import numpy as _np

from .... import ndarray as nd
from ....base import MXNetError
from ....ndarray import NDArray
from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'Resize', 'CenterCrop',
           'RandomResizedCrop', 'RandomFlipLeftRight', 'RandomFlipTopBottom']

_FLOAT_TYPES = (_np.float16, _np.float32, _np.float64)


class Compose(Sequential):
    """Applies transforms in order. Runs of consecutive hybridizable transforms are grouped in
    a hybridized HybridSequential, as MXNet does."""

    def __init__(self, transforms):
        super().__init__()
        hybrid = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock) and getattr(t, '_traceable', True):
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
    """(H, W, C) or (N, H, W, C) images of any dtype -> (C, H, W) or (N, C, H, W) float32
    divided by 255."""

    def hybrid_forward(self, F, x):
        x = F.Cast(x, dtype='float32')
        # HWC -> CWH -> CHW (NHWC -> NCWH -> NCHW): the same two swaps for both ranks.
        x = F.SwapAxis(F.SwapAxis(x, dim1=-1, dim2=-3), dim1=-1, dim2=-2)
        return x / 255.0


def _per_channel(values, what):
    if isinstance(values, (int, float)):
        return (float(values),)
    values = tuple(float(v) for v in values)
    if not values:
        raise ValueError('Normalize: %s must not be empty' % what)
    return values


class Normalize(HybridBlock):
    """(x - mean) / std per channel of a (C, H, W) or (N, C, H, W) tensor. `mean` and `std`
    are numbers (all channels) or one value per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = _per_channel(mean, 'mean')
        self._std = _per_channel(std, 'std')
        n = max(len(self._mean), len(self._std))
        if len(self._mean) not in (1, n) or len(self._std) not in (1, n):
            raise ValueError('Normalize: mean %s and std %s must have the same number of '
                             'values (or one)' % (mean, std))
        self._mean = self._mean * (n // len(self._mean))
        self._std = self._std * (n // len(self._std))

    def hybrid_forward(self, F, x):
        if len(self._mean) == 1:
            return (x - self._mean[0]) / self._std[0]
        # One scalar op pair per channel: a traced graph has no constant arrays to broadcast.
        parts = F.split(x, num_outputs=len(self._mean), axis=-3)
        parts = [(p - m) / s for p, m, s in zip(parts, self._mean, self._std)]
        return F.concat(*parts, dim=-3)


def _random_flip(F, x, axis):
    """x flipped along `axis` with probability 1/2 (one draw for the whole input)."""
    coin = F._random_uniform(low=0.0, high=1.0, shape=(1,)) < 0.5
    # `where` takes a 1-D condition as long as x's first axis: get one of that length
    # cheaply from a corner of x, then fill it with the coin.
    probe = F.sum(F.slice_axis(F.slice_axis(x, axis=-1, begin=0, end=1), axis=-2, begin=0,
                               end=1), axis=0, exclude=True)
    cond = F.broadcast_like(coin, probe)
    return F.where(cond, F.reverse(x, axis=axis), x)


class RandomFlipLeftRight(HybridBlock):
    """Flips an (N)HWC image left-right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return _random_flip(F, x, -2)


class RandomFlipTopBottom(HybridBlock):
    """Flips an (N)HWC image top-bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return _random_flip(F, x, -3)


# ---- resizing and cropping (imperative: sizes come from the input) ------------------------
def _resize_axis(x, axis, n_in, n_out, interp):
    """x resized along `axis` from n_in to n_out samples."""
    pos = nd.arange(0, n_out, dtype='float64')
    scale = n_in / n_out
    if interp == 0:
        return nd.take(x, nd.clip(nd.floor(pos * scale), 0, n_in - 1), axis=axis)
    src = nd.clip((pos + 0.5) * scale - 0.5, 0, n_in - 1)
    i0 = nd.floor(src)
    frac = (src - i0).astype(x.dtype)
    a = nd.take(x, i0, axis=axis)
    b = nd.take(x, nd.clip(i0 + 1, 0, n_in - 1), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = n_out
    return a + (b - a) * frac.reshape(shape)


def _check_interp(interp):
    if interp not in (0, 1):
        raise MXNetError('interpolation %r is not supported: use 0 (nearest) or 1 (bilinear)'
                         % (interp,))


def _imresize(x, w, h, interp=1):
    """An (H, W, C) or (N, H, W, C) image resized to width w and height h."""
    _check_interp(interp)
    if not isinstance(x, NDArray):
        raise TypeError('expected an NDArray image, got %s' % type(x))
    if x.ndim not in (3, 4):
        raise MXNetError('resize: expected an (H, W, C) or (N, H, W, C) image, got shape %s'
                         % (x.shape,))
    if w <= 0 or h <= 0:
        raise MXNetError('resize: the output size must be positive, got width %d height %d'
                         % (w, h))
    hax, wax = x.ndim - 3, x.ndim - 2
    in_h, in_w = x.shape[hax], x.shape[wax]
    if (in_h, in_w) == (h, w):
        return x.copy()
    dtype = x.dtype
    blend = interp != 0 and dtype not in _FLOAT_TYPES  # integers blend in float32
    out = x.astype('float32') if blend else x
    out = _resize_axis(out, hax, in_h, h, interp)
    out = _resize_axis(out, wax, in_w, w, interp)
    if blend:
        info = _np.iinfo(dtype)
        out = nd.clip(nd.round(out), float(info.min), float(info.max)).astype(dtype)
    return out


def _fixed_crop(src, x0, y0, w, h, size=None, interp=1):
    """The w x h region at (x0, y0) of an HWC image, resized to size (w, h) if given."""
    out = nd.slice(src, begin=(y0, x0, 0), end=(y0 + h, x0 + w, src.shape[2]))
    if size is not None and (w, h) != tuple(size):
        out = _imresize(out, size[0], size[1], interp)
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


def _center_crop(src, size, interp=1):
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = _scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return _fixed_crop(src, x0, y0, new_w, new_h, size, interp)


def _check_hwc(x, who):
    if not isinstance(x, NDArray) or x.ndim != 3:
        raise MXNetError('%s: expected an (H, W, C) NDArray image, got %s'
                         % (who, getattr(x, 'shape', type(x))))


def _size_pair(size):
    if isinstance(size, (int, _np.integer)):
        return (int(size), int(size))
    size = tuple(int(s) for s in size)
    return size * 2 if len(size) == 1 else size


class Resize(HybridBlock):
    """Resizes an (H, W, C) or (N, H, W, C) image to `size`: an int (a square, or with
    keep_ratio the shorter side) or (width, height). interpolation: 0 nearest, 1 bilinear."""
    _traceable = False

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        _check_interp(interpolation)
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def _out_size(self, x):
        size = self._size
        if isinstance(size, (list, tuple)):
            if len(size) == 2:
                return int(size[0]), int(size[1])
            size = size[0]
        size = int(size)
        if not self._keep:
            return size, size
        h, w = x.shape[-3], x.shape[-2]
        if h > w:
            return size, int(h * size // w)
        return int(w * size // h), size

    def forward(self, x):
        if not isinstance(x, NDArray):
            raise MXNetError('Resize cannot be traced into a hybridized graph (its weights '
                             'depend on the input size and there is no resize op); keep it '
                             'outside hybridized blocks, e.g. in transforms.Compose')
        return self.hybrid_forward(nd, x)

    def hybrid_forward(self, F, x):
        w, h = self._out_size(x)
        return _imresize(x, w, h, self._interpolation)


class CenterCrop(Block):
    """Crops the centre of an (H, W, C) image to `size` (int or (width, height)), first
    scaling the crop region down to fit if the image is smaller."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        _check_interp(interpolation)
        self._args = (_size_pair(size), interpolation)

    def forward(self, x):
        _check_hwc(x, 'CenterCrop')
        return _center_crop(x, *self._args)


class RandomResizedCrop(Block):
    """Crops a random region of an (H, W, C) image, of `scale` times its area and aspect ratio
    in `ratio`, and resizes it to `size` (int or (width, height)). After 10 failed tries it
    falls back to a centre crop."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        _check_interp(interpolation)
        self._args = (_size_pair(size), scale, ratio, interpolation)

    def forward(self, x):
        _check_hwc(x, 'RandomResizedCrop')
        size, area, ratio, interp = self._args
        h, w = x.shape[0], x.shape[1]
        if isinstance(area, (int, float)):
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
