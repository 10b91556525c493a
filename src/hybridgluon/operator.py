"""MXNet's `mx.operator`: custom operators written in Python (CustomOp, CustomOpProp, register).

hybridgluon does not run Python-defined operators yet (docs/compat.md): the classes exist so
that code subclassing them imports, and `register` raises MXNetError naming the operator, so a
program fails where it first needs one, with a clear message.
"""
from .base import MXNetError

__all__ = ['CustomOp', 'CustomOpProp', 'register']


class CustomOp:
    """Base class of a Python operator's forward/backward (MXNet's CustomOp)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        raise MXNetError('CustomOp.forward must be overridden')

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise MXNetError('CustomOp.backward must be overridden')

    def assign(self, dst, req, src):
        """Writes src into dst as req says ('null', 'write', 'inplace' or 'add')."""
        if req == 'null':
            return
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            dst[:] += src


class CustomOpProp:
    """Base class of a Python operator's properties (MXNet's CustomOpProp)."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return []


def register(reg_name):
    """MXNet registers a CustomOpProp subclass under reg_name; hybridgluon cannot run Python
    operators yet, so this raises MXNetError."""
    def do_register(prop_cls):
        raise MXNetError('mx.operator.register(%r): custom Python operators (CustomOp) are not '
                         'supported by hybridgluon yet' % reg_name)
    return do_register
