"""The benchmark workloads written once against the Gluon API, run by hybridgluon in the
benchmark's own process and by real MXNet 1.9.1 in a peer worker (benchmarks/peers.py): the same
code after `import mxnet as mx` / `import hybridgluon as mx`, as the seeds promise.

Each builder takes the framework module and keyword arguments and returns a function that does
one unit of work and waits for its result (MXNet runs asynchronously: without the wait its
timings would measure only the queueing).
"""
import numpy as np


def _sync(out):
    out.wait_to_read()
    return out


def relu_one(mx):
    x = mx.nd.ones((1,))
    return lambda: _sync(mx.nd.relu(x))


def add_4x4(mx):
    a, b = mx.nd.ones((4, 4)), mx.nd.ones((4, 4))
    return lambda: _sync(a + b)


def add_big(mx, n=10 ** 7):
    a, b = mx.nd.random.uniform(shape=(n,)), mx.nd.random.uniform(shape=(n,))
    return lambda: _sync(a + b)


def exp_big(mx, n=10 ** 7):
    a = mx.nd.random.uniform(shape=(n,))
    return lambda: _sync(mx.nd.exp(a))


def sgemm(mx, k=1024):
    a, b = mx.nd.random.uniform(shape=(k, k)), mx.nd.random.uniform(shape=(k, k))
    return lambda: _sync(mx.nd.dot(a, b))


def _mlp(mx, widths, hybrid):
    nn = mx.gluon.nn
    net = nn.HybridSequential()
    with net.name_scope():
        for w in widths[:-1]:
            net.add(nn.Dense(w, activation='relu'))
        net.add(nn.Dense(widths[-1]))
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def mlp_forward(mx, hybrid=True, batch=1, din=512, widths=(256, 128, 2)):
    """The seeds' benchmark: one forward of the 512-256-128-2 MLP."""
    net = _mlp(mx, list(widths), hybrid)
    x = mx.nd.random.normal(shape=(batch, din))
    return lambda: _sync(net(x))


def _train_step(mx, net, x, y, momentum=None):
    opts = {'learning_rate': 0.01}
    if momentum:
        opts['momentum'] = momentum
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', opts)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    batch = x.shape[0]

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        return _sync(loss)
    return step


def mlp_train_step(mx, hybrid=True, batch=64, din=512, widths=(256, 128, 2)):
    """One training step (forward, loss, backward, SGD update) of an MLP."""
    net = _mlp(mx, list(widths), hybrid)
    x = mx.nd.random.normal(shape=(batch, din))
    y = mx.nd.array(np.random.RandomState(0).randint(0, widths[-1], batch), dtype='float32')
    return _train_step(mx, net, x, y)


def lenet(mx):
    """The first seed's Net (LeNet with a hand-made fc3_weight): hybridgluon.demo.Net's code,
    written here again because MXNet's worker cannot import hybridgluon."""
    gluon, nn = mx.gluon, mx.gluon.nn

    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(Net, self).__init__(**kwargs)
            with self.name_scope():
                self.conv1 = nn.Conv2D(6, kernel_size=5)
                self.pool1 = nn.MaxPool2D(pool_size=2)
                self.conv2 = nn.Conv2D(16, kernel_size=5)
                self.pool2 = nn.MaxPool2D(pool_size=2)
                self.fc1 = nn.Dense(120)
                self.fc2 = nn.Dense(84)
                self.fc3_weight = self.params.get('fc3_weight', shape=(10, 84))

        def hybrid_forward(self, F, x, fc3_weight):
            x = self.pool1(F.relu(self.conv1(x)))
            x = self.pool2(F.relu(self.conv2(x)))
            x = x.reshape((0, -1))
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return F.dot(x, fc3_weight, transpose_b=True)
    net = Net()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    return net


def lenet_forward(mx, batch=256):
    net = lenet(mx)
    x = mx.nd.random.uniform(shape=(batch, 1, 28, 28))
    return lambda: _sync(net(x))


def lenet_train_step(mx, batch=256):
    net = lenet(mx)
    x = mx.nd.random.uniform(shape=(batch, 1, 28, 28))
    y = mx.nd.array(np.random.RandomState(0).randint(0, 10, batch), dtype='float32')
    return _train_step(mx, net, x, y)


def zoo_model(mx, name, batch=1):
    """Inference of a model-zoo network at 224x224, hybridized."""
    net = mx.gluon.model_zoo.vision.get_model(name)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.uniform(shape=(batch, 3, 224, 224))
    return lambda: _sync(net(x))


def zoo_train_step(mx, name, batch=16, classes=1000):
    """One training step of a model-zoo network at 224x224 (issue 16): forward (BatchNorm on
    the batch's statistics), softmax cross-entropy, backward and SGD with momentum 0.9, the net
    hybridized (static_alloc, static_shape). Random images and labels: timing only."""
    net = mx.gluon.model_zoo.vision.get_model(name, classes=classes)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.uniform(shape=(batch, 3, 224, 224))
    y = mx.nd.array(np.random.RandomState(0).randint(0, classes, batch), dtype='float32')
    return _train_step(mx, net, x, y, momentum=0.9)


