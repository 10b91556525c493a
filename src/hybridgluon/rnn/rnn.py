"""Checkpoints of the legacy `mx.rnn` cells: the weights are saved unpacked (one array a
gate, as `cell.unpack_weights` names them) and packed again on loading, so checkpoints of
fused and unfused networks are interchangeable (MXNet's format: mx.model's checkpoint files)."""
import warnings

from .rnn_cell import BaseRNNCell

__all__ = ['rnn_unroll', 'save_rnn_checkpoint', 'load_rnn_checkpoint', 'do_rnn_checkpoint']


def _model():
    # hybridgluon.model (save_checkpoint / load_checkpoint) comes with the Module API.
    from .. import model
    return model


def _as_cells(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else cells


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix='', layout='NTC'):
    """Deprecated: call `cell.unroll` directly."""
    warnings.warn('rnn_unroll is deprecated. Please call cell.unroll directly.')
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """Saves `prefix-symbol.json` and `prefix-%04d.params` (epoch) with the weights of
    `cells` (a cell or a list) unpacked."""
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    _model().save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """Loads a checkpoint saved by save_rnn_checkpoint: (symbol, arg_params, aux_params), the
    weights of `cells` packed again."""
    sym, arg, aux = _model().load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback for Module.fit that saves an RNN checkpoint every `period`
    epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
