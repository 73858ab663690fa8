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
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import math
import os
import sqlite3
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _native
from .chunk import Chunk
from .chunkers import MarkdownChunker, RecursiveChunker, SentenceChunker, TokenChunker
from ._io import read_records, record_doc_id, record_metadata, record_text
from .tokenizer import Tokenizer, as_tokenizer

if TYPE_CHECKING:
    from .encoder import Encoder

EXACT_MAX = 20_000
"""Above this many chunks, retrieval uses hnswlib instead of exact numpy search."""
METRICS = ("recall", "precision", "iou", "precision_omega", "evidence_recall", "mrr", "ndcg")


class DatasetError(ValueError):
    """A bad corpus, queries or config file; the message names the file (and line)."""


# ---------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Document:
    """A corpus document: ``{"doc_id", "text", ...metadata}`` in JSONL."""

    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class Span:
    """``text[start:end]`` of document ``doc_id`` (``str`` offsets): evidence or a retrieved passage."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class Query:
    """A labelled question: its evidence ``references`` (empty: no answer in the corpus)
    and an optional ``type`` for the per-slice breakdowns."""

    id: str
    query: str
    references: tuple[Span, ...]
    type: str | None = None


def _records(path: str | os.PathLike[str]) -> Iterable[tuple[str, dict]]:
    """``(where, object)`` for each record of a JSONL(.gz) or Parquet file (the one reader)."""
    return ((where, record) for where, record, _ in read_records(str(path), error=DatasetError))


def _field(where: str, record: dict, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if name not in record:
        if default is ...:
            raise DatasetError(f'{where}: missing "{name}"')
        return default
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DatasetError(f'{where}: "{name}" must be {names}, not {type(value).__name__}')
    return value


def load_corpus(path: str | os.PathLike[str]) -> list[Document]:
    """Documents of a JSONL(.gz) or Parquet corpus, one ``{"doc_id", "text", ...}`` a record
    (the id rule of every command: ``"doc_id"``, else ``"id"``); other fields are metadata
    (``source`` is a slice).

    >>> docs = load_corpus("tests/data/eval/corpus.jsonl")
    >>> docs[0].doc_id
    'linux-doc-6.1/locking/mutex-design.rst'
    """
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for where, record in _records(path):
        doc_id = str(record_doc_id(where, record, error=DatasetError))
        text = record_text(where, record, error=DatasetError)
        if doc_id in seen:
            raise DatasetError(f"{where}: doc_id {doc_id!r} repeats {seen[doc_id]}")
        seen[doc_id] = where
        meta = record_metadata(record)
        docs.append(Document(doc_id, text, meta))
    if not docs:
        raise DatasetError(f"{path}: no documents")
    return docs


def load_queries(path: str | os.PathLike[str], corpus: Sequence[Document]) -> list[Query]:
    """Queries of a JSONL file, one ``{"query", "references": [{"doc_id", "start", "end",
    "text"?}], "type"?, "id"?}`` a line, checked against ``corpus``: every reference
    names a document, lies within its text, and equals ``"text"`` when that is given.

    >>> queries = load_queries("tests/data/eval/queries.jsonl", load_corpus("tests/data/eval/corpus.jsonl"))
    >>> queries[0].references[0].doc_id
    'linux-doc-6.1/locking/mutex-design.rst'
    """
    texts = {d.doc_id: d.text for d in corpus}
    queries: list[Query] = []
    ids: dict[str, str] = {}
    for where, record in _records(path):
        text = _field(where, record, "query", str)
        if not text.strip():
            raise DatasetError(f'{where}: "query" is empty')
        qid = str(_field(where, record, "id", (str, int), f"q{len(queries) + 1}"))
        if qid in ids:
            raise DatasetError(f"{where}: id {qid!r} repeats {ids[qid]}")
        ids[qid] = where
        qtype = _field(where, record, "type", str, None)
        refs = []
        for i, ref in enumerate(_field(where, record, "references", list)):
            at = f"{where}: references[{i}]"
            if not isinstance(ref, dict):
                raise DatasetError(f"{at} must be an object, not {type(ref).__name__}")
            doc_id = str(_field(at, ref, "doc_id", (str, int)))
            start, end = _field(at, ref, "start", int), _field(at, ref, "end", int)
            if doc_id not in texts:
                raise DatasetError(f"{at}: doc_id {doc_id!r} is not in the corpus")
            if not 0 <= start < end <= len(texts[doc_id]):
                raise DatasetError(f"{at}: span ({start}, {end}) is not within {doc_id!r} (0..{len(texts[doc_id])})")
            quoted = _field(at, ref, "text", str, None)
            if quoted is not None and texts[doc_id][start:end] != quoted:
                raise DatasetError(f'{at}: "text" differs from the document at ({start}, {end})')
            refs.append(Span(doc_id, start, end))
        queries.append(Query(qid, text, tuple(refs), qtype))
    if not queries:
        raise DatasetError(f"{path}: no queries")
    return queries


# ---------------------------------------------------------------- metrics


class SpanMeasure:
    """Sizes spans of a corpus's documents in tokens (``unit="tokens"``, each document
    tokenized once by ``tokenizer``, default all-MiniLM-L6-v2's) or characters.

    >>> m = SpanMeasure([Document("a", "Hello, world!")])
    >>> m.size(Span("a", 0, 5)), SpanMeasure([Document("a", "Hello")], unit="chars").size(Span("a", 0, 5))
    (1, 5)
    """

    def __init__(self, corpus: Sequence[Document], unit: str = "tokens", tokenizer: Any = None) -> None:
        if unit not in ("tokens", "chars"):
            raise ValueError(f"unit must be 'tokens' or 'chars', not {unit!r}")
        self.unit = unit
        self.index = {d.doc_id: i for i, d in enumerate(corpus)}
        self.lengths = [len(d.text) for d in corpus]
        self.token_ends: list[np.ndarray] | None = None
        if unit == "tokens":
            tok = as_tokenizer(tokenizer)
            self.token_ends = [np.ascontiguousarray(tok.encode_offsets(d.text).offsets[:, 1]) for d in corpus]

    def columns(self, groups: Sequence[Sequence[Span]], what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                            np.ndarray]:
        """``(query, doc, start, end)`` int64 columns of per-query span lists."""
        rows = []
        for q, spans in enumerate(groups):
            for j, s in enumerate(spans):
                d = self.index.get(s.doc_id)
                if d is None:
                    raise ValueError(f"{what}[{q}][{j}]: doc_id {s.doc_id!r} is not in the corpus")
                if not 0 <= s.start <= s.end <= self.lengths[d]:
                    raise ValueError(f"{what}[{q}][{j}]: span ({s.start}, {s.end}) is not within {s.doc_id!r}")
                rows.append((q, d, s.start, s.end))
        arr = np.array(rows, np.int64).reshape(-1, 4)
        query, doc, start, end = (np.ascontiguousarray(arr[:, i]) for i in range(4))
        return query, doc, start, end

    def overlaps(self, evidence: Sequence[Sequence[Span]], retrieved: Sequence[Sequence[Span]]) -> list[np.ndarray]:
        """The native span arithmetic (``_native.span_overlaps``) on per-query span lists."""
        if len(evidence) != len(retrieved):
            raise ValueError(f"got {len(evidence)} evidence lists but {len(retrieved)} retrieved lists")
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
        raise ValueError(f"coverage must be in (0, 1], got {coverage}")
    evidence = [q.references for q in queries]
    inter, ev, ret, ev_size, ev_cov, _, rel = measure.overlaps(evidence, retrieved)
    if (ev_size == 0).any():
        qid, ref = [(q.id, r) for q in queries for r in q.references][int(np.flatnonzero(ev_size == 0)[0])]
        raise ValueError(f"query {qid!r}: evidence {ref} holds no {measure.unit}")
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
        found, gains = ev_found[e:e + n_ev], rel[r:r + n_ret] > 0
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
        chosen.append([s for s, x in zip(spans, rel[i:i + len(spans)]) if x > 0])
        i += len(spans)
    inter, ev, ret = measure.overlaps(evidence, chosen)[:3]
    omega = np.where(ev > 0, inter / np.maximum(ret, 1), np.nan)
    return omega, [len(c) for c in chosen]


# ---------------------------------------------------------------- retrieval


def budget_cut(token_counts: Sequence[int], budget: int, pack: str = "stop") -> list[int]:
    """Positions of the ranked chunks that fit a context of ``budget`` tokens:
    ``pack="stop"`` stops at the first chunk that does not fit, ``"skip"`` skips it
    and lets smaller later ones fill the budget.

    >>> budget_cut([400, 500, 300, 50], 1000), budget_cut([400, 700, 300, 50], 1000, "skip")
    ([0, 1], [0, 2, 3])
    """
    if pack not in ("stop", "skip"):
        raise ValueError(f"pack must be 'stop' or 'skip', not {pack!r}")
    taken, used = [], 0
    for i, n in enumerate(token_counts):
        if used + n > budget:
            if pack == "stop":
                break
            continue
        taken.append(i)
        used += n
    return taken


class VectorSearch:
    """Cosine search over ``(n, d)`` vectors: exact (numpy) up to ``exact_max`` rows,
    hnswlib (M=16, ef_construction=200, ef >= 2 x depth) beyond.

    >>> VectorSearch(np.eye(3, dtype=np.float32)).search(np.eye(3, dtype=np.float32)[[1]], 2)[0].tolist()
    [[1, 0]]
    """

    def __init__(self, vectors: np.ndarray, exact_max: int = EXACT_MAX, threads: int | None = None) -> None:
        self.vectors = _normalized(vectors)
        self.exact = len(vectors) <= exact_max
        self.threads = threads or os.cpu_count() or 1
        if not self.exact:
            try:
                import hnswlib
            except ImportError as exc:
                raise ImportError(f"{len(vectors)} chunks need hnswlib: pip install 'chunkforge[eval]' "
                                  "(or raise exact_max)") from exc
            self.index = hnswlib.Index(space="ip", dim=vectors.shape[1])
            self.index.init_index(max_elements=len(vectors), ef_construction=200, M=16, random_seed=0)
            self.index.add_items(self.vectors, np.arange(len(vectors)), num_threads=self.threads)

    def search(self, queries: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, similarities)``, ``(q, depth)`` each, best first (depth capped at n)."""
        depth = min(depth, len(self.vectors))
        queries = _normalized(queries)
        if self.exact:
            sims = queries @ self.vectors.T
            ids = np.argsort(-sims, axis=1, kind="stable")[:, :depth]
            return ids, np.take_along_axis(sims, ids, axis=1)
        self.index.set_ef(max(2 * depth, 64))
        ids, dist = self.index.knn_query(queries, k=depth, num_threads=self.threads)
        return ids.astype(np.int64), 1.0 - dist


