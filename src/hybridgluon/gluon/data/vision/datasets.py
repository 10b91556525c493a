"""Vision datasets (MXNet's `gluon.data.vision.datasets`): MNIST and Fashion-MNIST read from
the standard IDX files, gzipped or not. Nothing is downloaded.

A sample is `(image, label)`: the image a uint8 NDArray of shape (28, 28, 1), the label a
NumPy int32 scalar, as in MXNet. Files are read with NumPy at the boundary; every size in a
header is checked against the file (and, for gzip, against the size recorded in its trailer)
before anything is allocated, so a truncated or corrupted file is an MXNetError, never a
crash or a huge allocation.
"""
import gzip
import os
import struct
import zlib

import numpy as _np

from .... import ndarray as nd
from ....base import MXNetError
from ..dataset import Dataset

__all__ = ['MNIST', 'FashionMNIST']

# Where Debian's dataset-fashion-mnist package puts the files.
_DEBIAN_FASHION_MNIST = '/usr/share/datasets/fashion-mnist'
# IDX magic numbers: 0x08 = unsigned byte data, then the number of dimensions.
_IDX_UBYTE = 0x08
_MAX_ITEMS = 1 << 28  # far above any real MNIST-like file; a header beyond is corrupt


def _data_dir():
    """MXNet's base.data_dir(): $MXNET_HOME, else ~/.mxnet."""
    return os.environ.get('MXNET_HOME', os.path.join(os.path.expanduser('~'), '.mxnet'))


class _IDXError(MXNetError, ValueError):
    """A malformed IDX file."""


def _gzip_isize(path):
    """The uncompressed size mod 2**32 that a gzip file records in its last 4 bytes."""
    with open(path, 'rb') as f:
        f.seek(0, os.SEEK_END)
        if f.tell() < 18:  # 10-byte header + 8-byte trailer at least
            raise _IDXError('%s: not a gzip file (only %d bytes)' % (path, f.tell()))
        f.seek(-4, os.SEEK_END)
        return struct.unpack('<I', f.read(4))[0]


def _read_exact(f, n, path, what):
    data = f.read(n)
    if len(data) != n:
        raise _IDXError('%s: truncated file: expected %d bytes of %s, found %d'
                        % (path, n, what, len(data)))
    return data


def _read_idx(path, ndim):
    """The uint8 contents of an IDX file with `ndim` dimensions as a NumPy array."""
    gz = path.endswith('.gz')
    try:
        f = gzip.open(path, 'rb') if gz else open(path, 'rb')
    except OSError as err:
        raise MXNetError('cannot open %s: %s' % (path, err)) from None
    try:
        with f:
            head = _read_exact(f, 4 + 4 * ndim, path, 'header')
            zero, dtype, nd_file = struct.unpack('>HBB', head[:4])
            if zero != 0 or dtype != _IDX_UBYTE or nd_file != ndim:
                raise _IDXError('%s: not an IDX file of unsigned bytes with %d dimensions '
                                '(magic %s)' % (path, ndim, head[:4].hex()))
            dims = struct.unpack('>%dI' % ndim, head[4:])
            count = 1
            for d in dims:
                count *= d
            if count > _MAX_ITEMS:
                raise _IDXError('%s: implausible dimensions %s in the header' % (path, dims))
            expected = len(head) + count
            if gz:
                isize = _gzip_isize(path)
                if isize != expected % (1 << 32):
                    raise _IDXError('%s: header says %s (%d bytes) but the gzip trailer '
                                    'records %d uncompressed bytes: truncated or corrupted'
                                    % (path, dims, expected, isize))
            else:
                size = os.fstat(f.fileno()).st_size
                if size != expected:
                    raise _IDXError('%s: header says %s, %d bytes, but the file has %d bytes: '
                                    'truncated or corrupted' % (path, dims, expected, size))
            payload = _read_exact(f, count, path, 'data')
            if gz and f.read(1):
                raise _IDXError('%s: data continues past the size in the header' % path)
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise _IDXError('%s: corrupted gzip data: %s' % (path, err)) from None
    return _np.frombuffer(payload, dtype=_np.uint8).reshape(dims)


class _DownloadedDataset(Dataset):
    """A dataset held in memory: `_data` (NDArray) and `_label` (NumPy) filled by
    `_get_data`; `transform(data, label)` applies per sample."""

    def __init__(self, root, transform):
        super().__init__()
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError


