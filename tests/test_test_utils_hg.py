"""hybridgluon.test_utils (MXNet's mx.test_utils): tolerance rules, failure messages and the
Symbol checks, each against an independent NumPy reference or a deliberately wrong input that
must fail."""
import os
import re

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import test_utils as tu


# ---- tolerances -----------------------------------------------------------------------------
@pytest.mark.parametrize('dtype,rtol,atol', [
    (np.float16, 1e-2, 1e-1), (np.float32, 1e-4, 1e-3), (np.float64, 1e-5, 1e-20),
    (np.int32, 0, 0), (np.int64, 0, 0), (np.uint8, 0, 0), (np.bool_, 0, 0)])
def test_default_tolerances_by_dtype(dtype, rtol, atol):
    a = np.zeros(3, dtype=dtype)
    assert tu.get_tols(a, a, None, None) == (rtol, atol)
    assert tu.get_rtol(None, np.dtype(dtype)) == rtol
    assert tu.get_atol(None, np.dtype(dtype)) == atol


def test_tolerance_is_the_looser_of_the_two_dtypes_and_overrides_apply():
    a16, a64 = np.zeros(2, np.float16), np.zeros(2, np.float64)
    assert tu.get_tols(a16, a64, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(mx.nd.zeros((2,)), a64, None, None) == (1e-4, 1e-3)  # NDArray: float32
    assert tu.get_tols(a16, a64, 0.5, 0.25) == (0.5, 0.25)
    assert tu.get_tols(a64, a64, {np.dtype(np.float64): 0.125}, None) == (0.125, 1e-20)
    assert tu.get_tols(1.0, 2, None, None) == (1e-5, 1e-20)  # Python scalars: float64, int64
    assert tu.default_numeric_eps()[np.dtype(np.float32)] == 1.0 / 512
    assert tu.effective_dtype(mx.nd.zeros((1,), dtype='float16')) == np.float16


def test_assert_almost_equal_uses_the_dtype_defaults():
    b = np.ones(4, dtype=np.float32)
    tu.assert_almost_equal(b + np.float32(1e-3), b)  # float32: 1e-3 + 1e-4 * 1 allowed
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(b + np.float32(2e-3), b)
    with pytest.raises(AssertionError):  # float64: the same difference fails
        tu.assert_almost_equal(b.astype(np.float64) + 1e-3, b.astype(np.float64))
    tu.assert_almost_equal(b.astype(np.float16) + np.float16(0.1), b.astype(np.float16))
    tu.assert_almost_equal(mx.nd.array(b), b)  # NDArray against NumPy
    tu.assert_almost_equal(mx.nd.array(b), mx.nd.array(b + 1e-4))
    tu.assert_almost_equal(3.0, 3.0)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True]), np.array([False]))


def test_assert_almost_equal_message_names_the_worst_violation(capsys):
    a = np.zeros((2, 3), np.float64)
    b = np.zeros((2, 3), np.float64)
    a[0, 2], a[1, 0] = 0.5, 2.0  # (1, 0) is the worst
    with pytest.raises(AssertionError) as err:
        tu.assert_almost_equal(a, b, rtol=1e-3, atol=1e-2, names=('got', 'want'))
    msg = str(err.value)
    worst = 2.0 / (1e-2 + 1e-20)
    assert 'Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %f%%).' % (
        worst, 1e-3, 1e-2, 100 * 2 / 6) in msg
    assert 'Location of maximum error: (1, 0), got=2.00000000, want=0.00000000' in msg
    printed = capsys.readouterr().out
    assert re.search(r'1: Error [0-9.]+ +Location of error: \(1, 0\)', printed)
    assert re.search(r'2: Error [0-9.]+ +Location of error: \(0, 2\)', printed)
    with pytest.raises(AssertionError) as err:  # past mismatches[1]: "at least"
        tu.assert_almost_equal(np.ones(20), np.zeros(20), mismatches=(3, 4))
    assert '(mismatch at least %f%%)' % (100 * 5 / 20) in str(err.value)