def _normalized(v: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(v, np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


# ---------------------------------------------------------------- embeddings


def encoder_key(encoder: Encoder) -> str:
    """What identifies an encoder's vectors: its graph file (path, size, mtime) and settings."""
    st = encoder.graph.stat()
    parts = [str(encoder.graph.resolve()), st.st_size, st.st_mtime_ns, encoder.max_length, encoder.pooling,
             encoder.normalize]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


class EmbeddingCache:
    """Vectors on disk (SQLite) keyed by (encoder, text hash): a sweep of configs
    embeds each distinct text once. ``embedded`` and ``reused`` count texts.

    >>> cache = EmbeddingCache("embeddings.sqlite")  # doctest: +SKIP
    >>> vectors = cache.embed(Encoder.default(), ["a chunk", "another"])  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash BLOB, vector BLOB, "
                             "PRIMARY KEY (model, hash)) WITHOUT ROWID")
        except (OSError, sqlite3.Error) as exc:
            raise DatasetError(f"embedding cache {self.path}: {exc}") from exc
        self.embedded = self.reused = 0

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.embed(texts)``, with every text seen before read from the cache."""
        model = encoder_key(encoder)
        hashes = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            batch = unique[i:i + 500]
            rows = self._db.execute(f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN "
                                    f"({','.join('?' * len(batch))})", [model, *batch])
            found.update((h, np.frombuffer(v, np.float32)) for h, v in rows)
        missing = [h for h in unique if h not in found]
        if missing:
            first = {h: i for i, h in reversed(list(enumerate(hashes)))}
            vectors = encoder.embed([texts[first[h]] for h in missing])
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                     [(model, h, v.tobytes()) for h, v in zip(missing, vectors)])
            found.update(zip(missing, vectors))
        self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        return np.stack([found[h] for h in hashes]) if texts else np.zeros((0, encoder.dim), np.float32)

    def close(self) -> None:
        self._db.close()


Embed = Callable[[Sequence[str]], np.ndarray]


# ---------------------------------------------------------------- representations and chunkers

Representation = Callable[..., np.ndarray]
"""``fn(docs, chunks, encoder, embed, **params) -> (n, dim) float32``: the vectors of all
chunks (document order, then chunk order); ``embed`` is the cached text embedder."""

REPRESENTATIONS: dict[str, Representation] = {}
ChunkerFactory = Callable[..., Any]
"""``factory(tokenizer, **params)`` -> an object with ``chunk_batch(texts) -> list[list[Chunk]]``."""
CHUNKERS: dict[str, ChunkerFactory] = {
    "token": TokenChunker,
    "recursive": RecursiveChunker,
    "sentence": SentenceChunker,
    "markdown": MarkdownChunker,
}


def register_representation(name: str, fn: Representation) -> None:
    """Makes ``[representation] type = name`` available to configs (e.g. ``"late"``); a config
    may also name any function as ``type = "package.module:function"``.

    >>> register_representation("plain-again", REPRESENTATIONS["plain"])
    """
    REPRESENTATIONS[name] = fn


def register_chunker(name: str, factory: ChunkerFactory) -> None:
    """Makes ``[chunker] type = name`` available to configs (e.g. ``"semantic"``); a config
    may also name any factory as ``type = "package.module:Class"``.

    >>> register_chunker("recursive-again", RecursiveChunker)
    """
    CHUNKERS[name] = factory


def _lookup(registry: Mapping[str, Any], name: Any, what: str) -> Any:
    """``registry[name]``, or for ``"package.module:attribute"`` that attribute (imported)."""
    if isinstance(name, str) and name in registry:
        return registry[name]
    if isinstance(name, str) and ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"[{what}] type {name!r} cannot be imported: {exc}") from exc
    raise ValueError(f"[{what}] type must be one of {', '.join(registry)} or 'module:attribute', not {name!r}")


