"""Every Gluon layer on gpu(0) against the CPU (docs/gpu.md), imperative and hybridized,
forward and backward.

One table (CASES) lists a case for every layer class that gluon.nn, gluon.rnn, gluon.contrib.nn,
gluon.contrib.rnn and gluon.contrib.cnn export (the cases of tests/test_gluon_layers.py first,
then the rest: Embedding, containers, contrib layers, RNN layers and cells, model-zoo networks);
test_table_covers_every_exported_layer fails when a class has no case and is not in SKIPPED.

compare() is the harness: two copies of a case's net, on two contexts (imperative or
hybridized each), get the same parameters (seeded random values set on both) and the same
random inputs; each runs forward under autograd.record and backward with the same random head
gradients; then the outputs, input gradients, every parameter gradient and the auxiliary states
after the step (BatchNorm's running statistics) must agree within TOL of the first copy's
largest magnitude. The GPU sweep runs it with (CPU, GPU) in each mode and dtype; without a GPU
the self-checks run it with both copies on the CPU, one of them hybridized, and check that it
does report a perturbed parameter and a perturbed running statistic.

A layer that uses an op without a GPU kernel (mx._core.op_info(op)['gpu'] is False) must fail
on the GPU with the MXNetError that names one of those ops. Which ops a layer uses is read from
its traced graph and that graph's gradient graph at run time, so the expectation follows the
kernels as they are written: once its ops all have kernels, a case is compared like any other,
and a case that runs although an op it uses has no kernel fails.
"""
import json
import os
import re
import sys

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, nd
from hybridgluon.base import MXNetError
from hybridgluon.gluon import Block, HybridBlock, nn, rnn
from hybridgluon.gluon.contrib import cnn as contrib_cnn
from hybridgluon.gluon.contrib import nn as contrib_nn
from hybridgluon.gluon.contrib import rnn as contrib_rnn
from hybridgluon.gluon.model_zoo import vision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import refs  # noqa: E402
from test_gluon_layers import ALL_CASES as GLUON_LAYER_CASES  # noqa: E402

HAVE_GPU = mx.context.num_gpus() > 0
gpu = pytest.mark.skipif(not HAVE_GPU, reason='no GPU in this process (num_gpus() == 0)')
pytestmark = [pytest.mark.gpu,
              pytest.mark.filterwarnings('ignore:All children of this Sequential layer')]

# Largest |test - reference| relative to the reference tensor's largest magnitude: a GPU's math
# library and summation order differ from the CPU's in the last bits, and a layer stacks ops.
TOL = {'float16': 2e-3, 'float32': 1e-4, 'float64': 1e-10}
NO_KERNEL_RE = re.compile(r'Operator (\S+) has no GPU kernel')


# ---- the table ---------------------------------------------------------------------------------

class In:
    """One input of a case: standard normal values of `shape`, or integers in [low, high) (as
    floats: indices, lengths), which get no gradient."""

    def __init__(self, shape, low=None, high=None):
        self.shape, self.low, self.high = tuple(shape), low, high

    @property
    def integer(self):
        return self.high is not None

    def value(self, rng, dtype):
        if self.integer:
            return rng.integers(self.low, self.high, size=self.shape).astype(dtype)
        return rng.standard_normal(self.shape).astype(dtype)


def _spec(i):
    """An input spec: an In, a shape (tuple) for an In, or a list of them for a list
    argument (an RNN layer's begin states)."""
    if isinstance(i, In):
        return i
    if isinstance(i, list):
        return [_spec(s) for s in i]
    return In(i)


class Case:
    """make() builds a fresh net (called under a fresh NameManager); its call takes `inputs`.
    f64 / f16: also run in float64 / float16 (net.cast). train: record in training mode (False
    for layers whose training mode is random: Dropout, zoneout)."""

    def __init__(self, id, make, inputs, f64=True, f16=False, train=True, tol32=None):
        self.id, self.make, self.f64, self.f16, self.train = id, make, f64, f16, train
        self.inputs = [_spec(i) for i in inputs]
        self.tol = dict(TOL, **({'float32': tol32} if tol32 else {}))

    def dtypes(self):
        return ['float32'] + ['float64'] * self.f64 + ['float16'] * self.f16


