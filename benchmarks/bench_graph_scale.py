"""The first backward of a deep graph (issue #12, B7): a chain of n element-wise ops (x * 1.0001
and sin, alternating) on a 4-element array, recorded and differentiated once, hybridized (trace,
plan, forward, backward) or op by op on the tape. Each sample is a fresh process per framework
(the first backward is a one-time cost), frameworks interleaved, medians. Work linear in the
depth shows as ~2x per doubling (tests/test_graph_scale.py counts it in instructions).

    python benchmarks/bench_graph_scale.py [--quick]
"""
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402
import peers  # noqa: E402

# Run in the child: prints the seconds from recording to the gradient being ready.
CHILD = r'''
import sys, time
fw, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
mx = __import__('mxnet' if fw == 'mxnet' else 'hybridgluon')
nd, autograd = mx.nd, mx.autograd

class Chain(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        for i in range(n):
            x = F.sin(x) if i % 2 else x * 1.0001
        return x

x = nd.ones((4,))
x.attach_grad()
net = Chain()
if mode == 'hybridized':
    net.hybridize()
t0 = time.perf_counter()
with autograd.record():
    y = net(x)
y.backward()
x.grad.wait_to_read()
print(time.perf_counter() - t0)
'''

CASES = [('hybridized', 10000), ('hybridized', 40000), ('imperative', 10000),
         ('imperative', 100000)]


def _sample(framework, mode, n):
    python = sys.executable if framework == 'hybridgluon' else peers.mxnet_python()
    if python is None:
        return None
    env = dict(os.environ)
    if framework == 'hybridgluon':
        import hybridgluon
        env['PYTHONPATH'] = os.path.dirname(os.path.dirname(hybridgluon.__file__))
    else:
        env.pop('PYTHONPATH', None)
    r = subprocess.run([python, '-c', CHILD, framework, mode, str(n)], capture_output=True,
                       text=True, env=env, cwd=HERE, timeout=900)
    if r.returncode != 0:
        print('note: %s %s %d failed: %s' % (framework, mode, n, r.stderr[-300:]),
              file=sys.stderr)
        return None
    return float(r.stdout.split()[-1])


def run(quick=False):
    fws = ['hybridgluon'] + (['mxnet'] if peers.mxnet_python() else [])
    rows = []
    for mode, n in CASES:
        samples = {f: [] for f in fws}
        for _ in range(1 if quick else 3):
            for f in fws:
                t = _sample(f, mode, n)
                if t is not None:
                    samples[f].append(t)
        res = {f: statistics.median(v) for f, v in samples.items() if v}
        rows.append(('%s chain of %dk ops, record + first backward' % (mode, n // 1000), res,
                     'fresh process per sample'))
    return common.table('first backward of a deep graph (fresh process per framework, median '
                        'of %d)' % (1 if quick else 3), rows, fws)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