def embed_texts(docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]]) -> list[str]:
    """The chunks' texts, flattened in document order."""
    return [c.text for cs in chunks for c in cs]


def plain_representation(docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], encoder: Encoder,
                         embed: Embed) -> np.ndarray:
    """Each chunk embedded as its own text."""
    return embed(embed_texts(docs, chunks))


def heading_texts(docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], syntax: str = "auto",
                  template: str = "{prefix}\n\n{text}") -> list[str]:
    """Per chunk ``template`` filled with ``prefix`` (the document's ``title`` metadata and
    the chunk's heading path, joined by `` > ``) and ``text``; a chunk without either keeps
    its text. The heading path is the chunk's own, else that of the sections enclosing its
    start, parsed as ``syntax`` (``auto``: rst for ``.rst``/``.rst.txt``, asciidoc for
    ``.txt``/``.adoc``, else markdown).

    >>> doc = Document("a.md", "# Setup\\n\\nRun it.", {"title": "Guide"})
    >>> heading_texts([doc], [[Chunk("Run it.", 10, 17, 3, 0)]])
    ['Guide > Setup\\n\\nRun it.']
    """
    out = []
    for doc, cs in zip(docs, chunks):
        outline = None
        title = str(doc.metadata.get("title", ""))
        for c in cs:
            path = c.heading_path
            if not path:
                if outline is None:
                    outline = _outline(doc, syntax)
                i = bisect_right(outline[0], c.start) - 1
                path = outline[1][i] if i >= 0 else ()
            prefix = " > ".join(p for p in (title, *path) if p)
            out.append(template.format(prefix=prefix, text=c.text) if prefix else c.text)
    return out


