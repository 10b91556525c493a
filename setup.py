"""Build for hybridgluon: the C core as libhybridgluon.so (shipped in the package with its
headers) and the CPython extension hybridgluon._core linked to it.

Settings (environment variables):
  HG_SYSTEM_BLAS=1   link the system OpenBLAS (-lopenblas, <cblas.h>) instead of scipy-openblas32
  HG_NATIVE=1        compile with -march=native (local benchmarking; the wheel is not portable)
  HG_SANITIZE=1      AddressSanitizer + UBSan build (-O1 -g, allocator pool off)
  HG_SANITIZE=thread ThreadSanitizer build (-O1 -g, allocator pool off)
  HG_DEBUG=1         -O0 -g
  HG_CUDA=1          also build the CUDA backend (csrc/kernels/cuda/): nvcc compiles the kernels
                     for sm_80 and sm_90 plus sm_90 PTX; CUDA's static runtime is linked, cuBLAS
                     is loaded at first use. CUDA_HOME (default: the nvcc on PATH, or
                     /usr/local/cuda) says where the toolkit is; HG_CUDA_ARCHS overrides the list
                     of architectures (e.g. "80;90").
"""
import glob
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CORE_SOURCES = sorted(glob.glob('csrc/core/*.c') + glob.glob('csrc/ops/*.c') +
                      glob.glob('csrc/kernels/cpu/*.c') + glob.glob('csrc/formats/*.c') +
                      glob.glob('csrc/graph/*.c') + glob.glob('csrc/exec/*.c') +
                      glob.glob('csrc/autograd/*.c') + glob.glob('csrc/predict/*.c') +
                      glob.glob('csrc/dist/*.c'))
CUDA_C_SOURCES = sorted(glob.glob('csrc/kernels/cuda/*.c'))
CUDA_SOURCES = sorted(glob.glob('csrc/kernels/cuda/*.cu'))
# Kernels that repeat a CPU op's float arithmetic operation for operation, to give its results
# bit for bit: nvcc may not fuse a product and a sum into one FMA there (the CPU build, x86-64
# without FMA, rounds each).
CUDA_NO_FMAD = {'creation.cu', 'image.cu', 'image_resize.cu'}
PY_SOURCES = sorted(glob.glob('csrc/python/*.c'))
EXPORTS = 'csrc/exports.map'


def _flag(name):
    return os.environ.get(name, '') not in ('', '0')


def _sanitizer():
    """The -fsanitize= value HG_SANITIZE asks for ('' when off)."""
    value = os.environ.get('HG_SANITIZE', '')
    if value in ('', '0'):
        return ''
    return 'thread' if value == 'thread' else 'address,undefined'


def _blas():
    """(include_dirs, library_dirs, libraries, rpaths, macros) for the BLAS we link."""
    if _flag('HG_SYSTEM_BLAS'):
        return [], [], ['openblas'], [], [('HG_SYSTEM_BLAS', '1')]
    import scipy_openblas32 as ob
    # Only an $ORIGIN-relative path: it finds scipy_openblas32 installed side by side in
    # site-packages (lib/ -> hybridgluon/ -> site-packages/). An absolute path would name the
    # build environment (pip's isolated one is deleted after the build). Where the relative path
    # misses (an editable or in-place build, --target installs), `import hybridgluon` imports
    # scipy_openblas32, which loads the library (libinfo._load_core), and
    # `hybridgluon.config --libs` links C programs to it directly.
    return ([ob.get_include_dir()], [ob.get_lib_dir()], [ob.get_library()],
            ['$ORIGIN/../../scipy_openblas32/lib'], [])


def _cuda_home():
    """The CUDA toolkit's root for HG_CUDA=1 builds."""
    home = os.environ.get('CUDA_HOME') or os.environ.get('CUDA_PATH')
    if not home:
        nvcc = shutil.which('nvcc')
        real = os.path.realpath(nvcc) if nvcc else ''
        home = os.path.dirname(os.path.dirname(real)) if real else '/usr/local/cuda'
        if not os.path.exists(os.path.join(home, 'include', 'cuda_runtime_api.h')):
            home = '/usr/local/cuda'
    if not os.path.exists(os.path.join(home, 'include', 'cuda_runtime_api.h')):
        raise SystemExit('HG_CUDA=1: no CUDA toolkit at %s (set CUDA_HOME)' % home)
    return home


def _nvcc(home):
    for cand in (os.path.join(home, 'bin', 'nvcc'), shutil.which('nvcc')):
        if cand and os.path.exists(cand):
            return cand
    raise SystemExit('HG_CUDA=1: nvcc not found (set CUDA_HOME or put nvcc on PATH)')


