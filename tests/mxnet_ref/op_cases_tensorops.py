"""MXNet conformance cases of the tensor ops added for MXNet's unit tests (tensor_extra.c,
tensor_num.c, the FTML / mp-LAMB updates and reset_arrays). A generator of its own, so adding
these leaves the other fixtures as they were. See op_cases.py for the case format."""
import numpy as np

from op_cases import C

F32 = 'float32'


def tensorops_cases(seed=20261125):
    rng = np.random.default_rng(seed)

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def ints(lo, hi, *shape, dtype='int32'):
        return rng.integers(lo, hi, size=shape).astype(dtype)

    cases = []
    add = cases.append
    # shape ops
    add(C('reshape_like', [n(2, 12), np.zeros((6, 3, 4), F32)],
          {'lhs_begin': 1, 'rhs_begin': 1}, wrt=[0]))
    add(C('reshape_like', [n(30, 7), np.zeros((15, 2, 4), F32)],
          {'lhs_begin': 0, 'lhs_end': 1, 'rhs_begin': 0, 'rhs_end': 2}, wrt=[0]))
    add(C('reshape_like', [n(4, 6), np.zeros((3, 8), F32)], wrt=[0]))
    add(C('shape_array', [n(2, 3, 4)], grad=False))
    add(C('size_array', [n(2, 3, 4)], grad=False))
    add(C('argmax_channel', [n(3, 7)], grad=False))
    add(C('argmax_channel', [n(2, 3, 5)], grad=False))
    add(C('batch_take', [n(4, 5), ints(-1, 7, 4)], grad=False, note='indices clipped'))
    add(C('gather_nd', [n(3, 4, 2), np.array([[0, 2, 1, 0], [1, 3, 0, 1]], F32)], wrt=[0],
          note='a repeated index: the gradient adds up'))
    add(C('gather_nd', [n(5, 3), np.array([[4, -1, 0]], 'int64')], grad=False,
          note='negative index from the end (MXNet\'s backward corrupts memory with it)'))
    add(C('scatter_nd', [n(3, 2), np.array([[0, 2, 1], [1, 0, 1]], 'int32')],
          {'shape': (3, 2, 2)}, wrt=[0]))
    # _scatter_set_nd: MXNet runs it only in place (out=lhs), which the fixture runner does not
    # do; tests/test_ops_tensor_extra.py checks it against NumPy.
    add(C('depth_to_space', [n(2, 8, 2, 3)], {'block_size': 2}))
    add(C('space_to_depth', [n(1, 3, 6, 9)], {'block_size': 3}))
    add(C('_ravel_multi_index', [np.array([[0, 2, 1], [3, 0, 2]], F32)], {'shape': (3, 4)},
          grad=False))
    add(C('_ravel_multi_index', [np.array([[5, 2], [3, 0], [1, 1]], 'int64')],
          {'shape': (-1, 4, 2)}, grad=False, note='leading -1'))
    add(C('_unravel_index', [np.array([1, 11, 13, 7], F32)], {'shape': (3, 4)}, grad=False,
          note='13 is beyond the shape: the first coordinate is not wrapped'))
    add(C('_split_v2', [n(6, 4)], {'indices': (0, 2, 3), 'axis': 0}))
    add(C('_split_v2', [n(3, 5, 2)], {'indices': (), 'sections': 2, 'axis': 2,
                                      'squeeze_axis': False}))
    add(C('_split_v2', [n(3, 2)], {'indices': (), 'sections': 3, 'axis': 0,
                                   'squeeze_axis': True}))
    add(C('fill_element_0index', [n(3, 4), n(3), np.array([0, 3, 1], F32)], grad=False))
    add(C('_onehot_encode', [np.array([0, 2, 1], F32), np.zeros((3, 4), F32)], grad=False))
    add(C('khatri_rao', [n(2, 3), n(4, 3)], grad=False))
    add(C('khatri_rao', [n(2, 2), n(1, 2), n(3, 2)], grad=False))
    # numeric ops
    add(C('logical_not', [np.array([[0, 1.5], [-2, 0]], F32)], grad=False))
    add(C('logical_not', [np.array([0, 3, -1], 'int32')], grad=False))
    add(C('cumsum', [n(3, 4)], {'axis': 1}))
    add(C('cumsum', [n(2, 3, 2)], {}, note='axis None flattens'))
    add(C('cumsum', [ints(-50, 50, 4, 3, dtype='int8')], {'axis': 0}, grad=False,
          note='int8 sums wrap'))
    add(C('cumsum', [n(5)], {'axis': 0, 'dtype': 'float64'}, grad=False))
    add(C('moments', [n(3, 4)], {'axes': (1,)}))
    add(C('moments', [n(2, 3, 4)], {'axes': (0, 2), 'keepdims': True}))
    add(C('moments', [n(4, 5, dtype='float64')], {'axes': (0, 1)}))
    add(C('erfinv', [rng.uniform(-0.95, 0.95, (3, 4)).astype(F32)]))
    add(C('all_finite', [n(3, 4)], grad=False))
    add(C('all_finite', [np.array([1.0, np.inf, 2.0], F32)], grad=False))
    add(C('multi_all_finite', [n(3), np.array([np.nan, 1], F32)], {'num_arrays': 2},
          grad=False))
    add(C('amp_cast', [n(3, 4)], {'dtype': 'float16'}, grad=False))
    add(C('amp_cast', [n(3, 4, dtype='float16')], {'dtype': 'float32'}))
    add(C('amp_cast', [ints(0, 9, 3)], {'dtype': 'float16'}, grad=False,
          note='integers pass unchanged'))
    # (MXNet's CPU build runs amp_multicast through oneDNN, which takes float32 only; the
    # dtype rules are tested against NumPy in tests/test_ops_tensor_extra.py)
    add(C('amp_multicast', [n(2, 3), n(3)], {'num_outputs': 2}))
    add(C('amp_multicast', [n(2, 3), n(3)], {'num_outputs': 2, 'cast_narrow': True},
          grad=False))
    add(C('_histogram', [n(40)], {'bin_cnt': 5, 'range': (-2.0, 2.0)}, grad=False))
    add(C('_histogram', [n(6, 5), np.array([-1.0, 0.5, 2.0, 4.5], F32)], grad=False))
    add(C('_linspace', [], {'start': -1.0, 'stop': 2.0, 'num': 7}, grad=False))
    add(C('_linspace', [], {'start': 0.0, 'stop': 1.0, 'num': 4, 'endpoint': False,
                            'dtype': 'float64'}, grad=False))
    # optimizer updates
    w = n(3, 4)
    add(C('ftml_update', [w, n(3, 4), np.abs(n(3, 4)) + 0.5, np.abs(n(3, 4)), n(3, 4)],
          {'lr': 0.1, 't': 2, 'wd': 0.01, 'clip_grad': 1.0, 'rescale_grad': 0.5}, grad=False,
          mutates=[2, 3, 4]))
    w32 = n(3, 4)
    add(C('mp_lamb_update_phase1', [w32.astype('float16'), n(3, 4, dtype='float16'),
                                    n(3, 4) * 0.1, np.abs(n(3, 4)) * 0.1, w32],
          {'t': 3, 'wd': 0.01, 'rescale_grad': 2.0}, grad=False, mutates=[2, 3]))
    add(C('mp_lamb_update_phase2', [w32.astype('float16'), n(3, 4), np.array([1.5], F32),
                                    np.array([2.0], F32), w32],
          {'lr': 0.05, 'lower_bound': 0.1, 'upper_bound': 1.0}, grad=False))
    add(C('reset_arrays', [n(2, 3), n(4)], {'num_arrays': 2}, grad=False, mutates=[0, 1]))
    return cases
