"""Helpers for testing code written against MXNet 1.9.1: `mx.test_utils` with its names,
signatures and tolerance rules, on hybridgluon's own API.

Comparisons run in NumPy (this is a test helper: the values under test come from the library,
the check does not). Everything that computes on the library's arrays goes through hybridgluon:
a Symbol is evaluated by `_symbol_runner`, the one place that knows how (today a CachedOp of the
symbol's graph, recorded by autograd for gradients; later `Symbol.bind`).

`from mxnet.test_utils import *` also gives `np`, `mx` and the other module names below, as
MXNet's module does (it has no __all__; MXNet's test files rely on that).

Left out, with why: sparse storage helpers (rand_sparse_ndarray, create_sparse_array, ...; no
sparse storage), mx.np helpers (check_gluon_hybridize_consistency; `use_np` exists and raises when
the decorated code runs), dataset downloads (get_mnist, get_cifar10, download_model, ...),
DummyIter and check_speed.
"""
import errno
import logging
import numbers
import os
import platform
import sys
import time  # noqa: F401  (exported by `import *`, as MXNet's module does)
import urllib.request
from contextlib import contextmanager
import functools

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import hybridgluon as mx
from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array
from .symbol import Symbol  # noqa: F401  (exported by `import *`, as MXNet's)


# ---- contexts and dtypes --------------------------------------------------------------------
def default_context():
    """The context tests run on: the current context."""
    return current_context()


def set_default_context(ctx):
    """Makes `ctx` the current context of this thread (what default_context() returns)."""
    Context._default.value = ctx


def default_dtype():
    return np.float32


_INT_KINDS = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
              np.uint64)


def default_rtols():
    """Relative tolerance per dtype (MXNet 1.9.1's table; exact for integers and bool)."""
    tols = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    tols.update({np.dtype(t): 0 for t in _INT_KINDS})
    return tols


def default_atols():
    """Absolute tolerance per dtype (MXNet 1.9.1's table; exact for integers and bool)."""
    tols = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
    tols.update({np.dtype(t): 0 for t in _INT_KINDS})
    return tols


def default_numeric_eps():
    """Finite-difference step per dtype: powers of two, so adding one loses no bits."""
    return {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
            np.dtype(np.float64): 2.0 ** -14}


def effective_dtype(dat):
    """The dtype whose tolerances apply to `dat`. MXNet lowers float32 to float16 on GPUs
    that compute float32 in TF32; this build has no GPU, so it is dat's own dtype."""
    return np.dtype(dat.dtype) if hasattr(dat, 'dtype') else np.asarray(dat).dtype


def get_tolerance(dat, tol, default_tol):
    """`tol` itself when a number, else its entry (or default_tol's) for dat's dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = tol or {}
    return tol[dtype] if dtype in tol else default_tol[dtype]


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x and y: the given ones, or the looser default of the two."""
    x = np.array(x) if isinstance(x, numbers.Number) else x
    y = np.array(y) if isinstance(y, numbers.Number) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    return 0 if etol is None else etol


# ---- random data ----------------------------------------------------------------------------
def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays, one per shape (the array itself for one shape)."""
    out = [np.random.randn(*s).astype(default_dtype()) if len(s)
           else np.array(np.random.randn(), dtype=default_dtype()) for s in shapes]
    return out[0] if len(out) == 1 else out


def random_uniform_arrays(*shapes, **kwargs):
    """Uniform NumPy arrays in [low, high), always a list."""
    low, high = kwargs.pop('low', 0.0), kwargs.pop('high', 1.0)
    dtype = kwargs.pop('dtype', default_dtype())
    if kwargs:
        raise TypeError('Got unexpected argument/s : ' + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k elements of `population` in random order."""
    assert 0 <= k <= len(population)
    picked = population[:]
    np.random.shuffle(picked)
    return picked[:k]


