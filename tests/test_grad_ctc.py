"""CTCLoss (csrc/ops/ctc.c): forward against a NumPy reference (alpha/beta recursions over all
alignments, and a brute-force sum over every alignment on tiny cases), its gradient rule against
float64 finite differences, blank_label first/last, data and label lengths, hybridized use
(through the Symbol path), and the errors for bad shapes and labels."""
import itertools

import numpy as np
import pytest

import hybridgluon as mx
from gradcheck import check_grad

nd = mx.nd
OPS_COVERED = ['CTCLoss']
GRADS_COVERED = ['CTCLoss']


def _log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _sequences(label, data_lengths, label_lengths, blank_label, n, t_max):
    pad = 0 if blank_label == 'first' else -1
    for b in range(n):
        lab = np.asarray(label[b]).astype(np.int64)
        if label_lengths is None:
            stop = np.nonzero(lab == pad)[0]
            lab = lab[:stop[0]] if stop.size else lab
        else:
            lab = lab[:int(label_lengths[b])]
        yield b, (t_max if data_lengths is None else int(data_lengths[b])), list(lab)


def ctc_brute(data, label, data_lengths=None, label_lengths=None, blank_label='first'):
    """-log of the summed probability of every alignment that collapses to the label."""
    t_max, n, c = data.shape
    blank = 0 if blank_label == 'first' else c - 1
    lp = _log_softmax(data.astype(np.float64))
    out = np.zeros(n)
    for b, tb, lab in _sequences(label, data_lengths, label_lengths, blank_label, n, t_max):
        total = 0.0
        for path in itertools.product(range(c), repeat=tb):
            collapsed = [k for i, k in enumerate(path) if k != blank and
                         (i == 0 or k != path[i - 1])]
            if collapsed == lab:
                total += np.exp(sum(lp[t, b, k] for t, k in enumerate(path)))
        out[b] = -np.log(total)
    return out


def ctc_ref(data, label, data_lengths=None, label_lengths=None, blank_label='first'):
    """The same loss by the alpha recursion in log space (for sizes brute force cannot do)."""
    t_max, n, c = data.shape
    blank = 0 if blank_label == 'first' else c - 1
    lp = _log_softmax(data.astype(np.float64))
    out = np.zeros(n)
    for b, tb, lab in _sequences(label, data_lengths, label_lengths, blank_label, n, t_max):
        ext = [blank]
        for k in lab:
            ext += [k, blank]
        a = np.full(len(ext), -np.inf)
        a[:2] = lp[0, b, ext[:2]]
        for t in range(1, tb):
            prev = a.copy()
            for s in range(len(ext)):
                v = [prev[s]] + ([prev[s - 1]] if s >= 1 else []) + \
                    ([prev[s - 2]] if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2] else [])
                a[s] = np.logaddexp.reduce(v) + lp[t, b, ext[s]]
        out[b] = -np.logaddexp.reduce(a[-2:]) if len(ext) > 1 else -a[0]
    return out


def _labels(rng, n, l_max, c, blank_label, lengths):
    first = blank_label == 'first'
    lab = np.full((n, l_max), 0 if first else -1, np.float32)
    for b, lb in enumerate(lengths):
        lab[b, :lb] = rng.integers(1, c, lb) if first else rng.integers(0, c - 1, lb)
    return lab


@pytest.mark.parametrize('blank_label', ['first', 'last'])
def test_forward_brute_force(blank_label):
    rng = np.random.default_rng(0)
    t, n, c = 4, 3, 3
    x = rng.standard_normal((t, n, c))
    lab = _labels(rng, n, 3, c, blank_label, [2, 1, 0])
    lab[0, :2] = lab[0, 0]  # a repeated label needs a blank between its copies
    for dtype in ('float32', 'float64'):
        y = nd.CTCLoss(nd.array(x, dtype=dtype), nd.array(lab), blank_label=blank_label)
        assert y.dtype == np.dtype(dtype) and y.shape == (n,)
        np.testing.assert_allclose(y.asnumpy(), ctc_brute(x, lab, blank_label=blank_label),
                                   rtol=1e-5 if dtype == 'float32' else 1e-12)


