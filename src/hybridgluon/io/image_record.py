"""MXNet's image-record iterators: ImageRecordIter (float32, normalised), ImageRecordUInt8Iter
and ImageRecordInt8Iter, reading .rec files that `mx.recordio` / im2rec write.

Pipeline: the main thread decides each epoch's order and every random choice (crop offsets,
mirror, augmentation draws) from the iterator's own seeded generator, so results do not depend
on thread timing. Each image is then a task on a pool of `preprocess_threads` threads: read the
record with os.pread (no shared file position), decode with OpenCV (cv2.imdecode releases the
GIL), apply the geometric augmentations asked for (_image_aug.py, OpenCV again), and hand the
crop window to the C kernel hg_image_to_chw (hybridgluon/image.h, called through ctypes, which
drops the GIL) that writes channel order, mirror, mean/std/scale and HWC->CHW straight into the
batch's NDArray. `prefetch_buffer` batches are in flight at once, so decoding of the next
batches overlaps the consumer's work.

Matches MXNet 1.9.1 on the deterministic path (center crop, `resize` of the shorter side,
mean/std/scale, labels, round_batch padding and its carry-over into the next epoch, num_parts by
byte ranges) and, up to OpenCV's rounding, for fixed geometric settings (rotate, a fixed scale,
pad, min/max_img_size; _image_aug.py holds the augmenter). Differences: shuffle orders records
with NumPy's generator, and random crops, mirrors, rotations, scales, shears, HLS jitter,
contrast and illumination draw from the iterator's own generator (seed / seed_aug), so their
values are not MXNet's; PCA lighting and colour-jitter noise (pca_noise, brightness, contrast,
saturation), crop-size ranges and random_resized_crop are refused with an error rather than
silently skipped.
"""
import concurrent.futures
import ctypes
import os
import struct
from collections import deque

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ._image_aug import (N_UNIFORMS, U_CONTRAST, U_CROP_X, U_CROP_Y, U_ILLUM, U_MIRROR,
                         Augmenter)
from .io import DataBatch, DataDesc, DataIter

__all__ = ['ImageRecordIter', 'ImageRecordUInt8Iter', 'ImageRecordInt8Iter']

_MAGIC = 0xced7230a
_IR = struct.Struct('<IfQQ')

# MXNet augmentation parameters this iterator does not implement, with their no-op values: a
# call that sets one to anything else gets an error instead of silently different images.
_UNSUPPORTED = {
    'min_aspect_ratio': None, 'pca_noise': 0.0, 'max_crop_size': -1, 'min_crop_size': -1,
    'brightness': 0.0, 'contrast': 0.0, 'saturation': 0.0, 'random_resized_crop': False,
    'rotate_list': None,
}
# dtype= of the output -> (NumPy dtype, hg_dtype flag). uint8 is the raw pixels; int8 is
# pixel - mean, saturated (MXNet's quantised input).
_DTYPES = {'float32': (np.float32, 0), 'uint8': (np.uint8, 3), 'int8': (np.int8, 5)}


class _Norm(ctypes.Structure):
    _fields_ = [('mean', ctypes.c_float * 4), ('std', ctypes.c_float * 4),
                ('bias', ctypes.c_float * 4), ('scale', ctypes.c_float),
                ('mean_img', ctypes.c_void_p)]


_KERNEL = []


def _kernel():
    """hg_image_to_chw from libhybridgluon via ctypes (ctypes releases the GIL during calls)."""
    if not _KERNEL:
        from ..base import _LIB
        f = _LIB.hg_image_to_chw
        i64 = ctypes.c_int64
        f.argtypes = [ctypes.c_void_p, i64, i64, i64, i64, i64, i64, i64, i64, ctypes.c_int,
                      ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                      ctypes.c_size_t]
        f.restype = ctypes.c_int
        _KERNEL.append((f, _LIB))
    return _KERNEL[0]


def _cv2():
    try:
        import cv2
    except ImportError as e:
        raise MXNetError('ImageRecordIter needs OpenCV: pip install "hybridgluon[image]" (the '
                         'opencv-python-headless package)') from e
    return cv2


def _scan_offsets(path):
    """Byte offsets of every record of a .rec file, read from the chunk headers alone."""
    offsets = []
    size = os.path.getsize(path)
    with open(path, 'rb') as f:
        pos = 0
        in_record = False
        while pos < size:
            head = f.read(8)
            if len(head) != 8:
                raise MXNetError('invalid RecordIO file %s: truncated chunk header at byte %d'
                                 % (path, pos))
            magic, lrec = struct.unpack('<II', head)
            if magic != _MAGIC:
                raise MXNetError('invalid RecordIO file %s: bad magic at byte %d' % (path, pos))
            cflag = lrec >> 29
            if not in_record:
                offsets.append(pos)
            in_record = cflag in (1, 2)
            pos += 8 + (((lrec & ((1 << 29) - 1)) + 3) & ~3)
            f.seek(pos)
    return offsets


