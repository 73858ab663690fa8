"""Hybrid ranking, one rule for the in-memory index and the store: a leaf scores
``w_dense * cos / best_cos + w_bm25 * bm25(its parent) / best_bm25`` over the candidates.

>>> import numpy as np
>>> order, fused = fuse(np.array([0.8, 0.4]), np.array([0.0, 6.0]), (1.0, 1.0), np.array([7, 3]))
>>> order.tolist(), fused.round(2).tolist()
([1, 0], [1.0, 1.5])
"""

from __future__ import annotations

import numpy as np

DENSE_POOL = 64
"""Nearest leaves taken as hybrid candidates (at least ``k``)."""
BM25_POOL = 16
"""Best BM25 parents whose leaves join the hybrid candidates."""


def fuse(
    cos: np.ndarray, lexical: np.ndarray, weights: tuple[float, float], tie: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(order, fused)``: the candidates' fused scores and their order, best first (ties by
    ``tie``, ascending). ``cos`` are the leaves' cosines, ``lexical`` their parents' BM25 scores;
    a term whose best score is not positive adds nothing."""
    w_dense, w_bm25 = weights
    top_cos = float(cos.max()) if len(cos) else 0.0
    top_bm25 = float(lexical.max()) if len(lexical) else 0.0
    zeros = np.zeros_like(cos, dtype=np.float64)
    fused = (w_dense * cos / top_cos if top_cos > 0 else zeros) + (
        w_bm25 * lexical / top_bm25 if top_bm25 > 0 else zeros
    )
    return np.lexsort((tie, -fused)), fused


def top_leaves(
    dense: dict[tuple[str, int], tuple[int, float]],
    bm25: dict[tuple[str, int], float],
    weights: tuple[float, float],
    k: int,
) -> tuple[list[tuple[tuple[str, int], float]], float]:
    """The store's ranking: the ``k`` best of the leaves ``dense`` (``(doc_id, leaf) ->
    (passage, cosine)``) by :func:`fuse` of their cosines and their parents' ``bm25`` scores
    (``(doc_id, passage) -> score``), best first, and the best cosine among them (0 for none).

    >>> top_leaves({("a", 0): (0, 0.8), ("b", 2): (1, 0.4)}, {("b", 1): 6.0}, (1.0, 1.0), 1)
    ([(('b', 2), 1.5)], 0.4)
    """
    keys = list(dense)
    if not keys:
        return [], 0.0
    cos = np.array([dense[key][1] for key in keys], np.float64)
    lexical = np.array([bm25.get((key[0], dense[key][0]), 0.0) for key in keys], np.float64)
    tie = np.empty(len(keys), np.int64)  # equal scores (leaves of equal text) by (doc_id, leaf)
    tie[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    order, fused = fuse(cos, lexical, weights, tie)
    top = order[:k]
    return [(keys[i], float(fused[i])) for i in top.tolist()], float(cos[top].max())


def pooled_with(
    dense: dict[tuple[str, int], tuple[int, float]], lexical: dict[tuple[str, int], tuple[int, float]]
) -> None:
    """Adds the leaves of the best BM25 parents to the nearest ones: a leaf both searches found
    keeps its nearest-search cosine."""
    for key, value in lexical.items():
        dense.setdefault(key, value)
