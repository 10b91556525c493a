"""Conformance cases of the vision ops (layouts, bilinear UpSampling, the spatial sampling
ops), appended to op_cases.build_cases with their own seeded generator so that the other
fixtures do not move. Needs NumPy only."""
import numpy as np

from op_cases import C

F32 = 'float32'


def build_vision_cases(seed=20261125):
    rng = np.random.default_rng(seed)

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def distinct(*shape, dtype=F32):
        size = int(np.prod(shape))
        vals = (rng.permutation(size) - size / 2.0) * 0.25 + rng.uniform(-0.05, 0.05, size)
        return vals.reshape(shape).astype(dtype)

    cases = []
    add = cases.append
    # Pooling, channel-last layouts (MXNet's CPU build pools them)
    add(C('Pooling', [distinct(2, 7, 3)], {'kernel': (3,), 'stride': (2,), 'pad': (1,),
                                           'layout': 'NWC'}))
    add(C('Pooling', [distinct(2, 6, 5, 3)], {'kernel': (3, 2), 'stride': (2, 1),
                                              'pool_type': 'avg', 'layout': 'NHWC'}))
    add(C('Pooling', [distinct(1, 4, 5, 4, 2)], {'kernel': (2, 3, 2), 'pool_type': 'max',
                                                 'layout': 'NDHWC'}))
    add(C('Pooling', [n(2, 5, 4, 3)], {'global_pool': True, 'pool_type': 'avg',
                                       'layout': 'NHWC'}))
    add(C('Pooling', [distinct(1, 2, 10)], {'kernel': (2,), 'stride': (2,), 'pad': (0, 0, 0),
                                            'pooling_convention': 'same'},
          note="1-D 'same' with a 3-entry pad, as MXNet's own test passes it"))
    # UpSampling bilinear: a per-channel Deconvolution
    for scale, ch in [(2, 2), (3, 1), (4, 3)]:
        k = 2 * scale - scale % 2
        add(C('UpSampling', [n(2, ch, 3, 4), n(ch, 1, k, k)],
              {'scale': scale, 'sample_type': 'bilinear', 'num_filter': ch, 'num_args': 2}))
    # im2col / col2im (MXNet's CPU build runs the 2-D case only)
    add(C('im2col', [n(2, 3, 7, 6)], {'kernel': (3, 2), 'stride': (2, 1), 'dilate': (1, 2),
                                      'pad': (1, 1)}))
    add(C('col2im', [n(2, 6, 6)], {'output_size': (5, 4), 'kernel': (2, 1), 'stride': (2, 2),
                                   'pad': (1, 0)}))
    # sampling (GridGenerator: MXNet's CPU build takes float32 only)
    add(C('GridGenerator', [n(2, 6)], {'transform_type': 'affine', 'target_shape': (4, 5)}))
    add(C('GridGenerator', [n(2, 2, 4, 5)], {'transform_type': 'warp'}))
    add(C('BilinearSampler', [n(2, 3, 5, 6), rng.uniform(-1.2, 1.2, (2, 2, 4, 7)).astype(F32)]))
    add(C('BilinearSampler', [n(1, 2, 4, 4, dtype='float64'),
                              rng.uniform(-1.1, 1.1, (1, 2, 3, 5))]))
    loc = (np.array([0.9, 0.1, 0.05, -0.1, 1.1, 0.02]) + 0.1 * rng.standard_normal((2, 6)))
    add(C('SpatialTransformer', [n(2, 3, 5, 6), loc.astype(F32)],
          {'target_shape': (4, 5), 'transform_type': 'affine', 'sampler_type': 'bilinear'}))
    rois = np.array([[0, 0, 0, 7, 7], [1, 2.3, 1.7, 15.2, 9.9], [0, 4, 4, 4, 4],
                     [1, -3, -2, 30, 40], [3, 1, 1, 5, 5]], F32)
    add(C('ROIPooling', [distinct(2, 3, 8, 9), rois], {'pooled_size': (3, 2),
                                                       'spatial_scale': 0.5}, wrt=[0]))
    add(C('Correlation', [n(2, 3, 8, 7), n(2, 3, 8, 7)],
          {'kernel_size': 3, 'max_displacement': 2, 'stride1': 2, 'stride2': 1, 'pad_size': 2}))
    add(C('Correlation', [n(1, 2, 6, 6, dtype='float64'), n(1, 2, 6, 6, dtype='float64')],
          {'kernel_size': 1, 'max_displacement': 2, 'stride2': 2, 'pad_size': 1,
           'is_multiply': False}))
    # SyncBatchNorm on one device: BatchNorm over axis 1, third output the variance
    add(C('_contrib_SyncBatchNorm', [n(4, 3, 5), rng.uniform(0.5, 1.5, 3).astype(F32), n(3),
                                     np.zeros(3, F32), np.ones(3, F32)],
          {'key': 'sbn0', 'fix_gamma': False, 'eps': 1e-5, 'output_mean_var': True},
          wrt=[0, 1, 2], mutates=[3, 4]))
    return cases


