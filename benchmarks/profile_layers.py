"""Where a model-zoo network's inference time goes, layer by layer: hybridgluon's planned steps
(from its profiler's trace) beside ONNX Runtime's nodes (from its own profiling) for the same
architecture (benchmarks/workloads_torch.py's PyTorch definitions, exported to ONNX as the
run.py peer does). Each step's time is its minimum over the rounds; the tables give the time by
kind of work and, when both sides have as many convolutions, convolution by convolution in
execution order with ONNX Runtime's output shape.

    python benchmarks/profile_layers.py --model resnet18_v1 --batch 1 [--rounds 20]
                                        [--no-ort] [--out FILE]

A diagnostic for issue 16's convolution targets, not a benchmark with targets of its own: the
profilers add their own overhead to every step, so the sums are a little above run.py's times.
"""
import argparse
import collections
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Kinds of work, from hybridgluon's step names (their first op) and ONNX Runtime's op types.
KINDS = [
    ('convolution', ('Convolution', 'Deconvolution'), ('Conv', 'FusedConv', 'NchwcConv',
                                                       'ConvTranspose')),
    ('pooling', ('Pooling',), ('MaxPool', 'AveragePool', 'GlobalAveragePool',
                               'GlobalMaxPool', 'NchwcMaxPool', 'NchwcGlobalAveragePool')),
    ('dense', ('FullyConnected', 'dot'), ('Gemm', 'MatMul', 'FusedGemm', 'FusedMatMul')),
    ('normalisation', ('BatchNorm',), ('BatchNormalization',)),
    ('element-wise', ('elemwise', 'Activation', 'relu', 'clip', 'broadcast', '_plus', 'fused'),
     ('Add', 'Relu', 'Clip', 'Sum', 'Mul')),
]


def _kind_ours(name):
    for kind, ours, _ in KINDS:
        if name.startswith(ours):
            return kind
    return 'other'


def _kind_ort(op):
    for kind, _, theirs in KINDS:
        if op in theirs:
            return kind
    return 'other (%s)' % op


def profile_ours(model, batch, rounds):
    """[(step name, first op, min microseconds)] in execution order, and the names of the
    pointwise steps whose work the depthwise step after them does (exec/fold.c's pairs)."""
    import hybridgluon as mx
    from hybridgluon.gluon.model_zoo import vision
    net = vision.get_model(model)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(np.random.RandomState(0).rand(batch, 3, 224, 224).astype(np.float32))
    for _ in range(3):
        net(x).wait_to_read()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'trace.json')
        mx.profiler.set_config(profile_all=True, filename=path)
        mx.profiler.set_state('run')
        for _ in range(rounds):
            net(x).wait_to_read()
        mx.profiler.set_state('stop')
        mx.profiler.dump()
        with open(path) as f:
            trace = json.load(f)
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    times, first = collections.defaultdict(list), {}
    for e in events:
        if e.get('ph') != 'X':
            continue
        key = (e['name'], json.dumps(e.get('args', {}), sort_keys=True))
        times[key].append(e['dur'])
        first.setdefault(key, e['ts'])
    keys = sorted(times, key=lambda k: first[k])
    plan = net._cached_op.stats()['plan']
    paired = {line.rsplit('-> ', 1)[1].strip() for line in plan.splitlines()
              if 'made inside the depthwise step' in line}
    return [(json.loads(k[1]).get('node', k[0]), k[0], float(min(times[k]))) for k in keys], paired