class _Unrolled(HybridBlock):
    """A cell run over `length` steps of an NTC sequence: inputs (x, *begin states[,
    valid_length]); outputs [merged outputs, *last states]. No begin states given: the cell's
    own zeros (traced as creation ops)."""

    def __init__(self, cell, length, valid_length=False):
        super().__init__(prefix='unrolled_')
        self.cell, self.length, self.valid_length = cell, length, valid_length

    def hybrid_forward(self, F, x, *rest):
        vl = rest[-1] if self.valid_length else None
        states = list(rest[:-1] if self.valid_length else rest)
        out, states = self.cell.unroll(self.length, x, begin_state=states or None, layout='NTC',
                                       merge_outputs=True, valid_length=vl)
        return [out] + list(states)


class _UnrolledBlock(Block):
    """_Unrolled for a cell that is not a HybridBlock (SequentialRNNCell)."""

    def __init__(self, cell, length):
        super().__init__(prefix='unrolled_')
        self.cell, self.length = cell, length

    def forward(self, x, *states):
        out, states = self.cell.unroll(self.length, x, begin_state=list(states) or None,
                                       layout='NTC', merge_outputs=True)
        return [out] + list(states)


class _Step(HybridBlock):
    """One step of a cell: inputs (x, *states); outputs [output, *new states]."""

    def __init__(self, cell):
        super().__init__(prefix='step_')
        self.cell = cell

    def hybrid_forward(self, F, x, *states):
        out, states = self.cell(x, list(states))
        return [out] + list(states)


def _cell_case(id, make_cell, x_shape, states=True, step=False, valid_length=False, **kw):
    """A cell unrolled over x_shape's axis 1 (NTC), or one step of it on x_shape (NC...)."""
    batch = x_shape[0]
    with mx.name.NameManager():
        cell = make_cell()
    ins = [In(x_shape)] + ([In(s['shape']) for s in cell.state_info(batch)] if states else [])
    if step:
        return Case(id, lambda: _Step(make_cell()), ins, **kw)
    if valid_length:
        ins.append(In((batch,), 1, x_shape[1] + 1))
    wrap = _Unrolled if isinstance(cell, HybridBlock) else _UnrolledBlock
    extra = {'valid_length': True} if valid_length else {}
    return Case(id, lambda: wrap(make_cell(), x_shape[1], **extra), ins, **kw)


def _seq(cls, *children, **kw):
    def make():
        net = cls(**kw)
        with net.name_scope():
            for child in children:
                net.add(child())
        return net
    return make


def _symbol_block():
    data = mx.sym.var('data')
    inner = _seq(nn.HybridSequential, lambda: nn.Conv2D(3, 3), nn.BatchNorm,
                 lambda: nn.Activation('relu'), lambda: nn.Dense(4))()
    return nn.SymbolBlock(inner(data), data)


def _lstm_stack():
    cell = rnn.HybridSequentialRNNCell()
    with cell.name_scope():
        cell.add(rnn.LSTMCell(5))
        cell.add(rnn.DropoutCell(0.5))  # predict mode: the identity
        cell.add(rnn.GRUCell(4))
    return cell


def _plain_stack():
    cell = rnn.SequentialRNNCell()
    with cell.name_scope():
        cell.add(rnn.RNNCell(4))
        cell.add(rnn.LSTMCell(3))
    return cell


F16_IDS = {'dense', 'dense_flatten_relu', 'conv1d', 'conv2d', 'conv2d_depthwise', 'conv3d'}

CASES = [Case(id, factory, [shape], f16=id in F16_IDS)
         for id, factory, shape, _, _ in GLUON_LAYER_CASES]  # tests/test_gluon_layers.py's
