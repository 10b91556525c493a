"""Small-side float32 GEMM: our kernels (csrc/kernels/cpu/gemm_small*.c) against OpenBLAS on the
seeds' MLP 512-256-128-2 layer shapes, forward (x . W^T) and backward (dy . W, dy^T . x), at
batch 1 and 8. Every variant is hg_gemm_f32 timed in C over back-to-back calls (the timer of
benchmarks/gemm_timer.c: the median of many short samples; operands stay in cache, as in a
hybridized forward), the kernel set chosen with hg_gemm_set_kernel: 'ours' is the best set this
CPU has, 'blas' the linked OpenBLAS (scipy-openblas32) as before these kernels; 'numpy' is np.dot
into a preallocated output (NumPy's own OpenBLAS, with NumPy's call cost not subtracted). Medians
over interleaved rounds; each variant starts after a pause, so that the BLAS threads a previous
variant left spinning (OpenBLAS's wait for more work) have gone to sleep and do not take the
pool's second core.

The timer is not in libhybridgluon.so (which exports only the public API). At start this script
links benchmarks/gemm_timer.c with the objects that the last `python setup.py build_ext
--inplace` left in build/temp.*/csrc/ (everything but csrc/python/), with that build's compiler
flags and BLAS, into build/bench/libhg_gemm_timer.so (relinked when an input is newer), so it
times exactly the kernels the library was built from. Build the library first (not with
HG_SANITIZE); CC picks the compiler (default cc).

    python setup.py build_ext --inplace
    python benchmarks/bench_gemm.py [--quick] [--threads N]
"""
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import fmt_time  # noqa: E402

import numpy as np  # noqa: E402

KERNELS = {'blas': 0, 'portable': 1, 'avx2': 2, 'avx512': 3}
P = ctypes.c_void_p
I64 = ctypes.c_int64
F = ctypes.c_float


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build_dir():
    """build/temp.* of the last core build and its flags (the stamp setup.py writes)."""
    stamps = glob.glob(os.path.join(ROOT, 'build', 'temp.*', 'cflags-libhybridgluon.txt'))
    if not stamps:
        sys.exit('bench_gemm: no build found; run `python setup.py build_ext --inplace` first')
    stamp = max(stamps, key=os.path.getmtime)
    return os.path.dirname(stamp), open(stamp).read()


def timer_lib_path():
    """Links (when stale) and returns build/bench/libhg_gemm_timer.so."""
    temp, sig = _build_dir()
    if '-fsanitize' in sig:
        sys.exit('bench_gemm: the last build is a sanitizer build; rebuild without HG_SANITIZE')
    # a CPU build leaves the CUDA glue objects of an earlier CUDA build in place: not ours
    cuda = '-DHG_CUDA=1' in sig
    objs = sorted(o for o in glob.glob(os.path.join(temp, 'csrc', '**', '*.o'), recursive=True)
                  if os.sep + 'python' + os.sep not in o
                  and (cuda or os.sep + 'cuda' + os.sep not in o))
    if not objs:
        sys.exit('bench_gemm: no objects under %s; build the library first' % temp)
    src = os.path.join(ROOT, 'benchmarks', 'gemm_timer.c')
    out = os.path.join(ROOT, 'build', 'bench', 'libhg_gemm_timer.so')
    if os.path.exists(out) and os.path.getmtime(out) >= max(map(os.path.getmtime, objs + [src])):
        return out
    flags = [f for f in sig.split() if f.startswith('-')]  # the core's compile flags
    if 'HG_SYSTEM_BLAS' in sig:
        blas = ['-lopenblas']
    else:
        import scipy_openblas32 as ob
        blas = ['-I' + ob.get_include_dir(), '-L' + ob.get_lib_dir(), '-l' + ob.get_library(),
                '-Wl,-rpath,' + ob.get_lib_dir()]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cc = os.environ.get('CC', 'cc')
    # -Bsymbolic: the objects' calls stay inside this library even if libhybridgluon.so (the
    # same symbols) is loaded in the process too.
    cmd = ([cc] + flags + ['-shared', '-I' + os.path.join(ROOT, 'csrc', 'include'),
                           '-I' + os.path.join(ROOT, 'csrc'), '-o', out, src] + objs + blas +
           ['-lm', '-lpthread', '-Wl,-Bsymbolic'])
    subprocess.run(cmd, check=True)
    return out


