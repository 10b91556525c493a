"""What a C or C++ build needs to use libhybridgluon (headers, library, run-time path).

    cc -O2 app.c $(python -m hybridgluon.config --cflags) $(python -m hybridgluon.config --libs)

--cflags      the include flag for <hybridgluon/hybridgluon.h>, <hybridgluon/predict.h>, ...
--libs        link flags: -L<libdir> -lhybridgluon and an rpath to <libdir>, so the program finds
              the library without LD_LIBRARY_PATH; when the library uses scipy_openblas32's
              OpenBLAS, the same for that library (linked even if the program calls none of
              it), so that editable and in-place builds, whose library cannot reach
              site-packages by a relative path, work too
--includedir  the directory holding hybridgluon/*.h
--libdir      the directory holding libhybridgluon.so

Several options print their values on one line, in the order given.
"""
import os
import sys

from .libinfo import _needs_scipy_openblas, get_include, get_lib_dir

_OPTIONS = ('--cflags', '--libs', '--includedir', '--libdir')


def cflags():
    """The compiler flags, as one string."""
    return '-I%s' % get_include()


def libs():
    """The linker flags, as one string."""
    flags = '-L{0} -lhybridgluon -Wl,-rpath,{0}'.format(get_lib_dir())
    if _needs_scipy_openblas():
        import scipy_openblas32 as ob
        # A direct dependency of the program: libhybridgluon's own run path is $ORIGIN-relative
        # and the program's run path does not apply to its libraries' dependencies.
        flags += (' -L{0} -Wl,--push-state,--no-as-needed -l{1} -Wl,--pop-state -Wl,-rpath,{0}'
                  .format(ob.get_lib_dir(), ob.get_library()))
    return flags


def _value(opt):
    return {'--cflags': cflags, '--libs': libs, '--includedir': get_include,
            '--libdir': get_lib_dir}[opt]()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or any(a in ('-h', '--help') for a in argv):
        print(__doc__.strip())
        return 0 if argv else 1
    bad = [a for a in argv if a not in _OPTIONS]
    if bad:
        sys.stderr.write('hybridgluon.config: unknown option %s (use %s)\n'
                         % (bad[0], ', '.join(_OPTIONS)))
        return 2
    lib = os.path.join(get_lib_dir(), 'libhybridgluon.so')
    if not os.path.exists(lib):
        sys.stderr.write('hybridgluon.config: warning: %s does not exist (build the package '
                         'first: python setup.py build_ext --inplace)\n' % lib)
    print(' '.join(_value(a) for a in argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
