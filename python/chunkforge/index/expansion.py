"""Hits -> payload on a native store, one rule for the in-memory index and the store:
the options checked, the native expansion (microseconds), the passages' metadata.

>>> check_options(window=1, window_tokens=None, auto_merge=None, budget_tokens=500)
(1, None, None, 500)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._checks import check_int
from .payload import Hit, Packed, Passage, Payload

if TYPE_CHECKING:
    from .._native import Expander

Order = Literal["score", "document"]
Pack = Literal["skip", "stop"]


def check_options(
    window: int | None, window_tokens: int | None, auto_merge: float | None, budget_tokens: int | None
) -> tuple[int | None, int | None, float | None, int | None]:
    """The expansion options, checked (errors name the option)."""
    if window is not None:
        window = check_int("window", window, 0)
    if window_tokens is not None:
        window_tokens = check_int("window_tokens", window_tokens, 1)
    if auto_merge is not None and (
        isinstance(auto_merge, bool) or not isinstance(auto_merge, (int, float)) or not 0 <= auto_merge < 1
    ):
        raise ValueError(f"auto_merge must be a ratio in [0, 1), not {auto_merge!r}")
    if budget_tokens is not None:
        budget_tokens = check_int("budget_tokens", budget_tokens, 0)
    return window, window_tokens, auto_merge, budget_tokens


def expand(
    expander: Expander[Hit, Passage, Packed],
    hits: Iterable[Hit],
    metadata_of: Callable[[list[Passage]], Mapping[str, Mapping[str, Any]]] | None,
    *,
    window: int | None = None,
    parent: bool = False,
    auto_merge: float | None = None,
    budget_tokens: int | None = None,
    order: Order = "score",
    pack: Pack = "skip",
    trim: bool = False,
    window_tokens: int | None = None,
) -> Payload:
    """The payload of ``hits`` (see :meth:`chunkforge.Index.expand`); ``metadata_of`` gives the
    passages' documents' metadata (None: the documents have none)."""
    window, window_tokens, auto_merge, budget_tokens = check_options(window, window_tokens, auto_merge, budget_tokens)
    passages, dropped = expander.expand(
        hits, window, window_tokens, bool(parent), auto_merge, budget_tokens, order, pack, bool(trim)
    )
    return Payload(passages, dropped, metadata_of(passages) if metadata_of is not None else {})
