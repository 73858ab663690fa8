"""Labelled datasets: a corpus of documents and queries with evidence spans, read
from JSONL(.gz) or Parquet with the one id rule of every command (``chunkforge._io``).

>>> docs = load_corpus("tests/data/eval/corpus.jsonl")
>>> load_queries("tests/data/eval/queries.jsonl", docs)[0].references[0].doc_id
'linux-doc-6.1/locking/mutex-design.rst'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import read_file_doc, read_records, record_doc, record_doc_id, record_metadata, record_text
from ..errors import DatasetError, InputError


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


def _records(path: str | os.PathLike[str]) -> Iterable[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each record of a JSONL(.gz) or Parquet file (the one reader)."""
    return ((where, record) for where, record, _ in read_records(str(path), error=DatasetError))


def _field(where: str, record: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
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
    (``source`` is a slice). A record may name a source file instead of holding its text
    (``"path"``, relative to the corpus file: HTML, PDF, DOCX, Docling's JSON, or text), or
    hold HTML with ``"format": "html"``: the document is then the reader's canonical text
    (``chunkforge.readers``), which the queries' evidence offsets index.

    >>> docs = load_corpus("tests/data/eval/corpus.jsonl")
    >>> docs[0].doc_id
    'linux-doc-6.1/locking/mutex-design.rst'
    """
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for where, record in _records(path):
        doc_id = str(record_doc_id(where, record, error=DatasetError))
        if doc_id in seen:
            raise DatasetError(f"{where}: doc_id {doc_id!r} repeats {seen[doc_id]}")
        seen[doc_id] = where
        try:
            if "text" not in record and "path" in record:  # a source file, read as every command reads it
                name = _field(where, record, "path", str)
                doc = read_file_doc(str(Path(path).parent / name))
                meta = {**record_metadata(record), **doc.metadata}
            else:
                doc = record_doc(where, record, doc_id, record_text(where, record, error=DatasetError), 0)
                meta = doc.metadata
        except InputError as exc:
            raise DatasetError(f"{where}: {exc}") from exc
        docs.append(Document(doc_id, doc.text, meta))
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
