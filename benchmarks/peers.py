"""Peer frameworks in their own processes, so that each runs with its default threading.

PyTorch's OpenMP threads spin between kernels by default; inside our process they would take
the cores from ours (and with OMP_WAIT_POLICY=PASSIVE they sleep, which makes PyTorch itself
2-3x slower on small kernels). Real MXNet 1.9.1 needs NumPy < 1.24 and lives in its own virtual
environment. So each peer is a worker process: the driver asks it to build a workload
(workloads_torch.py, or workloads_gluon.py under MXNet) and then to time `number` calls; rounds
alternate between frameworks (common.compare), with a short pause so that the threads of the
side that just ran have gone to sleep.

    python benchmarks/peers.py worker torch|mxnet|hybridgluon    # what the driver starts

MXNet's Python: $HG_MXNET_PYTHON, else ../mxnet-venv/bin/python beside the checkout (or
/work/mxnet-venv), when it exists and `import mxnet` works there.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class PeerError(RuntimeError):
    pass


class Worker(object):
    """One peer process; `build` returns a Remote that common.compare times like a function."""

    def __init__(self, framework, python):
        self.framework = framework
        env = dict(os.environ)
        env.pop('OMP_WAIT_POLICY', None)  # each peer runs with its own defaults
        if framework == 'hybridgluon':  # the same package as the driver's
            import hybridgluon
            env['PYTHONPATH'] = os.path.dirname(os.path.dirname(hybridgluon.__file__))
        else:
            env.pop('PYTHONPATH', None)
        self.proc = subprocess.Popen([python, os.path.join(HERE, 'peers.py'), 'worker', framework],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     cwd=HERE, text=True, bufsize=1)
        self._ask({'cmd': 'ping'})

    def _ask(self, msg):
        self.proc.stdin.write(json.dumps(msg) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise PeerError('%s worker exited (rc %s)' % (self.framework, self.proc.poll()))
        reply = json.loads(line)
        if 'error' in reply:
            raise PeerError('%s worker: %s' % (self.framework, reply['error']))
        return reply

    def build(self, workload, **kwargs):
        key = self._ask({'cmd': 'build', 'workload': workload, 'kwargs': kwargs})['key']
        return Remote(self, key)

    def _cpu_ticks(self):
        try:
            with open('/proc/%d/stat' % self.proc.pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime, all threads
        except (OSError, IndexError, ValueError):
            return None

    def wait_idle(self, timeout=2.0):
        """Returns once the worker's threads have stopped spinning (no CPU time used for 30 ms):
        MXNet's OpenMP threads keep spinning for up to 200 ms after its last kernel, PyTorch's
        for a shorter while, and either would take the cores from the next side's round."""
        deadline = time.time() + timeout
        last = self._cpu_ticks()
        while last is not None and time.time() < deadline:
            time.sleep(0.03)
            now = self._cpu_ticks()
            if now == last:
                return
            last = now

    def rss_mb(self):
        """Peak resident memory of the worker so far, in MiB."""
        return self._ask({'cmd': 'rss'})['mb']

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({'cmd': 'quit'}) + '\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


class Remote(object):
    """A workload inside a worker: time(number) runs it `number` times there."""

    def __init__(self, worker, key):
        self.worker, self.key = worker, key

    def time(self, number):
        t = self.worker._ask({'cmd': 'time', 'key': self.key, 'number': number})['seconds']
        self.worker.wait_idle()
        return t

    def first_call(self):
        return self.worker._ask({'cmd': 'first', 'key': self.key})['seconds']


def mxnet_python():
    """The Python of an environment with MXNet 1.9.1, or None."""
    cands = [os.environ.get('HG_MXNET_PYTHON'),
             os.path.join(os.path.dirname(os.path.dirname(HERE)), 'mxnet-venv', 'bin', 'python'),
             '/work/mxnet-venv/bin/python']
    for c in cands:
        if c and os.path.exists(c):
            ok = subprocess.run([c, '-c', 'import mxnet'], capture_output=True).returncode == 0
            if ok:
                return c
    return None


_WORKERS = {}


def worker(framework):
    """The shared worker for 'torch' or 'mxnet', started on first use; None if unavailable."""
    if framework not in _WORKERS:
        python = sys.executable if framework == 'torch' else mxnet_python()
        w = None
        if python:
            try:
                w = Worker(framework, python)
            except (PeerError, OSError) as e:
                print('note: no %s peer: %s' % (framework, e), file=sys.stderr)
        _WORKERS[framework] = w
    return _WORKERS[framework]


def close_all():
    for w in _WORKERS.values():
        if w:
            w.close()
    _WORKERS.clear()


# ---- the worker side ----------------------------------------------------------------------

def _peak_rss_mb(resource):
    """This process's peak resident memory: VmHWM (ru_maxrss would include the driver's, which
    Linux carries across the fork and exec that started the worker)."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _serve(framework):
    import resource
    if framework == 'torch':
        import workloads_torch as wl
        mod = None
    else:  # 'mxnet', or 'hybridgluon' in a fresh process (peak memory, first call)
        import importlib
        mod = importlib.import_module(framework)
        import workloads_gluon as wl
    build = wl.WORKLOADS
    fns, firsts = {}, {}
    for line in sys.stdin:
        msg = json.loads(line)
        try:
            cmd = msg['cmd']
            if cmd == 'quit':
                break
            if cmd == 'ping':
                reply = {}
            elif cmd == 'build':
                f = build[msg['workload']]
                fn = f(mod, **msg['kwargs']) if mod is not None else f(**msg['kwargs'])
                t0 = time.perf_counter()
                fn()  # the first call: tracing / planning / allocation
                firsts[len(fns)] = time.perf_counter() - t0
                fns[len(fns)] = fn
                reply = {'key': len(fns) - 1}
            elif cmd == 'time':
                fn, n = fns[msg['key']], msg['number']
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                reply = {'seconds': (time.perf_counter() - t0) / n}
            elif cmd == 'first':
                reply = {'seconds': firsts[msg['key']]}
            elif cmd == 'rss':
                reply = {'mb': _peak_rss_mb(resource)}
            else:
                reply = {'error': 'unknown command %r' % cmd}
        except Exception as e:  # reported to the driver, which says which peer failed
            reply = {'error': '%s: %s' % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'worker':
        sys.path.insert(0, HERE)
        _serve(sys.argv[2])
    else:
        sys.exit(__doc__)
