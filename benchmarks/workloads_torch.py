"""The benchmark workloads in PyTorch (run in a peer worker, benchmarks/peers.py, with PyTorch's
default threading): the same networks as workloads_gluon.py. torchvision is not a dependency,
so resnet18 (v1) and mobilenet_v2 are written out here with the same layers as MXNet's model zoo.

The same definitions also serve issue 16's compiled peers, each in a worker of its own (PEERS):
'torch.compile' (inductor, default mode) and 'onnxruntime' (the eval-mode module exported with
torch.onnx.export and run by ONNX Runtime's CPU provider). A workload that takes a `backend`
argument builds for them; its builder compiles and warms up, so no timing sees a compilation.
"""
import functools
import os
import tempfile

import torch
from torch import nn


def relu_one():
    x = torch.ones(1)
    return lambda: torch.relu(x)


def add_4x4():
    a, b = torch.ones(4, 4), torch.ones(4, 4)
    return lambda: a + b


def add_big(n=10 ** 7):
    a, b = torch.rand(n), torch.rand(n)
    return lambda: a + b


def exp_big(n=10 ** 7):
    a = torch.rand(n)
    return lambda: torch.exp(a)


def sgemm(k=1024):
    a, b = torch.rand(k, k), torch.rand(k, k)
    return lambda: a @ b


def _mlp(din, widths):
    layers, d = [], din
    for w in widths[:-1]:
        layers += [nn.Linear(d, w), nn.ReLU()]
        d = w
    layers.append(nn.Linear(d, widths[-1]))
    return nn.Sequential(*layers)


def require(peer):
    """Raises ImportError when `peer` ('torch', 'torch.compile' or 'onnxruntime') cannot run in
    this Python: the worker then answers that it is unavailable and the driver skips it."""
    if peer == 'onnxruntime':
        import onnxruntime  # noqa: F401
    elif peer == 'torch.compile' and not hasattr(torch, 'compile'):
        raise ImportError('PyTorch %s has no torch.compile' % torch.__version__)


# Calls made by the builder of a torch.compile workload, after which the worker makes the first
# call: the first compiles, and the next ones would hit any recompile (a guard that fails once
# the first call has changed some state), so the timed calls run the final compiled code.
COMPILE_WARMUP = 3


def _export_onnx(net, x, path):
    """torch.onnx.export of the eval-mode net at x's shape into `path` (one file, weights
    inside). The dynamo-based exporter (torch.export, then onnxscript) where onnxscript is
    installed; else the TorchScript-based one, which needs nothing more. Its progress lines go
    to the worker's stderr (peers._protocol_stdout)."""
    import logging
    import warnings
    try:
        import onnxscript  # noqa: F401
        dynamo = True
    except ImportError:
        dynamo = False
    # The exporter logs a warning per torchvision op it cannot register (torchvision is not
    # installed) and torch.export a FutureWarning or two: noise in every benchmark's stderr.
    log = logging.getLogger('torch.onnx')
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter('ignore')
            torch.onnx.export(net, (x,), path, dynamo=dynamo, external_data=False, verbose=False)
    finally:
        log.setLevel(level)


def _onnxruntime(net, x):
    """An ONNX Runtime session running net(x) (static shapes, the input's batch): every graph
    optimisation (ORT_ENABLE_ALL: constant folding, Conv+BatchNorm+activation fusion, layout
    changes), the default CPU execution provider, one intra-op thread per core like the other
    frameworks (or OMP_NUM_THREADS's, which run.py --threads sets for every framework). Its
    first output is checked against PyTorch's, so a wrong export cannot pass for a fast one."""
    import numpy as np
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'model.onnx')
        _export_onnx(net, x, path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(os.environ.get('OMP_NUM_THREADS') or os.cpu_count())
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, opts, providers=['CPUExecutionProvider'])
    feed = {sess.get_inputs()[0].name: x.numpy()}
    with torch.inference_mode():
        want = net(x).numpy()
    got = sess.run(None, feed)[0]
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-4):
        raise RuntimeError('ONNX Runtime output differs from PyTorch (max |diff| %g)'
                           % float(np.abs(got - want).max()))
    return lambda: sess.run(None, feed)[0]


def _infer(net, x, backend, grad_mode=torch.inference_mode):
    """One inference call of the eval-mode net on x, in `backend`: 'torch' (eager),
    'torch.compile' or 'onnxruntime'. grad_mode: the context PyTorch runs it in."""
    if backend == 'onnxruntime':
        return _onnxruntime(net, x)
    if backend == 'torch.compile':
        net = torch.compile(net)  # inductor, mode 'default'
    elif backend != 'torch':
        raise ValueError('unknown backend %r' % backend)

    def fwd():
        with grad_mode():
            return net(x)
    if backend == 'torch.compile':
        for _ in range(COMPILE_WARMUP):
            fwd()
    return fwd


def mlp_forward(batch=1, din=512, widths=(256, 128, 2), jit=False, backend='torch'):
    net = _mlp(din, widths).eval()
    x = torch.randn(batch, din)
    if jit:
        with torch.no_grad():
            net = torch.jit.trace(net, x)
    return _infer(net, x, backend, torch.no_grad)


def _train_step(net, x, y, momentum=0.0):
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=momentum)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp_train_step(batch=64, din=512, widths=(256, 128, 2)):
    net = _mlp(din, widths)
    return _train_step(net, torch.randn(batch, din), torch.randint(0, widths[-1], (batch,)))


