"""Layer arguments as MXNet 1.x's layers take them, NumPy numbers included.

MXNet's layers test `isinstance(x, numeric_types)` (Python and NumPy numbers) before repeating
a size over the spatial dims, and hand every value to the op, whose attribute parser refuses
bools and floats where an int is expected -- at the first forward pass, not at construction.
These helpers do the same, and make NumPy integers Python ints so that reprs and Parameter
shapes read as MXNet's do under NumPy 1 and 2 ('(2, 2)', never '(np.int64(2), ...)').
"""
import numbers

import numpy as np

__all__ = []


def _is_number(value):
    """MXNet's `isinstance(value, numeric_types)`: a Python or NumPy number (bools too)."""
    return isinstance(value, (numbers.Number, np.generic))


def _int(value):
    """A NumPy integer as a Python int; anything else (bools too) as it is."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _int_tuple(value, n):
    """An `int or tuple of int` argument as a tuple: a number (NumPy's too) repeated n times, a
    sequence kept as it is; integers become Python ints, other values are left for the op to
    judge."""
    if _is_number(value):
        value = (value,) * n
    return tuple(_int(v) for v in value)
