"""hybridgluon's Gluon model zoo (src/hybridgluon/gluon/model_zoo/vision, MXNet 1.9.1's zoo)
written in plain torch.nn, layer for layer, for tests/test_onnx_import.py: each network here
exports with torch.onnx.export to the graph the Gluon network computes (the same convolutions,
paddings, pools and their ceil_mode, BatchNorm epsilons, concat orders and residual sums) and
has the same parameters, shape for shape. torchvision is not used: its models differ from
MXNet's (AlexNet's adaptive pool, DenseNet's and SqueezeNet's heads, ResNet V2, MobileNetV2's
first block) and it need not import with the installed torch.

    model = build('resnet50_v2', classes=10)            # eval mode, torch's initialisation
    model = build('alexnet', classes=10, size=63)       # the Dense input for 63x63 images

`size` matters for AlexNet and the VGGs only, where Gluon's first Dense takes its input width
from the image size (the other networks end in a global or fixed-size pool). SIZES gives the
smallest square input each network accepts.
"""
import torch
from torch import nn

__all__ = ['build', 'NAMES', 'SIZES', 'NOMINAL']


def _conv(cin, cout, k, s=1, p=0, groups=1, bias=True):
    return nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=bias)


class _Concurrent(nn.Module):
    """Gluon's HybridConcurrent(axis=1): the children's outputs concatenated on channels."""

    def __init__(self, *paths):
        super().__init__()
        self.paths = nn.ModuleList(paths)

    def forward(self, x):
        return torch.cat([p(x) for p in self.paths], 1)


class _Identity(nn.Module):
    def forward(self, x):
        return x


class _Net(nn.Module):
    """`output(features(x))`, as every zoo network's hybrid_forward."""

    def __init__(self, features, output):
        super().__init__()
        self.features, self.output = features, output

    def forward(self, x):
        return self.output(self.features(x))


def _flat_width(features, size):
    with torch.no_grad():
        return features.eval()(torch.zeros(1, 3, size, size)).flatten(1).shape[1]


# -- AlexNet ----------------------------------------------------------------------------------

def alexnet(classes=1000, size=224):
    f = nn.Sequential(
        _conv(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        _conv(64, 192, 5, p=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        _conv(192, 384, 3, p=1), nn.ReLU(),
        _conv(384, 256, 3, p=1), nn.ReLU(),
        _conv(256, 256, 3, p=1), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten())
    f.extend([nn.Linear(_flat_width(f, size), 4096), nn.ReLU(), nn.Dropout(0.5),
              nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5)])
    return _Net(f, nn.Linear(4096, classes))


# -- VGG --------------------------------------------------------------------------------------

_VGG = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
        13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
        16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
        19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def vgg(depth, batch_norm=False, classes=1000, size=224):
    layers, cin = [], 3
    for num, width in zip(*_VGG[depth]):
        for _ in range(num):
            layers.append(_conv(cin, width, 3, p=1))
            if batch_norm:
                layers.append(nn.BatchNorm2d(width))
            layers.append(nn.ReLU())
            cin = width
        layers.append(nn.MaxPool2d(2, 2))
    f = nn.Sequential(*layers, nn.Flatten())
    width = _flat_width(f, size)
    for _ in range(2):
        f.extend([nn.Linear(width, 4096), nn.ReLU(), nn.Dropout(0.5)])
        width = 4096
    return _Net(f, nn.Linear(4096, classes))


# -- SqueezeNet -------------------------------------------------------------------------------

def _fire(cin, squeeze, expand1, expand3):
    return nn.Sequential(
        _conv(cin, squeeze, 1), nn.ReLU(),
        _Concurrent(nn.Sequential(_conv(squeeze, expand1, 1), nn.ReLU()),
                    nn.Sequential(_conv(squeeze, expand3, 3, p=1), nn.ReLU())))


def squeezenet(version, classes=1000):
    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)
    if version == '1.0':
        f = [_conv(3, 96, 7, 2), nn.ReLU(), pool(),
             _fire(96, 16, 64, 64), _fire(128, 16, 64, 64), _fire(128, 32, 128, 128), pool(),
             _fire(256, 32, 128, 128), _fire(256, 48, 192, 192), _fire(384, 48, 192, 192),
             _fire(384, 64, 256, 256), pool(), _fire(512, 64, 256, 256)]
    else:
        f = [_conv(3, 64, 3, 2), nn.ReLU(), pool(),
             _fire(64, 16, 64, 64), _fire(128, 16, 64, 64), pool(),
             _fire(128, 32, 128, 128), _fire(256, 32, 128, 128), pool(),
             _fire(256, 48, 192, 192), _fire(384, 48, 192, 192), _fire(384, 64, 256, 256),
             _fire(512, 64, 256, 256)]
    f.append(nn.Dropout(0.5))
    out = nn.Sequential(_conv(512, classes, 1), nn.ReLU(), nn.AvgPool2d(13), nn.Flatten())
    return _Net(nn.Sequential(*f), out)


