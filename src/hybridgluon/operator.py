"""MXNet's `mx.operator`: custom operators written in Python (CustomOp, CustomOpProp, register),
and the registry queries get_all_registered_operators / get_operator_arguments.

hybridgluon does not run Python-defined operators yet (docs/compat.md): the classes exist so
that code subclassing them imports, and `register` raises MXNetError naming the operator, so a
program fails where it first needs one, with a clear message.
"""
import collections

from . import _core
from .base import MXNetError

__all__ = ['CustomOp', 'CustomOpProp', 'register', 'get_all_registered_operators',
           'get_operator_arguments', 'OperatorArguments']


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


def get_all_registered_operators():
    """Every registered operator name, aliases included (MXNet's MXListAllOpNames)."""
    names = []
    for name in _core.list_ops():
        names.append(name)
        names.extend(_core.op_info(name)['aliases'])
    return names


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])

_SCALAR_TYPES = {'int': 'int', 'float': 'float', 'bool': 'boolean', 'tuple': 'Shape',
                 'string': 'string'}


def _format_default(kind, text):
    """A default in the form MXNet's parameter descriptions print it."""
    if kind == 'bool':
        return {'True': '1', 'False': '0'}.get(text, text)
    if kind == 'tuple':
        return text.replace('(', '[').replace(')', ']').replace(' ', '').rstrip(',]') + ']' \
            if text.startswith('(') else text
    if kind in ('int', 'string'):
        return "'%s'" % text
    return text


def _describe_attr(attr):
    """MXNet's type string of one attribute: 'float, optional, default=0.5',
    "{'relu', 'tanh'}, required", 'Shape(tuple), optional, default=[]', ..."""
    kind, default, required = attr['type'], attr['default'], attr['required']
    optional_none = attr['optional']
    if kind in ('enum', 'dtype'):
        choices = attr['choices'] if kind == 'enum' else list(_core.DTYPE_FLAGS)
        items = ', '.join("'%s'" % c for c in sorted(choices))
        if optional_none:
            items = 'None, ' + items
        if required:
            return '{%s}, required' % items
        return "{%s},optional, default='%s'" % (items, default)
    base = _SCALAR_TYPES.get(kind, kind)
    if optional_none:
        base += ' or None'
    elif kind == 'tuple':
        base = 'Shape(tuple)'
    if required:
        return '%s, required' % base
    if optional_none and default == 'None':
        return '%s, optional, default=None' % base
    return '%s, optional, default=%s' % (base, _format_default(kind, default))


def get_operator_arguments(op_name):
    """The operator's arguments as MXNet's OperatorArguments(narg, names, types): its array
    inputs ('NDArray-or-Symbol', or 'NDArray-or-Symbol[]' for a variable number) followed by
    its attributes with their type descriptions. Raises MXNetError for an unknown name."""
    try:
        info = _core.op_info(op_name)
    except MXNetError:
        raise MXNetError('Operator %s is not registered' % op_name) from None
    in_type = 'NDArray-or-Symbol[]' if info['varargs'] else 'NDArray-or-Symbol'
    names = list(info['inputs'])
    types = [in_type] * len(names)
    for attr in info['attrs']:
        names.append(attr['name'])
        types.append(_describe_attr(attr))
    return OperatorArguments(len(names), names, types)
