"""The op cases of the MXNet conformance fixtures: inputs (NumPy), attributes and what to
compare, for every op of hybridgluon's registry that MXNet 1.9.1 also has.

Imported by gen_fixtures.py (run under real MXNet); it needs NumPy only. A case is
`C(op, inputs, attrs, ...)`; inputs are drawn from one seeded generator in a fixed order, so the
fixtures are reproducible. Inputs avoid kinks and ties (abs/relu at 0, equal maxima, rounding
at .5) unless the case is about them, so gradients are well defined on both sides.

Not covered, on purpose:
- `_backward_*` ops: internal, with calling conventions of their own; every one is exercised
  through the gradient of its forward op here.
- `_random_*`, `_shuffle`, Dropout in training mode: the two random streams differ (their
  distributions are tested in tests/test_random.py); Dropout is compared in predict mode.
"""
import numpy as np

F32 = 'float32'


class C:
    """One case: `op` called as op(*inputs, **attrs).

    grad: also compare the input gradients (backward with a random head gradient);
    wrt: input indices to differentiate (default: every floating-point input);
    train: the mode the op runs in (BatchNorm's batch statistics, Dropout, rrelu); None
    means training mode when gradients are taken (as in real training: MXNet's oneDNN max-pool
    backward needs the workspace only a training-mode forward leaves) and predict mode
    otherwise;
    mutates: input indices the op updates in place (optimizer states, BatchNorm moving stats),
    compared after the call.
    """

    def __init__(self, op, inputs, attrs=None, grad=True, wrt=None, train=None, mutates=(),
                 note=''):
        self.op = op
        self.inputs = [np.asarray(a) for a in inputs]
        self.attrs = dict(attrs or {})
        if wrt is None:
            wrt = [i for i, a in enumerate(self.inputs) if a.dtype.kind == 'f']
        self.grad = grad and bool(wrt)
        self.wrt = list(wrt) if self.grad else []
        self.train = self.grad if train is None else train
        self.mutates = list(mutates)
        self.note = note


