"""Computer-vision models of MXNet 1.9.1's model zoo: ResNet V1/V2, VGG, AlexNet, DenseNet,
SqueezeNet, Inception V3, MobileNet V1/V2.

    from hybridgluon.gluon.model_zoo import vision
    net = vision.get_model('resnet18_v1', classes=10)
    net = vision.resnet50_v1(pretrained=True, root='/path/to/params')   # local file only

Inputs are (N, 3, 224, 224) images (299 x 299 for Inception V3), normalised with the ImageNet
mean and standard deviation.
"""
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403

import importlib as _importlib

# The submodules (the star imports above shadow `alexnet` with the function of that name).
_alexnet, _densenet, _inception, _mobilenet, _resnet, _squeezenet, _vgg = [
    _importlib.import_module('.' + m, __name__)
    for m in ('alexnet', 'densenet', 'inception', 'mobilenet', 'resnet', 'squeezenet', 'vgg')]

# MXNet's model names -> constructors.
_models = {name: getattr(_resnet, name) for name in
           ['resnet%d_v%d' % (d, v) for v in (1, 2) for d in (18, 34, 50, 101, 152)]}
_models.update({name: getattr(_vgg, name) for name in
                ['vgg%d%s' % (d, bn) for bn in ('', '_bn') for d in (11, 13, 16, 19)]})
_models.update({'densenet%d' % d: getattr(_densenet, 'densenet%d' % d)
                for d in (121, 161, 169, 201)})
_models.update({
    'alexnet': _alexnet.alexnet,
    'squeezenet1.0': _squeezenet.squeezenet1_0, 'squeezenet1.1': _squeezenet.squeezenet1_1,
    'inceptionv3': _inception.inception_v3,
    'mobilenet1.0': _mobilenet.mobilenet1_0, 'mobilenet0.75': _mobilenet.mobilenet0_75,
    'mobilenet0.5': _mobilenet.mobilenet0_5, 'mobilenet0.25': _mobilenet.mobilenet0_25,
    'mobilenetv2_1.0': _mobilenet.mobilenet_v2_1_0,
    'mobilenetv2_0.75': _mobilenet.mobilenet_v2_0_75,
    'mobilenetv2_0.5': _mobilenet.mobilenet_v2_0_5,
    'mobilenetv2_0.25': _mobilenet.mobilenet_v2_0_25,
})


def get_model(name, **kwargs):
    """The model `name` (case-insensitive, e.g. 'resnet18_v1', 'mobilenetv2_1.0'), built with
    `kwargs` (classes, pretrained, ctx, root, ...)."""
    name = name.lower()
    if name not in _models:
        raise ValueError('Model %s is not supported. Available options are\n\t%s'
                         % (name, '\n\t'.join(sorted(_models.keys()))))
    return _models[name](**kwargs)
