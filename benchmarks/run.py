"""Runs every benchmark and prints (or with --out FILE, writes) the tables.

    python benchmarks/run.py [--quick] [--out benchmarks/RESULTS.md]
"""
import argparse
import datetime
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_hybridize  # noqa: E402
import bench_ndarray  # noqa: E402
import bench_train  # noqa: E402

BENCHMARKS = [bench_ndarray, bench_hybridize, bench_train]


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--quick', action='store_true')
    p.add_argument('--out')
    args = p.parse_args()
    parts = ['# hybridgluon benchmarks', '', 'Machine: ' + machine(), '']
    for b in BENCHMARKS:
        parts.append(b.run(quick=args.quick))
        parts.append('')
    text = '\n'.join(parts)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
