"""Argument checks shared by the chunkers, the encoder, the representations and the index;
errors are :class:`~chunkforge.errors.ArgumentError` (a ``ValueError``) or
:class:`~chunkforge.errors.ArgumentTypeError` (a ``TypeError`` too) and carry the parameter
(``param``), which their message names.

>>> check_int("max_tokens", 0, 1)
Traceback (most recent call last):
...
chunkforge.errors.ArgumentError: max_tokens must be >= 1, got 0
>>> try:
...     check_int("overlap", "2", 0)
... except TypeError as exc:
...     print(exc.param, "-", exc)
overlap - overlap must be an int, not str
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ArgumentError, ArgumentTypeError

# the largest count the native core takes (a 64-bit signed integer)
INT_MAX = 2**63 - 1


def check_int(name: str, value: Any, minimum: int, maximum: int = INT_MAX) -> int:
    """``value`` as an int in ``[minimum, maximum]``; errors name the parameter."""
    if type(value) is int:  # the common case, first: no conversion
        number: int = value
    elif isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"must be an int, not {type(value).__name__}", param=name)
    else:
        number = int(value)
    if number < minimum:
        raise ArgumentError(f"must be >= {minimum}, got {number}", param=name)
    if number > maximum:
        raise ArgumentError(f"must be <= {maximum}, got {number}", param=name)
    return number
