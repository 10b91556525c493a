"""The kernels' thread pool under many back-to-back jobs, and an op whose libm call must be
thread-safe: regressions for two races ThreadSanitizer found (CI runs the threading tests, this
file among them, against a TSan build). Without TSan they check results only."""
import math

import numpy as np

from hybridgluon import nd


def test_back_to_back_jobs(threads):
    """Each op is one pool job a little over twice the element-wise split size, posted back to
    back: a worker that wakes late for one job can meet the caller already closing it to post
    the next, and must wait for that one rather than join the closed one (it did, and read the
    job's fields while the caller rewrote them). This makes the window frequent, not certain:
    TSan caught the race once in a whole-suite run, not in this test."""
    x = nd.ones((3 * 32768,))
    for _ in range(1500):
        x = x * 1.0
    assert x.sum().asscalar() == 3 * 32768


def test_gammaln_runs_on_the_pool(threads):
    """gammaln used lgammaf/lgamma, which write the global signgam from every pool thread."""
    v = np.linspace(0.05, 30.0, 3 * 32768)
    for dtype, rtol in (('float32', 1e-5), ('float64', 1e-12)):
        got = nd.gammaln(nd.array(v, dtype=dtype)).asnumpy()
        want = np.array([math.lgamma(float(t)) for t in v.astype(dtype)])
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