# -- DenseNet ---------------------------------------------------------------------------------

_DENSENET = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
             169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def _dense_layer(cin, growth, bn_size):
    new = nn.Sequential(
        nn.BatchNorm2d(cin), nn.ReLU(), _conv(cin, bn_size * growth, 1, bias=False),
        nn.BatchNorm2d(bn_size * growth), nn.ReLU(),
        _conv(bn_size * growth, growth, 3, p=1, bias=False))
    return _Concurrent(_Identity(), new)


def densenet(depth, classes=1000, bn_size=4):
    init, growth, config = _DENSENET[depth]
    f = [_conv(3, init, 7, 2, 3, bias=False), nn.BatchNorm2d(init), nn.ReLU(),
         nn.MaxPool2d(3, 2, 1)]
    width = init
    for i, num in enumerate(config):
        f.append(nn.Sequential(*[_dense_layer(width + j * growth, growth, bn_size)
                                 for j in range(num)]))
        width += num * growth
        if i != len(config) - 1:
            f.append(nn.Sequential(nn.BatchNorm2d(width), nn.ReLU(),
                                   _conv(width, width // 2, 1, bias=False),
                                   nn.AvgPool2d(2, 2)))
            width //= 2
    f += [nn.BatchNorm2d(width), nn.ReLU(), nn.AvgPool2d(7), nn.Flatten()]
    return _Net(nn.Sequential(*f), nn.Linear(width, classes))


# -- Inception V3 -----------------------------------------------------------------------------

def _basic(cin, cout, k, s=1, p=0):
    """conv (no bias) + BatchNorm(eps 1e-3) + relu."""
    return nn.Sequential(_conv(cin, cout, k, s, p, bias=False),
                         nn.BatchNorm2d(cout, eps=1e-3), nn.ReLU())


def _avg_branch(cin, cout):
    return nn.Sequential(nn.AvgPool2d(3, 1, 1), _basic(cin, cout, 1))


def _inception_a(cin, pool_features):
    return _Concurrent(
        _basic(cin, 64, 1),
        nn.Sequential(_basic(cin, 48, 1), _basic(48, 64, 5, p=2)),
        nn.Sequential(_basic(cin, 64, 1), _basic(64, 96, 3, p=1), _basic(96, 96, 3, p=1)),
        _avg_branch(cin, pool_features))


def _inception_b(cin):
    return _Concurrent(
        _basic(cin, 384, 3, 2),
        nn.Sequential(_basic(cin, 64, 1), _basic(64, 96, 3, p=1), _basic(96, 96, 3, 2)),
        nn.MaxPool2d(3, 2))


def _inception_c(cin, c7):
    return _Concurrent(
        _basic(cin, 192, 1),
        nn.Sequential(_basic(cin, c7, 1), _basic(c7, c7, (1, 7), p=(0, 3)),
                      _basic(c7, 192, (7, 1), p=(3, 0))),
        nn.Sequential(_basic(cin, c7, 1), _basic(c7, c7, (7, 1), p=(3, 0)),
                      _basic(c7, c7, (1, 7), p=(0, 3)), _basic(c7, c7, (7, 1), p=(3, 0)),
                      _basic(c7, 192, (1, 7), p=(0, 3))),
        _avg_branch(cin, 192))


def _inception_d(cin):
    return _Concurrent(
        nn.Sequential(_basic(cin, 192, 1), _basic(192, 320, 3, 2)),
        nn.Sequential(_basic(cin, 192, 1), _basic(192, 192, (1, 7), p=(0, 3)),
                      _basic(192, 192, (7, 1), p=(3, 0)), _basic(192, 192, 3, 2)),
        nn.MaxPool2d(3, 2))


def _split(c):
    return _Concurrent(_basic(c, c, (1, 3), p=(0, 1)), _basic(c, c, (3, 1), p=(1, 0)))


def _inception_e(cin):
    return _Concurrent(
        _basic(cin, 320, 1),
        nn.Sequential(_basic(cin, 384, 1), _split(384)),
        nn.Sequential(_basic(cin, 448, 1), _basic(448, 384, 3, p=1), _split(384)),
        _avg_branch(cin, 192))


def inception_v3(classes=1000):
    f = nn.Sequential(
        _basic(3, 32, 3, 2), _basic(32, 32, 3), _basic(32, 64, 3, p=1), nn.MaxPool2d(3, 2),
        _basic(64, 80, 1), _basic(80, 192, 3), nn.MaxPool2d(3, 2),
        _inception_a(192, 32), _inception_a(256, 64), _inception_a(288, 64),
        _inception_b(288),
        _inception_c(768, 128), _inception_c(768, 160), _inception_c(768, 160),
        _inception_c(768, 192),
        _inception_d(768), _inception_e(1280), _inception_e(2048),
        nn.AvgPool2d(8), nn.Dropout(0.5), nn.Flatten())
    return _Net(f, nn.Linear(2048, classes))


# -- ResNet V1 and V2 -------------------------------------------------------------------------

class _BasicV1(nn.Module):
    def __init__(self, cin, c, stride, downsample):
        super().__init__()
        self.body = nn.Sequential(
            _conv(cin, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
            _conv(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
        self.downsample = nn.Sequential(_conv(cin, c, 1, stride, bias=False),
                                        nn.BatchNorm2d(c)) if downsample else None

    def forward(self, x):
        out = self.body(x)
        residual = self.downsample(x) if self.downsample is not None else x
        return torch.relu(residual + out)


class _BottleneckV1(nn.Module):
    """As in Gluon: the stride on the first 1x1 convolution, the two 1x1s with a bias."""

    def __init__(self, cin, c, stride, downsample):
        super().__init__()
        self.body = nn.Sequential(
            _conv(cin, c // 4, 1, stride), nn.BatchNorm2d(c // 4), nn.ReLU(),
            _conv(c // 4, c // 4, 3, 1, 1, bias=False), nn.BatchNorm2d(c // 4), nn.ReLU(),
            _conv(c // 4, c, 1), nn.BatchNorm2d(c))
        self.downsample = nn.Sequential(_conv(cin, c, 1, stride, bias=False),
                                        nn.BatchNorm2d(c)) if downsample else None

    def forward(self, x):
        out = self.body(x)
        residual = self.downsample(x) if self.downsample is not None else x
        return torch.relu(out + residual)


class _BasicV2(nn.Module):
    def __init__(self, cin, c, stride, downsample):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), _conv(cin, c, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(c), _conv(c, c, 3, 1, 1, bias=False)
        self.downsample = _conv(cin, c, 1, stride, bias=False) if downsample else None

    def forward(self, x):
        residual = x
        x = torch.relu(self.bn1(x))
        if self.downsample is not None:
            residual = self.downsample(x)   # V2 projects the pre-activated input
        x = self.conv1(x)
        x = self.conv2(torch.relu(self.bn2(x)))
        return x + residual


class _BottleneckV2(nn.Module):
    def __init__(self, cin, c, stride, downsample):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), _conv(cin, c // 4, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c // 4)
        self.conv2 = _conv(c // 4, c // 4, 3, stride, 1, bias=False)
        self.bn3, self.conv3 = nn.BatchNorm2d(c // 4), _conv(c // 4, c, 1, bias=False)
        self.downsample = _conv(cin, c, 1, stride, bias=False) if downsample else None

    def forward(self, x):
        residual = x
        x = torch.relu(self.bn1(x))
        if self.downsample is not None:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(torch.relu(self.bn2(x)))
        x = self.conv3(torch.relu(self.bn3(x)))
        return x + residual


_RESNET = {18: ('basic', [2, 2, 2, 2], [64, 64, 128, 256, 512]),
           34: ('basic', [3, 4, 6, 3], [64, 64, 128, 256, 512]),
           50: ('bottle', [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
           101: ('bottle', [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
           152: ('bottle', [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}


def resnet(version, depth, classes=1000):
    kind, layers, channels = _RESNET[depth]
    block = {(1, 'basic'): _BasicV1, (1, 'bottle'): _BottleneckV1,
             (2, 'basic'): _BasicV2, (2, 'bottle'): _BottleneckV2}[version, kind]
    # V2 normalises the input with a BatchNorm without scale and shift
    f = [nn.BatchNorm2d(3, affine=False)] if version == 2 else []
    f += [_conv(3, channels[0], 7, 2, 3, bias=False), nn.BatchNorm2d(channels[0]), nn.ReLU(),
          nn.MaxPool2d(3, 2, 1)]
    for i, num in enumerate(layers):
        cin, c = channels[i], channels[i + 1]
        # as in Gluon, the first block projects when the width changes (not on the stride)
        stage = [block(cin, c, 1 if i == 0 else 2, c != cin)]
        stage += [block(c, c, 1, False) for _ in range(num - 1)]
        f.append(nn.Sequential(*stage))
    if version == 2:
        f += [nn.BatchNorm2d(channels[-1]), nn.ReLU()]
    f += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return _Net(nn.Sequential(*f), nn.Linear(channels[-1], classes))


# -- MobileNet V1 and V2 ----------------------------------------------------------------------

def _conv_bn(cin, cout, k=1, s=1, p=0, groups=1, act='relu'):
    """Gluon's _add_conv: conv (no bias) + BatchNorm (+ relu or relu6, or nothing)."""
    layers = [_conv(cin, cout, k, s, p, groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6() if act == 'relu6' else nn.ReLU())
    return layers


def mobilenet(multiplier=1.0, classes=1000):
    m = multiplier
    dw = [int(x * m) for x in [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
    out = [int(x * m) for x in [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
    strides = [1, 2] * 3 + [1] * 5 + [2, 1]
    f = _conv_bn(3, int(32 * m), 3, 2, 1)
    for d, c, s in zip(dw, out, strides):
        f += _conv_bn(d, d, 3, s, 1, groups=d) + _conv_bn(d, c)
    f += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return _Net(nn.Sequential(*f), nn.Linear(out[-1], classes))


class _LinearBottleneck(nn.Module):
    """Gluon's LinearBottleneck: the expanding 1x1 is there for t = 1 too."""

    def __init__(self, cin, c, t, stride):
        super().__init__()
        self.use_shortcut = stride == 1 and cin == c
        self.out = nn.Sequential(
            *_conv_bn(cin, cin * t, act='relu6'),
            *_conv_bn(cin * t, cin * t, 3, stride, 1, groups=cin * t, act='relu6'),
            *_conv_bn(cin * t, c, act=None))

    def forward(self, x):
        out = self.out(x)
        return out + x if self.use_shortcut else out


def mobilenet_v2(multiplier=1.0, classes=1000):
    m = multiplier
    ins = [int(x * m) for x in [32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3
           + [160] * 3]
    outs = [int(x * m) for x in [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3
            + [320]]
    ts = [1] + [6] * 16
    strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
    f = _conv_bn(3, int(32 * m), 3, 2, 1, act='relu6')
    f += [_LinearBottleneck(i, c, t, s) for i, c, t, s in zip(ins, outs, ts, strides)]
    last = int(1280 * m) if m > 1.0 else 1280
    f += _conv_bn(outs[-1], last, act='relu6') + [nn.AdaptiveAvgPool2d(1)]
    return _Net(nn.Sequential(*f),
                nn.Sequential(_conv(last, classes, 1, bias=False), nn.Flatten()))


# -- names ------------------------------------------------------------------------------------

def _builders():
    b = {'alexnet': lambda c, s: alexnet(c, s)}
    for d in _VGG:
        b['vgg%d' % d] = lambda c, s, d=d: vgg(d, False, c, s)
        b['vgg%d_bn' % d] = lambda c, s, d=d: vgg(d, True, c, s)
    for v in ('1.0', '1.1'):
        b['squeezenet' + v] = lambda c, s, v=v: squeezenet(v, c)
    for d in _DENSENET:
        b['densenet%d' % d] = lambda c, s, d=d: densenet(d, c)
    b['inceptionv3'] = lambda c, s: inception_v3(c)
    for v in (1, 2):
        for d in _RESNET:
            b['resnet%d_v%d' % (d, v)] = lambda c, s, v=v, d=d: resnet(v, d, c)
    for m in ('1.0', '0.75', '0.5', '0.25'):
        b['mobilenet' + m] = lambda c, s, m=m: mobilenet(float(m), c)
        b['mobilenetv2_' + m] = lambda c, s, m=m: mobilenet_v2(float(m), c)
    return b


_BUILDERS = _builders()
NAMES = sorted(_BUILDERS)
# The image size the zoo is made for, and the smallest one each network takes: AlexNet and
# the VGGs down to a 1x1 map before the Dense layers, the global pools down to 1x1,
# SqueezeNet's, DenseNet's and Inception's fixed final pools (13, 7, 8) need their windows.
NOMINAL = dict({n: 224 for n in NAMES}, inceptionv3=299)
SIZES = dict({n: 32 for n in NAMES if n.startswith(('resnet', 'mobilenet', 'vgg'))},
             alexnet=63, **{'squeezenet1.0': 213, 'squeezenet1.1': 209, 'densenet121': 221,
                            'densenet161': 221, 'densenet169': 221, 'densenet201': 221,
                            'inceptionv3': 299})


def build(name, classes=10, size=None):
    """The zoo network `name` (Gluon's names: 'resnet50_v2', 'mobilenetv2_0.25', ...) in
    eval mode, with torch's initialisation; `size` (default: NOMINAL) is the input's height
    and width, which AlexNet's and the VGGs' first Dense layer depends on."""
    model = _BUILDERS[name](classes, size or NOMINAL[name])
    return model.eval()
