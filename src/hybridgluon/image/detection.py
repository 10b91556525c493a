"""`mx.image` for object detection: augmenters that move boxes with the pixels, and ImageDetIter.

A label is a NumPy array of objects, one row each: [class, xmin, ymin, xmax, ymax, ...] with
coordinates as fractions of the image size; a raw label (as stored in a list or a .rec header) is
[header_width, object_width, (header extras), objects...]. Box bookkeeping is a few numbers per
image and stays in NumPy; the pixels go through NDArray ops and OpenCV as in `image.py`.
"""
import json
import logging
import random
from math import sqrt

import numpy as np

from ..base import MXNetValueError, MXNetTypeError, numeric_types
from .. import ndarray as nd
from ._cv import cvcopyMakeBorder
from .image import (Augmenter, ImageIter, ColorJitterAug, LightingAug,
                    ColorNormalizeAug, ResizeAug, ForceResizeAug, CastAug, HueJitterAug,
                    RandomGrayAug, fixed_crop, _IMAGENET_MEAN, _IMAGENET_STD, _PCA_EIGVAL,
                    _PCA_EIGVEC)

__all__ = ['DetAugmenter', 'DetBorrowAug', 'DetRandomSelectAug', 'DetHorizontalFlipAug',
           'DetRandomCropAug', 'DetRandomPadAug', 'CreateMultiRandCropAugmenter',
           'CreateDetAugmenter', 'ImageDetIter']


class DetAugmenter(object):
    """The base of detection augmenters: `aug(src, label)` returns (src, label)."""

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

    def __call__(self, src, label):
        raise NotImplementedError('Must override implementation.')