def conv3x3(mx, batch=8, channels=64, size=56):
    x = mx.nd.random.uniform(shape=(batch, channels, size, size))
    w = mx.nd.random.uniform(-0.1, 0.1, shape=(channels, channels, 3, 3))
    b = mx.nd.zeros((channels,))
    return lambda: _sync(mx.nd.Convolution(x, w, b, kernel=(3, 3), pad=(1, 1),
                                           num_filter=channels))


FASHION_MNIST = '/usr/share/datasets/fashion-mnist'


def fashion_mnist_train(limit=None):
    """The Fashion-MNIST training images (n, 784) float32 in [0, 1] and labels (n,) int64, read
    from the IDX files with NumPy (the same bytes for every framework); the first `limit`."""
    import gzip
    import os
    with gzip.open(os.path.join(FASHION_MNIST, 'train-images-idx3-ubyte.gz')) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(FASHION_MNIST, 'train-labels-idx1-ubyte.gz')) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    if limit:
        x, y = x[:limit], y[:limit]
    return x.astype(np.float32) / 255, y


def fmnist_epoch(mx, batch=128, limit=None):
    """One training epoch on Fashion-MNIST as tests/test_train_fashion_mnist.py trains it: the
    hybridized MLP 784-256-128-10, Adam (lr 1e-3), a fresh shuffle each epoch, each batch taken
    from the whole training set in memory (nd.take), loss read back every step."""
    xn, yn = fashion_mnist_train(limit)
    x, y = mx.nd.array(xn), mx.nd.array(yn, dtype='float32')
    net = _mlp(mx, [256, 128, 10], True)
    trainer = mx.gluon.Trainer(net.collect_params(), 'adam', {'learning_rate': 1e-3})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    steps = xn.shape[0] // batch
    rng = np.random.RandomState(0)

    def epoch():
        order = mx.nd.array(rng.permutation(xn.shape[0]), dtype='int32')
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            xb, yb = mx.nd.take(x, idx), mx.nd.take(y, idx)
            with mx.autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            trainer.step(batch)
            loss.mean().asscalar()
    return epoch


def _word_lm(mx, vocab, embed, hidden, layers):
    """The word-level language model of the RNN benchmark (Zaremba et al.'s medium config
    without dropout: timings, not perplexity): embedding, a fused multi-layer LSTM in TNC layout
    and a decoder applied to every time step."""
    gluon, nn = mx.gluon, mx.gluon.nn

    class WordLM(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super(WordLM, self).__init__(**kwargs)
            with self.name_scope():
                self.embedding = nn.Embedding(vocab, embed)
                self.lstm = gluon.rnn.LSTM(hidden, num_layers=layers, input_size=embed)
                self.decoder = nn.Dense(vocab, in_units=hidden, flatten=False)

        def hybrid_forward(self, F, x, h, c):
            out, (h, c) = self.lstm(self.embedding(x), [h, c])
            return self.decoder(out), h, c
    net = WordLM()
    net.initialize(mx.init.Uniform(0.1))
    net.hybridize(static_alloc=True, static_shape=True)
    return net


def word_lm_train_step(mx, batch=32, seq=35, vocab=10000, embed=650, hidden=650, layers=2):
    """One training step of the word LM: forward over `seq` steps, softmax cross-entropy over
    every token, backward through time, gradient clipping and an SGD update (lr 1), as the
    classic PTB recipe trains it. Token ids are synthetic (timing only)."""
    net = _word_lm(mx, vocab, embed, hidden, layers)
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.randint(0, vocab, (seq, batch)), dtype='float32')
    y = mx.nd.array(rng.randint(0, vocab, (seq, batch)), dtype='float32')
    h = mx.nd.zeros((layers, batch, hidden))
    c = mx.nd.zeros((layers, batch, hidden))
    params = net.collect_params()
    trainer = mx.gluon.Trainer(params, 'sgd', {'learning_rate': 1.0})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    grads = [p.grad() for p in params.values() if p.grad_req != 'null']

    def step():
        with mx.autograd.record():
            out, _, _ = net(x, h, c)
            loss = loss_fn(out.reshape((-1, vocab)), y.reshape((-1,)))
        loss.backward()
        mx.gluon.utils.clip_global_norm(grads, 0.25 * seq * batch)
        trainer.step(seq * batch)
        return _sync(loss)
    return step


def word_lm_infer(mx, batch=1, seq=35, vocab=10000, embed=650, hidden=650, layers=2):
    """Inference latency of the word LM: one forward over `seq` tokens (hybridized)."""
    net = _word_lm(mx, vocab, embed, hidden, layers)
    x = mx.nd.array(np.random.RandomState(0).randint(0, vocab, (seq, batch)), dtype='float32')
    h = mx.nd.zeros((layers, batch, hidden))
    c = mx.nd.zeros((layers, batch, hidden))
    return lambda: _sync(net(x, h, c)[0])


WORKLOADS = {f.__name__: f for f in (relu_one, add_4x4, add_big, exp_big, sgemm, mlp_forward,
                                     mlp_train_step, lenet_forward, lenet_train_step, zoo_model,
                                     zoo_train_step, conv3x3, fmnist_epoch, word_lm_train_step,
                                     word_lm_infer)}
