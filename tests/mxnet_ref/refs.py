"""Reading the MXNet fixtures and running their cases on hybridgluon (used by
tests/test_mxnet_conformance.py; no MXNet needed)."""
import glob
import json
import os

import numpy as np

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))
OPS_DIR = os.path.join(HERE, 'ops')


def load_op_fixture(op):
    """(meta, arrays) of ops/<op>.npz."""
    with np.load(os.path.join(OPS_DIR, op + '.npz'), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop('meta').tobytes().decode('utf-8'))
    return meta, arrays


def fixture_ops():
    return sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(OPS_DIR, '*.npz')))


def _attr(v):
    """JSON lists back to the tuples the op's schema expects."""
    if isinstance(v, list):
        return tuple(_attr(x) for x in v)
    return v


def _inputs(case, arrays, i, ctx=None):
    """Case i's inputs as NDArrays (on ctx, default the CPU), those it differentiates with
    gradients attached."""
    xs = [mx.nd.array(arrays['c%d_x%d' % (i, j)], dtype=arrays['c%d_x%d' % (i, j)].dtype,
                      ctx=ctx)
          for j in range(case['n_in'])]
    for j in case['wrt']:
        xs[j].attach_grad()
    return xs


def _outputs_and_grads(case, arrays, i, xs, out, ctx=None, grads=True):
    """(outputs, input gradients by index) as NumPy, backward run from the case's head
    gradients when it has them (and `grads`)."""
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    ys = [o.asnumpy() for o in outs]
    dxs = {}
    if case['grad'] and grads:
        dys = [mx.nd.array(arrays['c%d_dy%d' % (i, k)], dtype=arrays['c%d_dy%d' % (i, k)].dtype,
                           ctx=ctx)
               for k in range(len(outs))]
        mx.autograd.backward(outs, dys)
        dxs = {j: xs[j].grad.asnumpy() for j in case['wrt']}
    return ys, dxs


def run_case(op, meta, arrays, i, ctx=None, grads=True):
    """Runs case i on hybridgluon, its inputs on ctx (default the CPU): (outputs, input
    gradients by index, mutated inputs by index), all NumPy. grads=False: no backward."""
    case = meta['cases'][i]
    attrs = {k: _attr(v) for k, v in case['attrs'].items()}
    fn = mx._core.get_op(op)
    xs = _inputs(case, arrays, i, ctx)
    if case['grad']:
        with mx.autograd.record(train_mode=case['train']):
            out = fn(*xs, **attrs)
    else:
        scope = mx.autograd.train_mode() if case['train'] else mx.autograd.predict_mode()
        with scope:
            out = fn(*xs, **attrs)
    ys, dxs = _outputs_and_grads(case, arrays, i, xs, out, ctx, grads)
    ms = {j: xs[j].asnumpy() for j in case['mutates']}
    return ys, dxs, ms


def rel_err(ours, ref):
    """Largest |ours - ref| relative to the reference tensor's scale (max |ref|, at least 1e-6),
    with NaN/inf required at the same places; (error, index of the worst element)."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        return np.inf, None
    if ours.size == 0:
        return 0.0, None
    bad_nan = np.isnan(ours) != np.isnan(ref)
    finite = np.isfinite(ref) & np.isfinite(ours)
    bad_inf = (~np.isfinite(ref) | ~np.isfinite(ours)) & ~(np.isnan(ref) & np.isnan(ours)) \
        & (ours != ref)
    if bad_nan.any() or bad_inf.any():
        idx = np.unravel_index(np.argmax(bad_nan | bad_inf), ref.shape)
        return np.inf, idx
    if not finite.any():
        return 0.0, None
    scale = max(np.abs(ref[finite]).max(), 1e-6)
    diff = np.where(finite, np.abs(ours - ref), 0.0)
    idx = np.unravel_index(np.argmax(diff), ref.shape)
    return float(diff[idx] / scale), idx


def run_case_symbol(op, meta, arrays, i):
    """Case i through the Symbol path: the op composed on variables, run by a hybridized
    SymbolBlock with every input fed as data (no Parameters); (outputs, input gradients by
    index), all NumPy. In-place updates of inputs are the imperative path's business."""
    case = meta['cases'][i]
    attrs = {k: _attr(v) for k, v in case['attrs'].items()}
    names = ['x%d' % j for j in range(case['n_in'])]
    variables = [mx.sym.var(n) for n in names]
    sym = getattr(mx.sym, op)(*variables, **attrs)
    block = mx.gluon.SymbolBlock(sym, variables)
    block.hybridize()
    xs = _inputs(case, arrays, i)
    with mx.autograd.record(train_mode=case['train']):
        out = block(*xs)
    ys, dxs = _outputs_and_grads(case, arrays, i, xs, out)
    return ys, dxs