def _outline(doc: Document, syntax: str) -> tuple[list[int], list[tuple[str, ...]]]:
    if syntax == "auto":
        name = doc.doc_id.lower()
        syntax = "rst" if name.endswith((".rst", ".rst.txt")) else "asciidoc" if name.endswith((".txt", ".adoc")) \
            else "markdown"
    sections = MarkdownChunker(max_tokens=1 << 30, syntax=syntax).chunk(doc.text)
    return [c.start for c in sections], [c.heading_path for c in sections]


def heading_representation(docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], encoder: Encoder,
                           embed: Embed, **params: Any) -> np.ndarray:
    """Each chunk embedded with its heading path before its text (see :func:`heading_texts`)."""
    return embed(heading_texts(docs, chunks, **params))


REPRESENTATIONS.update(plain=plain_representation, heading=heading_representation)


# ---------------------------------------------------------------- configs


@dataclass
class Config:
    """One configuration to compare: ``[chunker]`` (``type`` and its parameters),
    ``[representation]`` (``type`` and parameters) and ``[encoder]`` (``model``:
    ``default`` or a model folder; ``variant``; other Encoder options).

    >>> Config.load("tests/data/eval/configs/recursive-256.toml").chunker
    {'type': 'recursive', 'max_tokens': 256}
    """

    name: str
    chunker: dict[str, Any]
    representation: dict[str, Any] = field(default_factory=lambda: {"type": "plain"})
    encoder: dict[str, Any] = field(default_factory=lambda: {"model": "default"})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Config:
        """Reads a TOML config; errors name the file and the bad key."""
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as exc:
            raise DatasetError(f"cannot read config {path}: {exc.strerror or exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise DatasetError(f"config {path}: not valid TOML ({exc})") from exc
        unknown = set(data) - {"name", "chunker", "representation", "encoder"}
        if unknown:
            raise DatasetError(f"config {path}: unknown key {min(unknown)!r} "
                               "(expected name, chunker, representation, encoder)")
        tables = {"representation": {"type": "plain"}, "encoder": {"model": "default"}}
        for key in ("chunker", "representation", "encoder"):
            if key not in data and key in tables:
                continue
            if not isinstance(data.get(key), dict):
                raise DatasetError(f"config {path}: [{key}] is missing or not a table")
            tables[key] = dict(data[key])
        tables["representation"].setdefault("type", "plain")
        for key, registry in (("chunker", CHUNKERS), ("representation", REPRESENTATIONS)):
            try:
                _lookup(registry, tables[key].get("type"), key)
            except ValueError as exc:
                raise DatasetError(f"config {path}: {exc}") from exc
        name = data.get("name", Path(path).name.removesuffix(".toml"))
        return cls(str(name), **tables)

    def make_chunker(self, tokenizer: Tokenizer) -> Any:
        """The configured chunker, counting with ``tokenizer``."""
        params = {k: v for k, v in self.chunker.items() if k != "type"}
        try:
            return _lookup(CHUNKERS, self.chunker["type"], "chunker")(tokenizer, **params)
        except TypeError as exc:
            raise DatasetError(f"config {self.name}: [chunker] {exc}") from exc

    def make_encoder(self) -> Encoder:
        """The configured encoder (texts over its ``max_length`` are truncated quietly)."""
        from .encoder import Encoder

        options = {k: v for k, v in self.encoder.items() if k not in ("model", "variant")}
        options.setdefault("on_overflow", "truncate")
        model = self.encoder.get("model", "default")
        if model == "default":
            return Encoder.default(self.encoder.get("variant", "optimized"), **options)
        return Encoder.from_pretrained(model, self.encoder.get("variant", "optimized"), **options)


# ---------------------------------------------------------------- evaluate


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
    budget: int | None = 1000,
    pack: str = "stop",
    measure: SpanMeasure | None = None,
    coverage: float = 0.5,
    cache: EmbeddingCache | None = None,
    exact_max: int = EXACT_MAX,
    name: str = "config",
) -> Result:
    """Chunks ``corpus`` with ``chunker`` (anything with ``chunk_batch``), embeds the chunks
    through ``representation`` with ``encoder`` (cached when ``cache`` is given), retrieves for
    every query the top ``k`` chunks and the chunks that fit ``budget`` tokens (their
    ``token_count``, in rank order), and scores both against the evidence.

    >>> docs = load_corpus("tests/data/eval/corpus.jsonl")  # doctest: +SKIP
    >>> qs = load_queries("tests/data/eval/queries.jsonl", docs)  # doctest: +SKIP
    >>> r = evaluate(docs, qs, RecursiveChunker(max_tokens=256), Encoder.default())  # doctest: +SKIP
    >>> r.at_k.summary()["recall"]["mean"]  # doctest: +SKIP
    0.7...
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ValueError(f"budget must be an int >= 1 or None, got {budget!r}")
    represent = _lookup(REPRESENTATIONS, representation, "representation") if isinstance(representation, str) \
        else representation
    measure = measure or SpanMeasure(corpus)
    per_doc = chunker.chunk_batch([d.text for d in corpus])
    spans = [Span(d.doc_id, c.start, c.end) for d, cs in zip(corpus, per_doc) for c in cs]
    if not spans:
        raise ValueError("the chunker produced no chunks")
    tokens = np.array([c.token_count for cs in per_doc for c in cs], np.int64)

    specials = sum(map(len, encoder.tokenizer._native.special_tokens()))
    truncated = 0

    def embed(texts: Sequence[str]) -> np.ndarray:
        nonlocal truncated
        truncated += int((encoder.tokenizer.count_batch(texts) + specials > encoder.max_length).sum())
        return cache.embed(encoder, texts) if cache is not None else encoder.embed(texts)

    vectors = represent(corpus, per_doc, encoder, embed, **dict(representation_params or {}))
    if vectors.shape[0] != len(spans):
        raise ValueError(f"representation gave {vectors.shape[0]} vectors for {len(spans)} chunks")
    chunks_truncated = truncated
    depth = k if budget is None else max(k, budget // max(1, int(tokens.min())) + 1)
    ids, sims = VectorSearch(vectors, exact_max).search(embed([q.query for q in queries]), depth)
    ranked = [[(spans[i], float(s), int(tokens[i])) for i, s in zip(row, srow)] for row, srow in zip(ids, sims)]
    at_k = score(queries, [[s for s, _, _ in r[:k]] for r in ranked], measure, candidates=spans, coverage=coverage)
    at_budget = None
    if budget is not None:
        cut = [[r[i][0] for i in budget_cut([n for _, _, n in r], budget, pack)] for r in ranked]
        at_budget = score(queries, cut, measure, candidates=spans, coverage=coverage)
    settings = {"k": k, "budget": budget, "pack": pack, "unit": measure.unit, "coverage": coverage,
                "exact_search": len(spans) <= exact_max}
    return Result(name, len(spans), float(tokens.mean()), chunks_truncated, at_k, at_budget, ranked,
                  sims[:, 0].astype(float), settings)


# ---------------------------------------------------------------- reports


def _slices(queries: Sequence[Query], corpus: Sequence[Document]) -> dict[str, list[str]]:
    """Per slice kind (type, document, and source when the corpus has one), each query's value."""
    source = {d.doc_id: str(d.metadata["source"]) for d in corpus if "source" in d.metadata}

    def one(values: Iterable[str], none: str) -> str:
        values = list(dict.fromkeys(values))
        return values[0] if len(values) == 1 else "(several)" if values else none

    out = {
        "type": [q.type or ("unanswerable" if not q.references else "(none)") for q in queries],
        "document": [one((r.doc_id for r in q.references), "(no evidence)") for q in queries],
    }
    if source:
        out["source"] = [one((source.get(r.doc_id, "?") for r in q.references), "(no evidence)") for q in queries]
    return out


