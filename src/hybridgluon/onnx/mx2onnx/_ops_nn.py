"""ONNX converters of the neural-network layers: convolution, dense, normalisation, pooling,
activations, softmax and the loss heads that are identities or softmaxes at inference."""
import math

from ._builder import converter


def _spatial(node, key, n, fill):
    v = node.attrs.tuple(key, ())
    return list(v) if v else [fill] * n


def _channel_first(node):
    layout = node.attrs.str('layout')
    if layout is not None and not layout.startswith('NC'):
        node.unsupported('layout', layout)


@converter('Convolution')
def _conv(b, n):
    _channel_first(n)
    kernel = list(n.attrs.tuple('kernel'))
    k = len(kernel)
    pad = _spatial(n, 'pad', k, 0)
    ins = n.inputs[:2] if n.attrs.bool('no_bias') else n.inputs[:3]
    return b.add('Conv', ins, kernel_shape=kernel, strides=_spatial(n, 'stride', k, 1),
                 dilations=_spatial(n, 'dilate', k, 1), pads=pad + pad,
                 group=n.attrs.int('num_group', 1))


@converter('Deconvolution')
def _deconv(b, n):
    _channel_first(n)
    kernel = list(n.attrs.tuple('kernel'))
    k = len(kernel)
    pad = _spatial(n, 'pad', k, 0)
    adj = _spatial(n, 'adj', k, 0)
    target = n.attrs.tuple('target_shape', ())
    if any(target):
        # MXNet derives symmetric padding and the odd remainder (adj) from the target size.
        if any(n.in_dyn[0][2:]):
            n.fail('target_shape with a dynamic spatial size cannot be expressed in ONNX')
        stride, dil = _spatial(n, 'stride', k, 1), _spatial(n, 'dilate', k, 1)
        pad, adj = [], []
        for i in range(k):
            full = stride[i] * (n.in_shapes[0][2 + i] - 1) + dil[i] * (kernel[i] - 1) + 1
            total = full - target[i]
            pad.append((total + 1) // 2)
            adj.append(total % 2)
    ins = n.inputs[:2] if n.attrs.bool('no_bias', True) else n.inputs[:3]
    return b.add('ConvTranspose', ins, kernel_shape=kernel,
                 strides=_spatial(n, 'stride', k, 1), dilations=_spatial(n, 'dilate', k, 1),
                 pads=pad + pad, output_padding=adj if any(adj) else None,
                 group=n.attrs.int('num_group', 1))


@converter('FullyConnected')
def _fc(b, n):
    x, w = n.inputs[0], n.inputs[1]
    bias = None if n.attrs.bool('no_bias') else n.inputs[2]
    nd = len(n.in_shapes[0])
    if n.attrs.bool('flatten', True) or nd == 2:
        if nd != 2:
            x = b.add('Flatten', [x], axis=1)
        return b.add('Gemm', [x, w] + ([bias] if bias else []), transB=1)
    y = b.add('MatMul', [x, b.add('Transpose', [w], perm=[1, 0])])
    return b.add('Add', [y, bias]) if bias else y


@converter('Flatten')
def _flatten(b, n):
    return b.add('Flatten', [n.inputs[0]], axis=1)


def _act(b, x, kind, n):
    if kind == 'relu':
        return b.add('Relu', [x])
    if kind == 'sigmoid':
        return b.add('Sigmoid', [x])
    if kind == 'tanh':
        return b.add('Tanh', [x])
    if kind == 'softrelu':
        return b.add('Softplus', [x])
    if kind == 'softsign':
        return b.add('Softsign', [x])
    if kind == 'log_sigmoid':
        return b.add('Neg', [b.add('Softplus', [b.add('Neg', [x])])])
    if kind == 'mish':
        return b.add('Mul', [x, b.add('Tanh', [b.add('Softplus', [x])])])
    n.unsupported('act_type', kind)


@converter('Activation')
def _activation(b, n):
    return _act(b, n.inputs[0], n.attrs.str('act_type'), n)


@converter('relu')
def _relu(b, n):
    return b.add('Relu', [n.inputs[0]])


@converter('sigmoid')
def _sigmoid(b, n):
    return b.add('Sigmoid', [n.inputs[0]])


@converter('tanh')
def _tanh(b, n):
    return b.add('Tanh', [n.inputs[0]])


@converter('softsign')
def _softsign(b, n):
    return b.add('Softsign', [n.inputs[0]])


@converter('log_sigmoid')
def _log_sigmoid(b, n):
    return _act(b, n.inputs[0], 'log_sigmoid', n)


@converter('hard_sigmoid')
def _hard_sigmoid(b, n):
    return b.add('HardSigmoid', [n.inputs[0]], alpha=n.attrs.float('alpha', 0.2),
                 beta=n.attrs.float('beta', 0.5))


def _per_channel(b, v, ndim):
    """A (C,) tensor shaped (C, 1, ...) to broadcast along axis 1 of an ndim-d tensor."""
    if ndim <= 2:
        return v
    return b.unsqueeze(v, list(range(1, ndim - 1)))


def _gelu(b, x, dtype):
    half = b.const(0.5, dtype)
    one = b.const(1.0, dtype)
    r = b.add('Erf', [b.add('Div', [x, b.const(math.sqrt(2.0), dtype)])])
    return b.add('Mul', [b.add('Mul', [x, half]), b.add('Add', [r, one])])


@converter('LeakyReLU')
def _leaky(b, n):
    kind = n.attrs.str('act_type', 'leaky')
    x = n.inputs[0]
    slope = n.attrs.float('slope', 0.25)
    if kind == 'leaky':
        return b.add('LeakyRelu', [x], alpha=slope)
    if kind == 'elu':
        return b.add('Elu', [x], alpha=slope)
    if kind == 'selu':
        return b.add('Selu', [x], alpha=1.6732632423543772848170429916717,
                     gamma=1.0507009873554804934193349852946)
    if kind == 'gelu':
        return _gelu(b, x, n.in_dtypes[0])
    if kind == 'prelu':
        g = n.inputs[1]
        if tuple(n.in_shapes[1]) != (1,):
            g = _per_channel(b, g, len(n.in_shapes[0]))
        return b.add('PRelu', [x, g])
    if kind == 'rrelu':   # inference: the mean of the slope's range, as MXNet
        lo, hi = n.attrs.float('lower_bound', 0.125), n.attrs.float('upper_bound', 0.334)
        return b.add('LeakyRelu', [x], alpha=(lo + hi) / 2.0)
    n.unsupported('act_type', kind)


def _to_axis1(b, n, x, axis, ndim):
    """Transposes so that `axis` becomes axis 1; returns (x, inverse perm or None)."""
    axis = axis % ndim
    if axis == 1:
        return x, None
    perm = list(range(ndim))
    perm.remove(axis)
    perm.insert(1, axis)
    inv = [perm.index(i) for i in range(ndim)]
    return b.add('Transpose', [x], perm=perm), inv


@converter('BatchNorm', 'BatchNorm_v1', '_contrib_SyncBatchNorm')
def _batchnorm(b, n):
    x, gamma, beta, mean, var = n.inputs[:5]
    ndim = len(n.in_shapes[0])
    if n.attrs.bool('fix_gamma', True):
        gamma = b.const([1.0] * n.in_shapes[1][0], n.in_dtypes[1])
    x, inv = _to_axis1(b, n, x, n.attrs.int('axis', 1), ndim)
    if ndim == 1:
        n.fail('BatchNorm of 1-d data cannot be expressed in ONNX')
    y = b.add('BatchNormalization', [x, gamma, beta, mean, var],
              epsilon=n.attrs.float('eps', 1e-3), momentum=n.attrs.float('momentum', 0.9))
    if inv is not None:
        y = b.add('Transpose', [y], perm=inv)
    return y


@converter('InstanceNorm')
def _instancenorm(b, n):
    return b.add('InstanceNormalization', n.inputs[:3], epsilon=n.attrs.float('eps', 1e-3))


@converter('LayerNorm')
def _layernorm(b, n):
    x, gamma, beta = n.inputs[:3]
    ndim = len(n.in_shapes[0])
    axis = n.attrs.int('axis', -1) % ndim
    eps = n.attrs.float('eps', 1e-5)
    dt = n.in_dtypes[0]
    if axis != ndim - 1:
        after = list(range(1, ndim - axis))
        gamma, beta = b.unsqueeze(gamma, after), b.unsqueeze(beta, after)
    if b.opset >= 17 and axis == ndim - 1:
        return b.add('LayerNormalization', [x, gamma, beta], axis=-1, epsilon=eps)
    mean = b.reduce('ReduceMean', x, [axis], True)
    d = b.add('Sub', [x, mean])
    var = b.reduce('ReduceMean', b.add('Mul', [d, d]), [axis], True)
    std = b.add('Sqrt', [b.add('Add', [var, b.const(eps, dt)])])
    return b.add('Add', [b.add('Mul', [b.add('Div', [d, std]), gamma]), beta])


@converter('GroupNorm')
def _groupnorm(b, n):
    # MXNet's gamma and beta hold one value per group, applied before the groups are merged.
    x, gamma, beta = n.inputs[:3]
    g = n.attrs.int('num_groups', 1)
    eps = n.attrs.float('eps', 1e-5)
    dt = n.in_dtypes[0]
    xs = b.reshape(x, [0, g, -1])
    mean = b.reduce('ReduceMean', xs, [2], True)
    d = b.add('Sub', [xs, mean])
    var = b.reduce('ReduceMean', b.add('Mul', [d, d]), [2], True)
    y = b.add('Div', [d, b.add('Sqrt', [b.add('Add', [var, b.const(eps, dt)])])])
    y = b.add('Add', [b.add('Mul', [y, b.unsqueeze(gamma, [1])]), b.unsqueeze(beta, [1])])
    return b.add('Reshape', [y, b.add('Shape', [x])])


@converter('L2Normalization')
def _l2norm(b, n):
    x = n.inputs[0]
    ndim = len(n.in_shapes[0])
    mode = n.attrs.str('mode', 'instance')
    axes = {'instance': list(range(1, ndim)), 'channel': [1],
            'spatial': list(range(2, ndim))}.get(mode)
    if axes is None:
        n.unsupported('mode', mode)
    ss = b.reduce('ReduceSum', b.add('Mul', [x, x]), axes, True)
    eps = b.const(n.attrs.float('eps', 1e-10), n.in_dtypes[0])
    return b.add('Div', [x, b.add('Sqrt', [b.add('Add', [ss, eps])])])


@converter('LRN')
def _lrn(b, n):
    return b.add('LRN', [n.inputs[0]], alpha=n.attrs.float('alpha', 1e-4),
                 beta=n.attrs.float('beta', 0.75), bias=n.attrs.float('knorm', 2.0),
                 size=n.attrs.int('nsize'))


@converter('Pooling')
def _pooling(b, n):
    _channel_first(n)
    x = n.inputs[0]
    ptype = n.attrs.str('pool_type', 'max')
    ndim = len(n.in_shapes[0])
    if n.attrs.bool('global_pool'):
        if ptype == 'max':
            return b.add('GlobalMaxPool', [x])
        if ptype == 'avg':
            return b.add('GlobalAveragePool', [x])
        if ptype == 'sum':
            return b.reduce('ReduceSum', x, list(range(2, ndim)), True)
        if ptype == 'lp':
            return b.add('GlobalLpPool', [x], p=n.attrs.int('p_value', 2))
        n.unsupported('pool_type', ptype)
    kernel = list(n.attrs.tuple('kernel'))
    k = len(kernel)
    pad = _spatial(n, 'pad', k, 0)
    conv = n.attrs.str('pooling_convention', 'valid')
    if conv not in ('valid', 'full'):
        n.unsupported('pooling_convention', conv)
    common = dict(kernel_shape=kernel, strides=_spatial(n, 'stride', k, 1), pads=pad + pad)
    ceil = 1 if conv == 'full' else None
    if ptype == 'max':
        return b.add('MaxPool', [x], ceil_mode=ceil, **common)
    if ptype in ('avg', 'sum'):
        cip = n.attrs.get('count_include_pad', True)
        cip = True if cip is None else bool(cip)
        if ptype == 'sum':
            cip = True
        y = b.add('AveragePool', [x], ceil_mode=ceil, count_include_pad=int(cip), **common)
        if ptype == 'sum':
            y = b.add('Mul', [y, b.const(float(math.prod(kernel)), n.in_dtypes[0])])
        return y
    if ptype == 'lp':
        if ceil:
            n.unsupported('pooling_convention', conv)
        return b.add('LpPool', [x], p=n.attrs.int('p_value', 2), **common)
    n.unsupported('pool_type', ptype)


@converter('_contrib_AdaptiveAvgPooling2D')
def _adaptive_avg(b, n):
    x = n.inputs[0]
    size = n.attrs.tuple('output_size', ())
    h, w = n.in_shapes[0][2:]
    oh, ow = n.out_shapes[0][2:]
    if (oh, ow) == (1, 1):
        return b.add('GlobalAveragePool', [x])
    if any(n.in_dyn[0][2:]):
        n.fail('output_size=%s of a dynamic spatial size cannot be expressed in ONNX' % (size,))
    if h % oh or w % ow:
        n.fail('output_size=%s does not divide the input size %s: ONNX has no adaptive '
               'pooling' % ((oh, ow), (h, w)))
    k = [h // oh, w // ow]
    return b.add('AveragePool', [x], kernel_shape=k, strides=k)


def _softmax_core(b, n, x, axis, log=False, negate=False):
    t = n.attrs.get('temperature')
    dt = n.in_dtypes[0]
    if negate:
        x = b.add('Neg', [x])
    if t is not None and float(t) != 1.0:
        x = b.add('Div', [x, b.const(float(t), dt)])
    y = b.add('LogSoftmax' if log else 'Softmax', [x], axis=axis)
    out_dt = n.out_dtypes[0]
    if out_dt != dt:
        y = b.cast(y, out_dt)
    return y


def _check_length(n):
    if n.attrs.bool('use_length'):
        n.unsupported('use_length', True)


@converter('softmax')
def _softmax(b, n):
    _check_length(n)
    return _softmax_core(b, n, n.inputs[0], n.attrs.int('axis', -1))


@converter('log_softmax')
def _log_softmax(b, n):
    _check_length(n)
    return _softmax_core(b, n, n.inputs[0], n.attrs.int('axis', -1), log=True)


@converter('softmin')
def _softmin(b, n):
    _check_length(n)
    return _softmax_core(b, n, n.inputs[0], n.attrs.int('axis', -1), negate=True)


@converter('SoftmaxActivation')
def _softmax_activation(b, n):
    # 'instance' normalises over the last axis (what MXNet computes for any rank).
    axis = 1 if n.attrs.str('mode', 'instance') == 'channel' else -1
    return b.add('Softmax', [n.inputs[0]], axis=axis)


@converter('SoftmaxOutput')
def _softmax_output(b, n):
    # At inference the label is unused; without multi_output MXNet normalises the last axis.
    multi = n.attrs.bool('multi_output') and len(n.in_shapes[0]) > 2
    return b.add('Softmax', [n.inputs[0]], axis=1 if multi else -1)


@converter('LogisticRegressionOutput')
def _logistic_out(b, n):
    return b.add('Sigmoid', [n.inputs[0]])


@converter('Dropout')
def _dropout(b, n):
    # An identity at inference, unless mode='always' asks for dropout there too.
    x = n.inputs[0]
    if n.attrs.str('mode', 'training') != 'always':
        return b.add('Identity', [x])
    if n.attrs.tuple('axes', ()):
        n.unsupported('axes', n.attrs.tuple('axes'))
    ratio = b.const(n.attrs.float('p', 0.5), n.in_dtypes[0])
    return b.add('Dropout', [x, ratio, b.const(True, 'bool')])


@converter('LinearRegressionOutput', 'MAERegressionOutput', 'SVMOutput', 'BlockGrad',
           'MakeLoss', 'make_loss', '_copy', 'identity', '_contrib_gradientmultiplier',
           'stop_gradient')
def _identity(b, n):
    return b.add('Identity', [n.inputs[0]])


@converter('UpSampling')
def _upsampling(b, n):
    if n.attrs.str('sample_type', 'nearest') != 'nearest':
        n.unsupported('sample_type', n.attrs.str('sample_type'))
    if len(n.inputs) != 1:
        n.unsupported('num_args', len(n.inputs))
    s = float(n.attrs.int('scale'))
    scales = b.const([1.0, 1.0, s, s], 'float32')
    return b.add('Resize', [n.inputs[0], '', scales], mode='nearest',
                 coordinate_transformation_mode='asymmetric', nearest_mode='floor')


@converter('_contrib_BilinearResize2D')
def _bilinear(b, n):
    x = n.inputs[0]
    if len(n.inputs) > 1:
        n.fail('the like input (mode=like) cannot be expressed in ONNX')
    mode = n.attrs.str('mode', 'size')
    if mode not in ('size', 'odd_scale'):
        n.unsupported('mode', mode)
    oh, ow = n.out_shapes[0][2:]
    if any(n.out_dyn[0][2:]):
        n.fail('a dynamic spatial size cannot be expressed in ONNX')
    nc = b.slice(b.add('Shape', [x]), [0], [2], [0])
    sizes = b.add('Concat', [nc, b.i64([oh, ow])], axis=0)
    ctm = 'align_corners' if n.attrs.bool('align_corners', True) else 'half_pixel'
    return b.add('Resize', [x, '', '', sizes], mode='linear',
                 coordinate_transformation_mode=ctm)


@converter('softmax_cross_entropy')
def _softmax_cross_entropy(b, n):
    # The summed negative log-likelihood of the labels over the batch, shape (1,).
    logp = b.add('LogSoftmax', [n.inputs[0]], axis=-1)
    idx = b.unsqueeze(b.cast(n.inputs[1], 'int64'), [1])
    picked = b.add('GatherElements', [logp, idx], axis=1)
    return b.reshape(b.add('Neg', [b.reduce('ReduceSum', picked, None, False)]), [1])


@converter('ROIPooling')
def _roi_pooling(b, n):
    # rois rows are (batch index, x1, y1, x2, y2) in both.
    return b.add('MaxRoiPool', n.inputs[:2], pooled_shape=list(n.attrs.tuple('pooled_size')),
                 spatial_scale=n.attrs.float('spatial_scale'))


@converter('_contrib_ROIAlign')
def _roi_align(b, n):
    if n.attrs.bool('position_sensitive'):
        n.unsupported('position_sensitive', True)
    aligned = n.attrs.bool('aligned')
    if aligned and b.opset < 16:
        n.fail('aligned=True needs opset 16 or later (half_pixel coordinates)')
    rois = n.inputs[1]
    batch = b.cast(b.squeeze(b.slice(rois, [0], [1], [1]), [1]), 'int64')
    boxes = b.slice(rois, [1], [5], [1])
    ph, pw = n.attrs.tuple('pooled_size')
    ratio = n.attrs.int('sample_ratio', -1)
    attrs = dict(output_height=ph, output_width=pw, sampling_ratio=max(ratio, 0),
                 spatial_scale=n.attrs.float('spatial_scale'), mode='avg')
    if b.opset >= 16:
        attrs['coordinate_transformation_mode'] = 'half_pixel' if aligned else \
            'output_half_pixel'
    return b.add('RoiAlign', [n.inputs[0], boxes, batch], **attrs)
