"""Write versions of array storage (csrc/core/tensor.h) and the folded weights that inference
plans keep between calls on them (csrc/exec/fold.c).

Every path that writes into an existing array must give its storage a new version, and every
path that hands its memory to code we cannot watch must make it read as untracked (0); a missed
path would let a hybridized network run on stale folded weights. The second half checks exactly
that end to end: a hybridized Conv + BatchNorm network in inference, its parameters changed by
each way a user changes them, against the same network run op by op (no plan, no kept weights).
"""
import ctypes
import gc
import os
import tempfile

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon
from hybridgluon.gluon import nn


def ver(a):
    return a._write_version


# ---- versions ------------------------------------------------------------------------------

def test_new_arrays_have_distinct_versions():
    a, b = mx.nd.ones((3, 4)), mx.nd.ones((3, 4))
    assert ver(a) > 0 and ver(b) > 0 and ver(a) != ver(b)


def test_op_reads_keep_the_version():
    a = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    v = ver(a)
    (a + 1).wait_to_read()
    mx.nd.dot(a, a.T).wait_to_read()
    a.reshape((4, 3)).wait_to_read()
    assert ver(a) == v


@pytest.mark.parametrize('how', ['setitem', 'slice', 'iadd', 'out', 'copyto', 'fill_op',
                                 'setitem_numpy', 'setitem_scalar_row', 'reinit',
                                 'mutated_bn_aux'])
def test_writes_change_the_version(how):
    a = mx.nd.ones((4, 3))
    v = ver(a)
    if how == 'setitem':
        a[:] = 2
    elif how == 'slice':
        a[1:3] = 5
    elif how == 'iadd':
        a += 1
    elif how == 'out':
        mx.nd.elemwise_add(mx.nd.ones((4, 3)), mx.nd.ones((4, 3)), out=a)
    elif how == 'copyto':
        mx.nd.zeros((4, 3)).copyto(a)
    elif how == 'fill_op':
        mx.nd.zeros((4, 3), out=a)
    elif how == 'setitem_numpy':
        a[:] = np.full((4, 3), 7, np.float32)
    elif how == 'setitem_scalar_row':
        a[2] = 5.0
    elif how == 'reinit':  # an initializer writing into the array it is given
        mx.init.Uniform()(mx.init.InitDesc('w_weight'), a)
    elif how == 'mutated_bn_aux':
        mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
        vm, vv = ver(mean), ver(var)
        x = mx.nd.array(np.random.RandomState(0).rand(4, 3).astype(np.float32))
        g, b = mx.nd.ones((3,)), mx.nd.zeros((3,))
        mx.nd.BatchNorm(x, g, b, mean, var)  # inference: the moving statistics are read only
        assert (ver(mean), ver(var)) == (vm, vv)
        with autograd.record():  # training: updated in place
            mx.nd.BatchNorm(x, g, b, mean, var)
        assert ver(mean) not in (0, vm) and ver(var) not in (0, vv)
        return
    assert ver(a) not in (0, v)


def test_optimizer_update_changes_the_weight_version():
    net = nn.Dense(3, in_units=4)
    net.initialize()
    tr = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    w = net.weight.data()
    v = ver(w)
    with autograd.record():
        y = net(mx.nd.ones((2, 4))).sum()
    y.backward()
    tr.step(2)
    assert ver(net.weight.data()) not in (0, v)


def test_writable_buffer_reads_untracked_until_released():
    a = mx.nd.ones((8,))
    v = ver(a)
    view = np.asarray(a)  # shares the memory
    assert ver(a) == 0
    view[2] = 7.0
    del view
    gc.collect()
    v2 = ver(a)
    assert v2 not in (0, v) and a.asnumpy()[2] == 7.0
    buf = (ctypes.c_float * 8).from_buffer(a)
    assert ver(a) == 0
    buf[0] = 42.0
    del buf
    gc.collect()
    assert ver(a) not in (0, v, v2)
    assert a.asnumpy()[0] == 42.0


def test_dlpack_export_reads_untracked_while_held():
    torch = pytest.importorskip('torch')
    a = mx.nd.ones((5,))
    v = ver(a)
    t = torch.from_dlpack(a)
    assert ver(a) == 0
    t[1] = 9.0
    del t
    gc.collect()
    assert ver(a) not in (0, v)
    assert a.asnumpy()[1] == 9.0


def test_address_handed_out_untracks_for_good():
    a = mx.nd.ones((5,))
    a._data_ptr
    a[:] = 3
    assert ver(a) == 0


def test_imported_memory_is_untracked():
    x = np.ones(6, np.float32)
    a = mx.nd.from_dlpack(x)
    assert ver(a) == 0


# ---- folded weights kept by inference plans ------------------------------------------------

