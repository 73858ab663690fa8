"""Hits -> payload on a native store, one rule for the in-memory index and the store: the
hits' leaves found again, the native expansion (microseconds; it spreads the hits' relevance
to their neighbours too), the payload bounded in characters, the passages' metadata.

>>> bound_chars([], [], 10)
([], [])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import NotInIndexError
from .options import ExpandOptions
from .payload import Hit, Packed, Passage, Payload

if TYPE_CHECKING:
    from .._native import Expander


class LeafLayout(NamedTuple):
    """A document's leaves in text order: their labels, ``str`` start offsets, sections and
    ``str`` end offsets."""

    labels: np.ndarray
    starts: np.ndarray
    sections: np.ndarray
    ends: np.ndarray


def leaf_labels(
    hits: Iterable[Hit], layout_of: Callable[[str], LeafLayout | None], where: str = "this index"
) -> tuple[list[int], list[float]]:
    """The label of each hit's leaf, found from its document and span rather than taken from
    the hit, and its score: a caller's hits name leaves, they do not open documents.
    ``layout_of`` gives a document's leaves, None for a document that is not there or that
    the caller's filter excludes (both answered alike: :class:`~chunkforge.errors.NotInIndexError`,
    a ValueError, naming ``hits[i]``).

    >>> layout = LeafLayout(np.array([7, 9]), np.array([0, 5]), np.array([0, 0]), np.array([4, 9]))
    >>> leaf_labels([Hit("a", 5, 9, 0.5, "", (), "", 0)], lambda d: layout if d == "a" else None)
    ([9], [0.5])
    """
    labels, scores = [], []
    for i, h in enumerate(hits):
        if not isinstance(h, Hit):
            raise TypeError(f"hits[{i}] must be a Hit (or a span (doc_id, start, end, score)), not {type(h).__name__}")
        layout = layout_of(h.doc_id) if isinstance(h.doc_id, str) else None
        at = -1 if layout is None else int(np.searchsorted(layout.starts, h.start))
        if at < 0 or at >= len(layout.starts) or layout.starts[at] != h.start or layout.ends[at] != h.end:  # type: ignore[union-attr]
            raise NotInIndexError(f"hits[{i}]: {h.doc_id!r} {h.start}-{h.end} is not a leaf of {where}")
        if isinstance(h.score, bool) or not isinstance(h.score, (int, float)) or not math.isfinite(h.score):
            raise ValueError(f"hits[{i}]: score must be a finite number, not {h.score!r}")
        labels.append(int(layout.labels[at]))  # type: ignore[union-attr]
        scores.append(float(h.score))
    return labels, scores


MAX_CHARS_PER_TOKEN = 32
"""Characters a payload may hold per token of its budget. A token is about 4 characters of
prose; a word the tokenizer cannot split (over 100 characters for WordPiece) is one token
however long, so a budget in tokens alone does not bound a payload's size."""


def bound_chars(
    passages: list[Passage], dropped: Sequence[Hit], max_chars: int | None
) -> tuple[list[Passage], list[Hit]]:
    """The passages, in order, while their characters stay within ``max_chars``; a passage
    past it is left out (its hits join ``dropped``), as the token budget skips one.

    >>> p = lambda start, end: Passage("a", start, end, 1, 1.0, (), (), "x" * 100)
    >>> [x.end for x in bound_chars([p(0, 60), p(60, 100), p(0, 10)], [], 75)[0]]
    [60, 10]
    """
    if max_chars is None or sum(p.end - p.start for p in passages) <= max_chars:
        return passages, list(dropped)
    kept, left, used = [], list(dropped), 0
    for p in passages:
        if used + p.end - p.start <= max_chars:
            kept.append(p)
            used += p.end - p.start
        else:
            left.extend(p.hits)
    return kept, left


def expand(
    expander: Expander[Hit, Passage, Packed],
    hits: Iterable[Hit],
    metadata_of: Callable[[list[Passage]], Mapping[str, Mapping[str, Any]]] | None,
    level: int,
    options: ExpandOptions,
) -> Payload:
    """The payload of ``hits`` (see :meth:`chunkforge.Index.expand`); ``metadata_of`` gives the
    passages' documents' metadata (None: the documents have none), ``level`` the tree level
    of the hits' ids (of the leaves ``spread`` reaches). The
    payload holds at most ``options.max_chars`` characters, and :data:`MAX_CHARS_PER_TOKEN` a
    token of ``options.budget_tokens`` (:func:`bound_chars`)."""
    o = options
    passages, dropped = expander.expand(hits, o, level)
    budget = None if o.budget_tokens is None else o.budget_tokens * MAX_CHARS_PER_TOKEN
    limits = [n for n in (o.max_chars, budget) if n is not None]
    passages, dropped = bound_chars(passages, dropped, min(limits) if limits else None)
    return Payload(passages, dropped, metadata_of(passages) if metadata_of is not None else {})


def check_floor(floor: float | None) -> float | None:
    """``floor`` as a float in [-1, 1] (a cosine), or None (no floor); else a ValueError (a
    TypeError for what is not a number) naming it.

    >>> check_floor(0.3), check_floor(None)
    (0.3, None)
    """
    if floor is None:
        return None
    if isinstance(floor, bool) or not isinstance(floor, (int, float)):
        raise TypeError(f"floor must be a number in [-1, 1] or None, not {floor!r}")
    if not (math.isfinite(floor) and -1 <= floor <= 1):
        raise ValueError(f"floor must be a cosine in [-1, 1], not {floor!r}")
    return float(floor)


def abstains(best: float | None, floor: float) -> bool:
    """Whether a query leaves its payload empty: the best cosine of the question with a hit
    leaf (None: there is no hit) is under ``floor``.

    >>> abstains(0.25, 0.3), abstains(0.31, 0.3), abstains(None, -1.0)
    (True, False, True)
    """
    return best is None or best < floor
