"""The stride-2 copy of im2col and the depthwise kernels (csrc/kernels/cpu/gather2.c):
dst[i] = src[2 i], in each instruction set the CPU has, against NumPy's x[::2], with the last
element it may read (src[2 n - 2]) placed just before a page that cannot be read: a vector
path that loads one float too far dies of SIGSEGV, in a child process."""
import sys

from conftest import run_python

CHILD = r'''
import ctypes, mmap, os, sys
import numpy as np
import hybridgluon as mx
h = ctypes.CDLL(os.path.join(os.path.dirname(mx.__file__), 'lib', 'libhybridgluon.so'))
h.hg_gather2_f32_isa.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
h.hg_gather2_f32_isa.restype = ctypes.c_int
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE
buf = mmap.mmap(-1, 2 * page)
base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
assert libc.mprotect(base + page, page, 0) == 0  # the second page: no access
floats = np.frombuffer(buf, np.float32, page // 4)  # the first page only
floats[:] = np.arange(page // 4, dtype=np.float32) * 0.5 - 7
ran = []
for isa in (1, 2, 3):
    for n in list(range(0, 70)) + [127, 128, 129, 500]:
        if 2 * n - 1 > page // 4:
            continue
        start = page // 4 - max(2 * n - 1, 0)  # src[2n - 2] is the page's last float
        src = floats[start:]
        dst = np.full(n + 2, np.nan, np.float32)
        if not h.hg_gather2_f32_isa(dst.ctypes.data, base + 4 * start, n, isa):
            break
        assert np.array_equal(dst[:n], src[::2][:n]), (isa, n)
        assert np.isnan(dst[n:]).all(), (isa, n)  # nothing written past n
        ran.append(isa)
print(sorted(set(ran)))
'''


def test_every_isa_exact_and_within_bounds():
    r = run_python(['-c', CHILD])
    assert r.returncode == 0, r.stderr
    ran = eval(r.stdout.strip().splitlines()[-1])
    assert 1 in ran  # the plain loop always exists
    if sys.platform == 'linux':
        with open('/proc/cpuinfo') as f:
            flags = f.read()
        if ' avx2' in flags:
            assert 2 in ran
        if ' avx512f' in flags:
            assert 3 in ran