def _cuda_gencode():
    archs = [a for a in os.environ.get('HG_CUDA_ARCHS', '80;90').replace(',', ';').split(';')
             if a.strip()]
    flags = []
    for a in archs:
        flags += ['-gencode', 'arch=compute_%s,code=sm_%s' % (a, a)]
    # PTX of the newest architecture: later GPUs compile it at load time.
    flags += ['-gencode', 'arch=compute_%s,code=compute_%s' % (archs[-1], archs[-1])]
    return flags


def _drop_rpaths(cc):
    """Removes the interpreter's own -Wl,-rpath,<abs path> (pyenv and other shared-libpython
    builds put it in LDSHARED) from a compiler's link commands: the binaries must not name
    directories of the build machine."""
    for attr in ('linker_so', 'linker_so_cxx'):
        cmd = getattr(cc, attr, None)
        if cmd:
            setattr(cc, attr, [a for a in cmd if not a.startswith(('-Wl,-rpath', '-Wl,-R'))])


def _cflags():
    flags = ['-std=c11', '-Wall', '-Wextra', '-Wno-unused-parameter', '-Wno-type-limits',
             '-Wno-missing-field-initializers', '-fPIC',
             '-D_GNU_SOURCE', '-fno-math-errno']
    if _flag('HG_WERROR'):
        flags.append('-Werror')
    if _sanitizer():
        # The allocator's pool is off so that every tensor is a real allocation the sanitizer
        # tracks (ASan: use after free, overflows; TSan: races on reused blocks).
        flags += ['-O1', '-g', '-fno-omit-frame-pointer', '-fsanitize=' + _sanitizer(),
                  '-DHG_NO_POOL']
    elif _flag('HG_DEBUG'):
        flags += ['-O0', '-g']
    else:
        flags += ['-O3', '-g0']
    if _flag('HG_NATIVE'):
        flags.append('-march=native')
    return flags


