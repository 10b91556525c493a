"""Vision datasets (MXNet's `gluon.data.vision.datasets`): MNIST and Fashion-MNIST read from
the standard IDX files, gzipped or not; CIFAR-10 and CIFAR-100 from their binary batch files;
ImageFolderDataset and ImageListDataset decoding image files with OpenCV (the optional
`image` extra, imported when an image is read). Nothing is downloaded.

An MNIST sample is `(image, label)`: the image a uint8 NDArray of shape (28, 28, 1), the label
a NumPy int32 scalar, as in MXNet. Files are read with NumPy at the boundary; every size in a
header is checked against the file (and, for gzip, against the size recorded in its trailer)
before anything is allocated, so a truncated or corrupted file is an MXNetError, never a
crash or a huge allocation.
"""
import gzip
import os
import struct
import warnings
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


class _CIFARError(MXNetError, ValueError):
    """A CIFAR binary file of the wrong size."""


def _imread(path, flag):
    """An image file decoded by OpenCV into an (H, W, 3) RGB (flag 1) or (H, W, 1) grey
    (flag 0) uint8 NDArray, as MXNet's image.imread."""
    try:
        import cv2
    except ImportError:
        raise MXNetError('reading images needs OpenCV: pip install "hybridgluon[image]" '
                         '(the opencv-python-headless package)') from None
    if flag not in (0, 1):
        raise MXNetError('flag must be 0 (greyscale) or 1 (colour), got %r' % (flag,))
    if not os.path.isfile(path):  # checked first: OpenCV would also print a warning
        raise MXNetError('cannot read image %s: no such file' % path)
    img = cv2.imread(path, cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
    if img is None:
        raise MXNetError('cannot read image %s: not an image OpenCV can decode' % path)
    img = img[:, :, ::-1] if flag else img[:, :, None]  # OpenCV decodes BGR
    return nd.array(_np.ascontiguousarray(img), dtype=_np.uint8)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: 32x32 colour images of 10 classes, 50,000 for training and 10,000 for test.

    CIFAR10(root='~/.mxnet/datasets/cifar10', train=True, transform=None)

    `root` holds the binary version's files as MXNet unpacks them: data_batch_1.bin ...
    data_batch_5.bin and test_batch.bin (a cifar-10-batches-bin folder inside root, as the
    official archive unpacks, is also searched). A sample is a (32, 32, 3) uint8 NDArray and
    an int32 label. Nothing is downloaded: missing files raise MXNetError naming them.
    """
    _train_files = ['data_batch_%d.bin' % i for i in range(1, 6)]
    _test_files = ['test_batch.bin']
    _subdir = 'cifar-10-batches-bin'
    _label_bytes = 1
    _url = 'https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz'

    def __init__(self, root=os.path.join(_data_dir(), 'datasets', 'cifar10'), train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _files(self):
        names = self._train_files if self._train else self._test_files
        for d in (self._root, os.path.join(self._root, self._subdir)):
            paths = [os.path.join(d, n) for n in names]
            if all(os.path.isfile(p) for p in paths):
                return paths
        missing = [n for n in names if not os.path.isfile(os.path.join(self._root, n))]
        raise MXNetError('%s: missing %s in %s. hybridgluon downloads nothing: unpack the '
                         'binary version (%s) into that directory.'
                         % (type(self).__name__, ', '.join(missing), self._root, self._url))

    def _read_batch(self, path):
        rec = self._label_bytes + 3072
        size = os.path.getsize(path)
        if size == 0 or size % rec:
            raise _CIFARError('%s: %d bytes is not a whole number of %d-byte records '
                              '(%d label byte(s) + a 32x32x3 image): truncated or not a %s '
                              'file' % (path, size, rec, self._label_bytes, type(self).__name__))
        with open(path, 'rb') as f:
            raw = _np.frombuffer(f.read(), dtype=_np.uint8).reshape(-1, rec)
        data = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return data, raw[:, self._label_column()].astype(_np.int32)

    def _get_data(self):
        parts = [self._read_batch(p) for p in self._files()]
        data = _np.concatenate([d for d, _ in parts])
        self._data = nd.array(data, dtype=_np.uint8)
        self._label = _np.concatenate([lab for _, lab in parts])


class CIFAR100(CIFAR10):
    """CIFAR-100: 32x32 colour images of 100 classes in 20 superclasses.

    CIFAR100(root='~/.mxnet/datasets/cifar100', fine_label=False, train=True, transform=None)

    `root` holds train.bin and test.bin (or a cifar-100-binary folder with them). Each record
    carries a coarse (20 classes) and a fine (100 classes) label; fine_label picks which.
    """
    _train_files = ['train.bin']
    _test_files = ['test.bin']
    _subdir = 'cifar-100-binary'
    _label_bytes = 2
    _url = 'https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz'

    def __init__(self, root=os.path.join(_data_dir(), 'datasets', 'cifar100'), fine_label=False,
                 train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageFolderDataset(Dataset):
    """Images in one folder per class: root/car/0001.jpg, root/bus/x.png ...

    ImageFolderDataset(root, flag=1, transform=None)

    Class folders are sorted by name and numbered from 0 (`synsets[i]` is class i's name);
    `items` lists (filename, label) for every .jpg, .jpeg and .png file (other files and
    non-folders at the top are skipped with a warning). A sample is the image decoded by
    OpenCV, (H, W, 3) RGB uint8 with flag=1 or (H, W, 1) grey with flag=0, and its int label;
    `transform(data, label)` applies per sample.
    """

    def __init__(self, root, flag=1, transform=None):
        super().__init__()
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = ['.jpg', '.jpeg', '.png']
        self._list_images(self._root)

    def _list_images(self, root):
        if not os.path.isdir(root):
            raise MXNetError('ImageFolderDataset: %s is not a directory' % root)
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn('Ignoring %s, which is not a directory.' % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn('Ignoring %s of type %s. Only %s are read.'
                                  % (filename, ext, ', '.join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = _imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(Dataset):
    """Images named in a list, with labels.

    ImageListDataset(root='.', imglist=None, flag=1)

    imglist is a .lst file name (relative to root) of tab-separated lines `index<TAB>label(s)
    <TAB>path`, as im2rec writes them, or a Python list whose entries are [label, path],
    [label_1, ..., label_k, path] or [[labels], path]. Paths are relative to root. A sample is
    (image, label): the image decoded as by ImageFolderDataset, the label a float32 NDArray of
    the entry's labels.
    """

    def __init__(self, root='.', imglist=None, flag=1):
        super().__init__()
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._items = []
        if isinstance(imglist, str):
            self._read_lst(os.path.join(self._root, imglist))
        elif isinstance(imglist, (list, tuple)):
            for i, entry in enumerate(imglist):
                self._items.append(self._parse_entry(entry, i))
        else:
            raise MXNetError('ImageListDataset: imglist must be a .lst file name or a list of '
                             '[label(s), path] entries, got %s' % type(imglist).__name__)

    @staticmethod
    def _parse_entry(entry, i):
        if not isinstance(entry, (list, tuple)) or len(entry) < 2 or \
                not isinstance(entry[-1], str):
            raise MXNetError('ImageListDataset: entry %d must be [label(s), path] with the path '
                             'a string, got %r' % (i, entry))
        labels = entry[:-1]
        if len(labels) == 1 and isinstance(labels[0], (list, tuple, _np.ndarray)):
            labels = labels[0]
        try:
            label = _np.asarray(labels, dtype=_np.float32).reshape(-1)
        except (TypeError, ValueError):
            raise MXNetError('ImageListDataset: entry %d has labels that are not numbers: %r'
                             % (i, labels)) from None
        return label, entry[-1]

    def _read_lst(self, path):
        try:
            f = open(path, 'rt')
        except OSError as err:
            raise MXNetError('ImageListDataset: cannot open %s: %s' % (path, err)) from None
        with f:
            for n, line in enumerate(f, 1):
                fields = line.rstrip('\r\n').split('\t')
                if not line.strip():
                    continue
                if len(fields) < 3:
                    raise MXNetError('%s:%d: expected index<TAB>label(s)<TAB>path, got %r'
                                     % (path, n, line.rstrip()))
                try:
                    label = _np.array([float(v) for v in fields[1:-1]], dtype=_np.float32)
                    int(fields[0])
                except ValueError:
                    raise MXNetError('%s:%d: the index and labels must be numbers, got %r'
                                     % (path, n, line.rstrip())) from None
                self._items.append((label, fields[-1]))

    def __getitem__(self, idx):
        label, path = self._items[idx]
        img = _imread(os.path.join(self._root, path), self._flag)
        return img, nd.array(label, dtype=_np.float32)

    def __len__(self):
        return len(self._items)


__all__ += ['CIFAR10', 'CIFAR100', 'ImageFolderDataset', 'ImageListDataset']


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
