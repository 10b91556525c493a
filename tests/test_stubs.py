"""The .pyi stubs of the generated `nd` / `sym` functions and NDArray methods (tools/gen_stubs.py):
committed as generated (an op added or changed in C without regenerating them fails here: run
python tools/gen_stubs.py --write), valid Python, naming every registered op, and shipped."""
import ast
import os
import subprocess
import sys

import pytest

import hybridgluon as mx
from hybridgluon import _core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import gen_stubs  # noqa: E402  (tools/gen_stubs.py)

GENERATED = gen_stubs.generate()


def _read(rel):
    with open(os.path.join(gen_stubs.PKG, rel)) as f:
        return f.read()


@pytest.mark.parametrize('rel', sorted(GENERATED))
def test_committed_stub_is_generated(rel):
    assert os.path.exists(os.path.join(gen_stubs.PKG, rel)), rel
    assert _read(rel) == GENERATED[rel], \
        '%s is stale: run python tools/gen_stubs.py --write' % rel


def _defs(tree):
    """Top-level function names and, per class, method names."""
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    methods = {n.name: {m.name for m in n.body if isinstance(m, ast.FunctionDef)}
               for n in tree.body if isinstance(n, ast.ClassDef)}
    return funcs, methods


def _public_op_names():
    names = set()
    for op in _core.list_ops():
        names.update(n for n in [op] + _core.op_info(op)['aliases'] if not n.startswith('_'))
    return names


@pytest.mark.parametrize('rel', [r for r in sorted(GENERATED) if r.endswith('.pyi')])
def test_stub_parses(rel):
    ast.parse(GENERATED[rel], filename=rel)


@pytest.mark.parametrize('rel,namespace', [('ndarray/__init__.pyi', mx.nd),
                                           ('symbol/op.pyi', mx.sym.op)])
def test_stub_names_every_registered_op(rel, namespace):
    funcs, _ = _defs(ast.parse(GENERATED[rel]))
    ops = _public_op_names()
    assert len(ops) > 100
    missing = sorted(n for n in ops if n not in funcs)
    assert not missing, missing
    # ... and nothing the module does not have.
    assert not [n for n in funcs if not hasattr(namespace, n)]


def test_ndarray_stub_has_the_op_methods():
    _, methods = _defs(ast.parse(GENERATED['ndarray/ndarray.pyi']))
    stubbed = methods['NDArray']
    real = set(dir(mx.nd.NDArray))
    assert {'sum', 'exp', 'relu', 'topk', 'asnumpy', 'reshape', '__add__'} <= stubbed
    assert not [n for n in stubbed if n not in real]
    # An op-backed method takes the op's attributes, self standing for the first input.
    text = GENERATED['ndarray/ndarray.pyi']
    assert 'def sum(self, axis: _Shape | None = ' in text


def test_wheel_carries_the_stubs(tmp_path):
    """package-data ships py.typed and the stubs (what a wheel holds; the compiled parts are
    checked by test_packaging)."""
    res = subprocess.run([sys.executable, 'setup.py', '-q', 'build_py', '-d', str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    for rel in GENERATED:
        assert (tmp_path / 'hybridgluon' / rel).exists(), rel