CASES += [
    Case('embedding', lambda: nn.Embedding(7, 4), [In((3, 4), 0, 7)]),
    Case('dropout_predict', lambda: nn.Dropout(0.5), [(3, 4)], train=False),
    Case('sequential', _seq(nn.Sequential, lambda: nn.Dense(6, activation='tanh'),
                            lambda: nn.Dense(3)), [(4, 5)]),
    Case('hybridsequential_convnet',
         _seq(nn.HybridSequential, lambda: nn.Conv2D(4, 3, padding=1), nn.BatchNorm,
              lambda: nn.Activation('relu'), nn.MaxPool2D, nn.Flatten, lambda: nn.Dense(3)),
         [(2, 3, 6, 6)]),
    Case('symbolblock', _symbol_block, [(2, 2, 5, 5)]),
    # contrib.nn
    Case('concurrent', _seq(contrib_nn.Concurrent, lambda: nn.Dense(3), lambda: nn.Dense(2),
                            contrib_nn.Identity), [(4, 5)]),
    Case('hybridconcurrent', _seq(contrib_nn.HybridConcurrent, lambda: nn.Conv2D(2, 1),
                                  lambda: nn.Conv2D(3, 3, padding=1), axis=1), [(2, 3, 4, 4)]),
    Case('pixelshuffle1d', lambda: contrib_nn.PixelShuffle1D(3), [(2, 6, 5)]),
    Case('pixelshuffle2d', lambda: contrib_nn.PixelShuffle2D((2, 3)), [(1, 12, 3, 4)]),
    Case('pixelshuffle3d', lambda: contrib_nn.PixelShuffle3D(2), [(1, 16, 2, 3, 2)]),
    Case('sparseembedding', lambda: contrib_nn.SparseEmbedding(6, 3), [In((2, 5), 0, 6)]),
    Case('syncbatchnorm', lambda: contrib_nn.SyncBatchNorm(num_devices=1), [(4, 3, 5)]),
    # contrib.cnn
    Case('deformableconv', lambda: contrib_cnn.DeformableConvolution(4, 3, padding=1),
         [(1, 2, 5, 5)]),
    Case('modulateddeformableconv',
         lambda: contrib_cnn.ModulatedDeformableConvolution(3, 3, padding=1), [(1, 2, 4, 4)]),
    # rnn: the fused layers (layout TNC), with and without begin states
    Case('rnn_relu', lambda: rnn.RNN(5, activation='relu'), [(4, 3, 6)]),
    Case('rnn_tanh_2layers_bidir', lambda: rnn.RNN(4, num_layers=2, bidirectional=True),
         [(3, 2, 5)]),
    Case('lstm', lambda: rnn.LSTM(5), [(4, 3, 6)]),
    Case('lstm_bidir_states', lambda: rnn.LSTM(4, bidirectional=True),
         [(3, 2, 5), [(2, 2, 4), (2, 2, 4)]]),
    Case('lstm_projection', lambda: rnn.LSTM(6, projection_size=3), [(3, 2, 4)]),
    Case('gru_2layers', lambda: rnn.GRU(4, num_layers=2), [(4, 3, 5)]),
    Case('gru_states', lambda: rnn.GRU(5), [(3, 2, 4), [(1, 2, 5)]]),
    # rnn: cells, one step and unrolled (NTC) with begin states as inputs
    _cell_case('rnncell_step', lambda: rnn.RNNCell(5), (3, 4), step=True),
    _cell_case('lstmcell_step', lambda: rnn.LSTMCell(5), (3, 4), step=True),
    _cell_case('grucell_step', lambda: rnn.GRUCell(5), (3, 4), step=True),
    _cell_case('rnncell', lambda: rnn.RNNCell(5), (3, 4, 6)),
    _cell_case('rnncell_relu', lambda: rnn.RNNCell(4, activation='relu'), (2, 3, 5)),
    _cell_case('lstmcell', lambda: rnn.LSTMCell(5), (3, 4, 6)),
    # the cell's own zero states are float32 (as MXNet's begin_state): no float64
    _cell_case('lstmcell_zero_states', lambda: rnn.LSTMCell(4), (2, 3, 5), states=False,
               f64=False),
    _cell_case('lstmcell_valid_length', lambda: rnn.LSTMCell(4), (3, 4, 5), valid_length=True),
    _cell_case('grucell', lambda: rnn.GRUCell(5), (3, 4, 6)),
    _cell_case('hybridsequentialrnncell', _lstm_stack, (2, 3, 4), train=False),
    _cell_case('sequentialrnncell', _plain_stack, (2, 3, 4)),
    _cell_case('residualcell', lambda: rnn.ResidualCell(rnn.GRUCell(4)), (2, 3, 4)),
    _cell_case('zoneoutcell', lambda: rnn.ZoneoutCell(rnn.LSTMCell(4), 0.3, 0.3), (2, 3, 5),
               train=False),
    _cell_case('bidirectionalcell', lambda: rnn.BidirectionalCell(rnn.LSTMCell(3),
                                                                  rnn.LSTMCell(3)), (2, 4, 5)),
    # contrib.rnn
    _cell_case('conv1drnncell', lambda: contrib_rnn.Conv1DRNNCell((2, 6), 3, 3, 3, i2h_pad=1),
               (2, 3, 2, 6)),
    _cell_case('conv2dlstmcell', lambda: contrib_rnn.Conv2DLSTMCell((2, 5, 5), 3, 3, 3,
                                                                    i2h_pad=1), (2, 3, 2, 5, 5)),
    _cell_case('conv2dgrucell', lambda: contrib_rnn.Conv2DGRUCell((2, 4, 4), 2, 3, 3,
                                                                  i2h_pad=1), (1, 2, 2, 4, 4)),
    _cell_case('conv3drnncell', lambda: contrib_rnn.Conv3DRNNCell((1, 3, 3, 3), 2, 3, 3,
                                                                  i2h_pad=1), (1, 2, 1, 3, 3, 3)),
    _cell_case('conv1dlstmcell', lambda: contrib_rnn.Conv1DLSTMCell((2, 5), 2, 3, 3, i2h_pad=1),
               (2, 2, 2, 5)),
    _cell_case('conv3dlstmcell', lambda: contrib_rnn.Conv3DLSTMCell((1, 2, 3, 3), 2, 3, 3,
                                                                    i2h_pad=1),
               (1, 2, 1, 2, 3, 3)),
    _cell_case('conv1dgrucell', lambda: contrib_rnn.Conv1DGRUCell((2, 5), 2, 3, 3, i2h_pad=1),
               (2, 2, 2, 5)),
    _cell_case('conv2drnncell', lambda: contrib_rnn.Conv2DRNNCell((2, 4, 4), 2, 3, 3,
                                                                  i2h_pad=1), (1, 2, 2, 4, 4)),
    _cell_case('conv3dgrucell', lambda: contrib_rnn.Conv3DGRUCell((1, 2, 3, 3), 2, 3, 3,
                                                                  i2h_pad=1),
               (1, 2, 1, 2, 3, 3)),
    _cell_case('lstmpcell', lambda: contrib_rnn.LSTMPCell(5, 3), (2, 3, 4)),
    _cell_case('variationaldropoutcell',
               lambda: contrib_rnn.VariationalDropoutCell(rnn.LSTMCell(4), 0.3, 0.3, 0.3),
               (2, 3, 5), train=False),
    # Model zoo, small inputs, 10 classes. In float32, training-mode BatchNorm over a batch of 4
    # (1x1 maps at the end) amplifies the last-bit differences of 20-odd layers to ~1e-3; the
    # float64 runs hold these nets to TOL['float64'].
    Case('resnet18_v1', lambda: vision.resnet18_v1(classes=10), [(4, 3, 32, 32)], tol32=2e-3),
    Case('resnet18_v2', lambda: vision.resnet18_v2(classes=10), [(4, 3, 32, 32)], tol32=2e-3),
    Case('mobilenet0.25', lambda: vision.mobilenet0_25(classes=10), [(4, 3, 32, 32)],
         tol32=5e-3),
    Case('mobilenetv2_0.25', lambda: vision.mobilenet_v2_0_25(classes=10), [(4, 3, 32, 32)],
         tol32=5e-3),
]
BY_ID = {c.id: c for c in CASES}

