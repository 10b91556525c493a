"""Converters of ONNX's network layers: convolution, pooling, normalisation, Gemm/MatMul,
softmax, padding and resizing."""
import numpy as np

from ._registry import norm_axis, register

_F32_MAX = 3.4028234663852886e38


def _conv_pads(ctx, kernel, strides, dilations):
    """(begin, end) padding per spatial axis, from `pads` or `auto_pad`."""
    n = len(kernel)
    auto = ctx.attrs.get('auto_pad', 'NOTSET')
    if auto in ('SAME_UPPER', 'SAME_LOWER'):
        spatial = ctx.full_shape(0, 'auto_pad=%s' % auto)[2:]
        begin, end = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == 'SAME_UPPER' else big)
            end.append(big if auto == 'SAME_UPPER' else small)
        return begin, end
    if auto == 'VALID':
        return [0] * n, [0] * n
    if auto != 'NOTSET':
        ctx.fail("auto_pad='%s' is not supported" % auto)
    pads = [int(p) for p in ctx.attrs.get('pads', [0] * (2 * n))]
    return pads[:n], pads[n:]


def _pad_explicit(ctx, x, begin, end, value):
    """Asymmetric padding as a Pad op before a layer that then pads nothing."""
    if any(p < 0 for p in begin + end):
        ctx.fail('negative pads are not supported')
    width = (0, 0, 0, 0) + tuple(v for be in zip(begin, end) for v in be)
    if len(begin) not in (2, 3):
        ctx.fail('asymmetric pads %s on a %d-D layer are not supported' %
                 (list(begin) + list(end), len(begin)))
    return ctx.op('Pad', x, mode='constant', pad_width=width, constant_value=value)


def _spatial(ctx, n):
    strides = [int(s) for s in ctx.attrs.get('strides', [1] * n)]
    dilations = [int(d) for d in ctx.attrs.get('dilations', [1] * n)]
    return strides, dilations


@register('Conv')
def _conv(ctx):
    wshape = ctx.full_shape(1, 'the kernel size comes from the weight')
    kernel = tuple(int(k) for k in wshape[2:])
    strides, dilations = _spatial(ctx, len(kernel))
    begin, end = _conv_pads(ctx, kernel, strides, dilations)
    x = ctx.sym(0)
    if begin != end:
        x, begin = _pad_explicit(ctx, x, begin, end, 0.0), [0] * len(kernel)
    args = [x, ctx.sym(1)] + ([ctx.sym(2)] if ctx.has(2) else [])
    return ctx.op('Convolution', *args, kernel=kernel, stride=tuple(strides),
                  dilate=tuple(dilations), pad=tuple(begin), num_filter=int(wshape[0]),
                  num_group=int(ctx.attrs.get('group', 1)), no_bias=not ctx.has(2))


@register('ConvTranspose')
def _conv_transpose(ctx):
    wshape = ctx.full_shape(1, 'the kernel size comes from the weight')
    kernel = tuple(int(k) for k in wshape[2:])
    n = len(kernel)
    strides, dilations = _spatial(ctx, n)
    if ctx.attrs.get('auto_pad', 'NOTSET') not in ('NOTSET', 'VALID'):
        ctx.fail("auto_pad='%s' is not supported" % ctx.attrs['auto_pad'])
    if 'output_shape' in ctx.attrs:
        ctx.fail('output_shape is not supported; give pads and output_padding')
    pads = [int(p) for p in ctx.attrs.get('pads', [0] * (2 * n))]
    if ctx.attrs.get('auto_pad') == 'VALID':
        pads = [0] * (2 * n)
    begin, end = pads[:n], pads[n:]
    group = int(ctx.attrs.get('group', 1))
    adj = tuple(int(a) for a in ctx.attrs.get('output_padding', [0] * n))
    args = [ctx.sym(0), ctx.sym(1)] + ([ctx.sym(2)] if ctx.has(2) else [])
    sym_pad = begin == end
    out = ctx.op('Deconvolution', *args, kernel=kernel, stride=tuple(strides),
                 dilate=tuple(dilations), pad=tuple(begin) if sym_pad else (0,) * n, adj=adj,
                 num_filter=int(wshape[1]) * group, num_group=group, no_bias=not ctx.has(2))
    if sym_pad:
        return out
    # unpadded output, then the padding cut off: begin at the start, end at the end
    rb = (None, None) + tuple(begin)
    re = (None, None) + tuple(-e if e else None for e in end)
    return ctx.op('slice', out, begin=rb, end=re)