class DetBorrowAug(DetAugmenter):
    """Runs an image Augmenter on the pixels, leaving the label as it is (for augmenters that
    move no pixel: colour, cast, normalise, and resizes, since labels are relative)."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError('Borrowing from invalid Augmenter')
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Applies one augmenter of aug_list picked at random, or none with probability
    skip_prob."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError('Allow DetAugmenter in list only')
        self.aug_list = aug_list
        self.skip_prob = skip_prob if aug_list else 1

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability p, mirrors the image and its boxes left to right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    def _flip_label(self, label):
        xmin = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - label[:, 1]
        label[:, 1] = xmin


def _box_areas(boxes):
    """Areas of [xmin, ymin, xmax, ymax, ...] rows; empty boxes count 0."""
    return (np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1]))


def _as_range(value, name):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if not isinstance(value, numeric_types):
        raise MXNetTypeError('%s must be a number or a (min, max) pair, got %r' % (name, value))
    return (value, value)


class DetRandomCropAug(DetAugmenter):
    """Crops a random window (area fraction in area_range, aspect ratio in aspect_ratio_range)
    that covers at least min_object_covered of every object it touches; objects whose remaining
    part is min_eject_coverage or less of them are dropped. Gives up after max_attempts."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _as_range(aspect_ratio_range, 'aspect_ratio_range')
        area_range = _as_range(area_range, 'area_range')
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            logging.warning('Skip DetRandomCropAug due to invalid area_range: %s', area_range)
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            logging.warning('Skip DetRandomCropAug due to invalid aspect_ratio_range: %s',
                            aspect_ratio_range)
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _calculate_areas(self, label):
        return _box_areas(label)

    def _intersect(self, label, xmin, ymin, xmax, ymax):
        """The boxes clipped to the window; boxes outside it become all zeros."""
        out = label.copy()
        out[:, 0] = np.maximum(label[:, 0], xmin)
        out[:, 1] = np.maximum(label[:, 1], ymin)
        out[:, 2] = np.minimum(label[:, 2], xmax)
        out[:, 3] = np.minimum(label[:, 3], ymax)
        outside = np.logical_or(out[:, 0] >= out[:, 2], out[:, 1] >= out[:, 3])
        out[outside, :] = 0
        return out

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        """Whether the pixel window keeps enough of every object it touches."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        areas = _box_areas(label[:, 1:])
        valid = np.where(areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        clipped = self._intersect(label[valid, 1:], float(xmin) / width, float(ymin) / height,
                                  float(xmax) / width, float(ymax) / height)
        coverages = _box_areas(clipped) / areas[valid]
        coverages = coverages[coverages > 0]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """The labels in the frame of crop_box (x, y, w, h in pixels); None if none is left."""
        x0, y0 = float(crop_box[0]) / width, float(crop_box[1]) / height
        cw, ch = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x0) / cw
        out[:, (2, 4)] = (out[:, (2, 4)] - y0) / ch
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _box_areas(out[:, 1:]) * cw * ch / _box_areas(label[:, 1:])
        keep = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        keep = np.where(np.logical_and(keep, coverage > self.min_eject_coverage))[0]
        if keep.size < 1:
            return None
        return out[keep, :]

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new_label) of an acceptable window, or () if none was found."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                # The widest window that fits: w = round(h * ratio) <= width.
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return x, y, w, h, new_label
        return ()


class DetRandomPadAug(DetAugmenter):
    """Places the image at a random spot of a larger canvas (area_range times its area, aspect
    ratio in aspect_ratio_range) filled with pad_val, moving the boxes with it."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)):
            if not isinstance(pad_val, numeric_types):
                raise MXNetTypeError('pad_val must be a number or a tuple, got %r' % (pad_val,))
        aspect_ratio_range = _as_range(aspect_ratio_range, 'aspect_ratio_range')
        area_range = _as_range(area_range, 'area_range')
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            logging.warning('Skip DetRandomPadAug due to invalid parameters: %s', area_range)
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            logging.warning('Skip DetRandomPadAug due to invalid aspect_ratio_range: %s',
                            aspect_ratio_range)
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = self.pad_val if isinstance(self.pad_val, (list, tuple)) else ()
            value = 0.0 if values else float(self.pad_val)
            src = cvcopyMakeBorder(src, y, h - y - height, x, w - x - width, 16, value=value,
                                   values=values)
        return src, label

    def _update_labels(self, label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new_label) of a canvas at least 2 pixels larger each way, or ()."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(sqrt(min_area / ratio)))
            max_h = int(round(sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return x, y, w, h, self._update_labels(label, (x, y, w, h), height, width)
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A DetRandomSelectAug over DetRandomCropAugs: each argument may be a list (one crop
    augmenter per entry; lists of length one are repeated)."""
    params = [p if isinstance(p, list) else [p] for p in
              (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
               max_attempts)]
    count = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != count:
            if len(p) != 1:
                raise MXNetValueError('CreateMultiRandCropAugmenter: parameter lists must have '
                                      'length 1 or %d, got %d' % (count, len(p)))
            params[k] = p * count
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _det_stats(value, default, name):
    if value is True:
        return np.array(default)
    if value is not None and (not isinstance(value, np.ndarray) or value.shape[0] not in (1, 3)):
        raise MXNetValueError('%s must be True, None or a NumPy array of 1 or 3 values, got %r'
                              % (name, value))
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2, min_object_covered=0.1,
                       aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """The standard detection augmenters: resize, random crop (probability rand_crop), mirror,
    random pad (probability rand_pad), force-resize to data_shape, cast, colour jitter, hue,
    lighting, random grey, normalise."""
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                 area_range, min_eject_coverage, max_attempts,
                                                 skip_prob=(1 - rand_crop)))
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, np.array(_PCA_EIGVAL),
                                             np.array(_PCA_EIGVEC))))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _det_stats(mean, _IMAGENET_MEAN, 'mean')
    std = _det_stats(std, _IMAGENET_STD, 'std')
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs


class ImageDetIter(ImageIter):
    """ImageIter for detection: labels are (batch, max objects, object width) arrays padded
    with -1, and the augmenters (default: CreateDetAugmenter(data_shape, **kwargs)) move the
    boxes with the pixels. The label shape is estimated by reading every label once."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name='data', label_name='label',
                 last_batch_handle='pad', **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + self.label_shape)]

    def _check_valid_label(self, label):
        """Raises RuntimeError unless label is (objects, 5+) with at least one valid box."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError('Label with shape (1+, 5+) required, %s received.' % (label,))
        valid = np.logical_and(label[:, 0] >= 0, np.logical_and(label[:, 3] > label[:, 1],
                                                                label[:, 4] > label[:, 2]))
        if not valid.any():
            raise RuntimeError('Invalid label occurs.')

    def _estimate_label_shape(self):
        """(most objects in one image, object width), from one pass over the labels."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count = max(max_count, label.shape[0])
                width = label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise MXNetValueError('ImageDetIter: no image with a valid label was found')
        return (max_count, width)

    def _parse_label(self, label):
        """A raw label [header_width, object_width, extras..., objects...] -> (objects, width)
        rows that have a box of positive size."""
        if isinstance(label, nd.NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError('Label shape is invalid: ' + str(raw.shape))
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width < 5 or header_width < 2 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError('Label shape %s inconsistent with annotation width %d.'
                               % (str(raw.shape), obj_width))
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2])
        if not valid.any():
            raise RuntimeError('Encounter sample with no valid label.')
        return out[valid, :]

    def reshape(self, data_shape=None, label_shape=None):
        """Changes the data shape (C, H, W) and/or the label shape (objects, width)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + data_shape)]
            self.data_shape = data_shape
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + label_shape)]
            self.label_shape = label_shape

    def check_label_shape(self, label_shape):
        """A new label shape may hold more objects, never fewer, and keeps the width."""
        if len(label_shape) != 2:
            raise ValueError('label_shape should have length 2')
        if label_shape[0] < self.label_shape[0]:
            raise ValueError('Attempts to reduce label count from %d to %d, not allowed.'
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError('label_shape object width inconsistent: %d vs %d.'
                             % (self.provide_label[0][1][2], label_shape[1]))

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        try:
            while i < self.batch_size:
                label, encoded = self.next_sample()
                data = self.imdecode(encoded)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug('Invalid image, skipping: %s', e)
                    continue
                batch_data[i] = self.postprocess_data(data)
                rows = min(label.shape[0], batch_label.shape[1])
                row = batch_label[i]  # a view of the batch's row i
                row[:] = -1
                row[0:rows] = nd.array(label[:rows])
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch(self):
        data = nd.zeros((self.batch_size,) + tuple(self.data_shape))
        label = nd.full(self.provide_label[0][1], -1)
        return data, label

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Applies the detection augmenters in order."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name='draw_next', id2labels=None):
        """Yields augmented images (uint8, BGR as OpenCV draws) with their boxes drawn; with
        waitKey, also shows each in an OpenCV window. mean/std undo the normalisation."""
        from ._cv import _cv2
        cv2 = _cv2('ImageDetIter.draw_next')
        std = _det_stats(std, _IMAGENET_STD, 'std')
        mean = _det_stats(mean, _IMAGENET_MEAN, 'mean')
        while True:
            try:
                label, encoded = self.next_sample()
            except StopIteration:
                return
            data = self.imdecode(encoded)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
            except RuntimeError:
                continue
            data, label = self.augmentation_transform(data, label)
            if std is not None:
                data = data * nd.array(std)
            if mean is not None:
                data = data + nd.array(mean)
            if clip:
                data = nd.clip(data, 0, 255)
            image = np.ascontiguousarray(nd.flip(data, axis=2).astype('uint8').asnumpy())
            height, width, _ = image.shape
            box_color = tuple(color[::-1]) if color else None
            for obj in label:
                if obj[1] < 0:
                    continue
                p1 = (int(obj[1] * width), int(obj[2] * height))
                p2 = (int(obj[3] * width), int(obj[4] * height))
                bc = box_color or tuple(float(v) for v in np.random.rand(3) * 255)
                cv2.rectangle(image, p1, p2, bc, thickness)
                if id2labels is not None and int(obj[0]) in id2labels:
                    text = '%s' % id2labels[int(obj[0])]
                    font = cv2.FONT_HERSHEY_SIMPLEX
                    text_h = cv2.getTextSize(text, font, 0.5, 2)[0][1]
                    cv2.putText(image, text, (p1[0] + 5, p1[1] + text_h + 5), font, 0.5,
                                (255, 255, 255), 2)
            if waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image

    def sync_label_shape(self, it, verbose=False):
        """Gives this iterator and `it` the same label shape (the larger object count);
        returns it."""
        if not isinstance(it, ImageDetIter):
            raise MXNetTypeError('Synchronize with invalid iterator.')
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise MXNetValueError('sync_label_shape: object width mismatch, %d vs %d'
                                  % (mine[1], theirs[1]))
        count = max(mine[0], theirs[0])
        if count > mine[0]:
            self.reshape(None, (count, mine[1]))
        if count > theirs[0]:
            it.reshape(None, (count, theirs[1]))
        if verbose and count > min(mine[0], theirs[0]):
            logging.info('Resized label_shape to (%d, %d).', count, mine[1])
        return it

