"""ONNX converters of the shape and indexing ops: reshape, transpose, concat, split, slices,
tile/repeat, gather-style indexing, padding, casts and the sorting ops."""
from ._builder import converter, INT64_MAX, INT64_MIN


def _reshape_target(b, n, x, out=0, copy_upto=None):
    """Reshape x to node n's output shape: constant where static; a dimension that follows
    a dynamic input is copied (0) when it sits where the node's input had it (and, for an x
    computed from that input, at an index below copy_upto, where x keeps the input's
    dimensions), else inferred (-1)."""
    shape = list(n.out_shapes[out])
    dyn = n.out_dyn[out]
    in_shape, in_dyn = n.in_shapes[0], n.in_dyn[0]
    left = []
    for k, d in enumerate(dyn):
        if not d:
            continue
        copyable = copy_upto is None or k < copy_upto
        if copyable and k < len(in_shape) and in_dyn[k] and in_shape[k] == shape[k]:
            shape[k] = 0
        else:
            left.append(k)
    if len(left) > 1:
        n.fail('the output shape %s has several dynamic dimensions that move (%s); export with '
               'static shapes' % (tuple(n.out_shapes[out]), left))
    for k in left:
        shape[k] = -1
    if 0 in n.out_shapes[out]:
        return b.add('Reshape', [x, b.i64(shape)], allowzero=1) if not any(dyn) else \
            n.fail('zero-size dynamic reshape')
    return b.add('Reshape', [x, b.i64(shape)])


@converter('Reshape', 'reshape_like', '_np_reshape')
def _reshape(b, n):
    return _reshape_target(b, n, n.inputs[0])


@converter('transpose')
def _transpose(b, n):
    axes = list(n.attrs.tuple('axes', ()))
    nd = len(n.in_shapes[0])
    perm = [a % nd for a in axes] if axes else list(range(nd))[::-1]
    return b.add('Transpose', [n.inputs[0]], perm=perm)


@converter('SwapAxis')
def _swapaxis(b, n):
    nd = len(n.in_shapes[0])
    perm = list(range(nd))
    d1, d2 = n.attrs.int('dim1', 0) % nd, n.attrs.int('dim2', 0) % nd
    perm[d1], perm[d2] = perm[d2], perm[d1]
    return b.add('Transpose', [n.inputs[0]], perm=perm)


@converter('Concat', '_rnn_param_concat')
def _concat(b, n):
    return b.add('Concat', n.inputs, axis=n.attrs.int('dim', 1))


@converter('stack')
def _stack(b, n):
    axis = n.attrs.int('axis', 0) % (len(n.in_shapes[0]) + 1)
    return b.add('Concat', [b.unsqueeze(x, [axis]) for x in n.inputs], axis=axis)


@converter('add_n')
def _add_n(b, n):
    return b.add('Sum', n.inputs)


def _split(b, n, axis, sizes, squeeze):
    if n.in_dyn[0][axis]:
        n.fail('splitting the dynamic axis %d cannot be expressed with static sizes' % axis)
    outs = b.add('Split', [n.inputs[0], b.i64(sizes)], n_out=len(sizes), axis=axis)
    if len(sizes) == 1:
        outs = [outs]
    if squeeze:
        outs = [b.squeeze(o, [axis]) for o in outs]
    return outs


@converter('SliceChannel')
def _slice_channel(b, n):
    nd = len(n.in_shapes[0])
    axis = n.attrs.int('axis', 1) % nd
    k = n.attrs.int('num_outputs')
    size = n.in_shapes[0][axis] // k
    return _split(b, n, axis, [size] * k, n.attrs.bool('squeeze_axis'))


@converter('_split_v2')
def _split_v2(b, n):
    nd = len(n.in_shapes[0])
    axis = n.attrs.int('axis', 0) % nd
    sizes = [s[axis] for s in n.out_shapes]
    squeeze = n.attrs.bool('squeeze_axis')
    if squeeze:
        sizes = [1] * len(n.out_shapes)
    return _split(b, n, axis, sizes, squeeze)


def _slice_bounds(begin, end, step):
    step = 1 if step is None else int(step)
    if step == 0:
        return None
    if begin is None:
        begin = 0 if step > 0 else -1
    if end is None:
        end = INT64_MAX if step > 0 else INT64_MIN
    return int(begin), int(end), step