# Exported classes with no case of their own, and why.
SKIPPED = {
    # bases and abstract classes: not layers themselves (their subclasses have cases)
    nn.Block, nn.HybridBlock, rnn.RecurrentCell, rnn.HybridRecurrentCell, rnn.ModifierCell,
}
MODULES = [nn, rnn, contrib_nn, contrib_rnn, contrib_cnn]


# ---- the harness -------------------------------------------------------------------------------

def _flat(x):
    if isinstance(x, (list, tuple)):
        return [a for item in x for a in _flat(item)]
    return [x]


def _fresh(case):
    with mx.name.NameManager():
        return case.make()


def _arrays(case, dtype, ctx, seed):
    """The case's inputs as arrays on ctx, the same values for the same seed (a list input
    becomes a list argument)."""
    rng = np.random.default_rng(seed)

    def one(spec):
        if isinstance(spec, In):
            return nd.array(spec.value(rng, dtype), ctx=ctx, dtype=dtype)
        return [one(s) for s in spec]
    return [one(spec) for spec in case.inputs]


def _param_values(net, dtype, seed):
    """Seeded values for every Parameter: positive scales and variances, weights scaled by
    1 / sqrt(fan-in) so deep nets keep their magnitudes."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, p in net.collect_params().items():
        shape = p.shape
        if name.endswith(('gamma', 'running_var')):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith('alpha'):  # PReLU's slopes
            v = rng.uniform(0.05, 0.5, shape)
        elif len(shape) >= 2:
            v = rng.standard_normal(shape) / np.sqrt(max(1, int(np.prod(shape[1:]))))
        else:
            v = rng.normal(0, 0.3, shape)
        out[name] = v.astype(p.dtype if dtype == 'float32' else dtype)
    return out


def _build(case, dtype, ctx, hybrid):
    """A fresh copy of the case's net on ctx, cast to dtype, its deferred shapes settled by a
    first call in predict mode (on ctx: deferred initialisation there)."""
    net = _fresh(case)
    if hybrid:
        net.hybridize()
    net.initialize(ctx=ctx)
    if dtype != 'float32':
        net.cast(dtype)
    net(*_arrays(case, dtype, ctx, seed=0))
    return net


def run_case(case, dtype, ctx, hybrid, values=None, seed=0, perturb=None):
    """Runs the case once on ctx: {what: NumPy array} of the outputs, the gradients of the
    inputs and Parameters and the auxiliary states after the step, and the Parameter values
    used (`values`, or new seeded ones)."""
    net = _build(case, dtype, ctx, hybrid)
    params = net.collect_params()
    if values is None:
        values = _param_values(net, dtype, seed)
    assert sorted(values) == sorted(params.keys())
    for name, p in params.items():
        p.set_data(nd.array(values[name], ctx=ctx, dtype=values[name].dtype))
    if perturb is not None:
        perturb(net)
    args = _arrays(case, dtype, ctx, seed=seed + 1)
    flat_in = _flat(args)
    specs = _flat(case.inputs)
    for a, spec in zip(flat_in, specs):
        if not spec.integer:
            a.attach_grad()
    with autograd.record(train_mode=case.train):
        outs = _flat(net(*args))
    rng = np.random.default_rng(seed + 2)
    heads = [nd.array(rng.standard_normal(o.shape), ctx=ctx, dtype=o.dtype) for o in outs]
    autograd.backward(outs, heads, train_mode=case.train)
    got = {}
    for k, o in enumerate(outs):
        assert o.context == ctx, 'output %d is on %s, not %s' % (k, o.context, ctx)
        got['output %d' % k] = o.asnumpy()
    for k, (a, spec) in enumerate(zip(flat_in, specs)):
        if not spec.integer:
            got['gradient of input %d' % k] = a.grad.asnumpy()
    for name, p in params.items():
        if p.grad_req == 'null':
            got['%s after the step' % name] = p.data(ctx).asnumpy()
        else:
            got['gradient of %s' % name] = p.grad(ctx).asnumpy()
    return got, values


def compare(case, dtype, ref, test, seed=0, perturb=None):
    """Runs the case on ref = (ctx, hybrid) and on test = (ctx, hybrid) with the same
    parameters, inputs and head gradients; fails listing every result that differs by more
    than TOL[dtype] of the reference's largest magnitude (perturb(net) changes the test copy
    after its parameters are set: for the harness's own checks). Returns the names compared."""
    want, values = run_case(case, dtype, ref[0], ref[1], seed=seed)
    got, _ = run_case(case, dtype, test[0], test[1], values=values, seed=seed, perturb=perturb)
    assert sorted(got) == sorted(want)
    # A gradient is compared relative to its own largest magnitude, but at least a tenth of the
    # case's largest gradient: one that cancels to ~0 (a convolution's bias before BatchNorm)
    # is rounding noise on both devices, not a value to match to TOL of itself.
    grads = [np.abs(w.astype(np.float64)).max(initial=0) for what, w in want.items()
             if what.startswith('gradient')]
    floor = 0.1 * max(grads, default=0.0)
    tol = case.tol[dtype]
    bad = []
    for what, w in want.items():
        g = got[what]
        if g.shape != w.shape or g.dtype != w.dtype:
            bad.append('%s: %s %s, expected %s %s' % (what, g.shape, g.dtype, w.shape, w.dtype))
            continue
        err, idx = refs.rel_err(g, w)
        if what.startswith('gradient') and np.isfinite(err):
            own = np.abs(w.astype(np.float64)).max(initial=0)
            if own < floor:
                err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) / floor
        idx = None if idx is None else tuple(int(i) for i in idx)
        if not err <= tol:
            bad.append('%s: error %.3g at %s (tolerance %g)' % (what, err, idx, tol))
    assert not bad, '%s (%s), %s against %s:\n  %s' % (case.id, dtype, test, ref,
                                                       '\n  '.join(bad))
    return sorted(want)


