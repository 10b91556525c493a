"""Conformance cases of MXNet's legacy output layers and the softmax family (legacy_output.c,
softmax.c): SoftmaxOutput, the RegressionOutputs, SVMOutput, MakeLoss, softmax_cross_entropy,
softmax with use_length, softmin, SoftmaxActivation, hard_sigmoid, smooth_l1.

The output layers ignore the head gradient, so the fixtures' random head gradients check that
too. Labels are float32 like the data (MXNet wants one dtype) and are never differentiated.
Own seeded generator, so these cases leave the other fixtures' inputs unchanged.
"""
import numpy as np

from op_cases import C, F32

F64 = 'float64'


def cases(seed=20261125):
    rng = np.random.default_rng(seed)
    out = []
    add = out.append

    def n(*shape, scale=1.0, dtype=F32):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    def u(*shape, lo=-1.0, hi=1.0, dtype=F32):
        return rng.uniform(lo, hi, shape).astype(dtype)

    def labels(*shape, k, dtype=F32):
        return rng.integers(0, k, shape).astype(dtype)

    # ---- SoftmaxOutput -------------------------------------------------------------------
    so = 'SoftmaxOutput'
    add(C(so, [n(4, 5), labels(4, k=5)], wrt=[0]))
    add(C(so, [n(4, 5), labels(4, k=5)], {'grad_scale': 2.0, 'normalization': 'batch'},
          wrt=[0]))
    add(C(so, [n(6, 5), np.array([1, 0, 1, 3, 4, 2], F32)],
          {'use_ignore': True, 'ignore_label': 1, 'normalization': 'valid'}, wrt=[0]))
    add(C(so, [n(6, 5), np.array([1, 0, 1, 3, 4, 2], F32)],
          {'ignore_label': 1, 'normalization': 'valid'}, wrt=[0],
          note="'valid' counts labels != ignore_label even without use_ignore"))
    add(C(so, [n(4, 5), labels(4, k=5)], {'smooth_alpha': 0.1}, wrt=[0]))
    add(C(so, [n(4, 5), labels(4, k=5)],
          {'smooth_alpha': 0.2, 'use_ignore': True, 'ignore_label': 0}, wrt=[0]))
    add(C(so, [n(3, 4, 5), labels(3, 5, k=4)], {'multi_output': True}, wrt=[0]))
    add(C(so, [n(3, 4, 5), labels(3, 5, k=4)], {'multi_output': True, 'normalization': 'batch',
                                                'grad_scale': 3.0}, wrt=[0]))
    add(C(so, [n(3, 4, 2, 3), np.where(rng.random((3, 2, 3)) < 0.3, -1,
                                       labels(3, 2, 3, k=4)).astype(F32)],
          {'multi_output': True, 'use_ignore': True, 'normalization': 'valid'}, wrt=[0],
          note='label (n, d2, d3), ignored -1 entries'))
    add(C(so, [n(3, 4, 5), labels(3, 4, k=5)], {'preserve_shape': True}, wrt=[0]))
    add(C(so, [n(2, 3, 4), labels(2, 3, k=12)], wrt=[0],
          note='3-D data without multi_output: softmax over the flattened rows'))
    p = np.exp(n(4, 5))
    add(C(so, [n(4, 5), (p / p.sum(1, keepdims=True)).astype(F32)], {'grad_scale': 0.5},
          wrt=[0], note='probability label'))
    add(C(so, [n(4, 5), labels(4, k=5)], {'out_grad': True}, wrt=[0]))
    add(C(so, [n(4, 5, dtype=F64), labels(4, k=5, dtype=F64)], {'normalization': 'batch'},
          wrt=[0]))
    # ---- regression outputs --------------------------------------------------------------
    add(C('LinearRegressionOutput', [n(4, 3), n(4, 3)], wrt=[0]))
    add(C('LinearRegressionOutput', [n(5, 1), n(5)], {'grad_scale': 0.5}, wrt=[0]))
    add(C('LinearRegressionOutput', [n(3, 2, 2, dtype=F64), n(3, 4, dtype=F64)], wrt=[0]))
    add(C('MAERegressionOutput', [n(4, 3), n(4, 3)], wrt=[0]))
    add(C('MAERegressionOutput', [n(6), n(6)], {'grad_scale': 2.0}, wrt=[0]))
    add(C('LogisticRegressionOutput', [n(4, 3), u(4, 3, lo=0, hi=1)], wrt=[0]))
    add(C('LogisticRegressionOutput', [n(5, 1), labels(5, k=2)], {'grad_scale': 3.0},
          wrt=[0]))
    # ---- SVMOutput ------------------------------------------------------------------------
    add(C('SVMOutput', [n(5, 4, scale=2.0), labels(5, k=4)], wrt=[0]))
    add(C('SVMOutput', [n(5, 4, scale=2.0), labels(5, k=4)], {'use_linear': True}, wrt=[0]))
    add(C('SVMOutput', [n(5, 4, scale=2.0), labels(5, k=4)],
          {'margin': 0.5, 'regularization_coefficient': 2.0}, wrt=[0]))
    add(C('SVMOutput', [n(2, 3, 4, scale=2.0), labels(2, 3, k=4)],
          {'use_linear': True, 'margin': 1.5}, wrt=[0]))
    # ---- MakeLoss -------------------------------------------------------------------------
    add(C('MakeLoss', [n(3, 4)]))
    add(C('MakeLoss', [n(3, 4)], {'grad_scale': 0.3, 'normalization': 'batch'}))
    add(C('MakeLoss', [n(2, 3, 4)], {'normalization': 'batch'}))
    add(C('MakeLoss', [n(3, 4)], {'normalization': 'valid', 'valid_thresh': 0.25,
                                  'grad_scale': 2.0}))
    add(C('MakeLoss', [-np.abs(n(3, 4))], {'normalization': 'valid'},
          note='nothing valid: divided by 1'))
    # ---- softmax_cross_entropy -----------------------------------------------------------
    add(C('softmax_cross_entropy', [n(4, 5), labels(4, k=5)], wrt=[0]))
    add(C('softmax_cross_entropy', [n(3, 7, dtype=F64), labels(3, k=7, dtype=F64)], wrt=[0]))
    # ---- softmax family: use_length, softmin, SoftmaxActivation --------------------------
    add(C('softmax', [n(3, 5, 4), rng.integers(1, 6, (3, 4)).astype('int32')],
          {'axis': 1, 'use_length': True}, wrt=[0]))
    add(C('softmax', [n(4, 6), rng.integers(0, 7, (4,)).astype('int32')],
          {'use_length': True, 'temperature': 2.0}, wrt=[0], note='length 0 and full'))
    add(C('softmax', [n(2, 3, 5, dtype=F64), rng.integers(1, 4, (2, 5)).astype('int64')],
          {'axis': 1, 'use_length': True}, wrt=[0]))
    add(C('softmin', [n(3, 5)]))
    add(C('softmin', [n(3, 4, 2)], {'axis': 1, 'temperature': 2.0}))
    add(C('softmin', [n(4, 3, dtype=F64)], {'axis': 0}))
    add(C('SoftmaxActivation', [n(3, 6)]))
    add(C('SoftmaxActivation', [n(2, 4, 3)], {'mode': 'channel'}))
    add(C('SoftmaxActivation', [n(2, 4, 2, 3)], {'mode': 'channel'}))
    # ---- hard_sigmoid, smooth_l1 (inputs off their kinks) --------------------------------
    away = (u(5, 6, lo=0.1, hi=4.0) * rng.choice([-1.0, 1.0], (5, 6))).astype(F32)
    add(C('hard_sigmoid', [np.where(np.abs(np.abs(away) - 2.5) < 0.1, away * 0.5, away)
                           .astype(F32)]))
    add(C('hard_sigmoid', [u(4, 5, lo=-3, hi=3, dtype=F64)], {'alpha': 0.3, 'beta': 0.4}))
    sl = u(5, 6, lo=-3, hi=3)
    add(C('smooth_l1', [np.where(np.abs(np.abs(sl) - 1) < 0.05, sl * 0.5, sl).astype(F32)]))
    sl = u(4, 5, lo=-1, hi=1, dtype=F64)
    add(C('smooth_l1', [np.where(np.abs(np.abs(sl) - 0.25) < 0.02, sl * 0.5, sl)],
          {'scalar': 2.0}))
    # ---- sequence ops, LRN, Crop (added after the others: earlier inputs stay as they were)
    # MXNet 1.9.1's SequenceLast backward without sequence_length reads uninitialised
    # indices (it crashes): forward only there
    add(C('SequenceLast', [n(4, 3, 2)], grad=False))
    add(C('SequenceLast', [n(4, 3, 2), np.array([1, 4, 2], F32)],
          {'use_sequence_length': True}, wrt=[0]))
    add(C('SequenceLast', [n(3, 5, 2, 2), np.array([5, 1, 3], F32)],
          {'use_sequence_length': True, 'axis': 1}, wrt=[0]))
    add(C('SequenceLast', [n(3, 5, dtype=F64)], {'axis': 1}, grad=False))
    add(C('SequenceReverse', [n(5, 3, 2)]))
    add(C('SequenceReverse', [n(5, 3, 2), np.array([5, 2, 1], F32)],
          {'use_sequence_length': True}, wrt=[0]))
    add(C('SequenceReverse', [n(4, 2, dtype=F64), np.array([3, 4], F64)],
          {'use_sequence_length': True}, wrt=[0]))
    add(C('LRN', [n(2, 5, 3, 4)], {'nsize': 3}))
    add(C('LRN', [n(2, 6, 2, 3, scale=3.0)], {'nsize': 5, 'alpha': 0.01, 'beta': 0.5,
                                               'knorm': 1.0}))
    add(C('LRN', [n(1, 3, 2, 2)], {'nsize': 1}))
    add(C('Crop', [n(2, 3, 5, 6)], {'h_w': (3, 4), 'offset': (1, 2)}))
    add(C('Crop', [n(2, 3, 5, 6), n(1, 1, 2, 3)], {'center_crop': True}, wrt=[0]))
    add(C('Crop', [n(1, 2, 4, 4), n(2, 3, 3, 2)], {'offset': (1, 0)}, wrt=[0]))
    return out
