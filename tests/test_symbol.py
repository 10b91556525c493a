"""Symbols: construction from the registry, MXNet naming, graph queries, and MXNet JSON in and
out (layout byte for byte, older keys, and malformed input raising MXNetError)."""
import json
import random

import pytest

import hybridgluon as mx

sym = mx.sym

# The spec's example: Dense(4, activation='relu') in a HybridSequential, written by MXNet 1.9.1.
EXPECTED = '''{
  "nodes": [
    {
      "op": "null", 
      "name": "data", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "hybridsequential0_dense0_weight", 
      "attrs": {
        "__dtype__": "0", 
        "__lr_mult__": "1.0", 
        "__shape__": "(4, 0)", 
        "__storage_type__": "0", 
        "__wd_mult__": "1.0"
      }, 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "hybridsequential0_dense0_bias", 
      "attrs": {
        "__dtype__": "0", 
        "__init__": "zeros", 
        "__lr_mult__": "1.0", 
        "__shape__": "(4,)", 
        "__storage_type__": "0", 
        "__wd_mult__": "1.0"
      }, 
      "inputs": []
    }, 
    {
      "op": "FullyConnected", 
      "name": "hybridsequential0_dense0_fwd", 
      "attrs": {
        "flatten": "True", 
        "no_bias": "False", 
        "num_hidden": "4"
      }, 
      "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    }, 
    {
      "op": "Activation", 
      "name": "hybridsequential0_dense0_relu_fwd", 
      "attrs": {"act_type": "relu"}, 
      "inputs": [[3, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1, 2], 
  "node_row_ptr": [0, 1, 2, 3, 4, 5], 
  "heads": [[4, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
}'''


def _dense_relu():
    data = sym.var('data')
    w = sym.var('hybridsequential0_dense0_weight', shape=(4, 0), dtype='float32', lr_mult=1.0,
                wd_mult=1.0, stype='default')
    b = sym.var('hybridsequential0_dense0_bias', shape=(4,), dtype='float32', lr_mult=1.0,
                wd_mult=1.0, init='zeros', stype='default')
    fc = sym.FullyConnected(data, w, b, num_hidden=4, no_bias=False, flatten=True,
                            name='hybridsequential0_dense0_fwd')
    return sym.Activation(fc, act_type='relu', name='hybridsequential0_dense0_relu_fwd')


def test_json_matches_mxnet_byte_for_byte():
    out = _dense_relu()
    assert out.tojson() == EXPECTED
    again = sym.load_json(EXPECTED)
    assert again.tojson() == EXPECTED


def test_save_load_file(tmp_path):
    out = _dense_relu()
    f = tmp_path / 'net-symbol.json'
    out.save(str(f))
    assert f.read_text() == EXPECTED
    assert sym.load(str(f)).tojson() == EXPECTED
    assert not list(tmp_path.glob('*.tmp.*'))


def test_queries():
    out = _dense_relu()
    assert out.list_arguments() == ['data', 'hybridsequential0_dense0_weight',
                                    'hybridsequential0_dense0_bias']
    assert out.list_outputs() == ['hybridsequential0_dense0_relu_fwd_output']
    assert out.list_auxiliary_states() == []
    assert out.list_inputs() == out.list_arguments()
    assert out.name == 'hybridsequential0_dense0_relu_fwd'
    internals = out.get_internals()
    assert internals.list_outputs() == [
        'data', 'hybridsequential0_dense0_weight', 'hybridsequential0_dense0_bias',
        'hybridsequential0_dense0_fwd_output', 'hybridsequential0_dense0_relu_fwd_output']
    fc = internals['hybridsequential0_dense0_fwd_output']
    assert fc.name == 'hybridsequential0_dense0_fwd'
    assert fc.attr('num_hidden') == '4'
    assert fc.list_attr() == {'flatten': 'True', 'no_bias': 'False', 'num_hidden': '4'}
    assert [c.name for c in fc.get_children()] == fc.list_arguments()
    assert sym.var('x').get_children() is None
    assert repr(out) == '<Symbol hybridsequential0_dense0_relu_fwd>'
    assert out.attr_dict()['hybridsequential0_dense0_bias']['__init__'] == 'zeros'


