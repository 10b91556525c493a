"""`mx.image` (also `mx.img`): image decoding, resizing and augmentation, ImageIter and
ImageDetIter, with MXNet 1.9.1's API. Needs OpenCV (`pip install "hybridgluon[image]"`) for
decoding, resizing and borders; it is imported on first use."""
from . import image
from .image import *  # noqa: F401,F403
from .image import _get_interp_method  # noqa: F401 (MXNet's tests and user code reach it)
from . import detection
from .detection import *  # noqa: F401,F403
