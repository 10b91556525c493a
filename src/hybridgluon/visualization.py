"""Seeing a network (MXNet's `mx.viz` / `mx.visualization`): print_summary prints a table of
the layers of a Symbol, plot_network draws it as a graphviz.Digraph.

Both read the Symbol's MXNet JSON (`tojson()`), so they see exactly what MXNet's would: the
same node names, attributes and order, and the same output names from `get_internals()` for
the shapes. The table's parameter counts follow MXNet 1.9.1's rules, including what they leave
out (a layer's input counts only when it is an op or a head of the graph; see _heads), so a
summary printed here reads the same as one printed by MXNet.

graphviz (the Python package) is an optional dependency: `pip install "hybridgluon[viz]"`.
"""
import copy
import json
import re
import warnings

from .base import MXNetError, MXNetTypeError, MXNetValueError
from .symbol import Symbol

__all__ = ['print_summary', 'plot_network']

# MXNet's palette, by kind of node: inputs, conv/fc, activations, batchnorm, pooling,
# reshaping, softmax, anything else.
_COLORS = ('#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3', '#fdb462', '#b3de69',
           '#fccde5')
_WEIGHT_SUFFIXES = ('_weight', '_bias', '_beta', '_gamma', '_moving_var', '_moving_mean',
                    '_running_var', '_running_mean')


class _MissingPackage(MXNetError, ImportError):
    """An optional package is not installed (an ImportError too, as MXNet raises)."""


def _digits(text):
    """The integers in an attribute string such as '(3, 3)', as strings."""
    return re.findall(r'\d+', text)


def _check_symbol(symbol):
    if not isinstance(symbol, Symbol):
        raise MXNetTypeError('symbol must be a Symbol, got %s' % type(symbol).__name__)


def _heads(conf):
    # MXNet 1.9.1 takes the first head entry [node, output, version] as a set of node ids, so a
    # variable whose id is one of those three numbers (the data variable, id 0, nearly always)
    # counts as a "previous layer". Copied rule, not a new one: the tables must match.
    return set(conf['heads'][0]) if conf['heads'] else set()


def _internals_for_inference(symbol):
    """(output names of symbol's internals, internals of a copy whose variables have unique
    names). Inference binds inputs by name, so a graph with two variables of one name (two
    layers both called 'fc') is inferred on a copy where the later ones are renamed; the
    outputs stay in the same order, so the original names pair with the copy's results."""
    conf = json.loads(symbol.tojson())
    seen = set()
    renamed = False
    for i, node in enumerate(conf['nodes']):
        if node['op'] != 'null':
            continue
        if node['name'] in seen:
            node['name'] = '%s__viz_dup%d' % (node['name'], i)
            renamed = True
        seen.add(node['name'])
    names = symbol.get_internals().list_outputs()
    if not renamed:
        return names, symbol.get_internals()
    from .symbol import load_json
    return names, load_json(json.dumps(conf)).get_internals()


def _shape_dict(symbol, shape):
    names, internals = _internals_for_inference(symbol)
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise MXNetValueError('Input shape is incomplete: cannot infer every shape from %s'
                              % (shape,))
    return dict(zip(names, out_shapes))


def _output_key(node):
    """The name get_internals() gives a node's (last) output."""
    if node['op'] == 'null':
        return node['name']
    key = node['name'] + '_output'
    num_outputs = node.get('attrs', {}).get('num_outputs')
    return key if num_outputs is None else key + str(int(num_outputs) - 1)


def _layer_params(node, pre_filter, shape_dict):
    """MXNet's parameter count of one layer; `pre_filter` is the sum of the channels (first
    non-batch dimension) of the inputs it counted."""
    op, attrs = node['op'], node.get('attrs', {})
    if op == 'Convolution':
        count = pre_filter * int(attrs['num_filter']) // int(attrs.get('num_group', '1'))
        for k in _digits(attrs['kernel']):
            count *= int(k)
        if attrs.get('no_bias') != 'True':
            count += int(attrs['num_filter'])
        return count
    if op == 'FullyConnected':
        bias = 0 if attrs.get('no_bias') == 'True' else 1
        return (pre_filter + bias) * int(attrs['num_hidden'])
    if op == 'BatchNorm':
        key = node['name'] + '_output'
        return int(shape_dict[key][1]) * 2 if shape_dict is not None else 0
    if op == 'Embedding':
        return int(attrs['input_dim']) * int(attrs['output_dim'])
    return 0


def _print_row(fields, positions):
    line = ''
    for field, end in zip(fields, positions):
        line = (line + str(field))[:end]
        line += ' ' * (end - len(line))
    print(line)


