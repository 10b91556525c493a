"""Peer frameworks in their own processes, so that each runs with its default threading.

PyTorch's OpenMP threads spin between kernels by default; inside our process they would take
the cores from ours (and with OMP_WAIT_POLICY=PASSIVE they sleep, which makes PyTorch itself
2-3x slower on small kernels). Real MXNet 1.9.1 needs NumPy < 1.24 and lives in its own virtual
environment. So each peer is a worker process: the driver asks it to build a workload
(workloads_torch.py, or workloads_gluon.py under MXNet) and then to time `number` calls; rounds
alternate between frameworks (common.compare), with a short pause so that the threads of the
side that just ran have gone to sleep.

The peers: 'torch' (PyTorch eager), 'mxnet', and issue 16's compiled inference engines
'torch.compile' (inductor, default mode) and 'onnxruntime' (the PyTorch definitions exported with
torch.onnx.export, run by ONNX Runtime's CPU provider). Those two run PyTorch's workloads
(workloads_torch.PEERS) in workers of their own, not in the eager one: compiled code, ONNX
Runtime's thread pool and the exporter's state then stay out of the eager timings, and each
engine gets its threads to itself the way a user's process would.

    python benchmarks/peers.py worker torch|torch.compile|onnxruntime|mxnet|hybridgluon

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
        try:
            self._ask({'cmd': 'ping'})
        except PeerError:  # the framework is not there: no process left waiting on its stdin
            self.close()
            raise

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

    def free(self, key):
        """Drops a workload in the worker: a training step at batch 32 holds gigabytes (MXNet's
        static_alloc pool, the momentum buffers), and the workers live for the whole run."""
        self._ask({'cmd': 'free', 'key': key})

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

    def free(self):
        self.worker.free(self.key)


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
# Why a peer asked for could not start: {framework: reason}, for run.py's summary.
MISSING = {}


def worker(framework):
    """The shared worker for 'torch', 'torch.compile', 'onnxruntime' or 'mxnet', started on first
    use; None if unavailable (the framework does not import there: the reason is in MISSING)."""
    if framework not in _WORKERS:
        python = mxnet_python() if framework == 'mxnet' else sys.executable
        w = None
        if python:
            try:
                w = Worker(framework, python)
            except (PeerError, OSError) as e:
                MISSING[framework] = str(e)
                print('note: no %s peer: %s' % (framework, e), file=sys.stderr)
        else:
            MISSING[framework] = 'no Python with it (set HG_MXNET_PYTHON)'
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


def _protocol_stdout():
    """The replies' own copy of stdout; file descriptor 1 then goes to stderr, so that whatever
    a framework prints (the ONNX exporter's progress lines, a C library's messages) cannot
    corrupt the protocol."""
    out = os.fdopen(os.dup(1), 'w', buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return out


def _serve(framework):
    import gc
    import resource
    out = _protocol_stdout()
    build, mod, unavailable = {}, None, None
    try:
        if framework in ('torch', 'torch.compile', 'onnxruntime'):
            import workloads_torch as wl
            wl.require(framework)
            build = wl.PEERS[framework]
        else:  # 'mxnet', or 'hybridgluon' in a fresh process (peak memory, first call)
            import importlib
            mod = importlib.import_module(framework)
            import workloads_gluon as wl
            build = wl.WORKLOADS
    except ImportError as e:  # answered to the ping: the driver skips this peer with a note
        unavailable = '%s: %s' % (type(e).__name__, e)
    fns, firsts, n_built = {}, {}, 0
    for line in sys.stdin:
        msg = json.loads(line)
        try:
            cmd = msg['cmd']
            if cmd == 'quit':
                break
            if unavailable:
                reply = {'error': unavailable}
            elif cmd == 'ping':
                reply = {}
            elif cmd == 'build':
                if msg['workload'] not in build:
                    raise ValueError('no workload %r for %s' % (msg['workload'], framework))
                f = build[msg['workload']]
                fn = f(mod, **msg['kwargs']) if mod is not None else f(**msg['kwargs'])
                t0 = time.perf_counter()
                fn()  # the first call: tracing / planning / allocation
                firsts[n_built] = time.perf_counter() - t0
                fns[n_built] = fn
                reply = {'key': n_built}
                n_built += 1
            elif cmd == 'free':
                del fns[msg['key']]
                gc.collect()
                reply = {}
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
        out.write(json.dumps(reply) + '\n')
        out.flush()


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'worker':
        sys.path.insert(0, HERE)
        _serve(sys.argv[2])
    else:
        sys.exit(__doc__)
