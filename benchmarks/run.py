"""Runs every benchmark and prints (or with --out FILE, writes) the tables, then the rows where
hybridgluon misses its targets (slower than MXNet 1.9.1 or than PyTorch).

    python benchmarks/run.py [--quick] [--out benchmarks/RESULTS.md]

PyTorch and MXNet run in their own processes (peers.py); a peer that is not installed is left
out of the tables and said so.
"""
import argparse
import datetime
import importlib
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peers  # noqa: E402

NAMES = ['bench_ndarray', 'bench_hybridize', 'bench_train', 'bench_lenet', 'bench_conv',
         'bench_zoo', 'bench_predict']


def machine():
    cpu = platform.processor() or ''
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next((l.split(':', 1)[1].strip() for l in f if l.startswith('model name')), cpu)
    except OSError:
        pass
    import hybridgluon as mx
    return '%s, %d threads, Python %s, %s' % (cpu, mx._core.num_threads(),
                                              platform.python_version(), datetime.date.today())


def misses(text, peer_names=('mxnet', 'torch', 'torch.jit')):
    """Rows of the markdown tables in `text` whose 'peer / ours' ratio is below 1."""
    out, head, title = [], None, ''
    for line in text.splitlines():
        if line.startswith('### '):
            title, head = line[4:], None
        elif line.startswith('| ') and head is None:
            head = [c.strip() for c in line.strip('|').split('|')]
        elif line.startswith('|---'):
            continue
        elif line.startswith('| ') and head:
            cells = [c.strip() for c in line.strip('|').split('|')]
            for p in peer_names:
                col = '%s / ours' % p
                if col in head and cells[head.index(col)].endswith('x'):
                    ratio = float(cells[head.index(col)][:-1])
                    if ratio < 1.0:
                        out.append('- %s: %s — %s is faster (%s / ours = %.2fx)'
                                   % (title.split(' (')[0], cells[0], p, p, ratio))
        else:
            head = None if not line.startswith('|') else head
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--quick', action='store_true')
    p.add_argument('--out')
    args = p.parse_args()
    avail = [f for f in ('mxnet', 'torch') if peers.worker(f) is not None]
    parts = ['# hybridgluon benchmarks', '',
             'Machine: ' + machine() + '. A shared 2-core machine: medians of interleaved rounds, '
             'ratios taken within one run.', '',
             'Peers, each in its own process with its default threading: %s.'
             % (', '.join({'mxnet': 'MXNet 1.9.1', 'torch': 'PyTorch CPU'}[f] for f in avail)
                or 'none installed'), '']
    for name in NAMES:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:
            parts += ['(%s not run: %s)' % (name, e), '']
            continue
        parts.append(mod.run(quick=args.quick))
        parts.append('')
    missed = misses('\n'.join(parts))
    parts += ['## Rows where a target is not met', '']
    parts += missed or ['None: hybridgluon is at least as fast as every peer on every row.']
    text = '\n'.join(parts) + '\n'
    print(text)
    if args.out:
        tmp = args.out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, args.out)
    peers.close_all()


if __name__ == '__main__':
    main()
