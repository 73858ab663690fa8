"""One evaluation: chunk a corpus, embed, retrieve for every query, score (:func:`evaluate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks import check_int
from .._search import EXACT_MAX, VectorSearch
from ..errors import ArgumentError
from .configs import REPRESENTATIONS, Representation, _lookup
from .datasets import Document, Query, Span
from .metrics import Scores, SpanMeasure, score
from .retrieval import EmbeddingCache, budget_cut

if TYPE_CHECKING:
    from ..encoder import Encoder


@dataclass
class Result:
    """One configuration's evaluation: chunk statistics (``truncated``: texts the
    representation embedded that exceeded the encoder's window), per-query scores at ``k``
    (``at_k``) and at the token ``budget`` (``at_budget``, None without a budget), and
    the retrieved spans with their similarities (``ranked``: per query, budget depth)."""

    name: str
    chunks: int
    mean_chunk_tokens: float
    truncated: int
    at_k: Scores
    at_budget: Scores | None
    ranked: list[list[tuple[Span, float, int]]]
    top_score: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)


def evaluate(
    corpus: Sequence[Document],
    queries: Sequence[Query],
    chunker: Any,
    encoder: Encoder,
    *,
    representation: str | Representation = "plain",
    representation_params: Mapping[str, Any] | None = None,
    k: int = 5,
    budget_tokens: int | None = 1000,
    pack: str = "skip",
    measure: SpanMeasure | None = None,
    coverage: float = 0.5,
    cache: EmbeddingCache | None = None,
    exact_max: int = EXACT_MAX,
    name: str = "config",
) -> Result:
    """Chunks ``corpus`` with ``chunker`` (anything with ``chunk_batch``), embeds the chunks
    through ``representation`` with ``encoder`` (cached when ``cache`` is given), retrieves for
    every query the top ``k`` chunks and the chunks that fit ``budget_tokens`` tokens (their
    ``token_count``, in rank order), and scores both against the evidence.

    >>> from chunkforge import Encoder, RecursiveChunker
    >>> from chunkforge.eval.datasets import load_corpus, load_queries
    >>> docs = load_corpus("tests/data/eval/corpus.jsonl")
    >>> qs = load_queries("tests/data/eval/queries.jsonl", docs)
    >>> r = evaluate(docs, qs, RecursiveChunker(max_tokens=254), Encoder.default())
    >>> 0 < r.at_k.summary()["recall"]["mean"] <= 1
    True
    """
    budget = budget_tokens
    check_int("k", k, 1)  # an ArgumentError (a ValueError, as evaluate's bad values have always been)
    if budget is not None:
        check_int("budget_tokens", budget, 1)
    represent = (
        _lookup(REPRESENTATIONS, representation, "representation")
        if isinstance(representation, str)
        else representation
    )
    measure = measure or SpanMeasure(corpus)
    per_doc = chunker.chunk_batch([d.text for d in corpus])
    spans = [Span(d.doc_id, c.start, c.end) for d, cs in zip(corpus, per_doc) for c in cs]
    if not spans:
        raise ArgumentError("produced no chunks", param="chunker")
    tokens = np.array([c.token_count for cs in per_doc for c in cs], np.int64)

    specials = encoder.tokenizer.special_token_count
    truncated = 0

    def embed(texts: Sequence[str]) -> np.ndarray:
        nonlocal truncated
        truncated += int((encoder.tokenizer.count_batch(texts) + specials > encoder.max_length).sum())
        return cache.embed(encoder, texts) if cache is not None else encoder.embed(texts)

    vectors = represent(corpus, per_doc, encoder, embed, **dict(representation_params or {}))
    if vectors.shape[0] != len(spans):
        raise ArgumentError(f"gave {vectors.shape[0]} vectors for {len(spans)} chunks", param="representation")
    chunks_truncated = truncated
    depth = k if budget is None else max(k, budget // max(1, int(tokens.min())) + 1)
    ids, sims = VectorSearch(vectors, exact_max).search(embed([q.query for q in queries]), depth)
    ranked = [[(spans[i], float(s), int(tokens[i])) for i, s in zip(row, srow)] for row, srow in zip(ids, sims)]
    at_k = score(queries, [[s for s, _, _ in r[:k]] for r in ranked], measure, candidates=spans, coverage=coverage)
    at_budget = None
    if budget is not None:
        cut = [[r[i][0] for i in budget_cut([n for _, _, n in r], budget, pack)] for r in ranked]
        at_budget = score(queries, cut, measure, candidates=spans, coverage=coverage)
    settings = {
        "k": k,
        "budget": budget,
        "pack": pack,
        "unit": measure.unit,
        "coverage": coverage,
        "exact_search": len(spans) <= exact_max,
    }
    return Result(
        name,
        len(spans),
        float(tokens.mean()),
        chunks_truncated,
        at_k,
        at_budget,
        ranked,
        sims[:, 0].astype(float),
        settings,
    )


def evaluate_index(
    corpus: Sequence[Document],
    queries: Sequence[Query],
    encoder: Encoder,
    *,
    index_options: Mapping[str, Any] | None = None,
    query_options: Mapping[str, Any] | None = None,
    k: int = 5,
    budget_tokens: int | None = 1000,
    pack: str = "skip",
    measure: SpanMeasure | None = None,
    coverage: float = 0.5,
    name: str = "index",
) -> Result:
    """Scores a retrieval policy, :meth:`chunkforge.Index.query`, on the questions and
    measures :func:`evaluate` scores chunker configs on: an index of ``corpus``
    (``index_options`` as for :class:`~chunkforge.Index`) answers every query with its
    passages (``query_options`` as for ``Index.query``: ``window_tokens``, ``parent``,
    ``auto_merge``, ``order``, ``trim``, ``k``, ...). At ``k``: the passages of the top ``k``
    hits, no budget; at the budget: ``Index.query`` with ``budget_tokens`` and ``pack``
    (its ``k``: the option's, else the recommended 100 hits). ``chunks`` are the leaves.

    >>> from chunkforge import Encoder
    >>> from chunkforge.eval.datasets import load_corpus, load_queries
    >>> docs = load_corpus("tests/data/eval/corpus.jsonl")
    >>> qs = load_queries("tests/data/eval/queries.jsonl", docs)
    >>> r = evaluate_index(docs, qs, Encoder.default(), query_options={"window_tokens": 120})
    >>> 0 < r.at_budget.summary()["recall"]["mean"] <= 1
    True
    """
    from .._recommended import RECOMMENDED
    from ..index import Index

    check_int("k", k, 1)
    if budget_tokens is not None:
        check_int("budget_tokens", budget_tokens, 1)
    options = dict(query_options or {})
    depth = options.pop("k", RECOMMENDED["k"])
    for reserved in ("budget_tokens", "pack"):
        if reserved in options:
            raise ArgumentError(
                f"[query] {reserved}: set by the evaluation (--budget-tokens, --pack), not per policy",
                param="query_options",
                aside=True,
            )
    measure = measure or SpanMeasure(corpus)
    index = Index(encoder, **dict(index_options or {}))
    index.add([{"id": d.doc_id, "text": d.text} for d in corpus])
    leaves = index.leaves()
    if not leaves:
        raise ArgumentError("gave the index no leaves", param="corpus")
    leaf_spans = [Span(h.doc_id, h.start, h.end) for h in leaves]
    tokens = encoder.tokenizer.count_batch([h.text for h in leaves])

    def passages(question: str, hits: int, budget: int | None) -> list[tuple[Span, float, int]]:
        payload = index.query(question, k=hits, budget_tokens=budget, pack=pack, **options)
        return [(Span(p.doc_id, p.start, p.end), float(p.score), int(p.token_count)) for p in payload.passages]

    top = [passages(q.query, k, None) for q in queries]
    at_k = score(queries, [[s for s, _, _ in r] for r in top], measure, candidates=leaf_spans, coverage=coverage)
    at_budget, ranked = None, top
    if budget_tokens is not None:
        ranked = [passages(q.query, depth, budget_tokens) for q in queries]
        cut = [[s for s, _, _ in r] for r in ranked]
        at_budget = score(queries, cut, measure, candidates=leaf_spans, coverage=coverage)
    settings = {
        "k": k,
        "budget": budget_tokens,
        "pack": pack,
        "unit": measure.unit,
        "coverage": coverage,
        "exact_search": False,
        "policy": {"index": dict(index_options or {}), "query": {"k": depth, **options}},
    }
    top_score = np.array([max((s for _, s, _ in r), default=0.0) for r in top], float)
    specials = encoder.tokenizer.special_token_count
    return Result(
        name,
        len(leaves),
        float(tokens.mean()),
        int((tokens + specials > encoder.max_length).sum()),
        at_k,
        at_budget,
        ranked,
        top_score,
        settings,
    )
