"""`nd._internal`: the registered ops whose names (or aliases) start with an underscore
(`_plus_scalar`, `_Plus`, `_backward_relu`, ...), as MXNet's generated module holds them; bound
from the C registry by `nd/__init__.py`."""


# MXNet's OpenCV operators, which user code reaches as nd._internal._cv*: they live in
# hybridgluon.image (OpenCV is optional), imported when called since image imports ndarray.
def _cvimdecode(buf, flag=1, to_rgb=True, out=None):
    """Decodes an encoded image into an (H, W, C) uint8 NDArray (see mx.image.imdecode)."""
    from ..image import _cv
    return _cv.cvimdecode(buf, flag=flag, to_rgb=to_rgb, out=out)


def _cvimread(filename, flag=1, to_rgb=True, out=None):
    """Reads an image file into an (H, W, C) uint8 NDArray (see mx.image.imread)."""
    from ..image import _cv
    return _cv.cvimread(filename, flag=flag, to_rgb=to_rgb, out=out)


def _cvimresize(src, w, h, interp=1, out=None):
    """Resizes an (H, W, C) image (see mx.image.imresize)."""
    from ..image import _cv
    return _cv.cvimresize(src, w, h, interp=interp, out=out)


def _cvcopyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):  # noqa: A002
    """Pads an (H, W, C) image (see mx.image.copyMakeBorder)."""
    from ..image import _cv
    return _cv.cvcopyMakeBorder(src, top, bot, left, right, type=type, value=value,
                                values=values, out=out)