def _previous_layers(node, nodes, heads, shape_dict):
    """(names of the inputs shown as previous layers, the sum of their channels)."""
    names, channels = [], 0
    for entry in node['inputs']:
        src = nodes[entry[0]]
        if src['op'] == 'null' and entry[0] not in heads:
            continue
        names.append(src['name'])
        if shape_dict is not None:
            key = src['name'] if src['op'] == 'null' else src['name'] + '_output'
            if key in shape_dict:
                channels += int(shape_dict[key][1:][0])
    return names, channels


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Prints a table of the layers of `symbol`: name (op), output shape (without the batch
    axis, when `shape` gives the input shapes), parameter count and previous layers, then the
    total, as MXNet's `mx.viz.print_summary`.

    positions: where each of the four columns ends, as fractions of `line_length` (when the
    last is <= 1) or in characters.
    """
    _check_symbol(symbol)
    shape_dict = _shape_dict(symbol, shape) if shape is not None else None
    conf = json.loads(symbol.tojson())
    nodes, heads = conf['nodes'], _heads(conf)
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print('_' * line_length)
    _print_row(['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer'], positions)
    print('=' * line_length)
    total = 0
    for i, node in enumerate(nodes):
        op = node['op']
        # Variables are not layers, except the first node and heads (MXNet's rule).
        if op == 'null' and i > 0:
            continue
        out_shape = []
        if shape_dict is not None and (op != 'null' or i in heads):
            key = node['name'] if op == 'null' else node['name'] + '_output'
            out_shape = shape_dict.get(key, [None])[1:]
        prev, channels = ([], 0) if op == 'null' else _previous_layers(node, nodes, heads,
                                                                       shape_dict)
        params = _layer_params(node, channels, shape_dict)
        total += params
        _print_row(['%s(%s)' % (node['name'], op), 'x'.join(str(d) for d in out_shape), params,
                    prev[0] if prev else ''], positions)
        for name in prev[1:]:
            _print_row(['', '', '', name], positions)
        print(('=' if i == len(nodes) - 1 else '_') * line_length)
    print('Total params: {params}'.format(params=total))
    print('_' * line_length)


def _node_style(node, base_attr):
    """(label, graphviz attributes) of an op node, as MXNet draws it."""
    op, name, attrs = node['op'], node['name'], node.get('attrs', {})
    attr = copy.deepcopy(base_attr)
    label = name
    if op == 'Convolution':
        label = 'Convolution\n%s/%s, %s' % (
            'x'.join(_digits(attrs['kernel'])),
            'x'.join(_digits(attrs['stride'])) if 'stride' in attrs else '1',
            attrs['num_filter'])
        attr['fillcolor'] = _COLORS[1]
    elif op == 'FullyConnected':
        label = 'FullyConnected\n%s' % attrs['num_hidden']
        attr['fillcolor'] = _COLORS[1]
    elif op == 'BatchNorm':
        attr['fillcolor'] = _COLORS[3]
    elif op in ('Activation', 'LeakyReLU'):
        default = 'Leaky' if op == 'LeakyReLU' else None
        label = '%s\n%s' % (op, attrs.get('act_type', default))
        attr['fillcolor'] = _COLORS[2]
    elif op == 'Pooling':
        label = 'Pooling\n%s, %s/%s' % (
            attrs.get('pool_type'),
            'x'.join(_digits(attrs['kernel'])) if 'kernel' in attrs else '[]',
            'x'.join(_digits(attrs['stride'])) if 'stride' in attrs else '1')
        attr['fillcolor'] = _COLORS[4]
    elif op in ('Concat', 'Flatten', 'Reshape'):
        attr['fillcolor'] = _COLORS[5]
    elif op == 'Softmax':
        attr['fillcolor'] = _COLORS[6]
    else:
        attr['fillcolor'] = _COLORS[7]
        if op == 'Custom':
            label = attrs['op_type']
    return label, attr


def _edge_label(src, shape_dict, type_dict):
    key = _output_key(src)
    label = ''
    if shape_dict is not None:
        label = 'x'.join(str(d) for d in shape_dict[key][1:])
    if type_dict is not None:
        label += '(' + type_dict[key].__name__ + ')'
    return label


def _warn_repeated_names(nodes):
    seen, repeated = set(), []
    for node in nodes:
        if node['name'] in seen and node['name'] not in repeated:
            repeated.append(node['name'])
        seen.add(node['name'])
    if repeated:
        warnings.warn('There are multiple variables with the same name in your graph, this may '
                      'result in cyclic graph. Repeated names: ' + ','.join(repeated),
                      RuntimeWarning)


def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None, node_attrs=None,
                 hide_weights=True):
    """A graphviz.Digraph of the graph that computes `symbol`, as MXNet's `mx.viz.plot_network`.

    shape / dtype: {input name: shape / NumPy type}; when given, each edge is labelled with the
    shape (without the batch axis) and/or the type of the tensor it carries.
    node_attrs: graphviz node attributes that override the defaults (a filled box).
    hide_weights: leave out variables named like parameters (*_weight, *_bias, *_gamma, ...);
    with False they are still not drawn as boxes, their edges point at bare nodes.
    Needs the graphviz Python package (`pip install "hybridgluon[viz]"`); rendering to a file
    (`.render()`, `.view()`) also needs Graphviz's `dot` program.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise _MissingPackage('mx.viz.plot_network needs the graphviz Python package: '
                              'pip install "hybridgluon[viz]" (or pip install graphviz)') from None
    _check_symbol(symbol)
    shape_dict = _shape_dict(symbol, shape) if shape is not None else None
    type_dict = None
    if dtype is not None:
        names, internals = _internals_for_inference(symbol)
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise MXNetValueError('Input type is incomplete: cannot infer every type from %s'
                                  % (dtype,))
        type_dict = dict(zip(names, out_types))
    nodes = json.loads(symbol.tojson())['nodes']
    _warn_repeated_names(nodes)
    base_attr = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3', 'height': '0.8034',
                 'style': 'filled'}
    base_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        if node['op'] == 'null':
            if node['name'].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node['name'])
                continue
            attr = copy.deepcopy(base_attr)
            attr.update(shape='oval', fillcolor=_COLORS[0])
            dot.node(name=node['name'], label=node['name'], **attr)
            continue
        label, attr = _node_style(node, base_attr)
        dot.node(name=node['name'], label=label, **attr)
    for node in nodes:
        if node['op'] == 'null':
            continue
        inputs = node['inputs']
        if node['op'] == '_contrib_BilinearResize2D':  # its second input is only a shape hint
            inputs = inputs[:1]
        for entry in inputs:
            src = nodes[entry[0]]
            if src['name'] in hidden:
                continue
            dot.edge(tail_name=node['name'], head_name=src['name'], dir='back',
                     arrowtail='open', label=_edge_label(src, shape_dict, type_dict))
    return dot
