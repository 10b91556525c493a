"""Deployment without Python: the predictor C API (hybridgluon/predict.h), the C and C++ examples
built with the system compiler against `python -m hybridgluon.config`, bad input to every entry
point (from C and through ctypes), valgrind, concurrent clones, and the fuzz harness's seeds."""
import ctypes
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.demo import Net
from hybridgluon.gluon import nn

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
CC = shutil.which('cc') or shutil.which('gcc')
CXX = shutil.which('c++') or shutil.which('g++')
MAKE = shutil.which('make')
VALGRIND = shutil.which('valgrind')
TOL = 1e-6

needs_cc = pytest.mark.skipif(not (CC and MAKE), reason='needs a C compiler and make')
needs_valgrind = pytest.mark.skipif(not VALGRIND, reason='valgrind is not installed')


def _env(**extra):
    """The environment for child processes: this hybridgluon importable, and no
    LD_LIBRARY_PATH, so programs must find libhybridgluon (and it OpenBLAS) by rpath."""
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    env['PYTHONPATH'] = PKG_ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env.update(extra)
    return env


@pytest.fixture(autouse=True, scope='module')
def _outside_checkout(tmp_path_factory):
    """Child Pythons must import the installed package, not the unbuilt source tree that a
    `-m`/`-c` child finds first in its working directory (as in CI's fresh clone)."""
    old = os.getcwd()
    os.chdir(str(tmp_path_factory.mktemp('cwd')))
    yield
    os.chdir(old)


def _config(*opts):
    out = subprocess.run([sys.executable, '-m', 'hybridgluon.config'] + list(opts),
                         env=_env(), capture_output=True, text=True, check=True)
    return out.stdout.split()


# ---- fixtures ---------------------------------------------------------------------------------

class _Model:
    pass


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    """The seeds' LeNet and a tiny MLP, exported; images and Python's outputs for them."""
    d = tmp_path_factory.mktemp('predict')
    m = _Model()
    m.dir = str(d)
    mx.random.seed(42)
    net = Net()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    m.net = net
    rs = np.random.RandomState(0)
    m.images = rs.uniform(-1, 1, size=(3, 1, 28, 28)).astype(np.float32)
    m.expect = net(mx.nd.array(m.images)).asnumpy()
    m.expect1 = np.concatenate([net(mx.nd.array(m.images[i:i + 1])).asnumpy()
                                for i in range(3)])
    net.export(os.path.join(m.dir, 'lenet'))
    m.lenet_sym = os.path.join(m.dir, 'lenet-symbol.json')
    m.lenet_params = os.path.join(m.dir, 'lenet-0000.params')
    m.images_bin = os.path.join(m.dir, 'images.bin')
    m.images.tofile(m.images_bin)
    m.two_bin = os.path.join(m.dir, 'two.bin')
    m.images[:2].tofile(m.two_bin)
    m.lenet = net

    tiny = nn.HybridSequential()
    with tiny.name_scope():
        tiny.add(nn.Dense(8, activation='relu'), nn.Dense(3))
    tiny.initialize()
    tiny.hybridize()
    tiny(mx.nd.ones((2, 5)))
    tiny.export(os.path.join(m.dir, 'tiny'))
    m.tiny = tiny
    m.tiny_sym = os.path.join(m.dir, 'tiny-symbol.json')
    m.tiny_params = os.path.join(m.dir, 'tiny-0000.params')
    return m


