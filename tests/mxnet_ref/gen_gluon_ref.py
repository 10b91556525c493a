"""Fixtures of gluon.loss, mx.init and mx.metric from real MXNet 1.9.1 (run under MXNet's Python;
`gen_fixtures.py --gluon` calls it too):

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_gluon_ref.py [--out DIR]

losses.npz        for every case: the inputs, MXNet's output (imperative) and input gradients
                  for a random head gradient; meta JSON (uint8 array 'meta') holds the loss
                  class, its keyword arguments, the input slots (None where a positional input
                  is left out) and which inputs the gradients are for. MXNet's hybridized
                  output and gradients are checked equal to the imperative ones here.
initializers.npz  deterministic initializers: the initialized arrays; random ones: statistics
                  (min, max, mean, std) of a large array; Orthogonal: singular values; errors
                  (which cases MXNet rejects); dumps() strings. Meta JSON as above.
metrics.json      for every case: the metric spec, the update batches, and get() /
                  get_global() / get_name_value() / get_config() along a fixed script of
                  updates and resets.
Random streams are NumPy's, seeded per section: a case added later changes no other section.
"""
import argparse
import json
import os

import numpy as np
import mxnet as mx

import metric_specs  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
gloss = mx.gluon.loss


# ---- losses ---------------------------------------------------------------------------------
def _loss_cases(rng):
    f32 = np.float32

    def n(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(f32)

    def probs(*shape, axis=-1):
        e = np.exp(rng.standard_normal(shape))
        return (e / e.sum(axis=axis, keepdims=True)).astype(f32)

    def logp(*shape, axis=-1):
        return np.log(probs(*shape, axis=axis)).astype(f32)

    def ints(high, *shape):
        return rng.integers(0, high, shape).astype(f32)

    def signs(*shape):
        return (rng.integers(0, 2, shape) * 2 - 1).astype(f32)

    def pos(*shape):
        return rng.uniform(0.05, 0.95, shape).astype(f32)

    def sw(*shape):
        return rng.uniform(0.5, 1.5, shape).astype(f32)

    c = []  # (class, kwargs, inputs (None: left out), wrt)
    c += [('L2Loss', {}, [n(4, 5), n(4, 5)], [0, 1]),
          ('L2Loss', {'weight': 0.5}, [n(2, 3, 4), n(2, 12)], [0, 1]),
          ('L2Loss', {}, [n(4, 5), n(4, 5), sw(4, 1)], [0, 1]),
          ('L2Loss', {'batch_axis': 1}, [n(3, 4, 2), n(3, 4, 2)], [0])]
    c += [('L1Loss', {}, [n(4, 5), n(4, 5)], [0, 1]),
          ('L1Loss', {'weight': 2.0}, [n(4, 5), n(4, 5), sw(4, 1)], [0]),
          ('L1Loss', {'batch_axis': 1}, [n(2, 3, 4), n(2, 3, 4)], [0])]
    c += [('SigmoidBinaryCrossEntropyLoss', {}, [n(4, 5, scale=2), ints(2, 4, 5)], [0]),
          ('SigmoidBCELoss', {'from_sigmoid': True}, [pos(4, 5), ints(2, 4, 5)], [0]),
          ('SigmoidBCELoss', {}, [n(4, 5, scale=2), ints(2, 4, 5), None, sw(5)], [0]),
          ('SigmoidBCELoss', {'from_sigmoid': True}, [pos(4, 5), ints(2, 4, 5), None, sw(1, 5)],
           [0]),
          ('SigmoidBCELoss', {'weight': 0.7}, [n(4, 5), pos(4, 5), sw(4, 1)], [0, 1]),
          ('SigmoidBCELoss', {}, [n(2, 3, 4), pos(2, 3, 4)], [0])]
    lp = logp(4, 5)
    c += [('SoftmaxCrossEntropyLoss', {}, [n(4, 5), ints(5, 4)], [0]),
          ('SoftmaxCELoss', {}, [n(4, 5), ints(5, 4, 1)], [0]),
          ('SoftmaxCELoss', {'sparse_label': False}, [n(4, 5), probs(4, 5)], [0, 1]),
          ('SoftmaxCELoss', {'from_logits': True}, [lp, ints(5, 4)], [0]),
          ('SoftmaxCELoss', {'axis': 1}, [n(2, 5, 3), ints(5, 2, 3)], [0]),
          ('SoftmaxCELoss', {'axis': 1, 'sparse_label': False},
           [n(2, 5, 3), probs(2, 5, 3, axis=1)], [0]),
          ('SoftmaxCELoss', {'weight': 2.0}, [n(4, 5), ints(5, 4), sw(4, 1)], [0])]
    c += [('KLDivLoss', {}, [logp(4, 5), probs(4, 5)], [0, 1]),
          ('KLDivLoss', {'from_logits': False}, [n(4, 5), probs(4, 5)], [0]),
          ('KLDivLoss', {'from_logits': False, 'axis': 1}, [n(2, 5, 3), probs(2, 5, 3, axis=1)],
           [0]),
          ('KLDivLoss', {'weight': 0.5}, [logp(4, 5), probs(4, 5), sw(4, 1)], [0]),
          ('KLDivLoss', {}, [logp(2, 3, 4), probs(2, 3, 4)], [0])]
    c += [('HuberLoss', {}, [n(4, 5, scale=2), n(4, 5)], [0, 1]),
          ('HuberLoss', {'rho': 0.5}, [n(2, 3, 4, scale=2), n(2, 3, 4)], [0]),
          ('HuberLoss', {'rho': 2, 'weight': 3.0}, [n(4, 5, scale=2), n(4, 5), sw(4, 1)], [0])]
    c += [('HingeLoss', {}, [n(4, 5), signs(4, 5)], [0]),
          ('HingeLoss', {'margin': 2}, [n(2, 3, 4), signs(2, 3, 4), sw(2, 1, 1)], [0]),
          ('SquaredHingeLoss', {}, [n(4, 5), signs(4, 5)], [0]),
          ('SquaredHingeLoss', {'margin': 0.5, 'weight': 2.0}, [n(4, 5), signs(4, 5)], [0])]
    c += [('LogisticLoss', {}, [n(4, 5, scale=2), signs(4, 5)], [0]),
          ('LogisticLoss', {'label_format': 'binary'}, [n(4, 5, scale=2), ints(2, 4, 5)], [0]),
          ('LogisticLoss', {'weight': 0.3}, [n(2, 3, 4), signs(2, 3, 4), sw(2, 1, 1)], [0])]
    c += [('TripletLoss', {}, [n(4, 5), n(4, 5), n(4, 5)], [0, 1, 2]),
          ('TripletLoss', {'margin': 0.5, 'weight': 2.0}, [n(2, 3, 4), n(2, 12), n(2, 3, 4)],
           [0, 1, 2])]
    counts = rng.poisson(2.0, (4, 5)).astype(f32)
    c += [('PoissonNLLLoss', {}, [n(4, 5), counts], [0]),
          ('PoissonNLLLoss', {'from_logits': False}, [pos(4, 5) * 3, counts], [0]),
          ('PoissonNLLLoss', {'compute_full': True}, [n(4, 5), counts + 1], [0]),
          ('PoissonNLLLoss', {'compute_full': True, 'from_logits': False},
           [pos(2, 3, 4) * 3, rng.poisson(3.0, (2, 3, 4)).astype(f32) + 1], [0]),
          ('PoissonNLLLoss', {'weight': 2.0}, [n(4, 5), counts, sw(4, 1)], [0])]
    c += [('CosineEmbeddingLoss', {}, [n(4, 5), n(4, 5), signs(4)], [0, 1]),
          ('CosineEmbeddingLoss', {'margin': 0.2}, [n(6, 3), n(6, 3), signs(6)], [0, 1]),
          ('CosineEmbeddingLoss', {'weight': 2.0}, [n(4, 5), n(4, 5), signs(4), sw(4, 1)], [0])]
    def ctc_labels(nb, l_max, classes, lengths):  # blank_label='last': pad with -1
        lab = np.full((nb, l_max), -1, f32)
        for b, lb in enumerate(lengths):
            lab[b, :lb] = rng.integers(0, classes - 1, lb)
        return lab

    lab = ctc_labels(3, 3, 5, [3, 1, 2])
    c += [('CTCLoss', {}, [n(3, 6, 5), lab], [0]),
          ('CTCLoss', {'layout': 'TNC'}, [n(6, 3, 5), lab], [0]),
          ('CTCLoss', {'label_layout': 'TN'}, [n(3, 6, 5), np.ascontiguousarray(lab.T)], [0]),
          ('CTCLoss', {}, [n(3, 6, 5), lab, np.array([6, 4, 5], f32),
                           np.array([3, 1, 2], f32)], [0]),
          ('CTCLoss', {}, [n(3, 6, 5), np.where(lab < 0, 1, lab).astype(f32), None,
                           np.array([3, 1, 2], f32)], [0]),
          ('CTCLoss', {'weight': 0.5}, [n(3, 6, 5), lab, None, None, sw(3)], [0]),
          ('CTCLoss', {'layout': 'TNC', 'label_layout': 'TN'},
           [n(8, 2, 4), np.ascontiguousarray(ctc_labels(2, 4, 4, [4, 2]).T)], [0])]
    c += [('SDMLLoss', {}, [n(4, 5), n(4, 5)], [0, 1]),
          ('SDMLLoss', {'smoothing_parameter': 0.1, 'weight': 2.0}, [n(6, 3), n(6, 3)], [0, 1])]
    return c


def _run_loss(cls, kwargs, inputs, wrt, dy, hybridize):
    loss = getattr(gloss, cls)(**kwargs)
    if hybridize:
        loss.hybridize()
    xs = [None if a is None else mx.nd.array(a) for a in inputs]
    for j in wrt:
        xs[j].attach_grad()
    with mx.autograd.record():
        out = loss(*xs)
    if dy is None:
        return out.asnumpy(), None
    out.backward(mx.nd.array(dy))
    return out.asnumpy(), [xs[j].grad.asnumpy() for j in wrt]


def _short(err):
    return '%s: %s' % (type(err).__name__, str(err).strip().split('\n')[-1][:300])


def gen_losses(path):
    rng = np.random.default_rng(12)
    arrays, metas = {}, []
    for i, (cls, kwargs, inputs, wrt) in enumerate(_loss_cases(rng)):
        note = ''
        try:
            y, _ = _run_loss(cls, kwargs, inputs, wrt, None, False)
            dy = rng.standard_normal(y.shape).astype(np.float32)
            y, dxs = _run_loss(cls, kwargs, inputs, wrt, dy, False)
        except mx.base.MXNetError as err:
            # MXNet cannot record this loss imperatively (an in-place op): forward without
            # recording, gradients from the hybridized loss.
            note = 'MXNet imperative under autograd.record: ' + _short(err)
            loss = getattr(gloss, cls)(**kwargs)
            y = loss(*[None if a is None else mx.nd.array(a) for a in inputs]).asnumpy()
            dy = rng.standard_normal(y.shape).astype(np.float32)
            dxs = None
        hybrid = True
        try:
            yh, dxh = _run_loss(cls, kwargs, inputs, wrt, dy, True)
        except (mx.base.MXNetError, mx.base.NotImplementedForSymbol, AttributeError, TypeError,
                ValueError) as err:
            hybrid = _short(err)
            if dxs is None:  # no gradient from MXNet at all: the forward pass only
                wrt, dxs = [], []
        else:
            if dxs is None:
                dxs = dxh
            for a, b in zip([y] + dxs, [yh] + dxh):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        for j, a in enumerate(inputs):
            if a is not None:
                arrays['c%d_x%d' % (i, j)] = a
        arrays['c%d_y' % i] = y
        arrays['c%d_dy' % i] = dy
        for j, d in zip(wrt, dxs):
            arrays['c%d_dx%d' % (i, j)] = d
        metas.append({'cls': cls, 'kwargs': kwargs, 'slots': [a is not None for a in inputs],
                      'wrt': wrt, 'mxnet_hybridize': hybrid, 'note': note})
    meta = {'mxnet_version': mx.__version__, 'cases': metas}
    arrays['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    print('losses: %d cases, %.1f KB in %s' % (len(metas), os.path.getsize(path) / 1e3, path))


# ---- initializers ---------------------------------------------------------------------------
# (key, constructor expression evaluated with `I` = the init module, names, shapes)
RANDOM_SHAPES = [(256, 512), (64, 32, 3, 3), (512, 64), (100, 10, 5)]
INIT_RANDOM = [
    'I.Uniform()', 'I.Uniform(0.5)', 'I.Normal()', 'I.Normal(2.0)',
    'I.Xavier()', "I.Xavier(rnd_type='gaussian')",
    "I.Xavier(factor_type='in')", "I.Xavier(factor_type='out')",
    "I.Xavier(rnd_type='gaussian', factor_type='in', magnitude=2)",
    "I.Xavier(rnd_type='gaussian', factor_type='out', magnitude=2.34)",
    "I.Xavier(rnd_type='uniform', factor_type='avg', magnitude=6)",
    'I.MSRAPrelu()', "I.MSRAPrelu(factor_type='in')", "I.MSRAPrelu(factor_type='out', slope=0)",
]
ORTHO = ['I.Orthogonal()', "I.Orthogonal(scale=0.5, rand_type='normal')"]
ORTHO_SHAPES = [(64, 128), (128, 64), (16, 8, 3, 3)]
INIT_DETERMINISTIC = [
    ('I.Zero()', 'w_weight', (3, 4)), ('I.One()', 'w_weight', (3, 4)),
    ('I.Constant(0.3)', 'w_weight', (3, 4)), ('I.Constant(-2)', 'w_bias', (5,)),
    ('I.Bilinear()', 'up_weight', (2, 1, 4, 4)), ('I.Bilinear()', 'up_weight', (1, 3, 3, 5)),
    ('I.LSTMBias()', 'lstm_bias', (16,)), ('I.LSTMBias(forget_bias=2.5)', 'lstm_i2h_bias', (8,)),
]
DEFAULT_NAMES = ['fc_bias', 'bn_gamma', 'bn_beta', 'bn_running_mean', 'bn_running_var',
                 'bn_moving_mean', 'bn_moving_var', 'bn_moving_inv_var', 'q_min', 'q_max',
                 'upsampling_weight']
INIT_ERRORS = [('I.Xavier()', 'w_weight', (7,)), ('I.MSRAPrelu()', 'w_weight', (7,)),
               ('I.Uniform()', 'foo', (3,)), ('I.Uniform()', 'stem_conv', (2, 2))]
DUMPS = ['I.Zero()', 'I.One()', 'I.Constant(0.3)', 'I.Uniform(0.5)', 'I.Normal(2.0)',
         "I.Xavier(factor_type='in', magnitude=2.34)", "I.MSRAPrelu(slope=0.1)",
         'I.Orthogonal()', 'I.Bilinear()', 'I.LSTMBias(forget_bias=2.0)']


def _init(expr, name, shape):
    init = eval(expr, {'I': mx.init})  # noqa: S307 - our own constant expressions
    arr = mx.nd.zeros(shape)
    init(mx.init.InitDesc(name), arr)
    return arr.asnumpy()


def gen_initializers(path):
    mx.random.seed(3)
    arrays, meta = {}, {'mxnet_version': mx.__version__, 'random': [], 'ortho': [],
                        'deterministic': [], 'defaults': [], 'errors': [], 'dumps': {}}
    for expr in INIT_RANDOM:
        for shape in RANDOM_SHAPES:
            try:
                a = _init(expr, 'w_weight', shape).astype(np.float64)
            except Exception as err:  # noqa: BLE001 - record what MXNet rejects
                meta['random'].append([expr, shape, None, type(err).__name__])
                continue
            meta['random'].append([expr, shape, [a.min(), a.max(), a.mean(), a.std()], None])
    for expr in ORTHO:
        for shape in ORTHO_SHAPES:
            a = _init(expr, 'w_weight', shape).astype(np.float64).reshape(shape[0], -1)
            s = np.linalg.svd(a, compute_uv=False)
            meta['ortho'].append([expr, shape, [s.min(), s.max()]])
    for i, (expr, name, shape) in enumerate(INIT_DETERMINISTIC):
        arrays['d%d' % i] = _init(expr, name, shape)
        meta['deterministic'].append([expr, name, shape])
    # Names other than *weight: through an InitDesc and through a plain string (the legacy
    # path, which knows more names).
    for i, name in enumerate(DEFAULT_NAMES):
        for kind in ('desc', 'str'):
            arr = mx.nd.zeros((2, 1, 4, 4))
            try:
                mx.init.Uniform(3.0)(mx.init.InitDesc(name) if kind == 'desc' else name, arr)
            except Exception as err:  # noqa: BLE001
                meta['defaults'].append([name, kind, type(err).__name__])
                continue
            arrays['n%d%s' % (i, kind)] = arr.asnumpy()
            meta['defaults'].append([name, kind, None])
    # Mixed, Load and an InitDesc whose __init__ attribute overrides the global initializer.
    mixed = mx.init.Mixed(['bias', '.*'], [mx.init.Constant(1.5), mx.init.Constant(-0.5)])
    for k, name in enumerate(['fc_bias', 'fc_weight']):
        a = mx.nd.zeros((3,))
        mixed(name, a)
        arrays['mixed%d' % k] = a.asnumpy()
    src = {'arg:fc_weight': mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3)),
           'aux:bn_moving_var': mx.nd.array([2.0, 3.0])}
    load = mx.init.Load(src, default_init=mx.init.Constant(7.0))
    for k, (name, shape) in enumerate([('fc_weight', (2, 3)), ('bn_moving_var', (2,)),
                                       ('other_weight', (2, 2))]):
        a = mx.nd.zeros(shape)
        load(name, a)
        arrays['load%d' % k] = a.asnumpy()
    a = mx.nd.zeros((2, 3))
    mx.init.Uniform()(mx.init.InitDesc('fc_weight',
                                       attrs={'__init__': mx.init.Constant(4.0).dumps()}), a)
    arrays['attr_init'] = a.asnumpy()
    for expr, name, shape in INIT_ERRORS:
        try:
            _init(expr, name, shape)
            meta['errors'].append([expr, name, shape, None])
        except Exception as err:  # noqa: BLE001
            meta['errors'].append([expr, name, shape, type(err).__name__])
    for expr in DUMPS:
        meta['dumps'][expr] = eval(expr, {'I': mx.init}).dumps()  # noqa: S307
    arrays['meta'] = np.frombuffer(json.dumps(meta, default=float).encode('utf-8'),
                                   dtype=np.uint8)
    np.savez_compressed(path, **arrays)
    print('initializers: %.1f KB in %s' % (os.path.getsize(path) / 1e3, path))


