"""The table of ONNX op converters: `@register('Conv')` on a function of a NodeCtx that
returns the node's outputs (Symbols, or NumPy arrays for values known at import)."""

CONVERTERS = {}


def register(*op_types):
    def deco(fn):
        for t in op_types:
            CONVERTERS[t] = fn
        return fn
    return deco


def axes_arg(ctx, index=1, attr='axes'):
    """The node's axes: an attribute before the opset that turned it into input `index`,
    an input from then on; None when neither is given or the list is empty (which ONNX's
    reductions and Squeeze read as "all axes")."""
    if attr in ctx.attrs:
        axes = [int(a) for a in ctx.attrs[attr]]
    elif ctx.has(index):
        axes = ctx.ints(index, attr)
    else:
        return None
    return axes or None


def norm_axis(ctx, axis, rank):
    if not -rank <= axis < rank:
        ctx.fail('axis %d is out of range for rank %d' % (axis, rank))
    return axis + rank if axis < 0 else axis
