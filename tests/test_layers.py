"""csrc/'s layers only point down (docs/layers.md): tools/check_layers.py scans the #include
lines and, with nm, the symbols of the objects, and fails on an edge that points up or
sideways, or spells an include other than from csrc/. It runs on the real tree (must pass)
and on small planted trees (must fail), so the check itself is known to work. It never
skips: without built objects it compiles the sources."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, 'tools', 'check_layers.py')


def _run(root):
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)  # a sanitizer runtime is no business of cc and nm
    res = subprocess.run([sys.executable, TOOL, '--root', str(root)], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode in (0, 1), res.stdout + res.stderr  # 2: the check could not run
    return res.returncode, res.stdout


def test_real_tree_points_down():
    rc, out = _run(ROOT)
    assert rc == 0, out


def _tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / 'csrc' / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


# A minimal tree: a kernel, an op using core and the gradient builder, a graph function.
BASE = {
    'core/base.h': 'int hg_core_f(void);\n',
    'core/base.c': '#include "core/base.h"\nint hg_core_f(void) { return 1; }\n',
    'kernels/cpu/k.h': 'int hg_k_run(int x);\n',
    'kernels/cpu/k.c': '#include "kernels/cpu/k.h"\n#include "core/base.h"\n'
                       'int hg_k_run(int x) { return x + hg_core_f(); }\n',
    'graph/grad.h': 'int hg_g_emit(int x);\n',
    'graph/grad.c': '#include "graph/grad.h"\nint hg_g_emit(int x) { return x; }\n',
    'graph/symbol.h': 'int hg_symbol_walk(int x);\n',
    'graph/symbol.c': '#include "graph/symbol.h"\nint hg_symbol_walk(int x) { return x; }\n',
    'ops/op.c': '#include "core/base.h"\n#include "kernels/cpu/k.h"\n'
                '#include "graph/grad.h"\n'
                'int hg_op_grad(int x) { return hg_g_emit(hg_k_run(x)); }\n',
}


def test_planted_tree_clean(tmp_path):
    rc, out = _run(_tree(tmp_path, BASE))
    assert rc == 0, out


def test_planted_upward_include(tmp_path):
    files = dict(BASE)
    files['core/bad.c'] = '#include "core/base.h"\n\n#include "kernels/cpu/k.h"\n'
    rc, out = _run(_tree(tmp_path, files))
    assert rc == 1
    assert 'csrc/core/bad.c:3: #include "kernels/cpu/k.h": core -> kernels (upward)' in out


def test_planted_upward_call(tmp_path):
    files = dict(BASE)  # no include: the prototype is written by hand, only nm can see it
    files['core/sneaky.c'] = ('int hg_k_run(int x);\n\n'
                              'int hg_core_g(void) { return hg_k_run(2); }\n')
    rc, out = _run(_tree(tmp_path, files))
    assert rc == 1
    assert ('csrc/core/sneaky.c:1: uses hg_k_run (csrc/kernels/cpu/k.c): core -> kernels '
            '(upward)') in out


def test_planted_sideways_and_outside_the_exception(tmp_path):
    files = dict(BASE)
    files['formats/f.c'] = '#include "graph/symbol.h"\n'
    files['ops/op2.c'] = ('int hg_symbol_walk(int x);\n'
                          'int hg_op2(int x) { return hg_symbol_walk(x); }\n')
    files['ops/op3.c'] = '#include "graph/symbol.h"\n'
    rc, out = _run(_tree(tmp_path, files))
    assert rc == 1
    assert 'csrc/formats/f.c:1: #include "graph/symbol.h": formats -> graph (sideways)' in out
    assert 'csrc/ops/op2.c:1: uses hg_symbol_walk (csrc/graph/symbol.c): ops -> graph' in out
    assert 'csrc/ops/op3.c:1: #include "graph/symbol.h": ops -> graph (upward)' in out
    assert 'op.c' not in out  # hg_g_* through graph/grad.h is the sanctioned exception


def test_planted_include_spellings(tmp_path):
    files = dict(BASE)  # one spelling: the path from csrc/, never relative to the file
    files['kernels/cpu/k2.c'] = '#include "k.h"\n#include "../../core/base.h"\n'
    rc, out = _run(_tree(tmp_path, files))
    assert rc == 1
    assert 'csrc/kernels/cpu/k2.c:1: #include "k.h": spell it "kernels/cpu/k.h"' in out
    assert 'csrc/kernels/cpu/k2.c:2: #include "../../core/base.h": spell it "core/base.h"' in out
