"""Writes the seed corpus of fuzz/predict_fuzz.c: small exported models (symbol JSON + params)
in the harness's input layout, covering the ops and file features exports use (Dense, conv,
pooling, BatchNorm with aux states, element-wise chains that fuse, several outputs).

    python fuzz/make_corpus.py [OUT_DIR]     # default: fuzz/corpus
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hybridgluon as mx  # noqa: E402
from hybridgluon import gluon  # noqa: E402
from hybridgluon.gluon import nn  # noqa: E402

FORWARD, CLONE, RESHAPE, FILES = 1, 2, 4, 8


class _Chain(gluon.HybridBlock):
    """Element-wise work the planner fuses, a reshape/transpose/softmax and two outputs."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = nn.Dense(6)
            self.scale = self.params.get('scale', shape=(1, 6))

    def hybrid_forward(self, F, x, scale):
        y = F.tanh(F.exp(self.dense(x) * 0.5 + 1) - 2)
        y = F.broadcast_mul(y, scale)
        z = F.softmax(y.reshape((0, 2, 3)).transpose((0, 2, 1)), axis=-1)
        return F.relu(y), F.sum(z, axis=1)


def _models():
    mlp = nn.HybridSequential()
    with mlp.name_scope():
        mlp.add(nn.Dense(8, activation='relu'), nn.Dense(3))
    conv = nn.HybridSequential()
    with conv.name_scope():
        conv.add(nn.Conv2D(2, 3, activation='relu'), nn.MaxPool2D(2), nn.Flatten(),
                 nn.Dense(3))
    bn = nn.HybridSequential()
    with bn.name_scope():
        bn.add(nn.Dense(4), nn.BatchNorm(), nn.Activation('sigmoid'))
    return [('mlp', mlp, (2, 5), FORWARD | CLONE | RESHAPE),
            ('mlp_files', mlp, (2, 5), FORWARD | FILES),
            ('conv', conv, (1, 1, 8, 8), FORWARD | CLONE | RESHAPE),
            ('batchnorm', bn, (3, 3), FORWARD | RESHAPE),
            ('chain', _Chain(), (2, 4), FORWARD | CLONE | RESHAPE)]


def seed_bytes(json_text, params, shape, flags):
    head = bytes([flags, len(shape)] + list(shape)) + struct.pack('<I', len(json_text))
    return head + json_text + params


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    mx.random.seed(0)
    tmp = tempfile.mkdtemp()
    for name, net, shape, flags in _models():
        if name != 'mlp_files':  # the same net as 'mlp', loaded through files
            net.initialize()
        net.hybridize()
        net(mx.nd.random.uniform(shape=shape))
        prefix = os.path.join(tmp, name)
        net.export(prefix)
        with open(prefix + '-symbol.json', 'rb') as f:
            json_text = f.read()
        with open(prefix + '-0000.params', 'rb') as f:
            params = f.read()
        with open(os.path.join(out_dir, 'seed_' + name), 'wb') as f:
            f.write(seed_bytes(json_text, params, shape, flags))
    print('wrote %d seeds to %s' % (len(_models()), out_dir))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus'))