# ---- the ops a case uses -----------------------------------------------------------------------

_OPS = {}


def graph_ops(case):
    """The ops of the case's traced graph and of its gradient graph (with respect to the
    non-integer inputs and every Parameter with a gradient)."""
    if case.id in _OPS:
        return _OPS[case.id]
    net = _fresh(case)
    names = iter('data%d' % k for k in range(100))
    variables = []

    def var(spec):
        if isinstance(spec, In):
            v = mx.sym.var(next(names))
            variables.append((v.name, spec))
            return v
        return [var(s) for s in spec]
    out = mx.sym.Group(_flat(net(*[var(s) for s in case.inputs])))
    params = net.collect_params()
    wrt = [n for n, spec in variables if not spec.integer]
    wrt += [n for n in out.list_arguments() if n in params and params[n].grad_req != 'null']
    heads = ['head%d' % k for k in range(len(out.list_outputs()))]
    grad = out._gradient(wrt, heads)
    ops = set()
    for sym in (out, grad):
        ops |= {n['op'] for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null'}
    _OPS[case.id] = ops
    return ops


def missing_gpu_ops(case):
    """The ops of the case without a GPU kernel. Creation ops without inputs (_zeros, ...) run
    on the CPU and their result is copied (docs/gpu.md), so they do not count."""
    out = set()
    for op in graph_ops(case):
        info = mx._core.op_info(op)
        if not info['gpu'] and not info['no_inputs']:
            out.add(op)
    return out


# ---- without a GPU: the table and the harness --------------------------------------------------

def _exported_layers():
    out = set()
    for mod in MODULES:
        for name in dir(mod):
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, Block) and not name.startswith('_'):
                out.add(obj)
    return out


