"""Op cases of helper infer's op, _identity_with_attr_like_rhs (csrc/ops/infer_util.c), for the
conformance fixtures, drawn from a generator of their own so the other cases' inputs stay as
they were."""
import numpy as np

from op_cases import C


def build_infer_cases(seed=20261126):
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in [((3, 4), 'float32'), ((2, 3, 2), 'float64'), ((1,), 'float32'),
                         ((5,), 'int32')]:
        lhs = rng.uniform(-3, 3, shape).astype(dtype)
        rhs = rng.uniform(-3, 3, shape).astype(dtype)
        out.append(C('_identity_with_attr_like_rhs', [lhs, rhs]))
    return out