class LeNet(nn.Module):
    """The first seed's Net."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2 = nn.Linear(256, 120), nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10, bias=False)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc3(torch.relu(self.fc2(x)))


def lenet_forward(batch=256):
    net = LeNet().eval()
    x = torch.rand(batch, 1, 28, 28)

    def fwd():
        with torch.inference_mode():
            return net(x)
    return fwd


def lenet_train_step(batch=256):
    return _train_step(LeNet(), torch.rand(batch, 1, 28, 28), torch.randint(0, 10, (batch,)))


class _Basic(nn.Module):
    """ResNet v1 basic block (MXNet's BasicBlockV1)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        r = x if self.down is None else self.down(x)
        return torch.relu(self.body(x) + r)


def resnet18_v1(classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [_Basic(cin, cout, stride), _Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


class _InvRes(nn.Module):
    """MobileNetV2 inverted residual (MXNet's LinearBottleneck)."""

    def __init__(self, cin, cout, t, stride):
        super().__init__()
        mid = cin * t
        self.use_shortcut = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
            nn.ReLU6(), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.body(x)
        return out + x if self.use_shortcut else out


def mobilenetv2_1_0(classes=1000):
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(_InvRes(cin, c, t, s if i == 0 else 1))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Conv2d(1280, classes, 1, bias=False), nn.Flatten()]
    return nn.Sequential(*layers)


MODELS = {'resnet18_v1': resnet18_v1, 'mobilenetv2_1.0': mobilenetv2_1_0}


def zoo_model(name, batch=1, backend='torch'):
    net = MODELS[name]().eval()
    return _infer(net, torch.rand(batch, 3, 224, 224), backend)


def zoo_train_step(name, batch=16, classes=1000, backend='torch'):
    """workloads_gluon.zoo_train_step in PyTorch: the train-mode net (batch statistics in
    BatchNorm), CrossEntropyLoss, backward, SGD with momentum 0.9. For 'torch.compile' the model
    is compiled (its forward and, through AOTAutograd, its backward); the loss and the
    optimizer stay eager, as in the usual `model = torch.compile(model)` recipe."""
    net = MODELS[name](classes).train()
    g = torch.Generator().manual_seed(0)
    x = torch.rand(batch, 3, 224, 224, generator=g)
    y = torch.randint(0, classes, (batch,), generator=g)
    if backend == 'torch.compile':
        step = _train_step(torch.compile(net), x, y, momentum=0.9)
        for _ in range(COMPILE_WARMUP):
            step()
        return step
    if backend != 'torch':
        raise ValueError('no training step for backend %r' % backend)
    return _train_step(net, x, y, momentum=0.9)


def conv3x3(batch=8, channels=64, size=56):
    x = torch.rand(batch, channels, size, size)
    w = torch.rand(channels, channels, 3, 3) * 0.2 - 0.1
    b = torch.zeros(channels)

    def fwd():
        with torch.inference_mode():
            return torch.conv2d(x, w, b, padding=1)
    return fwd


def fmnist_epoch(batch=128, limit=None):
    """workloads_gluon.fmnist_epoch in PyTorch: the same data, MLP, Adam and per-step work."""
    import numpy as np
    from workloads_gluon import fashion_mnist_train
    xn, yn = fashion_mnist_train(limit)
    x, y = torch.from_numpy(xn), torch.from_numpy(yn)
    net = _mlp(784, (256, 128, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    steps = xn.shape[0] // batch
    rng = np.random.RandomState(0)

    def epoch():
        order = torch.from_numpy(rng.permutation(xn.shape[0]))
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            xb, yb = x.index_select(0, idx), y.index_select(0, idx)
            opt.zero_grad()
            loss = loss_fn(net(xb), yb)
            loss.backward()
            opt.step()
            loss.item()
    return epoch


class _WordLM(nn.Module):
    def __init__(self, vocab, embed, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers)
        self.decoder = nn.Linear(hidden, vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -0.1, 0.1)

    def forward(self, x, h, c):
        out, (h, c) = self.lstm(self.embedding(x), (h, c))
        return self.decoder(out), h, c


def word_lm_train_step(batch=32, seq=35, vocab=10000, embed=650, hidden=650, layers=2):
    """workloads_gluon.word_lm_train_step in PyTorch: nn.LSTM (its fused CPU kernel)."""
    net = _WordLM(vocab, embed, hidden, layers)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (seq, batch), generator=g)
    y = torch.randint(0, vocab, (seq, batch), generator=g)
    h, c = torch.zeros(layers, batch, hidden), torch.zeros(layers, batch, hidden)
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        out, _, _ = net(x, h, c)
        loss = loss_fn(out.reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 0.25)
        opt.step()
        return loss.item()
    return step


def word_lm_infer(batch=1, seq=35, vocab=10000, embed=650, hidden=650, layers=2):
    net = _WordLM(vocab, embed, hidden, layers).eval()
    x = torch.randint(0, vocab, (seq, batch), generator=torch.Generator().manual_seed(0))
    h, c = torch.zeros(layers, batch, hidden), torch.zeros(layers, batch, hidden)

    def run():
        with torch.inference_mode():
            return net(x, h, c)[0]
    return run


WORKLOADS = {f.__name__: f for f in (relu_one, add_4x4, add_big, exp_big, sgemm, mlp_forward,
                                     mlp_train_step, lenet_forward, lenet_train_step, zoo_model,
                                     zoo_train_step, conv3x3, fmnist_epoch, word_lm_train_step,
                                     word_lm_infer)}
# What each PyTorch-based peer worker can build (peers._serve): the eager workloads, and those
# that take a backend, bound to the compiled ones.
PEERS = {'torch': WORKLOADS,
         'torch.compile': {f.__name__: functools.partial(f, backend='torch.compile')
                           for f in (mlp_forward, zoo_model, zoo_train_step)},
         'onnxruntime': {f.__name__: functools.partial(f, backend='onnxruntime')
                         for f in (mlp_forward, zoo_model)}}
