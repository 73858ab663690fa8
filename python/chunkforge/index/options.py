"""How hits become a payload: :class:`ExpandOptions`, one frozen, checked value that every
index's ``expand`` and ``query``, the service's request bodies and the native expander take.
Each option is defined here once, with its bounds and its description (the service's
request models are made from them). What a search takes beside its question is defined here
once too: :class:`SearchKeywords` (every index's ``search`` and ``query`` keywords) and
:class:`SearchOptions` (those keywords and ``k``, checked).

>>> ExpandOptions(window=1, budget_tokens=500)
ExpandOptions(window=1, budget_tokens=500)
>>> ExpandOptions.of(None, spread=0.5).spread, ExpandOptions.recommended().budget_tokens
(0.5, 1000)
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, cast

from .._checks import check_int
from .._recommended import RECOMMENDED
from ..errors import ArgumentTypeError, ChunkforgeError
from .filters import Filter, filter_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])

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


class SearchKeywords(TypedDict, total=False):
    """The keywords of every index's ``search`` after ``query`` and ``k`` (and of ``query``,
    before its expansion options), defined here once: the filters, each narrowing the others
    (:mod:`chunkforge.index.filters`), and ``hybrid`` (None: the index's setting)."""

    doc_id: str | Collection[str] | None
    source: str | Collection[str] | None
    heading_prefix: Sequence[str] | None
    where: Mapping[str, Any] | None
    hybrid: bool | None
    filter: Filter | None


SEARCH_NAMES = tuple(SearchKeywords.__annotations__)
"""The names of :class:`SearchKeywords`, in order."""


@dataclass(frozen=True)
class SearchOptions:
    """What a search takes beside the question, checked when made: ``k`` (an int >= 1), the one
    :class:`~chunkforge.index.filters.Filter` that every filter keyword narrows, and ``hybrid``.

    >>> SearchOptions.of(3, source="docs", where={"year": 2024}).filter.as_request()
    {'where': {'year': [2024], 'source': ['docs']}}
    >>> SearchOptions.of(0)
    Traceback (most recent call last):
    ...
    chunkforge.errors.ArgumentError: k must be >= 1, got 0
    """

    k: int = 12
    filter: Filter = field(default_factory=Filter)
    hybrid: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int("k", self.k, 1))
        if not isinstance(self.filter, Filter):
            raise ArgumentTypeError(f"must be a Filter, not {type(self.filter).__name__}", param="filter")

    @classmethod
    def of(cls, k: int, **keywords: Unpack[SearchKeywords]) -> SearchOptions:
        """The options of ``search(query, k, **keywords)``; an unknown keyword is an
        :class:`~chunkforge.errors.ArgumentTypeError` naming it."""
        passes, hybrid = search_filter(keywords)
        return cls(k, passes, hybrid)

    @classmethod
    def taken(cls, k: int, given: Mapping[str, Any]) -> tuple[SearchOptions, dict[str, Any]]:
        """``query``'s keywords ``given`` split: the search's options, and the rest (the
        expansion options by name).

        >>> SearchOptions.taken(5, {"where": {"acl": "public"}, "window": 1})[1]
        {'window': 1}
        """
        keywords, rest = split_keywords(given)
        return cls.of(k, **keywords), rest


def split_keywords(given: Mapping[str, Any]) -> tuple[SearchKeywords, dict[str, Any]]:
    """``query``'s keywords ``given`` split: search's (:class:`SearchKeywords`), and the rest.

    >>> split_keywords({"source": "docs", "budget_tokens": 300})
    ({'source': 'docs'}, {'budget_tokens': 300})
    """
    keywords = cast("SearchKeywords", {n: v for n, v in given.items() if n in SEARCH_NAMES})
    return keywords, {n: v for n, v in given.items() if n not in SEARCH_NAMES}


def search_filter(keywords: Mapping[str, Any]) -> tuple[Filter, bool | None]:
    """The :class:`~chunkforge.index.filters.Filter` that search's filter ``keywords`` narrow,
    and ``hybrid``; an unknown keyword is an :class:`~chunkforge.errors.ArgumentTypeError`.

    >>> search_filter({"doc_id": "a.md", "hybrid": False})
    (Filter(doc_ids=frozenset({'a.md'}), where=None, heading_prefix=None), False)
    """
    unknown = sorted(set(keywords) - set(SEARCH_NAMES))
    if unknown:
        raise ArgumentTypeError(f"is not a search keyword (keywords: {', '.join(SEARCH_NAMES)})", param=unknown[0])
    passes = filter_of(
        keywords.get("filter"),
        keywords.get("doc_id"),
        keywords.get("source"),
        keywords.get("where"),
        keywords.get("heading_prefix"),
    )
    return passes, keywords.get("hybrid")


def spells_search_keywords(method: F) -> F:
    """``method`` with :class:`SearchKeywords` spelled out in the signature that ``inspect`` and
    ``help`` show: in place of its ``**keywords`` (``search``), or before its first keyword-only
    parameter where it takes more (``query``: ``options``, ``floor``, ``**given``)."""
    signature = inspect.signature(method)
    params = list(signature.parameters.values())
    rest = params[-1]
    if rest.kind is inspect.Parameter.VAR_KEYWORD and rest.name == "keywords":
        params.pop()
    at = next((i for i, p in enumerate(params) if p.kind >= inspect.Parameter.KEYWORD_ONLY), len(params))
    spelt = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=getattr(hint, "__forward_arg__", hint)
        )
        for name, hint in SearchKeywords.__annotations__.items()
    ]
    method.__signature__ = signature.replace(parameters=[*params[:at], *spelt, *params[at:]])  # type: ignore[attr-defined]
    return method
