"""Multi-context fixtures: runs the scripts below under real MXNet 1.9.1 and writes multictx.npz,
which tests/test_multi_context.py replays on hybridgluon without MXNet.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_multictx.py [--out DIR]

The scripts are plain functions of the `mx` module (`train`, `context_cases`, `split_cases`),
imported by the test as well, so both libraries run the same code. Nothing here imports MXNet
at module level.

What is recorded:
- train scenarios (SCENARIOS): a small MLP, and one with BatchNorm, on 1-3 CPU contexts, fed by
  gluon.utils.split_and_load, trained a few steps with SGD (momentum, wd) or Adam under several
  kvstore / update_on_kvstore settings (imperative and hybridized): the per-context losses and
  every parameter's copy on every context after each step (BatchNorm's running statistics
  included), the initial values (MXNet's initializer gives all copies the same values; the
  replay starts from MXNet's), the contexts of outputs and gradients, and the Trainer's
  kvstore type and update_on_kvstore.
- context cases (CONTEXT_CASES): short expressions on arrays of cpu(0) and cpu(1) and the
  context of their result, or the class of the error MXNet raises.
- split cases (SPLIT_CASES): split_data / split_and_load shapes and values, even and uneven.

Format (.npz, read with allow_pickle=False): 'meta' holds UTF-8 JSON as uint8; arrays are named
data_x, data_y (the batches), <model>_init_p<j> (initial parameter values of 'mlp' and 'bn'),
<scenario>_s<step>_loss_c<k>, <scenario>_s<step>_p<j>_c<k>, split_<case>_<slice>.
"""
import argparse
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3
BATCH = 8
IN_UNITS = 6
CLASSES = 4

# name: (model, hybridize, optimizer, optimizer params, kvstore, update_on_kvstore, contexts)
# kvstore 'obj:<type>' passes mx.kv.create(<type>) instead of the type name.
_SGD = ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3})
_ADAM = ('adam', {'learning_rate': 0.01})
SCENARIOS = {}
for _opt_name, _opt in (('sgd', _SGD), ('adam', _ADAM)):
    for _kv, _uok in (('device', None), ('device', False), ('local', True), ('local', False),
                      (None, None), ('obj:local', None)):
        _name = 'mlp_%s_%s_%s' % (_opt_name, str(_kv).replace('obj:', 'obj'), _uok)
        SCENARIOS[_name] = ('mlp', False, _opt[0], _opt[1], _kv, _uok, 2)
    for _kv, _uok in (('device', None), ('local', False), (None, None)):
        SCENARIOS['bn_%s_%s_%s' % (_opt_name, _kv, _uok)] = ('bn', False, _opt[0], _opt[1], _kv,
                                                            _uok, 2)
    SCENARIOS['mlp_%s_1ctx' % _opt_name] = ('mlp', False, _opt[0], _opt[1], 'device', None, 1)
    SCENARIOS['mlp_%s_hybrid' % _opt_name] = ('mlp', True, _opt[0], _opt[1], 'device', None, 2)
    SCENARIOS['bn_%s_hybrid' % _opt_name] = ('bn', True, _opt[0], _opt[1], 'device', False, 2)
SCENARIOS['mlp_sgd_3ctx_uneven'] = ('mlp', False, 'sgd', _SGD[1], 'device', None, 3)
SCENARIOS['mlpdeferred_adam_hybrid'] = ('mlpdeferred', True, 'adam', _ADAM[1], 'local', False, 2)

