"""AlexNet (Krizhevsky et al., 2012; the one-GPU variant of torchvision and MXNet 1.9.1)."""
from .... import context
from ... import nn
from ...block import HybridBlock
from ..model_store import _load_pretrained

__all__ = ['AlexNet', 'alexnet']


class AlexNet(HybridBlock):
    """Five convolutions with three max-pools, then two 4096-wide Dense+Dropout layers."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            with self.features.name_scope():
                f = self.features
                f.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation='relu'))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(nn.Conv2D(192, kernel_size=5, padding=2, activation='relu'))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(nn.Conv2D(384, kernel_size=3, padding=1, activation='relu'))
                f.add(nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'))
                f.add(nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(nn.Flatten())
                f.add(nn.Dense(4096, activation='relu'))
                f.add(nn.Dropout(0.5))
                f.add(nn.Dense(4096, activation='relu'))
                f.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=context.cpu(), root=None, **kwargs):
    """AlexNet; `pretrained` loads the local file 'alexnet' from `root` (no download)."""
    net = AlexNet(**kwargs)
    if pretrained:
        _load_pretrained(net, 'alexnet', root, ctx)
    return net
