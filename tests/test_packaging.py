"""What the package looks like from outside: the exception classes a traceback names, run paths
of the built binaries (no directory of the build machine), the install working where
libhybridgluon cannot reach scipy_openblas32 by its relative run path (editable and in-place
builds), and the sdist carrying every source the build compiles."""
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import traceback

import pytest

import hybridgluon as mx
from hybridgluon import base
from hybridgluon.libinfo import _needs_scipy_openblas


SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.dirname(os.path.abspath(mx.__file__))
CC = shutil.which('cc') or shutil.which('gcc')
READELF = shutil.which('readelf')


# ---- exceptions ---------------------------------------------------------------------------------

def _raise_value():
    mx.nd.ones((2, 3)) + mx.nd.ones((4,))


def _raise_type():
    mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((3, 2), dtype='int32'))


def _raise_index():
    mx.nd.ones((2, 3))[5]


@pytest.mark.parametrize('call, name, builtin', [
    (_raise_value, 'MXNetValueError', ValueError),
    (_raise_type, 'MXNetTypeError', TypeError),
    (_raise_index, 'MXNetIndexError', IndexError),
])
def test_core_errors_have_public_names(call, name, builtin):
    with pytest.raises(builtin) as info:
        call()
    err = info.value
    assert isinstance(err, mx.MXNetError)
    cls = type(err)
    assert cls.__name__ == name
    assert getattr(base, name) is cls and getattr(mx, name) is cls and name in base.__all__
    last = traceback.format_exception_only(cls, err)[-1]
    assert last.startswith('hybridgluon.base.%s: ' % name), last
    try:
        call()
    except mx.MXNetError:
        pass


def test_error_raised_in_python_is_the_same_class():
    with pytest.raises(mx.MXNetTypeError, match='unsupported dtype'):
        mx.nd.ones((2,), dtype='complex64')


# ---- binaries ----------------------------------------------------------------------------------

def _run_paths(path):
    out = subprocess.run([READELF, '-d', path], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        if '(RUNPATH)' in line or '(RPATH)' in line:
            paths += line.split('[', 1)[1].rsplit(']', 1)[0].split(':')
    return paths


@pytest.mark.skipif(not READELF, reason='readelf is not installed')
def test_binaries_name_no_build_directory():
    libs = [os.path.join(mx.get_lib_dir(), 'libhybridgluon.so')] + glob.glob(
        os.path.join(PKG, '_core*.so'))
    assert len(libs) == 2, libs
    for lib in libs:
        for p in _run_paths(lib):
            assert p.startswith('$ORIGIN'), (lib, p)


@pytest.mark.skipif(not _needs_scipy_openblas(), reason='built with the system OpenBLAS')
def test_import_and_c_program_without_the_relative_run_path(tmp_path):
    """A copy of the package outside site-packages: libhybridgluon's $ORIGIN/../.. no longer
    holds scipy_openblas32 (as in an editable install). Python imports it and runs an op, and a C
    program built with `hybridgluon.config` flags runs."""
    root = tmp_path / 'elsewhere'
    shutil.copytree(PKG, str(root / 'hybridgluon'),
                    ignore=shutil.ignore_patterns('__pycache__'))
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    env['PYTHONPATH'] = str(root)
    code = ('import hybridgluon as mx; assert mx.__file__.startswith(%r), mx.__file__; '
            'print(mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((3, 2))).sum().asscalar())'
            % str(root))
    res = subprocess.run([sys.executable, '-c', code], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.split() == ['12.0'], res.stderr
    if not CC:
        return
    flags = subprocess.run([sys.executable, '-m', 'hybridgluon.config', '--cflags', '--libs'],
                           env=env, cwd=str(tmp_path), capture_output=True, text=True,
                           check=True).stdout.split()
    src = tmp_path / 'dot.c'
    src.write_text('#include <hybridgluon/hybridgluon.h>\n#include <stdio.h>\n'
                   'int main(void) { printf("%s\\n", hg_last_error()); return 0; }\n')
    exe = str(tmp_path / 'dot')
    res = subprocess.run([CC, '-std=c11', '-o', exe, str(src)] + flags, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([exe], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# ---- sdist -------------------------------------------------------------------------------------

def _tracked_files():
    if not os.path.exists(os.path.join(SRC, '.git')) or not shutil.which('git'):
        return None
    res = subprocess.run(['git', 'ls-files'], cwd=SRC, capture_output=True, text=True)
    return res.stdout.split() if res.returncode == 0 else None


def test_sdist_carries_every_compiled_source(tmp_path):
    setuptools = pytest.importorskip('setuptools')
    if int(setuptools.__version__.split('.')[0]) < 77:
        pytest.skip('pyproject.toml needs setuptools>=77 (an SPDX license string)')
    files = _tracked_files()
    if files is None:
        pytest.skip('not a git checkout')
    tree = tmp_path / 'tree'
    for f in files:
        if os.path.isfile(os.path.join(SRC, f)):
            os.makedirs(str((tree / f).parent), exist_ok=True)
            shutil.copy2(os.path.join(SRC, f), str(tree / f))
    res = subprocess.run([sys.executable, 'setup.py', '-q', 'sdist', '-d', str(tmp_path)],
                         cwd=str(tree), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (sdist,) = glob.glob(str(tmp_path / '*.tar.gz'))
    with tarfile.open(sdist) as tar:
        names = {n.split('/', 1)[1] for n in tar.getnames() if '/' in n}
    needed = [f for f in files if f.startswith('csrc/') or f.startswith('src/hybridgluon/')]
    needed += ['setup.py', 'pyproject.toml', 'README.md', 'MANIFEST.in']
    missing = [f for f in needed if f not in names]
    assert not missing, missing
    assert not [n for n in names if n.endswith(('.so', '.o'))]


@pytest.mark.parametrize('setting', [None, '3'])
def test_import_leaves_openblas_num_threads_as_it_was(setting):
    """The OpenBLAS we link is loaded with OPENBLAS_NUM_THREADS=1 (it runs single-threaded
    under our pool, and would otherwise start a polling thread per core); the caller's
    environment comes back unchanged."""
    from conftest import run_python
    env = dict(os.environ)
    env.pop('OPENBLAS_NUM_THREADS', None)
    if setting is not None:
        env['OPENBLAS_NUM_THREADS'] = setting
    res = run_python(['-c', 'import os, hybridgluon; '
                            'print(os.environ.get("OPENBLAS_NUM_THREADS"))'], env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(setting)
