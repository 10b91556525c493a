"""Side-by-side timing helpers: runs the peers' variants interleaved, reports medians and ratios."""
import os
import statistics
import sys
import time

try:  # an installed hybridgluon, else the in-place build of this checkout
    import hybridgluon  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def per_call(fn, number):
    """Seconds per call of fn over `number` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def _timed(fn, number):
    if hasattr(fn, 'time'):  # a workload in a peer's process (peers.Remote)
        return fn.time(number)
    return per_call(fn, number)


def compare(cases, repeats=7, number=1000, warmup=None):
    """cases: {peer: fn or peers.Remote}. Runs every peer once per round (interleaved, so machine
    noise hits all alike) and returns {peer: median seconds per call}. A short pause before each
    peer's turn lets the threads of the one before go to sleep. warmup: calls per peer before
    the rounds (default a tenth of `number`, at least one); rows of a few calls, each seconds
    long, name it, since a tenth of one call would be a single warm-up."""
    cases = {k: v for k, v in cases.items() if v is not None}
    samples = {k: [] for k in cases}
    for fn in cases.values():  # warm-up
        _timed(fn, warmup if warmup is not None else max(1, number // 10))
    for _ in range(repeats):
        for k, fn in cases.items():
            time.sleep(0.05)
            samples[k].append(_timed(fn, number))
    return {k: statistics.median(v) for k, v in samples.items()}


# Peer workloads that failed to build in this process, one line each (peer_workload): the
# benchmarks that expect failures (a compiled backward) print them under their tables.
NOTES = []


def peer_workload(framework, workload, **kwargs):
    """A workload built in a peer process ('torch', 'torch.compile', 'onnxruntime', 'mxnet'), or
    None when that peer is not installed, or when the workload fails there: then the reason goes
    to stderr and, its first line, to NOTES."""
    import peers
    w = peers.worker(framework)
    if w is None:
        return None
    try:
        return w.build(workload, **kwargs)
    except peers.PeerError as e:
        print('note: %s' % e, file=sys.stderr)
        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
        args = ', '.join('%s=%s' % kv for kv in sorted(kwargs.items()))
        NOTES.append('%s %s(%s) failed: %s' % (framework, workload, args,
                                              first[:300] + ('...' if len(first) > 300 else '')))
        return None


def free(cases):
    """Drops the peers' workloads among cases (peers.Remote.free) once their row is timed: the
    workers live for the whole run, and big models would pile up in them."""
    for fn in cases.values():
        if hasattr(fn, 'free'):
            fn.free()


def fmt_time(s):
    if s < 1e-6:
        return '%.0f ns' % (s * 1e9)
    if s < 1e-3:
        return '%.2f us' % (s * 1e6)
    return '%.2f ms' % (s * 1e3)


# Every row a table() printed in this process: (title, label, {peer: seconds}, ours, targets),
# read by run.py to list the rows where hybridgluon misses its targets. targets: None for the
# defaults (run.TARGETS: faster than MXNet, no slower than PyTorch), or {peer: least ratio}
# that replaces or adds to them for that row.
ROWS = []

# Issue 16's targets for the model-zoo convolutional networks (resnet18_v1, mobilenetv2_1.0),
# {peer: least ratio of peer time to ours}; their rows carry them (bench_zoo, bench_convtrain).
# Inference at batch 1 and 32: at least as fast as ONNX Runtime, 1.3x torch.compile. A training
# step at batch 16: 1.5x MXNet 1.9.1, 1.2x PyTorch.
CONV_INFERENCE_TARGETS = {'onnxruntime': 1.0, 'torch.compile': 1.3}
CONV_TRAINING_TARGETS = {'mxnet': 1.5, 'torch': 1.2}


def table(title, rows, peers, ours='hybridgluon'):
    """rows: [(label, {peer: seconds}, note)] or [(label, {peer: seconds}, note, targets)], with
    targets as in ROWS. Ratios are peer time / our time (>1: we are faster)."""
    ROWS.extend((title, row[0], row[1], ours, row[3] if len(row) > 3 else None) for row in rows)
    others = [p for p in peers if p != ours]
    head = '| benchmark | ' + ' | '.join(peers) + ' | ' + ' | '.join(
        '%s / ours' % p for p in others) + ' | note |'
    lines = ['### ' + title, '', head, '|' + '---|' * (2 + len(peers) + len(others))]
    for label, res, note in (row[:3] for row in rows):
        cells = [fmt_time(res[p]) if p in res else '-' for p in peers]
        ratios = ['%.2fx' % (res[p] / res[ours]) if p in res else '-' for p in others]
        lines.append('| %s | %s | %s | %s |' % (label, ' | '.join(cells), ' | '.join(ratios), note))
    return '\n'.join(lines)


def peers_available(extra=()):
    """The peer frameworks present: a subset of ['mxnet', 'torch'] (see peers.py), then of
    `extra` (e.g. issue 16's 'onnxruntime', 'torch.compile'), which only the tables that
    compare with them ask for: each is one more worker process to start."""
    import peers
    return [f for f in ('mxnet', 'torch') + tuple(extra) if peers.worker(f) is not None]