def test_equal_nan_and_ignore_nan():
    a = np.array([1.0, np.nan, 3.0])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a.copy())
    tu.assert_almost_equal(a, a.copy(), equal_nan=True)
    assert not tu.almost_equal(a, a.copy())
    assert tu.almost_equal(a, a.copy(), equal_nan=True)
    tu.assert_almost_equal_ignore_nan(a, np.array([1.0, 7.0, np.nan]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(a, np.array([2.0, 7.0, np.nan]))
    tu.assert_allclose(a, a.copy())  # MXNet's assert_allclose: equal_nan=True, rtol 1e-7


def test_almost_equal_same_and_error_rate():
    x = np.array([1.0, 2.0])
    assert tu.almost_equal(x, x + 1e-6)           # float64 defaults: rtol 1e-5
    assert not tu.almost_equal(x, x + 1e-3)
    assert tu.almost_equal(mx.nd.array(x), mx.nd.array(x + 0.05), 1e-1)
    assert tu.same(x, x.copy()) and not tu.same(x, x[::-1])
    assert tu.same(mx.nd.array(x), x.astype(np.float32))
    t = mx.nd.arange(4)
    assert tu.same_array(t, t) and not tu.same_array(t, t.copy())
    a, b = np.zeros(10), np.zeros(10)
    b[0] = 1
    tu.assert_almost_equal_with_err(a, b, etol=0.2)   # 10% mismatch allowed
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)


def test_assert_exception():
    tu.assert_exception(int, ValueError, 'x')
    with pytest.raises(AssertionError):
        tu.assert_exception(int, ValueError, '3')
    with pytest.raises(TypeError):  # another exception type propagates
        tu.assert_exception(int, ValueError, None)


# ---- environment, data ----------------------------------------------------------------------
def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv('HG_TU_A', 'old')
    monkeypatch.delenv('HG_TU_B', raising=False)
    with tu.environment({'HG_TU_A': 'new', 'HG_TU_B': '1'}):
        assert os.environ['HG_TU_A'] == 'new' and os.environ['HG_TU_B'] == '1'
    assert os.environ['HG_TU_A'] == 'old' and 'HG_TU_B' not in os.environ
    with pytest.raises(RuntimeError):
        with tu.environment('HG_TU_A', None):
            assert 'HG_TU_A' not in os.environ
            raise RuntimeError
    assert os.environ['HG_TU_A'] == 'old'

    @tu.environment('HG_TU_B', 'dec')
    def body():
        return os.environ['HG_TU_B']
    assert body() == 'dec' and 'HG_TU_B' not in os.environ


def test_rand_shapes_stay_in_bounds():
    np.random.seed(0)
    dims = np.array([tu.rand_shape_nd(4, dim=3) for _ in range(200)])
    assert dims.min() == 1 and dims.max() == 3
    dims = np.array([tu.rand_shape_nd(4, dim=3, allow_zero_size=True) for _ in range(200)])
    assert dims.min() == 0 and dims.max() == 3
    for _ in range(50):
        s2, s3 = tu.rand_shape_2d(2, 5), tu.rand_shape_3d(1, 2, 3)
        assert len(s2) == 2 and 1 <= s2[0] <= 2 and 1 <= s2[1] <= 5
        assert s3[0] == 1 and 1 <= s3[1] <= 2 and 1 <= s3[2] <= 3


def test_random_data():
    a, b = tu.random_arrays((2, 3), ())
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.shape == () and b.dtype == np.float32
    assert tu.random_arrays((4,)).shape == (4,)
    u = tu.random_uniform_arrays((100,), low=2.0, high=3.0)[0]
    assert u.min() >= 2.0 and u.max() < 3.0
    r = tu.rand_ndarray((3, 4), dtype='float64')
    assert isinstance(r, mx.nd.NDArray) and r.shape == (3, 4) and r.dtype == np.float64
    assert r.context == tu.default_context()
    with pytest.raises(NotImplementedError, match='dense storage'):
        tu.rand_ndarray((3, 4), 'csr')
    assert sorted(tu.random_sample(list(range(5)), 5)) == list(range(5))
    m = tu.new_matrix_with_real_eigvals_nd((2, 3, 3))
    assert np.allclose(np.linalg.eigvals(m).imag, 0)
    s = tu.new_sym_matrix_with_real_eigvals_nd((3, 3))
    assert np.allclose(s, s.T)


def test_np_reduce_matches_numpy():
    x = np.random.rand(2, 3, 4)
    assert np.allclose(tu.np_reduce(x, (0, 2), True, np.sum), x.sum(axis=(0, 2), keepdims=True))
    assert np.allclose(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))
    assert np.allclose(tu.np_reduce(x, None, False, np.sum), x.sum())


