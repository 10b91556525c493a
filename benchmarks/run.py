"""Runs every benchmark for hybridgluon, PyTorch CPU and real MXNet 1.9.1 (each peer in its own
worker process, benchmarks/peers.py; MXNet when $HG_MXNET_PYTHON or ../mxnet-venv has it), with
ONNX Runtime and torch.compile beside them on the model-zoo rows (issue 16), and prints (or with
--out FILE, writes) the tables: medians, ratios to each peer, the machine, the date, and the rows
where hybridgluon misses its targets (faster than MXNet 1.9.1 and no slower than PyTorch; on
the model-zoo rows, issue 16's ratios, common.CONV_INFERENCE_TARGETS / CONV_TRAINING_TARGETS).

    python benchmarks/run.py [--quick] [--out benchmarks/RESULTS.md] [--threads N] [--only a,b]

--threads N sets HG_NUM_THREADS and OMP_NUM_THREADS for every framework (default: each its own
default, the cores). --only runs the named benchmarks (module names without bench_).
"""
import argparse
import datetime
import importlib
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# In the order they run. bench_lenet and bench_conv are optional (written separately): a
# missing one is skipped with a note; so is bench_imagerec where OpenCV is not installed.
NAMES = ['ndarray', 'hybridize', 'train', 'lenet', 'conv', 'zoo', 'convtrain', 'predict', 'gemm',
         'graph_scale', 'rnn', 'imagerec']
OPTIONAL = {'lenet', 'conv', 'imagerec'}  # imagerec needs OpenCV (the `image` extra)
# The peers the default targets are stated against, on every row: faster than MXNet, no slower
# than PyTorch (a ratio, peer time / ours, of at least 1). A row may carry its own
# {peer: least ratio} (common.ROWS), which replaces or adds to these: issue 16's model-zoo rows
# (common.CONV_INFERENCE_TARGETS, CONV_TRAINING_TARGETS).
TARGETS = {'mxnet': 'faster than MXNet 1.9.1', 'torch': 'no slower than PyTorch',
           'torch.jit': 'no slower than PyTorch (torch.jit.trace)'}
DEFAULT_RATIOS = {peer: 1.0 for peer in TARGETS}
# How the targets name the peers.
PEER_NAMES = {'mxnet': 'MXNet 1.9.1', 'torch': 'PyTorch', 'torch.jit': 'torch.jit.trace',
              'torch.compile': 'torch.compile', 'onnxruntime': 'ONNX Runtime'}


