"""MXNet's AMP entry points; each raises MXNetError (see the package's note)."""
from ...base import MXNetError

__all__ = ['init', 'init_trainer', 'scale_loss', 'unscale', 'convert_model',
           'convert_hybrid_block', 'convert_symbol', 'convert_bucketing_module',
           'list_lp16_ops', 'list_fp32_ops', 'list_lp16_fp32_ops', 'list_conditional_fp32_ops',
           'list_widest_type_cast', 'list_loss_output_functions', 'list_lp16_use_fp32_params']


def _unsupported(name):
    def fn(*args, **kwargs):
        raise MXNetError('mx.contrib.amp.%s: automatic mixed precision (AMP) is not supported '
                         'by hybridgluon; cast the model with astype/cast_params instead'
                         % name)
    fn.__name__ = name
    fn.__doc__ = 'Not supported by hybridgluon: raises MXNetError.'
    return fn


init = _unsupported('init')
init_trainer = _unsupported('init_trainer')
scale_loss = _unsupported('scale_loss')
unscale = _unsupported('unscale')
convert_model = _unsupported('convert_model')
convert_hybrid_block = _unsupported('convert_hybrid_block')
convert_symbol = _unsupported('convert_symbol')
convert_bucketing_module = _unsupported('convert_bucketing_module')
list_lp16_ops = _unsupported('list_lp16_ops')
list_fp32_ops = _unsupported('list_fp32_ops')
list_lp16_fp32_ops = _unsupported('list_lp16_fp32_ops')
list_conditional_fp32_ops = _unsupported('list_conditional_fp32_ops')
list_widest_type_cast = _unsupported('list_widest_type_cast')
list_loss_output_functions = _unsupported('list_loss_output_functions')
list_lp16_use_fp32_params = _unsupported('list_lp16_use_fp32_params')