# Expressions run with `mx`, `nd`, a = ones on cpu(0), b = ones on cpu(1): the context of the
# result (or of each element of a list result), or MXNet's error class.
CONTEXT_CASES = [
    'a + b', 'b + a', 'b * 2', '-b', 'nd.dot(b, a)', 'nd.concat(b, a, dim=0)', 'b.copy()',
    'b.copyto(mx.cpu(2))', 'b.as_in_context(mx.cpu(1)) is b', 'b.as_in_context(mx.cpu(0))',
    'nd.zeros((2,), ctx=mx.cpu(3))', 'nd.ones((2,), ctx=mx.cpu(2))',
    'nd.full((2,), 3, ctx=mx.cpu(2))', 'nd.empty((2,), ctx=mx.cpu(2))',
    'nd.array([1, 2], ctx=mx.cpu(2))', 'nd.array(b)', 'nd.arange(3, ctx=mx.cpu(2))',
    'nd.random.uniform(shape=(2,), ctx=mx.cpu(2))', 'nd.random.normal(shape=(2,), ctx=mx.cpu(2))',
    'b.astype("float64")', 'b.reshape((1, 2))', 'b[0:1]', 'b[1]', 'nd.zeros_like(b)',
    'b.T', 'b.sum()', 'nd.add_n(b, a)', 'nd.elemwise_add(a, b, out=nd.zeros((2,), '
    'ctx=mx.cpu(3)))', 'with_ctx(mx.cpu(2), lambda: nd.ones((1,)))',
    'with_ctx(mx.cpu(2), lambda: a + 1)', 'grad_of(b)', 'nd.split(nd.ones((2, 2), '
    'ctx=mx.cpu(1)), num_outputs=2)', 'dense_out(mx.cpu(1), mx.cpu(1), False)',
    'dense_out(mx.cpu(1), mx.cpu(1), True)', 'dense_out(mx.cpu(0), mx.cpu(1), True)',
    'dense_out(mx.cpu(0), mx.cpu(1), False)', 'dense_out([mx.cpu(0), mx.cpu(1)], mx.cpu(1), '
    'True)', 'dense_out([mx.cpu(0), mx.cpu(1)], mx.cpu(2), False)',
    'param_ctx([mx.cpu(1), mx.cpu(0)], "list_ctx")',
    'param_ctx([mx.cpu(1), mx.cpu(0)], "list_data")',
    'param_ctx([mx.cpu(1), mx.cpu(0)], "list_grad")',
    'param_ctx([mx.cpu(1), mx.cpu(0)], "reset_ctx")',
    'trainer_kv(1, "device", True)', 'trainer_kv(2, None, True)', 'trainer_kv(2, 3, None)',
    'trainer_kv(2, "device", True, "allreduce_grads")', 'trainer_kv(2, "local", True, "update")',
    'trainer_kv(1, "obj:local", None)', 'trainer_kv(2, "local", False, "stale")',
    'trainer_kv(2, "device", None, "stale")', 'trainer_kv(2, None, None, "stale")',
    'kv_case("dup")', 'kv_case("uninit_push")', 'kv_case("uninit_pull")', 'kv_case("mixed")',
    'kv_case("name")',
]

SPLIT_CASES = [(3, 0, False), (7, 0, False), (2, 1, True), (4, 1, False), (5, 0, True),
               (1, 0, True), (3, 0, True)]


def build(mx, model):
    """The network of a scenario: 'mlp', 'bn' (with BatchNorm) or 'mlpdeferred' (no in_units:
    deferred initialization on every context)."""
    nn = mx.gluon.nn
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        if model == 'mlp':
            net.add(nn.Dense(8, activation='relu', in_units=IN_UNITS),
                    nn.Dense(CLASSES, in_units=8))
        elif model == 'mlpdeferred':
            net.add(nn.Dense(8, activation='relu'), nn.Dense(CLASSES))
        else:
            # no bias before BatchNorm: its gradient is rounding noise, which Adam would
            # turn into steps of the learning rate's size in either direction
            net.add(nn.Dense(8, in_units=IN_UNITS, use_bias=False), nn.BatchNorm(in_channels=8),
                    nn.Activation('relu'), nn.Dense(CLASSES, in_units=8))
    return net


