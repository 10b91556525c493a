"""The first backward of a deep graph costs work linear in its depth (issue #12, B7: the
analysis of a hybridized graph and the variant it records were quadratic, 3.8x per doubling).

The work is counted, not timed: tests/c/graph_scale.c takes the gradient of a chain of n
element-wise ops, hybridized or op by op, under callgrind, which counts the instructions
executed. The count for 4n minus the count for a tiny chain (start-up) must be about four
times that for n; a quadratic pass makes it sixteen."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hybridgluon as mx

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CC = shutil.which('cc') or shutil.which('gcc')
VALGRIND = shutil.which('valgrind')



def _sanitized():
    """Whether libhybridgluon was built with a sanitizer (valgrind cannot run it)."""
    with open(os.path.join(mx.get_lib_dir(), 'libhybridgluon.so'), 'rb') as f:
        lib = f.read()
    return b'__asan_init' in lib or b'__tsan_init' in lib


pytestmark = [pytest.mark.skipif(not (CC and VALGRIND), reason='needs a C compiler and valgrind'),
              pytest.mark.skipif(_sanitized(),
                                 reason='a sanitizer build cannot run under valgrind')]


@pytest.fixture(scope='module')
def program(tmp_path_factory):
    exe = str(tmp_path_factory.mktemp('scale') / 'graph_scale')
    cflags = subprocess.run([sys.executable, '-m', 'hybridgluon.config', '--cflags', '--libs'],
                            capture_output=True, text=True, check=True).stdout.split()
    cmd = [CC, '-std=c11', '-D_GNU_SOURCE', '-O1', '-Wall', '-Wextra', '-Werror',
           '-I' + os.path.join(SRC, 'csrc'), '-o', exe,
           os.path.join(SRC, 'tests', 'c', 'graph_scale.c')] + cflags + ['-lpthread', '-lm']
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return exe


def _env():
    env = dict(os.environ, HG_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1')
    env.pop('LD_PRELOAD', None)  # a sanitizer runtime cannot run under valgrind
    return env


def _run(program, mode, n):
    """(instructions executed, the program's output)."""
    res = subprocess.run([VALGRIND, '--tool=callgrind', '--callgrind-out-file=/dev/null',
                          program, mode, str(n)], capture_output=True, text=True, env=_env(),
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'Collected\s*:\s*(\d+)', res.stderr)
    assert m, res.stderr[-2000:]
    return int(m.group(1)), float(res.stdout)


def _gradient(n):
    """d/dx of the chain at x = 1, in float64 (the program works in float32)."""
    x, d = 1.0, 1.0
    for i in range(n):
        if i % 2:
            x, d = np.sin(x), d * np.cos(x)
        else:
            x, d = x * 1.0001, d * 1.0001
    return d


@pytest.mark.parametrize('mode,n', [('hybrid', 1500), ('imperative', 1500)])
def test_backward_work_is_linear_in_depth(program, mode, n):
    base, _ = _run(program, mode, 10)
    small, g1 = _run(program, mode, n)
    large, g4 = _run(program, mode, 4 * n)
    np.testing.assert_allclose(g1, _gradient(n), rtol=1e-3)
    np.testing.assert_allclose(g4, _gradient(4 * n), rtol=1e-3)
    ratio = (large - base) / (small - base)
    assert ratio < 5.5, ('4x the ops cost %.1fx the instructions (linear: 4, quadratic: 16)'
                         % ratio)


def test_program_reports_errors(program):
    res = subprocess.run([program, 'hybrid'], capture_output=True, text=True, env=_env())
    assert res.returncode == 2 and 'usage' in res.stderr
