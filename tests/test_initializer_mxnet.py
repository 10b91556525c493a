"""mx.init against real MXNet 1.9.1 (fixtures: tests/mxnet_ref/initializers.npz, written by
tests/mxnet_ref/gen_gluon_ref.py under MXNet).

Random streams cannot match across frameworks, so random initializers are compared by their
distribution on large arrays of several shapes (which is where fan-in / fan-out enter): the
bound or standard deviation follows from MXNet's formulas (checked against MXNet's own arrays);
a uniform one must stay inside the bound and reach it (min/max within 1.5%), every one must
have the standard deviation within 4 standard errors and a mean near 0; Orthogonal must
give MXNet's singular values (all equal to `scale`). Deterministic initializers (Zero, One,
Constant, Bilinear, LSTMBias, Mixed, Load, an InitDesc's __init__ attribute, the defaults for
bias/gamma/beta/... names through InitDesc and through plain strings) must give MXNet's arrays
exactly, the cases MXNet rejects must raise here too, and dumps() must give the same JSON."""
import json
import os

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import initializer as I

# The legacy string path is exercised on purpose: its deprecation warning is expected.
pytestmark = pytest.mark.filterwarnings(
    'ignore:Calling initializer with init\\(str:DeprecationWarning')

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'mxnet_ref', 'initializers.npz')
_Z = np.load(FIX, allow_pickle=False)
META = json.loads(_Z['meta'].tobytes().decode('utf-8'))


def _init(expr, name, shape, desc=True):
    init = eval(expr, {'I': I})  # noqa: S307 - the fixture's constant expressions
    arr = mx.nd.zeros(tuple(shape))
    init(I.InitDesc(name) if desc else name, arr)
    return arr.asnumpy()


class _Expected:
    """The distribution an initializer expression promises for a shape, from MXNet 1.9.1's
    documented formulas: ('uniform', bound) or ('gaussian', std). Xavier's fans count the
    trailing kernel dims: fan_in = shape[1] * prod(shape[2:]), fan_out = shape[0] * ..."""

    def __init__(self, shape):
        self.shape = shape

    def Uniform(self, scale=0.07):
        return 'uniform', scale

    def Normal(self, sigma=0.01):
        return 'gaussian', sigma

    def Xavier(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        hw = int(np.prod(self.shape[2:]))
        fan_in, fan_out = self.shape[1] * hw, self.shape[0] * hw
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}[factor_type]
        return rnd_type, np.sqrt(magnitude / factor)

    def MSRAPrelu(self, factor_type='avg', slope=0.25):
        return self.Xavier('gaussian', factor_type, 2.0 / (1 + slope ** 2))


def _std_tol(n):
    """Relative tolerance of a sample standard deviation over n values: 4 standard errors
    (about 1 / sqrt(2 n) for a gaussian, less for a uniform) plus 0.5%."""
    return 4 / np.sqrt(2 * n) + 0.005


def _check_distribution(a, kind, scale, who):
    if kind == 'uniform':
        assert a.min() >= -scale * (1 + 1e-6) and a.max() <= scale * (1 + 1e-6), who
        assert a.min() < -scale * 0.985 and a.max() > scale * 0.985, who
        std = scale / np.sqrt(3)
    else:
        assert np.abs(a).max() < 7 * scale, who
        std = scale
    assert abs(a.std() / std - 1) < _std_tol(a.size), \
        '%s: std %.6g, expected %.6g' % (who, a.std(), std)
    assert abs(a.mean()) < 5 * std / np.sqrt(a.size), who


@pytest.mark.parametrize('case', META['random'], ids=lambda c: '%s%s' % (c[0], tuple(c[1])))
def test_random_initializer_distribution(case):
    expr, shape, stats, error = case
    if error is not None:
        with pytest.raises((ValueError, mx.MXNetError)):
            _init(expr, 'w_weight', shape)
        return
    kind, scale = eval(expr, {'I': _Expected(shape)})  # noqa: S307
    lo, hi, mean, std = stats
    # MXNet's own array has the promised distribution (checks the formulas above) ...
    size = int(np.prod(shape))
    want = scale / np.sqrt(3) if kind == 'uniform' else scale
    assert abs(std / want - 1) < _std_tol(size) and abs(mean) < 5 * want / np.sqrt(size)
    if kind == 'uniform':
        assert -scale * (1 + 1e-6) <= lo < -0.985 * scale
        assert 0.985 * scale < hi <= scale * (1 + 1e-6)
    # ... and so does ours.
    a = _init(expr, 'w_weight', shape).astype(np.float64)
    _check_distribution(a, kind, scale, expr)


