"""Reranking the expanded text (issue 41, item 3): the passages a query would send for
``factor`` times the budget, each scored on its own, their leaves packed again in that order
at the real budget (so the budget stays exact), for any index of the contract
(:class:`~chunkforge.index.contract.Retriever`).

Two scorers:

- :class:`LateLeafVectors`: each leaf's late-chunked pooled sum and token count (the document
  encoded once in its model segments, as :class:`~chunkforge.LateChunker` does). Mean pooling
  is linear, so a passage of whole leaves gets its exact late-chunked vector by adding its
  leaves' sums (and counts), with no model call at query time but the question's.
- :class:`~chunkforge.encoder.cross.CrossEncoder`: a cross-encoder ONNX graph a user supplies
  (converted from a local Hugging Face folder), one model call per (question, passage) pair.

Measured on the dev set by the defaults rule (``benches/retrieval_rerank.py``,
``benches/results/retrieval-rerank.md``): neither is a default; :func:`rerank_query` is the
opt-in.

>>> from chunkforge.index import Index
>>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot.\\n\\n# Dogs\\n\\nDogs bark."}])
>>> late = LateLeafVectors.build(index)
>>> payload = rerank_query(index, "do cats sleep?", late, budget_tokens=12)
>>> [p.text for p in payload.passages]
['# Cats\\n\\nCats purr. They sleep a lot.']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from .._recommended import RECOMMENDED
from ..chunkers.late import LateChunker
from ..errors import ArgumentError
from .options import ExpandOptions
from .payload import Passage, Payload

if TYPE_CHECKING:
    from ..encoder import Encoder
    from .contract import Retriever
    from .filters import Filter

RERANK_FACTOR = 1.5
"""The candidates' budget, in times the payload's: the rerank chooses among the passages the
query would send for 1.5 times the budget (tuned on the dev set's dev half)."""


class PassageScorer(Protocol):
    """Scores passages of a payload for a question (higher is better), one score each."""

    def score(self, question: str, passages: Sequence[Passage]) -> np.ndarray: ...


class LeafSums(NamedTuple):
    """A document's leaves in text order: ``str`` ``starts`` and ``ends``, float32 ``sums``
    ``(n, dim)`` of the late-chunked token vectors inside each, and int64 token ``counts``."""

    starts: np.ndarray
    ends: np.ndarray
    sums: np.ndarray
    counts: np.ndarray


class LateLeafVectors:
    """Each leaf's late-chunked pooled sum and token count, by document: what makes the exact
    late-chunked vector of any passage of whole leaves by addition (:meth:`passage_vector`).

    A leaf holds the tokens whose offsets lie inside its span (a span cutting inside tokens: the
    tokens it overlaps), as :meth:`chunkforge.LateChunker.embed_chunks` pools them; leaves are
    cut at token boundaries and only whitespace lies between them, so the tokens of a passage
    of whole leaves are exactly its leaves' tokens. Memory: one float32 vector and one count a
    leaf (1.5 KiB at 384 dimensions).

    >>> from chunkforge.index import Index
    >>> index = Index.build(["Lisbon is the capital of Portugal. The city lies on the Tagus."])
    >>> late = LateLeafVectors.build(index)
    >>> doc = index.doc_ids[0]
    >>> v = late.passage_vector(doc, 0, len(index.document(doc)))
    >>> w = LateChunker(None, index.encoder).embed_chunks(index.document(doc), [(0, len(index.document(doc)))])[0]
    >>> bool(np.allclose(v, w, atol=1e-5))
    True
    """

    def __init__(self, encoder: Encoder, segment_overlap: int = 32) -> None:
        self.encoder = encoder
        self._late = LateChunker(None, encoder, segment_overlap)
        self._docs: dict[str, LeafSums] = {}

    @classmethod
    def build(
        cls,
        index: Any,
        encoder: Encoder | None = None,
        *,
        doc_ids: Iterable[str] | None = None,
        segment_overlap: int = 32,
        batch_docs: int = 16,
    ) -> LateLeafVectors:
        """The leaves' sums of ``index``'s documents (``doc_ids``: of these only), encoded by
        ``encoder`` (default: the index's own), documents ``batch_docs`` at a time. ``index``
        is anything with ``doc_ids``, ``document(doc_id)`` and ``tree(doc_id)`` (the in-memory
        index, the store)."""
        made = cls(encoder if encoder is not None else index.encoder, segment_overlap)
        made.add(index, index.doc_ids if doc_ids is None else doc_ids, batch_docs=batch_docs)
        return made

    def add(self, index: Any, doc_ids: Iterable[str], *, batch_docs: int = 16) -> None:
        """Encodes ``doc_ids`` of ``index`` (again: a document's sums are replaced)."""
        ids = list(doc_ids)
        for at in range(0, len(ids), batch_docs):
            batch = ids[at : at + batch_docs]
            texts = [index.document(d) for d in batch]
            for doc_id, tokens in zip(batch, self._late.token_vectors(texts)):
                tree = index.tree(doc_id)
                leaves = tree.nodes[tree.leaves]
                self._docs[doc_id] = leaf_sums(tokens.vectors, tokens.offsets, leaves[:, 0], leaves[:, 1])

    def discard(self, doc_id: str) -> None:
        """Forgets a document (deleted from the index)."""
        self._docs.pop(doc_id, None)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    @property
    def nbytes(self) -> int:
        """Bytes of the sums, counts and offsets held."""
        return sum(sum(a.nbytes for a in d) for d in self._docs.values())

    def leaves(self, doc_id: str) -> LeafSums:
        """A document's leaves with their sums and counts (KeyError when not held)."""
        return self._docs[doc_id]

    def passage_sum(self, doc_id: str, start: int, end: int) -> tuple[np.ndarray, int]:
        """The float64 sum of the late-chunked token vectors of the leaves inside
        ``[start, end)``, and their token count (0 when it holds no whole leaf)."""
        d = self._docs[doc_id]
        lo, hi = int(np.searchsorted(d.starts, start)), int(np.searchsorted(d.ends, end, "right"))
        if lo >= hi:
            return np.zeros(d.sums.shape[1]), 0
        return d.sums[lo:hi].sum(0, dtype=np.float64), int(d.counts[lo:hi].sum())

    def passage_vector(self, doc_id: str, start: int, end: int) -> np.ndarray:
        """The late-chunked vector of the passage ``[start, end)`` of whole leaves, float32
        ``(dim,)``: the mean of its tokens' vectors, L2-normalized when the encoder normalizes,
        as late chunking the passage as one span gives it."""
        total, count = self.passage_sum(doc_id, start, end)
        if self.encoder.normalize:
            return (total / max(float(np.linalg.norm(total)), 1e-12 * max(count, 1))).astype(np.float32)
        return (total / max(count, 1)).astype(np.float32)

    def score(self, question: str, passages: Sequence[Passage], vector: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the question (its ``vector`` when the caller has it, else embedded) with
        each passage's late-chunked vector; -1 for a passage of no whole leaf or of a document
        not held."""
        q = self.encoder.embed_query(question) if vector is None else np.asarray(vector, np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        out = np.full(len(passages), -1.0, np.float32)
        for i, p in enumerate(passages):
            if p.doc_id not in self._docs:
                continue
            total, count = self.passage_sum(p.doc_id, p.start, p.end)
            if count:
                out[i] = float(total @ q) / max(float(np.linalg.norm(total)), 1e-12)
        return out

    def __repr__(self) -> str:
        leaves = sum(len(d.starts) for d in self._docs.values())
        return f"LateLeafVectors({len(self._docs)} documents, {leaves} leaves, {self.nbytes / 2**20:.1f} MiB)"


def leaf_sums(vectors: np.ndarray, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> LeafSums:
    """Each span's sum of the token ``vectors`` ``(t, dim)`` whose ``offsets`` ``(t, 2)`` lie
    inside it (else, a span cutting inside tokens, the tokens it overlaps), and their count:
    the tokens late chunking pools for it.

    >>> s = leaf_sums(np.eye(3, dtype=np.float32), np.array([[0, 2], [3, 5], [5, 7]]), np.array([0, 3]), np.array([2, 7]))
    >>> s.sums.tolist(), s.counts.tolist()
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], [1, 2])
    """
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    t_starts, t_ends = offsets[:, 0], offsets[:, 1]
    lo = np.searchsorted(t_starts, starts, "left")
    hi = np.searchsorted(t_ends, ends, "right")
    cut = lo >= hi  # no token inside: the tokens the span overlaps
    lo = np.where(cut, np.searchsorted(t_ends, starts, "right"), lo)
    hi = np.where(cut, np.searchsorted(t_starts, ends, "left"), hi)
    hi = np.maximum(hi, lo)
    total = np.zeros((len(vectors) + 1, vectors.shape[1]), np.float64)
    np.cumsum(vectors, axis=0, dtype=np.float64, out=total[1:])
    return LeafSums(starts, ends, (total[hi] - total[lo]).astype(np.float32), (hi - lo).astype(np.int64))


def rerank_query(
    index: Retriever,
    question: str,
    by: PassageScorer,
    k: int = RECOMMENDED["k"],
    *,
    factor: float = RERANK_FACTOR,
    filter: Filter | None = None,
    options: ExpandOptions | None = None,
    **given: Any,
) -> Payload:
    """``index.query(question, k, ...)`` with its passages reranked by ``by``: the passages the
    query sends for ``factor`` times ``budget_tokens`` (the candidates), each scored by
    ``by.score(question, passages)``, their hit leaves handed back to ``index.expand`` in that
    order (within a passage, in the query's order) at the real budget, with the same widening,
    so the payload keeps the budget exactly and no character twice. A passage's ``score`` is
    the best rerank score of the candidates it holds. ``given``: the query's filters
    (``doc_id``, ``source``, ``heading_prefix``, ``where``, ``hybrid``), ``floor`` and its
    expansion options (``budget_tokens`` default 1,000, ``spread`` 0.5 as the query's).

    Not adopted over the query's own order by the defaults rule: ``benches/results/retrieval-rerank.md``
    (replacing the hybrid order, the late-chunked vectors, which carry no BM25, are behind on the
    test half at 1,000 tokens; fused with it, behind nowhere but lower in mean on the dev half). A
    cross-encoder is there for corpora where it is better; measure it on yours.
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 1 <= factor <= 16:
        raise ArgumentError(f"must be a number in [1, 16], not {factor!r}", param="factor")
    search = {
        key: given.pop(key)
        for key in ("doc_id", "source", "heading_prefix", "where", "hybrid", "floor")
        if key in given
    }
    chosen = ExpandOptions.recommended(options, **given)
    budget = chosen.budget_tokens
    wide = dataclasses.replace(chosen, budget_tokens=None if budget is None else int(budget * factor))
    candidates: Payload = index.query(question, k, filter=filter, options=wide, **search)
    if candidates.abstained or not candidates.passages:
        return candidates
    scores = np.asarray(by.score(question, candidates.passages), np.float64)
    if scores.shape != (len(candidates.passages),):
        raise ValueError(f"the scorer gave {scores.shape} scores for {len(candidates.passages)} passages")
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    spans: list[tuple[str, int, int, float]] = []
    for i in order:
        hits = sorted(candidates.passages[i].hits, key=lambda h: -h.score)
        spans += [(h.doc_id, h.start, h.end, 0.0) for h in hits]
    seen: set[tuple[str, int, int]] = set()
    ranked: list[tuple[str, int, int, float]] = []
    for doc_id, start, end, _ in spans:
        if (doc_id, start, end) not in seen:
            seen.add((doc_id, start, end))
            ranked.append((doc_id, start, end, float(len(spans) - len(ranked))))
    packed: Payload = index.expand(ranked, dataclasses.replace(chosen, spread=None), filter=filter)
    best = {(c.doc_id, c.start, c.end): float(s) for c, s in zip(candidates.passages, scores)}
    passages = [
        p._replace(
            score=max(
                (s for (d, a, b), s in best.items() if d == p.doc_id and a < p.end and p.start < b), default=p.score
            )
        )
        for p in packed.passages
    ]
    return packed._replace(passages=passages)
