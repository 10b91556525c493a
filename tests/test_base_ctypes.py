"""mx.base's ctypes names (MXNet code imports them) over libhybridgluon's C API."""
import ctypes

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import base


def test_check_call_raises_the_library_message():
    lib = base._LIB
    out = ctypes.c_int()
    base.check_call(lib.hg_dtype_from_name(base.c_str('float64'), ctypes.byref(out)))
    assert out.value == 1  # MXNet's type flag of float64
    with pytest.raises(mx.MXNetError, match='complex'):
        base.check_call(lib.hg_dtype_from_name(base.c_str('complex'), ctypes.byref(out)))
    with pytest.raises(AttributeError):
        lib.MXNotAFunction  # MXNet's MX* C API is not ours


def test_c_array_helpers():
    a = base.c_array(base.mx_uint, [1, 2, 3])
    assert list(a) == [1, 2, 3] and base.NDArrayHandle is ctypes.c_void_p
    assert [s for s in base.c_str_array(['ab', 'c'])] == [b'ab', b'c']
    import array
    buf = array.array('I', [4, 5])
    assert list(base.c_array_buf(base.mx_uint, buf)) == [4, 5]
    arrs = [mx.nd.ones((2,)), mx.nd.zeros((3,))]
    assert list(base.c_handle_array(arrs)) == [x.handle for x in arrs]
    assert base.mx_real_t is np.float32
    with pytest.raises(AttributeError):
        base.no_such_name
