"""Shared pytest fixtures and helpers."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def run_python(args, env=None, **kwargs):
    """Run `python args...` in a child process that imports the same hybridgluon as this test
    process (the installed one in CI, the in-place build when developing). The child starts in a
    neutral directory so the source checkout's unbuilt package cannot shadow the installed one."""
    import os
    import subprocess
    import sys
    import tempfile
    import hybridgluon
    root = os.path.dirname(os.path.dirname(os.path.abspath(hybridgluon.__file__)))
    env = dict(os.environ if env is None else env)
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    kwargs.setdefault('capture_output', True)
    kwargs.setdefault('text', True)
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable] + list(args), env=env, cwd=cwd, **kwargs)