def test_default_context_and_misc(capfd):
    old = tu.default_context()
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1) and mx.current_context() == mx.cpu(1)
    finally:
        tu.set_default_context(old)
    assert tu.default_dtype() == np.float32 and tu.is_op_runnable()
    with tu.discard_stderr():
        os.write(2, b'hidden\n')
    os.write(2, b'shown\n')
    assert capfd.readouterr().err == 'shown\n'
    ns = {}
    exec('from hybridgluon.test_utils import *', ns)
    assert ns['np'] is np and ns['mx'] is mx and 'check_numeric_gradient' in ns

    @tu.use_np
    def needs_np():
        pass
    with pytest.raises(NotImplementedError, match='mx.np'):
        needs_np()


def test_download_from_a_file_url(tmp_path):
    src = tmp_path / 'src.txt'
    src.write_bytes(b'payload' * 100)
    dst = tu.download(src.as_uri(), fname='got.txt', dirname=str(tmp_path / 'sub'))
    assert dst == str(tmp_path / 'sub' / 'got.txt') and open(dst, 'rb').read() == b'payload' * 100
    src.write_bytes(b'changed')
    assert open(tu.download(src.as_uri(), fname=dst), 'rb').read() == b'payload' * 100  # kept
    tu.download(src.as_uri(), fname=dst, overwrite=True)
    assert open(dst, 'rb').read() == b'changed'
    with pytest.raises(Exception):
        tu.download((tmp_path / 'missing').as_uri(), fname=str(tmp_path / 'x'), retries=1)


def test_verify_generator():
    pytest.importorskip('scipy')
    from scipy import stats
    np.random.seed(1)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: stats.norm.ppf(q), 5)
    tu.verify_generator(lambda n: np.random.normal(size=n), buckets, probs, nsamples=10000)
    with pytest.raises(AssertionError, match='Generator test fails'):
        tu.verify_generator(lambda n: np.random.normal(0.5, size=n), buckets, probs,
                            nsamples=10000)


# ---- Symbol checks --------------------------------------------------------------------------
def _fc():
    x, w, b = mx.sym.var('x'), mx.sym.var('w'), mx.sym.var('b')
    return mx.sym.FullyConnected(x, w, b, num_hidden=5, name='fc')


def test_check_symbolic_forward_against_numpy():
    x, w, b = np.random.rand(3, 4), np.random.rand(5, 4), np.random.rand(5)
    out = tu.check_symbolic_forward(_fc(), [x, w, b], [x.dot(w.T) + b])
    assert isinstance(out[0], mx.nd.NDArray) and out[0].shape == (3, 5)
    tu.check_symbolic_forward(_fc(), {'x': x, 'w': w, 'b': b}, {'fc_output': x.dot(w.T) + b})
    with pytest.raises(AssertionError, match='EXPECTED_fc_output'):
        tu.check_symbolic_forward(_fc(), [x, w, b], [x.dot(w.T)])
    with pytest.raises(ValueError, match='do not match'):
        tu.check_symbolic_forward(_fc(), {'x': x}, [x])
    s = mx.sym.sin(mx.sym.var('a'))
    assert np.allclose(tu.simple_forward(s, a=x), np.sin(x), atol=1e-6)


