"""Symbol composition: Symbol.__call__ replaces variables with symbols, and a SymbolBlock called
with Symbols (inside a hybridized parent) composes its graph into the parent's."""
import numpy as np

import hybridgluon as mx
from hybridgluon.gluon import nn


def test_symbol_call_replaces_arguments():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    y = mx.sym.exp(a) + b
    z = y(a=mx.sym.var('c') * 2)
    assert z.list_inputs() == ['c', 'b'] and y.list_inputs() == ['a', 'b']
    out = z.eval(c=mx.nd.array([0.5]), b=mx.nd.array([1.]))[0]
    np.testing.assert_allclose(out.asnumpy(), np.exp(1.) + 1, rtol=1e-6)
    w = y(mx.sym.var('p'), mx.sym.var('q'))  # positional, in list_arguments order
    assert w.list_inputs() == ['p', 'q']


def test_symbolblock_composes_into_a_hybridized_parent(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3, activation='relu'), nn.Dense(2, in_units=4))
    net.initialize()
    net.hybridize()
    x = mx.nd.random.normal(shape=(2, 3))
    ref = net(x).asnumpy()
    net.export(str(tmp_path / 'm'))
    sb = mx.gluon.SymbolBlock.imports(str(tmp_path / 'm-symbol.json'), ['data'],
                                      str(tmp_path / 'm-0000.params'))

    class Outer(nn.HybridBlock):
        def __init__(self, inner, **kw):
            super().__init__(**kw)
            self.inner = inner

        def hybrid_forward(self, F, x):
            return self.inner(x * 2) + 1

    outer = Outer(sb)
    imperative = outer(x / 2).asnumpy()
    outer.hybridize()
    np.testing.assert_allclose(outer(x / 2).asnumpy(), ref + 1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(imperative, ref + 1, rtol=1e-5, atol=1e-6)
    s = sb(mx.sym.var('data'))
    assert 'dense0_weight' in s.list_inputs()
