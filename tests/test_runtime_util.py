"""mx.runtime (this build's features under MXNet's names), mx.util and the small mx.base
helpers MXNet code imports (py_str, data_dir, type tuples)."""
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import base, runtime, util


def test_features_describe_this_build():
    f = runtime.Features()
    assert f is runtime.Features()                       # one shared instance
    assert len(f) == 32 and list(f)[:2] == ['CUDA', 'CUDNN']
    assert f.is_enabled('CUDA') == mx._core.built_with_cuda()   # the CUDA build, or not
    assert f.is_enabled('cudnn') == (mx._core.built_with_cuda()
                                     and mx._core.op_info('Convolution')['gpu'])
    assert f.is_enabled('BLAS_OPEN') and not f.is_enabled('OPENMP')
    assert f.is_enabled('CPU_SSE2') == (os.uname().machine == 'x86_64')
    for name, feat in f.items():
        assert feat.name == name and f.is_enabled(name) is feat.enabled
        assert repr(feat) == ('\u2714 ' if feat.enabled else '\u2716 ') + name
    with pytest.raises(RuntimeError, match='this girl is on fire'):
        f.is_enabled('this girl is on fire')
    assert [x.name for x in runtime.feature_list()] == list(f)


def test_base_helpers(monkeypatch):
    assert base.py_str(b'caf\xc3\xa9') == 'caf\u00e9'
    assert isinstance(np.int64(3), base.integer_types) and isinstance(3, base.integer_types)
    assert not isinstance(3.0, base.integer_types) and isinstance(3.0, base.numeric_types)
    monkeypatch.setenv('MXNET_HOME', '/tmp/somewhere')
    assert base.data_dir() == '/tmp/somewhere'
    from hybridgluon.gluon.model_zoo import model_store
    assert model_store.data_dir() == '/tmp/somewhere'
    monkeypatch.delenv('MXNET_HOME')
    assert base.data_dir() == os.path.join(os.path.expanduser('~'), '.mxnet')


def test_util_env(monkeypatch):
    monkeypatch.delenv('HG_TEST_UTIL_VAR', raising=False)
    assert util.getenv('HG_TEST_UTIL_VAR') is None
    util.setenv('HG_TEST_UTIL_VAR', 5)
    assert util.getenv('HG_TEST_UTIL_VAR') == '5' == os.environ['HG_TEST_UTIL_VAR']
    util.setenv('HG_TEST_UTIL_VAR', None)
    assert 'HG_TEST_UTIL_VAR' not in os.environ


def test_util_np_array_semantics_cannot_be_turned_on():
    # NumPy shape semantics work (tests/test_np_shape.py); mx.np array semantics do not.
    assert util.is_np_array() is False and util.is_np_shape() is False
    assert mx.np_shape is util.np_shape and mx.use_np_shape is util.use_np_shape
    with pytest.raises(mx.MXNetError, match='np_array.*not supported'):
        with util.np_array(True):
            pass
    with pytest.raises(mx.MXNetError, match='set_np'):
        util.set_np()
    assert util.is_np_shape() is False
    util.set_np(shape=True, array=False)
    try:
        assert util.is_np_shape() is True
    finally:
        util.reset_np()
    assert util.is_np_shape() is False

    @util.use_np
    def f():
        return 1
    with pytest.raises(mx.MXNetError):
        f()


def test_small_names_mxnet_modules_have():
    from hybridgluon.ndarray import ndarray as ndm
    assert ndm.py_slice is slice
    assert ndm._STORAGE_TYPE_STR_TO_ID['csr'] == 2 and ndm._STORAGE_TYPE_ID_TO_STR[0] == 'default'
    assert mx.nd.ones((2,)).stype == ndm._STORAGE_TYPE_ID_TO_STR[0]
    assert base._as_list([1]) == [1] and base._as_list(1) == [1]
