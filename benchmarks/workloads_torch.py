"""The benchmark workloads in PyTorch (run in a peer worker, benchmarks/peers.py, with PyTorch's
default threading): the same networks as workloads_gluon.py. torchvision is not a dependency,
so resnet18 (v1) and mobilenet_v2 are written out here with the same layers as MXNet's model zoo.
"""
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


def mlp_forward(batch=1, din=512, widths=(256, 128, 2), jit=False):
    net = _mlp(din, widths).eval()
    x = torch.randn(batch, din)
    if jit:
        with torch.no_grad():
            net = torch.jit.trace(net, x)

    def fwd():
        with torch.no_grad():
            return net(x)
    return fwd


def _train_step(net, x, y):
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
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


def zoo_model(name, batch=1):
    net = MODELS[name]().eval()
    x = torch.rand(batch, 3, 224, 224)

    def fwd():
        with torch.inference_mode():
            return net(x)
    return fwd


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
                                     conv3x3, fmnist_epoch, word_lm_train_step,
                                     word_lm_infer)}
