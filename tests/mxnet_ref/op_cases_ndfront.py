"""Op cases of helper ndfront for the MXNet conformance fixtures (see op_cases.py).

_sample_multinomial draws at random, so the cases use one-hot distributions: every draw is the
hot category whatever the generator gives, and MXNet's ids, log-probabilities (0) and the
gradient through them (ograd summed at the hot category) are exact."""
import numpy as np

from op_cases import C


def build_cases(seed=20261125):
    rng = np.random.default_rng(seed)

    def one_hot(*shape):
        k = shape[-1]
        hot = rng.integers(0, k, shape[:-1])
        return np.eye(k, dtype='float32')[hot]

    return [
        C('_sample_multinomial', [one_hot(4, 3)], {'shape': (2,), 'get_prob': True}),
        C('_sample_multinomial', [one_hot(2, 3, 5)], {'get_prob': True}),
        C('_sample_multinomial', [one_hot(5)], {'shape': (3,), 'get_prob': True,
                                                 'dtype': 'float32'}),
        C('_sample_multinomial', [one_hot(3, 4)], {'shape': (2, 2)}, grad=False),
    ]