def _read_at(fd, pos, path):
    """The payload of the record starting at byte pos (thread-safe: os.pread)."""
    parts = []
    while True:
        head = os.pread(fd, 8, pos)
        if len(head) != 8:
            raise MXNetError('invalid RecordIO file %s: truncated record at byte %d'
                             % (path, pos))
        magic, lrec = struct.unpack('<II', head)
        if magic != _MAGIC:
            raise MXNetError('invalid RecordIO file %s: bad magic at byte %d' % (path, pos))
        n = lrec & ((1 << 29) - 1)
        data = os.pread(fd, n, pos + 8)
        if len(data) != n:
            raise MXNetError('invalid RecordIO file %s: truncated record at byte %d'
                             % (path, pos))
        parts.append(data)
        pos += 8 + ((n + 3) & ~3)
        if lrec >> 29 in (0, 3):
            return struct.pack('<I', _MAGIC).join(parts)


def _part_offsets(offsets, size, num_parts, part_index):
    """The records of part part_index of num_parts as MXNet splits a file: equal byte ranges
    (rounded up to 4 bytes), each starting at the first record that begins inside it."""
    if num_parts == 1:
        return offsets
    step = (size + num_parts - 1) // num_parts
    step = (step + 3) // 4 * 4
    lo, hi = min(step * part_index, size), min(step * (part_index + 1), size)
    return [o for o in offsets if lo <= o < hi]


