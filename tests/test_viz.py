"""mx.viz: print_summary's table and plot_network's graph against what real MXNet 1.9.1 printed
and drew for the same networks (tests/mxnet_ref/viz.json, written by gen_viz_ref.py), parameter
counts against the parameters' inferred shapes, and the errors."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'mxnet_ref'))
import viz_cases  # noqa: E402

with open(os.path.join(HERE, 'mxnet_ref', 'viz.json')) as _f:
    REF = json.load(_f)


@pytest.fixture(scope='module')
def ours():
    pytest.importorskip('graphviz')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return viz_cases.run_cases(mx)


@pytest.mark.parametrize('case', sorted(REF))
def test_same_as_mxnet(ours, case):
    assert ours[case] == REF[case]


def test_aliases():
    assert mx.viz is mx.visualization
    assert mx.viz.print_summary is mx.visualization.print_summary


def _total(text):
    line = [t for t in text.splitlines() if t.startswith('Total params: ')]
    return int(line[0].split(': ')[1])


def test_summary_counts_match_parameter_shapes(capsys):
    # On a chain whose first layer reads the data variable (node 0, which MXNet's rule counts)
    # and whose FullyConnected layers read flat inputs, MXNet's count is the number of elements
    # of every weight, bias, gamma and beta: check it against the inferred argument shapes.
    data = mx.sym.Variable('data')
    conv = mx.sym.Convolution(data=data, name='conv', num_filter=6, kernel=(3, 3))
    bn = mx.sym.BatchNorm(conv, name='bn')
    act = mx.sym.Activation(bn, act_type='tanh', name='act')
    flat = mx.sym.Flatten(act, name='flat')
    fc = mx.sym.FullyConnected(data=flat, name='fc', num_hidden=7)
    net = mx.sym.FullyConnected(data=fc, name='fc2', num_hidden=3, no_bias=True)
    mx.viz.print_summary(net, {'data': (2, 5, 8, 8)})
    text = capsys.readouterr().out
    arg_shapes, _, _ = net.infer_shape(data=(2, 5, 8, 8))
    expect = sum(int(np.prod(s)) for n, s in zip(net.list_arguments(), arg_shapes)
                 if n != 'data')
    assert _total(text) == expect
    rows = {t.split('(')[0]: t.split() for t in text.splitlines() if '(' in t and ')' in t}
    assert rows['fc'][1] == '7' and rows['fc'][2] == str(216 * 7 + 7)
    assert rows['bn'][1] == '6x6x6' and rows['bn'][2] == '12'
    assert rows['flat'][1] == '216' and rows['flat'][3] == 'act'


def test_summary_multi_input_rows(capsys):
    a = mx.sym.Variable('a')
    x = mx.sym.Activation(a, act_type='relu', name='x')
    y = mx.sym.Activation(a, act_type='sigmoid', name='y')
    s = mx.sym.elemwise_add(x, y, name='s')
    mx.viz.print_summary(s, line_length=60)
    lines = capsys.readouterr().out.splitlines()
    row = [i for i, t in enumerate(lines) if t.startswith('s(elemwise_add)')][0]
    assert lines[row].rstrip().endswith('x')
    assert lines[row + 1].strip() == 'y'  # the second previous layer gets its own row
    assert all(len(t) == 60 for t in lines if t and t[0] in '_=')


def test_plot_repeated_names_warns_once():
    pytest.importorskip('graphviz')
    net = viz_cases._dup_net(mx)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        dot = mx.viz.plot_network(net, shape={'data': (4, 9)})
    assert len(w) == 1 and 'fc' in str(w[0].message)
    assert 'multiple variables with the same name' in str(w[0].message)
    # the second fc's input edge is labelled with relu1's real shape, not the first fc's
    assert 'fc -> relu1 [label=128' in dot.source


def test_plot_hide_weights_and_attrs():
    pytest.importorskip('graphviz')
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, name='fc', num_hidden=3)
    dot = mx.viz.plot_network(fc, title='t', save_format='png', node_attrs={'color': 'red'})
    assert dot.name == 't' and dot.format == 'png'
    assert 'fc_weight' not in dot.source and 'color=red' in dot.source
    shown = mx.viz.plot_network(fc, hide_weights=False)
    assert 'fc -> fc_weight' in shown.source
    assert '\tfc_weight [' not in shown.source  # drawn as a bare node, as in MXNet


def test_errors():
    with pytest.raises(TypeError, match='Symbol'):
        mx.viz.print_summary(mx.nd.ones((2,)))
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, name='fc', num_hidden=3)
    with pytest.raises(mx.MXNetError):
        mx.viz.print_summary(fc, {'nope': (2, 3)})
    pytest.importorskip('graphviz')
    with pytest.raises(TypeError, match='Symbol'):
        mx.viz.plot_network('not a symbol')


def test_missing_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, 'graphviz', None)  # makes `import graphviz` fail
    data = mx.sym.Variable('data')
    with pytest.raises(mx.MXNetError, match=r'graphviz.*hybridgluon\[viz\]') as err:
        mx.viz.plot_network(data)
    assert isinstance(err.value, ImportError)


def test_plot_renders_with_dot(tmp_path):
    # The source must be valid for Graphviz itself: render LeNet-like graph to SVG.
    pytest.importorskip('graphviz')
    import shutil
    if shutil.which('dot') is None:
        pytest.skip("Graphviz's dot program is not installed")
    data = mx.sym.Variable('data')
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=6, name='conv0')
    net = mx.sym.Activation(net, act_type='tanh', name='act0')
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool0')
    net = mx.sym.Flatten(net, name='flat')
    net = mx.sym.FullyConnected(net, num_hidden=10, name='fc')
    dot = mx.viz.plot_network(net, shape={'data': (1, 1, 28, 28)}, save_format='svg')
    out = dot.render(str(tmp_path / 'lenet'))
    svg = open(out).read()
    assert out.endswith('.svg') and '<svg' in svg
    for text in ('Convolution', '5x5/1, 6', 'max, 2x2/2x2', '6x24x24', 'FullyConnected'):
        assert text in svg
