"""Model-zoo inference (issue: real models): resnet18_v1 and mobilenetv2_1.0 at 224x224, batch 1
and 32, hybridized (static_alloc, static_shape) against real MXNet 1.9.1's own model zoo
(hybridized the same way) and PyTorch CPU (the same architectures in torch.nn, inference_mode),
each peer in its own process (peers.py); then the first (tracing) call, and the peak resident
memory of a fresh process that builds the model and runs it.

Issue 16 adds the compiled inference engines a user would deploy these models with instead of
eager PyTorch, each in its own worker: ONNX Runtime (the same torch.nn definitions exported with
torch.onnx.export; every graph optimisation, the CPU provider, a thread per core) and
torch.compile (inductor, default mode, compiled and warmed up before the timing). Their rows
carry issue 16's targets (common.CONV_INFERENCE_TARGETS). The first-call and memory table keeps
to MXNet and eager PyTorch: compiling takes tens of seconds, a different question.

    python benchmarks/bench_zoo.py [--quick]
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import compare, fmt_time, peer_workload, peers_available, table  # noqa: E402
import peers  # noqa: E402
import workloads_gluon as wg  # noqa: E402

import hybridgluon as mx  # noqa: E402

MODELS = ['resnet18_v1', 'mobilenetv2_1.0']


COMPILED = ('onnxruntime', 'torch.compile')


def _speed(quick):
    peers_ = ['hybridgluon'] + peers_available(COMPILED)
    rows = []
    notes0 = len(common.NOTES)
    for name in MODELS:
        for batch in (1, 32):
            # a batch-32 resnet18 forward takes seconds on a loaded 2-core machine
            rep, number = (3, 1 if batch > 1 else 3) if quick else (5, 1 if batch > 1 else 5)
            cases = {'hybridgluon': wg.zoo_model(mx, name, batch=batch)}
            for peer in peers_[1:]:
                cases[peer] = peer_workload(peer, 'zoo_model', name=name, batch=batch)
            res = compare(cases, rep, number)
            common.free(cases)
            rows.append(('%s, 224x224, batch %d' % (name, batch), res,
                         '%.1f images/s' % (batch / res['hybridgluon']),
                         common.CONV_INFERENCE_TARGETS))
    text = table('model-zoo inference (medians; ratio > 1 means hybridgluon is faster)', rows,
                 peers_)
    missing = [p for p in COMPILED if p not in peers_]
    notes = ['%s: not compared (%s).' % (p, peers.MISSING.get(p, 'unavailable'))
             for p in missing] + [
        'Not compared: %s.' % n for n in common.NOTES[notes0:]]
    return text + ''.join('\n\n' + n for n in notes)


def _fresh(framework, name, number):
    """(first call seconds, peak RSS MiB) of a fresh `framework` process running `name` at
    batch 1, or None when that framework is not here."""
    python = {'hybridgluon': sys.executable, 'torch': sys.executable,
              'mxnet': peers.mxnet_python()}[framework]
    if python is None or (framework == 'torch' and 'torch' not in peers_available()):
        return None
    w = peers.Worker(framework, python)
    try:
        r = w.build('zoo_model', name=name, batch=1)
        r.time(number)
        return r.first_call(), w.rss_mb()
    finally:
        w.close()


def _first_and_memory(quick):
    fws = ['hybridgluon'] + peers_available()
    lines = ['### first call and peak memory (fresh process per framework; batch 1, 224x224)', '',
             '| model | ' + ' | '.join('%s first call' % f for f in fws) + ' | ' +
             ' | '.join('%s peak RSS' % f for f in fws) + ' |',
             '|---|' + '---|' * (2 * len(fws))]
    for name in MODELS:
        # a fresh process per sample, frameworks interleaved; medians
        samples = {f: [] for f in fws}
        for _ in range(1 if quick else 3):
            for f in fws:
                r = _fresh(f, name, 1)
                if r:
                    samples[f].append(r)
        got = {f: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
               for f, v in samples.items() if v}
        got.update({f: None for f in fws if f not in got})
        # the first call counts for run.py's targets like the timed rows (lower is better)
        common.ROWS.append(('first call (fresh process)', '%s, batch 1, first call' % name,
                            {f: got[f][0] for f in fws if got[f]}, 'hybridgluon', None))
        firsts = [fmt_time(got[f][0]) if got[f] else '-' for f in fws]
        rss = ['%.0f MiB' % got[f][1] if got[f] else '-' for f in fws]
        lines.append('| %s | %s | %s |' % (name, ' | '.join(firsts), ' | '.join(rss)))
    lines += ['', 'Medians over %d fresh processes per framework. ' % (1 if quick else 3) +
              'First call: hybridgluon and MXNet trace and plan the graph then run it; '
              'PyTorch runs eagerly (its first call allocates). Peak RSS: VmHWM of the '
              'process after importing the framework, building the model with random weights '
              'and running it.', '',
              'mobilenetv2_1.0\'s layers infer their input channels, so (as in MXNet) its first '
              'call also runs the deferred parameter initialisation: about 3.5 M random weights '
              'written into fresh memory. PyTorch initialises at construction, outside this '
              'timing. Measured on the 2-core VM these benchmarks were written on: that first '
              'call takes about 6,000 page faults whose kernel time varies from process to '
              'process (16 to 40 ms), and the call from about 52 to 93 ms, so the median of '
              'three processes moves by tens of milliseconds from one run to the next.']
    return '\n'.join(lines)


def run(quick=False):
    return _speed(quick) + '\n\n' + _first_and_memory(quick)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
    peers.close_all()
