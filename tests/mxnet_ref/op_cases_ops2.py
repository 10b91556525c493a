"""Conformance cases of helper ops2's ops (deformable convolutions, nd.image, Proposal),
appended to op_cases.build_cases with their own seeded generator so that the other fixtures do
not move. Needs NumPy only."""
import numpy as np

from op_cases import C

F32 = 'float32'


def build_ops2_cases(seed=20261126):
    rng = np.random.default_rng(seed)

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def offsets(*shape):
        """|fraction| away from grid lines: integer part in [-2, 2], fraction in [0.1, 0.9]."""
        return (rng.integers(-2, 3, shape) + rng.uniform(0.1, 0.9, shape)).astype(F32)

    cases = []
    add = cases.append
    # DeformableConvolution: groups, deformable groups, stride / pad / dilation, no bias
    add(C('_contrib_DeformableConvolution',
          [n(2, 4, 5, 6), offsets(2, 36, 5, 6), n(6, 2, 3, 3), n(6)],
          {'kernel': (3, 3), 'pad': (1, 1), 'num_filter': 6, 'num_group': 2,
           'num_deformable_group': 2}))
    add(C('_contrib_DeformableConvolution', [n(1, 3, 7, 6), offsets(1, 12, 3, 4), n(4, 3, 2, 3)],
          {'kernel': (2, 3), 'stride': (2, 1), 'dilate': (2, 1), 'pad': (0, 0), 'num_filter': 4,
           'no_bias': True}))
    add(C('_contrib_DeformableConvolution',
          [n(1, 2, 4, 4, dtype='float64'), offsets(1, 8, 5, 5).astype('float64'),
           n(3, 2, 2, 2, dtype='float64'), n(3, dtype='float64')],
          {'kernel': (2, 2), 'pad': (1, 1), 'stride': (1, 1), 'num_filter': 3}))
    # ModulatedDeformableConvolution: MXNet's CPU build has no backward, forward only
    add(C('_contrib_ModulatedDeformableConvolution',
          [n(2, 4, 5, 6), offsets(2, 36, 5, 6), rng.uniform(0, 1, (2, 18, 5, 6)).astype(F32),
           n(6, 2, 3, 3), n(6)],
          {'kernel': (3, 3), 'pad': (1, 1), 'num_filter': 6, 'num_group': 2,
           'num_deformable_group': 2}, grad=False))
    add(C('_contrib_ModulatedDeformableConvolution',
          [n(1, 3, 7, 6), offsets(1, 12, 3, 4), rng.uniform(0, 1, (1, 6, 3, 4)).astype(F32),
           n(3, 3, 2, 3)],
          {'kernel': (2, 3), 'stride': (2, 1), 'dilate': (2, 1), 'num_filter': 3,
           'no_bias': True}, grad=False))
    # nd.image
    add(C('_image_normalize', [n(3, 4, 5)], {'mean': (0.485, 0.456, 0.406),
                                             'std': (0.229, 0.224, 0.225)}))
    add(C('_image_normalize', [n(2, 1, 3, 3)], {'mean': 0.5, 'std': 2.0}))
    add(C('_image_normalize', [rng.integers(0, 255, (2, 3, 2, 2)).astype('uint8')],
          {'mean': (100, 120, 140), 'std': (2, 3, 0.7)}, grad=False,
          note='uint8: float arithmetic truncated and wrapped'))
    add(C('_image_to_tensor', [rng.integers(0, 256, (4, 5, 3)).astype('uint8')], grad=False))
    add(C('_image_to_tensor', [rng.uniform(0, 255, (2, 3, 4, 1)).astype(F32)], grad=False))
    # BatchNorm_v1: training (batch statistics; the backward updates the moving ones) and
    # predict mode (forward only: MXNet's backward would run in training mode over the
    # predict-mode outputs), fix_gamma on and off, 2-D and 4-D
    for shape, fix, train in [((4, 3), False, None), ((2, 3, 2, 5), True, None),
                              ((3, 2, 2, 2), False, False)]:
        c = shape[1]
        xs = [n(*shape), rng.uniform(0.5, 1.5, c).astype(F32), n(c), n(c),
              rng.uniform(0.5, 1.5, c).astype(F32)]
        add(C('BatchNorm_v1', xs, {'fix_gamma': fix, 'eps': 1e-3, 'momentum': 0.8,
                                   'output_mean_var': True},
              wrt=[0, 1, 2], train=train, mutates=[3, 4], grad=train is None))
    # Proposal / MultiProposal (no gradient in MXNet)
    for (nb, h, w, iou) in [(1, 6, 7, False), (3, 5, 5, False), (2, 4, 6, True)]:
        a = 6
        cls = rng.uniform(0, 1, (nb, 2 * a, h, w)).astype(F32)
        deltas = (rng.standard_normal((nb, 4 * a, h, w)) * (3 if iou else 0.3)).astype(F32)
        info = np.array([[h * 16 - rng.integers(0, 30), w * 16 - rng.integers(0, 30),
                          rng.uniform(0.6, 1.0)] for _ in range(nb)], F32)
        attrs = {'scales': (4, 8, 16), 'ratios': (0.5, 2), 'rpn_pre_nms_top_n': 100,
                 'rpn_post_nms_top_n': 20, 'threshold': 0.7, 'rpn_min_size': 8,
                 'feature_stride': 16, 'iou_loss': iou, 'output_score': True}
        add(C('_contrib_MultiProposal', [cls, deltas, info], attrs, grad=False))
        if nb == 1:
            add(C('_contrib_Proposal', [cls, deltas, info], attrs, grad=False))
    return cases