@register('BatchNormalization')
def _batch_norm(ctx):
    if int(ctx.attrs.get('training_mode', 0)):
        ctx.fail('training_mode=1 is not supported (import inference graphs)')
    out = ctx.op('BatchNorm', *[ctx.sym(i) for i in range(5)],
                 eps=float(ctx.attrs.get('epsilon', 1e-5)),
                 momentum=float(ctx.attrs.get('momentum', 0.9)), fix_gamma=False)
    return [out] + [None] * (ctx.num_outputs - 1)


@register('InstanceNormalization')
def _instance_norm(ctx):
    return ctx.op('InstanceNorm', ctx.sym(0), ctx.sym(1), ctx.sym(2),
                  eps=float(ctx.attrs.get('epsilon', 1e-5)))


@register('LayerNormalization')
def _layer_norm(ctx):
    rank = ctx.rank(0)
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', -1)), rank)
    if axis != rank - 1:
        ctx.fail('normalising over axes %d.. (not only the last) is not supported' % axis)
    gamma = ctx.sym(1)
    if ctx.has(2):
        beta = ctx.sym(2)
    else:
        d = ctx.full_shape(1, 'a zero bias is made for it')
        beta = ctx.graph.const_var(ctx.name + '_beta', np.zeros(d, dtype=np.float32))
    out = ctx.op('LayerNorm', ctx.sym(0), gamma, beta, axis=-1,
                 eps=float(ctx.attrs.get('epsilon', 1e-5)))
    return [out] + [None] * (ctx.num_outputs - 1)


