"""Shared pytest fixtures and helpers."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(params=[1, 3], ids=['1thread', '3threads'])
def threads(request):
    """Runs the test with the kernels' pool at 1 and at 3 threads (more than the cores: chunks
    then wait on each other), restoring the count after."""
    from hybridgluon import _core
    old = _core.num_threads()
    _core.num_threads(request.param)
    yield request.param
    _core.num_threads(old)


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


def rss_kb():
    """This process's resident memory in KiB (VmRSS), 0 where /proc is not there."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def imperative_and_hybridized(make_net, x):
    """Runs make_net() (a fresh block, same random initial parameters each time: the seed is
    reset first) on x op by op and hybridized with static_alloc, under autograd.record with a
    backward of the output's sum. Returns [(output, [x.grad, then each parameter's grad in
    collect_params order]) imperative, (...) hybridized] as NumPy arrays."""
    import hybridgluon as mx
    from hybridgluon import autograd
    runs = []
    for hybrid in (False, True):
        mx.random.seed(5)
        net = make_net()
        net.initialize()
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        xi = x.copy()
        xi.attach_grad()
        with autograd.record():
            y = net(xi)
        y.backward()
        runs.append((y.asnumpy(), [xi.grad.asnumpy()] +
                     [p.grad().asnumpy() for p in net.collect_params().values()]))
    return runs