def report(results: Sequence[Result], queries: Sequence[Query], corpus: Sequence[Document],
           header: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report of several evaluations: per config the summaries (``k`` and
    ``budget``), per-slice means, per-question rows, and the questions found by the
    first config and missed by each other one, and back."""
    slices = _slices(queries, corpus)
    answerable = np.array([bool(q.references) for q in queries])
    configs = []
    for r in results:
        modes = {"k": r.at_k, **({"budget": r.at_budget} if r.at_budget is not None else {})}
        per_slice = {}
        for kind, values in slices.items():
            per_slice[kind] = {
                v: {mode: {m: _mean_std(getattr(s.subset(np.array(values) == v), m))["mean"]
                           for m in ("recall", "iou", "evidence_recall")} for mode, s in modes.items()}
                for v in sorted(set(values))
            }
        top = {"answerable": _mean_std(r.top_score[answerable])["mean"],
               "unanswerable": _mean_std(r.top_score[~answerable])["mean"]}
        configs.append({"name": r.name, "chunks": r.chunks, "mean_chunk_tokens": r.mean_chunk_tokens,
                        "truncated_for_encoder": r.truncated, "settings": r.settings,
                        "summary": {mode: s.summary() for mode, s in modes.items()},
                        "slices": per_slice, "top_similarity": top})
    questions = []
    for i, q in enumerate(queries):
        row: dict[str, Any] = {"id": q.id, "query": q.query, "type": slices["type"][i],
                               "document": slices["document"][i], "configs": {}}
        for r in results:
            modes = {"k": r.at_k, **({"budget": r.at_budget} if r.at_budget is not None else {})}
            row["configs"][r.name] = {
                mode: {m: _num(getattr(s, m)[i]) for m in (*METRICS, "found", "context", "n")}
                for mode, s in modes.items()
            }
            row["configs"][r.name]["top_similarity"] = float(r.top_score[i])
            row["configs"][r.name]["retrieved"] = [[s.doc_id, s.start, s.end, round(sim, 4)]
                                                   for s, sim, _ in r.ranked[i][: r.settings["k"]]]
        questions.append(row)
    changes = []
    base = results[0]
    for other in results[1:]:
        for mode in ("k", "budget"):
            a, b = getattr(base, f"at_{mode}"), getattr(other, f"at_{mode}")
            if a is None or b is None:
                continue
            changes.append({"from": base.name, "to": other.name, "mode": mode,
                            "found_to_missed": [queries[int(i)].id for i in np.flatnonzero(a.found & ~b.found)],
                            "missed_to_found": [queries[int(i)].id for i in np.flatnonzero(~a.found & b.found)]})
    return _clean({"header": dict(header or {}), "queries": len(queries), "answerable": int(answerable.sum()),
                   "configs": configs, "changes": changes, "questions": questions})


def _clean(value: Any) -> Any:
    """``value`` with NaN floats replaced by None (valid JSON)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def _num(x: Any) -> Any:
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    x = float(x)
    return None if math.isnan(x) else round(x, 4)


def _pm(stat: Mapping[str, float]) -> str:
    if stat["mean"] is None or math.isnan(stat["mean"]):
        return "–"
    return f"{stat['mean']:.3f} ± {stat['std']:.3f}"


def markdown(rep: Mapping[str, Any]) -> str:
    """The Markdown rendering of a :func:`report`."""
    h = rep["header"]
    lines = ["# chunkforge eval", ""]
    lines += [f"- {key}: {value}" for key, value in h.items()]
    lines += [f"- queries: {rep['queries']} ({rep['answerable']} with evidence; means are over those)", ""]
    cols = ("recall", "precision", "iou", "precision_omega", "evidence_recall", "mrr", "ndcg")
    for mode, title in (("k", f"top k = {h.get('k')}"), ("budget", f"budget = {h.get('budget')} tokens")):
        if not all(mode in c["summary"] for c in rep["configs"]):
            continue
        lines += [f"## Retrieval at {title} (mean ± std)", "",
                  "| config | chunks | mean tokens | " + " | ".join(cols) + " | found | context |",
                  "|---" * (len(cols) + 5) + "|"]
        for c in rep["configs"]:
            s = c["summary"][mode]
            lines.append(f"| {c['name']} | {c['chunks']} | {c['mean_chunk_tokens']:.1f} | "
                         + " | ".join(_pm(s[m]) for m in cols)
                         + f" | {_fmt(s['found']['mean'])} | {s['context']['mean']:.0f} |")
        lines.append("")
    notes = [f"{c['name']}: {c['truncated_for_encoder']} chunks longer than the encoder's window were truncated "
             "for embedding" for c in rep["configs"] if c["truncated_for_encoder"]]
    if notes:
        lines += ["Notes: " + "; ".join(notes) + ".", ""]
    lines += ["## Similarity of the top chunk", "", "| config | answerable | unanswerable |", "|---|---|---|"]
    lines += [f"| {c['name']} | {_fmt(c['top_similarity']['answerable'])} | "
              f"{_fmt(c['top_similarity']['unanswerable'])} |" for c in rep["configs"]]
    lines.append("")
    for kind in rep["configs"][0]["slices"]:
        modes = [m for m in ("k", "budget") if m in rep["configs"][0]["summary"]]
        lines += [f"## By {kind}: recall / IoU / evidence recall", ""]
        head = [f"{c['name']} @{m}" for c in rep["configs"] for m in modes]
        lines += [f"| {kind} | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
        for value in rep["configs"][0]["slices"][kind]:
            cells = []
            for c in rep["configs"]:
                for m in modes:
                    v = c["slices"][kind][value][m]
                    cells.append(f"{_fmt(v['recall'])} / {_fmt(v['iou'])} / {_fmt(v['evidence_recall'])}")
            if any(cell != "– / – / –" for cell in cells):
                lines.append(f"| {value} | " + " | ".join(cells) + " |")
        lines.append("")
    if rep["changes"]:
        lines += ["## Found → missed, missed → found", "",
                  ("A question is found when the retrieved context covers every one of its evidence spans "
                   f"(each at least {h.get('coverage')})."), ""]
        for ch in rep["changes"]:
            lines.append(f"- {ch['from']} → {ch['to']} @{ch['mode']}: found → missed "
                         f"{', '.join(ch['found_to_missed']) or 'none'}; missed → found "
                         f"{', '.join(ch['missed_to_found']) or 'none'}")
        lines.append("")
    names = [c["name"] for c in rep["configs"]]
    lines += ["## Per question (recall / IoU, found ✓, at k)", "",
              "| id | type | query | " + " | ".join(names) + " |", "|---" * (len(names) + 3) + "|"]
    for q in rep["questions"]:
        cells = []
        for n in names:
            s = q["configs"][n]["k"]
            cells.append("–" if s["recall"] is None else
                         f"{s['recall']:.2f} / {s['iou']:.2f}{' ✓' if s['found'] else ''}")
        text = q["query"].replace("|", "\\|")
        lines.append(f"| {q['id']} | {q['type']} | {text} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.3f}"


def plot(rep: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """A PNG of recall and IoU against mean chunk size, per config, at k and at the budget
    (needs matplotlib: ``pip install 'chunkforge[eval]'``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in ("k", "budget") if all(m in c["summary"] for c in rep["configs"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    size = [c["mean_chunk_tokens"] for c in rep["configs"]]
    labels = {"k": f"top k = {rep['header'].get('k')}", "budget": f"budget = {rep['header'].get('budget')} tokens"}
    for ax, metric in zip(axes, ("recall", "iou")):
        for mode, marker in zip(modes, ("o", "s")):
            ys = [c["summary"][mode][metric]["mean"] for c in rep["configs"]]
            ax.scatter(size, ys, marker=marker, label=labels[mode])
            for x, y, c in zip(size, ys, rep["configs"]):
                ax.annotate(c["name"], (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set(xlabel="mean chunk size (tokens)", ylabel=f"mean {metric}", title=f"{metric} vs chunk size")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


# ---------------------------------------------------------------- command line


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Registers ``chunkforge eval`` on the CLI's subcommands."""
    p = commands.add_parser(
        "eval",
        help="compare chunking configs on labelled queries",
        description="Chunk a corpus with each config, embed, retrieve for labelled queries, and score the "
        "retrieved context against the evidence spans at top k and at a token budget.",
    )
    p.add_argument("--corpus", required=True, metavar="FILE", help='corpus JSONL(.gz): {"doc_id", "text", ...}')
    p.add_argument("--queries", required=True, metavar="FILE",
                   help='queries JSONL: {"query", "references": [{"doc_id", "start", "end"}], "type"?}')
    p.add_argument("--config", required=True, action="append", metavar="TOML",
                   help="a config (chunker, representation, encoder); repeat to compare, the first is the baseline")
    p.add_argument("--k", type=int, default=5, metavar="N", help="chunks retrieved per query (default 5)")
    p.add_argument("--budget", type=int, default=1000, metavar="TOKENS",
                   help="context budget in tokens, chunks taken in rank order (default 1000; 0: off)")
    p.add_argument("--pack", choices=("stop", "skip"), default="stop",
                   help="at the budget: stop at the first chunk that does not fit (default), or skip it")
    p.add_argument("--unit", choices=("tokens", "chars"), default="tokens", help="what the metrics count")
    p.add_argument("--coverage", type=float, default=0.5, metavar="F",
                   help="share of an evidence span the context must cover for it to count as found (default 0.5)")
    p.add_argument("--tokenizer", metavar="FILE",
                   help="tokenizer.json the metrics count with (default: all-MiniLM-L6-v2)")
    p.add_argument("--exact-max", type=int, default=EXACT_MAX, metavar="N",
                   help=f"exact search up to N chunks, hnswlib beyond (default {EXACT_MAX})")
    p.add_argument("--cache", metavar="FILE", help="embedding cache (default: <cache folder>/embeddings.sqlite)")
    p.add_argument("--no-cache", action="store_true", help="embed everything, read and write no cache")
    p.add_argument("--out", metavar="PREFIX", help="write PREFIX.json, PREFIX.md and PREFIX.png (default: Markdown "
                   "on stdout)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    p.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def run(args: argparse.Namespace) -> str:
    """The ``eval`` command; returns the summary line, raises the CLI's InputError on bad input."""
    from ._progress import progress
    from .cli import InputError, atomic_file
    from .onnx_export import cache_root

    for flag, value, low in (("--k", args.k, 1), ("--budget", args.budget, 0), ("--exact-max", args.exact_max, 0)):
        if value < low:
            raise InputError(f"{flag} must be >= {low}, got {value}")
    if not 0 < args.coverage <= 1:
        raise InputError(f"--coverage must be in (0, 1], got {args.coverage}")
    try:
        corpus = load_corpus(args.corpus)
        queries = load_queries(args.queries, corpus)
        configs = [Config.load(path) for path in args.config]
        names = [c.name for c in configs]
        if len(set(names)) < len(names):
            raise DatasetError(f"--config: two configs are named {next(n for n in names if names.count(n) > 1)!r}")
        measure = SpanMeasure(corpus, args.unit, args.tokenizer)
        cache = None if args.no_cache else EmbeddingCache(args.cache or cache_root() / "embeddings.sqlite")
    except (OSError, ValueError) as exc:
        raise InputError(str(exc)) from exc
    encoders: dict[str, Encoder] = {}
    results = []
    with progress(False if args.no_progress else None, total=len(configs), unit=" configs") as bar:
        for config in configs:
            bar.set_postfix_str(config.name, refresh=True)
            key = json.dumps(config.encoder, sort_keys=True)
            try:
                if key not in encoders:
                    encoders[key] = config.make_encoder()
                encoder = encoders[key]
                results.append(evaluate(
                    corpus, queries, config.make_chunker(encoder.tokenizer), encoder,
                    representation=config.representation["type"],
                    representation_params={k: v for k, v in config.representation.items() if k != "type"},
                    k=args.k, budget=args.budget or None, pack=args.pack, measure=measure, coverage=args.coverage,
                    cache=cache, exact_max=args.exact_max, name=config.name))
            except (ImportError, OSError, ValueError, TypeError) as exc:
                raise InputError(f"config {config.name}: {exc}") from exc
            bar.update(1)
    header = {"corpus": f"{args.corpus} ({len(corpus)} docs)", "queries": args.queries, "k": args.k,
              "budget": args.budget or None, "pack": args.pack, "unit": args.unit, "coverage": args.coverage,
              "tokenizer": args.tokenizer or "all-MiniLM-L6-v2",
              "search": "exact (numpy)" if all(r.settings["exact_search"] for r in results) else "hnswlib",
              "configs": "; ".join(f"{c.name}: {c.chunker}, {c.representation}, {c.encoder}" for c in configs)}
    rep = report(results, queries, corpus, header)
    text = markdown(rep)
    where = "stdout"
    if args.out is None:
        sys.stdout.write(text)
    else:
        outputs = [Path(args.out + ".json"), Path(args.out + ".md")]
        for path, body in zip(outputs, (json.dumps(rep, indent=1, ensure_ascii=False) + "\n", text)):
            with atomic_file(path) as tmp:
                tmp.write_text(body, encoding="utf-8")
        try:
            with atomic_file(Path(args.out + ".png")) as tmp:
                plot(rep, tmp)
            outputs.append(Path(args.out + ".png"))
        except ImportError:
            print("chunkforge: matplotlib is not installed, no plot (pip install 'chunkforge[eval]')", file=sys.stderr)
        where = ", ".join(map(str, outputs))
    reused = f", {cache.embedded} texts embedded, {cache.reused} from the cache" if cache else ""
    if cache:
        cache.close()
    return f"{len(configs)} configs, {len(queries)} queries{reused} -> {where}"
