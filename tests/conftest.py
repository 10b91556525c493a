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


def child_result(tmp_path, code, args, name, set_env=None, clear_env=()):
    """Runs the script `code` in a child (run_python) with json.dumps(args + [path]) as its
    argument, the variables of clear_env removed and set_env set (switches read once per
    process), and returns numpy.load(path): what the script saved there (path is
    tmp_path / name)."""
    import json
    import os
    import numpy as np
    path = str(tmp_path / name)
    env = {k: v for k, v in os.environ.items() if k not in clear_env}
    env.update(set_env or {})
    r = run_python(['-c', code, json.dumps(list(args) + [path])], env=env)
    assert r.returncode == 0, r.stderr
    return np.load(path)


def across_thread_counts(net, run, counts=(2, 4, 8)):
    """A plan's workspace is sized for the kernels' thread count at planning time. Returns
    run(net) with the pool as it is (the reference, imperative unless net is already
    hybridized), then, after hybridizing net with static_alloc and planning it at 1 thread,
    run(net) at each of counts: [reference, result per count]. The pool is restored."""
    from hybridgluon import _core
    old = _core.num_threads()
    try:
        out = [run(net)]
        _core.num_threads(1)
        net.hybridize(static_alloc=True, static_shape=True)
        run(net)
        for t in counts:
            _core.num_threads(t)
            out.append(run(net))
        return out
    finally:
        _core.num_threads(old)


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
