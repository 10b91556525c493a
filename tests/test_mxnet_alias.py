"""The opt-in `mxnet` alias (hybridgluon.mxnet_alias), `python -m hybridgluon.run`, and the runner
of MXNet's own test files (tools/mxnet_suite.py), on planted scripts and a planted MXNet tree.
Each case runs in a fresh interpreter: the alias changes the process's import system."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

import hybridgluon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.dirname(os.path.dirname(os.path.abspath(hybridgluon.__file__)))


def _env(**extra):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([SRC] + [p for p in env.get('PYTHONPATH', '').split(
        os.pathsep) if p])
    env.update(extra)
    return env


def _py(code, *args, cwd=None, env=None):
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)] + list(args),
                          capture_output=True, text=True, cwd=cwd, env=env or _env(), timeout=300)


def test_not_installed_by_default():
    res = _py('''
        import importlib.util, sys
        import hybridgluon
        assert 'mxnet' not in sys.modules
        from hybridgluon import mxnet_alias
        assert not mxnet_alias.installed()
        assert not any(type(f).__module__ == 'hybridgluon.mxnet_alias' for f in sys.meta_path)
        print('ok')
    ''')
    assert res.returncode == 0 and res.stdout.split() == ['ok'], res.stderr


def test_install_maps_mxnet_and_submodules_to_the_same_objects():
    res = _py('''
        import hybridgluon.mxnet_alias as a
        a.install(); a.install()  # idempotent
        import mxnet as mx
        import mxnet.gluon.nn as nn
        from mxnet import nd, autograd
        from mxnet.ndarray import ndarray
        import hybridgluon, hybridgluon.gluon.nn, hybridgluon.ndarray.ndarray
        assert mx is hybridgluon and nn is hybridgluon.gluon.nn
        assert ndarray is hybridgluon.ndarray.ndarray and autograd is hybridgluon.autograd
        assert nn.__spec__.name == 'hybridgluon.gluon.nn' and mx.__name__ == 'hybridgluon'
        print(float(nd.ones((2, 3)).sum().asscalar()))
        try:
            import mxnet.no_such_module
        except ModuleNotFoundError as e:
            print(e.name, 'hybridgluon.no_such_module' in str(e))
        a.uninstall()
        import sys
        assert 'mxnet' not in sys.modules and 'mxnet.gluon.nn' not in sys.modules
        try:
            import mxnet
        except ModuleNotFoundError:
            print('off')
    ''')
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ['6.0', 'mxnet.no_such_module', 'True', 'off']


def test_refuses_when_a_real_mxnet_is_imported():
    res = _py('''
        import sys, types
        sys.modules['mxnet'] = types.ModuleType('mxnet')   # stands for the real library
        import hybridgluon.mxnet_alias as a
        try:
            a.install()
        except ImportError as e:
            print('refused', 'already imported' in str(e), a.installed())
    ''')
    assert res.returncode == 0 and res.stdout.split() == ['refused', 'True', 'False'], res.stderr


def test_run_script_and_module(tmp_path):
    (tmp_path / 'helper_mod.py').write_text('VALUE = 7\n')
    (tmp_path / 'script.py').write_text(textwrap.dedent('''
        import sys
        import mxnet as mx
        from mxnet.gluon import nn
        import helper_mod                       # the script's folder is on sys.path
        net = nn.Dense(2, in_units=3)
        net.initialize(mx.init.One())
        y = net(mx.nd.ones((1, 3)))
        print(__name__, sys.argv[1:], helper_mod.VALUE, y.asnumpy().tolist())
        sys.exit(int(sys.argv[1]) if sys.argv[1:] and sys.argv[1].isdigit() else 0)
    '''))
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.run', str(tmp_path / 'script.py'),
                          'a', '--b'], capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split('\n')[0] == "__main__ ['a', '--b'] 7 [[3.0, 3.0]]"
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.run', str(tmp_path / 'script.py'),
                          '3'], capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 3  # the script's exit status comes through
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.run', '-m', 'script', 'x'],
                         capture_output=True, text=True, cwd=str(tmp_path), env=_env(),
                         timeout=300)
    assert res.returncode == 0 and res.stdout.startswith("__main__ ['x'] 7"), res.stderr
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.run', str(tmp_path / 'nope.py')],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 2 and 'no such file' in res.stderr
    res = subprocess.run([sys.executable, '-m', 'hybridgluon.run'], capture_output=True,
                         text=True, env=_env(), timeout=300)
    assert res.returncode == 2 and 'usage' in res.stderr


# ---- tools/mxnet_suite.py on a planted MXNet tree ------------------------------------------

FAKE_TESTS = '''
import os
import pytest
import mxnet as mx

def test_ones():
    assert mx.nd.ones((2,)).sum().asscalar() == 2

def test_only_real():
    assert getattr(mx, 'REAL', False)

def test_fails_everywhere():
    assert mx.nd.ones((1,)).asscalar() == 5

def test_skipped():
    pytest.skip('not here')

@pytest.mark.xfail(reason='known')
def test_xfail():
    assert False

@pytest.fixture
def broken():
    raise RuntimeError('setup fails')

def test_setup_error(broken):
    pass

def test_zz_crash():
    if not getattr(mx, 'REAL', False):
        os.abort()
'''

FAKE_MXNET = '''
from hybridgluon import nd  # a stand-in "real MXNet" for the side-by-side run
REAL = True
'''


@pytest.mark.skipif(sys.platform == 'win32', reason='a shell wrapper stands for the MXNet Python')
def test_suite_runner_side_by_side(tmp_path):
    unit = tmp_path / 'mx' / 'tests' / 'python' / 'unittest'
    unit.mkdir(parents=True)
    (unit / 'test_fake.py').write_text(FAKE_TESTS)
    (unit / 'test_other.py').write_text('import mxnet\n\ndef test_a():\n    pass\n')
    real = tmp_path / 'real'
    (real / 'mxnet').mkdir(parents=True)
    (real / 'mxnet' / '__init__.py').write_text(FAKE_MXNET)
    wrapper = tmp_path / 'mxpython'
    wrapper.write_text('#!/bin/sh\nPYTHONPATH="%s:$PYTHONPATH" exec "%s" "$@"\n'
                       % (real, sys.executable))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    out_md, out_json = tmp_path / 'table.md', tmp_path / 'tests.json'
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'mxnet_suite.py'),
                          str(tmp_path / 'mx'), '--files', 'test_fake.py,test_other.py',
                          '--mxnet-python', str(wrapper), '--out', str(out_md),
                          '--json', str(out_json)],
                         capture_output=True, text=True, env=_env(), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    ours = json.loads(out_json.read_text())['test_fake.py']['hybridgluon']
    theirs = json.loads(out_json.read_text())['test_fake.py']['mxnet']
    ids = lambda d, o: sorted(k.split('::')[1] for k, v in d.items() if v == o)  # noqa: E731
    assert ids(ours, 'passed') == ['test_ones']
    # The crash kills the process: the tests before it are kept, the crashing one fails.
    assert ids(ours, 'failed') == ['test_fails_everywhere', 'test_only_real', 'test_setup_error',
                                   'test_zz_crash']
    assert ids(ours, 'skipped') == ['test_skipped', 'test_xfail']
    assert ids(theirs, 'passed') == ['test_ones', 'test_only_real', 'test_zz_crash']
    table = out_md.read_text()
    assert '| test_fake.py | 7 | 1 | 4 (crashed (signal 6)) | 2 | 7 | 3 | 2 | 2 | 1 of 3 |' in table
    assert '| test_other.py | 1 | 1 | 0 | 0 | 1 | 1 | 0 | 0 | 1 of 1 |' in table
    assert 'Of the 4 tests that pass on MXNet, 2 (50.0%) pass on hybridgluon.' in table
    # MXNet's side again from that run's outcomes, without running it.
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'mxnet_suite.py'),
                          str(tmp_path / 'mx'), '--files', 'test_other.py,test_fake.py',
                          '--mxnet-results', str(out_json)],
                         capture_output=True, text=True, env=_env(), timeout=600)
    assert res.returncode == 0, res.stderr
    assert '| test_fake.py | 7 | 1 | 4 (crashed (signal 6)) | 2 | 7 | 3 | 2 | 2 | 1 of 3 |' \
        in res.stdout
    assert 'Of the 4 tests that pass on MXNet, 2 (50.0%) pass on hybridgluon.' in res.stdout


def test_suite_runner_reports_a_file_that_does_not_import(tmp_path):
    unit = tmp_path / 'mx' / 'tests' / 'python' / 'unittest'
    unit.mkdir(parents=True)
    (unit / 'test_bad.py').write_text('import mxnet.no_such_module\n\ndef test_a():\n    pass\n')
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'mxnet_suite.py'),
                          str(tmp_path / 'mx'), '--files', 'test_bad.py'],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    assert '| test_bad.py | 0 | 0 | 0 (pytest exit 2) (collection error) | 0 |' in res.stdout
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'mxnet_suite.py'),
                          str(tmp_path / 'mx'), '--files', 'test_missing.py'],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 2 and 'test_missing.py' in res.stderr
