"""Whether an environment switch makes a model-zoo network faster, measured in one process: the
network with the switch off (unset) and on (set to the value) in alternating rounds (A B, then
B A), each round timed on its own. The verdict is the median over rounds of the on / off ratio
of each pair of neighbouring rounds, which holds when the machine's speed drifts between
processes or within one (on the 2-core AMD EPYC VMs the same build of MobileNetV2 at batch 1
read 9.5-16 ms from one process to the next). It also checks that both sides give the same
outputs, bit for bit, or prints the largest difference.

    python benchmarks/ab_switch.py --model mobilenetv2_1.0 --batch 1 --var HG_NO_PWDW
                                   [--value 1] [--when plan|run] [--rounds 30]

--when plan (the default) builds two networks, planned with the switch off and on, for switches
read when a graph is planned (HG_NO_PWDW, HG_NO_FUSION); --when run toggles the switch on one
network between rounds, for switches read at every call. Switches read once per process
(HG_NO_WINOGRAD, HG_DW_AVX2, HG_GEMM_KERNEL, ...) cannot be compared this way: they need two
processes. A diagnostic for issue 16, not a benchmark with targets of its own.
"""
import argparse
import os
import statistics
import time

import numpy as np



def build(mx, model, x):
    from hybridgluon.gluon.model_zoo import vision
    net = vision.get_model(model)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(3):  # the first call plans the graph
        net(x).wait_to_read()
    return net


def setenv(var, value):
    if value is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='mobilenetv2_1.0',
                    choices=['resnet18_v1', 'mobilenetv2_1.0'])
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--var', required=True, help='the environment variable')
    ap.add_argument('--value', default='1', help='its value when on (off: unset)')
    ap.add_argument('--when', choices=['plan', 'run'], default='plan')
    ap.add_argument('--rounds', type=int, default=30)
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error('--rounds: at least 2')
    if args.var in os.environ:
        ap.error('%s is set in the environment: unset it, the script sets it' % args.var)
    import hybridgluon as mx
    x = mx.nd.array(np.random.RandomState(0).rand(args.batch, 3, 224, 224).astype(np.float32))
    sides = (None, args.value)
    if args.when == 'plan':
        nets = []
        for v in sides:
            setenv(args.var, v)
            mx.random.seed(0)  # the same weights on both sides
            nets.append(build(mx, args.model, x))
        setenv(args.var, None)
    else:
        nets = [build(mx, args.model, x)] * 2
    calls = 10 if args.batch == 1 else 1
    times, outs = ([], []), [None, None]
    for r in range(args.rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            if args.when == 'run':
                setenv(args.var, sides[i])
            t0 = time.perf_counter()
            for _ in range(calls):
                y = nets[i](x)
            y.wait_to_read()
            times[i].append((time.perf_counter() - t0) / calls * 1e3)
            outs[i] = y.asnumpy()
    setenv(args.var, None)
    ratios = [b / a for a, b in zip(*times)]
    diff = float(np.abs(outs[0] - outs[1]).max())
    print('%s batch %d, %s %s, %d rounds of %d calls (ms per call):' %
          (args.model, args.batch, args.var, 'at planning' if args.when == 'plan' else 'per call',
           args.rounds, calls))
    for name, t in (('unset', times[0]), ('=' + args.value, times[1])):
        print('  %-8s median %8.2f  min %8.2f' % (name, statistics.median(t), min(t)))
    print('  on / off, paired rounds: median %.3f (%.3f .. %.3f)' %
          (statistics.median(ratios), min(ratios), max(ratios)))
    print('  outputs: %s' % ('the same bits' if np.array_equal(outs[0], outs[1])
                             else 'largest difference %g' % diff))


if __name__ == '__main__':
    main()
