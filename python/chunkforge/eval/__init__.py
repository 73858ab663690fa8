"""Evaluation of chunking for retrieval: metrics over evidence spans, labelled
datasets, and comparisons of chunking configurations (``chunkforge eval``).

Everything is measured on **evidence spans** ``(doc_id, start, end)`` in source ``str``
offsets, so any chunking (or any retrieved passage, or chunks with their ``doc_id``) is
scored against the same labels; the metrics (recall, precision, IoU, precision-Ω,
evidence recall, MRR, nDCG) are defined in :mod:`chunkforge.eval.metrics`.

>>> s = score([Query("q1", "Do cats sleep?", (Span("a", 0, 11),))], [[Span("a", 0, 22)]],
...           SpanMeasure([Document("a", "Cats sleep. Dogs bark.")]))
>>> float(s.recall[0]), float(s.precision[0])
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
    REPRESENTATIONS,
    Config,
    Representation,
    embed_texts,
    heading_representation,
    heading_texts,
    plain_representation,
    register_representation,
)
from .datasets import Document, Query, Span, load_corpus, load_queries
from .metrics import METRICS, Scores, SpanMeasure, score
from .report import markdown, plot, report
from .retrieval import Embed, EmbeddingCache, budget_cut, encoder_key
from .run import Result, evaluate, evaluate_index

__all__ = [
    "EXACT_MAX",
    "METRICS",
    "REPRESENTATIONS",
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
    "evaluate_index",
    "heading_representation",
    "heading_texts",
    "load_corpus",
    "load_queries",
    "markdown",
    "plain_representation",
    "plot",
    "register_representation",
    "report",
    "score",
]
