"""Metrics over evidence spans: recall, precision, IoU and friends of retrieved spans.

Everything is measured on **evidence spans** ``(doc_id, start, end)`` in source
``str`` offsets, so any chunking (or any retrieved passage) can be scored
against the same labels. Sizes are counted in the tokens of one tokenizer (the
document is tokenized once; a token belongs to a span when its last character
does) or, with ``unit="chars"``, in characters. For a query with evidence E and
retrieved spans r1..rn (in rank order), following Chroma's "Evaluating Chunking
Strategies for Retrieval" (Smith & Troynikov, 2024):

- ``recall    = |E ∩ R| / |E|``, with ``R`` the union of the retrieved spans;
- ``precision = |E ∩ R| / Σ|ri|``: a token retrieved twice (overlapping or
  duplicated spans) counts twice in the denominator, once in the numerator;
- ``iou       = |E ∩ R| / (Σ|ri| + |E| - |E ∩ R|)``;
- ``precision_omega``: precision when exactly the chunks that hold evidence are
  retrieved (the best precision a chunking allows; needs ``candidates``);
- ``evidence_recall``: the share of evidence spans of which the retrieved spans
  cover at least ``coverage`` (default half); a query is ``found`` when all are;
- ``mrr`` and ``ndcg`` at the chunk level: a retrieved span is relevant when it
  holds evidence (a repeat of an earlier span gains nothing); nDCG's ideal
  ranks every chunk of ``candidates`` that holds evidence first (without
  candidates: as many relevant spans as evidence spans).

Overlapping evidence spans of a query are merged into E. Queries without
evidence (unanswerable) get NaN metrics and are left out of the means.

>>> from chunkforge.eval import Document, Query, Span
>>> corpus = [Document("a", "Cats sleep. Dogs bark.")]
>>> measure = SpanMeasure(corpus)
>>> q = Query("q1", "Do cats sleep?", (Span("a", 0, 11),))
>>> s = score([q], [[Span("a", 0, 22)]], measure)
>>> round(float(s.recall[0]), 2), round(float(s.precision[0]), 2)
(1.0, 0.5)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _native
from ..errors import ArgumentError
from ..tokenizer import as_tokenizer
from .datasets import Document, Query, Span

METRICS = ("recall", "precision", "iou", "precision_omega", "evidence_recall", "mrr", "ndcg")


class SpanMeasure:
    """Sizes spans of a corpus's documents in tokens (``unit="tokens"``, each document
    tokenized once by ``tokenizer``, default all-MiniLM-L6-v2's) or characters.

    >>> m = SpanMeasure([Document("a", "Hello, world!")])
    >>> m.size(Span("a", 0, 5)), SpanMeasure([Document("a", "Hello")], unit="chars").size(Span("a", 0, 5))
    (1, 5)
    """

    def __init__(self, corpus: Sequence[Document], unit: str = "tokens", tokenizer: Any = None) -> None:
        if unit not in ("tokens", "chars"):
            raise ArgumentError(f"must be 'tokens' or 'chars', not {unit!r}", param="unit")
        self.unit = unit
        self.index = {d.doc_id: i for i, d in enumerate(corpus)}
        self.lengths = [len(d.text) for d in corpus]
        self.token_ends: list[np.ndarray] | None = None
        if unit == "tokens":
            tok = as_tokenizer(tokenizer)
            self.token_ends = [np.ascontiguousarray(tok.encode_offsets(d.text).offsets[:, 1]) for d in corpus]

    def columns(
        self, groups: Sequence[Sequence[Span]], what: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(query, doc, start, end)`` int64 columns of per-query span lists."""
        rows = []
        for q, spans in enumerate(groups):
            for j, s in enumerate(spans):
                d = self.index.get(s.doc_id)
                if d is None:
                    raise ArgumentError(f"[{q}][{j}]: doc_id {s.doc_id!r} is not in the corpus", param=what)
                if not 0 <= s.start <= s.end <= self.lengths[d]:
                    raise ArgumentError(f"[{q}][{j}]: span ({s.start}, {s.end}) is not within {s.doc_id!r}", param=what)
                rows.append((q, d, s.start, s.end))
        arr = np.array(rows, np.int64).reshape(-1, 4)
        query, doc, start, end = (np.ascontiguousarray(arr[:, i]) for i in range(4))
        return query, doc, start, end

    def overlaps(self, evidence: Sequence[Sequence[Span]], retrieved: Sequence[Sequence[Span]]) -> list[np.ndarray]:
        """The native span arithmetic (``_native.span_overlaps``) on per-query span lists."""
        if len(evidence) != len(retrieved):
            raise ArgumentError(
                f"has {len(retrieved)} lists for {len(evidence)} evidence lists (one per query)", param="retrieved"
            )
        return _native.span_overlaps(
            len(evidence), self.columns(evidence, "evidence"), self.columns(retrieved, "retrieved"), self.token_ends
        )

    def size(self, span: Span) -> int:
        """The size of one span."""
        return int(self.overlaps([[span]], [[]])[1][0])