class BuildExt(build_ext):
    def run(self):
        self._build_core()
        super().run()

    def _compile(self, name, sources, include_dirs, macros, cc=None, extra=()):
        cc = cc or self.compiler
        flags = _cflags() + list(extra)
        # Incremental: a source whose object is newer than it and than every header (and than
        # the build flags) is not compiled again. --force rebuilds everything.
        headers = glob.glob('csrc/**/*.h', recursive=True) + [__file__]
        newest = max(os.path.getmtime(h) for h in headers)
        # One stamp per target: with a shared one, the core's compile rewrote it first and the
        # extension then kept its objects from the old flags (an ASan _core in a TSan build).
        stamp = os.path.join(self.build_temp, 'cflags-%s.txt' % name)
        sig = ' '.join(flags + [str(m) for m in macros])
        stale_flags = not os.path.exists(stamp) or open(stamp).read() != sig

        def one(src):
            obj = cc.object_filenames([src], output_dir=self.build_temp)[0]
            if (not self.force and not stale_flags and os.path.exists(obj)
                    and os.path.getmtime(obj) >= max(newest, os.path.getmtime(src))):
                return obj
            return cc.compile([src], output_dir=self.build_temp, include_dirs=include_dirs,
                              macros=macros, extra_postargs=flags)[0]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            objs = list(pool.map(one, sources))
        os.makedirs(self.build_temp, exist_ok=True)
        with open(stamp, 'w') as f:
            f.write(sig)
        return objs

    def _compile_cuda(self, home):
        """The .cu kernels, compiled by nvcc (incrementally, as _compile does)."""
        nvcc = _nvcc(home)
        flags = ['-std=c++17', '-O3', '-Icsrc/include', '-Icsrc', '-DHG_CUDA=1',
                 '--expt-relaxed-constexpr',
                 '-Xcompiler', '-fPIC,-fvisibility=hidden,-Wall,-Wextra,-Wno-unused-parameter,'
                 '-Wno-missing-field-initializers']
        if _flag('HG_WERROR'):
            flags += ['-Werror', 'all-warnings', '-Xcompiler', '-Werror']
        flags += _cuda_gencode()
        headers = glob.glob('csrc/**/*.h', recursive=True) + [__file__]
        newest = max(os.path.getmtime(h) for h in headers)
        stamp = os.path.join(self.build_temp, 'cflags-cuda.txt')
        sig = ' '.join(flags + sorted(CUDA_NO_FMAD))
        stale_flags = not os.path.exists(stamp) or open(stamp).read() != sig
        os.makedirs(os.path.join(self.build_temp, 'cuda'), exist_ok=True)

        def one(src):
            obj = os.path.join(self.build_temp, 'cuda', os.path.basename(src) + '.o')
            if (not self.force and not stale_flags and os.path.exists(obj)
                    and os.path.getmtime(obj) >= max(newest, os.path.getmtime(src))):
                return obj
            cmd = [nvcc, '-c', src, '-o', obj] + flags
            if os.path.basename(src) in CUDA_NO_FMAD:
                cmd.append('-fmad=false')
            print(' '.join(cmd))
            subprocess.check_call(cmd)
            return obj
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            objs = list(pool.map(one, CUDA_SOURCES))
        with open(stamp, 'w') as f:
            f.write(sig)
        return objs

    def _build_core(self):
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler
        cc = new_compiler(force=self.force)
        customize_compiler(cc)
        _drop_rpaths(cc)
        inc, libdirs, libs, rpaths, macros = _blas()
        sources, cuda_objs, cuda_link = CORE_SOURCES, [], []
        if _flag('HG_CUDA'):
            home = _cuda_home()
            sources = CORE_SOURCES + CUDA_C_SOURCES
            inc = inc + [os.path.join(home, 'include')]
            macros = macros + [('HG_CUDA', '1')]
            cuda_objs = self._compile_cuda(home)
            # CUDA's static runtime: no libcudart.so to find at run time; it loads the driver
            # (libcuda.so.1) itself, and reports no device where there is none.
            cuda_link = ['-L' + os.path.join(home, 'lib64'), '-lcudart_static', '-ldl', '-lrt',
                         '-lstdc++']
        # Hidden by default: a function is exported only where its declaration says HG_API
        # (the public headers, and the internal functions _core and the test hooks call).
        objs = self._compile('libhybridgluon', sources, ['csrc/include', 'csrc'] + inc,
                             macros, cc, extra=['-fvisibility=hidden']) + cuda_objs
        pkg = os.path.join(self.build_lib, 'hybridgluon')
        libdir = os.path.join(pkg, 'lib')
        os.makedirs(libdir, exist_ok=True)
        link = ['-Wl,-rpath,' + r for r in rpaths] + ['-Wl,-soname,libhybridgluon.so', '-lm',
                                                     '-lpthread', '-ldl'] + cuda_link
        # And only the symbols csrc/exports.map lists (the public C API and what _core needs;
        # tools/exports.py generates it): a stray HG_API does not widen the ABI.
        link.append('-Wl,--version-script=' + EXPORTS)
        out = os.path.join(libdir, 'libhybridgluon.so')
        if os.path.exists(out) and os.path.getmtime(out) < os.path.getmtime(EXPORTS):
            os.remove(out)  # distutils relinks only when an object is newer than the library
        if _sanitizer():
            link.append('-fsanitize=' + _sanitizer())
        else:
            # Every reference resolved at link time: a symbol no object defines (an op family
            # listed in ops/families.c but not built) is a link error, not an ImportError at
            # load time. (A sanitizer's runtime is only linked into the executable.)
            link.append('-Wl,-z,defs')
        cc.link_shared_object(
            objs, out, libraries=libs,
            library_dirs=libdirs, extra_postargs=link)
        shutil.copytree('csrc/include/hybridgluon', os.path.join(pkg, 'include', 'hybridgluon'),
                        dirs_exist_ok=True)
        if self.inplace:
            dst = os.path.join(HERE, 'src', 'hybridgluon')
            os.makedirs(os.path.join(dst, 'lib'), exist_ok=True)
            shutil.copy2(os.path.join(libdir, 'libhybridgluon.so'), os.path.join(dst, 'lib'))
            shutil.copytree('csrc/include/hybridgluon', os.path.join(dst, 'include', 'hybridgluon'),
                            dirs_exist_ok=True)
        for ext in self.extensions:
            ext.include_dirs += ['csrc/include', 'csrc'] + inc
            ext.define_macros += macros
            ext.library_dirs.append(libdir)
            ext.libraries.append('hybridgluon')
            ext.extra_compile_args = _cflags()
            ext.extra_link_args += ['-Wl,-rpath,$ORIGIN/lib']
            if _sanitizer():
                ext.extra_link_args.append('-fsanitize=' + _sanitizer())

    def build_extension(self, ext):
        # Compile the binding's files in parallel too, then let setuptools link.
        _drop_rpaths(self.compiler)
        objs = self._compile(ext.name, ext.sources, ext.include_dirs, ext.define_macros)
        ext_path = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(ext_path), exist_ok=True)
        self.compiler.link_shared_object(
            objs, ext_path, libraries=ext.libraries, library_dirs=ext.library_dirs,
            extra_postargs=ext.extra_link_args, target_lang='c')


setup(
    ext_modules=[Extension('hybridgluon._core', sources=PY_SOURCES)],
    cmdclass={'build_ext': BuildExt},
)