def _classes_in(block):
    out, todo = set(), [block]
    while todo:
        b = todo.pop()
        out.add(type(b))
        todo.extend(b._children.values())
    return out


def test_table_covers_every_exported_layer():
    """A new layer class gets a case (or a reasoned place in SKIPPED): the classes a case's net
    is made of, containers and wrapped cells included, count as covered."""
    covered = set()
    for case in CASES:
        covered |= _classes_in(_fresh(case))
    exported = _exported_layers()
    missing = sorted(c.__module__ + '.' + c.__name__ for c in exported - covered - SKIPPED)
    assert not missing, 'layers without a case in CASES (or an entry in SKIPPED): %s' % missing
    stale = sorted(c.__name__ for c in SKIPPED & covered)
    assert not stale, 'SKIPPED classes that have a case now: %s' % stale
    assert len(BY_ID) == len(CASES), 'case ids are not unique'


def test_every_case_traces_to_registered_ops():
    """graph_ops works on every case: forward and gradient ops, all of them registered."""
    known = set(mx._core.list_ops())
    for case in CASES:
        ops = graph_ops(case)
        assert ops <= known, (case.id, ops - known)
    assert {'RNN', '_backward_RNN'} <= graph_ops(BY_ID['lstm'])
    assert {'Convolution', '_backward_Convolution'} <= graph_ops(BY_ID['conv2d'])
    assert {'BatchNorm', '_backward_BatchNorm'} <= graph_ops(BY_ID['batchnorm'])
    assert '_zeros' in graph_ops(BY_ID['lstmcell_zero_states'])
    assert '_zeros' not in missing_gpu_ops(BY_ID['lstmcell_zero_states'])  # runs on the CPU
    if not mx._core.built_with_cuda():  # no GPU kernels at all
        assert 'Convolution' in missing_gpu_ops(BY_ID['conv2d'])


