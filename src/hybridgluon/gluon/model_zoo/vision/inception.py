"""Inception V3 (Szegedy et al., 2015) as in MXNet 1.9.1's model zoo (299x299 inputs). Each
Inception module is a HybridConcurrent of branches; every convolution is conv(no bias) +
BatchNorm(eps 1e-3) + relu. The auxiliary classifier is not part of the model (as in MXNet)."""
from .... import context
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import _load_pretrained

__all__ = ['Inception3', 'inception_v3']


def _make_basic_conv(**kwargs):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation('relu'))
    return out


_SETTING_NAMES = ('channels', 'kernel_size', 'strides', 'padding')


def _make_branch(use_pool, *conv_settings):
    """An optional pool ('avg' 3x3/1 pad 1, 'max' 3x3/2) then one basic conv per setting
    (channels, kernel_size, strides, padding); None leaves the Conv2D default."""
    out = nn.HybridSequential(prefix='')
    if use_pool == 'avg':
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == 'max':
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        kwargs = {k: v for k, v in zip(_SETTING_NAMES, setting) if v is not None}
        out.add(_make_basic_conv(**kwargs))
    return out


def _make_A(pool_features, prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (64, 1, None, None)))
        out.add(_make_branch(None, (48, 1, None, None), (64, 5, None, 2)))
        out.add(_make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)))
        out.add(_make_branch('avg', (pool_features, 1, None, None)))
    return out


def _make_B(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (384, 3, 2, None)))
        out.add(_make_branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)))
        out.add(_make_branch('max'))
    return out


def _make_C(channels_7x7, prefix):
    c7 = channels_7x7
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (192, 1, None, None)))
        out.add(_make_branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                             (192, (7, 1), None, (3, 0))))
        out.add(_make_branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                             (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                             (192, (1, 7), None, (0, 3))))
        out.add(_make_branch('avg', (192, 1, None, None)))
    return out


def _make_D(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (192, 1, None, None), (320, 3, 2, None)))
        out.add(_make_branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                             (192, (7, 1), None, (3, 0)), (192, 3, 2, None)))
        out.add(_make_branch('max'))
    return out


def _make_split(channels):
    """1x3 and 3x1 convolutions side by side (the E modules' widened outputs)."""
    split = HybridConcurrent(axis=1, prefix='')
    split.add(_make_branch(None, (channels, (1, 3), None, (0, 1))))
    split.add(_make_branch(None, (channels, (3, 1), None, (1, 0))))
    return split


def _make_E(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_make_branch(None, (320, 1, None, None)))

        branch_3x3 = nn.HybridSequential(prefix='')
        out.add(branch_3x3)
        branch_3x3.add(_make_branch(None, (384, 1, None, None)))
        branch_3x3.add(_make_split(384))

        branch_3x3dbl = nn.HybridSequential(prefix='')
        out.add(branch_3x3dbl)
        branch_3x3dbl.add(_make_branch(None, (448, 1, None, None), (384, 3, None, 1)))
        branch_3x3dbl.add(_make_split(384))

        out.add(_make_branch('avg', (192, 1, None, None)))
    return out


def make_aux(classes):
    """The auxiliary classifier head (not used by Inception3, kept for MXNet parity)."""
    out = nn.HybridSequential(prefix='')
    out.add(nn.AvgPool2D(pool_size=5, strides=3))
    out.add(_make_basic_conv(channels=128, kernel_size=1))
    out.add(_make_basic_conv(channels=768, kernel_size=5))
    out.add(nn.Flatten())
    out.add(nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception V3 for 299x299 inputs."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            f = self.features
            f.add(_make_basic_conv(channels=32, kernel_size=3, strides=2))
            f.add(_make_basic_conv(channels=32, kernel_size=3))
            f.add(_make_basic_conv(channels=64, kernel_size=3, padding=1))
            f.add(nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_make_basic_conv(channels=80, kernel_size=1))
            f.add(_make_basic_conv(channels=192, kernel_size=3))
            f.add(nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_make_A(32, 'A1_'))
            f.add(_make_A(64, 'A2_'))
            f.add(_make_A(64, 'A3_'))
            f.add(_make_B('B_'))
            f.add(_make_C(128, 'C1_'))
            f.add(_make_C(160, 'C2_'))
            f.add(_make_C(160, 'C3_'))
            f.add(_make_C(192, 'C4_'))
            f.add(_make_D('D_'))
            f.add(_make_E('E1_'))
            f.add(_make_E('E2_'))
            f.add(nn.AvgPool2D(pool_size=8))
            f.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=context.cpu(), root=None, **kwargs):
    """Inception V3; `pretrained` loads the local file 'inceptionv3' from `root` (nothing is
    downloaded)."""
    net = Inception3(**kwargs)
    if pretrained:
        _load_pretrained(net, 'inceptionv3', root, ctx)
    return net