def test_check_symbolic_backward_against_numpy():
    x, w, b = np.random.rand(3, 4), np.random.rand(5, 4), np.random.rand(5)
    og = np.random.rand(3, 5)
    want = [og.dot(w), og.T.dot(x), og.sum(0)]
    grads = tu.check_symbolic_backward(_fc(), [x, w, b], [og], want)
    assert np.allclose(grads['w'].asnumpy(), want[1], atol=1e-5)
    tu.check_symbolic_backward(_fc(), [x, w, b], {'fc_output': og}, want, grad_req='add')
    tu.check_symbolic_backward(_fc(), [x, w, b], [og], want,
                               grad_req={'x': 'write', 'w': 'null', 'b': 'add'})
    with pytest.raises(AssertionError, match='BACKWARD_w'):  # a wrong expected gradient
        tu.check_symbolic_backward(_fc(), [x, w, b], [og], [want[0], 2 * want[1], want[2]])
    a = np.random.rand(2, 3)
    tu.check_symbolic_backward(mx.sym.sin(mx.sym.var('a')), [a], None, [np.cos(a)])
    tu.check_symbolic_backward(mx.sym.sin(mx.sym.var('a')), [a], None, [np.cos(a)],
                               dtype=np.float64, rtol=1e-10, atol=1e-12)


def test_grad_req_add_accumulates_onto_the_initial_buffer():
    a = np.random.rand(4)
    buf = mx.nd.array([1.0, 2.0, 3.0, 4.0])
    run = tu._symbol_runner(mx.sym.sin(mx.sym.var('a')), mx.cpu())
    run({'a': mx.nd.array(a)}, True, {'a': (buf, 'add')})
    assert np.allclose(buf.asnumpy(), [1, 2, 3, 4] + np.cos(a), atol=1e-6)
    run({'a': mx.nd.array(a)}, True, {'a': (buf, 'write')})
    assert np.allclose(buf.asnumpy(), np.cos(a), atol=1e-6)


def test_check_numeric_gradient_passes_on_correct_ops():
    np.random.seed(3)
    tu.check_numeric_gradient(mx.sym.sin(mx.sym.var('a')), [np.random.rand(3, 4)])
    tu.check_numeric_gradient(_fc(), [np.random.rand(3, 4), np.random.rand(5, 4),
                                      np.random.rand(5)], rtol=1e-2, atol=1e-2)
    tu.check_numeric_gradient(_fc(), {'x': np.random.rand(2, 4), 'w': np.random.rand(5, 4),
                                      'b': np.random.rand(5)},
                              grad_nodes={'x': 'add', 'w': 'null', 'b': 'write'},
                              rtol=1e-2, atol=1e-2)
    tu.check_numeric_gradient(mx.sym.square(mx.sym.var('a')), [np.random.rand(5)],
                              dtype=np.float64, rtol=1e-6, atol=1e-8)


def test_check_numeric_gradient_fails_on_a_wrong_gradient():
    a = mx.sym.var('a')
    wrong = a * mx.sym.BlockGrad(a)  # value a^2, declared gradient a instead of 2a
    with pytest.raises(AssertionError, match='NUMERICAL_a'):
        tu.check_numeric_gradient(wrong, [np.random.rand(3) + 0.5])


def test_numeric_grad_of_a_symbol():
    a = np.random.rand(2, 3)
    g = tu.numeric_grad(mx.sym.square(mx.sym.var('a')), {'a': a}, eps=1e-6, dtype=np.float64)
    assert np.allclose(g['a'], 2 * a, atol=1e-6)


def test_check_consistency_across_dtypes():
    ctx_list = [{'ctx': mx.cpu(0), 'x': (3, 4), 'type_dict': {'x': np.float64}},
                {'ctx': mx.cpu(0), 'x': (3, 4), 'type_dict': {'x': np.float32}}]
    sym = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=5, name='fc')
    gt = tu.check_consistency(sym, ctx_list)
    assert gt['fc_output'].dtype == np.float64 and gt['fc_weight'].shape == (5, 4)
    bad = [sym, mx.sym.FullyConnected(mx.sym.var('x') * 1.5, num_hidden=5, name='fc')]
    with pytest.raises(AssertionError):
        tu.check_consistency(bad, ctx_list)
    with pytest.raises(mx.MXNetError, match='no GPU'):
        tu.check_consistency(sym, [ctx_list[0], dict(ctx_list[1], ctx=mx.gpu(0))])


def test_extra_out_grads_are_ignored_as_mxnet_executor_does():
    a = np.random.rand(3)
    tu.check_symbolic_backward(mx.sym.sin(mx.sym.var('a')), [a], [np.ones(3), np.ones(7)],
                               [np.cos(a)])