def build_cases(seed=20240519):
    """All cases, in a fixed order (one generator: the same seed gives the same fixtures)."""
    rng = np.random.default_rng(seed)

    def u(*shape, lo=-1.0, hi=1.0, dtype=F32):
        return rng.uniform(lo, hi, shape).astype(dtype)

    def n(*shape, scale=1.0, dtype=F32):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    def away(*shape, lo=0.2, hi=2.0, dtype=F32):
        """|x| in [lo, hi] with a random sign: no value near 0 (kinks of abs, relu, sign)."""
        mag = rng.uniform(lo, hi, shape)
        return (mag * rng.choice([-1.0, 1.0], shape)).astype(dtype)

    def distinct(*shape, dtype=F32):
        """A random permutation of well-separated values (no ties for max/sort/topk)."""
        size = int(np.prod(shape))
        vals = (rng.permutation(size) - size / 2.0) * 0.25 + rng.uniform(-0.05, 0.05, size)
        return vals.reshape(shape).astype(dtype)

    def ints(*shape, lo=0, hi=5, dtype=F32):
        return rng.integers(lo, hi, shape).astype(dtype)

    def pos(*shape, lo=0.5, hi=2.0):
        return u(*shape, lo=lo, hi=hi)

    cases = []
    add = cases.append

    # ---- element-wise unary --------------------------------------------------------------
    domains = {
        'relu': away, 'sigmoid': u, 'tanh': u, 'softsign': u, 'exp': u, 'expm1': u,
        'log': pos, 'log1p': lambda *s: u(*s, lo=-0.5, hi=2.0), 'log2': pos, 'log10': pos,
        'sqrt': pos, 'rsqrt': pos, 'cbrt': away, 'rcbrt': away, 'square': u, 'abs': away,
        'negative': u, 'reciprocal': away, 'sin': u, 'cos': u,
        'tan': lambda *s: u(*s, lo=-1.2, hi=1.2),
        'arcsin': lambda *s: u(*s, lo=-0.9, hi=0.9), 'arccos': lambda *s: u(*s, lo=-0.9, hi=0.9),
        'arctan': u, 'sinh': u, 'cosh': u, 'arcsinh': u,
        'arccosh': lambda *s: u(*s, lo=1.2, hi=3.0),
        'arctanh': lambda *s: u(*s, lo=-0.9, hi=0.9), 'degrees': u, 'radians': u, 'erf': u,
        'gamma': lambda *s: u(*s, lo=0.3, hi=4.0), 'gammaln': lambda *s: u(*s, lo=0.3, hi=4.0),
        '_copy': u, 'make_loss': u,
    }
    for op, gen in domains.items():
        add(C(op, [gen(2, 3, 4)]))
        add(C(op, [gen(7)]))
    # Negative non-integer arguments of gamma / gammaln (sign changes, |.| in gammaln).
    add(C('gamma', [u(3, 4, lo=-2.9, hi=-2.1)]))
    add(C('gammaln', [u(3, 4, lo=-2.9, hi=-2.1)]))
    for op in ['sign', 'floor', 'ceil', 'round', 'rint', 'trunc', 'fix']:
        frac = rng.choice([0.15, 0.3, 0.7, 0.85], (3, 5))
        add(C(op, [(ints(3, 5, lo=-4, hi=4) + frac).astype(F32)]))
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], F32)
    for op in ['round', 'rint', 'fix', 'trunc', 'floor', 'ceil']:
        add(C(op, [halves], grad=False, note='exact halves: rounding direction'))
    add(C('sign', [np.array([-2.0, 0.0, 3.0], F32)], grad=False, note='sign(0)'))
    for op in ['BlockGrad', 'zeros_like', 'ones_like']:
        add(C(op, [u(3, 4)]))
    for act in ['relu', 'sigmoid', 'tanh', 'softrelu', 'softsign']:
        add(C('Activation', [away(2, 3, 4)], {'act_type': act}))
    add(C('Activation', [away(2, 3, 4, lo=5.0, hi=30.0)], {'act_type': 'softrelu'},
          note='large |x|: overflow handling of log(1 + exp(x))'))
    add(C('sigmoid', [away(4, 5, lo=10.0, hi=40.0)], note='saturated sigmoid'))

    # ---- element-wise binary (same shape) ------------------------------------------------
    for op in ['elemwise_add', 'elemwise_sub', 'elemwise_mul']:
        add(C(op, [u(2, 3, 4), u(2, 3, 4)]))
    add(C('elemwise_div', [u(2, 3, 4), away(2, 3, 4, lo=0.5)]))
    add(C('_mod', [u(3, 4, lo=-5, hi=5), away(3, 4, lo=0.7, hi=2.0)],
          note='signs of both operands mixed: sign convention of mod'))
    add(C('_power', [pos(3, 4), u(3, 4, lo=-2, hi=2)]))
    add(C('_maximum', [distinct(3, 4), distinct(3, 4) + 0.1]))
    add(C('_minimum', [distinct(3, 4), distinct(3, 4) + 0.1]))
    add(C('_hypot', [away(3, 4), away(3, 4)]))
    for op in ['_equal', '_not_equal', '_greater', '_greater_equal', '_lesser', '_lesser_equal',
               '_logical_and', '_logical_or', '_logical_xor']:
        add(C(op, [ints(3, 4, lo=-1, hi=2), ints(3, 4, lo=-1, hi=2)]))

    # ---- broadcasting binary ---------------------------------------------------------------
    bshapes = [((2, 3, 4), (1, 3, 1)), ((3, 1), (1, 4)), ((2, 3), (2, 3)), ((4,), (3, 1))]
    for op in ['broadcast_add', 'broadcast_sub', 'broadcast_mul', 'broadcast_maximum',
               'broadcast_minimum', 'broadcast_hypot']:
        for sa, sb in bshapes:
            if op in ('broadcast_maximum', 'broadcast_minimum'):
                add(C(op, [distinct(*sa), distinct(*sb) + 0.1]))
            else:
                add(C(op, [away(*sa), away(*sb)]))
    for sa, sb in bshapes:
        add(C('broadcast_div', [u(*sa), away(*sb, lo=0.5)]))
        add(C('broadcast_power', [pos(*sa), u(*sb, lo=-2, hi=2)]))
        add(C('broadcast_mod', [u(*sa, lo=-5, hi=5), away(*sb, lo=0.7, hi=2.0)]))
    for op in ['broadcast_equal', 'broadcast_not_equal', 'broadcast_greater',
               'broadcast_greater_equal', 'broadcast_lesser', 'broadcast_lesser_equal',
               'broadcast_logical_and', 'broadcast_logical_or', 'broadcast_logical_xor']:
        add(C(op, [ints(2, 3, 4, lo=-1, hi=2), ints(1, 3, 1, lo=-1, hi=2)]))

    # ---- scalar ops ------------------------------------------------------------------------
    for op, scalar, gen in [('_plus_scalar', 1.5, u), ('_minus_scalar', 0.7, u),
                            ('_rminus_scalar', 2.0, u), ('_mul_scalar', -3.0, u),
                            ('_div_scalar', 4.0, u), ('_rdiv_scalar', 2.0, away),
                            ('_power_scalar', 3.0, u), ('_power_scalar', 0.5, pos),
                            ('_rpower_scalar', 2.5, u), ('_maximum_scalar', 0.1, away),
                            ('_minimum_scalar', -0.3, away), ('_hypot_scalar', 1.5, u)]:
        add(C(op, [gen(3, 4)], {'scalar': scalar}))
    add(C('_mod_scalar', [u(3, 4, lo=-5, hi=5)], {'scalar': 1.5}))
    add(C('_mod_scalar', [u(3, 4, lo=-5, hi=5)], {'scalar': -1.5}))
    add(C('_rmod_scalar', [away(3, 4, lo=0.7, hi=2.0)], {'scalar': 3.5}))
    for op in ['_equal_scalar', '_not_equal_scalar', '_greater_scalar', '_greater_equal_scalar',
               '_lesser_scalar', '_lesser_equal_scalar', '_logical_and_scalar',
               '_logical_or_scalar', '_logical_xor_scalar']:
        add(C(op, [ints(3, 4, lo=-1, hi=2)], {'scalar': 1.0}))
        add(C(op, [ints(3, 4, lo=-1, hi=2)], {'scalar': 0.0}))

    # ---- reductions ------------------------------------------------------------------------
    red_attrs = [{}, {'axis': 1}, {'axis': (0, 2), 'keepdims': True},
                 {'axis': 1, 'exclude': True}, {'axis': -1}]
    for op in ['sum', 'mean', 'prod', 'max', 'min']:
        for attrs in red_attrs:
            x = distinct(2, 3, 4) if op in ('max', 'min') else u(2, 3, 4, lo=0.5, hi=1.5)
            add(C(op, [x], attrs))
    for op in ['nansum', 'nanprod']:
        for attrs in red_attrs[:3]:
            x = u(2, 3, 4, lo=0.5, hi=1.5)
            x[0, 1, 2] = np.nan
            x[1, 0, 0] = np.nan
            add(C(op, [x], attrs, note='NaNs in the input'))
    for attrs in [{}, {'ord': 1}, {'ord': 2, 'axis': 1}, {'ord': 1, 'axis': (0, 2)},
                  {'ord': 2, 'axis': -1, 'keepdims': True}]:
        add(C('norm', [away(2, 3, 4)], attrs))
    for op in ['argmax', 'argmin']:
        for attrs in [{'axis': 1}, {'axis': -1, 'keepdims': True}, {}]:
            add(C(op, [distinct(2, 3, 4)], attrs))

    # ---- matrix products ---------------------------------------------------------------------
    add(C('dot', [u(3, 4), u(4, 5)]))
    add(C('dot', [u(4, 3), u(4, 5)], {'transpose_a': True}))
    add(C('dot', [u(3, 4), u(5, 4)], {'transpose_b': True}))
    add(C('dot', [u(4, 3), u(5, 4)], {'transpose_a': True, 'transpose_b': True}))
    add(C('dot', [u(2, 3, 4), u(4, 5)]))
    add(C('dot', [u(6), u(6)]))
    add(C('batch_dot', [u(2, 3, 4), u(2, 4, 5)]))
    add(C('batch_dot', [u(2, 4, 3), u(2, 5, 4)], {'transpose_a': True, 'transpose_b': True}))
    add(C('FullyConnected', [u(2, 3, 4), u(5, 12), u(5)], {'num_hidden': 5}))
    add(C('FullyConnected', [u(2, 3, 4), u(5, 4), u(5)], {'num_hidden': 5, 'flatten': False}))
    add(C('FullyConnected', [u(3, 6), u(4, 6)], {'num_hidden': 4, 'no_bias': True}))

    # ---- shape manipulation ------------------------------------------------------------------
    x = u(2, 3, 4)
    for attrs in [{'shape': (4, 6)}, {'shape': (0, -1)}, {'shape': (-1, 0)},
                  {'shape': (-2,)}, {'shape': (-3, 4)}, {'shape': (0, -4, 1, 3, 0)},
                  {'shape': (-1, 12), 'reverse': True}, {'shape': (2, -1, 2)}]:
        add(C('Reshape', [x], attrs))
    add(C('Flatten', [u(2, 3, 4)]))
    for attrs in [{}, {'axes': (1, 0, 2)}, {'axes': (2, 0, 1)}]:
        add(C('transpose', [u(2, 3, 4)], attrs))
    for axis in [0, 2, -1]:
        add(C('expand_dims', [u(2, 3)], {'axis': axis}))
    add(C('squeeze', [u(2, 1, 3, 1)]))
    add(C('squeeze', [u(2, 1, 3, 1)], {'axis': 1}))
    add(C('squeeze', [u(2, 1, 3, 1)], {'axis': (1, 3)}))
    add(C('SwapAxis', [u(2, 3, 4)], {'dim1': 0, 'dim2': 2}))
    for reps in [(2,), (2, 1, 3), (2, 2, 1, 1)]:
        add(C('tile', [u(2, 3, 1)], {'reps': reps}))
    add(C('repeat', [u(2, 3)], {'repeats': 2}))
    add(C('repeat', [u(2, 3)], {'repeats': 3, 'axis': 1}))
    add(C('repeat', [u(2, 3)], {'repeats': 2, 'axis': -2}))
    add(C('reverse', [u(2, 3, 4)], {'axis': 1}))
    add(C('reverse', [u(2, 3, 4)], {'axis': (0, 2)}))
    add(C('broadcast_to', [u(1, 3, 1)], {'shape': (2, 3, 4)}))
    add(C('broadcast_to', [u(1, 3, 1)], {'shape': (2, 0, 4)}))
    add(C('broadcast_axis', [u(1, 3, 1)], {'axis': (0, 2), 'size': (2, 4)}))
    add(C('broadcast_like', [u(1, 3, 1), u(2, 3, 4)], wrt=[0]))
    add(C('broadcast_like', [u(1, 3, 1), u(5, 2, 4)], {'lhs_axes': (0, 2), 'rhs_axes': (1, 2)},
          wrt=[0]))
    add(C('diag', [u(4, 5)]))
    add(C('diag', [u(4, 5)], {'k': 1}))
    add(C('diag', [u(4, 5)], {'k': -2}))
    add(C('diag', [u(4)]))
    add(C('diag', [u(4)], {'k': -1}))
    add(C('diag', [u(2, 3, 4)], {'axis1': 1, 'axis2': 2}))
    add(C('Concat', [u(2, 3), u(2, 4), u(2, 1)], {'dim': 1}))
    add(C('Concat', [u(2, 3), u(1, 3)], {'dim': 0}))
    add(C('stack', [u(2, 3), u(2, 3), u(2, 3)], {'axis': 1}))
    add(C('stack', [u(2, 3), u(2, 3)], {'axis': -1}))
    add(C('SliceChannel', [u(2, 6, 3)], {'num_outputs': 3}))
    add(C('SliceChannel', [u(2, 6, 3)], {'num_outputs': 2, 'axis': 0, 'squeeze_axis': True}))
    add(C('slice', [u(4, 5, 6)], {'begin': (1, 0), 'end': (3, 4)}))
    add(C('slice', [u(4, 5, 6)], {'begin': (None, 1, 0), 'end': (None, None, 6),
                                  'step': (2, 1, 3)}))
    add(C('slice', [u(4, 5, 6)], {'begin': (3, -1), 'end': (0, 1), 'step': (-1, -2)}))
    add(C('slice_axis', [u(4, 5)], {'axis': 1, 'begin': 1, 'end': 4}))
    add(C('slice_axis', [u(4, 5)], {'axis': 0, 'begin': -3, 'end': None}))
    add(C('slice_like', [u(4, 5, 6), u(2, 3, 4)], wrt=[0]))
    add(C('slice_like', [u(4, 5, 6), u(2, 3, 4)], {'axes': (0, 2)}, wrt=[0]))
    add(C('_slice_assign', [u(4, 5), u(2, 3)], {'begin': (1, 1), 'end': (3, 4)}))
    add(C('_slice_assign_scalar', [u(4, 5)], {'begin': (0, 1), 'end': (2, 5), 'scalar': 2.5}))
    add(C('take', [u(5, 4), np.array([[0, 3], [4, 1]], F32)], wrt=[0]))
    add(C('take', [u(5, 4), np.array([0, 3, 3, 1], F32)], {'axis': 1}, wrt=[0]))
    add(C('take', [u(5, 4), np.array([-1, 7, 2], F32)], {'mode': 'clip'}, wrt=[0]))
    add(C('take', [u(5, 4), np.array([-1, 7, 2], F32)], {'mode': 'wrap'}, wrt=[0]))
    add(C('pick', [u(3, 4), np.array([0, 3, 2], F32)], wrt=[0]))
    add(C('pick', [u(3, 4), np.array([0, 2, 1, 1], F32)], {'axis': 0, 'keepdims': True},
          wrt=[0]))
    add(C('pick', [u(3, 4), np.array([-1, 5, 2], F32)], {'mode': 'wrap'}, wrt=[0]))
    add(C('one_hot', [np.array([0, 2, 4, 1], F32)], {'depth': 5}))
    add(C('one_hot', [np.array([[0, 2], [3, 1]], F32)],
          {'depth': 4, 'on_value': 2.0, 'off_value': -1.0, 'dtype': 'int32'}))
    add(C('where', [ints(3, 4, lo=0, hi=2), u(3, 4), u(3, 4)], wrt=[1, 2]))
    add(C('where', [ints(3, lo=0, hi=2), u(3, 4), u(3, 4)], wrt=[1, 2],
          note='1-D condition selects rows'))
    add(C('clip', [away(3, 4, lo=0.05, hi=2.0)], {'a_min': -0.5, 'a_max': 0.7}))
    add(C('Embedding', [np.array([[0, 3], [2, 3]], F32), u(5, 4)],
          {'input_dim': 5, 'output_dim': 4}, wrt=[1]))
    add(C('SequenceMask', [u(4, 2, 3), np.array([2, 4], F32)],
          {'use_sequence_length': True}, wrt=[0]))
    add(C('SequenceMask', [u(2, 4, 3), np.array([1, 3], F32)],
          {'use_sequence_length': True, 'axis': 1, 'value': -1.0}, wrt=[0]))
    add(C('SequenceMask', [u(4, 2, 3)], {}))

    # ---- softmax family, activations ------------------------------------------------------------
    for op in ['softmax', 'log_softmax']:
        add(C(op, [n(2, 3, 4)]))
        add(C(op, [n(2, 3, 4)], {'axis': 1}))
        add(C(op, [n(2, 5)], {'temperature': 2.5}))
        add(C(op, [n(3, 4, scale=30.0)], {'axis': 0}, note='large logits: stability'))
    for attrs in [{'act_type': 'leaky', 'slope': 0.1}, {'act_type': 'elu', 'slope': 0.7},
                  {'act_type': 'selu'}, {'act_type': 'gelu'}]:
        add(C('LeakyReLU', [away(2, 3, 4)], attrs))
    add(C('LeakyReLU', [away(2, 3, 4), u(3, lo=0.1, hi=0.4)], {'act_type': 'prelu'}))
    add(C('LeakyReLU', [away(2, 3, 4)], {'act_type': 'rrelu'}, train=False,
          note='predict mode: slope (lower+upper)/2'))

    # ---- creation (no inputs) -------------------------------------------------------------------
    add(C('_zeros', [], {'shape': (2, 3)}))
    add(C('_ones', [], {'shape': (4,), 'dtype': 'int32'}))
    add(C('_full', [], {'shape': (2, 2), 'value': 3.25}))
    add(C('_arange', [], {'start': 1.0, 'stop': 4.0, 'step': 0.5}))
    add(C('_arange', [], {'start': 0.0, 'stop': 3.0, 'repeat': 2}))
    add(C('_arange', [], {'start': 5.0, 'stop': 0.0, 'step': -1.5}))
    add(C('_eye', [], {'N': 3}))
    add(C('_eye', [], {'N': 3, 'M': 5, 'k': 1}))
    add(C('_eye', [], {'N': 4, 'M': 3, 'k': -1}))

    # ---- sorting -------------------------------------------------------------------------------
    add(C('topk', [distinct(3, 5)], {'k': 2}))
    add(C('topk', [distinct(3, 5)], {'k': 2, 'ret_typ': 'value'}))
    add(C('topk', [distinct(3, 5)], {'k': 3, 'ret_typ': 'both', 'axis': 0, 'is_ascend': True}))
    add(C('topk', [distinct(3, 5)], {'k': 2, 'ret_typ': 'mask'}))
    add(C('topk', [distinct(2, 3, 4)], {'k': 2, 'axis': 1, 'ret_typ': 'value'}))
    # MXNet's sort gradient fails when axis is left at its default (its backward node
    # receives axis=''), so the axis is given explicitly.
    add(C('sort', [distinct(3, 5)], {'axis': -1}))
    add(C('sort', [distinct(3, 5)], {'axis': 0, 'is_ascend': False}))
    add(C('argsort', [distinct(3, 5)]))
    add(C('argsort', [distinct(3, 5)], {'axis': 0, 'is_ascend': False, 'dtype': 'int32'}))

    # ---- nn ------------------------------------------------------------------------------------
    add(C('Dropout', [u(3, 4)], {'p': 0.5}, train=False, note='predict mode: identity'))
    for mode in ['instance', 'channel', 'spatial']:
        add(C('L2Normalization', [away(2, 3, 4)], {'mode': mode}))
    # Convolution: 1-D, 2-D (stride, pad, dilate, groups, no bias), 3-D.
    add(C('Convolution', [n(2, 3, 9), n(4, 3, 3), n(4)], {'kernel': (3,), 'num_filter': 4}))
    add(C('Convolution', [n(2, 3, 7, 8), n(5, 3, 3, 3), n(5)],
          {'kernel': (3, 3), 'num_filter': 5, 'pad': (1, 1)}))
    add(C('Convolution', [n(2, 4, 9, 8), n(6, 2, 3, 2), n(6)],
          {'kernel': (3, 2), 'num_filter': 6, 'stride': (2, 1), 'pad': (1, 0),
           'dilate': (1, 2), 'num_group': 2}))
    add(C('Convolution', [n(1, 4, 6, 6), n(4, 1, 3, 3)],
          {'kernel': (3, 3), 'num_filter': 4, 'num_group': 4, 'no_bias': True,
           'stride': (2, 2), 'pad': (1, 1)}, note='depthwise'))
    add(C('Convolution', [n(2, 6, 5, 5), n(3, 6, 1, 1), n(3)], {'kernel': (1, 1), 'num_filter': 3}))
    add(C('Convolution', [n(1, 2, 4, 5, 5), n(3, 2, 2, 3, 3), n(3)],
          {'kernel': (2, 3, 3), 'num_filter': 3, 'pad': (0, 1, 1), 'stride': (1, 2, 1)}))
    # Deconvolution.
    add(C('Deconvolution', [n(2, 3, 5, 5), n(3, 4, 3, 3)], {'kernel': (3, 3), 'num_filter': 4}))
    add(C('Deconvolution', [n(2, 4, 4, 5), n(4, 3, 3, 3), n(6)],
          {'kernel': (3, 3), 'num_filter': 6, 'stride': (2, 2), 'pad': (1, 1), 'adj': (1, 0),
           'num_group': 2, 'no_bias': False}))
    add(C('Deconvolution', [n(1, 2, 4, 4), n(2, 3, 4, 4)],
          {'kernel': (4, 4), 'num_filter': 3, 'stride': (2, 2), 'pad': (1, 1),
           'target_shape': (8, 8)}))
    add(C('Deconvolution', [n(2, 3, 7), n(3, 2, 3), n(2)],
          {'kernel': (3,), 'num_filter': 2, 'stride': (2,), 'dilate': (2,), 'no_bias': False}))
    # Pooling.
    x = distinct(2, 3, 7, 8)
    for attrs in [{'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'max'},
                  {'kernel': (3, 3), 'stride': (2, 2), 'pad': (1, 1), 'pool_type': 'max'},
                  {'kernel': (3, 3), 'stride': (2, 2), 'pool_type': 'max',
                   'pooling_convention': 'full'},
                  {'kernel': (3, 2), 'stride': (1, 2), 'pad': (1, 1), 'pool_type': 'avg'},
                  {'kernel': (3, 3), 'stride': (2, 2), 'pad': (1, 1), 'pool_type': 'avg',
                   'count_include_pad': False},
                  {'kernel': (3, 3), 'stride': (2, 2), 'pool_type': 'avg',
                   'pooling_convention': 'full'},
                  {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'sum'},
                  {'kernel': (2, 2), 'stride': (2, 2), 'pool_type': 'lp', 'p_value': 2},
                  {'kernel': (2, 3), 'stride': (1, 1), 'pool_type': 'lp', 'p_value': 1},
                  {'kernel': (1, 1), 'global_pool': True, 'pool_type': 'max'},
                  {'kernel': (1, 1), 'global_pool': True, 'pool_type': 'avg'}]:
        add(C('Pooling', [x if attrs.get('pool_type') == 'max' else away(2, 3, 7, 8)], attrs))
    add(C('Pooling', [distinct(2, 3, 9)], {'kernel': (3,), 'stride': (2,), 'pool_type': 'max'}))
    add(C('Pooling', [u(2, 3, 9)], {'kernel': (3,), 'stride': (2,), 'pool_type': 'avg',
                                    'pad': (1,)}))
    add(C('Pooling', [distinct(1, 2, 4, 5, 6)], {'kernel': (2, 2, 3), 'stride': (2, 2, 2),
                                                 'pool_type': 'max'}))
    add(C('Pooling', [u(1, 2, 4, 5, 6)], {'kernel': (2, 2, 2), 'stride': (1, 2, 2),
                                          'pool_type': 'avg'}))
    # Cast.
    add(C('Cast', [u(3, 4)], {'dtype': 'float64'}))
    add(C('Cast', [u(3, 4, lo=-5, hi=5)], {'dtype': 'int32'}, grad=False))
    add(C('Cast', [u(3, 4, lo=0, hi=200)], {'dtype': 'uint8'}, grad=False))
    add(C('Cast', [u(3, 4)], {'dtype': 'float16'}))
    add(C('add_n', [u(2, 3), u(2, 3), u(2, 3)]))
    add(C('add_n', [u(4), u(4)]))
    # Pad (4-D and 5-D, only the spatial axes may be padded).
    for mode in ['constant', 'edge', 'reflect']:
        add(C('Pad', [u(2, 3, 4, 5)], {'mode': mode,
                                       'pad_width': (0, 0, 0, 0, 1, 2, 2, 1)}))
    add(C('Pad', [u(1, 2, 3, 4, 4)], {'mode': 'constant', 'constant_value': 1.5,
                                      'pad_width': (0, 0, 0, 0, 1, 0, 0, 1, 2, 2)}))
    add(C('UpSampling', [u(2, 3, 4, 5)], {'scale': 2, 'sample_type': 'nearest',
                                          'num_args': 1}))
    add(C('UpSampling', [u(2, 3, 2, 3)], {'scale': 3, 'sample_type': 'nearest',
                                          'num_args': 1}))
    # Normalisation.
    x = n(4, 3, 5, 2)
    g, b = u(3, lo=0.5, hi=1.5), u(3)
    mm, mv = u(3, lo=-0.2, hi=0.2), u(3, lo=0.5, hi=1.5)
    add(C('BatchNorm', [x, g, b, mm, mv], {'fix_gamma': False}, train=True, wrt=[0, 1, 2],
          mutates=[3, 4], note='training: batch statistics, moving averages updated'))
    add(C('BatchNorm', [x, g, b, mm, mv], {'fix_gamma': True, 'momentum': 0.8, 'eps': 1e-5},
          train=True, wrt=[0, 1, 2], mutates=[3, 4], note='training, fix_gamma'))
    add(C('BatchNorm', [x, g, b, mm, mv], {'fix_gamma': False}, train=False, wrt=[0, 1, 2],
          note='inference: moving statistics'))
    add(C('BatchNorm', [x, g, b, mm, mv], {'fix_gamma': False, 'use_global_stats': True},
          train=True, wrt=[0, 1, 2], mutates=[3, 4], note='use_global_stats while training'))
    add(C('BatchNorm', [n(3, 4, 3), u(3, lo=0.5, hi=1.5), u(3), u(3), u(3, lo=0.5, hi=1.5)],
          {'fix_gamma': False, 'axis': -1}, train=True, wrt=[0, 1, 2], mutates=[3, 4],
          note='channel-last axis'))
    add(C('BatchNorm', [n(5, 3), u(3, lo=0.5, hi=1.5), u(3), u(3), u(3, lo=0.5, hi=1.5)],
          {'fix_gamma': False, 'output_mean_var': True}, train=True, wrt=[0, 1, 2],
          mutates=[3, 4], note='2-D input, mean and var outputs'))
    add(C('LayerNorm', [n(2, 3, 4), u(4, lo=0.5, hi=1.5), u(4)]))
    add(C('LayerNorm', [n(2, 3, 4), u(3, lo=0.5, hi=1.5), u(3)], {'axis': 1, 'eps': 1e-3}))
    add(C('LayerNorm', [n(2, 5), u(5, lo=0.5, hi=1.5), u(5)], {'output_mean_var': True}))
    add(C('InstanceNorm', [n(2, 3, 4, 5), u(3, lo=0.5, hi=1.5), u(3)]))
    add(C('InstanceNorm', [n(2, 3, 6), u(3, lo=0.5, hi=1.5), u(3)], {'eps': 1e-5}))
    add(C('GroupNorm', [n(2, 4, 3, 2), u(2, lo=0.5, hi=1.5), u(2)], {'num_groups': 2}))
    add(C('GroupNorm', [n(2, 6, 5), u(3, lo=0.5, hi=1.5), u(3)], {'num_groups': 3,
                                                                  'eps': 1e-3}))
    add(C('GroupNorm', [n(2, 4, 3), u(2, lo=0.5, hi=1.5), u(2)], {'num_groups': 2,
                                                                  'output_mean_var': True}))

    # ---- other dtypes: float64 (tight), float16 (loose), int32 (exact) ----------------------
    add(C('exp', [u(3, 4, dtype='float64')]))
    add(C('sum', [u(2, 3, 4, dtype='float64')], {'axis': 1}))
    add(C('dot', [u(3, 4, dtype='float64'), u(4, 2, dtype='float64')]))
    add(C('broadcast_add', [u(2, 3, dtype='float64'), u(1, 3, dtype='float64')]))
    add(C('softmax', [n(2, 5).astype('float64')]))
    add(C('FullyConnected', [u(2, 6, dtype='float64'), u(3, 6, dtype='float64'),
                             u(3, dtype='float64')], {'num_hidden': 3}))
    add(C('Convolution', [n(1, 2, 5, 5).astype('float64'), n(3, 2, 3, 3).astype('float64'),
                          n(3).astype('float64')], {'kernel': (3, 3), 'num_filter': 3}))
    add(C('relu', [away(3, 4, dtype='float16')]))
    add(C('broadcast_mul', [u(2, 3, dtype='float16'), u(1, 3, dtype='float16')]))
    add(C('sum', [u(3, 4, dtype='float16')], {'axis': 0}))
    add(C('sum', [ints(2, 3, 4, lo=-5, hi=5, dtype='int32')], {'axis': 1}))
    add(C('elemwise_add', [ints(3, 4, lo=-9, hi=9, dtype='int32'),
                           ints(3, 4, lo=-9, hi=9, dtype='int32')]))
    add(C('broadcast_mul', [ints(2, 3, lo=-9, hi=9, dtype='int32'),
                            ints(1, 3, lo=-9, hi=9, dtype='int32')]))
    add(C('abs', [ints(3, 4, lo=-9, hi=9, dtype='int32')]))
    add(C('softmax', [n(2, 5)], {'dtype': 'float64'}, note='float32 input, float64 output'))
    add(C('argmax', [distinct(3, 4).astype('float64')], {'axis': 1}))

    # ---- optimizer updates: one step; the states are compared after it ---------------------
    w, dw = u(3, 4), u(3, 4)
    st = [u(3, 4, lo=0.0, hi=0.5) for _ in range(3)]
    common = {'lr': 0.1, 'wd': 0.01, 'rescale_grad': 0.5, 'clip_gradient': 0.3}
    add(C('sgd_update', [w, dw], dict(common), grad=False))
    add(C('sgd_mom_update', [w, dw, st[0]], dict(common, momentum=0.9), grad=False,
          mutates=[2]))
    add(C('nag_mom_update', [w, dw, st[0]], dict(common, momentum=0.9), grad=False,
          mutates=[2]))
    add(C('adam_update', [w, dw, st[0], st[1]], dict(common, beta1=0.8, beta2=0.99,
                                                     epsilon=1e-6), grad=False, mutates=[2, 3]))
    add(C('_adamw_update', [w, dw, st[0], st[1], np.array([0.5], F32)],
          dict(lr=0.1, wd=0.01, clip_gradient=0.3, eta=0.7, beta1=0.8, beta2=0.99,
               epsilon=1e-6), grad=False, mutates=[2, 3]))
    add(C('rmsprop_update', [w, dw, st[0]], dict(common, gamma1=0.9, epsilon=1e-6,
                                                  clip_weights=0.5), grad=False, mutates=[2]))
    add(C('rmspropalex_update', [w, dw, st[0], st[1], st[2]],
          dict(common, gamma1=0.9, gamma2=0.8, epsilon=1e-4), grad=False, mutates=[2, 3, 4]))
    add(C('signsgd_update', [w, dw], {'lr': 0.05, 'wd': 0.1}, grad=False))
    add(C('signum_update', [w, dw, st[0]], dict(common, momentum=0.9, wd_lh=0.02),
          grad=False, mutates=[2]))
    add(C('ftrl_update', [w, dw, st[0], st[1]], dict(common, lamda1=0.05, beta=0.5),
          grad=False, mutates=[2, 3]))
    add(C('lamb_update_phase1', [w, dw, st[0], st[1]],
          dict(wd=0.01, rescale_grad=0.5, clip_gradient=0.3, beta1=0.8, beta2=0.99,
               epsilon=1e-6, t=3, bias_correction=True), grad=False, mutates=[2, 3]))
    add(C('lamb_update_phase2', [w, dw, np.array([1.5], F32), np.array([0.7], F32)],
          {'lr': 0.1, 'lower_bound': 0.1, 'upper_bound': 5.0}, grad=False))
    w16 = w.astype('float16')
    add(C('mp_sgd_update', [w16, dw.astype('float16'), w], dict(common), grad=False,
          mutates=[2]))
    add(C('mp_sgd_mom_update', [w16, dw.astype('float16'), st[0], w],
          dict(common, momentum=0.9), grad=False, mutates=[2, 3]))
    add(C('mp_nag_mom_update', [w16, dw.astype('float16'), st[0], w],
          dict(common, momentum=0.9), grad=False, mutates=[2, 3]))
    # Added after the others (the shared generator keeps the earlier cases' inputs as they
    # were): the MXNet shape and output rules of issue 7's fixes, in more settings.
    add(C('pick', [u(3, 4), np.array([[0], [3], [2]], F32)], {'axis': 1, 'keepdims': True},
          wrt=[0], note='index with the picked axis kept'))
    add(C('pick', [u(3, 4), np.array([[0], [3], [2]], F32)], {'axis': 1},
          wrt=[0], note='index with the picked axis kept, keepdims=False'))
    add(C('pick', [u(2, 3, 4), np.array([[1, 0, 2, 2], [0, 2, 1, 0]], F32)],
          {'axis': 1, 'keepdims': True}, wrt=[0], note='middle axis, index without it'))
    add(C('BatchNorm', [n(4, 3, 2), u(3, lo=0.5, hi=1.5), u(3), u(3), u(3, lo=0.5, hi=1.5)],
          {'fix_gamma': False, 'output_mean_var': True}, train=False, wrt=[0, 1, 2],
          note='predict mode: the moving statistics'))
    add(C('LayerNorm', [n(2, 3, 4), u(3, lo=0.5, hi=1.5), u(3)],
          {'axis': 1, 'output_mean_var': True}))
    add(C('GroupNorm', [n(3, 6, 2, 2), u(3, lo=0.5, hi=1.5), u(3)],
          {'num_groups': 3, 'eps': 1e-3, 'output_mean_var': True}))
    add(C('LeakyReLU', [n(3, 5, scale=3.0, dtype='float64')], {'act_type': 'selu'},
          note='float64, down to the region where MXNet\'s gradient changes sign'))
    # CTCLoss (issue 12), after the others for the same reason.
    add(C('CTCLoss', [n(5, 3, 4), np.array([[1, 2, 0], [3, 3, 0], [2, 1, 3]], F32)], wrt=[0],
          note='blank first, labels end at 0'))
    add(C('CTCLoss', [n(6, 2, 5), np.array([[0, 1, 1], [3, 2, 0]], F32),
                      np.array([6, 4], F32), np.array([3, 1], F32)],
          {'blank_label': 'last', 'use_data_lengths': True, 'use_label_lengths': True},
          wrt=[0], note='blank last, data and label lengths'))
    add(C('CTCLoss', [n(4, 2, 3), np.array([[0, -1], [1, 0]], F32), np.array([1, 2], F32)],
          {'blank_label': 'last', 'use_label_lengths': True}, wrt=[0],
          note='label lengths only'))
    cases.extend(__import__('op_cases_linalg').build_linalg_cases(C))
    cases.extend(__import__('op_cases_legacyops').cases())  # output layers, softmax family
    import op_cases_contribops; cases.extend(op_cases_contribops.cases())  # noqa: E702
    cases.extend(__import__('op_cases_tensorops').tensorops_cases())
    cases.extend(__import__('op_cases_vision').build_vision_cases())
    cases.extend(__import__('op_cases_ndfront').build_cases())  # helper ndfront's, own seed
    cases.extend(__import__('op_cases_ops2').build_ops2_cases())  # helper ops2's, own seed
    cases.extend(__import__('op_cases_opmisc').build_opmisc_cases())  # helper opmisc's, own seed
    cases.extend(__import__('op_cases_infer').build_infer_cases())  # helper infer's, own seed
    cases.extend(__import__('op_cases_rnn').build_rnn_cases())  # helper rnnop's, own seed
    cases.extend(__import__('op_cases_vision').build_image_cases())  # helper vision's, own seed
    return cases
