#!/usr/bin/env python3
"""Checks that csrc/'s layers only point down (docs/layers.md).

    core -> kernels -> ops -> kernels/cuda -> graph -> exec -> autograd -> predict -> python
                                               formats (beside graph)

kernels/cuda/ (the CUDA build's GPU kernels) is its own layer: a GPU kernel is the device's
counterpart of an op's forward, so it reads the op's attribute enums and host helpers (ops/*.h);
it reaches the registry by installing its tables (core/device.h), as ops/families.c does.

A folder may include the headers of, and call the functions of, itself and the layers below it;
the public headers (csrc/include/) are open to all. One edge is sanctioned, and only this one:
ops include graph/grad.h and call its builder (hg_g_*) to write gradient rules (DESIGN.md).

Two scans:
- includes: every `#include "..."` line under csrc/, resolved as the compiler does (the file's
  folder, then csrc/, then csrc/include/);
- calls: `nm` over the object files. Those setup.py leaves in build/temp.*/ are used when they
  are newer than their source and its headers; any other source is compiled into a temporary
  folder first (so the check never silently skips a file). Every global hg_* symbol an object
  uses is mapped to the layer of the object that defines it.

Prints one line per violation (file:line: what, the edge) and exits 1 when there are any;
exit 2 when the check cannot run (no compiler, no nm). Usage:
    python tools/check_layers.py [--root DIR] [-v]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor

# Rank of each folder: an edge from A to B is allowed when A is B or rank(A) > rank(B).
# formats shares graph's rank: beside it, neither uses the other.
RANKS = {'core': 1, 'kernels': 2, 'ops': 3, 'kernels/cuda': 3.5, 'graph': 4, 'formats': 4,
         'exec': 5, 'autograd': 6, 'predict': 7, 'dist': 7, 'python': 8}
CUDA_DIR = 'kernels/cuda'
PUBLIC = 'include'  # csrc/include/: the public C API, open to every layer

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    """The layer of a path relative to csrc/ ('core/op.h' -> 'core'), or None."""
    if rel.startswith(CUDA_DIR + '/'):
        return CUDA_DIR
    top = rel.split('/', 1)[0]
    if top == PUBLIC:
        return PUBLIC
    return top if top in RANKS else None


def sanctioned(src_rel, dst_layer, what):
    """The sanctioned exception. `what` is ('include', 'graph/grad.h') or ('symbol', name)."""
    src_layer = layer_of(src_rel)
    kind, name = what
    if src_layer == 'ops' and dst_layer == 'graph':
        return name == 'graph/grad.h' if kind == 'include' else name.startswith('hg_g_')
    return False


def allowed(src_rel, dst_layer, what):
    src_layer = layer_of(src_rel)
    if src_layer is None or dst_layer is None or dst_layer == PUBLIC or src_layer == dst_layer:
        return True
    if src_layer == PUBLIC:  # a public header includes nothing internal
        return False
    return RANKS[src_layer] > RANKS[dst_layer] or sanctioned(src_rel, dst_layer, what)


def edge_text(src_rel, dst_layer):
    src_layer = layer_of(src_rel)
    if src_layer != PUBLIC and dst_layer != PUBLIC and RANKS[src_layer] == RANKS[dst_layer]:
        kind = 'sideways'
    else:
        kind = 'upward'
    return '%s -> %s (%s)' % (src_layer, dst_layer, kind)


def sources(csrc, exts):
    out = []
    for dirpath, _, files in os.walk(csrc):
        for f in files:
            if f.endswith(exts):
                out.append(os.path.relpath(os.path.join(dirpath, f), csrc).replace(os.sep, '/'))
    return sorted(out)


def resolve(csrc, rel, inc):
    """The included file relative to csrc/, as the compiler finds it, or None (outside)."""
    for base in (os.path.dirname(os.path.join(csrc, rel)), csrc, os.path.join(csrc, 'include')):
        path = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(path):
            r = os.path.relpath(path, csrc).replace(os.sep, '/')
            return None if r.startswith('..') else r
    return None


def includes(csrc, rel):
    """[(line number, written name, resolved path relative to csrc/)] of a file."""
    out = []
    with open(os.path.join(csrc, rel), encoding='utf-8', errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                out.append((n, m.group(1), resolve(csrc, rel, m.group(1))))
    return out


def check_includes(csrc):
    problems = []
    for rel in sources(csrc, ('.c', '.h', '.cu', '.cuh')):
        for n, written, target in includes(csrc, rel):
            if target is None:
                continue
            # One spelling: the path from csrc/ ("core/op.h"), or from csrc/include/ for the
            # public headers ("hybridgluon/predict.h"); never relative to the including file.
            canonical = target[len(PUBLIC) + 1:] if layer_of(target) == PUBLIC else target
            if written != canonical:
                problems.append('csrc/%s:%d: #include "%s": spell it "%s"'
                                % (rel, n, written, canonical))
            dst = layer_of(target)
            if not allowed(rel, dst, ('include', target)):
                problems.append('csrc/%s:%d: #include "%s": %s'
                                % (rel, n, written, edge_text(rel, dst)))
    return problems


# ---- objects and symbols ----------------------------------------------------------------------

def _newest_input(csrc, rel):
    t = os.path.getmtime(os.path.join(csrc, rel))
    for _, _, target in includes(csrc, rel):
        if target:
            t = max(t, os.path.getmtime(os.path.join(csrc, target)))
    return t


def built_object(root, csrc, rel):
    """An object setup.py built from csrc/rel that is newer than its inputs, or None."""
    stem = os.path.splitext(rel)[0]
    cands = glob.glob(os.path.join(root, 'build', 'temp.*', 'csrc', stem + '.o'))
    cands = [c for c in cands if os.path.getmtime(c) >= _newest_input(csrc, rel)]
    return max(cands, key=os.path.getmtime) if cands else None


def _cuda_include():
    """The CUDA toolkit's include folder, or None (then the CUDA build's C files are not
    compiled for the call check; their includes are still checked)."""
    for home in (os.environ.get('CUDA_HOME'), '/usr/local/cuda'):
        if home and os.path.exists(os.path.join(home, 'include', 'cuda_runtime_api.h')):
            return os.path.join(home, 'include')
    nvcc = shutil.which('nvcc')
    if nvcc:
        inc = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), 'include')
        if os.path.exists(os.path.join(inc, 'cuda_runtime_api.h')):
            return inc
    return None


def _include_flags(csrc):
    flags = ['-I' + os.path.join(csrc, 'include'), '-I' + csrc,
             '-I' + sysconfig.get_paths()['include']]
    if _cuda_include():
        flags += ['-I' + _cuda_include(), '-DHG_CUDA=1']
    try:
        import scipy_openblas32 as ob
        flags.append('-I' + ob.get_include_dir())
    except ImportError:
        pass
    return flags


def compile_object(cc, csrc, rel, outdir, flags):
    obj = os.path.join(outdir, rel.replace('/', '__') + '.o')
    cmd = [cc, '-std=c11', '-D_GNU_SOURCE', '-O0', '-w', '-fPIC', '-c',
           os.path.join(csrc, rel), '-o', obj] + flags
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError('cannot compile csrc/%s for the call check:\n%s' % (rel, res.stderr))
    return obj


def objects(root, csrc, tmp, verbose=False):
    """{source relative to csrc/: object path}, compiling what setup.py has not built fresh
    into the folder tmp."""
    rels = sources(csrc, ('.c',))
    if not _cuda_include():
        rels = [r for r in rels if layer_of(r) != CUDA_DIR]
    objs, missing = {}, []
    for rel in rels:
        o = built_object(root, csrc, rel)
        if o:
            objs[rel] = o
        else:
            missing.append(rel)
    if missing:
        cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
        if not cc:
            raise RuntimeError('no C compiler to build %d sources for the call check'
                               % len(missing))
        flags = _include_flags(csrc)
        if verbose:
            print('compiling %d of %d sources' % (len(missing), len(rels)), file=sys.stderr)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            for rel, o in zip(missing, ex.map(
                    lambda r: compile_object(cc, csrc, r, tmp, flags), missing)):
                objs[rel] = o
    return objs


def symbols(nm, obj):
    """(defined global names, names used but not defined) of an object."""
    res = subprocess.run([nm, '-P', obj], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError('nm failed on %s: %s' % (obj, res.stderr))
    defined, used = set(), set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ('U', 'w', 'v'):
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def first_line(csrc, rel, name):
    with open(os.path.join(csrc, rel), encoding='utf-8', errors='replace') as f:
        for n, line in enumerate(f, 1):
            if re.search(r'\b%s\b' % re.escape(name), line):
                return n
    return 0


def check_calls(root, csrc, verbose=False):
    nm = os.environ.get('NM') or shutil.which('nm')
    if not nm:
        raise RuntimeError('no nm for the call check')
    with tempfile.TemporaryDirectory(prefix='check_layers_') as tmp:
        objs = objects(root, csrc, tmp, verbose)
        syms = {rel: symbols(nm, o) for rel, o in objs.items()}
    owner = {}
    for rel, (defined, _) in syms.items():
        for name in defined:
            if name.startswith('hg_'):
                owner.setdefault(name, rel)
    problems = []
    for rel, (_, used) in sorted(syms.items()):
        for name in sorted(used):
            if name not in owner:
                continue
            dst = layer_of(owner[name])
            if not allowed(rel, dst, ('symbol', name)):
                problems.append('csrc/%s:%d: uses %s (csrc/%s): %s'
                                % (rel, first_line(csrc, rel, name), name, owner[name],
                                   edge_text(rel, dst)))
    return problems, len(objs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help='the source tree (holds csrc/ and, after a build, build/temp.*)')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args(argv)
    csrc = os.path.join(os.path.abspath(args.root), 'csrc')
    if not os.path.isdir(csrc):
        print('check_layers: no csrc/ under %s' % args.root, file=sys.stderr)
        return 2
    try:
        problems = check_includes(csrc)
        calls, nobj = check_calls(os.path.abspath(args.root), csrc, args.verbose)
    except RuntimeError as e:
        print('check_layers: %s' % e, file=sys.stderr)
        return 2
    problems += calls
    for p in problems:
        print(p)
    if problems:
        print('check_layers: %d edge(s) against the layer rule (docs/layers.md)' % len(problems),
              file=sys.stderr)
        return 1
    if args.verbose:
        print('check_layers: includes and the symbols of %d objects point down' % nobj,
              file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