# ---- metrics --------------------------------------------------------------------------------
def _metric_cases(rng):
    f32 = np.float32

    def scores(n, k):
        return rng.uniform(0, 1, (n, k)).astype(f32)

    def softmax(n, k):
        e = np.exp(rng.standard_normal((n, k)))
        return (e / e.sum(1, keepdims=True)).astype(f32)

    def labels(n, k):
        return rng.integers(0, k, n).astype(f32)

    def cls_batches(k, sizes=(6, 5, 7)):
        return [([labels(s, k)], [scores(s, k)]) for s in sizes]

    def reg_batches(shape_l, shape_p, count=3):
        out = []
        for _ in range(count):
            a = rng.standard_normal(shape_l).astype(f32)
            out.append(([a], [(a.reshape(shape_p) + rng.standard_normal(shape_p) * 0.5)
                              .astype(f32)]))
        return out

    c = []  # (spec, batches); spec: ['create', args, kwargs]
    c += [(['create', ['acc'], {}], cls_batches(4)),
          (['create', ['Accuracy'], {'axis': 0}], [([labels(5, 3)], [scores(3, 5)])] * 2),
          (['create', ['acc'], {}], [([labels(6, 4), labels(6, 4)],
                                      [scores(6, 4), labels(6, 4)])]),
          (['create', ['top_k_acc'], {'top_k': 3}], cls_batches(6)),
          (['create', ['TopKAccuracy'], {'top_k': 2, 'name': 'top'}], cls_batches(4)),
          (['create', ['f1'], {}], cls_batches(2, (8, 9, 10))),
          (['create', ['f1'], {'average': 'micro'}], cls_batches(2, (8, 9, 10))),
          (['create', ['mcc'], {}], cls_batches(2, (8, 9, 10))),
          (['create', ['mcc'], {'average': 'micro'}], cls_batches(2, (8, 9, 10))),
          (['create', ['perplexity'], {'ignore_label': None}],
           [([labels(6, 4)], [softmax(6, 4)]) for _ in range(3)]),
          (['create', ['perplexity'], {'ignore_label': 1}],
           [([labels(6, 4)], [softmax(6, 4)]) for _ in range(3)]),
          (['create', ['Perplexity'], {'ignore_label': None, 'axis': 1}],
           [([labels(6, 4)], [softmax(6, 4)])]),
          (['create', ['mae'], {}], reg_batches((5, 3), (5, 3))),
          (['create', ['mse'], {}], reg_batches((6,), (6,))),
          (['create', ['rmse'], {}], reg_batches((6,), (6, 1))),
          (['create', ['ce'], {}], [([labels(6, 4)], [softmax(6, 4)]) for _ in range(3)]),
          (['create', ['CrossEntropy'], {'eps': 1e-3}], [([labels(6, 4)], [softmax(6, 4)])]),
          (['create', ['nll_loss'], {}], [([labels(6, 4)], [softmax(6, 4)]) for _ in range(3)]),
          (['create', ['pearsonr'], {}], reg_batches((8,), (8,))),
          (['create', ['pearsonr'], {'average': 'micro'}], reg_batches((8,), (8,))),
          (['create', ['pcc'], {}], cls_batches(2, (8, 9, 10))),
          (['create', ['pcc'], {}], cls_batches(4, (12, 12))),
          (['create', ['loss'], {}], [([], [rng.uniform(0, 2, (5,)).astype(f32)])] * 3),
          (['create', ['torch'], {}], [([], [rng.uniform(0, 2, (3, 2)).astype(f32)])]),
          (['create', ['caffe'], {}], [([], [rng.uniform(0, 2, (4,)).astype(f32)])]),
          (['create', [['acc', 'f1', 'mae']], {}], cls_batches(2)),
          (['composite', [], {}], cls_batches(2)),
          # custom metrics from a NumPy function (the test defines the same functions)
          (['np', ['label_match'], {}], cls_batches(3)),
          (['create', ['@sum_count'], {'name': 'sc'}], cls_batches(3)),
          (['create', ['@label_match'], {'allow_extra_outputs': True}],
           [([labels(4, 3)], [scores(4, 3), scores(4, 3)])])]
    return c


