"""`mx.image.image`: MXNet 1.9.1's image augmenters and ImageIter, with the image functions of
`functions.py` re-exported (MXNet keeps them all in this one module).

Images are NDArrays in (H, W, C) layout, RGB, uint8 when decoded. Decoding, resizing and borders go
through OpenCV (`_cv.py`); everything an augmenter computes on pixels (crops, flips, jitter,
lighting, normalisation) runs as NDArray ops. Randomness comes from Python's `random` (crops,
jitter, order) and `np.random` (lighting), as in MXNet, so seeding both reproduces a run.
"""
import json
import logging
import os
import random
import warnings

import numpy as np

from ..base import MXNetValueError, MXNetTypeError, numeric_types
from .. import ndarray as nd
from .. import io
from .functions import (imread, imdecode, imresize, scale_down, copyMakeBorder,  # noqa: F401
                        resize_short, fixed_crop, random_crop, center_crop, color_normalize,
                        random_size_crop, imrotate, random_rotate, _get_interp_method)

__all__ = ['imread', 'imdecode', 'imresize', 'scale_down', 'copyMakeBorder', 'resize_short',
           'fixed_crop', 'random_crop', 'center_crop', 'color_normalize', 'random_size_crop',
           'imrotate', 'random_rotate', 'Augmenter', 'SequentialAug', 'ResizeAug',
           'ForceResizeAug', 'RandomCropAug', 'RandomSizedCropAug', 'CenterCropAug',
           'RandomOrderAug', 'BrightnessJitterAug', 'ContrastJitterAug', 'SaturationJitterAug',
           'HueJitterAug', 'ColorJitterAug', 'LightingAug', 'ColorNormalizeAug', 'RandomGrayAug',
           'HorizontalFlipAug', 'CastAug', 'CreateAugmenter', 'ImageIter']

# ImageNet's statistics in RGB order, which `mean=True` / `std=True` stand for.
_IMAGENET_MEAN = (123.68, 116.28, 103.53)
_IMAGENET_STD = (58.395, 57.12, 57.375)
# The PCA of ImageNet's pixels that `pca_noise` perturbs along (AlexNet's lighting noise).
_PCA_EIGVAL = (55.46, 4.794, 1.148)
_PCA_EIGVEC = ((-0.5675, 0.7192, 0.4009),
               (-0.5808, -0.0045, -0.8140),
               (-0.5836, -0.6948, 0.4203))


class Augmenter(object):
    """The base of image augmenters: `aug(src)` returns the augmented image; `dumps()` describes
    the augmenter as JSON (its lower-case class name and its arguments)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for key, value in self._kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                self._kwargs[key] = value.tolist()

    def dumps(self):
        """The augmenter as a JSON string."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError('Must override implementation.')


class SequentialAug(Augmenter):
    """Applies the augmenters of ts one after the other."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(Augmenter):
    """Applies the augmenters of ts in a random order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resizes the shorter edge to size."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resizes to size (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """random_crop to size (w, h)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """random_size_crop to size (w, h) with the given area fraction and aspect-ratio range."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        if 'min_area' in kwargs:
            warnings.warn('`min_area` is deprecated. Please use `area` instead.',
                          DeprecationWarning)
            area = kwargs.pop('min_area')
        if kwargs:
            raise MXNetTypeError('RandomSizedCropAug: unexpected keyword arguments %s'
                                 % sorted(kwargs))
        self.size = size
        self.area = area
        self.ratio = ratio
        self.interp = interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """center_crop to size (w, h)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scales the pixels by 1 + a uniform draw from [-brightness, brightness] (in place)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        src *= 1.0 + random.uniform(-self.brightness, self.brightness)
        return src


# Luma weights of RGB (ITU-R BT.601), the grey the contrast and saturation jitters blend with.
_LUMA = (0.299, 0.587, 0.114)


class ContrastJitterAug(Augmenter):
    """Blends the image with its mean grey level by 1 + a uniform draw from
    [-contrast, contrast] (in place)."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        weighted = src * self.coef
        # Three channels each add one third of the mean luma times (1 - alpha).
        grey = nd.sum(weighted) * (3.0 * (1.0 - alpha) / weighted.size)
        src *= alpha
        src += grey
        return src


class SaturationJitterAug(Augmenter):
    """Blends each pixel with its own grey level by 1 + a uniform draw from
    [-saturation, saturation] (in place)."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[_LUMA]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        grey = nd.sum(src * self.coef, axis=2, keepdims=True)
        grey *= 1.0 - alpha
        src *= alpha
        src += grey
        return src