def build_image_cases(seed=20261127):
    """nd.image's ops (csrc/ops/image_geom.c, image_color.c). The random ones are made
    deterministic: colour factors with min_factor == max_factor, lighting with alpha_std 0,
    jitter of a black image, flips of mirror-symmetric images. Gradients are compared
    for crop only: MXNet 1.9.1's flips pass the output gradient through unflipped and its
    colour ops pass it through unscaled (hybridgluon's flips flip it, its colour ops have no
    gradient); resize has none in either."""
    rng = np.random.default_rng(seed)

    def img(*shape, dtype=F32):
        if dtype == 'uint8':
            return rng.integers(0, 256, shape).astype(np.uint8)
        return rng.uniform(0, 255, shape).astype(dtype)

    cases = []
    add = cases.append
    # Even sizes only: MXNet 1.9.1's flips swap pairs and leave the middle row (column) of an
    # odd height (width) unwritten; hybridgluon copies it.
    for op in ('_image_flip_left_right', '_image_flip_top_bottom'):
        add(C(op, [img(4, 6, 3)], grad=False))
        add(C(op, [img(2, 4, 1, dtype='uint8')], grad=False))
    sym = img(4, 6, 3)
    add(C('_image_random_flip_left_right', [np.concatenate([sym[:, :3], sym[:, 2::-1]], 1)],
          grad=False, note='a left-right symmetric image: the same output either way'))
    add(C('_image_random_flip_top_bottom', [np.concatenate([sym[:2], sym[1::-1]], 0)],
          grad=False, note='a top-bottom symmetric image: the same output either way'))
    add(C('_image_crop', [img(5, 6, 3)], {'x': 1, 'y': 2, 'width': 4, 'height': 2}))
    add(C('_image_crop', [img(2, 4, 5, 1, dtype='float64')],
          {'x': 0, 'y': 1, 'width': 5, 'height': 3}))
    add(C('_image_crop', [img(4, 4, 3, dtype='uint8')], {'x': 2, 'y': 0, 'width': 2,
                                                         'height': 4}))
    for dtype in ('uint8', F32, 'float64'):
        for interp in (0, 1, 2, 3, 4):
            add(C('_image_resize', [img(13, 9, 3, dtype=dtype)],
                  {'size': (17, 6), 'interp': interp}, grad=False))
            add(C('_image_resize', [img(8, 12, 3, dtype=dtype)],
                  {'size': (4, 4), 'interp': interp}, grad=False))
    add(C('_image_resize', [img(2, 7, 5, 3, dtype='uint8')], {'size': (9, 11)}, grad=False))
    add(C('_image_resize', [img(7, 5, 1)], {'size': (3,), 'keep_ratio': True}, grad=False))
    add(C('_image_resize', [img(6, 10, 3, dtype='uint8')], {'size': (5,), 'keep_ratio': True,
                                                            'interp': 3}, grad=False))
    for op in ('_image_random_brightness', '_image_random_contrast',
               '_image_random_saturation', '_image_random_hue'):
        for dtype, f in (('uint8', 0.6), (F32, 1.4), ('uint8', 1.7)):
            add(C(op, [img(4, 5, 3, dtype=dtype)], {'min_factor': f, 'max_factor': f},
                  grad=False))
        add(C(op, [img(3, 4, 1)], {'min_factor': 0.5, 'max_factor': 0.5}, grad=False)
            if op in ('_image_random_brightness', '_image_random_contrast') else
            C(op, [img(3, 3, 3, dtype='float64' if op.endswith('hue') else F32)],
              {'min_factor': 0.3, 'max_factor': 0.3}, grad=False))
    # Every adjustment keeps black black, whatever the order and factors drawn. (With nothing
    # to jitter MXNet leaves its output unwritten.)
    add(C('_image_random_color_jitter', [np.zeros((4, 5, 3), np.float32)],
          {'brightness': 0.2, 'contrast': 0.3, 'saturation': 0.4, 'hue': 0.1}, grad=False))
    add(C('_image_adjust_lighting', [img(4, 5, 3)], {'alpha': (0.1, -0.2, 0.3)}, grad=False))
    add(C('_image_adjust_lighting', [img(4, 5, 3, dtype='uint8')], {'alpha': (-1.0, 0.5, 2.0)},
          grad=False))
    add(C('_image_random_lighting', [img(4, 5, 3)], {'alpha_std': 0.0}, grad=False))
    return cases
