"""nd.contrib / nd.linalg / sym.contrib / sym.linalg / mx.contrib: registry ops named
`_contrib_X` / `_linalg_X` appear as X there, generated from the registry."""
import numpy as np

import hybridgluon as mx


def _prefixed(prefix):
    out = {}
    for name in mx._core.list_ops():
        for n in [name] + mx._core.op_info(name)['aliases']:
            if n.startswith(prefix):
                out[n[len(prefix):]] = name
    return out


def test_every_prefixed_op_is_in_its_namespace():
    for prefix, nd_ns, sym_ns in (('_contrib_', mx.nd.contrib, mx.sym.contrib),
                                  ('_linalg_', mx.nd.linalg, mx.sym.linalg)):
        for short, name in _prefixed(prefix).items():
            if short in mx.nd._contrib_adamw.__all__:  # MXNet's Python front ends of the op
                continue
            assert getattr(nd_ns, short).name == name
            assert callable(getattr(sym_ns, short))
    assert mx.contrib.nd is mx.nd.contrib and mx.contrib.symbol is mx.sym.contrib


def test_contrib_op_runs_and_builds_a_symbol():
    # _contrib_ctc_loss is an alias of CTCLoss: both spellings give the same values
    data = mx.nd.array(np.random.RandomState(0).rand(4, 2, 5))
    label = mx.nd.array([[1, 2], [3, 0]])
    np.testing.assert_allclose(mx.nd.contrib.ctc_loss(data, label).asnumpy(),
                               mx.nd.CTCLoss(data, label).asnumpy())
    s = mx.sym.contrib.ctc_loss(mx.sym.var('d'), mx.sym.var('l'))
    assert s.list_arguments() == ['d', 'l']
    assert '"op": "CTCLoss"' in s.tojson()


def test_unknown_name_is_an_attribute_error():
    try:
        mx.nd.contrib.no_such_op
    except AttributeError:
        pass
    else:
        raise AssertionError('nd.contrib.no_such_op did not raise')