@converter('slice')
def _slice(b, n):
    begin, end = n.attrs.tuple('begin'), n.attrs.tuple('end')
    step = n.attrs.tuple('step', ())
    starts, ends, axes, steps = [], [], [], []
    for k in range(len(begin)):
        s = step[k] if k < len(step) else None
        bnd = _slice_bounds(begin[k], end[k] if k < len(end) else None, s)
        if bnd is None:
            n.unsupported('step', step)
        starts.append(bnd[0])
        ends.append(bnd[1])
        steps.append(bnd[2])
        axes.append(k)
    return b.slice(n.inputs[0], starts, ends, axes, steps)


@converter('slice_axis')
def _slice_axis(b, n):
    axis = n.attrs.int('axis')
    begin = n.attrs.int('begin', 0)
    end = n.attrs.get('end')
    bnd = _slice_bounds(begin, end, 1)
    return b.slice(n.inputs[0], [bnd[0]], [bnd[1]], [axis])


@converter('slice_like')
def _slice_like(b, n):
    nd = len(n.in_shapes[0])
    axes = [a % nd for a in n.attrs.tuple('axes', ())] or list(range(len(n.in_shapes[1])))
    if any(n.out_dyn[0][a] for a in axes):
        ends = b.add('Gather', [b.add('Shape', [n.inputs[1]]), b.i64(axes)], axis=0)
        return b.add('Slice', [n.inputs[0], b.i64([0] * len(axes)), ends, b.i64(axes)])
    return b.slice(n.inputs[0], [0] * len(axes), [n.out_shapes[0][a] for a in axes], axes)


@converter('expand_dims')
def _expand_dims(b, n):
    nd = len(n.in_shapes[0])
    return b.unsqueeze(n.inputs[0], [n.attrs.int('axis') % (nd + 1)])


@converter('squeeze')
def _squeeze(b, n):
    axis = n.attrs.tuple('axis', None)
    shape = n.in_shapes[0]
    if axis is None:
        axis = [k for k, d in enumerate(shape) if d == 1]
    else:
        axis = [a % len(shape) for a in axis]
    if not axis:
        return b.add('Identity', [n.inputs[0]])
    if len(axis) == len(shape):     # MXNet keeps one dimension: shape (1,)
        return b.reshape(n.inputs[0], [1])
    return b.squeeze(n.inputs[0], axis)


@converter('tile')
def _tile(b, n):
    reps = list(n.attrs.tuple('reps'))
    x = n.inputs[0]
    nd = len(n.in_shapes[0])
    if len(reps) < nd:
        reps = [1] * (nd - len(reps)) + reps
    elif len(reps) > nd:
        x = b.unsqueeze(x, list(range(len(reps) - nd)))
    return b.add('Tile', [x, b.i64(reps)])


@converter('repeat')
def _repeat(b, n):
    r = n.attrs.int('repeats')
    axis = n.attrs.get('axis')
    x = n.inputs[0]
    if axis is None:
        x = b.reshape(x, [-1])
        axis, nd = 0, 1
    else:
        nd = len(n.in_shapes[0])
        axis = int(axis) % nd
    y = b.unsqueeze(x, [axis + 1])
    reps = [1] * (nd + 1)
    reps[axis + 1] = r
    y = b.add('Tile', [y, b.i64(reps)])
    return _reshape_target(b, n, y, copy_upto=axis if n.attrs.get('axis') is not None else 0)


@converter('where')
def _where(b, n):
    cond, x, y = n.inputs[:3]
    cs, xs = n.in_shapes[0], n.in_shapes[1]
    c = b.cast(cond, 'bool')
    if len(cs) == 1 and len(xs) > 1:
        c = b.unsqueeze(c, list(range(1, len(xs))))
    return b.add('Where', [c, x, y])


def _indices(b, n, idx, dim, mode, dyn_dim_src=None):
    """int64 indices along a dimension of size dim, out-of-range handled as `mode`."""
    i = b.cast(idx, 'int64')
    if mode == 'clip':
        return b.add('Clip', [i, b.const(0, 'int64'), b.const(dim - 1, 'int64')]) \
            if dyn_dim_src is None else \
            b.add('Min', [b.add('Max', [i, b.const(0, 'int64')]),
                          b.add('Sub', [dyn_dim_src, b.const(1, 'int64')])])
    if mode == 'wrap':
        size = b.const(dim, 'int64') if dyn_dim_src is None else dyn_dim_src
        return b.add('Mod', [b.add('Add', [b.add('Mod', [i, size]), size]), size])
    return i