def _net(seed, channels, size, groups=1):
    rs = np.random.RandomState(seed)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(channels, 3, padding=1, groups=groups, use_bias=False),
            nn.BatchNorm(), nn.Activation('relu'),
            nn.Conv2D(channels, 1, use_bias=True), nn.BatchNorm())
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(rs.rand(1, channels, size, size).astype(np.float32))
    net(x)
    for p in net.collect_params().values():  # statistics away from (0, 1), so folding matters
        if p.name.endswith('running_mean'):
            p.set_data(mx.nd.array(rs.randn(*p.shape).astype(np.float32) * 0.3))
        elif p.name.endswith(('running_var', 'gamma')):
            p.set_data(mx.nd.array(rs.uniform(0.5, 2.0, p.shape).astype(np.float32)))
        elif p.name.endswith('beta'):
            p.set_data(mx.nd.array(rs.randn(*p.shape).astype(np.float32) * 0.2))
    return net, x


def _reference(net, x):
    """The network op by op: its blocks called one after another, no plan."""
    y = x
    for blk in net._children.values():
        y = blk(y)
    return y.asnumpy()


def _close(got, want):
    """Equal up to float32 rounding of sums over the channels (values reach 1e3 here); a stale
    fold (weights replaced, variances times 4, ...) is off by far more."""
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * float(np.abs(want).max()))


def _param(net, suffix, k):
    return [p for p in net.collect_params().values() if p.name.endswith(suffix)][k]


def _change(net, x, how, rs):
    if how == 'set_data':
        w = _param(net, 'weight', 0)
        w.set_data(mx.nd.array(rs.randn(*w.shape).astype(np.float32)))
    elif how == 'setitem':
        w = _param(net, 'weight', 1)
        w.data()[:] = mx.nd.array(rs.randn(*w.shape).astype(np.float32))
    elif how == 'slice':
        w = _param(net, 'weight', 0).data()
        w[0:1] = w[0:1] * 3
    elif how == 'iadd':
        g = _param(net, 'gamma', 0).data()
        g += 0.5
    elif how == 'running_var':
        v = _param(net, 'running_var', 1).data()
        v[:] = v * 4
    elif how == 'trainer':
        tr = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.5})
        with autograd.record():
            y = net(x).sum()
        y.backward()
        tr.step(1)
    elif how == 'train_forward':  # batch statistics update the moving ones
        with autograd.record():
            net(x)
    elif how == 'load':  # load_parameters of a file saved from another initialisation
        other, _ = _net(99, x.shape[1], x.shape[2])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'net.params')
            other.save_parameters(path)
            net.load_parameters(path)
    elif how == 'buffer':
        w = _param(net, 'weight', 0).data()
        buf = (ctypes.c_float * w.size).from_buffer(w)
        buf[0] = 10.0
        del buf
        gc.collect()
    else:
        raise AssertionError(how)


HOWS = ['set_data', 'setitem', 'slice', 'iadd', 'running_var', 'trainer', 'train_forward',
        'load', 'buffer']


@pytest.mark.parametrize('size,channels', [(14, 8), (4, 32)])
@pytest.mark.parametrize('how', HOWS)
def test_kept_weights_follow_every_change(how, size, channels):
    """A hybridized inference call after each kind of change equals the network op by op."""
    rs = np.random.RandomState(1)
    net, x = _net(0, channels, size)
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(2):  # the plan folds and keeps the weights on the first, reuses on the second
        _close(net(x).asnumpy(), _reference(net, x))
    _change(net, x, how, rs)
    got = net(x).asnumpy()
    _close(got, _reference(net, x))
    np.testing.assert_allclose(net(x).asnumpy(), got, rtol=0, atol=0)


def test_kept_weights_follow_changes_in_a_pointwise_depthwise_pair():
    """MobileNetV2's expansion + depthwise pair (fold.c, run_pair) keeps both steps' weights."""
    rs = np.random.RandomState(2)
    net = nn.HybridSequential()
    net.add(nn.Conv2D(48, 1, use_bias=False), nn.BatchNorm(), nn.Activation('relu'),
            nn.Conv2D(48, 3, padding=1, groups=48, use_bias=False), nn.BatchNorm(),
            nn.Activation('relu'))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(rs.rand(1, 16, 28, 28).astype(np.float32))
    net(x)
    net.hybridize(static_alloc=True, static_shape=True)
    for how in ['set_data', 'running_var', 'iadd', 'trainer']:
        _close(net(x).asnumpy(), _reference(net, x))
        if how == 'set_data':
            w = _param(net, 'weight', 1)
            w.set_data(mx.nd.array(rs.randn(*w.shape).astype(np.float32)))
        else:
            _change(net, x, how, rs)
        _close(net(x).asnumpy(), _reference(net, x))


def test_untracked_weights_fold_at_every_call():
    """Weights whose address went to other code are folded at every call, and still follow."""
    net, x = _net(3, 8, 10)
    net.hybridize()
    net(x)
    w = _param(net, 'weight', 0).data()
    ptr = w._data_ptr  # untracked from here on
    arr = (ctypes.c_float * w.size).from_address(ptr)
    arr[0] = 5.0  # a write we never see
    _close(net(x).asnumpy(), _reference(net, x))