def _build(example, out_dir):
    """Copies examples/<example> to out_dir and runs its Makefile; returns the program."""
    dst = os.path.join(out_dir, example)
    shutil.copytree(os.path.join(SRC, 'examples', example), dst)
    res = subprocess.run([MAKE, 'PYTHON=' + sys.executable], cwd=dst, env=_env(),
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return os.path.join(dst, 'predict')


@pytest.fixture(scope='module')
def c_example(models):
    return _build('c_predict', models.dir)


@pytest.fixture(scope='module')
def api_test(models):
    """tests/c/predict_api_test.c, built with the config command's flags."""
    exe = os.path.join(models.dir, 'predict_api_test')
    cmd = ([CC, '-std=c11', '-O1', '-g', '-Wall', '-Wextra', '-Werror', '-o', exe,
            os.path.join(SRC, 'tests', 'c', 'predict_api_test.c')] +
           _config('--cflags', '--libs') + ['-lpthread', '-lm'])
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return exe


def _scores(stdout):
    rows = [l.split(':', 1)[1].split()[1:] for l in stdout.splitlines() if 'scores' in l]
    return np.array(rows, dtype=np.float64)


def _tops(stdout):
    return [int(l.split('top class')[1].split()[0]) for l in stdout.splitlines()
            if 'top class' in l]


# ---- config and examples ------------------------------------------------------------------------

def test_config_prints_build_flags():
    inc, libdir = _config('--includedir', '--libdir')
    for h in ('hybridgluon.h', 'ndlist.h', 'predict.h', 'hybridgluon.hpp'):
        assert os.path.exists(os.path.join(inc, 'hybridgluon', h)), h
    assert os.path.exists(os.path.join(libdir, 'libhybridgluon.so'))
    assert _config('--cflags') == ['-I' + inc]
    libs = _config('--libs')
    assert '-L' + libdir in libs and '-lhybridgluon' in libs and '-Wl,-rpath,' + libdir in libs
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.config', '--bogus'], env=_env(),
                         capture_output=True, text=True)
    assert res.returncode != 0 and 'unknown option' in res.stderr