@converter('take')
def _take(b, n):
    nd = len(n.in_shapes[0])
    axis = n.attrs.int('axis', 0) % nd
    mode = n.attrs.str('mode', 'clip')
    src = b.dim(n.inputs[0], axis) if n.in_dyn[0][axis] else None
    idx = _indices(b, n, n.inputs[1], n.in_shapes[0][axis], mode, src)
    return b.add('Gather', [n.inputs[0], idx], axis=axis)


@converter('batch_take')
def _batch_take(b, n):
    x, idx = n.inputs[:2]
    i = _indices(b, n, idx, n.in_shapes[0][1], 'clip')
    return b.squeeze(b.add('GatherElements', [x, b.unsqueeze(i, [1])], axis=1), [1])


@converter('Embedding')
def _embedding(b, n):
    # MXNet clips out-of-range ids to the table, where ONNX would read -1 as the last row.
    idx = _indices(b, n, n.inputs[0], n.in_shapes[1][0], 'clip')
    return b.add('Gather', [n.inputs[1], idx], axis=0)


@converter('pick')
def _pick(b, n):
    x, idx = n.inputs[:2]
    nd = len(n.in_shapes[0])
    axis = n.attrs.get('axis', -1)
    if axis is None:
        n.unsupported('axis', None)
    axis = int(axis) % nd
    mode = n.attrs.str('mode', 'clip')
    i = _indices(b, n, idx, n.in_shapes[0][axis], mode)
    if len(n.in_shapes[1]) == nd - 1:
        i = b.unsqueeze(i, [axis])
    y = b.add('GatherElements', [x, i], axis=axis)
    return y if n.attrs.bool('keepdims') else b.squeeze(y, [axis])


@converter('gather_nd')
def _gather_nd(b, n):
    idx = b.cast(n.inputs[1], 'int64')
    k = len(n.in_shapes[1])
    idx = b.add('Transpose', [idx], perm=list(range(1, k)) + [0])
    return b.add('GatherND', [n.inputs[0], idx])


@converter('Cast', 'amp_cast')
def _cast(b, n):
    return b.cast(n.inputs[0], n.out_dtypes[0])


@converter('amp_multicast')
def _amp_multicast(b, n):
    return [b.cast(x, dt) for x, dt in zip(n.inputs, n.out_dtypes)]


def _fill_like(b, n, value):
    import numpy as np
    from onnx import numpy_helper
    v = numpy_helper.from_array(np.array([value], dtype=n.out_dtypes[0]), 'value')
    return b.add('ConstantOfShape', [b.add('Shape', [n.inputs[0]])], value=v)


@converter('zeros_like')
def _zeros_like(b, n):
    return _fill_like(b, n, 0)


@converter('ones_like')
def _ones_like(b, n):
    return _fill_like(b, n, 1)


@converter('shape_array')
def _shape_array(b, n):
    return b.add('Shape', [n.inputs[0]])


@converter('size_array')
def _size_array(b, n):
    return b.reshape(b.add('Size', [n.inputs[0]]), [1])


@converter('Pad')
def _pad(b, n):
    mode = n.attrs.str('mode', 'constant')
    if mode not in ('constant', 'edge', 'reflect'):
        n.unsupported('mode', mode)
    pw = list(n.attrs.tuple('pad_width'))
    pads = pw[0::2] + pw[1::2]
    ins = [n.inputs[0], b.i64(pads)]
    if mode == 'constant':
        ins.append(b.const(n.attrs.float('constant_value', 0.0), n.in_dtypes[0]))
    return b.add('Pad', ins, mode=mode)


def _expand_to(b, n):
    """Expand to the output shape; a dynamic dimension, which keeps the input's, reads 1."""
    shape = [1 if d else s for s, d in zip(n.out_shapes[0], n.out_dyn[0])]
    return b.add('Expand', [n.inputs[0], b.i64(shape)])


@converter('broadcast_to', 'broadcast_axis', 'broadcast_like')
def _broadcast(b, n):
    return _expand_to(b, n)


@converter('reverse')
def _reverse(b, n):
    nd = len(n.in_shapes[0])
    axes = [a % nd for a in n.attrs.tuple('axis', ())]
    k = len(axes)
    return b.slice(n.inputs[0], [-1] * k, [INT64_MIN] * k, axes, [-1] * k)