def test_missing_inputs_become_named_variables():
    x = sym.var('data')
    fc = sym.FullyConnected(data=x, num_hidden=10, name='fc1')
    assert fc.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']
    nb = sym.FullyConnected(data=x, num_hidden=3, no_bias=True, name='fc2')
    assert nb.list_arguments() == ['data', 'fc2_weight']
    # MXNet copies the op node's attributes onto the auto-created variables.
    assert fc.get_internals()['fc1_weight'].attr('num_hidden') == '10'


def test_default_names_and_operators():
    with sym.NameManager():
        x, y = sym.var('x'), sym.var('y')
        assert (x + y).name == '_plus0'
        assert (x * 2).name == '_mulscalar0'
        assert (x * 2).attr('scalar') == '2'
        assert (-x).attr('scalar') == '-1.0'
        assert sym.relu(x).name == 'relu0'
        assert sym.relu(x).name == 'relu1'
        assert sym.split(x, num_outputs=2)[0].name == 'split0'
        assert sym.FullyConnected(x, num_hidden=2).name == 'fullyconnected0'
    with sym.Prefix('net_'):
        assert sym.relu(sym.var('z')).name == 'net_relu0'
    # As MXNet's Symbol, `+` of two symbols is the same-shape op (_Plus), not broadcast_add.
    assert json.loads((x + y).tojson())['nodes'][-1]['op'] == 'elemwise_add'


def test_multi_output_and_groups():
    x = sym.var('x')
    s = sym.SliceChannel(x, num_outputs=3, name='sc')
    assert len(s) == 3
    assert s.list_outputs() == ['sc_output0', 'sc_output1', 'sc_output2']
    assert s[1].list_outputs() == ['sc_output1']
    assert s['sc_output2'].list_outputs() == ['sc_output2']
    assert [o.list_outputs()[0] for o in s] == s.list_outputs()
    g = sym.Group([s[0], sym.relu(x, name='r')])
    assert g.list_outputs() == ['sc_output0', 'r_output']
    assert g.name is None and repr(g) == '<Symbol group [sc, r]>'
    assert sym.load_json(g.tojson()).list_outputs() == g.list_outputs()
    with pytest.raises(mx.MXNetError, match='select one'):
        sym.relu(s)


def test_symbol_misuse_errors():
    x = sym.var('x')
    with pytest.raises(mx.base.NotImplementedForSymbol, match=r'bool\(\).*test_symbol.py:\d+'):
        bool(x)
    with pytest.raises(mx.base.NotImplementedForSymbol, match=r'asnumpy\(\).*test_symbol.py'):
        x.asnumpy()
    with pytest.raises(mx.base.NotImplementedForSymbol, match=r'\.shape'):
        x.shape
    assert not hasattr(x, 'shape')  # also an AttributeError
    with pytest.raises(mx.base.NotImplementedForSymbol, match='In-place \\+='):
        x += 1
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'bogus'"):
        sym.relu(x, bogus=1)
    with pytest.raises(mx.MXNetError, match='num_hidden'):
        sym.FullyConnected(x)
    with pytest.raises(ValueError, match='double underscores'):
        sym.var('v', foo=1)
    # An NDArray op function called with a Symbol builds a node (F.relu while tracing).
    assert isinstance(mx.nd.relu(x), sym.Symbol)


def test_older_json_keys_load():
    doc = json.loads(EXPECTED)
    for node in doc['nodes']:
        if 'attrs' in node:
            node['attr'] = node.pop('attrs')
        node['inputs'] = [e[:2] for e in node['inputs']]   # 2-element entries
        node['backward_source_id'] = -1
    del doc['node_row_ptr'], doc['attrs']
    loaded = sym.load_json(json.dumps(doc))
    assert loaded.tojson() == EXPECTED


@pytest.mark.parametrize('mutate, message', [
    (lambda d: d.__setitem__('extra', 1), "unknown field 'extra'"),
    (lambda d: d['nodes'][3].__setitem__('op', 'NoSuchOp'), 'Failed loading Op'),
    (lambda d: d['nodes'][3].__setitem__('inputs', [[9, 0, 0]]), 'earlier node'),
    (lambda d: d['nodes'][3].__setitem__('inputs', [[0, 0, 0]]), 'expects 3 input'),
    (lambda d: d['nodes'][3]['attrs'].__setitem__('num_hidden', '4.5'), 'num_hidden'),
    (lambda d: d['nodes'][3]['attrs'].__setitem__('kernel', '3'), "Cannot find argument"),
    (lambda d: d.__setitem__('heads', [[7, 0, 0]]), 'input entry'),
    (lambda d: d.__setitem__('arg_nodes', [3]), 'variable'),
    (lambda d: d.pop('nodes'), "needs arrays"),
    (lambda d: d['nodes'][0].__setitem__('inputs', [[0, 0]]), 'variable has no inputs'),
])
def test_malformed_json_is_a_clean_error(mutate, message):
    doc = json.loads(EXPECTED)
    mutate(doc)
    with pytest.raises(mx.MXNetError, match=message):
        sym.load_json(json.dumps(doc))


