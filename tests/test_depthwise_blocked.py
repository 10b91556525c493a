"""The AVX-512 and AVX2 float32 3x3 depthwise forwards (csrc/kernels/cpu/dw3_tmpl.h, one body for
both sets): the channel-blocked one (dwb_range: at most 16x16 outputs, 16 or 8 channels per
vector) and the plane one (dw3_plane: loads straight from the image, masked at the edges, fused
multiply-adds). Both sets sum in the same order, so on an AVX-512 CPU HG_DW_AVX2 (the AVX2
kernels) must change no bit either. The blocked kernel sums in the plane
kernel's order, so HG_NO_DW_BLOCKED (which sends every layer to the plane kernel) must change
no bit: outputs, NaN, the sign of zero after the fused ReLU and clip, whatever the channel count
(partial blocks), padding, stride and batch. HG_NO_DW_DIRECT sends the planes to the portable
loops (a padded copy, separate multiplies and adds): the same values up to rounding. NumPy checks
the values (test_conv_kernels.py covers the same shapes against its reference, through whichever
path the CPU takes)."""
import numpy as np
import pytest

from conftest import child_result

_CHILD = r'''
import json, sys
import numpy as np
import hybridgluon as mx
from hybridgluon import _core
shape, s, p, path = json.loads(sys.argv[1])
N, C, H, W = shape
rng = np.random.default_rng(0)
x = rng.standard_normal(shape).astype('f4')
x[0, 0, 0, 0] = np.nan
x[:, -1] = 0.0  # the last channel: +0 times negative folded weights, a -0 shift: -0
w = rng.standard_normal((C, 1, 3, 3)).astype('f4')
w[-1] = np.abs(w[-1]) + 0.1
beta = (rng.standard_normal(C) * 0.3).astype('f4')
beta[-1] = -0.0
mean = (rng.standard_normal(C) * 0.3).astype('f4')
mean[-1] = 0.0
gamma = rng.uniform(0.5, 1.5, C).astype('f4')
gamma[-1] = -1.0
feed = {'x': x, 'w': w, 'gamma': gamma, 'beta': beta,
        'mean': mean, 'var': rng.uniform(0.5, 2, C).astype('f4')}
outs = []
# imperative (bias, no post) and a plan with a folded BatchNorm and the activation as post-op
b = rng.standard_normal(C).astype('f4')
y = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), kernel=(3, 3),
                      stride=(s, s), pad=(p, p), num_filter=C, num_group=C)
outs.append(y.asnumpy().ravel())
v = {n: mx.sym.var(n) for n in ('x', 'w', 'gamma', 'beta', 'mean', 'var')}
for act in ('none', 'relu', 'clip'):
    y = mx.sym.Convolution(v['x'], v['w'], kernel=(3, 3), stride=(s, s), pad=(p, p),
                           num_filter=C, num_group=C, no_bias=True)
    y = mx.sym.BatchNorm(y, v['gamma'], v['beta'], v['mean'], v['var'], fix_gamma=False)
    if act == 'relu':
        y = mx.sym.Activation(y, act_type='relu')
    elif act == 'clip':
        y = mx.sym.clip(y, -0.5, 0.25)
    y = mx.sym.Pooling(y, kernel=(1, 1), pool_type='max')  # a reader: the activation is no output
    names = y.list_inputs()
    co = _core.CachedOp(y, names)
    out = co(*[mx.nd.array(feed[n]) for n in names])[0].asnumpy()
    assert act == 'none' or 'applied by its fold' in co.stats()['plan'], co.stats()['plan']
    # the last channel is -0 before the activation where the fold scales the weights (the
    # output has at least as many elements); scaling the output makes it +0
    if act == 'none' and out[:, -1].size >= 9:
        assert (out[:, -1] == 0).all() and np.signbit(out[:, -1]).all()
    outs.append(out.ravel())
np.save(path, np.concatenate(outs))
'''

CASES = [
    ((1, 960, 7, 7), 1, 1),      # MobileNetV2's last stage
    ((2, 576, 14, 14), 2, 1),    # its 14x14 -> 7x7 layer, two images
    ((1, 384, 14, 14), 1, 1),
    ((1, 37, 14, 13), 1, 1),     # a partial block of 5 channels, odd width
    ((3, 20, 5, 9), 2, 2),
    ((1, 16, 1, 1), 1, 1),       # one pixel, all padding around it
    ((2, 7, 3, 3), 1, 0),        # fewer channels than a block, no padding
    ((1, 33, 16, 16), 1, 2),     # 18x18 outputs: past the limit, the plane kernel either way
    ((1, 18, 31, 31), 2, 1),     # 16x16 outputs from a 33x33 window: at the limits
]


@pytest.mark.parametrize('case', CASES, ids=[str(c) for c in CASES])
def test_blocked_equals_plane_kernel_bit_for_bit(tmp_path, case):
    """Imperative (with a bias), then planned with a folded BatchNorm and no activation, a
    fused ReLU, a fused clip."""
    args = list(case)
    on = child_result(tmp_path, _CHILD, args, 'on.npy', None, ['HG_NO_DW_BLOCKED'])
    off = child_result(tmp_path, _CHILD, args, 'off.npy', {'HG_NO_DW_BLOCKED': '1'})
    assert np.isnan(on).any()
    np.testing.assert_array_equal(on.view('u4'), off.view('u4'))


PLANES = [
    ((1, 4, 112, 112), 1, 1),    # MobileNetV2's first stages
    ((2, 3, 112, 112), 2, 1),
    ((1, 5, 56, 56), 2, 1),
    ((1, 3, 17, 33), 1, 2),      # a partial vector, pad 2
    ((1, 3, 40, 35), 2, 0),
    ((1, 2, 200, 190), 1, 1),    # past the portable kernel's padded-copy buffer
]


@pytest.mark.parametrize('case', PLANES, ids=[str(c) for c in PLANES])
def test_plane_kernel_matches_portable_loops(tmp_path, case):
    args = list(case)
    fast = child_result(tmp_path, _CHILD, args, 'fast.npy', None,
                        ['HG_NO_DW_BLOCKED', 'HG_NO_DW_DIRECT'])
    slow = child_result(tmp_path, _CHILD, args, 'slow.npy', {'HG_NO_DW_DIRECT': '1'},
                        ['HG_NO_DW_BLOCKED'])
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-5)


def _has_avx512():
    try:
        with open('/proc/cpuinfo') as f:
            return ' avx512f' in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _has_avx512(), reason='the CPU has no AVX-512: the AVX2 kernels run anyway')
@pytest.mark.parametrize('case', CASES[:5] + PLANES[:4],
                         ids=[str(c) for c in CASES[:5] + PLANES[:4]])
def test_avx2_kernels_equal_avx512_bit_for_bit(tmp_path, case):
    args = list(case)
    wide = child_result(tmp_path, _CHILD, args, 'avx512.npy', None,
                        ['HG_NO_DW_BLOCKED', 'HG_NO_DW_DIRECT', 'HG_DW_AVX2'])
    narrow = child_result(tmp_path, _CHILD, args, 'avx2.npy', {'HG_DW_AVX2': '1'},
                          ['HG_NO_DW_BLOCKED', 'HG_NO_DW_DIRECT'])
    np.testing.assert_array_equal(wide.view('u4'), narrow.view('u4'))
