"""Networks for the mx.viz tests, built by the same code on MXNet 1.9.1 (gen_viz_ref.py writes
what MXNet prints and draws for them into viz.json) and on hybridgluon (test_viz.py)."""
import contextlib
import io

import numpy as np


def _summary_net(mx):
    data = mx.sym.Variable('data')
    bias = mx.sym.Variable('fc1_bias', lr_mult=1.0)
    emb = mx.sym.Embedding(data=data, name='emb1', input_dim=100, output_dim=28)
    conv = mx.sym.Convolution(data=emb, name='conv1', num_filter=32, kernel=(3, 3), stride=(2, 2))
    bn = mx.sym.BatchNorm(data=conv, name='bn1')
    act = mx.sym.Activation(data=bn, name='relu1', act_type='relu')
    pool = mx.sym.Pooling(data=act, name='mp1', kernel=(2, 2), stride=(2, 2), pool_type='max')
    fc1 = mx.sym.FullyConnected(data=pool, bias=bias, name='fc1', num_hidden=10, lr_mult=0)
    fc2 = mx.sym.FullyConnected(data=fc1, name='fc2', num_hidden=10, wd_mult=0.5)
    return mx.sym.SliceChannel(data=fc2, num_outputs=10, name='slice_1', squeeze_axis=0)


def _branchy_net(mx):
    data = mx.sym.Variable('data')
    c1 = mx.sym.Convolution(data=data, name='c1', num_filter=8, kernel=(3, 3), pad=(1, 1),
                            no_bias=True)
    c2 = mx.sym.Convolution(data=data, name='c2', num_filter=8, kernel=(1, 1), num_group=4)
    cat = mx.sym.Concat(c1, c2, dim=1, name='cat')
    lrelu = mx.sym.LeakyReLU(data=cat, name='lrelu', act_type='elu')
    gp = mx.sym.Pooling(data=lrelu, name='gp', global_pool=True, pool_type='avg')
    flat = mx.sym.Flatten(data=gp, name='flat')
    fc = mx.sym.FullyConnected(data=flat, name='fc', num_hidden=5, no_bias=True)
    return mx.sym.softmax(fc, name='sm')


def _dup_net(mx):
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data=net, name='fc', num_hidden=128)
    net = mx.sym.Activation(data=net, name='relu1', act_type='relu')
    net = mx.sym.FullyConnected(data=net, name='fc', num_hidden=10)
    return mx.sym.SoftmaxOutput(data=net, name='out')


def _captured(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


def _graph_lines(dot):
    """The statements of a graphviz source, without the trailing blank line that graphviz
    versions disagree about."""
    return [line for line in dot.source.splitlines() if line.strip()]


def run_cases(mx):
    """{case name: what MXNet's mx.viz printed (a string) or drew (a list of lines)}."""
    viz = mx.viz
    out = {}
    s = _summary_net(mx)
    out['summary_noshape'] = _captured(lambda: viz.print_summary(s))
    out['summary_shape'] = _captured(lambda: viz.print_summary(s, {'data': (1, 3, 28)}))
    out['summary_narrow'] = _captured(lambda: viz.print_summary(
        s, {'data': (2, 3, 28)}, line_length=80, positions=[30, 50, 60, 80]))
    b = _branchy_net(mx)
    out['summary_branchy'] = _captured(lambda: viz.print_summary(b, {'data': (2, 4, 6, 6)}))
    out['plot_branchy'] = _graph_lines(viz.plot_network(b, shape={'data': (2, 4, 6, 6)}))
    out['plot_branchy_weights'] = _graph_lines(viz.plot_network(
        b, title='net', hide_weights=False, node_attrs={'shape': 'oval'}))
    out['plot_summary_net'] = _graph_lines(viz.plot_network(
        s, shape={'data': (1, 3, 28)}, dtype={'data': np.float32}))
    d = _dup_net(mx)
    out['plot_dup'] = _graph_lines(viz.plot_network(
        d, shape={'data': (100, 200)}, dtype={'data': np.float64},
        node_attrs={'fixedsize': 'false'}))
    return out