@converter('depth_to_space')
def _d2s(b, n):
    return b.add('DepthToSpace', [n.inputs[0]], blocksize=n.attrs.int('block_size'), mode='DCR')


@converter('space_to_depth')
def _s2d(b, n):
    return b.add('SpaceToDepth', [n.inputs[0]], blocksize=n.attrs.int('block_size'))


@converter('one_hot')
def _one_hot(b, n):
    dt = n.out_dtypes[0]
    depth = n.attrs.int('depth')
    values = b.const([n.attrs.float('off_value', 0.0), n.attrs.float('on_value', 1.0)], dt)
    idx = b.cast(n.inputs[0], 'int64')
    # A negative index is out of range for MXNet (all off_value); ONNX counts it from the end.
    idx = b.add('Where', [b.add('Less', [idx, b.const(0, 'int64')]), b.const(depth, 'int64'),
                          idx])
    return b.add('OneHot', [idx, b.i64([depth]), values], axis=-1)


def _topk_like(b, n, k, axis, ascend):
    x = n.inputs[0]
    nd = len(n.in_shapes[0])
    if axis is None:
        x = b.reshape(x, [-1])
        axis = 0
    else:
        axis = int(axis) % nd
    if k is None or k <= 0:
        k = n.in_shapes[0][axis] if nd else 1
        if n.in_dyn[0][axis]:
            kt = b.dim(x, axis)
        else:
            kt = b.i64([k])
    else:
        kt = b.i64([k])
    vals, idx = b.add('TopK', [x, kt], n_out=2, axis=axis, largest=int(not ascend), sorted=1)
    return vals, idx


@converter('topk')
def _topk(b, n):
    ret = n.attrs.str('ret_typ', 'indices')
    if ret == 'mask':
        n.unsupported('ret_typ', ret)
    vals, idx = _topk_like(b, n, n.attrs.int('k', 1), n.attrs.get('axis', -1),
                           n.attrs.bool('is_ascend'))
    if ret == 'value':
        return [vals]
    idx_dt = n.out_dtypes[1] if ret == 'both' else n.out_dtypes[0]
    idx = b.cast(idx, idx_dt)
    return [vals, idx] if ret == 'both' else [idx]


@converter('sort')
def _sort(b, n):
    vals, _ = _topk_like(b, n, 0, n.attrs.get('axis', -1), n.attrs.bool('is_ascend', True))
    return vals


@converter('argsort')
def _argsort(b, n):
    _, idx = _topk_like(b, n, 0, n.attrs.get('axis', -1), n.attrs.bool('is_ascend', True))
    return b.cast(idx, n.out_dtypes[0])


def _arg_reduce(b, n, op_type):
    x = n.inputs[0]
    axis = n.attrs.get('axis')
    keep = n.attrs.bool('keepdims')
    if axis is None:
        y = b.add(op_type, [b.reshape(x, [-1])], axis=0, keepdims=0)
        if keep:
            y = b.reshape(y, [1] * len(n.in_shapes[0]))
        else:
            y = b.reshape(y, [1])
    else:
        y = b.add(op_type, [x], axis=int(axis), keepdims=int(keep))
    return b.cast(y, n.out_dtypes[0])


@converter('argmax')
def _argmax(b, n):
    return _arg_reduce(b, n, 'ArgMax')


@converter('argmin')
def _argmin(b, n):
    return _arg_reduce(b, n, 'ArgMin')


@converter('argmax_channel')
def _argmax_channel(b, n):
    return b.cast(b.add('ArgMax', [n.inputs[0]], axis=-1, keepdims=0), n.out_dtypes[0])


@converter('scatter_nd')
def _scatter_nd(b, n):
    # Zeros of the target shape with data written at the indices (MXNet's index layout is
    # (dims, ...) where ONNX wants (..., dims)).
    import numpy as np
    from onnx import numpy_helper
    k = len(n.in_shapes[1])
    idx = b.add('Transpose', [b.cast(n.inputs[1], 'int64')], perm=list(range(1, k)) + [0])
    zero = numpy_helper.from_array(np.zeros(1, dtype=n.out_dtypes[0]), 'value')
    base = b.add('ConstantOfShape', [b.i64(n.static_out(0))], value=zero)
    return b.add('ScatterND', [base, idx, n.inputs[0]])
