"""mx.lr_scheduler against closed forms of MXNet 1.9.1's schedules, warm-up modes included,
the schedulers' argument checks, and a schedule driving an optimizer's learning rate."""
import math

import numpy as np
import pytest

import hybridgluon as mx

lrs = mx.lr_scheduler


def _warmup(n, begin, final, steps, mode):
    return begin + (final - begin) * n / steps if mode == 'linear' else begin


@pytest.mark.parametrize('mode', ['linear', 'constant'])
def test_factor_scheduler(mode):
    s = lrs.FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.01, base_lr=1.0,
                            warmup_steps=4, warmup_begin_lr=0.2, warmup_mode=mode)
    for n in range(0, 30):
        if n < 4:
            want = _warmup(n, 0.2, 1.0, 4, mode)
        else:
            want = max(0.01, 0.5 ** max(0, (n - 1) // 3))
        assert s(n) == pytest.approx(want), n


def test_factor_scheduler_jumps_and_stays():
    s = lrs.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert s(1) == 1.0 and s(10) == 1.0
    assert s(35) == pytest.approx(1e-3)  # several steps in one call
    assert s(36) == pytest.approx(1e-3) and s.count == 30


@pytest.mark.parametrize('mode', ['linear', 'constant'])
def test_multifactor_scheduler(mode):
    steps = [5, 8, 12]
    s = lrs.MultiFactorScheduler(step=steps, factor=0.1, base_lr=2.0, warmup_steps=3,
                                 warmup_begin_lr=0.5, warmup_mode=mode)
    for n in range(0, 20):
        if n < 3:
            want = _warmup(n, 0.5, 2.0, 3, mode)
        else:
            want = 2.0 * 0.1 ** sum(n > k for k in steps)
        assert s(n) == pytest.approx(want), n
    assert s.cur_step_ind == 3 and s.count == 12


@pytest.mark.parametrize('pwr', [1, 2, 0.5])
@pytest.mark.parametrize('warmup', [0, 5])
def test_poly_scheduler(pwr, warmup):
    s = lrs.PolyScheduler(max_update=20, base_lr=0.4, pwr=pwr, final_lr=0.01,
                          warmup_steps=warmup, warmup_begin_lr=0.1)
    for n in range(0, 30):
        if n < warmup:
            want = _warmup(n, 0.1, 0.4, warmup, 'linear')
        else:
            k = min(n, 20)
            want = 0.01 + 0.39 * (1 - (k - warmup) / (20 - warmup)) ** pwr
        assert s(n) == pytest.approx(want), n


@pytest.mark.parametrize('warmup', [0, 4])
def test_cosine_scheduler(warmup):
    s = lrs.CosineScheduler(max_update=16, base_lr=0.3, final_lr=0.02, warmup_steps=warmup,
                            warmup_begin_lr=0.0, warmup_mode='linear')
    for n in range(0, 25):
        if n < warmup:
            want = 0.3 * n / warmup
        else:
            k = min(n, 16)
            want = 0.02 + 0.28 * (1 + math.cos(math.pi * (k - warmup) / (16 - warmup))) / 2
        assert s(n) == pytest.approx(want), n


def test_scheduler_argument_checks():
    with pytest.raises(ValueError, match='Base lr has to be higher than warmup_begin_lr'):
        lrs.FactorScheduler(step=1, base_lr=0.1, warmup_begin_lr=0.2)
    with pytest.raises(ValueError, match='Warmup steps has to be positive or 0'):
        lrs.FactorScheduler(step=1, warmup_steps=-1)
    with pytest.raises(ValueError, match='Supports only linear and constant modes of warmup'):
        lrs.FactorScheduler(step=1, warmup_mode='cosine')
    with pytest.raises(ValueError, match='Schedule step must be greater or equal than 1 round'):
        lrs.FactorScheduler(step=0)
    with pytest.raises(ValueError, match='Factor must be no more than 1 to make lr reduce'):
        lrs.FactorScheduler(step=2, factor=1.5)
    with pytest.raises(ValueError, match='Schedule step must be an increasing integer list'):
        lrs.MultiFactorScheduler(step=[3, 3])
    with pytest.raises(ValueError, match='Schedule step must be greater or equal than 1 round'):
        lrs.MultiFactorScheduler(step=[0, 3])
    with pytest.raises(AssertionError):
        lrs.MultiFactorScheduler(step=3)
    with pytest.raises(ValueError, match='maximum number of updates must be strictly positive'):
        lrs.PolyScheduler(max_update=0)
    with pytest.raises(ValueError, match='maximum number of updates must be strictly positive'):
        lrs.CosineScheduler(max_update=0)
    with pytest.raises(NotImplementedError, match='must override this'):
        lrs.LRScheduler()(1)


def test_poly_and_cosine_keep_their_constructed_base_lr():
    """As in MXNet 1.9.1, an optimizer's learning_rate sets base_lr but Poly/Cosine decay from
    the base_lr they were built with (base_lr_orig)."""
    s = lrs.PolyScheduler(max_update=10, base_lr=1.0, pwr=1)
    optim = mx.optimizer.SGD(learning_rate=0.5, lr_scheduler=s)
    optim.num_update = 5
    assert optim.learning_rate == pytest.approx(0.5)  # from base_lr_orig = 1.0
    assert s.base_lr == pytest.approx(0.5)


def test_schedule_drives_sgd_steps():
    s = lrs.MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=1.0)
    optim = mx.optimizer.SGD(learning_rate=1.0, lr_scheduler=s)
    updater = mx.optimizer.get_updater(optim)
    w = mx.nd.zeros((1,))
    for _ in range(6):
        updater(0, mx.nd.ones((1,)), w)
    # lrs at counts 1..6: 1, 1, 0.5, 0.5, 0.25, 0.25
    np.testing.assert_allclose(w.asnumpy(), [-3.5])
