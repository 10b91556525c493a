"""Runs an unmodified MXNet script on hybridgluon: `import mxnet` inside it gives hybridgluon
(hybridgluon.mxnet_alias), for this process only.

    python -m hybridgluon.run script.py [args ...]     # like `python script.py args ...`
    python -m hybridgluon.run -m module [args ...]     # like `python -m module args ...`

The script sees the arguments after its name in sys.argv and runs as __main__; its folder is
first on sys.path, as Python does for a script.
"""
import os
import runpy
import sys

from . import mxnet_alias

USAGE = 'usage: python -m hybridgluon.run script.py [args ...] | -m module [args ...]'


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ('-h', '--help'):
        print(__doc__.strip() if argv else USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    mxnet_alias.install()
    if argv[0] == '-m':
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print('hybridgluon.run: no such file: %s' % script, file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name='__main__')
    return 0


if __name__ == '__main__':
    sys.exit(main())
