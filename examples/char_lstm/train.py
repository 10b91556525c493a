"""A character-level LSTM language model trained on real English text, then sampled.

The text is the set of licence texts every Debian system carries in /usr/share/common-licenses
(the base-files package: GPL, LGPL, Apache, Artistic, MPL, ... about 250 kB), so nothing is
downloaded; --text FILE trains on any other UTF-8 file instead.

    python examples/char_lstm/train.py                   # about two minutes on 2 cores
    python examples/char_lstm/train.py --steps 2000 --hidden 512

The model is Gluon code as MXNet 1.x users write it: Embedding -> gluon.rnn.LSTM (the fused RNN
op, hybridized: the time loop runs in C) -> Dense, trained with truncated backpropagation through
time (the state is carried from one window to the next and detached), Adam and gradient
clipping. It prints the loss (bits per character) as it goes and, at the end, a sample generated
one character at a time from the trained model with the state carried across steps.
"""
import argparse
import glob
import math
import os
import time

import numpy as np

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.gluon import nn, rnn

LICENSES = '/usr/share/common-licenses'


def load_text(path):
    if path:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read()
    files = sorted(p for p in glob.glob(os.path.join(LICENSES, '*'))
                   if os.path.isfile(p) and not os.path.islink(p))
    if not files:
        raise SystemExit('no text: %s is empty; pass --text FILE' % LICENSES)
    parts = []
    for p in files:
        with open(p, encoding='utf-8', errors='replace') as f:
            parts.append(f.read())
    return '\n'.join(parts)


class CharLM(gluon.HybridBlock):
    def __init__(self, vocab, embed, hidden, layers, dropout, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embedding = nn.Embedding(vocab, embed)
            self.lstm = rnn.LSTM(hidden, num_layers=layers, dropout=dropout, input_size=embed)
            self.decoder = nn.Dense(vocab, in_units=hidden, flatten=False)

    def hybrid_forward(self, F, x, h, c):
        out, (h, c) = self.lstm(self.embedding(x), [h, c])   # x: (time, batch), layout TNC
        return self.decoder(out), h, c


def batches(ids, batch, seq):
    """Truncated-BPTT windows: the stream cut into `batch` parallel rows, read `seq` at a time."""
    n = (len(ids) - 1) // batch
    data = ids[:n * batch].reshape(batch, n).T           # (n, batch)
    label = ids[1:n * batch + 1].reshape(batch, n).T
    for i in range(0, n - seq + 1, seq):
        yield data[i:i + seq], label[i:i + seq]


def sample(net, chars, index, layers, hidden, prime, length, temperature, rng):
    h = nd.zeros((layers, 1, hidden))
    c = nd.zeros((layers, 1, hidden))
    out = list(prime)
    x = nd.array([[index[ch]] for ch in prime])          # (len(prime), 1)
    for _ in range(length):
        logits, h, c = net(x, h, c)
        p = nd.softmax(logits[-1, 0] / temperature).asnumpy().astype(np.float64)
        k = int(rng.choice(len(chars), p=p / p.sum()))
        out.append(chars[k])
        x = nd.array([[k]])
    return ''.join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--text', help='a UTF-8 text file (default: %s/*)' % LICENSES)
    ap.add_argument('--steps', type=int, default=600)
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--seq', type=int, default=64)
    ap.add_argument('--embed', type=int, default=64)
    ap.add_argument('--hidden', type=int, default=256)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--dropout', type=float, default=0.1)
    ap.add_argument('--lr', type=float, default=3e-3)
    ap.add_argument('--sample', type=int, default=400, help='characters to generate')
    ap.add_argument('--temperature', type=float, default=0.7)
    ap.add_argument('--prime', default='The ', help='text the sample starts from')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--save', help='prefix: export the trained model (symbol + params)')
    args = ap.parse_args()

    mx.random.seed(args.seed)
    rng = np.random.RandomState(args.seed)
    text = load_text(args.text)
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    ids = np.array([index[ch] for ch in text], dtype=np.float32)
    print('text: %d characters, %d distinct' % (len(text), len(chars)))

    net = CharLM(len(chars), args.embed, args.hidden, args.layers, args.dropout)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True)
    trainer = gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': args.lr})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    params = [p for p in net.collect_params().values() if p.grad_req != 'null']

    step, t0, smooth = 0, time.time(), None
    while step < args.steps:
        h = nd.zeros((args.layers, args.batch, args.hidden))
        c = nd.zeros((args.layers, args.batch, args.hidden))
        for xb, yb in batches(ids, args.batch, args.seq):
            x, y = nd.array(xb), nd.array(yb)
            h, c = h.detach(), c.detach()
            with autograd.record():
                logits, h, c = net(x, h, c)
                loss = loss_fn(logits.reshape((-1, len(chars))), y.reshape((-1,)))
            loss.backward()
            grads = [p.grad() for p in params]
            gluon.utils.clip_global_norm(grads, 5.0 * x.size)
            trainer.step(x.size)
            bits = loss.mean().asscalar() / math.log(2)
            smooth = bits if smooth is None else 0.95 * smooth + 0.05 * bits
            step += 1
            if step % 50 == 0 or step == 1:
                print('step %4d  %.3f bits/char  (%.1f s)' % (step, smooth, time.time() - t0),
                      flush=True)
            if step >= args.steps:
                break

    print('\n--- sample (temperature %.2f) ---' % args.temperature)
    prime = ''.join(ch for ch in args.prime if ch in index) or text[0]  # known characters
    print(sample(net, chars, index, args.layers, args.hidden, prime, args.sample,
                 args.temperature, rng))
    if args.save:
        net.export(args.save)
        print('\nexported %s-symbol.json and %s-0000.params' % (args.save, args.save))


if __name__ == '__main__':
    main()