def train(mx, scenario, data_x, data_y, init):
    """Runs one scenario from the initial values `init` (one array per parameter, in
    collect_params() order); returns {name: array} and {meta key: value}."""
    model, hybrid, opt_name, opt_params, kv, uok, n_ctx = scenario
    ctxs = [mx.cpu(i) for i in range(n_ctx)]
    net = build(mx, model)
    net.initialize(mx.init.Xavier(), ctx=ctxs)
    params = list(net.collect_params().values())
    for p, v in zip(params, init):
        p.set_data(mx.nd.array(v))
    if hybrid:
        net.hybridize()
    if isinstance(kv, str) and kv.startswith('obj:'):
        kv = mx.kv.create(kv[4:])
    trainer = mx.gluon.Trainer(net.collect_params(), opt_name, dict(opt_params), kvstore=kv,
                               update_on_kvstore=uok)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    split = mx.gluon.utils.split_and_load
    arrays, meta = {}, {}
    for step in range(STEPS):
        xs = split(mx.nd.array(data_x[step]), ctxs, even_split=False)
        ys = split(mx.nd.array(data_y[step]), ctxs, even_split=False)
        with mx.autograd.record():
            outs = [net(x) for x in xs]
            losses = [loss_fn(o, y) for o, y in zip(outs, ys)]
        for loss in losses:
            loss.backward()
        if step == 0:
            meta['out_ctx'] = [str(o.context) for o in outs]
            meta['grad_ctx'] = [str(g.context) for g in params[0].list_grad()]
            meta['data_ctx'] = [str(d.context) for d in params[0].list_data()]
        trainer.step(BATCH)
        for k, loss in enumerate(losses):
            arrays['s%d_loss_c%d' % (step, k)] = loss.asnumpy()
        for j, p in enumerate(params):
            for k, ctx in enumerate(ctxs):
                arrays['s%d_p%d_c%d' % (step, j, k)] = p.data(ctx).asnumpy()
    meta['kvstore'] = trainer._kvstore.type if trainer._kvstore else None
    meta['update_on_kvstore'] = trainer._update_on_kvstore
    return arrays, meta


def _helpers(mx):
    """Functions the context cases call (the same for both libraries)."""
    nd = mx.nd

    def with_ctx(ctx, fn):
        with ctx:
            return fn()

    def grad_of(x):
        x = x.copy()
        x.attach_grad()
        with mx.autograd.record():
            y = (x * x).sum()
        y.backward()
        return [x.grad, y]

    def dense_out(param_ctx, data_ctx, hybrid):
        net = mx.gluon.nn.Dense(2, in_units=3, prefix='d_')
        net.initialize(ctx=param_ctx)
        if hybrid:
            net.hybridize()
        return net(nd.ones((1, 3), ctx=data_ctx))

    def param_ctx(ctxs, what):
        p = mx.gluon.Parameter('w', shape=(2,))
        p.initialize(ctx=ctxs)
        if what == 'list_ctx':
            return [str(c) for c in p.list_ctx()]
        if what == 'reset_ctx':
            p.reset_ctx([mx.cpu(2)])
            return p.list_data()
        return getattr(p, what)()

    def trainer_kv(n_ctx, kv, uok, action='step'):
        ctxs = [mx.cpu(i) for i in range(n_ctx)]
        p = mx.gluon.Parameter('w', shape=(2,))
        p.initialize(ctx=ctxs)
        if isinstance(kv, str) and kv.startswith('obj:'):
            kv = mx.kv.create(kv[4:])
        trainer = mx.gluon.Trainer([p], 'sgd', {'learning_rate': 0.1}, kvstore=kv,
                                   update_on_kvstore=uok)
        for d in p.list_data():
            with mx.autograd.record():
                y = (d * 2).sum()
            y.backward()
        if action == 'stale':
            trainer.step(1)
            trainer.step(1)  # no backward in between
        elif action == 'step':
            trainer.step(1)
        else:
            getattr(trainer, action)(*([] if action == 'allreduce_grads' else [1]))
        return p.list_data()

    def kv_case(what):
        kv = mx.kv.create('local')
        if what == 'name':
            return mx.kv.create(3)
        kv.init(3, nd.ones((2,)))
        if what == 'dup':
            kv.init(3, nd.ones((2,)))
        elif what == 'uninit_push':
            kv.push(9, nd.ones((2,)))
        elif what == 'uninit_pull':
            kv.pull(9, out=nd.ones((2,)))
        elif what == 'mixed':
            kv.init('w', nd.ones((2,)))
        return nd.ones((1,))

    return dict(with_ctx=with_ctx, grad_of=grad_of, dense_out=dense_out, param_ctx=param_ctx,
                trainer_kv=trainer_kv, kv_case=kv_case)


