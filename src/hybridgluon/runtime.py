"""MXNet's `mx.runtime`: which features this build of the library has, under MXNet's feature
names, so that code asking `Features().is_enabled('CUDA')` gets a true answer.

The answers describe hybridgluon's build, not MXNet's: CUDA when it is the CUDA build
(`HG_CUDA=1`, docs/gpu.md; cuDNN when that build has cuDNN kernels), its own thread pool
instead of OpenMP, OpenBLAS (scipy-openblas32 or the system's) for GEMM, float16 converted in
software (no F16C), SSE/SSE2 as the x86-64 baseline and AVX2 / AVX-512 kernels chosen at run
time where the CPU has them.
"""
import collections
import platform

from . import _core

__all__ = ['Feature', 'Features', 'feature_list']

_X86 = platform.machine().lower() in ('x86_64', 'amd64')

# MXNet 1.9.1's feature names, in its order, with this build's answer.
_FEATURES = [
    ('CUDA', _core.built_with_cuda()),
    ('CUDNN', _core.built_with_cuda() and _core.op_info('Convolution')['gpu']),
    ('NCCL', False), ('CUDA_RTC', False),
    ('TENSORRT', False), ('CPU_SSE', _X86), ('CPU_SSE2', _X86), ('CPU_SSE3', False),
    ('CPU_SSE4_1', False), ('CPU_SSE4_2', False), ('CPU_SSE4A', False), ('CPU_AVX', _X86),
    ('CPU_AVX2', _X86), ('OPENMP', False), ('SSE', False), ('F16C', False), ('JEMALLOC', False),
    ('BLAS_OPEN', True), ('BLAS_ATLAS', False), ('BLAS_MKL', False), ('BLAS_APPLE', False),
    ('LAPACK', False), ('MKLDNN', False), ('OPENCV', False), ('CAFFE', False),
    ('PROFILER', False), ('DIST_KVSTORE', False), ('CXX14', False),
    # The BLAS takes 32-bit sizes, so tensors past 2**31 elements are not promised.
    ('INT64_TENSOR_SIZE', False), ('SIGNAL_HANDLER', False), ('DEBUG', False),
    ('TVM_OP', False),
]


class Feature(collections.namedtuple('Feature', ['name', 'enabled'])):
    """One feature: `name` and whether this build has it (`enabled`)."""
    __slots__ = ()

    def __repr__(self):
        return ('\u2714 ' if self.enabled else '\u2716 ') + self.name


def feature_list():
    """Every feature of this build, as Feature objects in MXNet's order."""
    return [Feature(n, bool(e)) for n, e in _FEATURES]


class Features(collections.OrderedDict):
    """The features by name (one shared instance, as in MXNet)."""
    instance = None

    def __new__(cls):
        if cls.instance is None:
            inst = super().__new__(cls)
            collections.OrderedDict.__init__(inst, [(f.name, f) for f in feature_list()])
            cls.instance = inst
        return cls.instance

    def __init__(self):  # filled once, in __new__
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether this build has the feature; RuntimeError for a name MXNet does not know."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError('Feature "{}" is unknown, known features are: {}'
                               .format(feature_name, list(self.keys())))
        return self[name].enabled