def test_truncated_and_corrupted_json_only_raise():
    for cut in range(len(EXPECTED)):
        text = EXPECTED[:cut]
        with pytest.raises(mx.MXNetError):
            sym.load_json(text)
    rnd = random.Random(0)
    for _ in range(500):
        chars = list(EXPECTED)
        for _ in range(rnd.randint(1, 4)):
            chars[rnd.randrange(len(chars))] = rnd.choice('{}[],:"0123456789ax \n')
        try:
            sym.load_json(''.join(chars))
        except mx.MXNetError:
            pass
    with pytest.raises(mx.MXNetError, match='nesting too deep'):
        sym.load_json('[' * 10000)


def test_deep_graph_has_no_recursion_limits():
    x = sym.var('x')
    y = x
    for _ in range(20000):
        y = sym.relu(y)
    text = y.tojson()
    again = sym.load_json(text)
    assert len(again.get_internals().list_outputs()) == 20001
    del y, again  # freeing a 20000-deep chain must not overflow the C stack either


def test_load_missing_file_is_mxnet_error(tmp_path):
    with pytest.raises(mx.MXNetError, match='cannot read'):
        sym.load(str(tmp_path / 'nope.json'))


def test_gluon_block_traced_with_a_symbol_matches_mxnet_json():
    from hybridgluon.gluon import nn
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation='relu'))
        out = net(sym.var('data'))
    assert isinstance(out, sym.Symbol)
    assert out.tojson() == EXPECTED
    w = net[0].weight
    assert w.var() is w.var()   # one variable per parameter


def test_infer_shape_and_type():
    x = sym.var('data')
    y = sym.FullyConnected(x, num_hidden=6, name='fc')
    z = sym.relu(y) + 1
    arg, out, aux = z.infer_shape(data=(4, 3))
    assert arg == [(4, 3), (6, 3), (6,)] and out == [(4, 6)] and aux == []
    assert z.infer_shape((2, 5))[1] == [(2, 6)]
    with pytest.warns(UserWarning, match='Cannot decide shape'):
        assert z.infer_shape() == (None, None, None)
    arg, out, _ = z.infer_shape_partial()
    assert out == [()]  # MXNet: an undecided shape is ()
    import numpy as np
    arg, out, _ = z.infer_type(data='float64')
    assert arg[0] is np.float64 and out == [np.float64]
    with pytest.raises(mx.MXNetError, match=r'fc.*FullyConnected'):
        z.infer_shape(data=(4, 3), fc_weight=(6, 4))


def test_attr_scope_and_hidden_keys():
    with mx.AttrScope(group='4', ctx_group='dev1'):
        a = sym.var('a', attr={'group': '1'}, lr_mult=2)
        b = sym.var('b')
        with pytest.raises(mx.MXNetError, match="argument 'group'"):  # as MXNet: an op param
            sym.relu(a)
    with mx.AttrScope(ctx_group='dev1'):
        with mx.AttrScope(__mood__='calm'):
            fc = sym.FullyConnected(a, num_hidden=3, name='fc', attr={'wd_mult': '0'})
    c = sym.var('c')
    assert a.attr('group') == '1' and b.attr('group') == '4' and c.attr('group') is None
    assert a.attr('lr_mult') == '2' and a.attr('__lr_mult__') == '2'
    assert b.attr('ctx_group') == 'dev1' and b.attr('__ctx_group__') == 'dev1'
    assert b.list_attr() == {'group': '4', '__ctx_group__': 'dev1', 'ctx_group': 'dev1'}
    attrs = fc.attr_dict()
    assert attrs['fc']['__mood__'] == 'calm' and attrs['fc']['__wd_mult__'] == '0'
    assert attrs['fc']['wd_mult'] == '0' and attrs['fc_weight']['__mood__'] == 'calm'
    assert attrs['fc']['ctx_group'] == 'dev1'
    assert 'lr_mult' in attrs['a'] and mx.attribute.AttrScope.current.get(None) == {}
    # kept through JSON and pickling
    again = sym.load_json(fc.tojson())
    assert again.attr_dict() == attrs
    with pytest.raises(ValueError, match='string'):
        mx.AttrScope(group=4)
    with pytest.raises(mx.MXNetError, match='deprecated'):
        sym.var('d', attr={'fc_lr_mult': '1'})