@pytest.mark.parametrize('case', META['ortho'], ids=lambda c: '%s%s' % (c[0], tuple(c[1])))
def test_orthogonal_singular_values(case):
    expr, shape, (smin, smax) = case
    a = _init(expr, 'w_weight', shape).astype(np.float64).reshape(shape[0], -1)
    s = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose([s.min(), s.max()], [smin, smax], rtol=1e-5)


@pytest.mark.parametrize('k', range(len(META['deterministic'])),
                         ids=lambda k: '%s-%s' % tuple(META['deterministic'][k][:2]))
def test_deterministic_initializer(k):
    expr, name, shape = META['deterministic'][k]
    np.testing.assert_allclose(_init(expr, name, shape), _Z['d%d' % k], rtol=1e-6)


# Where hybridgluon is more permissive than MXNet 1.9.1 (docs/compat.md): Gluon BatchNorm's
# statistic names get their natural defaults instead of MXNet's "Unknown initialization
# pattern" error (MXNet's own BatchNorm always passes explicit initializers for them).
PERMISSIVE = {'bn_running_mean': 0.0, 'bn_running_var': 1.0}


@pytest.mark.parametrize('k', range(len(META['defaults'])),
                         ids=lambda k: '%s-%s' % tuple(META['defaults'][k][:2]))
def test_default_patterns(k):
    name, kind, error = META['defaults'][k]
    got = None
    if error is not None and name not in PERMISSIVE:
        with pytest.raises((ValueError, mx.MXNetError)):
            _init('I.Uniform(3.0)', name, (2, 1, 4, 4), desc=kind == 'desc')
        return
    got = _init('I.Uniform(3.0)', name, (2, 1, 4, 4), desc=kind == 'desc')
    if error is not None:
        np.testing.assert_array_equal(got, np.full(got.shape, PERMISSIVE[name], np.float32))
        return
    i = [d[0] for d in META['defaults']].index(name) // 2
    want = _Z['n%d%s' % (i, kind)]
    if name.endswith('weight') and kind == 'desc':
        # through an InitDesc any *weight is the initializer's own (random) draw; only the
        # legacy string path gives upsampling weights the bilinear kernel
        assert np.abs(got).max() <= 3.0 and got.std() > 1.0 and np.abs(want).max() <= 3.0
        return
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_mixed_load_and_init_attribute():
    mixed = I.Mixed(['bias', '.*'], [I.Constant(1.5), I.Constant(-0.5)])
    for k, name in enumerate(['fc_bias', 'fc_weight']):
        a = mx.nd.zeros((3,))
        mixed(name, a)
        np.testing.assert_array_equal(a.asnumpy(), _Z['mixed%d' % k])
    src = {'arg:fc_weight': mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3)),
           'aux:bn_moving_var': mx.nd.array([2.0, 3.0])}
    load = I.Load(src, default_init=I.Constant(7.0))
    for k, (name, shape) in enumerate([('fc_weight', (2, 3)), ('bn_moving_var', (2,)),
                                       ('other_weight', (2, 2))]):
        a = mx.nd.zeros(shape)
        load(name, a)
        np.testing.assert_array_equal(a.asnumpy(), _Z['load%d' % k])
    a = mx.nd.zeros((2, 3))
    I.Uniform()(I.InitDesc('fc_weight', attrs={'__init__': I.Constant(4.0).dumps()}), a)
    np.testing.assert_array_equal(a.asnumpy(), _Z['attr_init'])


@pytest.mark.parametrize('case', META['errors'], ids=lambda c: '%s-%s' % (c[0], c[1]))
def test_rejected_like_mxnet(case):
    expr, name, shape, error = case
    if error is None:
        _init(expr, name, shape)
    else:
        with pytest.raises((ValueError, mx.MXNetError)):
            _init(expr, name, shape)


@pytest.mark.parametrize('expr', sorted(META['dumps']))
def test_dumps(expr):
    ours = eval(expr, {'I': I}).dumps()  # noqa: S307
    assert json.loads(ours) == json.loads(META['dumps'][expr])
    assert I.create(ours).dumps() == ours


def test_fixture_covers_every_initializer():
    covered = {e.split('(')[0][2:] for e in
               [c[0] for c in META['random'] + META['ortho'] + META['deterministic']]}
    classes = {n for n in I.__all__ if isinstance(getattr(I, n), type) and
               issubclass(getattr(I, n), I.Initializer) and n != 'Initializer'}
    assert classes - covered == set()