class HueJitterAug(Augmenter):
    """Rotates the hue by a uniform draw from [-hue, hue] (in units of pi) in YIQ space."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114],
                              [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621],
                               [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]])

    def __call__(self, src):
        angle = random.uniform(-self.hue, self.hue) * np.pi
        cos_a, sin_a = np.cos(angle), np.sin(angle)
        rotate_iq = np.array([[1.0, 0.0, 0.0], [0.0, cos_a, -sin_a], [0.0, sin_a, cos_a]])
        # A 3x3 colour matrix (a parameter, not pixels): RGB -> YIQ, rotate IQ, back to RGB.
        mat = self.ityiq.dot(rotate_iq).dot(self.tyiq).T
        return nd.dot(src, nd.array(mat))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        augs = []
        if brightness > 0:
            augs.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            augs.append(ContrastJitterAug(contrast))
        if saturation > 0:
            augs.append(SaturationJitterAug(saturation))
        super().__init__(augs)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise: adds eigvec @ (alpha * eigval), alpha ~ N(0, alphastd)
    drawn from np.random (in place)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        shift = np.dot(np.asarray(self.eigvec) * alpha, np.asarray(self.eigval))
        src += nd.array(shift)
        return src


class ColorNormalizeAug(Augmenter):
    """color_normalize with a fixed mean and std (per channel or scalar)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, replaces each channel by the pixel's grey level."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability p, mirrors the image left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Casts the image to typ (float32 by default)."""

    def __init__(self, typ='float32'):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def _stats(value, default, name):
    """mean/std of CreateAugmenter: True -> ImageNet's, else None or a 1- or 3-vector."""
    if value is True:
        return nd.array(default)
    if value is None:
        return None
    if not isinstance(value, (np.ndarray, nd.NDArray)) or value.shape[0] not in (1, 3):
        raise MXNetValueError('%s must be True, None or an array of 1 or 3 values, got %r'
                              % (name, value))
    return value


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """The standard list of augmenters for an image of data_shape (C, H, W): resize the short
    edge, crop (random, random-sized or centre), mirror, cast to float32, colour jitter, hue,
    lighting noise, random grey, normalise."""
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise MXNetValueError('CreateAugmenter: rand_resize needs rand_crop=True')
        augs.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop_size, inter_method))
    else:
        augs.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, np.array(_PCA_EIGVAL), np.array(_PCA_EIGVEC)))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean = _stats(mean, _IMAGENET_MEAN, 'mean')
    std = _stats(std, _IMAGENET_STD, 'std')
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs


def _recordio():
    try:
        from .. import recordio
    except ImportError as e:
        raise MXNetValueError('ImageIter: reading .rec files needs hybridgluon.recordio, which '
                              'this build lacks') from e
    return recordio


def _read_list_file(path, dtype):
    """An image list file: lines 'index<TAB>label...<TAB>path'. Returns ({key: (label, path)},
    keys in file order)."""
    table, keys = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.strip().split('\t')
            if len(fields) < 3:
                raise MXNetValueError("ImageIter: line %d of '%s' needs index, label(s) and path "
                                      'separated by tabs, got %r' % (lineno, path, line))
            key = int(fields[0])
            table[key] = (nd.array([float(x) for x in fields[1:-1]], dtype=dtype), fields[-1])
            keys.append(key)
    return table, keys


def _read_list(imglist, dtype):
    """An in-memory image list: items [label, path] or [label..., path]; keys '1', '2', ..."""
    table, keys = {}, []
    for index, item in enumerate(imglist, 1):
        if len(item) > 2:
            label = nd.array(item[:-1], dtype=dtype)
        elif isinstance(item[0], numeric_types):
            label = nd.array([item[0]], dtype=dtype)
        else:
            label = nd.array(item[0], dtype=dtype)
        table[str(index)] = (label, item[-1])
        keys.append(str(index))
    return table, keys


