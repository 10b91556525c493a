"""The DataLoader's worker processes: a small process pool whose shutdown is bounded in time and
which never leaves a worker behind.

multiprocessing.Pool shares one task queue and one result queue among its workers, each guarded
by a lock that lives in shared memory; `Pool.terminate()` with batches in flight can wait forever
for a lock that a worker holds while it blocks writing a large result nobody reads any more, and
killing a worker that holds such a lock leaves it taken for good. Here every worker has its own
pipe to the parent and shares no lock with anything, so the parent may kill a worker at any
moment: shutdown closes the pipes, sends SIGTERM, waits at most `_JOIN_S` seconds and then sends
SIGKILL.

Task k goes to worker k % n; each worker answers its tasks in order, so the parent reads the
result of a task from that worker's pipe and keeps any result read early for its task id.
Results of tasks that an abandoned iterator no longer wants are dropped when read.

A worker exits when its parent dies: on Linux through PR_SET_PDEATHSIG (SIGKILL; only when the
pool is started from the main thread, because the signal follows the thread that forked), and
everywhere through a watchdog thread that checks the parent's pid every `_WATCHDOG_S` seconds
and through end-of-file on its pipe.
"""
import ctypes
import os
import pickle
import random as _pyrandom
import signal
import sys
import threading
import time
import traceback

import numpy as _np

from ...base import MXNetError

_JOIN_S = 2.0
_WATCHDOG_S = 0.25
_PR_SET_PDEATHSIG = 1


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (the __cause__ of the re-raised one)."""

    def __init__(self, tb):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return self.tb


def _exit_with_parent(parent_pid, use_pdeathsig):
    """Makes this worker exit as soon as its parent process is gone."""
    if use_pdeathsig and sys.platform.startswith('linux'):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)

    def watch():
        while True:
            time.sleep(_WATCHDOG_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name='dataloader-parent-watchdog', daemon=True).start()


def _seed_worker(seed):
    """Forked workers would otherwise all repeat the parent's random transforms."""
    from ... import random as mx_random
    seed = (seed + os.getpid() * 7919) & 0x7FFFFFFF
    _pyrandom.seed(seed)
    _np.random.seed(seed)
    mx_random.seed(seed)


def _error_payload(tid, err):
    tb = ''.join(traceback.format_exception(type(err), err, err.__traceback__))
    try:
        return pickle.dumps((tid, False, (err, tb)), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that does not pickle: keep its type name and message
        return pickle.dumps((tid, False, (RuntimeError('%s: %s' % (type(err).__name__, err)),
                                          tb)), pickle.HIGHEST_PROTOCOL)


def _worker_main(conn, close_in_child, parent_pid, use_pdeathsig, seed, work_fn):
    """A worker's life: receive (task id, argument), send back (task id, ok, result) pickled,
    until the parent sends None, closes the pipe or dies."""
    _exit_with_parent(parent_pid, use_pdeathsig)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for c in close_in_child:  # the parent's ends of the pipes, so that EOF reaches us
        c.close()
    _seed_worker(seed)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        tid, arg = msg
        try:
            data = pickle.dumps((tid, True, work_fn(arg)), pickle.HIGHEST_PROTOCOL)
        except BaseException as err:  # noqa: B902 - everything goes back to the parent
            data = _error_payload(tid, err)
        try:
            conn.send_bytes(data)
        except (BrokenPipeError, OSError):
            break
    conn.close()


class WorkerPool:
    """`n` worker processes running `work_fn(arg)`; `submit` and `get` from any thread."""

    def __init__(self, ctx, n, work_fn, seed):
        self._lock = threading.RLock()
        self._conns, self._procs = [], []
        self._next_tid = 0
        self._owner = {}      # task id -> worker index, for tasks not yet read
        self._ready = {}      # task id -> (ok, value) read before it was asked for
        self._dropped = set()  # task ids whose results nobody wants
        self._closed = False
        is_main = threading.current_thread() is threading.main_thread()
        fork = ctx.get_start_method() == 'fork'
        try:
            for _ in range(n):
                parent_end, child_end = ctx.Pipe(duplex=True)
                self._conns.append(parent_end)
                close_in_child = list(self._conns) if fork else []
                p = ctx.Process(target=_worker_main, daemon=True,
                                args=(child_end, close_in_child, os.getpid(), is_main, seed,
                                      work_fn))
                p.start()
                child_end.close()
                self._procs.append(p)
        except BaseException:
            self.shutdown()
            raise

    @property
    def pids(self):
        return [p.pid for p in self._procs]

    def submit(self, arg):
        """Sends a task; returns its id."""
        with self._lock:
            if self._closed:
                raise MXNetError('DataLoader: the worker processes have been shut down')
            tid = self._next_tid
            self._next_tid += 1
            w = tid % len(self._conns)
            self._drain(w)  # a worker blocked on a full pipe would stop reading its tasks
            self._owner[tid] = w
            self._conns[w].send((tid, arg))
            return tid

    def get(self, tid, timeout):
        """The result of task `tid`, re-raising the worker's exception; waits at most
        `timeout` seconds (TimeoutError) and raises MXNetError if the worker died."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while tid not in self._ready:
                w = self._owner[tid]
                left = deadline - time.monotonic()
                if left <= 0 or not self._conns[w].poll(left):
                    raise TimeoutError(tid)
                self._read(w)
            ok, value = self._ready.pop(tid)
        if ok:
            return value
        err, tb = value
        raise err from _RemoteTraceback('\n"""\n%s"""' % tb)

    def discard(self, tids):
        """Forgets tasks whose results are no longer wanted."""
        with self._lock:
            for tid in tids:
                if self._ready.pop(tid, None) is None and tid in self._owner:
                    self._dropped.add(tid)

    def _read(self, w):
        conn = self._conns[w]
        try:
            tid, ok, value = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            p = self._procs[w]
            p.join(0.1)
            raise MXNetError('DataLoader: worker process %d (pid %s) exited unexpectedly '
                             '(exit code %s)' % (w, p.pid, p.exitcode)) from None
        self._owner.pop(tid, None)
        if tid in self._dropped:
            self._dropped.discard(tid)
        else:
            self._ready[tid] = (ok, value)

    def _drain(self, w):
        while self._conns[w].poll(0):
            self._read(w)

    def shutdown(self):
        """Stops every worker, mid-batch or not, within about 2 * _JOIN_S seconds."""
        with self._lock:
            self._closed = True
            conns, self._conns = self._conns, []
            procs, self._procs = self._procs, []
            self._ready.clear()
        for c in conns:
            c.close()  # an idle worker reads EOF, a busy one fails to write its result
        for p in procs:
            if p.exitcode is None:
                p.terminate()
        deadline = time.monotonic() + _JOIN_S
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.exitcode is None:
                p.kill()
                p.join(_JOIN_S)