@dataclass
class Scores:
    """Per-query metrics (float arrays, NaN for unanswerable queries), with the
    retrieved context's size (``context``, in the measure's unit) and count (``n``)."""

    recall: np.ndarray
    precision: np.ndarray
    iou: np.ndarray
    precision_omega: np.ndarray
    evidence_recall: np.ndarray
    mrr: np.ndarray
    ndcg: np.ndarray
    found: np.ndarray
    context: np.ndarray
    n: np.ndarray

    def summary(self) -> dict[str, dict[str, float]]:
        """``{metric: {"mean", "std"}}`` over the answerable queries, plus the mean context size."""
        out = {m: _mean_std(getattr(self, m)) for m in METRICS}
        answerable = ~np.isnan(self.recall)
        out["found"] = _mean_std(self.found[answerable].astype(float))
        out["context"] = _mean_std(self.context.astype(float))
        return out

    def subset(self, mask: np.ndarray) -> Scores:
        """The scores of the queries selected by a boolean mask."""
        return Scores(**{f.name: getattr(self, f.name)[mask] for f in dataclasses.fields(self)})


def _mean_std(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return {"mean": math.nan, "std": math.nan}
    return {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0}


def score(
    queries: Sequence[Query],
    retrieved: Sequence[Sequence[Span]],
    measure: SpanMeasure,
    *,
    candidates: Sequence[Span] | None = None,
    coverage: float = 0.5,
) -> Scores:
    """Scores the ``retrieved`` spans (per query, in rank order) against each query's
    evidence; ``candidates`` (every chunk of the chunking) enables precision-Ω and the
    chunk-level ideal of nDCG. See the module docstring for the definitions.

    >>> corpus = [Document("a", "one two three four"), Document("b", "five six")]
    >>> q = Query("q", "?", (Span("a", 4, 13), Span("b", 0, 4)))
    >>> s = score([q], [[Span("a", 0, 7), Span("a", 0, 7)]], SpanMeasure(corpus, unit="chars"))
    >>> round(float(s.recall[0]), 4), round(float(s.precision[0]), 4), float(s.mrr[0])
    (0.2308, 0.2143, 1.0)
    """
    if not 0 < coverage <= 1:
        raise ArgumentError(f"must be in (0, 1], got {coverage}", param="coverage")
    evidence = [q.references for q in queries]
    inter, ev, ret, ev_size, ev_cov, _, rel = measure.overlaps(evidence, retrieved)
    if (ev_size == 0).any():
        qid, ref = [(q.id, r) for q in queries for r in q.references][int(np.flatnonzero(ev_size == 0)[0])]
        raise ArgumentError(f"{ref} holds no {measure.unit}", param="evidence", where=f"query {qid!r}")
    answerable = ev > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(answerable, inter / np.maximum(ev, 1), np.nan)
        precision = np.where(answerable, np.where(ret > 0, inter / np.maximum(ret, 1), 0.0), np.nan)
        iou = np.where(answerable, inter / np.maximum(ret + ev - inter, 1), np.nan)
    ev_found = ev_cov >= coverage * ev_size
    evidence_recall = np.full(len(queries), np.nan)
    mrr = np.full(len(queries), np.nan)
    ndcg = np.full(len(queries), np.nan)
    omega = np.full(len(queries), np.nan)
    ideal = [len(q.references) for q in queries]
    if candidates is not None:
        omega, ideal = _precision_omega(queries, candidates, measure)
    e = r = 0
    for q, qu in enumerate(queries):
        n_ev, n_ret = len(qu.references), len(retrieved[q])
        found, gains = ev_found[e : e + n_ev], rel[r : r + n_ret] > 0
        e, r = e + n_ev, r + n_ret
        if not answerable[q]:
            continue
        evidence_recall[q] = found.mean()
        seen: set[Span] = set()
        for i, span in enumerate(retrieved[q]):
            gains[i] = gains[i] and span not in seen
            seen.add(span)
        hits = np.flatnonzero(gains)
        mrr[q] = 1.0 / (hits[0] + 1) if len(hits) else 0.0
        discount = 1.0 / np.log2(np.arange(n_ret) + 2)
        best = discount[: min(ideal[q], n_ret)].sum()
        ndcg[q] = float(discount[hits].sum() / best) if best > 0 else 0.0
    found_all = np.array([bool(evidence_recall[q] == 1.0) for q in range(len(queries))])
    n = np.array([len(x) for x in retrieved], np.int64)
    return Scores(recall, precision, iou, omega, evidence_recall, mrr, ndcg, found_all, ret, n)


def _precision_omega(
    queries: Sequence[Query], candidates: Sequence[Span], measure: SpanMeasure
) -> tuple[np.ndarray, list[int]]:
    """Per query, precision-Ω and the number of candidates that hold evidence."""
    by_doc: dict[str, list[Span]] = {}
    for c in candidates:
        by_doc.setdefault(c.doc_id, []).append(c)
    evidence = [q.references for q in queries]
    pool = [[c for d in dict.fromkeys(r.doc_id for r in q.references) for c in by_doc.get(d, [])] for q in queries]
    rel = measure.overlaps(evidence, pool)[6]
    chosen, i = [], 0
    for spans in pool:
        chosen.append([s for s, x in zip(spans, rel[i : i + len(spans)]) if x > 0])
        i += len(spans)
    inter, ev, ret = measure.overlaps(evidence, chosen)[:3]
    omega = np.where(ev > 0, inter / np.maximum(ret, 1), np.nan)
    return omega, [len(c) for c in chosen]
