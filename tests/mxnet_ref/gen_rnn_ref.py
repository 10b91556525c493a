"""Writes the fused-RNN-layer fixtures with real MXNet 1.9.1 (run with its venv):

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_rnn_ref.py

rnn/<name>.params: `save_parameters` of a gluon.rnn layer with random weights (MXNet's file, with
its parameter names); rnn/<name>-symbol.json + rnn/<name>-0000.params: `export` of the same
layer hybridized; rnn/io.npz: per layer the input, the begin states, MXNet's output and states.
Small layers only (the files are committed).
"""
import json
import os

import numpy as np
import mxnet as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rnn')

# name -> (class, constructor kwargs, input shape)
LAYERS = {
    'lstm_bi2': ('LSTM', {'hidden_size': 6, 'num_layers': 2, 'bidirectional': True}, (4, 3, 5)),
    'gru_ntc': ('GRU', {'hidden_size': 5, 'layout': 'NTC'}, (2, 4, 3)),
    'rnn_relu2': ('RNN', {'hidden_size': 4, 'num_layers': 2, 'activation': 'relu'}, (3, 2, 5)),
    'rnn_tanh_bi': ('RNN', {'hidden_size': 4, 'bidirectional': True, 'activation': 'tanh'},
                    (3, 2, 5)),
    'lstmp': ('LSTM', {'hidden_size': 6, 'projection_size': 3, 'num_layers': 2}, (4, 2, 5)),
}


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.default_rng(20261127)
    arrays, meta = {}, {}
    for name, (cls, kw, shape) in sorted(LAYERS.items()):
        with mx.name.NameManager():
            layer = getattr(mx.gluon.rnn, cls)(prefix=name + '_', **kw)
        layer.initialize()
        x = mx.nd.array(rng.uniform(-1, 1, shape))
        batch = shape[kw.get('layout', 'TNC').find('N')]
        states = [mx.nd.array(rng.uniform(-1, 1, s.shape))
                  for s in layer.begin_state(batch)]
        layer(x, states)  # finishes the deferred initialisation
        for pname, p in sorted(layer.collect_params().items()):
            p.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, p.shape)))
        out, new_states = layer(x, states)
        layer.save_parameters(os.path.join(HERE, name + '.params'))
        arrays[name + '_x'] = x.asnumpy()
        for i, s in enumerate(states):
            arrays['%s_s%d' % (name, i)] = s.asnumpy()
        arrays[name + '_y'] = out.asnumpy()
        for i, s in enumerate(new_states):
            arrays['%s_hy%d' % (name, i)] = s.asnumpy()
        meta[name] = {'class': cls, 'kwargs': kw, 'nstates': len(states),
                      'params': {k: list(v.shape) for k, v in layer.collect_params().items()}}
        layer.hybridize()
        y2 = layer(x)  # the zero-state call is what gets exported
        arrays[name + '_y0'] = y2.asnumpy()
        layer.export(os.path.join(HERE, name))
    arrays['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8)
    np.savez_compressed(os.path.join(HERE, 'io.npz'), **arrays)
    print('wrote', sorted(os.listdir(HERE)))


if __name__ == '__main__':
    main()
