"""`sym._internal`: the registered ops whose names start with an underscore (`_plus_scalar`,
`_square_sum`...), as MXNet's `mx.symbol._internal` module holds them."""
from . import op as _op

globals().update({n: f for n, f in vars(_op).items() if n.startswith('_') and callable(f)
                  and getattr(f, '__module__', None) == _op.__name__ and n != '_invoke'})
