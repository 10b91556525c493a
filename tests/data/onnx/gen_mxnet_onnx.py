"""Writes the ONNX files of tests/test_onnx_import.py's round trip with real MXNet 1.9.1:
small Gluon networks exported by MXNet's own `mx.onnx.export_model`, with an input and MXNet's
output for it, and what MXNet's own importer (`mx.contrib.onnx`) makes of each file: the
metadata and the names of the arg and aux params. Run with MXNet 1.9.1 and onnx 1.13 installed:
    python tests/data/onnx/gen_mxnet_onnx.py
"""
import json
import os

import mxnet as mx
import numpy as np
from mxnet.gluon import nn

HERE = os.path.dirname(os.path.abspath(__file__))


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation='relu'), nn.Dense(16, activation='tanh'), nn.Dense(3))
    return net, (4, 20)


def _convnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
            nn.MaxPool2D(2), nn.Conv2D(8, 3, strides=2, groups=2), nn.BatchNorm(),
            nn.LeakyReLU(0.1), nn.AvgPool2D(2, ceil_mode=True),
            nn.Conv2D(12, 1), nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(5))
    return net, (2, 3, 16, 16)


def main():
    mx.random.seed(7)
    np.random.seed(7)
    imported = {}
    for name, build in (('mxnet_mlp', _mlp), ('mxnet_convnet', _convnet)):
        net, shape = build()
        net.initialize(mx.init.Xavier())
        x = mx.nd.array(np.random.uniform(-1, 1, shape))
        net(x)
        # non-trivial running statistics, so the import must carry the aux states over
        for pname, p in net.collect_params().items():
            if pname.endswith('running_mean'):
                p.set_data(mx.nd.random.uniform(-0.5, 0.5, p.shape))
            elif pname.endswith('running_var'):
                p.set_data(mx.nd.random.uniform(0.5, 1.5, p.shape))
            elif pname.endswith('gamma') or pname.endswith('beta'):
                p.set_data(mx.nd.random.uniform(0.5, 1.5, p.shape))
        net.hybridize()
        y = net(x)
        prefix = os.path.join('/tmp', name)
        net.export(prefix)
        sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
        params = dict(arg)
        params.update(aux)
        mx.onnx.export_model(sym, params, [shape], [np.float32],
                             os.path.join(HERE, name + '.onnx'))
        np.savez(os.path.join(HERE, name + '.npz'), x=x.asnumpy(), y=y.asnumpy())
        from mxnet.contrib import onnx as mx_onnx
        path = os.path.join(HERE, name + '.onnx')
        _, arg, aux = mx_onnx.import_model(path)
        meta = mx_onnx.get_model_metadata(path)
        imported[name] = {'metadata': meta, 'arg': sorted(arg), 'aux': sorted(aux)}
    with open(os.path.join(HERE, 'mxnet_import.json'), 'w') as f:
        json.dump(imported, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
