"""Old spellings kept for one release: positional arguments that became keyword-only,
and renamed keywords. Both still work and raise a ``DeprecationWarning`` naming the
new spelling.

>>> import warnings
>>> class C:
...     @keyword_only("b", "c")
...     def __init__(self, a, *, b=0, c=0):
...         self.abc = (a, b, c)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     C(1, 2, 3).abc
(1, 2, 3)
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def keyword_only(*old_order: str, stacklevel: int = 2) -> Callable[[F], F]:
    """Lets a function whose parameters ``old_order`` became keyword-only still take them
    by position (in that order) for one release, with a DeprecationWarning."""

    def wrap(fn: F) -> F:
        import inspect

        positional = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        allowed = len(positional)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > allowed:
                extra = args[allowed:]
                owner = fn.__qualname__.removesuffix(".__init__")
                if len(extra) > len(old_order):
                    raise TypeError(f"{owner}() takes at most {allowed + len(old_order) - 1} positional arguments")
                names = old_order[: len(extra)]
                for name in names:
                    if name in kwargs:
                        raise TypeError(f"{owner}() got multiple values for argument {name!r}")
                warnings.warn(
                    f"{owner}(): passing {', '.join(names)} by position is deprecated and will be an "
                    f"error in the next release; pass {', '.join(f'{n}=' for n in names)} by keyword",
                    DeprecationWarning,
                    stacklevel=stacklevel,
                )
                kwargs.update(zip(names, extra))
                args = args[:allowed]
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def renamed(owner: str, kwargs: dict[str, Any], old: str, new: str, stacklevel: int = 3) -> None:
    """Moves ``kwargs[old]`` to ``kwargs[new]`` with a DeprecationWarning (an error when both are given)."""
    if old not in kwargs:
        return
    if new in kwargs:
        raise TypeError(f"{owner}: give {new}= only ({old}= is its deprecated spelling)")
    warnings.warn(f"{owner}: {old}= is deprecated, use {new}=", DeprecationWarning, stacklevel=stacklevel)
    kwargs[new] = kwargs.pop(old)


def deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """The DeprecationWarning of an attribute read by its old name."""
    warnings.warn(f"{old} is deprecated, use {new}", DeprecationWarning, stacklevel=stacklevel)
