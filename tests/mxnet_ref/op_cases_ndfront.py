"""Op cases of helper ndfront for the MXNet conformance fixtures (see op_cases.py).

The samplers draw at random, so the cases use degenerate distributions whose draws do not
depend on the generator: one-hot rows for _sample_multinomial (MXNet's ids, log-probabilities
(0) and the gradient through them are exact), low == high for _sample_uniform and sigma == 0
for _sample_normal (every draw is the parameter)."""
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
    ] + [C(op, [p, p if op == '_sample_uniform' else np.zeros_like(p)], attrs, grad=False)
         for op in ('_sample_uniform', '_sample_normal')
         for p, attrs in [(rng.uniform(-3, 3, (2, 3)).astype('float32'), {'shape': (2,)}),
                          (rng.uniform(-3, 3, (4,)).astype('float64'), {}),
                          (rng.uniform(-3, 3, (3,)).astype('float32'),
                           {'shape': (2, 2), 'dtype': 'float64'})]]
