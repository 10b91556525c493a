"""DataLoader worker processes: shutdown with batches in flight is bounded in time, no worker
outlives its parent (deleted loader, error, SIGKILL of the parent), and iteration still gives the
right batches in order (issue #12).

The scenarios run in a subprocess with a timeout, so that a hang fails the test instead of
hanging the suite, and a killed parent does not take pytest with it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import data as gdata

nd = mx.nd
# The directory this hybridgluon was imported from (site-packages in CI, src/ when developing):
# a child given the checkout's src/ would import the unbuilt source tree.
SRC = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='checks processes through /proc')


def _alive(pid):
    """True while `pid` runs (a zombie, waiting for its reaper, counts as gone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ('Z', 'X')


def _wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _script(body):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get('PYTHONPATH', ''))
    code = textwrap.dedent('''
        import os, sys, time, threading, multiprocessing
        import numpy as np
        from hybridgluon.gluon.data import DataLoader, Dataset
        ''') + textwrap.dedent(body)
    return [sys.executable, '-c', code], env


def _pids_from(line):
    assert line.startswith('PIDS'), line
    return [int(p) for p in line.split()[1:]]


def test_delete_with_batches_in_flight_is_bounded():
    # The scenario, repeated with pauses that put the deletion at different points
    # of the workers' progress (mid-batch, mid-write of a result, idle with results unread).
    cmd, env = _script('''
        for rnd, pause in enumerate([0, 0, 0.001, 0.002, 0.005, 0.01, 0.03, 0.1] * 3):
            dl = DataLoader(np.random.rand(999, 2000), batch_size=8, num_workers=2)
            pids = [p.pid for p in multiprocessing.active_children()]
            it = iter(dl)
            b = next(it)
            assert b.shape == (8, 2000), b.shape
            time.sleep(pause)
            t = time.monotonic()
            del it
            del dl
            took = time.monotonic() - t
            assert took < 5, took
            assert not multiprocessing.active_children(), rnd
            print('PIDS', *pids, flush=True)
        print('DONE', flush=True)
        ''')
    t = time.monotonic()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.split('\n')
    assert 'DONE' in lines
    pids = [p for line in lines if line.startswith('PIDS') for p in _pids_from(line)]
    assert len(pids) == 48
    assert _wait_gone(pids, 5) == []
    assert time.monotonic() - t < 120


_SLOW_DATASET = '''
    class Slow(Dataset):
        def __len__(self):
            return 1000

        def __getitem__(self, i):
            time.sleep(0.05)
            return np.float32(i)
    '''


@pytest.mark.parametrize('where', ['main', 'thread'])
def test_workers_exit_when_parent_is_killed(where):
    # 'main': the loader starts in the main thread (PR_SET_PDEATHSIG on Linux);
    # 'thread': in a thread that has ended, where the death signal cannot be used (it follows
    # the forking thread), so the workers' parent watchdog must notice.
    cmd, env = _script('''
    class Stuck(Dataset):
        def __len__(self):
            return 100

        def __getitem__(self, i):
            time.sleep(0 if i < 4 else 60)  # after the first batch, workers stay mid-batch
            return np.float32(i)

    box = []
    def make():
        box.append(DataLoader(Stuck(), batch_size=4, num_workers=2))
    if %r == 'main':
        make()
    else:
        t = threading.Thread(target=make)
        t.start()
        t.join()
    dl = box[0]
    it = iter(dl)
    next(it)
    print('PIDS', *[p.pid for p in multiprocessing.active_children()], flush=True)
    next(it)  # waits until the parent is killed
    ''' % where)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    pids, left = [], None
    try:
        pids = _pids_from(proc.stdout.readline())
        time.sleep(0.3)
        assert len(pids) == 2 and all(_alive(p) for p in pids)  # not killed by a thread's end
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        left = _wait_gone(pids, 5)
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in pids:  # whatever the outcome, leave no process behind
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        proc.stdout.close()
        proc.wait(10)
    assert left == []


def test_error_and_timeout_leave_no_worker():
    cmd, env = _script(_SLOW_DATASET + '''
    dl = DataLoader(Slow(), batch_size=4, num_workers=2, timeout=0.1)
    pids = [p.pid for p in multiprocessing.active_children()]
    try:
        list(dl)
    except multiprocessing.TimeoutError as e:
        assert 'timed out after 0.1 seconds' in str(e)
    assert dl._worker_pool is None and not multiprocessing.active_children()
    print('PIDS', *pids, flush=True)
    ''')
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert _wait_gone(_pids_from(res.stdout.split('\n')[0]), 5) == []


def test_worker_killed_raises_clear_error():
    cmd, env = _script(_SLOW_DATASET + '''
    import signal
    from hybridgluon.base import MXNetError
    dl = DataLoader(Slow(), batch_size=4, num_workers=2)
    it = iter(dl)
    next(it)
    victim = sorted(multiprocessing.active_children(), key=lambda p: p.pid)[1]
    os.kill(victim.pid, signal.SIGKILL)
    while victim.is_alive():  # dead before the next call: sending it a task meets the EOF
        time.sleep(0.01)
    try:
        for _ in it:
            pass
    except MXNetError as e:
        print('ERROR', e, flush=True)
    assert not multiprocessing.active_children()
    ''')
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert 'ERROR DataLoader: worker process 1' in res.stdout
    assert 'exited unexpectedly' in res.stdout


# ---- iteration still right ----------------------------------------------------------------
def _expected(x, batch_size):
    return [x[i:i + batch_size] for i in range(0, len(x), batch_size)]


@pytest.mark.parametrize('num_workers,thread_pool', [(0, False), (1, False), (2, False),
                                                     (1, True), (2, True)])
def test_batches_in_order(num_workers, thread_pool):
    x = np.random.default_rng(3).standard_normal((53, 3)).astype(np.float32)
    y = np.arange(53, dtype=np.int32)
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=5, num_workers=num_workers,
                              thread_pool=thread_pool)
    for _ in range(2):
        got = list(loader)
        assert len(got) == 11
        for (bx, by), ex, ey in zip(got, _expected(x, 5), _expected(y, 5)):
            np.testing.assert_array_equal(bx.asnumpy(), ex)
            np.testing.assert_array_equal(by.asnumpy(), ey)
            assert by.dtype == np.int32
    del loader


@pytest.mark.parametrize('thread_pool', [False, True])
def test_abandoned_and_interleaved_iterators(thread_pool):
    # Results of an abandoned pass must not leak into the next one; two passes in step with
    # each other (zip) share the workers.
    x = np.arange(60, dtype=np.float32).reshape(30, 2)
    loader = gdata.DataLoader(x, batch_size=3, num_workers=2, thread_pool=thread_pool,
                              prefetch=5)
    for stop in (1, 2, 7):
        it = iter(loader)
        for _ in range(stop):
            next(it)
        del it
        got = [b.asnumpy() for b in loader]
        np.testing.assert_array_equal(np.concatenate(got), x)
    pairs = list(zip(loader, loader))
    assert len(pairs) == 10
    for (a, b), e in zip(pairs, _expected(x, 3)):
        np.testing.assert_array_equal(a.asnumpy(), e)
        np.testing.assert_array_equal(b.asnumpy(), e)
    del loader