# One or two cases of each family; the whole table runs with HG_LONG_TESTS=1 (below).
SELF_CHECK = ['dense', 'conv2d_all', 'conv2dT_all', 'maxpool2d_pad', 'batchnorm', 'groupnorm',
              'prelu_channels', 'embedding', 'concurrent', 'symbolblock', 'lstmcell',
              'lstmcell_valid_length', 'gru_states', 'mobilenetv2_0.25']


@pytest.mark.parametrize('case_id', SELF_CHECK)
def test_harness_imperative_against_hybridized_on_cpu(case_id):
    """The harness itself, without a GPU: the CPU imperative copy against the CPU hybridized
    one (float32, and float64 for the first two)."""
    case = BY_ID[case_id]
    names = compare(case, 'float32', (mx.cpu(), False), (mx.cpu(), True))
    assert 'output 0' in names and any(n.startswith('gradient of ') for n in names)
    if case_id in SELF_CHECK[:2]:
        compare(case, 'float64', (mx.cpu(), False), (mx.cpu(), True))


def test_harness_compares_everything():
    names = compare(BY_ID['batchnorm'], 'float32', (mx.cpu(), True), (mx.cpu(), False))
    assert names == ['batchnorm0_running_mean after the step',
                     'batchnorm0_running_var after the step', 'gradient of batchnorm0_beta',
                     'gradient of batchnorm0_gamma', 'gradient of input 0', 'output 0']
    names = compare(BY_ID['gru_states'], 'float32', (mx.cpu(), False), (mx.cpu(), False))
    assert {'output 0', 'output 1', 'gradient of input 0', 'gradient of input 1'} <= set(names)
    names = compare(BY_ID['embedding'], 'float32', (mx.cpu(), False), (mx.cpu(), False))
    assert names == ['gradient of embedding0_weight', 'output 0']  # indices get no gradient


