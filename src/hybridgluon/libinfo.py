"""Where the C headers and libhybridgluon.so are installed (for C and C++ builds), and how the
extension finds its OpenBLAS."""
import importlib
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_OPENBLAS = b'libscipy_openblas'


def _load_core():
    """Imports hybridgluon._core. libhybridgluon.so finds scipy_openblas32's library through an
    $ORIGIN-relative run path when both are installed side by side in site-packages; where they
    are not (an editable or in-place build, a --target or user-site install), importing
    scipy_openblas32 first loads its library, and the loader then reuses it by its soname.

    The OpenBLAS runs single-threaded (our pool splits the products: kernels/cpu/blas.h), so it
    is loaded with OPENBLAS_NUM_THREADS=1: otherwise it starts a thread per core at load time,
    whose polling took 1-2% of both cores in a training step. The caller's setting is put back
    right after (child processes and NumPy's own OpenBLAS keep it)."""
    saved = os.environ.get('OPENBLAS_NUM_THREADS')
    os.environ['OPENBLAS_NUM_THREADS'] = '1'
    try:
        try:
            core = importlib.import_module('hybridgluon._core')
        except ImportError as e:
            if _OPENBLAS.decode() not in str(e):
                raise
            import scipy_openblas32  # noqa: F401  (loads libscipy_openblas.so, RTLD_GLOBAL)
            core = importlib.import_module('hybridgluon._core')
        if core.built_with_cuda():
            _preload_nvidia_libs()
        return core
    finally:
        if saved is None:
            del os.environ['OPENBLAS_NUM_THREADS']
        else:
            os.environ['OPENBLAS_NUM_THREADS'] = saved


# The NVIDIA libraries the CUDA build loads at first use (csrc/kernels/cuda/cublas.c, cudnn.c),
# as the PyPI wheels lay them out: nvidia/cu13/lib (cuBLAS 13) or nvidia/<name>/lib (cuDNN, which
# finds its sub-libraries beside itself).
_NVIDIA_LIBS = ['libcublasLt.so.13', 'libcublas.so.13', 'libcudnn.so.9']


def _preload_nvidia_libs():
    """Loads the nvidia-* wheels' libraries with RTLD_GLOBAL, so that the C core's dlopen of
    their sonames finds them without LD_LIBRARY_PATH. A library not installed is left for the
    C core to report when a GPU op needs it."""
    import ctypes
    import sys
    for name in _NVIDIA_LIBS:
        for base in sys.path:
            hits = [os.path.join(base, 'nvidia', sub, 'lib', name)
                    for sub in ('cu13', 'cublas', 'cudnn')]
            path = next((h for h in hits if os.path.exists(h)), None)
            if path:
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass
                break


def get_include():
    """Directory holding hybridgluon/hybridgluon.h."""
    return os.path.join(_HERE, 'include')


def get_lib_dir():
    """Directory holding libhybridgluon.so."""
    return os.path.join(_HERE, 'lib')


def _needs_scipy_openblas():
    """Whether libhybridgluon.so links scipy_openblas32's library (not the system OpenBLAS)."""
    try:
        with open(os.path.join(get_lib_dir(), 'libhybridgluon.so'), 'rb') as f:
            return _OPENBLAS in f.read()
    except OSError:
        return False
