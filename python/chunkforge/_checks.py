"""Argument checks shared by the chunkers, the encoder, the representations and the index;
errors name the parameter.

>>> check_int("max_tokens", 0, 1)
Traceback (most recent call last):
...
ValueError: max_tokens must be >= 1, got 0
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the largest count the native core takes (a 64-bit signed integer)
INT_MAX = 2**63 - 1


def check_int(name: str, value: Any, minimum: int, maximum: int = INT_MAX) -> int:
    """``value`` as an int in ``[minimum, maximum]``; errors name the parameter."""
    if type(value) is int:  # the common case, first: no conversion
        number: int = value
    elif isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    else:
        number = int(value)
    if number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number}")
    if number > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {number}")
    return number