def lib():
    h = ctypes.CDLL(timer_lib_path())
    h.bench_gemm_time_f32.argtypes = [I64, ctypes.c_bool, ctypes.c_bool, I64, I64, I64, F, P, I64,
                                      P, I64, F, P, I64]
    h.bench_gemm_time_f32.restype = ctypes.c_double
    h.bench_gemm_set_kernel.argtypes = [ctypes.c_int]
    h.bench_gemm_set_kernel.restype = ctypes.c_int
    h.bench_set_num_threads.argtypes = [ctypes.c_int]
    h.bench_get_num_threads.restype = ctypes.c_int
    return h


def case(ta, tb, M, N, K, rng):
    """Operands for C[M, N] = op(A) op(B), and the NumPy call computing the same product."""
    A = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    B = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    args = (ta, tb, M, N, K, 1.0, A.ctypes.data, A.shape[1], B.ctypes.data, B.shape[1], 0.0,
            C.ctypes.data, N)
    opa, opb = (A.T if ta else A), (B.T if tb else B)
    return (A, B, C), args, lambda: np.dot(opa, opb, out=C)


PAUSE = 0.2  # seconds


def per_call(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


# (label, ta, tb, M, N, K): FullyConnected forward is x . W^T; its backward is dx = dy . W and
# dW = dy^T . x.
SHAPES = []
for b in (1, 8):
    SHAPES += [('fwd 512->256, batch %d' % b, False, True, b, 256, 512),
               ('fwd 256->128, batch %d' % b, False, True, b, 128, 256),
               ('fwd 128->2, batch %d' % b, False, True, b, 2, 128),
               ('dx 256->512, batch %d' % b, False, False, b, 512, 256),
               ('dW 256x512, batch %d' % b, True, False, 256, 512, b)]


def run(quick=False, threads=None):
    h = lib()
    if threads:
        h.bench_set_num_threads(threads)
    best = h.bench_gemm_set_kernel(-1)
    name = {v: k for k, v in KERNELS.items()}[best]
    variants = ['ours', 'portable', 'blas']
    rep, number = (5, 200) if quick else (9, 1000)
    rng = np.random.default_rng(0)
    lines = ['### small-side float32 GEMM, %d thread(s), ours = %s kernels (medians; numpy '
             'includes its Python call cost)' % (h.bench_get_num_threads(), name), '',
             '| product | ours | portable | OpenBLAS | numpy | OpenBLAS / ours |',
             '|---|---|---|---|---|---|']
    for label, ta, tb, M, N, K in SHAPES:
        keep, args, np_call = case(ta, tb, M, N, K, rng)
        samples = {v: [] for v in variants + ['numpy']}
        levels = {'ours': best, 'portable': 1, 'blas': 0}
        for r in range(rep + 1):
            for v in variants:
                h.bench_gemm_set_kernel(levels[v])
                time.sleep(PAUSE)
                t = h.bench_gemm_time_f32(number, *args)  # median of `number` samples
                if r:  # round 0 warms up
                    samples[v].append(t)
            time.sleep(PAUSE)
            t = per_call(np_call, number)
            if r:
                samples['numpy'].append(t)
        med = {v: statistics.median(s) for v, s in samples.items()}
        lines.append('| %s (%s) | %s | %s | %s | %s | %.2fx |' % (
            label, 'M=%d N=%d K=%d' % (M, N, K), fmt_time(med['ours']), fmt_time(med['portable']),
            fmt_time(med['blas']), fmt_time(med['numpy']), med['blas'] / med['ours']))
    h.bench_gemm_set_kernel(-1)
    return '\n'.join(lines)


if __name__ == '__main__':
    if '--help' in sys.argv or '-h' in sys.argv:
        print(__doc__)
        sys.exit(0)
    th = None
    if '--threads' in sys.argv:
        th = int(sys.argv[sys.argv.index('--threads') + 1])
    print(run(quick='--quick' in sys.argv, threads=th))
