"""Where the C headers and libhybridgluon.so are installed (for C and C++ builds)."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include():
    """Directory holding hybridgluon/hybridgluon.h."""
    return os.path.join(_HERE, 'include')


def get_lib_dir():
    """Directory holding libhybridgluon.so."""
    return os.path.join(_HERE, 'lib')