def _nudge(name, k, rel):
    """perturb(): parameter `name`'s element k grows by rel of the parameter's scale."""
    def perturb(net):
        p = net.collect_params()[name]
        v = p.data().asnumpy()
        v.flat[k] += rel * np.abs(v).max()
        p.set_data(nd.array(v, ctx=p.list_ctx()[0], dtype=v.dtype))
    return perturb


def test_harness_reports_a_perturbed_parameter():
    with pytest.raises(AssertionError) as e:
        compare(BY_ID['dense_noflatten_sigmoid'], 'float32', (mx.cpu(), False), (mx.cpu(), True),
                perturb=_nudge('dense0_weight', 5, 1e-2))
    msg = str(e.value)
    for what in ('output 0', 'gradient of input 0', 'gradient of dense0_weight'):
        assert what + ': error' in msg, msg


def test_harness_reports_a_perturbed_running_statistic():
    """In training mode a running mean changes neither output nor gradients, only the state
    after the step: the comparison of auxiliary states must see it."""
    with pytest.raises(AssertionError) as e:
        compare(BY_ID['batchnorm'], 'float32', (mx.cpu(), False), (mx.cpu(), False),
                perturb=_nudge('batchnorm0_running_mean', 1, 1e-2))
    msg = str(e.value)
    assert 'batchnorm0_running_mean after the step: error' in msg
    assert 'output 0' not in msg and 'gradient' not in msg


def test_no_kernel_message_names_the_op():
    """The GPU sweep reads the op's name from run.c's message."""
    msg = ("node 'lstm0_rnn0' (RNN): Operator RNN has no GPU kernel (its arrays are on "
           "gpu(0)); run it on the CPU: copy its inputs with as_in_context(mx.cpu())")
    assert NO_KERNEL_RE.search(msg).group(1) == 'RNN'


# ---- on a GPU ----------------------------------------------------------------------------------

def _sweep():
    return [pytest.param(c.id, dtype, hybrid,
                         id='%s-%s-%s' % (c.id, dtype, 'hybrid' if hybrid else 'imperative'))
            for c in CASES for dtype in c.dtypes() for hybrid in (False, True)]


@gpu
@pytest.mark.parametrize('case_id,dtype,hybrid', _sweep())
def test_layer_on_gpu_matches_cpu(case_id, dtype, hybrid):
    case = BY_ID[case_id]
    missing = missing_gpu_ops(case)
    if not missing:
        compare(case, dtype, (mx.cpu(), hybrid), (mx.gpu(0), hybrid))
        return
    run_case(case, dtype, mx.cpu(), hybrid)  # the CPU runs it: the GPU's error is the GPU's
    try:
        run_case(case, dtype, mx.gpu(0), hybrid)
    except MXNetError as e:
        m = NO_KERNEL_RE.search(str(e))
        assert m and m.group(1) in missing, (
            '%s uses %s without a GPU kernel; expected the error naming one of them, got: %s'
            % (case_id, sorted(missing), e))
        return
    pytest.fail('%s ran on the GPU although it uses %s, which op_info says have no GPU kernel'
                % (case_id, sorted(missing)))


# ---- the whole table on the CPU (HG_LONG_TESTS=1) ----------------------------------------------

LONG = os.environ.get('HG_LONG_TESTS', '') not in ('', '0')


@pytest.mark.slow
@pytest.mark.skipif(not LONG, reason='the whole table on the CPU: run with HG_LONG_TESTS=1')
@pytest.mark.parametrize('case_id,dtype', [(c.id, d) for c in CASES for d in c.dtypes()])
def test_every_case_imperative_against_hybridized_on_cpu(case_id, dtype):
    """Every case and dtype of the sweep, CPU imperative against CPU hybridized: the table's
    cases run, and agree, before a GPU sees them."""
    compare(BY_ID[case_id], dtype, (mx.cpu(), False), (mx.cpu(), True))