class MNIST(_DownloadedDataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images.

    MNIST(root='~/.mxnet/datasets/mnist', train=True, transform=None)

    `root` must hold train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
    and t10k-labels-idx1-ubyte (each may end in .gz). `transform(data, label)` is applied to
    every sample.
    """
    _files = {True: ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
              False: ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte')}
    _namespace = 'mnist'
    _fallback_dirs = ()
    _how_to_get = ('download the four IDX files from http://yann.lecun.com/exdb/mnist/ '
                   '(or a mirror) into that directory')

    def __init__(self, root=os.path.join(_data_dir(), 'datasets', 'mnist'), train=True,
                 transform=None):
        self._train = train
        self._default_root = os.path.join(_data_dir(), 'datasets', self._namespace)
        super().__init__(root, transform)

    def _search_dirs(self):
        dirs = [self._root]
        if os.path.abspath(self._root) == os.path.abspath(os.path.expanduser(
                self._default_root)):
            dirs.extend(d for d in self._fallback_dirs if d not in dirs)
        return dirs

    def _find(self, name):
        dirs = self._search_dirs()
        for d in dirs:
            for fname in (name + '.gz', name):
                path = os.path.join(d, fname)
                if os.path.isfile(path):
                    return path
        raise MXNetError(
            '%s: cannot find %s(.gz) in %s. hybridgluon downloads nothing: %s.'
            % (type(self).__name__, name, ' or '.join(dirs), self._how_to_get))

    def _get_data(self):
        data_name, label_name = self._files[bool(self._train)]
        label_file = self._find(label_name)
        data_file = self._find(data_name)
        label = _read_idx(label_file, 1)
        data = _read_idx(data_file, 3)
        if data.shape[0] != label.shape[0]:
            raise _IDXError('%s has %d images but %s has %d labels'
                            % (data_file, data.shape[0], label_file, label.shape[0]))
        self._data = nd.array(data.reshape(data.shape + (1,)), dtype=_np.uint8)
        self._label = label.astype(_np.int32)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28x28 grey images of 10 kinds of clothing, in MNIST's format.

    FashionMNIST(root='~/.mxnet/datasets/fashion-mnist', train=True, transform=None)

    With the default root, the files are also looked for in /usr/share/datasets/fashion-mnist,
    where Debian's dataset-fashion-mnist package installs them.
    """
    _namespace = 'fashion-mnist'
    _fallback_dirs = (_DEBIAN_FASHION_MNIST,)
    _how_to_get = ("install Debian's dataset-fashion-mnist package (apt-get install "
                   "dataset-fashion-mnist), or put the four IDX files from "
                   "https://github.com/zalandoresearch/fashion-mnist into that directory")

    def __init__(self, root=os.path.join(_data_dir(), 'datasets', 'fashion-mnist'),
                 train=True, transform=None):
        super().__init__(root, train, transform)


# --- ImageRecordDataset (the recordio slice) ---------------------------------------------------
from ..dataset import RecordFileDataset  # noqa: E402

__all__ += ['ImageRecordDataset']


class ImageRecordDataset(RecordFileDataset):
    """Images of a RecordIO file (im2rec's output): a sample is (image, label), the image a uint8
    NDArray (height, width, channels) in RGB order, the label the record header's (a float, or
    a NumPy float32 array for multi-label records).

    Parameters
    ----------
    filename : str
        Path of the .rec file (its .idx must sit next to it).
    flag : int
        1: decode as 3-channel colour; 0: as 1-channel grey.
    transform : callable, optional
        Called as transform(image, label); its result is the sample.
    """

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from ....recordio import _cv2, unpack
        cv2 = _cv2()
        header, img = unpack(super().__getitem__(idx))
        data = cv2.imdecode(_np.frombuffer(img, _np.uint8),
                            cv2.IMREAD_COLOR if self._flag else cv2.IMREAD_GRAYSCALE)
        if data is None:
            raise MXNetError('ImageRecordDataset: record %d of %s does not hold an image '
                             'OpenCV can decode' % (idx, self.filename))
        data = data[:, :, ::-1] if self._flag else data[:, :, None]
        data = nd.array(_np.ascontiguousarray(data), dtype='uint8')
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label
