"""An :class:`~chunkforge.index.Index`'s search: the leaves nearest the question (the HNSW
graphs, or exactly from the int8 copy of the vectors when a filter leaves a few) and, hybrid,
the leaves of the parents BM25 ranks best, fused (:func:`~chunkforge.index.fusion.fuse`).
Every leaf's cosine is its int8 copy's, whichever search found it (so a store, which keeps
only the int8 copies beside its tables, scores as the index does without reading a vector).
:class:`Ranking` searches the :class:`~chunkforge.index.documents.Documents` it extends.

>>> from chunkforge.index import Index
>>> index = Index.build(["Cats purr. Dogs bark.", {"id": "b", "text": "Ferns like shade."}])
>>> [h.text for h in index.search("which animal barks?", k=2)]
['Dogs bark.', 'Cats purr.']
>>> [h.doc_id for h in index.search("plants", k=3, doc_id="b")]
['b']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._rwlock import reads
from .._search import EXACT_MAX, int8_cosines, normalized, top_k
from ..errors import ArgumentTypeError
from .documents import Documents
from .filters import Filter
from .fusion import BM25_POOL, DENSE_POOL, fuse
from .options import SearchOptions, spells_search_keywords
from .payload import Hit

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import SearchKeywords


class Ranking(Documents):
    """Search over an index's documents (see the module); ``hybrid`` and ``weights`` are the
    index's settings (:class:`~chunkforge.index.Index`)."""

    hybrid: bool
    weights: tuple[float, float]

    def _cosines(self, labels: np.ndarray | list[int], vector: np.ndarray) -> np.ndarray:
        """Cosines of the leaves ``labels`` with the unit ``vector``, from the int8 copy."""
        return int8_cosines(self._vectors[labels], self._scales[labels], vector)

    @spells_search_keywords
    @reads
    def search(self, query: str, k: int = 12, **keywords: Unpack[SearchKeywords]) -> list[Hit]:
        """The ``k`` best leaves for ``query``, best first; optionally only of the
        given documents or sources, or of sections whose heading path starts with
        ``heading_prefix``, or of documents whose metadata ``where`` accepts (``{field:
        value}``, or ``{field: [values]}`` for any of them; every field must match), and
        of those ``filter`` passes: every filter narrows (:mod:`chunkforge.index.filters`).
        ``hybrid`` overrides the index's setting.

        Dense only, a hit's ``score`` is its cosine. Hybrid, the candidates are the
        nearest leaves and the leaves of the parents BM25 ranks best, and a leaf scores
        ``w_dense * cos / best_cos + w_bm25 * bm25(its parent) / best_bm25``, so a leaf
        close to the question in a passage that shares its rare words comes first.

        >>> from chunkforge.index import Index
        >>> guide = "# Guide\\n\\nInstall it with pip. Then run it.\\n\\n# Notes\\n\\nInstall nothing else."
        >>> index = Index.build([{"id": "guide.md", "text": guide}])
        >>> [h.heading_path for h in index.search("install", k=3, heading_prefix=("Guide",))]
        [('Guide',), ('Guide',), ('Guide',)]
        """
        return self._search(query, SearchOptions.of(k, **keywords))[0]

    def _search(self, query: str, options: SearchOptions) -> tuple[list[Hit], np.ndarray | None]:
        """:meth:`search`'s hits, and the question's unit vector (None when nothing was searched)."""
        if not isinstance(query, str):
            raise ArgumentTypeError(f"must be a str, not {type(query).__name__}", param="query")
        k, passes, hybrid = options.k, options.filter, options.hybrid
        if self.leaf_count == 0 or passes.nothing:
            return [], None
        allowed = self._allowed(passes)
        vector = normalized(self.encoder.embed_query(query)[None, :])[0]  # a cosine whatever the encoder
        if not (self.hybrid if hybrid is None else hybrid):
            best = self._dense(vector, k, allowed)
        else:
            best = self._fused(query, vector, max(k, DENSE_POOL), allowed)[:k]
        return self._hits([label for label, _ in best], [score for _, score in best]), vector

    def _fused(self, query: str, vector: np.ndarray, pool: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """``(label, score)`` of the candidate leaves, best first: the ``pool`` nearest leaves
        and the leaves of the ``BM25_POOL`` best parents, each scored
        ``w_dense * cos / best cos + w_bm25 * bm25(parent) / best bm25``."""
        finish_dense = self._dense_started(vector, pool, allowed)  # helpers search while BM25 scores here
        try:
            bm25 = self._bm25.scores(query)
        finally:  # the helpers are done before the read lock is let go, even when BM25 raised
            dense = dict(finish_dense())
        if allowed is not None:  # parents of allowed leaves only (a parent lies in one section)
            bm25 = np.where(self._passage_mask(allowed), bm25, 0.0)
        top = np.argpartition(-bm25, BM25_POOL)[:BM25_POOL] if len(bm25) > BM25_POOL else np.arange(len(bm25))
        extra = [
            label
            for p in top[bm25[top] > 0].tolist()
            for label in self._passage_labels[p].tolist()
            if label not in dense and (allowed is None or allowed[label])
        ]
        if extra:
            dense.update(zip(extra, self._cosines(extra, vector).tolist()))
        if not dense:
            return []
        labels = np.fromiter(dense, np.int64, len(dense))
        cos = np.fromiter(dense.values(), np.float64, len(dense))
        order, fused = fuse(cos, bm25[self._label_passage[labels]], self.weights, labels)
        return list(zip(labels[order].tolist(), fused[order].tolist()))

    def _passage_mask(self, allowed: np.ndarray) -> np.ndarray:
        mask = np.zeros(self._bm25.size, bool)
        mask[self._label_passage[np.flatnonzero(allowed)]] = True
        return mask

    def _allowed(self, passes: Filter) -> np.ndarray | None:
        """A boolean mask over labels, or None for no filter."""
        if passes.everything:
            return None
        mask = np.zeros(len(self._label_slot), bool)
        ids = passes.doc_ids
        docs = (self._docs[self._slot_of[i]] for i in ids if i in self._slot_of) if ids is not None else self._docs
        prefix = passes.heading_prefix
        for doc in docs:
            if doc is None or not passes.admits(doc.doc_id, doc.metadata):
                continue
            if prefix is None:
                mask[doc.labels] = True
                continue
            mask[doc.labels[self._expander.leaves_under(self._slot_of[doc.doc_id], list(prefix))]] = True
        return mask

    def _dense(self, vector: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """``(label, cosine)`` of the ``k`` nearest leaves, best first (ties: the lower label),
        each cosine from the int8 copy (exact from it, when filtered to a few)."""
        return self._dense_started(vector, k, allowed)()

    def _dense_started(
        self, vector: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`_dense` as a function that finishes it: unfiltered, the graphs other than the
        first are searched on helper threads meanwhile (:meth:`Graph.start`)."""
        graph = self._graph
        if allowed is None:
            if graph is None:
                return list
            finish = graph.start(vector, k)
            return lambda: self._rescored(finish(), vector)
        labels = np.flatnonzero(allowed)
        if len(labels) == 0:
            return list
        if len(labels) <= EXACT_MAX:
            ids, sims = top_k(self._cosines(labels, vector), k)
            best = [(int(labels[i]), float(s)) for i, s in zip(ids, sims)]
            return lambda: best
        if graph is None:
            return list
        return lambda: self._rescored(graph.search(vector, k, lambda label: bool(allowed[label])), vector)

    def _rescored(self, found: list[tuple[int, float]], vector: np.ndarray) -> list[tuple[int, float]]:
        """The leaves a graph found (``(label, cosine)``), their cosines from the int8 copy, best
        first (ties: the lower label)."""
        if not found:
            return []
        labels = np.array([label for label, _ in found], np.int64)
        cos = self._cosines(labels, vector)
        order = np.lexsort((labels, -cos))
        return list(zip(labels[order].tolist(), cos[order].tolist()))