def _ceil_convention(ctx, kernel, strides, begin, end):
    """MXNet's pooling_convention for ONNX's ceil_mode. ONNX (like PyTorch) drops a last
    window that would start in the right padding, so where it does, ceil_mode's output is
    the floor one ('valid'); 'full' where it does not (and where the size is unknown)."""
    if not int(ctx.attrs.get('ceil_mode', 0)):
        return 'valid'
    shape = ctx.shape(0)
    if shape is None:
        return 'full'
    drops = set()
    for size, k, s, b, e in zip(shape[2:], kernel, strides, begin, end):
        if size is not None:
            out = -(-(size + b + e - k) // s) + 1
            drops.add((out - 1) * s >= size + b)
    if drops == {True, False}:
        ctx.fail('ceil_mode drops the last window on some axes but not others')
    return 'valid' if drops == {True} else 'full'


def _pool(ctx, pool_type):
    kernel = tuple(int(k) for k in ctx.attrs['kernel_shape'])
    n = len(kernel)
    strides, dilations = _spatial(ctx, n)
    if any(d != 1 for d in dilations):
        ctx.fail('dilated pooling is not supported')
    begin, end = _conv_pads(ctx, kernel, strides, dilations)
    include = bool(int(ctx.attrs.get('count_include_pad', 0)))
    convention = _ceil_convention(ctx, kernel, strides, begin, end)
    x = ctx.sym(0)
    if begin != end:
        if pool_type == 'avg' and not include:
            ctx.fail('asymmetric pads with count_include_pad=0 are not supported')
        x = _pad_explicit(ctx, x, begin, end, -_F32_MAX if pool_type == 'max' else 0.0)
        begin = [0] * n
    kw = {}
    if pool_type == 'avg':
        kw['count_include_pad'] = include
    out = ctx.op('Pooling', x, kernel=kernel, stride=tuple(strides), pad=tuple(begin),
                 pool_type=pool_type, pooling_convention=convention, **kw)
    return [out] + [None] * (ctx.num_outputs - 1)


@register('MaxPool')
def _max_pool(ctx):
    if int(ctx.attrs.get('storage_order', 0)):
        ctx.fail('storage_order=1 is not supported')
    return _pool(ctx, 'max')


@register('AveragePool')
def _avg_pool(ctx):
    return _pool(ctx, 'avg')


@register('GlobalAveragePool', 'GlobalMaxPool')
def _global_pool(ctx):
    n = ctx.rank(0) - 2
    return ctx.op('Pooling', ctx.sym(0), kernel=(1,) * n, global_pool=True,
                  pool_type='avg' if ctx.op_type == 'GlobalAveragePool' else 'max')


@register('LRN')
def _lrn(ctx):
    return ctx.op('LRN', ctx.sym(0), alpha=float(ctx.attrs.get('alpha', 1e-4)),
                  beta=float(ctx.attrs.get('beta', 0.75)), knorm=float(ctx.attrs.get('bias', 1.0)),
                  nsize=int(ctx.attrs['size']))


@register('DepthToSpace', 'SpaceToDepth')
def _depth_space(ctx):
    block = int(ctx.attrs['blocksize'])
    x = ctx.sym(0)
    if ctx.op_type == 'SpaceToDepth':
        return ctx.op('space_to_depth', x, block_size=block)
    if ctx.attrs.get('mode', 'DCR') == 'DCR':
        return ctx.op('depth_to_space', x, block_size=block)
    # CRD: channels split as (C, b, b), not (b, b, C) - one reshape/transpose/reshape
    n, c, h, w = ctx.full_shape(0, 'DepthToSpace in CRD mode')
    x = ctx.op('reshape', x, shape=(n, c // (block * block), block, block, h, w))
    x = ctx.op('transpose', x, axes=(0, 1, 4, 2, 5, 3))
    return ctx.op('reshape', x, shape=(n, c // (block * block), h * block, w * block))


@register('Softmax', 'LogSoftmax')
def _softmax(ctx):
    op = 'softmax' if ctx.op_type == 'Softmax' else 'log_softmax'
    x = ctx.sym(0)
    if ctx.opset >= 13:
        return ctx.op(op, x, axis=int(ctx.attrs.get('axis', -1)))
    # before opset 13: the input is coerced to 2-D at `axis` and normalised over the 2nd axis
    rank = ctx.rank(0)
    axis = norm_axis(ctx, int(ctx.attrs.get('axis', 1)), rank)
    if axis == rank - 1:
        return ctx.op(op, x, axis=-1)
    if axis == 0:
        flat = ctx.op('reshape', x, shape=(1, -1))
    elif axis == 1:
        flat = ctx.op('flatten', x)
    else:
        s = ctx.full_shape(0, 'softmax over flattened trailing axes')
        flat = ctx.op('reshape', x, shape=(int(np.prod(s[:axis])), -1))
    return ctx.op('reshape_like', ctx.op(op, flat, axis=-1), x)


@register('Gemm')
def _gemm(ctx):
    alpha = float(ctx.attrs.get('alpha', 1.0))
    beta = float(ctx.attrs.get('beta', 1.0))
    trans_a, trans_b = int(ctx.attrs.get('transA', 0)), int(ctx.attrs.get('transB', 0))
    a = ctx.sym(0)
    if trans_a:
        a = ctx.op('transpose', a)
    bshape = ctx.full_shape(1, 'the output width comes from it')
    n = int(bshape[0] if trans_b else bshape[1])
    if ctx.is_const(1):
        if trans_b:
            w = ctx.sym(1)
        else:
            w = ctx.graph.const_var(ctx.input_names[1], np.ascontiguousarray(ctx.inputs[1].T),
                                    'T')
    else:
        w = ctx.sym(1) if trans_b else ctx.op('transpose', ctx.sym(1))
    c_shape = ctx.shape(2) if ctx.has(2) else None
    fold_bias = (alpha == 1.0 and beta == 1.0 and c_shape is not None and
                 tuple(c_shape) in ((n,), (1, n)) and ctx.is_const(2))
    if fold_bias:
        bias = ctx.graph.const_var(ctx.input_names[2], ctx.inputs[2].reshape(n), 'flat')
        return ctx.op('FullyConnected', a, w, bias, num_hidden=n, no_bias=False)
    out = ctx.op('FullyConnected', a, w, num_hidden=n, no_bias=True)
    if alpha != 1.0:
        out = ctx.op('_mul_scalar', out, scalar=alpha)
    if ctx.has(2) and beta != 0.0:
        c = ctx.sym(2)
        if beta != 1.0:
            c = ctx.op('_mul_scalar', c, scalar=beta)
        out = ctx.op('broadcast_add', out, c)
    return out


@register('MatMul')
def _matmul(ctx):
    sa, sb = ctx.shape(0), ctx.shape(1)
    if sa is None or sb is None:
        ctx.fail('needs the ranks of both inputs')
    ra, rb = len(sa), len(sb)
    a = ctx.sym(0)
    if ra == 1 or rb == 1:
        b = ctx.sym(1)
        if ra == 1:
            a = ctx.op('expand_dims', a, axis=0)
        if rb == 1:
            b = ctx.op('expand_dims', b, axis=1)
        if max(ra, rb) > 2:
            ctx.fail('1-D by N-D products are not supported')
        out = ctx.op('dot', a, b)
        return ctx.op('reshape', out, shape=(-1,)) if ra == 1 or rb == 1 else out
    if rb == 2:
        if ctx.is_const(1) and ra > 2:
            # x @ W over the last axis is a FullyConnected layer that keeps the leading axes
            w = ctx.graph.const_var(ctx.input_names[1],
                                    np.ascontiguousarray(ctx.inputs[1].T), 'T')
            return ctx.op('FullyConnected', a, w, num_hidden=int(sb[1]), no_bias=True,
                          flatten=False)
        return ctx.op('dot', a, ctx.sym(1))  # dot contracts a's last axis with b's first
    if ra != rb:
        ctx.fail('batched products with different ranks (%d and %d) are not supported' %
                 (ra, rb))
    if any(x is not None and y is not None and x != y for x, y in zip(sa[:-2], sb[:-2])):
        ctx.fail('batched products that broadcast the batch dimensions (%s and %s) are not '
                 'supported' % (sa, sb))
    if ra == 3:
        return ctx.op('batch_dot', a, ctx.sym(1))
    # merge the batch axes pairwise (MXNet's reshape code -3), multiply, then give the result
    # the batch axes of `a` back: this works for batch sizes known only at run time
    b = ctx.sym(1)
    for r in range(ra, 3, -1):
        codes = (-3,) + (0,) * (r - 2)
        a, b = ctx.op('reshape', a, shape=codes), ctx.op('reshape', b, shape=codes)
    out = ctx.op('batch_dot', a, b)
    return ctx.op('reshape_like', out, ctx.sym(0), lhs_begin=0, lhs_end=1, rhs_begin=0,
                  rhs_end=ra - 2)


@register('Pad')
def _pad(ctx):
    mode = ctx.attrs.get('mode', 'constant')
    if mode not in ('constant', 'reflect', 'edge'):
        ctx.fail("mode '%s' is not supported" % mode)
    if ctx.opset < 11:
        pads, value = [int(p) for p in ctx.attrs['pads']], float(ctx.attrs.get('value', 0.0))
    else:
        pads = ctx.ints(1, 'pads')
        value = float(ctx.const(2, 'constant_value').reshape(-1)[0]) if ctx.has(2) else 0.0
    rank = ctx.rank(0)
    if ctx.has(3):
        axes = [norm_axis(ctx, a, rank) for a in ctx.ints(3, 'axes')]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    begin, end = pads[:rank], pads[rank:]
    if any(begin[:2]) or any(end[:2]):
        ctx.fail('padding of the batch or channel axis is not supported')
    if all(p == 0 for p in pads):
        return ctx.sym(0)
    if rank not in (4, 5):
        ctx.fail('padding a %d-D tensor is not supported (4-D and 5-D are)' % rank)
    if any(p < 0 for p in pads):
        ctx.fail('negative pads are not supported')
    width = tuple(v for be in zip(begin, end) for v in be)
    return ctx.op('Pad', ctx.sym(0), mode=mode, pad_width=width, constant_value=value)


def _resize_factors(ctx, scales, sizes):
    """Output (height, width) and the integer scale when both axes share one (else None)."""
    in_shape = ctx.shape(0)
    if in_shape is None or len(in_shape) != 4:
        ctx.fail('only 4-D (NCHW) inputs can be resized')
    if sizes is not None:
        if list(sizes[:2]) != list(in_shape[:2]):
            ctx.fail('resizing the batch or channel axis is not supported')
        hw = tuple(int(s) for s in sizes[2:])
        ih, iw = in_shape[2:]
        scale = None
        if ih and iw and hw[0] % ih == 0 and hw[0] // ih == hw[1] // iw and hw[1] % iw == 0:
            scale = hw[0] // ih
        return hw, scale
    if abs(scales[0] - 1) > 1e-6 or abs(scales[1] - 1) > 1e-6:
        ctx.fail('resizing the batch or channel axis is not supported')
    sh, sw = float(scales[2]), float(scales[3])
    scale = int(round(sh)) if sh == sw and abs(sh - round(sh)) < 1e-6 and sh >= 1 else None
    ih, iw = in_shape[2:]
    hw = None if ih is None or iw is None else (int(ih * sh), int(iw * sw))
    return hw, scale


def _resize(ctx, mode, ctm, nearest_mode, scales, sizes):
    hw, scale = _resize_factors(ctx, scales, sizes)
    x = ctx.sym(0)
    if mode == 'nearest':
        # with an integer factor, floor(dst / s) is what 'asymmetric'+'floor' and the
        # half-pixel modes with rounding pick
        ok = ((ctm == 'asymmetric' and nearest_mode == 'floor') or
              (ctm in ('half_pixel', 'pytorch_half_pixel') and
               nearest_mode in ('round_prefer_floor', 'round_prefer_ceil')))
        if scale is None or not ok:
            ctx.fail("nearest resizing is supported with one integer factor for both axes and "
                     "coordinate_transformation_mode 'asymmetric' (nearest_mode 'floor') or "
                     "'half_pixel' (rounding); got %s / %s" % (ctm, nearest_mode))
        if scale == 1:
            return x
        return ctx.op('UpSampling', x, scale=scale, sample_type='nearest', num_args=1)
    if mode == 'linear':
        if ctm not in ('align_corners', 'half_pixel', 'pytorch_half_pixel'):
            ctx.fail("linear resizing with coordinate_transformation_mode '%s' is not "
                     "supported" % ctm)
        if hw is None:
            ctx.fail('linear resizing needs the static input height and width')
        return ctx.op('contrib.BilinearResize2D', x, height=hw[0], width=hw[1],
                      align_corners=ctm == 'align_corners')
    ctx.fail("mode '%s' is not supported" % mode)


@register('Resize')
def _resize_op(ctx):
    if int(ctx.attrs.get('antialias', 0)) or 'axes' in ctx.attrs:
        ctx.fail('antialias and axes are not supported')
    if ctx.opset < 11:
        scales, sizes = [float(s) for s in ctx.const(1, 'scales').reshape(-1)], None
        ctm = 'asymmetric'
    else:
        scales = ctx.const(2, 'scales').reshape(-1) if ctx.has(2) else np.zeros(0)
        sizes = ctx.ints(3, 'sizes') if ctx.has(3) else None
        scales = [float(s) for s in scales] if scales.size else None
        if scales is None and sizes is None:
            ctx.fail('neither scales nor sizes is given')
        ctm = ctx.attrs.get('coordinate_transformation_mode', 'half_pixel')
    mode = ctx.attrs.get('mode', 'nearest')
    return _resize(ctx, mode, ctm, ctx.attrs.get('nearest_mode', 'round_prefer_floor'),
                   scales, sizes)


@register('Upsample')
def _upsample(ctx):
    if 'scales' in ctx.attrs:
        scales = [float(s) for s in ctx.attrs['scales']]
    else:
        scales = [float(s) for s in ctx.const(1, 'scales').reshape(-1)]
    mode = ctx.attrs.get('mode', 'nearest')
    if mode != 'nearest':
        ctx.fail("mode '%s' is not supported" % mode)
    return _resize(ctx, mode, 'asymmetric', 'floor', scales, None)
