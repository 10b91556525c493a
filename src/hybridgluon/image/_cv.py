"""OpenCV at the boundary of `mx.image`: decoding, reading, resizing and borders of HWC images.

These are MXNet's `_cvimdecode`, `_cvimread`, `_cvimresize` and `_cvcopyMakeBorder` (also bound in
`nd._internal`). OpenCV is an optional dependency (extra `image`), imported on first use so that
`import hybridgluon` never needs it. Codes for `interp` and the border `type` go to OpenCV as they
are, as MXNet's operators do: interp 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos (MXNet's
docstrings swap 2 and 3, its kernels do not). Images are NDArrays of shape (H, W, C).
"""
import numpy as np

from ..base import MXNetError, MXNetValueError, MXNetTypeError
from .. import ndarray as nd

_EXTRA_HINT = ('pip install opencv-python-headless (or pip install "hybridgluon[image]")')
# The dtypes cv2 keeps as they are through resize and copyMakeBorder.
_CV_DTYPES = ('uint8', 'int8', 'uint16', 'int16', 'float32', 'float64', 'int32')


def _cv2(what):
    try:
        import cv2
    except ImportError as e:
        raise MXNetError('%s needs OpenCV, which is not installed: %s' % (what, _EXTRA_HINT)) from e
    return cv2


def _emit(result, out, what):
    """Returns `result` (a NumPy image) as a new NDArray, or written into `out`."""
    if result.ndim == 2:
        result = result[:, :, None]
    if out is None:
        return nd.array(result, dtype=result.dtype)
    if not isinstance(out, nd.NDArray):
        raise MXNetTypeError('%s: out must be an NDArray, got %s' % (what, type(out).__name__))
    if tuple(out.shape) != result.shape:
        raise MXNetValueError('%s: out has shape %s, the result has shape %s'
                              % (what, tuple(out.shape), result.shape))
    out[:] = nd.array(result, dtype=result.dtype)
    return out


def _image_array(src, what):
    """The NumPy view of an (H, W, C) NDArray that cv2 can take."""
    if not isinstance(src, nd.NDArray):
        raise MXNetTypeError('%s: src must be an NDArray, got %s' % (what, type(src).__name__))
    if src.ndim != 3:
        raise MXNetValueError('%s: src must have 3 dimensions (H, W, C), got shape %s'
                              % (what, tuple(src.shape)))
    dtype = np.dtype(src.dtype).name
    if dtype not in _CV_DTYPES:
        raise MXNetTypeError('%s: dtype %s is not supported (one of %s)'
                             % (what, dtype, ', '.join(_CV_DTYPES)))
    return src.asnumpy()


def _check_int(value, name, what, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise MXNetValueError('%s: %s must be an integer >= %d, got %r'
                              % (what, name, minimum, value))
    return int(value)


def _decode_bytes(data, flag, to_rgb, out, what):
    cv2 = _cv2(what)
    if data.size == 0:
        raise MXNetValueError('%s: the input buffer is empty' % what)
    if flag not in (-1, 0, 1):
        raise MXNetValueError('%s: flag must be 1 (colour), 0 (grayscale) or -1 (unchanged), '
                              'got %r' % (what, flag))
    img = cv2.imdecode(data, int(flag))
    if img is None or img.size == 0:
        raise MXNetError('%s: decoding failed, the %d bytes are not an image OpenCV can read'
                         % (what, data.size))
    if to_rgb and img.ndim == 3:
        if img.shape[2] == 3:
            img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        elif img.shape[2] == 4:
            img = cv2.cvtColor(img, cv2.COLOR_BGRA2RGBA)
    return _emit(img, out, what)


def cvimdecode(buf, flag=1, to_rgb=True, out=None):
    """Decodes an encoded image (an NDArray of uint8, bytes, bytearray or a NumPy array of bytes)
    into an (H, W, C) uint8 NDArray; C is 3 for flag=1, 1 for flag=0."""
    if isinstance(buf, nd.NDArray):
        data = buf.asnumpy()
        if data.dtype != np.uint8:
            data = data.astype(np.uint8)
        data = data.reshape(-1)
    elif isinstance(buf, (bytes, bytearray, memoryview)):
        data = np.frombuffer(buf, dtype=np.uint8)
    elif isinstance(buf, np.ndarray):
        data = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    else:
        raise MXNetTypeError('imdecode: buf must be an NDArray, bytes, bytearray or '
                             'numpy.ndarray, got %s' % type(buf).__name__)
    return _decode_bytes(data, flag, to_rgb, out, 'imdecode')


def cvimread(filename, flag=1, to_rgb=True, out=None):
    """Reads and decodes the image file `filename`."""
    try:
        with open(filename, 'rb') as f:
            data = f.read()
    except OSError as e:
        raise MXNetError("imread: cannot open file '%s': %s" % (filename, e.strerror)) from e
    return _decode_bytes(np.frombuffer(data, dtype=np.uint8), flag, to_rgb, out, 'imread')


def cvimresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W, C) image to (h, w, C) with OpenCV's interpolation code `interp`."""
    w = _check_int(w, 'w', 'imresize', 1)
    h = _check_int(h, 'h', 'imresize', 1)
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetValueError('imresize: interp must be 0 (nearest), 1 (bilinear), 2 (bicubic), '
                              '3 (area) or 4 (Lanczos), got %r' % (interp,))
    img = _image_array(src, 'imresize')
    cv2 = _cv2('imresize')
    try:
        res = cv2.resize(img, (w, h), interpolation=int(interp))
    except cv2.error as e:
        raise MXNetError('imresize: OpenCV cannot resize a %s image of shape %s with interp %d: %s'
                         % (img.dtype, img.shape, interp, str(e).strip())) from e
    return _emit(res, out, 'imresize')


def cvcopyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):  # noqa: A002
    """Pads an (H, W, C) image with OpenCV's border `type` (0 constant, 1 replicate, 2 reflect,
    3 wrap, 4 reflect-101); constant borders take `values` per channel, else `value`."""
    what = 'copyMakeBorder'
    top, bot = _check_int(top, 'top', what, 0), _check_int(bot, 'bot', what, 0)
    left, right = _check_int(left, 'left', what, 0), _check_int(right, 'right', what, 0)
    if not isinstance(type, (int, np.integer)) or (int(type) & ~16) not in (0, 1, 2, 3, 4):
        raise MXNetValueError('copyMakeBorder: type must be an OpenCV border type 0-4 '
                              '(optionally | 16), got %r' % (type,))
    img = _image_array(src, what)
    cv2 = _cv2(what)
    if values is not None and len(values) > 0:
        fill = [float(v) for v in values]
    else:
        fill = [float(value)] * 4
    try:
        res = cv2.copyMakeBorder(img, top, bot, left, right, int(type), value=fill)
    except cv2.error as e:
        raise MXNetError('copyMakeBorder: OpenCV cannot pad a %s image of shape %s: %s'
                         % (img.dtype, img.shape, str(e).strip())) from e
    return _emit(res, out, what)