def rand_ndarray(shape, stype='default', density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A standard-normal NDArray (float32 unless `dtype`). Dense storage only."""
    if stype != 'default':
        raise NotImplementedError("rand_ndarray: storage type %r is not supported: hybridgluon "
                                  "has dense storage only (stype='default')" % (stype,))
    return array(random_arrays(shape), dtype=dtype, ctx=ctx or default_context())


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A shape of num_dim dims, each in [1, dim] ([0, dim] with allow_zero_size)."""
    return tuple(rnd.randint(0 if allow_zero_size else 1, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned n x n matrix Q^-1 D Q with real eigenvalues D in [-10, 10]."""
    while True:
        v = np.random.uniform(-1., 1., (n, 1))
        v /= np.linalg.norm(v)
        q = (np.eye(n) - 2 * v @ v.T) @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape):
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


# ---- NumPy references -----------------------------------------------------------------------
def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduces `dat` over `axis` (int, list or None) one axis at a time with a NumPy reducer."""
    axes = [axis] if isinstance(axis, int) else (
        list(range(dat.ndim)) if axis is None else list(axis))
    out = dat
    for ax in sorted(axes, reverse=True):
        out = numpy_reduce_func(out, axis=ax)
    if keepdims:
        out = out.reshape(tuple(1 if i in axes else d for i, d in enumerate(dat.shape)))
    return out


def collapse_sum_like(a, shape):
    """Sums `a` over the axes that broadcasting `shape` to a.shape added or stretched."""
    assert a.ndim >= len(shape)
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d != a.shape[lead + i]:
            assert d == 1
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# ---- comparisons ----------------------------------------------------------------------------
def _numpy(x):
    return x.asnumpy() if isinstance(x, NDArray) else x


def same(a, b):
    """Whether a and b have the same shape and elements."""
    return np.array_equal(_numpy(a), _numpy(b))


def same_array(array1, array2):
    """Whether two NDArrays share memory: a write through array1 shows in array2."""
    array1[:] += 1
    seen = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return seen and same(array1.asnumpy(), array2.asnumpy())


def checkShapes(a, b):
    if a.shape != b.shape:
        raise AssertionError(npt.build_err_msg(
            [a, b], err_msg='a.shape = {} and b.shape = {} are not equal'.format(a.shape,
                                                                                  b.shape)))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """np.allclose with MXNet's float64 defaults (rtol 1e-5, atol 1e-20) when not given."""
    a, b = _numpy(a), _numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    return np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan)


def _violations(a, b, rtol, atol, equal_nan):
    """|a - b| / (atol + rtol |b|) per element: 0 where equal (same-signed infinities
    included), inf where a NaN is involved (0 for two NaNs with equal_nan)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid='ignore', over='ignore'):
        ratio = (np.where(a64 == b64, 0.0, np.abs(a64 - b64))
                 / (atol + rtol * np.abs(b64) + 1e-20))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    if equal_nan:
        ratio = np.where(np.isnan(a64) & np.isnan(b64), 0.0, ratio)
    return ratio


def locationError(a, b, index, names, maxError=False):
    return 'Location of %serror: %s, %s=%.8f, %s=%.8f' % (
        'maximum ' if maxError else '', str(index), names[0], a[index], names[1], b[index])


def _index(flat, shape):
    """A flat index as a tuple of Python ints (printed as (1, 0), as MXNet's messages)."""
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches):
    """Prints the worst elements and raises AssertionError with MXNet's message: the worst
    error, the share of mismatching elements, where the worst one is and the two values."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    ratio = _violations(a, b, rtol, atol, equal_nan)
    worst = _index(np.argmax(ratio), ratio.shape)
    if worst == ():
        msg = 'Error %f exceeds tolerance rtol=%e, atol=%e.\n' % (ratio[()], rtol, atol)
    else:
        print('\n*** Maximum errors for vector of size {}:  rtol={}, atol={}\n'.format(
            a.size, rtol, atol))
        order = np.argsort(-ratio, axis=None, kind='stable')
        count = int(np.count_nonzero(ratio > 1))
        for i, flat in enumerate(order[:min(count, mismatches[0])]):
            where = _index(flat, ratio.shape)
            print('%3d: Error %f  %s' % (i + 1, ratio[where], locationError(a, b, where, names)))
        capped = 0 < mismatches[1] < count
        shown = mismatches[1] + 1 if capped else count
        msg = 'Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s' % (
            ratio[worst], rtol, atol, 'at least ' if capped else '', 100 * shown / a.size,
            locationError(a, b, worst, names, maxError=True))
    np.set_printoptions(threshold=4, suppress=True)
    raise AssertionError(npt.build_err_msg([a, b], err_msg=msg))


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raises AssertionError unless |a - b| <= atol + rtol * |b| everywhere. a, b: NDArrays,
    NumPy arrays or scalars. rtol/atol: a number, a dict dtype -> number, or None for the
    looser of the two dtypes' defaults (float16 1e-2/1e-1, float32 1e-4/1e-3, float64
    1e-5/1e-20, exact for integers). bool arrays must be equal."""
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _numpy(a), _numpy(b)
    if getattr(a, 'dtype', None) == np.bool_ and getattr(b, 'dtype', None) == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=('a', 'b'),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like assert_almost_equal, but passes while the share of mismatching elements is at most
    `etol` (0: none may mismatch)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _numpy(a), _numpy(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol)
    if 1 - np.count_nonzero(close) / close.size > etol:
        _raise_mismatch(a, b, rtol, atol, names, equal_nan, mismatches)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=('a', 'b')):
    """assert_almost_equal where a NaN in either array makes that element pass."""
    a, b = np.copy(_numpy(a)), np.copy(_numpy(b))
    nan = np.isnan(a) | np.isnan(b)
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError('%s did not raise %s' % (getattr(f, '__name__', f),
                                                  exception_type.__name__))


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Asserts that one update of opt1 and of opt2 from the same random weight and gradient
    gives the same weights (and states). A list of shapes: opt2 updates the ntensors
    weights at once (multi-tensor), opt1 one by one. Dense storage only."""
    if w_stype != 'default' or g_stype != 'default':
        raise NotImplementedError('compare_optimizer: storage types %r/%r are not supported '
                                  '(dense storage only)' % (w_stype, g_stype))
    ctx = default_context()
    if not isinstance(shape, list):
        assert ntensors == 1
        w2 = mx.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        g2 = mx.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        w1, g1 = w2.copyto(ctx), g2.copyto(ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1, g1 = [], []
    for s in shape:
        w1.append(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype))
        g1.append(mx.random.uniform(shape=s, ctx=ctx, dtype=dtype))
    w2, g2 = tuple(w.copy() for w in w1), tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether the two graphs have the same op at every node position."""
    import json
    nodes1 = json.loads(sym1.tojson())['nodes']
    nodes2 = json.loads(sym2.tojson())['nodes']
    return all(n1['op'] == n2['op'] for n1, n2 in zip(nodes1, nodes2))


# ---- environment and process ----------------------------------------------------------------
@contextmanager
def environment(*args):
    """Sets environment variables for the body of a `with` (or a decorated function) and
    restores them after, also on an exception. environment(name, value) or environment(dict);
    a value of None unsets the variable."""
    if len(args) == 1 and isinstance(args[0], dict):
        wanted = dict(args[0])
    else:
        assert len(args) == 2, 'Expecting one dict arg or two args: env var name and value'
        wanted = {args[0]: args[1]}
    saved = {name: os.environ.get(name) for name in wanted}

    def apply(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    apply(wanted)
    try:
        yield
    finally:
        mx.nd.waitall()
        apply(saved)


@contextmanager
def discard_stderr():
    """Sends the process's stderr (file descriptor 2, where C code writes) and Python's
    sys.stderr, when it is another file, to /dev/null inside the block."""
    fds = {2}
    try:
        fds.add(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):  # sys.stderr is not a file
        pass
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in fds}
    with open(os.devnull, 'w') as devnull:
        for fd in fds:
            os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)


