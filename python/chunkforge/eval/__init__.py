"""Evaluation of chunking for retrieval: metrics over evidence spans, labelled
datasets, and comparisons of chunking configurations (``chunkforge eval``).

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

>>> corpus = [Document("a", "Cats sleep. Dogs bark.")]
>>> measure = SpanMeasure(corpus)
>>> q = Query("q1", "Do cats sleep?", (Span("a", 0, 11),))
>>> s = score([q], [[Span("a", 0, 22)]], measure)
>>> round(float(s.recall[0]), 2), round(float(s.precision[0]), 2)
(1.0, 0.5)

Where things live: :mod:`~chunkforge.eval.datasets` (corpus and queries),
:mod:`~chunkforge.eval.metrics` (span metrics), :mod:`~chunkforge.eval.retrieval`
(budget cut, embedding cache), :mod:`~chunkforge.eval.configs` (chunker and
representation registries, TOML configs), :mod:`~chunkforge.eval.run`
(:func:`evaluate`), :mod:`~chunkforge.eval.report` (JSON, Markdown, plot); the
``chunkforge eval`` command is :mod:`chunkforge.cli.eval`.
"""

from __future__ import annotations

from .._search import EXACT_MAX, VectorSearch
from ..errors import DatasetError
from .configs import (
    CHUNKERS,
    REPRESENTATIONS,
    ChunkerFactory,
    Config,
    Representation,
    embed_texts,
    heading_representation,
    heading_texts,
    plain_representation,
    register_chunker,
    register_representation,
)
from .datasets import Document, Query, Span, load_corpus, load_queries
from .metrics import METRICS, Scores, SpanMeasure, score
from .report import markdown, plot, report
from .retrieval import Embed, EmbeddingCache, budget_cut, encoder_key
from .run import Result, evaluate

__all__ = [
    "CHUNKERS",
    "EXACT_MAX",
    "METRICS",
    "REPRESENTATIONS",
    "ChunkerFactory",
    "Config",
    "DatasetError",
    "Document",
    "Embed",
    "EmbeddingCache",
    "Query",
    "Result",
    "Representation",
    "Scores",
    "Span",
    "SpanMeasure",
    "VectorSearch",
    "budget_cut",
    "embed_texts",
    "encoder_key",
    "evaluate",
    "heading_representation",
    "heading_texts",
    "load_corpus",
    "load_queries",
    "markdown",
    "plain_representation",
    "plot",
    "register_chunker",
    "register_representation",
    "report",
    "score",
]