@pytest.mark.parametrize('blank_label', ['first', 'last'])
@pytest.mark.parametrize('use_dl,use_ll', [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_forward_lengths(blank_label, use_dl, use_ll):
    rng = np.random.default_rng(1)
    t, n, c, l_max = 9, 4, 6, 3
    x = rng.standard_normal((t, n, c))
    lens = [3, 1, 2, 0]
    lab = _labels(rng, n, l_max, c, blank_label, lens)
    dl = np.array([9, 5, 7, 2], np.float32) if use_dl else None
    ll = np.array(lens, np.float32) if use_ll else None
    if use_ll:  # with explicit lengths the padding may hold anything that is a class
        lab[1, 2] = 1
    args = [nd.array(x, dtype='float64'), nd.array(lab)] + \
        [nd.array(v) for v in (dl, ll) if v is not None]
    y = nd.CTCLoss(*args, use_data_lengths=use_dl, use_label_lengths=use_ll,
                   blank_label=blank_label)
    np.testing.assert_allclose(y.asnumpy(), ctc_ref(x, lab, dl, ll, blank_label), rtol=1e-12)


@pytest.mark.parametrize('blank_label', ['first', 'last'])
def test_gradient_finite_differences(blank_label):
    rng = np.random.default_rng(2)
    t, n, c = 5, 2, 4
    x = rng.standard_normal((t, n, c))
    lab = _labels(rng, n, 2, c, blank_label, [2, 1])
    check_grad('CTCLoss', [x, lab], wrt=[0], attrs={'blank_label': blank_label}, rtol=1e-6,
               atol=1e-8)
    dl = np.array([5, 3], np.float32)
    g = check_grad('CTCLoss', [x, lab, dl], wrt=[0],
                   attrs={'blank_label': blank_label, 'use_data_lengths': True}, rtol=1e-6,
                   atol=1e-8)
    assert np.all(g[0][3:, 1] == 0)  # nothing flows past a sequence's length


def test_imperative_gradient_and_hybridized():
    rng = np.random.default_rng(3)
    x = nd.array(rng.standard_normal((6, 3, 5)))
    lab = nd.array(_labels(rng, 3, 3, 5, 'first', [3, 2, 1]))
    x.attach_grad()
    dy = nd.array(rng.standard_normal(3))
    with mx.autograd.record():
        y = nd.CTCLoss(x, lab)
    y.backward(dy)
    g_imp = x.grad.asnumpy()
    data, label = mx.sym.var('data'), mx.sym.var('label')
    net = mx.gluon.SymbolBlock(mx.sym.CTCLoss(data, label), [data, label])
    net.hybridize()
    x2 = nd.array(x.asnumpy())
    x2.attach_grad()
    with mx.autograd.record():
        y2 = net(x2, lab)
    y2.backward(dy)
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(x2.grad.asnumpy(), g_imp, rtol=1e-5, atol=1e-7)


def test_infeasible_sequence_is_dropped_like_mxnet():
    # MXNet 1.9.1 gives loss 0 to a sequence no alignment can produce (and leaves its gradient
    # unwritten); the gradient here is 0.
    x = nd.array(np.random.default_rng(4).standard_normal((2, 2, 3)))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.CTCLoss(x, nd.array([[1, 1], [2, 0]]))  # [1, 1] needs 3 steps
    y.backward()
    assert y.asnumpy()[0] == 0 and np.all(x.grad.asnumpy()[:, 0] == 0)
    assert y.asnumpy()[1] > 0 and np.any(x.grad.asnumpy()[:, 1] != 0)


def test_errors():
    x = nd.zeros((4, 2, 3))
    with pytest.raises(mx.MXNetError, match='data must be 3-D'):
        nd.CTCLoss(nd.zeros((4, 3)), nd.zeros((2, 2)))
    with pytest.raises(mx.MXNetError, match=r'label must have shape \[2, max label length\]'):
        nd.CTCLoss(x, nd.zeros((3, 2)))
    with pytest.raises(mx.MXNetError, match=r'label\[1, 0\] = 3 is not a class'):
        nd.CTCLoss(x, nd.array([[1, 0], [3, 0]]))
    with pytest.raises(mx.MXNetError, match='other than the blank 2'):
        nd.CTCLoss(x, nd.array([[2, -1], [0, -1]]), blank_label='last')
    with pytest.raises(mx.MXNetError, match=r'data_lengths\[0\] = 5 is not in \[0, 4\]'):
        nd.CTCLoss(x, nd.array([[1, 0], [1, 0]]), nd.array([5, 1]), use_data_lengths=True)
    with pytest.raises(mx.MXNetError, match=r'label_lengths must have shape \[2\]'):
        nd.CTCLoss(x, nd.array([[1, 0], [1, 0]]), nd.array([1, 1, 1]), use_label_lengths=True)
    with pytest.raises(mx.MXNetError, match='float32 or float64'):
        nd.CTCLoss(nd.zeros((4, 2, 3), dtype='int32'), nd.zeros((2, 2)))