def retry(n):
    """Decorator: runs a stochastic test up to n times, failing only when the last run fails."""
    assert n > 0

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def use_np(func):
    """MXNet's NumPy-semantics switch. hybridgluon has no `mx.np`: the decorated function (or
    class) raises NotImplementedError when used, so the rest of a test module still imports."""
    def refuse(*args, **kwargs):
        raise NotImplementedError('%s needs mx.np (NumPy semantics, @use_np), which hybridgluon '
                                  'does not provide' % getattr(func, '__name__', func))
    if isinstance(func, type):
        func.__init__ = refuse
        return func
    return functools.wraps(func)(refuse)


def is_cd_run():
    return os.environ.get('CD_JOB', 0) == '1'


def is_aarch64_run():
    return platform.machine() == 'aarch64'


def has_tvm_ops():
    """TVM-generated operators: never in hybridgluon."""
    return False


def is_op_runnable():
    """Whether the ops of a test can run on the default context: always on the CPU; this
    build has no GPU and TVM ops to restrict."""
    return default_context().device_type != 'gpu' or num_gpus() > 0


def list_gpus():
    return range(num_gpus())


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Downloads `url` to `fname` (default: the URL's last part) under `dirname`, skipping an
    existing file unless `overwrite`; tries `retries` more times on failure. Returns the path."""
    assert retries >= 0, 'Number of retries should be at least 0'
    if fname is None:
        fname = url.split('/')[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        try:
            os.makedirs(dirname)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise OSError('failed to create ' + dirname)
    if not overwrite and os.path.exists(fname):
        logging.info('%s exists, skipping download', fname)
        return fname
    while True:
        try:
            with urllib.request.urlopen(url) as response:
                status = getattr(response, 'status', None)
                assert status in (None, 200), 'failed to open %s' % url
                with open(fname, 'wb') as f:
                    while True:
                        chunk = response.read(1 << 16)
                        if not chunk:
                            break
                        f.write(chunk)
            break
        except Exception:  # any failure counts as one attempt, as MXNet's does
            retries -= 1
            if retries <= 0:
                raise
            print('download failed, retrying, {} attempt{} left'.format(
                retries, 's' if retries > 1 else ''))
    logging.info('downloaded %s into %s successfully', url, fname)
    return fname


class DummyIter(mx.io.DataIter):
    """An iterator that returns the first batch of `real_iter` forever (for timing)."""

    def __init__(self, real_iter):
        super(DummyIter, self).__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch again; never raises StopIteration."""
        return self.the_batch


# ---- random generator checks ----------------------------------------------------------------
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """nbuckets equal-probability buckets (lo, hi) of a distribution given its quantile function."""
    assert nbuckets > 0
    return ([(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)],
            [1.0 / nbuckets] * nbuckets)


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean of generator(nsamples) lies within mu +- 3 sigma / sqrt(n)."""
    mean = np.array(generator(nsamples)).mean()
    return mu - 3 * sigma / np.sqrt(nsamples) < mean < mu + 3 * sigma / np.sqrt(nsamples)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies within sigma^2 +- 3 sqrt(2 sigma^4 / (n - 1))."""
    var = np.array(generator(nsamples)).var(ddof=1)
    band = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return sigma ** 2 - band < var < sigma ** 2 + band


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of generator(nsamples) against bucket probabilities. Buckets are
    (lo, hi) ranges (continuous) or values (discrete). Returns (p, observed, expected)."""
    try:
        import scipy.stats as ss  # on use: it would add half a second to `import hybridgluon`
    except ImportError:
        raise ImportError('scipy is not available. Please check if the scipy python bindings '
                          'are installed.') from None
    assert isinstance(buckets, list) and len(probs) == len(buckets)
    samples = np.asarray(generator(nsamples))
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.array(buckets, dtype=np.float32).ravel()
        assert np.all(np.diff(edges) >= 0), 'buckets must be ascending and disjoint'
        ids = np.searchsorted(edges, samples, side='right') // 2
        for i in range(len(buckets)):
            observed[i] = np.count_nonzero(ids == i)
    else:
        for i, value in enumerate(buckets):
            observed[i] = np.count_nonzero(samples == value)
    _, p = ss.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Repeats chi_square_check nrepeat times; raises AssertionError unless at least
    success_rate of the runs have p > alpha. Returns the p values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvals = [r[0] for r in runs]
    if (np.array(pvals) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError('Generator test fails, Chi-square p=%s, obs_freq=%s, '
                             'expected_freq=%s.\nbuckets=%s, probs=%s'
                             % (pvals, [r[1] for r in runs], [r[2] for r in runs], buckets, probs))
    return pvals


from ._test_utils_symbol import (  # noqa: E402,F401  (the Symbol checks, split for size)
    simple_forward, numeric_grad, check_numeric_gradient, check_symbolic_forward,
    check_symbolic_backward, check_consistency, _symbol_runner)


def __getattr__(name):
    # MXNet's module has scipy.stats as `ss`; imported when first asked for (PEP 562).
    if name == 'ss':
        import scipy.stats
        return scipy.stats
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