def test_library_exports_the_public_api():
    out = subprocess.run(['nm', '-D', '--defined-only',
                          os.path.join(mx.get_lib_dir(), 'libhybridgluon.so')],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip('nm is not available')
    names = set(l.split()[-1] for l in out.stdout.splitlines() if l.strip())
    for fn in ('hg_predictor_create', 'hg_predictor_create_from_files', 'hg_predictor_clone',
               'hg_predictor_free', 'hg_predictor_set_input', 'hg_predictor_forward',
               'hg_predictor_get_output', 'hg_predictor_reshape', 'hg_predictor_output_shape',
               'hg_last_error', 'hg_tensor_new', 'hg_op_invoke_str', 'hg_ndlist_load_file',
               'hg_ndlist_save_file'):
        assert fn in names, fn


@needs_cc
def test_c_example_matches_python(models, c_example):
    res = subprocess.run([c_example, models.lenet_sym, models.lenet_params, models.images_bin],
                         capture_output=True, text=True, env=_env())
    assert res.returncode == 0, res.stderr
    got = _scores(res.stdout)
    assert got.shape == (3, 10)
    np.testing.assert_allclose(got, models.expect, rtol=0, atol=TOL)
    assert _tops(res.stdout) == list(models.expect.argmax(axis=1))


@needs_cc
@pytest.mark.skipif(not CXX, reason='needs a C++ compiler')
def test_cpp_example_matches_python(models):
    exe = _build('cpp_predict', models.dir)
    res = subprocess.run([exe, models.lenet_sym, models.lenet_params, models.images_bin],
                         capture_output=True, text=True, env=_env())
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(_scores(res.stdout), models.expect, rtol=0, atol=TOL)
    assert _tops(res.stdout) == list(models.expect.argmax(axis=1))
    # errors arrive as hybridgluon::Error with the C API's message
    res = subprocess.run([exe, models.lenet_sym, models.lenet_sym, models.images_bin],
                         capture_output=True, text=True)
    assert res.returncode == 1 and 'error (status 5)' in res.stderr
    assert 'NDArray file' in res.stderr


@needs_cc
@pytest.mark.skipif(not CXX, reason='needs a C++ compiler')
def test_cpp_wrappers(models):
    """hybridgluon.hpp: Tensor, invoke, NDList, Predictor (from memory and files, clone,
    reshape, move) and hybridgluon::Error carrying the C API's messages."""
    exe = os.path.join(models.dir, 'hpp_test')
    res = subprocess.run([CXX, '-std=c++11', '-O1', '-g', '-Wall', '-Wextra', '-Werror', '-o',
                          exe, os.path.join(SRC, 'tests', 'c', 'hpp_test.cpp')] +
                         _config('--cflags', '--libs'), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([exe, models.tiny_sym, models.tiny_params, models.dir],
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == 'ok', res.stdout + res.stderr


@needs_cc
def test_c_example_reports_errors(models, c_example):
    bad = os.path.join(models.dir, 'bad.bin')
    with open(bad, 'wb') as f:
        f.write(b'\0' * 100)
    cases = [([models.lenet_sym, models.lenet_params, bad], 'not a whole number'),
             (['/nonexistent.json', models.lenet_params, models.images_bin], 'nonexistent'),
             ([models.lenet_params, models.lenet_params, models.images_bin], 'JSON'),
             ([models.tiny_sym, models.tiny_params, models.images_bin], 'shape')]
    for args, text in cases:
        res = subprocess.run([c_example] + args, capture_output=True, text=True)
        assert res.returncode == 1, args
        assert text in res.stderr, (args, res.stderr)


def _valgrind(args, env, kinds):
    res = subprocess.run([VALGRIND, '-q', '--leak-check=full', '--error-exitcode=99',
                          '--errors-for-leak-kinds=' + kinds] + args,
                         capture_output=True, text=True, env=_env(**env))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-6000:]
    return res


@needs_cc
@needs_valgrind
def test_c_example_under_valgrind(models, c_example):
    args = [c_example, models.lenet_sym, models.lenet_params, models.images_bin]
    # One thread: no error and no leak of any kind (definite, indirect, possible).
    res = _valgrind(args, {'HG_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1'},
                    'definite,indirect,possible')
    np.testing.assert_allclose(_scores(res.stdout), models.expect, rtol=0, atol=1e-5)
    # The default thread pool: its workers live as long as the process (their stacks read as
    # "possibly lost"), so here only definite and indirect leaks count.
    _valgrind(args, {}, 'definite,indirect')


# ---- bad input, from C ---------------------------------------------------------------------------

@needs_cc
def test_c_api_bad_input_never_crashes(models, api_test):
    """Every entry point with NULLs, wrong names/shapes/sizes/dtypes; the lower-level API; the
    model truncated at every length and corrupted at every byte (8 values each)."""
    res = subprocess.run([api_test, 'errors', models.tiny_sym, models.tiny_params, '1'],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    checked = int(res.stdout.split('checked')[1].split(',')[0])
    assert checked > 20000 and 'failed 0' in res.stdout


@needs_cc
@needs_valgrind
def test_c_api_bad_input_under_valgrind(models, api_test):
    res = _valgrind([api_test, 'errors', models.tiny_sym, models.tiny_params, '11'],
                    {'HG_NUM_THREADS': '1', 'OPENBLAS_NUM_THREADS': '1'},
                    'definite,indirect,possible')
    assert 'failed 0' in res.stdout


@needs_cc
def test_two_threads_with_clones_from_c(models, api_test):
    res = subprocess.run([api_test, 'threads', models.lenet_sym, models.lenet_params,
                          models.two_bin, '200'], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count('mismatches 0 of 200') == 2
    np.testing.assert_allclose(_scores(res.stdout), models.expect1[:2], rtol=0, atol=TOL)


# ---- the same through ctypes --------------------------------------------------------------------

class Spec(ctypes.Structure):
    _fields_ = [('name', ctypes.c_char_p), ('ndim', ctypes.c_int),
                ('shape', ctypes.POINTER(ctypes.c_int64)), ('dtype', ctypes.c_int)]


def _spec(name, shape, dtype=0):
    arr = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    s = Spec(name.encode() if isinstance(name, str) else name, len(shape), arr, dtype)
    s._keep = arr
    return s


@pytest.fixture(scope='module')
def lib():
    L = ctypes.CDLL(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'))
    P, vp, sz, i64p = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(
        ctypes.c_int64)
    ip = ctypes.POINTER(ctypes.c_int)
    sigs = {
        'hg_predictor_create': [ctypes.c_char_p, sz, vp, sz, ctypes.c_int, ctypes.c_int,
                                ctypes.c_int, ctypes.POINTER(Spec), ctypes.POINTER(P)],
        'hg_predictor_create_from_files': [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.c_int, ctypes.c_int, ctypes.POINTER(Spec),
                                           ctypes.POINTER(P)],
        'hg_predictor_clone': [P, ctypes.POINTER(P)],
        'hg_predictor_set_input': [P, ctypes.c_char_p, vp, sz],
        'hg_predictor_forward': [P],
        'hg_predictor_get_output': [P, ctypes.c_int, vp, sz],
        'hg_predictor_num_outputs': [P, ip],
        'hg_predictor_num_inputs': [P, ip],
        'hg_predictor_output_shape': [P, ctypes.c_int, i64p, ctypes.c_int, ip],
        'hg_predictor_input_shape': [P, ctypes.c_int, i64p, ctypes.c_int, ip],
        'hg_predictor_output_nbytes': [P, ctypes.c_int, ctypes.POINTER(sz)],
        'hg_predictor_output_dtype': [P, ctypes.c_int, ip],
        'hg_predictor_input_dtype': [P, ctypes.c_int, ip],
        'hg_predictor_input_name': [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        'hg_predictor_reshape': [P, ctypes.c_int, ctypes.POINTER(Spec)],
    }
    for name, args in sigs.items():
        fn = getattr(L, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    L.hg_predictor_free.argtypes = [P]
    L.hg_predictor_free.restype = None
    L.hg_last_error.restype = ctypes.c_char_p
    return L


def _read(path):
    with open(path, 'rb') as f:
        return f.read()


class _Pred:
    """A predictor made through ctypes, freed at the end of the with-block."""

    def __init__(self, lib, json, params, specs, dev=1):
        self.lib, self.p = lib, ctypes.c_void_p()
        arr = (Spec * max(1, len(specs)))(*specs)
        st = lib.hg_predictor_create(json, len(json), params, len(params) if params else 0,
                                     dev, 0, len(specs), arr, ctypes.byref(self.p))
        if st:
            raise mx.MXNetError(lib.hg_last_error().decode())

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.lib.hg_predictor_free(self.p)

    def run(self, x, name=b'data'):
        x = np.ascontiguousarray(x, dtype=np.float32)
        L = self.lib
        assert L.hg_predictor_set_input(self.p, name, x.ctypes.data, x.nbytes) == 0
        assert L.hg_predictor_forward(self.p) == 0, L.hg_last_error()
        shape = (ctypes.c_int64 * 10)()
        nd = ctypes.c_int()
        assert L.hg_predictor_output_shape(self.p, 0, shape, 10, ctypes.byref(nd)) == 0
        y = np.empty(tuple(shape[:nd.value]), dtype=np.float32)
        assert L.hg_predictor_get_output(self.p, 0, y.ctypes.data, y.nbytes) == 0
        return y


def _fails(lib, status, *needles):
    """The call returned non-zero and hg_last_error() holds every needle."""
    msg = lib.hg_last_error().decode()
    assert status != 0, 'expected a failure'
    assert msg, 'no message'
    for n in needles:
        assert n in msg, (n, msg)
    return msg


def test_ctypes_predict_matches_python(models, lib):
    json, params = _read(models.lenet_sym), _read(models.lenet_params)
    with _Pred(lib, json, params, [_spec('data', (3, 1, 28, 28))]) as p:
        np.testing.assert_allclose(p.run(models.images), models.expect, rtol=0, atol=TOL)
        # reshape to batch 1 and back: same numbers; a clone agrees
        assert lib.hg_predictor_reshape(p.p, 1, _spec('data', (1, 1, 28, 28))) == 0
        np.testing.assert_allclose(p.run(models.images[1:2]), models.expect1[1:2], rtol=0,
                                   atol=TOL)
        q = ctypes.c_void_p()
        assert lib.hg_predictor_clone(p.p, ctypes.byref(q)) == 0
        clone = _Pred.__new__(_Pred)
        clone.lib, clone.p = lib, q
        with clone:
            np.testing.assert_allclose(clone.run(models.images[2:3]), models.expect1[2:3],
                                       rtol=0, atol=TOL)
        n = ctypes.c_int()
        assert lib.hg_predictor_num_inputs(p.p, ctypes.byref(n)) == 0 and n.value == 1
        name = ctypes.c_char_p()
        assert lib.hg_predictor_input_name(p.p, 0, ctypes.byref(name)) == 0
        assert name.value == b'data'


def test_ctypes_reshape_up_and_down(models, lib):
    """The predictor's plan is static (static_alloc + static_shape) and still re-plans for every
    new input shape: a batch larger than the first (the arena then grows), smaller, and back."""
    json, params = _read(models.lenet_sym), _read(models.lenet_params)
    big = np.concatenate([models.images] * 3)
    want = np.concatenate([models.expect] * 3)
    with _Pred(lib, json, params, [_spec('data', (1, 1, 28, 28))]) as p:
        for n in (1, 9, 2, 9, 3):
            assert lib.hg_predictor_reshape(p.p, 1, _spec('data', (n, 1, 28, 28))) == 0
            np.testing.assert_allclose(p.run(big[:n]), want[:n], rtol=0, atol=TOL)


def test_ctypes_create_from_files(models, lib):
    p = ctypes.c_void_p()
    spec = _spec('data', (2, 5))
    assert lib.hg_predictor_create_from_files(models.tiny_sym.encode(),
                                              models.tiny_params.encode(), 1, 0, 1, spec,
                                              ctypes.byref(p)) == 0
    wrapper = _Pred.__new__(_Pred)
    wrapper.lib, wrapper.p = lib, p
    x = np.random.RandomState(1).randn(2, 5).astype(np.float32)
    with wrapper:
        np.testing.assert_allclose(wrapper.run(x), models.tiny(mx.nd.array(x)).asnumpy(),
                                   rtol=0, atol=TOL)


def _damaged(models):
    json, params = _read(models.tiny_sym), _read(models.tiny_params)
    unknown = json.replace(b'"Activation"', b'"NoSuchOp"')
    corrupt_json = json.replace(b'"inputs": []', b'"inputs": [}', 1)
    assert corrupt_json != json
    corrupt_params = bytearray(params)
    corrupt_params[16:24] = b'\xff' * 8  # the array count (after the magic and a reserved word)
    return json, params, [
        ('truncated JSON', json[:len(json) // 2], params, ['JSON']),
        ('corrupted JSON', corrupt_json, params, ['JSON']),
        ('empty JSON', b'', params, ['JSON']),
        ('truncated params', json, params[:len(params) // 2], ['params', 'NDArray']),
        ('corrupted params', json, bytes(corrupt_params), ['params']),
        ('JSON as params', json, json, ['params']),
        ('unknown op', unknown, params, ['NoSuchOp', 'not registered']),
        ('missing parameter', json, None, ['dense0_weight', 'neither']),
    ]


def test_ctypes_bad_models(models, lib):
    json, params, cases = _damaged(models)
    for label, j, p, needles in cases:
        out = ctypes.c_void_p(123)
        st = lib.hg_predictor_create(j, len(j), p, len(p) if p else 0, 1, 0, 1,
                                     _spec('data', (2, 5)), ctypes.byref(out))
        assert st != 0, label
        _fails(lib, st, *needles)
        assert out.value is None, label


def test_ctypes_bad_arguments(models, lib):
    json, params = _read(models.tiny_sym), _read(models.tiny_params)
    out = ctypes.c_void_p()
    good = _spec('data', (2, 5))

    def create(j=json, plen=None, dev=1, dev_id=0, n=1, spec=good, outp=ctypes.byref(out),
               p=params):
        return lib.hg_predictor_create(j, len(j) if j else 10, p,
                                       len(p) if plen is None else plen, dev, dev_id, n,
                                       spec, outp)
    _fails(lib, create(j=None), 'json is NULL')
    _fails(lib, create(outp=None), 'out is NULL')
    _fails(lib, create(spec=None), 'NULL')
    _fails(lib, create(n=-1), 'inputs')
    _fails(lib, create(dev=2, dev_id=99), 'GPU 99')
    _fails(lib, create(dev=9), 'device')
    _fails(lib, create(p=None, plen=10), 'params is NULL')
    _fails(lib, create(spec=_spec('dat', (2, 5))), "'dat'", 'not a variable')
    _fails(lib, create(spec=_spec('data', (2, 4))), 'dense0', '[2,4]')
    _fails(lib, create(spec=_spec('data', (2, 0))), 'dimension')
    _fails(lib, create(spec=_spec('data', (2, -5))), 'dimension')
    _fails(lib, create(spec=_spec('data', (2, 5), dtype=99)), 'dtype')
    _fails(lib, create(spec=_spec('data', (2, 5), dtype=1)), 'float64')
    _fails(lib, create(spec=_spec(None, (2, 5))), 'NULL name')
    two = (Spec * 2)(_spec('data', (2, 5)), _spec('data', (2, 5)))
    _fails(lib, create(spec=two, n=2), 'twice')
    with _Pred(lib, json, params, [good]) as p:
        x = np.zeros((2, 5), np.float32)
        y = np.zeros((2, 3), np.float32)
        L = lib
        _fails(L, L.hg_predictor_set_input(None, b'data', x.ctypes.data, x.nbytes), 'NULL')
        _fails(L, L.hg_predictor_set_input(p.p, None, x.ctypes.data, x.nbytes), 'NULL')
        _fails(L, L.hg_predictor_set_input(p.p, b'data', None, x.nbytes), 'NULL')
        _fails(L, L.hg_predictor_set_input(p.p, b'date', x.ctypes.data, x.nbytes), "'date'",
               "'data'")
        _fails(L, L.hg_predictor_set_input(p.p, b'data', x.ctypes.data, x.nbytes - 4), '40',
               '36')
        _fails(L, L.hg_predictor_forward(None), 'NULL')
        _fails(L, L.hg_predictor_get_output(p.p, 0, y.ctypes.data, y.nbytes + 4), '24')
        _fails(L, L.hg_predictor_get_output(p.p, 1, y.ctypes.data, y.nbytes), 'out of range')
        _fails(L, L.hg_predictor_get_output(p.p, 0, None, y.nbytes), 'NULL')
        shape, nd = (ctypes.c_int64 * 10)(), ctypes.c_int()
        _fails(L, L.hg_predictor_output_shape(p.p, 0, shape, 1, ctypes.byref(nd)), 'room')
        assert nd.value == 2
        _fails(L, L.hg_predictor_output_shape(p.p, 0, shape, 10, None), 'NULL')
        _fails(L, L.hg_predictor_output_shape(p.p, -1, shape, 10, ctypes.byref(nd)), 'range')
        _fails(L, L.hg_predictor_num_outputs(p.p, None), 'NULL')
        _fails(L, L.hg_predictor_clone(p.p, None), 'NULL')
        _fails(L, L.hg_predictor_clone(None, ctypes.byref(out)), 'NULL')
        _fails(L, L.hg_predictor_reshape(p.p, 1, _spec('data', (3, 4))), '[3,4]')
        _fails(L, L.hg_predictor_reshape(p.p, 1, _spec('nope', (3, 5))), "'nope'")
        _fails(L, L.hg_predictor_reshape(p.p, 1, None), 'NULL')
        # still works after every failure, with its old shapes
        x = np.random.RandomState(2).randn(2, 5).astype(np.float32)
        np.testing.assert_allclose(p.run(x), models.tiny(mx.nd.array(x)).asnumpy(), rtol=0,
                                   atol=TOL)
    lib.hg_predictor_free(None)


@pytest.mark.parametrize('call', [
    'L.hg_tensor_new(2, None, 0, ctypes.byref(t))',
    'L.hg_tensor_new(2, shape, 0, None)',
    'L.hg_dtype_from_name(None, ctypes.byref(ctypes.c_int()))',
    'L.hg_tensor_new(2, neg, 0, ctypes.byref(t))',
    'L.hg_tensor_from_data(None, 2, shape, 0, None, None, ctypes.byref(t))',
    'L.hg_tensor_copy_from(None, None, 4)',
    'L.hg_op_invoke_str(b"no_such_op", 0, None, 0, None, None, ctypes.byref(ctypes.c_int(1)), '
    'None)',
    'L.hg_op_invoke_str(None, 0, None, 0, None, None, ctypes.byref(ctypes.c_int(1)), None)',
    'L.hg_ndlist_load_bytes(None, 10, ctypes.byref(t))',
    'L.hg_ndlist_load_bytes(b"garbage!", 8, ctypes.byref(t))',
    'L.hg_ndlist_load_file(None, ctypes.byref(t))',
    'L.hg_ndlist_save_file(None, 0, None, None)',
    'L.hg_ndlist_save_bytes(1, None, None, ctypes.byref(t), ctypes.byref(ctypes.c_size_t()))',
])
def test_lower_level_api_bad_arguments(call):
    """The lower-level public API with NULLs and bad values: a status and a message. Run in a
    child process so a crash fails this case only."""
    code = ('import ctypes, hybridgluon as mx, os\n'
            'L = ctypes.CDLL(os.path.join(mx.get_lib_dir(), "libhybridgluon.so"))\n'
            'L.hg_last_error.restype = ctypes.c_char_p\n'
            't = ctypes.c_void_p()\n'
            'shape = (ctypes.c_int64 * 2)(2, 3)\n'
            'neg = (ctypes.c_int64 * 2)(2, -3)\n'
            'st = %s\n'
            'print(st, L.hg_last_error().decode())\n' % call)
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         env=_env())
    assert res.returncode == 0, 'crashed: %d %s' % (res.returncode, res.stderr[-500:])
    st, msg = res.stdout.split(' ', 1)
    assert int(st) != 0 and msg.strip(), res.stdout


def test_ctypes_two_threads_with_clones(models, lib):
    """ctypes drops the GIL around each call, so the two threads' forwards overlap."""
    json, params = _read(models.lenet_sym), _read(models.lenet_params)
    base = _Pred(lib, json, params, [_spec('data', (1, 1, 28, 28))])
    clones = []
    for _ in range(2):
        q = _Pred.__new__(_Pred)
        q.lib, q.p = lib, ctypes.c_void_p()
        assert lib.hg_predictor_clone(base.p, ctypes.byref(q.p)) == 0
        clones.append(q)
    base.__exit__()  # the clones keep the weights alive
    errors = []

    def work(k):
        try:
            for _ in range(50):
                np.testing.assert_allclose(clones[k].run(models.images[k:k + 1]),
                                           models.expect1[k:k + 1], rtol=0, atol=TOL)
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for q in clones:
        q.__exit__()
    assert not errors, errors[0]


# ---- the fuzz harness ---------------------------------------------------------------------------

@needs_cc
def test_fuzz_harness_runs_its_seeds(models):
    """fuzz/predict_fuzz.c built as a plain program (no libFuzzer) loads and runs every seed."""
    exe = os.path.join(models.dir, 'predict_fuzz_standalone')
    res = subprocess.run([CC, '-std=c11', '-O1', '-g', '-Wall', '-Wextra', '-Werror',
                          '-DHG_FUZZ_STANDALONE', '-o', exe,
                          os.path.join(SRC, 'fuzz', 'predict_fuzz.c')] +
                         _config('--cflags', '--libs'), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    corpus = os.path.join(SRC, 'fuzz', 'corpus')
    seeds = sorted(os.path.join(corpus, f) for f in os.listdir(corpus))
    assert len(seeds) >= 5
    res = subprocess.run([exe] + seeds, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count('create: ok') == len(seeds), res.stdout


@pytest.mark.gpu
@pytest.mark.skipif(mx.context.num_gpus() == 0, reason='no GPU in this process')
def test_predictor_on_gpu(models, lib):
    """HG_DEVICE_GPU: weights, inputs and outputs in device memory, the graph replayed on the
    GPU; the numbers are the CPU's (Python's outputs) within float32 rounding."""
    json, params = _read(models.lenet_sym), _read(models.lenet_params)
    with _Pred(lib, json, params, [_spec('data', (3, 1, 28, 28))], dev=2) as p:
        for _ in range(3):  # warm-up, recording, replay
            np.testing.assert_allclose(p.run(models.images), models.expect, rtol=1e-5,
                                       atol=1e-5)
        noise = np.random.RandomState(5).randn(3, 1, 28, 28).astype(np.float32)
        np.testing.assert_allclose(p.run(noise), models.net(mx.nd.array(noise)).asnumpy(),
                                   rtol=1e-5, atol=1e-5)
        assert lib.hg_predictor_reshape(p.p, 1, _spec('data', (1, 1, 28, 28))) == 0
        for i in range(3):
            np.testing.assert_allclose(p.run(models.images[i:i + 1]), models.expect1[i:i + 1],
                                       rtol=1e-5, atol=1e-5)
        q = ctypes.c_void_p()
        assert lib.hg_predictor_clone(p.p, ctypes.byref(q)) == 0, lib.hg_last_error()
        clone = _Pred.__new__(_Pred)
        clone.lib, clone.p = lib, q
        with clone:
            np.testing.assert_allclose(clone.run(models.images[:1]), models.expect1[:1],
                                       rtol=1e-5, atol=1e-5)