def test_name_manager_current_is_an_attribute():
    assert isinstance(mx.name.NameManager.current, mx.name.NameManager)
    with mx.name.Prefix('p_') as prefix:
        assert mx.name.NameManager.current is prefix
        assert sym.relu(sym.var('x')).name == 'p_relu0'
    assert mx.name.NameManager.current is not prefix


def test_infer_shape_mxnet_conventions():
    a = sym.var('a', shape=(2, 3))
    c = sym.relu(a) * 2
    arg, out, _ = c.infer_shape()
    assert arg == [(2, 3)] and out == [(2, 3)]
    assert c.infer_shape(a=(5, 6))[1] == [(5, 6)]           # a given shape wins
    b = sym.var('b')
    y = sym.FullyConnected(b, num_hidden=4, name='fc')
    arg, out, _ = y.infer_shape_partial()
    assert arg[:2] == [(), ()] and out == [()]               # unknown: ()
    arg, out, _ = y.infer_shape_partial(b=(0, 5))           # 0: an unknown dimension
    assert arg == [(0, 5), (4, 5), (4,)]
    with pytest.warns(UserWarning, match='Cannot decide'):
        assert y.infer_shape(b=(0, 5)) == (None, None, None)
    with pytest.raises(TypeError, match='shapes'):
        y.infer_shape(b=5)


def test_infer_type_mxnet_conventions():
    import numpy as np
    x = sym.var('x')
    y = sym.FullyConnected(x, num_hidden=4, name='fc')
    with pytest.warns(UserWarning, match='Cannot decide type'):
        assert y.infer_type() == (None, None, None)
    arg, out, aux = y.infer_type(x='float16')
    assert arg == [np.float16] * 3 and out == [np.float16] and aux == []
    assert y.infer_type_partial() == ([None, None, None], [None], [])
    v = sym.var('v', dtype='float64')
    assert (v * 2).infer_type()[1] == [np.float64]


def test_more_fluent_methods():
    import numpy as np
    x = sym.var('x')
    for name in ('degrees', 'radians', 'arcsinh', 'rcbrt', 'broadcast_axes', 'pad'):
        assert hasattr(x, name)
    out = x.degrees().eval(ctx=mx.cpu(), x=mx.nd.array([np.pi, 1.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), [180.0, np.degrees(1.0)], rtol=1e-6)
    out = x.radians().eval(ctx=mx.cpu(), x=mx.nd.array([180.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), [np.pi], rtol=1e-6)


def test_set_attr_in_place():
    x = sym.var('x')
    y = sym.relu(x, name='r')
    x._set_attr(mood='calm', lr_mult='3')
    assert x.attr('mood') == 'calm' and x.attr('__lr_mult__') == '3'
    # the node is shared: the symbol built on it sees the change, and so does its JSON
    assert y.attr_dict()['x'] == {'mood': 'calm', '__lr_mult__': '3', 'lr_mult': '3'}
    assert sym.load_json(y.tojson()).attr_dict()['x']['mood'] == 'calm'
    x._set_attr(mood='tense')
    assert x.attr('mood') == 'tense'
    y._set_attr(__note__='n')
    assert y.attr('__note__') == 'n'
    with pytest.raises(mx.MXNetError, match='only annotations'):
        y._set_attr(act_type='tanh')
    assert 'act_type' not in y.list_attr()
    with pytest.raises(ValueError, match='string'):
        x._set_attr(mood=1)
    with pytest.raises(mx.MXNetError, match='group'):
        sym.Group([x, y])._set_attr(__a__='1')


def test_internal_namespace_holds_underscore_ops():
    x = sym.var('x')
    assert sym._internal._plus_scalar is sym._plus_scalar
    out = sym._internal._mul_scalar(x, scalar=3).eval(ctx=mx.cpu(), x=mx.nd.array([1., 2.]))
    assert out[0].asnumpy().tolist() == [3., 6.]
    assert not hasattr(sym._internal, 'relu')
