"""Automatic differentiation, as MXNet's `mxnet.autograd`.

The tape lives in C: under `record()`, every op applied to an array that is part of the graph
(a variable from `attach_grad`/`mark_variables`, or the output of a recorded op) becomes a node
keeping its outputs' values. `backward` builds the gradient graph from the ops' gradient rules
and runs it through the executor. A hybridized block is one node of the tape whose backward is
its planned backward graph.
"""
from . import _core
from .base import MXNetError

__all__ = ['record', 'pause', 'train_mode', 'predict_mode', 'is_recording', 'is_training',
           'set_recording', 'set_training', 'mark_variables', 'backward', 'grad', 'get_symbol',
           'Function']

_REQS = {'null': 0, 'write': 1, 'add': 2, 'inplace': 1}


def set_recording(is_recording):
    """Sets the recording state; returns the previous one."""
    return _core.set_recording(bool(is_recording))


def set_training(train_mode):
    """Sets the training state (Dropout, BatchNorm); returns the previous one."""
    return _core.set_training(bool(train_mode))


def is_recording():
    return _core.is_recording()


def is_training():
    return _core.is_training()


class _RecordingStateScope:
    """Sets recording and/or training on entry and restores both on exit."""

    def __init__(self, is_record, train_mode):
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)

    def __exit__(self, ptype, value, trace):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None and self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)


def record(train_mode=True):
    """Records the ops run inside the scope for differentiation (training mode by default)."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):
    """Stops recording inside the scope (prediction mode by default)."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Training behaviour (Dropout, BatchNorm batch statistics) without changing recording."""
    return _RecordingStateScope(None, True)


def predict_mode():
    """Prediction behaviour without changing recording."""
    return _RecordingStateScope(None, False)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def mark_variables(variables, gradients, grad_reqs='write'):
    """Marks arrays as variables whose gradients `backward` writes into `gradients`."""
    variables, gradients = _as_list(variables), _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    reqs = []
    for r in _as_list(grad_reqs):
        if r not in _REQS:
            raise MXNetError("grad_req must be one of 'write', 'add', 'null', got %r" % (r,))
        reqs.append(_REQS[r])
    _core.mark_variables(variables, gradients, reqs)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Computes the gradients of heads with respect to every marked variable they depend on,
    written (or added, grad_req='add') into the variables' gradient buffers."""
    heads = _as_list(heads)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
        if len(head_grads) != len(heads):
            raise MXNetError('heads and head_grads must be lists of the same length: %d vs %d'
                             % (len(heads), len(head_grads)))
    _core.backward(heads, head_grads, bool(retain_graph), bool(train_mode))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Returns the list of gradients of heads with respect to variables (new arrays; the
    variables' gradient buffers do not change), a list also for a single variable, as MXNet
    1.9.1 returns. create_graph=True records the computation of the gradients so they can be
    differentiated again."""
    heads, variables = _as_list(heads), _as_list(variables)
    if head_grads is not None:
        head_grads = _as_list(head_grads)
    if retain_graph is None:
        retain_graph = create_graph
    out = _core.backward(heads, head_grads, bool(retain_graph), bool(train_mode), variables,
                         bool(create_graph))
    return list(out)


def get_symbol(x):
    """The recorded computation that produced x, as a Symbol."""
    return _core.get_symbol(x)


class Function:
    """A differentiable function with a hand-written gradient (MXNet's autograd.Function).

    Subclass it with forward(*inputs) and backward(*output_grads), which return NDArrays (one
    or a tuple): backward gets one gradient per output and returns one per input. forward runs
    with recording paused; under record() the call is one node of the tape, and backward runs
    (recording paused) when a gradient flows through it. save_for_backward keeps arrays for
    backward in `saved_tensors`. Each instance can be called once."""

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError

    def backward(self, *output_grads):
        raise NotImplementedError

    def __call__(self, *inputs):
        if self._used:
            raise MXNetError('Each Function instance can only be called once. Please create '
                             'another instance.')
        self._used = True
        prev = set_recording(False)
        try:
            outputs = self.forward(*inputs)
        finally:
            set_recording(prev)
        if prev:
            outs = (outputs,) if not isinstance(outputs, (list, tuple)) else tuple(outputs)
            from .symbol import Symbol
            if any(isinstance(a, Symbol) for a in tuple(inputs) + outs):
                raise MXNetError('autograd.Function %s was called on Symbols while recording (a '
                                 'hybridized block traced under autograd.record()): a graph '
                                 'cannot hold its Python backward; write the operator as an '
                                 'mx.operator.CustomOp (the Custom op), which runs in graphs'
                                 % type(self).__name__)
            _core.record_function(self, tuple(inputs), outs)
        return outputs