def _state(m):
    return {'get': list(m.get()), 'get_global': list(m.get_global()),
            'name_value': m.get_name_value(), 'global_name_value': m.get_global_name_value()}


def _nd(batch):
    return [mx.nd.array(a) for a in batch]


def gen_metrics(path):
    rng = np.random.default_rng(21)
    cases = []
    for spec, batches in _metric_cases(rng):
        m = metric_specs.make_metric(mx, spec)
        script = [{'after': 'create', **_state(m)}]
        for labs, preds in batches:
            m.update(_nd(labs), _nd(preds))
            script.append({'after': 'update', **_state(m)})
        m.reset_local()
        script.append({'after': 'reset_local', **_state(m)})
        labs, preds = batches[0]
        m.update(_nd(labs), _nd(preds))
        script.append({'after': 'update', **_state(m)})
        m.reset()
        script.append({'after': 'reset', **_state(m)})
        try:
            config = m.get_config()
        except NotImplementedError:
            config = None
        cases.append({'spec': spec, 'name': m.name, 'type': type(m).__name__,
                      'config': config,
                      'batches': [[[a.tolist() for a in labs], [a.tolist() for a in preds]]
                                  for labs, preds in batches],
                      'script': script})
    with open(path, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'cases': cases}, f,
                  default=lambda v: v.item() if hasattr(v, 'item') else str(v))
    print('metrics: %d cases, %.1f KB in %s' % (len(cases), os.path.getsize(path) / 1e3, path))


def main(out=HERE):
    os.makedirs(out, exist_ok=True)
    gen_losses(os.path.join(out, 'losses.npz'))
    gen_initializers(os.path.join(out, 'initializers.npz'))
    gen_metrics(os.path.join(out, 'metrics.json'))


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', default=HERE)
    main(ap.parse_args().out)