def profile_ort(model, batch, rounds):
    """[(node name, op type, output shape, min microseconds)] in execution order."""
    import onnxruntime as ort
    import torch
    import workloads_torch as wt
    net = wt.MODELS[model]().eval()
    x = torch.rand(batch, 3, 224, 224)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'model.onnx')
        wt._export_onnx(net, x, path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(os.environ.get('OMP_NUM_THREADS') or os.cpu_count())
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(d, 'ort')
        sess = ort.InferenceSession(path, opts, providers=['CPUExecutionProvider'])
        feed = {sess.get_inputs()[0].name: x.numpy()}
        for _ in range(3 + rounds):
            sess.run(None, feed)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    times, first, info = collections.defaultdict(list), {}, {}
    for e in events:
        if e.get('cat') != 'Node' or not e['name'].endswith('_kernel_time'):
            continue
        name = e['name'][:-len('_kernel_time')]
        times[name].append(e['dur'])
        first.setdefault(name, e['ts'])
        shapes = e['args'].get('output_type_shape') or [{}]
        shape = next(iter(shapes[0].values()), []) if shapes and shapes[0] else []
        info[name] = (e['args'].get('op_name', '?'), shape)
    names = sorted(times, key=lambda n: first[n])
    return [(n, info[n][0], info[n][1], float(min(times[n]))) for n in names]


def report(model, batch, ours, theirs, paired=()):
    lines = ['### %s, batch %d: time by kind of work (ms; minimum per step)' % (model, batch), '',
             '| kind | hybridgluon | steps | ONNX Runtime | nodes | ORT / ours |',
             '|---|---|---|---|---|---|']
    by_ours, n_ours = collections.Counter(), collections.Counter()
    for _, op, us in ours:
        by_ours[_kind_ours(op)] += us
        n_ours[_kind_ours(op)] += 1
    by_ort, n_ort = collections.Counter(), collections.Counter()
    for _, op, _, us in theirs or []:
        by_ort[_kind_ort(op)] += us
        n_ort[_kind_ort(op)] += 1
    named = [k for k, _, _ in KINDS]
    kinds = named + sorted((set(by_ours) | set(by_ort)) - set(named))
    for k in kinds:
        if not (by_ours[k] or by_ort[k]):
            continue
        ratio = '%.2fx' % (by_ort[k] / by_ours[k]) if by_ours[k] and by_ort[k] else ''
        lines.append('| %s | %.3f | %d | %s | %s | %s |' % (
            k, by_ours[k] / 1e3, n_ours[k], '%.3f' % (by_ort[k] / 1e3) if theirs else '-',
            n_ort[k] if theirs else '-', ratio))
    total_ours = sum(by_ours.values())
    total_ort = sum(by_ort.values())
    lines.append('| all | %.3f | %d | %s | %s | %s |' % (
        total_ours / 1e3, len(ours), '%.3f' % (total_ort / 1e3) if theirs else '-',
        len(theirs) if theirs else '-', '%.2fx' % (total_ort / total_ours) if theirs else ''))
    convs = [(n, us) for n, op, us in ours if _kind_ours(op) == 'convolution']
    oconvs = [(shape, us) for _, op, shape, us in theirs or [] if _kind_ort(op) == 'convolution']
    if theirs and len(convs) == len(oconvs):
        lines += ['', '### %s, batch %d: convolution by convolution (us)' % (model, batch), '',
                  'A 1x1 convolution and the depthwise one that alone reads it run as one step '
                  '(exec/fold.c): one row, against the sum of ONNX Runtime\'s two nodes.', '',
                  '| # | hybridgluon step | output shape | hybridgluon | ONNX Runtime | '
                  'ORT / ours |', '|---|---|---|---|---|---|']
        i = 0
        while i < len(convs):
            k, (name, us), (shape, ous) = i, convs[i], oconvs[i]
            label = name.split(' ')[0]
            if set(name.split(' ')) & paired and i + 1 < len(convs):
                label += ' + ' + convs[i + 1][0].split(' ')[0]
                us += convs[i + 1][1]
                ous += oconvs[i + 1][1]
                shape = oconvs[i + 1][0]
                i += 1
            lines.append('| %d | %s | %s | %.1f | %.1f | %.2fx |' % (
                k, label, 'x'.join(str(s) for s in shape), us, ous, ous / us))
            i += 1
    elif theirs:
        lines += ['', '(%d convolution steps here, %d in ONNX Runtime: no layer-by-layer table)'
                  % (len(convs), len(oconvs))]
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='resnet18_v1', choices=['resnet18_v1', 'mobilenetv2_1.0'])
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--no-ort', action='store_true', help='hybridgluon alone')
    ap.add_argument('--out', help='write the tables here too')
    args = ap.parse_args()
    ours, paired = profile_ours(args.model, args.batch, args.rounds)
    theirs = None
    if not args.no_ort:
        try:
            theirs = profile_ort(args.model, args.batch, args.rounds)
        except ImportError as e:
            print('ONNX Runtime side skipped: %s' % e, file=sys.stderr)
    text = report(args.model, args.batch, ours, theirs, paired)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
