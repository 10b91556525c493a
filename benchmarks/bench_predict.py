"""C predictor benchmark (issue: deployment): forward latency of exported models through
hybridgluon/predict.h from a C program, beside the same model called from Python (the
hybridized block). Builds benchmarks/c_predict_bench.c with the system compiler and
`python -m hybridgluon.config`, exports the models into a temporary directory, runs both.

    python benchmarks/bench_predict.py [--quick]
    HG_NUM_THREADS=1 python benchmarks/bench_predict.py    # both sides on one thread

Models: the seeds' MLP (512-256-128-2, Dense relu) at batch 1 (target: <= 5 us median through
the C predictor), the seeds' LeNet (hybridgluon.demo.Net) at batch 1 and 64.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare, fmt_time  # noqa: E402

import hybridgluon as mx  # noqa: E402
from hybridgluon.demo import Net  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _config(*opts):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env['PYTHONPATH'] = root + os.pathsep + env.get('PYTHONPATH', '')
    return subprocess.run([sys.executable, '-m', 'hybridgluon.config'] + list(opts), env=env,
                          capture_output=True, text=True, check=True).stdout.split()


def build(out_dir):
    """Compiles c_predict_bench.c; returns the program's path."""
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    exe = os.path.join(out_dir, 'c_predict_bench')
    subprocess.run([cc, '-O2', '-std=c11', '-o', exe, os.path.join(HERE, 'c_predict_bench.c')] +
                   _config('--cflags', '--libs'), check=True)
    return exe


def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'), nn.Dense(2))
    net.initialize()
    return net


def _lenet():
    net = Net()
    net.initialize(mx.init.Xavier())
    return net


def run(quick=False):
    """Each model: `rounds` rounds, each running the C program (3 samples) and then the Python
    call (3 samples), so load from elsewhere on the machine hits both alike; medians of all."""
    number, rounds = (300, 3) if quick else (2000, 7)
    tmp = tempfile.mkdtemp(prefix='bench_predict_')
    try:
        exe = build(tmp)
        cases = [('MLP 512-256-128-2, batch 1', _mlp, (1, 512), 5e-6),
                 ('LeNet, batch 1', _lenet, (1, 1, 28, 28), None),
                 ('LeNet, batch 64', _lenet, (64, 1, 28, 28), None)]
        lines = ['### C predictor vs the hybridized block from Python (medians per forward)', '',
                 '| model | C forward | C set_input + forward + get_output | Python net(x) | '
                 'Python / C forward | note |', '|---|---|---|---|---|---|']
        for label, make, shape, target in cases:
            net = make()
            net.hybridize()
            x = mx.nd.random.uniform(-1, 1, shape=shape)
            net(x)
            prefix = os.path.join(tmp, label.split(',')[0].split()[0].lower())
            net.export(prefix)
            n = max(10, number // (100 if shape[0] > 1 else 1))
            c_fwd, c_full, py = [], [], []
            for _ in range(rounds):
                out = subprocess.run([exe, prefix + '-symbol.json', prefix + '-0000.params',
                                      str(n), '3'] + [str(d) for d in shape],
                                     capture_output=True, text=True, check=True).stdout
                vals = dict(l.split() for l in out.splitlines())
                c_fwd.append(float(vals['forward_us']) * 1e-6)
                c_full.append(float(vals['full_us']) * 1e-6)
                py.append(compare({'py': lambda: net(x)}, 3, n)['py'])
            c_fwd, c_full, py = (statistics.median(v) for v in (c_fwd, c_full, py))
            note = ''
            if target:
                note = 'target <= %s: %s' % (fmt_time(target),
                                             'met' if c_fwd <= target else 'NOT met')
            lines.append('| %s | %s | %s | %s | %.2fx | %s |' % (
                label, fmt_time(c_fwd), fmt_time(c_full), fmt_time(py), py / c_fwd, note))
        lines.append('')
        lines.append('Threads: %d (HG_NUM_THREADS / OMP_NUM_THREADS, else the cores).'
                     % mx._core.num_threads())
        return '\n'.join(lines)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
