"""libhybridgluon.so exports exactly csrc/exports.map (the public C API, what hybridgluon._core
needs, the test hooks) and the map is what tools/exports.py generates from the headers and the
built extension, so a new public function, a new need of the binding or a removed internal
function shows here as a stale list (fix: python tools/exports.py --write, then rebuild)."""
import ctypes
import os
import shutil
import subprocess
import sys

import pytest

import hybridgluon as mx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import exports  # noqa: E402  (tools/exports.py)

LIB = os.path.join(mx.get_lib_dir(), 'libhybridgluon.so')
pytestmark = pytest.mark.skipif(not shutil.which('nm'), reason='needs nm (binutils)')


def _committed():
    with open(exports.MAP) as f:
        return f.read()


def _core_path():
    return mx._core.__file__


def test_map_is_generated_from_headers_and_extension():
    assert _committed() == exports.generate(_core_path()), \
        'csrc/exports.map is stale: run python tools/exports.py --write, then rebuild'


def test_library_exports_exactly_the_list():
    out = subprocess.run(['nm', '-D', '--defined-only', LIB], capture_output=True, text=True,
                         check=True).stdout
    exported = {line.split()[-1].split('@')[0] for line in out.splitlines() if line.strip()}
    # Sanitizer runtimes may add their own interface symbols; none of ours may leak.
    exported = {n for n in exported if not n.startswith(('__asan', '__ubsan', '__tsan',
                                                          '__sanitizer'))}
    assert exported == exports.listed(_committed())


def test_list_holds_the_public_api_and_the_extension_needs():
    listed = exports.listed(_committed())
    api = exports.public_api()
    assert 'hg_predictor_create' in api and 'hg_ndlist_load_file' in api and \
        'hg_tensor_new' in api
    assert api <= listed
    assert exports.extension_needs(_core_path()) <= listed
    assert set(exports.TEST_HOOKS) <= listed


def test_every_listed_function_is_declared_api():
    """The library is compiled with -fvisibility=hidden: a listed name that no header declares
    HG_API would stay hidden, however the map names it."""
    assert exports.undeclared(_committed()) == []
    assert 'hg_plan_infer' in exports.declared_api()  # internal, needed by _core
    assert 'hg_memplan_run' not in exports.declared_api()  # internal, no one else's business


def test_internals_are_hidden():
    """The library's own (non-dynamic) symbol table still names its internal hg_ functions;
    the dynamic linker finds none of them."""
    out = subprocess.run(['nm', '--defined-only', LIB], capture_output=True, text=True).stdout
    internal = {line.split()[-1] for line in out.splitlines()
                if line.split()[-1:] and line.split()[-1].startswith('hg_')}
    internal -= exports.listed(_committed())
    if not internal:
        pytest.skip('the library is stripped')
    lib = ctypes.CDLL(LIB)
    assert hasattr(lib, 'hg_predictor_create')
    assert [n for n in sorted(internal) if hasattr(lib, n)] == []


def test_extension_imports_and_runs():
    code = 'import hybridgluon as mx; print(mx.nd.ones((2, 3)).sum().asscalar())'
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(
                             os.path.dirname(mx.__file__))))
    assert res.returncode == 0 and res.stdout.split() == ['6.0'], res.stderr
