"""How hits become a payload: :class:`ExpandOptions`, one frozen, checked value that every
index's ``expand`` and ``query``, the service's request bodies and the native expander take.
Each option is defined here once, with its bounds and its description (the service's
request models are made from them).

>>> ExpandOptions(window=1, budget_tokens=500)
ExpandOptions(window=1, budget_tokens=500)
>>> ExpandOptions.of(None, spread=0.5).spread, ExpandOptions.recommended().budget_tokens
(0.5, 1000)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .._checks import check_int
from .._recommended import RECOMMENDED
from ..errors import ChunkforgeError

Order = Literal["score", "document"]
Pack = Literal["skip", "stop"]
MAX_TOKENS = 100_000
"""The largest ``budget_tokens`` and ``window_tokens`` the service takes."""
MAX_WINDOW = 1000
"""The largest ``window`` the service takes."""


class OptionError(ChunkforgeError):
    """An expansion option out of its range; ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class OptionTypeError(OptionError, TypeError):
    """An expansion option of the wrong type."""


def _option(default: Any, description: str, **bounds: Any) -> Any:
    return field(default=default, metadata={"description": description, **bounds})


@dataclass(frozen=True)
class ExpandOptions:
    """How hits become passages (see :meth:`chunkforge.index.Index.expand`); checked when made
    (errors name the option: :class:`OptionError`, a ValueError, or :class:`OptionTypeError`)."""

    window: int | None = _option(None, "sentences either side of each hit", ge=0, le=MAX_WINDOW)
    window_tokens: int | None = _option(
        None, "grow each hit by whole sentences up to this many tokens", ge=1, le=MAX_TOKENS
    )
    parent: bool = _option(False, "each hit's parent instead")
    auto_merge: float | None = _option(None, "merge into parents above this ratio of children", ge=0, lt=1)
    spread: float | None = _option(
        None, "each hit lends the leaves near it spread**distance of its relevance", ge=0, lt=1
    )
    budget_tokens: int | None = _option(None, "token budget of the payload", ge=0, le=MAX_TOKENS)
    order: Order = _option("score", "passages by score, or grouped by document in text order")
    pack: Pack = _option("skip", "a passage over the budget: skip it or stop")
    trim: bool = _option(False, "trim the first passage over the budget to sentences")
    max_chars: int | None = _option(None, "characters of text in the payload", ge=0)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("parent", "trim"):
                if not isinstance(value, bool):
                    raise OptionTypeError(f.name, f"{f.name} must be True or False, not {value!r}")
            elif f.name in ("order", "pack"):
                allowed = ("score", "document") if f.name == "order" else ("skip", "stop")
                if value not in allowed:
                    raise OptionError(f.name, f"{f.name} must be {' or '.join(map(repr, allowed))}, not {value!r}")
            elif value is None:
                continue
            elif f.name in ("auto_merge", "spread"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise OptionTypeError(f.name, f"{f.name} must be a number in [0, 1), not {value!r}")
                if not (math.isfinite(value) and 0 <= value < 1):
                    what = "a ratio" if f.name == "auto_merge" else "a decay"
                    raise OptionError(f.name, f"{f.name} must be {what} in [0, 1), not {value!r}")
                object.__setattr__(self, f.name, float(value))
            else:
                try:
                    object.__setattr__(self, f.name, check_int(f.name, value, f.metadata.get("ge", 0)))
                except TypeError as exc:
                    raise OptionTypeError(f.name, str(exc)) from None
                except ValueError as exc:
                    raise OptionError(f.name, str(exc)) from None

    def __repr__(self) -> str:
        given = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        )
        return f"ExpandOptions({given})"

    @classmethod
    def of(cls, options: ExpandOptions | None = None, **given: Any) -> ExpandOptions:
        """``options`` (default: none set) with the options ``given`` by name replaced; an
        unknown name is a TypeError naming it.

        >>> ExpandOptions.of(ExpandOptions(window=1), budget_tokens=300)
        ExpandOptions(window=1, budget_tokens=300)
        """
        if options is not None and not isinstance(options, ExpandOptions):
            raise OptionTypeError("options", f"options must be ExpandOptions, not {type(options).__name__}")
        unknown = sorted(set(given) - NAMES)
        if unknown:
            raise OptionTypeError(
                unknown[0], f"unknown expansion option {unknown[0]!r} (options: {', '.join(sorted(NAMES))})"
            )
        return dataclasses.replace(options or cls(), **given) if given else options or cls()

    @classmethod
    def recommended(cls, options: ExpandOptions | None = None, **given: Any) -> ExpandOptions:
        """The options of ``query``: those given, ``budget_tokens`` as recommended unless given
        (None: no budget), and ``spread`` as recommended unless given or another way of widening
        the hits is asked for (``RECOMMENDED``).

        >>> ExpandOptions.recommended(window=1)
        ExpandOptions(window=1, budget_tokens=1000)
        """
        chosen = dict(given)
        if options is not None:
            chosen = {**options.given(), **chosen}
        chosen.setdefault("budget_tokens", RECOMMENDED["budget_tokens"])
        if not any(chosen.get(name) for name in ("window", "window_tokens", "parent", "auto_merge")):
            chosen.setdefault("spread", RECOMMENDED["spread"])
        return cls.of(None, **chosen)

    def given(self) -> dict[str, Any]:
        """The options set to other than their defaults, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}


NAMES = frozenset(f.name for f in dataclasses.fields(ExpandOptions))
"""The names of the expansion options."""
