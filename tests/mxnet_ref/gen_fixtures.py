"""Writes the MXNet 1.9.1 conformance fixtures. Run it with real MXNet, e.g.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_fixtures.py --ops --models small --names

--ops-only LIST   --ops for these ops only (comma-separated), leaving the other files as they
                  are (cases appended at the end of op_cases.py do not change the others).
--ops             ops/<op>.npz: for every case of op_cases.py, the inputs, MXNet's outputs, the
                  random head gradients and MXNet's input gradients (and mutated inputs);
                  mxnet_ops.txt: every op name MXNet registers.
--models LIST     for each model (comma-separated names, 'small' = the committed ones, 'all'):
                  MXNet's `export` with random weights (fixed seed), `save_parameters` of the
                  same weights, an input and MXNet's output. Small models go to models/
                  (committed), the others to generated/models/ (git-ignored).
--names           models_params.json: collect_params() names and shapes of every zoo model.
--layers          layers.npz: outputs of gluon.contrib.nn layers (PixelShuffle*D,
                  HybridConcurrent with Identity) on random inputs.
--gluon           losses.npz, initializers.npz, metrics.json: gluon.loss, mx.init and mx.metric
                  (gen_gluon_ref.py, which also runs on its own).
--out DIR         write under DIR instead of this folder.

Fixture format (.npz, read with allow_pickle=False): 'meta' holds UTF-8 JSON as uint8; arrays
are named c<case>_x<i> (inputs), c<case>_y<k> (outputs), c<case>_dy<k> (head gradients),
c<case>_dx<i> (input gradients), c<case>_m<i> (inputs after an in-place update).
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import op_cases  # noqa: E402

MODELS = ['resnet18_v1', 'resnet34_v1', 'resnet50_v1', 'resnet18_v2', 'resnet50_v2', 'vgg11',
          'vgg16', 'vgg11_bn', 'alexnet', 'densenet121', 'squeezenet1.0', 'squeezenet1.1',
          'mobilenet1.0', 'mobilenet0.25', 'mobilenetv2_1.0', 'inceptionv3']
SMALL_MODELS = ['mobilenet0.25', 'squeezenet1.1']   # committed (about 7 MB together)
BATCH = 2
# Outputs past the first that get a zero head gradient: MXNet's backward ignores them
# (indices of topk, the mean/var outputs of the normalisation ops).
FIRST_OUTPUT_ONLY = {'topk', 'BatchNorm', 'LayerNorm', 'GroupNorm'}


def _jsonable(v):
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    return v


def _invoke_raw(name):
    """The op called with every input positionally, through MXNet's C API: the nd wrapper of
    a legacy op with auxiliary states (BatchNorm_v1) has no slots for them."""
    import ctypes
    from mxnet._ctypes.ndarray import _imperative_invoke
    handle = mx.base.OpHandle()
    mx.base.check_call(mx.base._LIB.NNGetOpHandle(mx.base.c_str(name), ctypes.byref(handle)))
    return lambda *xs, **kw: _imperative_invoke(handle.value, list(xs), list(kw),
                                                [str(v) for v in kw.values()], None, 0, 0)


def _mx_op(name):
    if name == 'BatchNorm_v1':
        return _invoke_raw(name)
    fn = getattr(mx.nd, name, None)
    if fn is None and name.startswith('_linalg_'):  # MXNet has them in nd.linalg only
        fn = getattr(mx.nd.linalg, name[len('_linalg_'):])
    if fn is None and name.startswith('_contrib_'):  # mx.nd has them as contrib.X only
        fn = getattr(mx.nd.contrib, name[len('_contrib_'):], None)
    if fn is None and name.startswith('_image_'):  # and these as image.X only
        fn = getattr(mx.nd.image, name[len('_image_'):], None)
    if fn is None:
        fn = getattr(mx.nd._internal, name)
    return fn


def _run_case(case, rng):
    """MXNet's outputs, head gradients, input gradients and mutated inputs of one case."""
    fn = _mx_op(case.op)
    xs = [mx.nd.array(a, dtype=a.dtype) for a in case.inputs]
    for j in case.wrt:
        xs[j].attach_grad()
    if case.grad:
        with mx.autograd.record(train_mode=case.train):
            out = fn(*xs, **case.attrs)
    else:
        scope = mx.autograd.train_mode() if case.train else mx.autograd.predict_mode()
        with scope:
            out = fn(*xs, **case.attrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    ys = [o.asnumpy() for o in outs]
    dys, dxs = [], []
    if case.grad:
        for k, y in enumerate(ys):
            if k > 0 and case.op in FIRST_OUTPUT_ONLY:
                dys.append(np.zeros_like(y))
            else:
                dys.append(rng.standard_normal(y.shape).astype(y.dtype))
        mx.autograd.backward(outs, [mx.nd.array(d, dtype=d.dtype) for d in dys])
        dxs = [xs[j].grad.asnumpy() for j in case.wrt]
    ms = [xs[j].asnumpy() for j in case.mutates]
    return ys, dys, dxs, ms


def gen_ops(out_dir, only=None):
    cases = op_cases.build_cases()
    by_op = {}
    for case in cases:
        if only is None or case.op in only:
            by_op.setdefault(case.op, []).append(case)
    cases = [c for cs in by_op.values() for c in cs]
    os.makedirs(out_dir, exist_ok=True)
    total = 0
    for op, op_cases_ in sorted(by_op.items()):
        # Head gradients from a stream of the op's own: a case added to one op leaves the
        # other ops' fixtures as they were.
        rng = np.random.default_rng([7, zlib.crc32(op.encode('utf-8'))])
        arrays, metas = {}, []
        for i, case in enumerate(op_cases_):
            try:
                ys, dys, dxs, ms = _run_case(case, rng)
            except mx.base.MXNetError as e:
                if not (case.grad and 'non-differentiable' in str(e)):
                    raise RuntimeError('MXNet failed on %s %s: %s' % (op, case.attrs, e)) from e
                # MXNet has no gradient here: compare the forward pass only.
                case.grad, case.wrt = False, []
                case.note = (case.note + '; ' if case.note else '') + 'MXNet: no gradient'
                ys, dys, dxs, ms = _run_case(case, rng)
            for j, a in enumerate(case.inputs):
                arrays['c%d_x%d' % (i, j)] = a
            for k, y in enumerate(ys):
                arrays['c%d_y%d' % (i, k)] = y
            for k, d in enumerate(dys):
                arrays['c%d_dy%d' % (i, k)] = d
            for j, d in zip(case.wrt, dxs):
                arrays['c%d_dx%d' % (i, j)] = d
            for j, m in zip(case.mutates, ms):
                arrays['c%d_m%d' % (i, j)] = m
            metas.append({'attrs': {k: _jsonable(v) for k, v in case.attrs.items()},
                          'n_in': len(case.inputs), 'n_out': len(ys), 'grad': case.grad,
                          'wrt': case.wrt, 'train': case.train, 'mutates': case.mutates,
                          'note': case.note})
        meta = {'op': op, 'mxnet_version': mx.__version__, 'cases': metas}
        arrays['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8)
        path = os.path.join(out_dir, '%s.npz' % op)
        np.savez_compressed(path, **arrays)
        total += os.path.getsize(path)
    print('ops: %d ops, %d cases, %.2f MB in %s' % (len(by_op), len(cases), total / 1e6,
                                                   out_dir))
    # MXNet's own op list (names and aliases), for the coverage test and docs/compat.md.
    names = sorted(mx.operator.get_all_registered_operators())
    with open(os.path.join(os.path.dirname(out_dir), 'mxnet_ops.txt'), 'w') as f:
        f.write('\n'.join(names) + '\n')


def _input_size(name):
    return 299 if name == 'inceptionv3' else 224


def _randomize(net, seed):
    """Random weights with sane scales (He-normal convolutions/dense layers, BatchNorm
    statistics and affine terms near identity) so deep nets neither vanish nor explode."""
    rng = np.random.default_rng(seed)
    for name, p in sorted(net.collect_params().items()):
        shape = p.shape
        if name.endswith('weight'):
            fan_in = int(np.prod(shape[1:]))
            v = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        elif name.endswith('bias'):
            v = rng.uniform(-0.1, 0.1, shape)
        elif name.endswith('gamma'):
            v = rng.uniform(0.8, 1.2, shape)
        elif name.endswith('beta'):
            v = rng.normal(0.0, 0.1, shape)
        elif name.endswith('running_mean'):
            v = rng.normal(0.0, 0.1, shape)
        elif name.endswith('running_var'):
            v = rng.uniform(0.8, 1.2, shape)
        else:
            raise ValueError('unexpected parameter %s' % name)
        p.set_data(mx.nd.array(v.astype(np.float32)))


def _build(name):
    with mx.name.NameManager():
        return mx.gluon.model_zoo.vision.get_model(name)


def gen_model(name, out_root):
    """<out_root>/<name>/: model-symbol.json, model-0000.params (export), model-gluon.params
    (save_parameters), io.npz (input x, MXNet's output y)."""
    d = os.path.join(out_root, name)
    os.makedirs(d, exist_ok=True)
    net = _build(name)
    net.initialize()
    size = _input_size(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = rng.standard_normal((BATCH, 3, size, size)).astype(np.float32)
    net(mx.nd.array(x[:1]))                    # finish deferred initialization
    _randomize(net, zlib.crc32(name.encode()) + 1)
    net.hybridize()
    y = net(mx.nd.array(x)).asnumpy()
    net.export(os.path.join(d, 'model'))
    net.save_parameters(os.path.join(d, 'model-gluon.params'))
    np.savez_compressed(os.path.join(d, 'io.npz'), x=x, y=y)
    with open(os.path.join(d, 'info.json'), 'w') as f:
        json.dump({'name': name, 'input_shape': list(x.shape), 'mxnet_version': mx.__version__,
                   'prefix': net.prefix}, f)
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print('model %s: %.1f MB in %s' % (name, size / 1e6, d))


def gen_names(path):
    res = {}
    for name in MODELS:
        net = _build(name)
        net.initialize()
        size = _input_size(name)
        net(mx.nd.zeros((1, 3, size, size)))
        res[name] = {'prefix': net.prefix,
                     'params': [[k, list(p.shape)] for k, p in net.collect_params().items()]}
    with open(path, 'w') as f:
        json.dump(res, f, indent=0, separators=(',', ':'))
    print('names: %d models in %s' % (len(res), path))


def gen_layers(path):
    from mxnet.gluon.contrib import nn as cnn
    rng = np.random.default_rng(11)
    arrays = {}
    for key, layer, shape in [('ps1', cnn.PixelShuffle1D(3), (2, 6, 5)),
                              ('ps2', cnn.PixelShuffle2D((2, 3)), (2, 12, 3, 4)),
                              ('ps3', cnn.PixelShuffle3D((2, 1, 3)), (1, 12, 2, 3, 2))]:
        x = rng.standard_normal(shape).astype(np.float32)
        arrays[key + '_x'] = x
        arrays[key + '_y'] = layer(mx.nd.array(x)).asnumpy()
    # HybridConcurrent(Identity, Dense) with fixed weights: output and input gradient.
    with mx.name.NameManager():
        net = cnn.HybridConcurrent(axis=1)
        with net.name_scope():
            net.add(cnn.Identity())
            net.add(mx.gluon.nn.Dense(3, in_units=4))
    net.initialize()
    w = rng.standard_normal((3, 4)).astype(np.float32)
    net[1].weight.set_data(mx.nd.array(w))
    x = mx.nd.array(rng.standard_normal((2, 4)).astype(np.float32))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward(mx.nd.ones_like(y))
    arrays.update(cc_w=w, cc_x=x.asnumpy(), cc_y=y.asnumpy(), cc_dx=x.grad.asnumpy())
    np.savez_compressed(path, **arrays)
    print('layers: %s' % path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ops', action='store_true')
    ap.add_argument('--ops-only', default='')
    ap.add_argument('--models', default='')
    ap.add_argument('--names', action='store_true')
    ap.add_argument('--layers', action='store_true')
    ap.add_argument('--gluon', action='store_true')
    ap.add_argument('--out', default=HERE)
    args = ap.parse_args()
    mx.random.seed(0)
    if args.ops or args.ops_only:
        gen_ops(os.path.join(args.out, 'ops'),
                set(args.ops_only.split(',')) if args.ops_only else None)
    if args.names:
        gen_names(os.path.join(args.out, 'models_params.json'))
    if args.layers:
        gen_layers(os.path.join(args.out, 'layers.npz'))
    if args.gluon:
        import gen_gluon_ref
        gen_gluon_ref.main(args.out)
    if args.models:
        names = {'all': MODELS, 'small': SMALL_MODELS}.get(args.models)
        names = names or args.models.split(',')
        for name in names:
            if name not in MODELS:
                raise SystemExit('unknown model %s' % name)
            sub = 'models' if name in SMALL_MODELS else os.path.join('generated', 'models')
            gen_model(name, os.path.join(args.out, sub))


if __name__ == '__main__':
    main()
