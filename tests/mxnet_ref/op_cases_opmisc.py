"""Conformance cases of helper opmisc's ops (AdamW's mixed-precision and multi-weight forms),
with their own seeded generators so that the other fixtures do not move: build_opmisc_cases is
appended to op_cases.build_cases; build_multi_cases is run by gen_fixtures_opmisc.py. Needs
NumPy only."""
import numpy as np

from op_cases import C

F32, F16 = 'float32', 'float16'


def build_opmisc_cases(seed=20261126):
    rng = np.random.default_rng(seed)

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def pos(*shape):
        return rng.uniform(0.1, 1.0, shape).astype(F32)

    cases = []
    add = cases.append
    common = dict(beta1=0.8, beta2=0.99, epsilon=1e-6, clip_gradient=0.6)
    # mp_adamw: float16 weight and gradient, float32 states and master copy
    w32 = n(3, 4)
    add(C('_mp_adamw_update', [w32.astype(F16), n(3, 4, dtype=F16), n(3, 4), pos(3, 4), w32,
                               np.array([0.5], F32)],
          dict(common, lr=0.1, wd=0.02, eta=0.7), grad=False, mutates=[2, 3, 4]))
    return cases


def build_multi_cases(seed=20261127):
    """The multi-weight AdamW cases: MXNet 1.9.1 runs these ops only with `out` given (without
    it their shape inference fails), so gen_fixtures_opmisc.py makes their fixtures, not
    build_cases."""
    rng = np.random.default_rng(seed)

    def n(*shape, dtype=F32):
        return rng.standard_normal(shape).astype(dtype)

    def pos(*shape):
        return rng.uniform(0.1, 1.0, shape).astype(F32)

    cases = []
    add = cases.append
    common = dict(beta1=0.8, beta2=0.99, epsilon=1e-6, clip_gradient=0.6)
    # multi_adamw: three weights, per-weight lrs / wds / etas
    shapes = [(2, 3), (5,), (1, 2, 2)]
    ins = []
    for sh in shapes:
        ins += [n(*sh), n(*sh), n(*sh), pos(*sh)]
    add(C('_multi_adamw_update', ins + [np.array([2.0], F32)],
          dict(common, lrs=(0.1, 0.25, 0.05), wds=(0.0, 0.01, 0.1), etas=(1.0, 0.5, 0.75),
               num_weights=3),
          grad=False, mutates=[2, 3, 6, 7, 10, 11]))
    ins = []
    for sh in shapes[:2]:
        w = n(*sh)
        ins += [w.astype(F16), n(*sh, dtype=F16), n(*sh), pos(*sh), w]
    add(C('_multi_mp_adamw_update', ins + [np.array([0.5], F32)],
          dict(common, lrs=(0.2, 0.1), wds=(0.01, 0.0), etas=(0.9, 1.0), num_weights=2),
          grad=False, mutates=[2, 3, 4, 7, 8, 9]))
    return cases