class ImageIter(io.DataIter):
    """Batches of images (N, C, H, W) and labels from a RecordIO file (path_imgrec, with
    path_imgidx for random access), an image list file (path_imglist) or a Python list
    (imglist: [label, path] items) with files under path_root. Images go through aug_list
    (default: CreateAugmenter(data_shape, **kwargs)). last_batch_handle: 'pad' fills the last
    batch from the start, 'discard' drops it, 'roll_over' carries it into the next epoch."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name='data',
                 label_name='softmax_label', dtype='float32', last_batch_handle='pad',
                 **kwargs):
        super().__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MXNetValueError('ImageIter needs path_imgrec, path_imglist or an imglist list')
        if dtype not in ('int32', 'float32', 'int64', 'float64'):
            raise MXNetValueError('ImageIter: label dtype %r not supported (int32, float32, '
                                  'int64, float64)' % (dtype,))
        if last_batch_handle not in ('pad', 'discard', 'roll_over'):
            raise MXNetValueError("ImageIter: last_batch_handle must be 'pad', 'discard' or "
                                  "'roll_over', got %r" % (last_batch_handle,))
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            recordio = _recordio()
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, 'r')
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, 'r')
        keys = None
        if path_imglist:
            self.imglist, keys = _read_list_file(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _read_list(imglist, dtype)
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [(label_name, label_shape)]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise MXNetValueError('ImageIter: shuffle and num_parts > 1 over a .rec file '
                                      'need its index (path_imgidx)')
            self.seq = self.imgidx
        else:
            self.seq = None  # read the .rec file front to back
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetValueError('ImageIter: part_index %d is not in [0, %d)'
                                      % (part_index, num_parts))
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part:(part_index + 1) * per_part]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self.reset()

    def reset(self):
        """Starts the next epoch (reshuffling when shuffle=True). Under 'roll_over' with a
        partial batch held over, reading continues where it stopped."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != 'roll_over' or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Starts over, dropping any batch held over by 'roll_over'."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self):
        """The next (label, encoded image bytes); StopIteration at the end of the epoch."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != 'discard':
                    self.imgrec.reset()
                raise StopIteration
            header, img = _recordio().unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != 'discard':
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = _recordio().unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, batch_data, batch_label, start=0):
        """Fills rows start.. of the batch; returns how many rows are filled."""
        i = start
        try:
            while i < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug('Invalid image, skipping: %s', e)
                    continue
                batch_data[i] = self.postprocess_data(self.augmentation_transform(data))
                batch_label[i] = label
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch(self):
        data = nd.zeros((self.batch_size,) + tuple(self.data_shape))
        label = nd.empty(self.provide_label[0][1])
        return data, label

    def next(self):
        """The next DataBatch."""
        if self._cache_data is not None:
            batch_data, batch_label, filled = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data, batch_label = self._new_batch()
            filled = self._batchify(batch_data, batch_label)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == 'discard':
                raise StopIteration
            if self.last_batch_handle == 'roll_over' and self._cache_data is None:
                # Keep the partial batch; the next epoch completes it.
                self._cache_data, self._cache_label = batch_data, batch_label
                self._cache_idx = filled
                raise StopIteration
            self._batchify(batch_data, batch_label, filled)
            if self.last_batch_handle == 'pad':
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return io.DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """data_shape must be (3, H, W)."""
        if len(data_shape) != 3:
            raise ValueError('data_shape should have length 3, with dimensions CxHxW')
        if data_shape[0] != 3:
            raise ValueError('This iterator expects inputs to have 3 channels.')

    def check_valid_image(self, data):
        """Raises RuntimeError for an image with no pixels."""
        if len(data[0].shape) == 0:
            raise RuntimeError('Data shape is wrong')

    def _where(self):
        """Names the sample last read, for error messages."""
        if self.seq is not None:
            idx = self.seq[(self.cur % self.num_image) - 1]
        else:
            idx = self.cur - 1
        if self.imglist is not None and idx in self.imglist:
            return 'filename: %s' % (self.imglist[idx][1],)
        return 'index: %s' % (idx,)

    def imdecode(self, s):
        """Decodes an image; a broken one raises RuntimeError naming it."""
        try:
            return imdecode(s)
        except Exception as e:  # noqa: BLE001 (any decoder failure names the sample)
            raise RuntimeError('Broken image %s, %s' % (self._where(), e)) from e

    def read_image(self, fname):
        """The bytes of the image file fname under path_root."""
        path = os.path.join(self.path_root, fname) if self.path_root else fname
        with open(path, 'rb') as f:
            return f.read()

    def augmentation_transform(self, data):
        """Applies the augmenters in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(H, W, C) -> (C, H, W)."""
        return nd.transpose(datum, axes=(2, 0, 1))