def machine(threads):
    cpu = platform.processor() or ''
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next((l.split(':', 1)[1].strip() for l in f if l.startswith('model name')), cpu)
    except OSError:
        pass
    import hybridgluon as mx
    versions = ['hybridgluon %s' % _git_rev()]
    try:
        import torch
        versions.append('PyTorch %s (%d threads by default)' % (torch.__version__,
                                                               torch.get_num_threads()))
    except ImportError:
        versions.append('no PyTorch')
    import peers
    mxpy = peers.mxnet_python()
    if mxpy:
        v = subprocess.run([mxpy, '-c', 'import mxnet; print(mxnet.__version__)'],
                           capture_output=True, text=True).stdout.strip()
        versions.append('MXNet %s (%s)' % (v, mxpy))
    else:
        versions.append('no MXNet (set HG_MXNET_PYTHON to a Python with mxnet 1.9.1)')
    try:  # its version without importing it here: the peer runs in a worker (peers.py)
        from importlib import metadata
        versions.append('ONNX Runtime %s (CPU provider, ORT_ENABLE_ALL, %d intra-op threads)'
                        % (metadata.version('onnxruntime'), threads or os.cpu_count()))
    except metadata.PackageNotFoundError:
        versions.append('no ONNX Runtime')
    versions.append('torch.compile: inductor, default mode')
    return ['Machine: %s, %d cores; hybridgluon pool %d threads%s; Python %s; %s.'
            % (cpu, os.cpu_count(), mx._core.num_threads(),
               ' (--threads %d for every framework)' % threads if threads else '',
               platform.python_version(), ', '.join(versions)),
            'Date: %s UTC.' % datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M')]


def _git_rev():
    try:
        return subprocess.run(['git', '-C', HERE, 'log', '-1', '--format=%h'],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return 'unknown revision'


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float('nan')


def _target_text(peer, least):
    if least == DEFAULT_RATIOS.get(peer):
        return TARGETS[peer]
    name = PEER_NAMES.get(peer, peer)
    return 'at least as fast as %s' % name if least == 1.0 else '%.3gx %s' % (least, name)


def missed_targets(rows):
    """Markdown list of the rows where ours misses a target: by default slower than MXNet or
    than PyTorch; on a row that carries {peer: least ratio}, those ratios instead for those
    peers (the defaults still hold for the others)."""
    out = []
    for row in rows:
        title, label, res, ours = row[:4]
        if ours not in res:
            continue
        ratios = dict(DEFAULT_RATIOS)
        ratios.update((row[4] if len(row) > 4 else None) or {})
        for peer, least in ratios.items():
            if peer in res:
                ratio = res[peer] / res[ours]
                if ratio < least:
                    out.append('- %s (%s): %s, %.2fx (%s %.4g ms, ours %.4g ms)'
                               % (label, title.split(' (')[0], _target_text(peer, least), ratio,
                                  peer, res[peer] * 1e3, res[ours] * 1e3))
    return out


def _targets_16():
    import common

    def say(targets):
        return ' and '.join(_target_text(p, r) for p, r in targets.items())
    return ('Issue 16, on the model-zoo rows (resnet18_v1, mobilenetv2_1.0): inference at batch 1 '
            'and 32 %s; a training step at batch 16 %s.'
            % (say(common.CONV_INFERENCE_TARGETS), say(common.CONV_TRAINING_TARGETS)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--quick', action='store_true')
    p.add_argument('--out')
    p.add_argument('--threads', type=int)
    p.add_argument('--only', help='comma-separated: ' + ','.join(NAMES))
    args = p.parse_args()
    if args.threads:  # before hybridgluon, torch or a peer worker starts
        for k in ('HG_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
            os.environ[k] = str(args.threads)
    names = args.only.split(',') if args.only else NAMES
    import common
    import peers
    head = ['# hybridgluon benchmarks', ''] + machine(args.threads) + [
        '',
        'The machine is shared (2 cores, with other builds and test runs going on at the same '
        'time): every row runs the frameworks interleaved, round by round, and reports medians, '
        'but absolute times are noisy and ratios near 1.0 are within the noise. Ratios are '
        'peer time / hybridgluon time: > 1 means hybridgluon is faster. MXNet, PyTorch, and on '
        'the model-zoo rows ONNX Runtime and torch.compile, run in their own worker processes '
        'with their default threading (benchmarks/peers.py). '
        'PyTorch\'s default OpenMP team (one thread per core) slows down far more than the others '
        'when another process takes a core (a barrier waits for the descheduled thread), so on '
        'this shared machine its long rows (the epoch, resnet18 at batch 1) can read several times '
        'slower than the same workload alone.',
        '']
    parts = []
    t_all, load0 = time.time(), _load()
    notes = []
    for name in names:
        try:
            mod = importlib.import_module('bench_' + name)
        except ImportError as e:
            if name in OPTIONAL:
                notes.append('bench_%s.py: not run (%s).' % (name, e))
                print('note: skipping bench_%s: %s' % (name, e), file=sys.stderr)
                continue
            raise
        t0 = time.time()
        print('running bench_%s ...' % name, file=sys.stderr, flush=True)
        parts += [mod.run(quick=args.quick), '']
        print('  bench_%s: %.0f s' % (name, time.time() - t0), file=sys.stderr, flush=True)
    peers_here = common.peers_available()
    missing = dict(peers.MISSING)
    peers.close_all()
    missed = missed_targets(common.ROWS)
    summary = ['## Targets not met', '',
               'Targets (issue 7): hybridized inference and training faster than MXNet 1.9.1 and '
               'no slower than PyTorch CPU on every row. ' + _targets_16() + ' Rows where the '
               'median says otherwise (every table, NDArray per-op rows included):', '']
    summary += missed or ['- none']
    absent = [p for p in ('mxnet', 'torch') if p not in peers_here]
    absent += [p for p in missing if p not in absent]
    if absent:
        summary += ['', 'Not compared (peer not installed): %s.' % ', '.join(absent)]
    summary += [''] + notes + ['', 'Run: `python benchmarks/run.py%s%s` took %.0f s; load average '
                               '%.1f at the start, %.1f at the end.'
                               % (' --quick' if args.quick else '',
                                  ' --threads %d' % args.threads if args.threads else '',
                                  time.time() - t_all, load0, _load()), '']
    # The GPU rows come from a machine with a GPU (bench_gpu.py writes them there); the
    # distributed rows from bench_dist.py, which starts its own MPI jobs (mpirun).
    for extra in ('RESULTS_GPU.md', 'RESULTS_DIST.md'):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), extra)
        if os.path.exists(path):
            with open(path) as f:
                parts += [f.read(), '']
    text = '\n'.join(head + summary + ['## Tables', ''] + parts)
    print(text)
    if args.out:  # written whole or not at all
        tmp = args.out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text + '\n')
        os.replace(tmp, args.out)


if __name__ == '__main__':
    main()