class ImageRecordIter(DataIter):
    """Iterates over a RecordIO file of images in batches of (batch_size,) + data_shape float32
    arrays (RGB planes, `(pixel - mean) / std * scale`) and their labels.

    Parameters follow MXNet 1.9.1's ImageRecordIter: path_imgrec, path_imgidx, data_shape,
    batch_size, label_width, shuffle, seed, resize (shorter side, before the crop), rand_crop,
    rand_mirror, mirror, mean_r/g/b/a, std_r/g/b/a, scale, mean_img, rotate, max_rotate_angle,
    max_shear_ratio, max_aspect_ratio, min/max_random_scale, min/max_img_size, pad, fill_value,
    inter_method, random_h/s/l, max_random_contrast, max_random_illumination, seed_aug,
    preprocess_threads,
    prefetch_buffer, round_batch, num_parts, part_index, data_name, label_name, path_imglist
    (labels from an im2rec .lst, by record id), dtype
    ('float32'; 'uint8' and 'int8' as ImageRecordUInt8Iter and ImageRecordInt8Iter).
    """

    _dtype = np.float32
    _flag = 0  # hg_dtype of the output

    def __init__(self, path_imgrec=None, data_shape=None, batch_size=None, **kwargs):
        super().__init__(batch_size or 0)
        self._pending = deque()
        self._pool = None
        self._parse(path_imgrec, data_shape, batch_size, kwargs)
        self._cv2 = _cv2()
        self._aug = Augmenter(self._cv2, kwargs)
        num_parts = int(kwargs.get('num_parts', 1))
        part_index = int(kwargs.get('part_index', 0))
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise MXNetError('ImageRecordIter: part_index %d is not in [0, num_parts=%d)'
                             % (part_index, num_parts))
        offsets = self._offsets(kwargs.get('path_imgidx'))
        self._records = _part_offsets(offsets, os.path.getsize(self.path_imgrec), num_parts,
                                      part_index)
        if not self._records:
            raise MXNetError('ImageRecordIter: %s holds no record for part %d of %d'
                             % (self.path_imgrec, part_index, num_parts))
        self._imglist = self._read_imglist(kwargs.get('path_imglist'))
        self._mean_img_holder = None
        self._fd = os.open(self.path_imgrec, os.O_RDONLY)
        # From here on close() (or __del__) releases the file and the threads.
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max(1, int(kwargs.get('preprocess_threads', 4))))
        if kwargs.get('mean_img'):
            self._set_mean_img(os.fspath(kwargs['mean_img']))
        self._carry = 0
        self._current = None
        self.provide_data = [DataDesc(self.data_name, (self.batch_size,) + self.data_shape,
                                      self._dtype)]
        lshape = (self.batch_size,) if self.label_width == 1 else (self.batch_size,
                                                                    self.label_width)
        self.provide_label = [DataDesc(self.label_name, lshape, np.float32)]
        self._start_epoch()

    def _parse(self, path_imgrec, data_shape, batch_size, kw):
        """Checks and stores the parameters (MXNet's names and defaults)."""
        for k in kw:
            if k in _UNSUPPORTED and kw[k] not in (_UNSUPPORTED[k], None):
                raise MXNetError('ImageRecordIter: augmentation %s=%r is not supported here'
                                 % (k, kw[k]))
        if not path_imgrec:
            raise MXNetError('ImageRecordIter: path_imgrec is required')
        if data_shape is None or batch_size is None:
            raise MXNetError('ImageRecordIter: data_shape and batch_size are required')
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] not in (1, 3, 4) or min(data_shape) <= 0:
            raise MXNetError('ImageRecordIter: data_shape must be (channels, height, width) '
                             'with 1, 3 or 4 channels, got %s' % (data_shape,))
        if int(batch_size) <= 0:
            raise MXNetError('ImageRecordIter: batch_size must be positive, got %r'
                             % (batch_size,))
        dtype = kw.get('dtype')
        if dtype is not None:
            name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
            if name not in _DTYPES:
                raise MXNetError('ImageRecordIter: dtype must be float32, uint8 or int8, got %r'
                                 % (dtype,))
            self._dtype, self._flag = _DTYPES[name]
        self.path_imgrec = os.fspath(path_imgrec)
        if not os.path.isfile(self.path_imgrec):
            raise MXNetError('ImageRecordIter: cannot open %s' % self.path_imgrec)
        self.batch_size = int(batch_size)
        self.data_shape = data_shape
        self.label_width = int(kw.get('label_width', 1))
        self.shuffle = bool(kw.get('shuffle', False))
        self.round_batch = bool(kw.get('round_batch', True))
        self.rand_crop = bool(kw.get('rand_crop', False))
        self.rand_mirror = bool(kw.get('rand_mirror', False))
        self.mirror = bool(kw.get('mirror', False))
        self.data_name = kw.get('data_name', 'data')
        self.label_name = kw.get('label_name', 'softmax_label')
        self._prefetch = max(1, int(kw.get('prefetch_buffer', 4)))
        self._rng = np.random.RandomState(int(kw.get('seed', 0)))
        self._aug_rng = np.random.RandomState(int(kw.get('seed_aug', kw.get('seed', 0))))
        self._norm = self._make_norm(kw)

    # --- set-up -----------------------------------------------------------------------------
    def _make_norm(self, kw):
        names = 'rgba'
        mean = [float(kw.get('mean_' + c, 0.0)) for c in names]
        std = [float(kw.get('std_' + c, 1.0)) for c in names]
        if any(s == 0 for s in std):
            raise MXNetError('ImageRecordIter: std_r/g/b/a must be nonzero, got %s' % (std,))
        norm = _Norm()
        norm.mean[:] = mean
        norm.std[:] = std
        norm.scale = float(kw.get('scale', 1.0))
        self._contrast = float(kw.get('max_random_contrast', 0.0))
        self._illumination = float(kw.get('max_random_illumination', 0.0))
        return norm

    def _image_norm(self, u):
        """The normalisation of one image: the iterator's, with MXNet's random contrast and
        illumination folded into scale and bias when they are on (float32 output only)."""
        if self._flag != 0 or not (self._contrast or self._illumination):
            return self._norm
        norm = _Norm.from_buffer_copy(self._norm)
        norm.mean_img = self._norm.mean_img
        norm.scale = self._norm.scale * (1 + (2 * u[U_CONTRAST] - 1) * self._contrast)
        illum = (2 * u[U_ILLUM] - 1) * self._illumination * self._norm.scale
        norm.bias[:] = [illum / sd for sd in self._norm.std]
        return norm

    def _offsets(self, path_imgidx):
        if not path_imgidx:
            return _scan_offsets(self.path_imgrec)
        try:
            with open(path_imgidx) as f:
                offsets = sorted(int(line.split('\t')[1]) for line in f if line.strip())
        except (OSError, ValueError, IndexError) as e:
            raise MXNetError('ImageRecordIter: cannot read index file %s: %s'
                             % (path_imgidx, e)) from e
        return offsets

    def _read_imglist(self, path):
        """{record id: first label_width labels} from an im2rec .lst file (labels there
        replace the records' own, as in MXNet), or None."""
        if not path:
            return None
        out = {}
        try:
            with open(path) as f:
                for n, line in enumerate(f):
                    fields = line.strip().split('\t')
                    if fields == ['']:
                        continue
                    labels = [float(x) for x in fields[1:-1]]
                    if len(labels) < self.label_width:
                        raise MXNetError('ImageRecordIter: line %d of %s has %d label(s), '
                                         'label_width is %d' % (n + 1, path, len(labels),
                                                                self.label_width))
                    out[int(fields[0])] = np.array(labels[:self.label_width], np.float32)
        except (OSError, ValueError) as e:
            raise MXNetError('ImageRecordIter: cannot read path_imglist %s: %s'
                             % (path, e)) from e
        return out

    def _set_mean_img(self, path):
        c, h, w = self.data_shape
        if os.path.exists(path):
            loaded = nd.load(path)
            arr = list(loaded.values())[0] if isinstance(loaded, dict) else loaded[0]
            mean = arr.asnumpy().astype(np.float32)
            if mean.shape != (c, h, w):
                raise MXNetError('ImageRecordIter: mean_img %s has shape %s, data_shape is %s'
                                 % (path, mean.shape, self.data_shape))
        else:
            mean = self._compute_mean()
            nd.save(path, {'mean_img': nd.array(mean)})
        self._mean_img_holder = np.ascontiguousarray(mean, dtype=np.float32)
        self._norm.mean_img = self._mean_img_holder.ctypes.data

    def _compute_mean(self):
        """The mean image over the whole part, center-cropped and without augmentation, as
        MXNet computes (and saves) it when mean_img names a file that does not exist yet."""
        total = nd.zeros(self.data_shape, dtype='float64')
        out = np.empty(self.data_shape, np.float32)
        for pos in self._records:
            self._process(pos, out, np.full(N_UNIFORMS, 0.5), False, None, plain=True)
            total += nd.array(out, dtype='float64')
        return (total / len(self._records)).astype('float32').asnumpy()

    # --- one image ----------------------------------------------------------------------------
    def _decode(self, payload):
        flag = payload[:_IR.size]
        if len(flag) != _IR.size:
            raise MXNetError('ImageRecordIter: a record of %s is shorter than its header'
                             % self.path_imgrec)
        nlab, label, rec_id, _ = _IR.unpack(flag)
        off = _IR.size
        if nlab > 0:
            labels = np.frombuffer(payload, np.float32, nlab, off)
            off += 4 * nlab
        else:
            labels = np.array([label], np.float32)
        cv2 = self._cv2
        img = cv2.imdecode(np.frombuffer(payload, np.uint8, offset=off),
                           cv2.IMREAD_GRAYSCALE if self.data_shape[0] == 1 else
                           (cv2.IMREAD_UNCHANGED if self.data_shape[0] == 4 else
                            cv2.IMREAD_COLOR))
        if img is None:
            raise MXNetError('ImageRecordIter: a record of %s does not hold an image OpenCV can '
                             'decode' % self.path_imgrec)
        if img.ndim == 2:
            img = img[:, :, None]
        if img.shape[2] != self.data_shape[0]:
            raise MXNetError('ImageRecordIter: image with %d channels for data_shape %s'
                             % (img.shape[2], self.data_shape))
        return labels, rec_id, img

    def _geometric(self, img, u, plain):
        """Resize / affine / pad, then (as MXNet) an image still smaller than the crop has its
        shorter side scaled up to the crop's larger side."""
        img = self._aug.geometric(img, u, plain)
        _, h, w = self.data_shape
        rows, cols = img.shape[:2]
        if rows < h or cols < w:
            short = max(h, w)
            size = (short, short * rows // cols) if rows > cols else (short * cols // rows,
                                                                     short)
            img = self._cv2.resize(img, size, interpolation=self._cv2.INTER_LINEAR)
            img = img if img.ndim == 3 else img[:, :, None]
        return img

    def _process(self, pos, out, u, mirror, label_out, plain=False):
        """Reads, decodes and augments the record at byte pos into out, one C-contiguous
        sample slot of a batch (and its labels into label_out)."""
        labels, rec_id, img = self._decode(_read_at(self._fd, pos, self.path_imgrec))
        if label_out is not None and self._imglist is not None:
            if rec_id not in self._imglist:
                raise MXNetError('ImageRecordIter: record id %d of %s is not in path_imglist'
                                 % (rec_id, self.path_imgrec))
            label_out[:] = self._imglist[rec_id]
        elif label_out is not None:
            if labels.size != self.label_width:
                raise MXNetError('ImageRecordIter: a record of %s has %d label(s) but '
                                 'label_width is %d' % (self.path_imgrec, labels.size,
                                                        self.label_width))
            label_out[:] = labels
        img = self._geometric(img, u, plain)
        c, h, w = self.data_shape
        rand = self.rand_crop and not plain
        y0 = int(u[U_CROP_Y] * (img.shape[0] - h + 1)) if rand else (img.shape[0] - h) // 2
        x0 = int(u[U_CROP_X] * (img.shape[1] - w + 1)) if rand else (img.shape[1] - w) // 2
        if any(self._aug.hsl) and not plain:
            # Colour jitter is per pixel: on the window only, which the kernel then reads whole.
            img = self._aug.colour(img[y0:y0 + h, x0:x0 + w], u)
            y0 = x0 = 0
        img = np.ascontiguousarray(img)
        fn, _ = _kernel()
        norm_obj = None if plain else self._image_norm(u)  # alive through the call
        norm = None if plain else ctypes.addressof(norm_obj)
        st = fn(img.ctypes.data, img.shape[0], img.shape[1], c, img.strides[0], y0, x0, h, w,
                int(mirror), int(c >= 3), norm, 0 if plain else self._flag, out.ctypes.data,
                out.nbytes)
        if st != 0:
            from ..base import _LIB
            raise MXNetError(_LIB.hg_last_error().decode())

    # --- batches --------------------------------------------------------------------------------
    def _start_epoch(self):
        order = np.arange(len(self._records))
        if self.shuffle:
            self._rng.shuffle(order)
        self._order = order[self._carry:] if self._carry < len(order) else order[:0]
        self._carry = 0
        self._next = 0
        self._done = False
        while len(self._pending) < self._prefetch and self._submit():
            pass

    def _submit(self):
        """Queues the next batch's images on the pool; False when the epoch has none left."""
        n = len(self._order)
        if self._done or self._next >= n:
            return False
        idx = list(self._order[self._next:self._next + self.batch_size])
        self._next += len(idx)
        pad = self.batch_size - len(idx)
        if pad and self.round_batch:
            # MXNet fills the last batch from the start of the data and starts the next epoch
            # after the records it borrowed.
            wrap = np.arange(len(self._records))
            idx += list(np.resize(wrap, pad))
            self._carry = pad % len(self._records)
        if self._next >= n:
            self._done = True
        data = nd.empty((self.batch_size,) + self.data_shape, dtype=self._dtype)
        view = np.asarray(memoryview(data))
        if pad and not self.round_batch:
            view[len(idx):] = 0
        label = np.zeros((self.batch_size, self.label_width), np.float32)
        u = self._aug_rng.random_sample((len(idx), N_UNIFORMS))
        # Each task gets NumPy views of its slots: they keep the batch's NDArray alive for as
        # long as the task can write into it, whatever happens to this batch meanwhile.
        futures = [self._pool.submit(self._process, self._records[r], view[i], u[i],
                                     self.mirror or (self.rand_mirror and u[i, U_MIRROR] < 0.5),
                                     label[i])
                   for i, r in enumerate(idx)]
        self._pending.append((futures, data, view, label, pad))
        return True

    def _drain(self):
        # A batch leaves _pending only once none of its tasks runs: the tasks write into its
        # buffers (they also hold references to them, so this is belt and braces).
        while self._pending:
            futures = self._pending[0][0]
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)
            self._pending.popleft()

    def reset(self):
        if self._pool is None:
            raise MXNetError('ImageRecordIter: reset() after close()')
        self._drain()
        self._current = None
        self._start_epoch()

    def iter_next(self):
        if not self._pending:
            self._current = None
            return False
        futures, data, _, label, pad = self._pending.popleft()
        try:
            for f in futures:
                f.result()
        except BaseException:
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)  # no task may outlive the buffers it writes
            raise
        self._submit()
        lab = nd.array(label[:, 0] if self.label_width == 1 else label)
        self._current = DataBatch(data=[data], label=[lab], pad=pad,
                                  provide_data=self.provide_data,
                                  provide_label=self.provide_label)
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self._current

    def getdata(self):
        return self._current.data

    def getlabel(self):
        return self._current.label

    def getpad(self):
        return self._current.pad

    def getindex(self):
        return None

    def close(self):
        """Stops the worker threads and closes the file (the iterator is unusable after)."""
        if getattr(self, '_pool', None) is not None:
            self._drain()
            self._pool.shutdown(wait=True)
            self._pool = None
            os.close(self._fd)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter giving the raw uint8 pixels (RGB planes; mean/std/scale ignored)."""
    _dtype = np.uint8
    _flag = 3


class ImageRecordInt8Iter(ImageRecordIter):
    """ImageRecordIter giving int8 planes: pixel - mean, rounded and saturated to [-128, 127]
    (std and scale are not applied), as MXNet's quantised-input iterator."""
    _dtype = np.int8
    _flag = 5