def _describe(result):
    """'cpu(1)', ['cpu(0)', ...], a bool or a str: what a context case compares."""
    if isinstance(result, (bool, str)):
        return result
    if isinstance(result, (list, tuple)):
        return [_describe(r) for r in result]
    return str(result.context)


def context_case(mx, expr):
    """{'ctx': description} for one expression, or {'error': class name, 'classes': names of
    the class and its bases} when it raises."""
    env = dict(mx=mx, nd=mx.nd, a=mx.nd.ones((2,), ctx=mx.cpu(0)),
               b=mx.nd.ones((2,), ctx=mx.cpu(1)), **_helpers(mx))
    try:
        return {'ctx': _describe(eval(expr, env))}  # noqa: S307 (fixed expressions above)
    except Exception as e:  # noqa: BLE001 (the class is what is recorded)
        return {'error': type(e).__name__, 'classes': [c.__name__ for c in type(e).__mro__]}


def split_case(mx, case):
    """The slices of split_data(arange(30).reshape(5, 6), ...), as arrays."""
    num, axis, even = case
    data = mx.nd.array(np.arange(30, dtype=np.float32).reshape(5, 6))
    return [s.asnumpy() for s in mx.gluon.utils.split_data(data, num, axis, even)]


def main():
    import mxnet as mx
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=HERE)
    args = ap.parse_args()
    rng = np.random.RandomState(7)
    data_x = rng.standard_normal((STEPS, BATCH, IN_UNITS)).astype(np.float32)
    data_y = rng.randint(0, CLASSES, (STEPS, BATCH)).astype(np.float32)
    arrays = {'data_x': data_x, 'data_y': data_y}
    meta = {'scenarios': {}, 'context': {}, 'split': {}}
    for model in ('mlp', 'bn'):
        mx.random.seed(11)
        net = build(mx, model)
        net.initialize(mx.init.Xavier(), ctx=[mx.cpu(0), mx.cpu(1)])
        init = []
        for p in net.collect_params().values():
            copies = [d.asnumpy() for d in p.list_data()]
            assert all((c == copies[0]).all() for c in copies), p.name
            init.append(copies[0])
        meta[model + '_init'] = len(init)
        for j, v in enumerate(init):
            arrays['%s_init_p%d' % (model, j)] = v
    for name, scenario in SCENARIOS.items():
        model = 'mlp' if scenario[0] == 'mlpdeferred' else scenario[0]
        init = [arrays['%s_init_p%d' % (model, j)] for j in range(meta[model + '_init'])]
        res, info = train(mx, scenario, data_x, data_y, init)
        meta['scenarios'][name] = info
        for k, v in res.items():
            arrays['%s_%s' % (name, k)] = v
    for expr in CONTEXT_CASES:
        meta['context'][expr] = context_case(mx, expr)
    for i, case in enumerate(SPLIT_CASES):
        try:
            slices = split_case(mx, case)
            meta['split'][str(i)] = len(slices)
            for k, s in enumerate(slices):
                arrays['split_%d_%d' % (i, k)] = s
        except ValueError:
            meta['split'][str(i)] = 'ValueError'
    arrays['meta'] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
    path = os.path.join(args.out, 'multictx.npz')
    np.savez_compressed(path, **arrays)
    print('wrote %s (%d arrays, %d bytes)' % (path, len(arrays), os.path.getsize(path)))


if __name__ == '__main__':
    main()
