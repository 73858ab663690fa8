"""Reading documents and records: one reader and one document-id rule for every
command (``chunk``, ``embed``, ``index build``, ``eval``).

Inputs are text files (their path is their id), folders (their files with the given
suffixes, recursively, in sorted order), JSONL files (``.jsonl``/``.jsonl.gz``, one
object a line), Parquet files (``.parquet``, one row a record; needs pyarrow) and ``-``
(JSONL records on stdin). A record's id is its ``"doc_id"``, else its ``"id"``
(``doc_id`` wins when both are there: chunk records carry the document in ``doc_id``
and their own id in ``id``); its ``"text"`` is the text; every other field is metadata,
passed through to what is made of it.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

FOLDER_SUFFIXES = (".md", ".txt", ".rst", ".adoc")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
PARQUET_SUFFIXES = (".parquet",)
STDIN = "-"
ID_KEYS = ("doc_id", "id")
"""The document id fields, the first present wins."""
TEXT_KEY = "text"
PARQUET_BATCH_ROWS = 1024


class InputError(Exception):
    """Bad input; the message names the file (and line) at fault."""


class Doc(NamedTuple):
    """One document: its id, its text, its size in bytes and its metadata (the
    record's other fields; for a plain file, none)."""

    doc_id: str | int
    text: str
    nbytes: int
    metadata: dict[str, Any] = {}


def is_record_file(path: str) -> bool:
    """True for inputs read as records (JSONL, Parquet, stdin) rather than as one text."""
    return path == STDIN or path.endswith(JSONL_SUFFIXES + PARQUET_SUFFIXES)


def expand(paths: Iterable[str], suffixes: tuple[str, ...] = FOLDER_SUFFIXES) -> Iterator[str]:
    """Input files: files (and ``-``) as given, folders expanded to their files ending
    in one of ``suffixes``, in sorted order."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        root = Path(path)
        found = sorted(p.relative_to(root) for p in root.rglob("*") if p.name.endswith(suffixes) and p.is_file())
        yield from (os.path.join(path, rel) for rel in found)


def check_paths(paths: Iterable[str]) -> None:
    """InputError for the first input that does not exist (``-`` always does)."""
    for path in paths:
        if path != STDIN and not os.path.exists(path):
            raise InputError(f"no such file or folder: {path}")


def read_text_file(path: str) -> Doc:
    """A plain file as one document, its path as its id."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not valid UTF-8 (byte {exc.start})") from exc
    return Doc(path, text, len(data))


def read_records(path: str, error: type[Exception] = InputError) -> Iterator[tuple[str, dict, int]]:
    """``(where, record, nbytes)`` for each record of a JSONL(.gz) or Parquet file or of
    stdin (``-``, JSONL); ``where`` is ``"<path>:<line>"`` (``<stdin>``; the row, from 1,
    for Parquet). Blank lines are skipped; errors are ``error`` naming the place."""
    if path.endswith(PARQUET_SUFFIXES):
        yield from _parquet_records(path, error)
        return
    name = "<stdin>" if path == STDIN else path
    try:
        if path == STDIN:
            lines = sys.stdin.buffer
        else:
            lines = gzip.open(path) if path.endswith(".gz") else open(path, "rb")
        with lines:
            for lineno, line in enumerate(lines, 1):
                if line.strip():
                    where = f"{name}:{lineno}"
                    yield where, json_object(where, line, error), len(line)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from exc


def _parquet_records(path: str, error: type[Exception]) -> Iterator[tuple[str, dict, int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise error(f'reading {path} needs pyarrow: pip install "chunkforge[parquet]"') from exc
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS)
        row = 0
        for batch in batches:
            for record in batch.to_pylist():
                row += 1
                text = record.get(TEXT_KEY)
                yield f"{path}:{row}", record, len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
    except OSError as exc:  # pyarrow's ArrowInvalid is an OSError/ValueError subclass
        raise error(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise error(f"cannot read {path}: not a Parquet file ({exc})") from exc


def json_object(where: str, line: bytes, error: type[Exception] = InputError) -> dict:
    """One JSONL line parsed as a JSON object."""
    try:
        record = json.loads(line)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON ({exc.msg})") from exc
    if not isinstance(record, dict):
        raise error(f"{where}: expected a JSON object, got {type(record).__name__}")
    return record


def record_doc_id(where: str, record: dict, default: str | None = None, error: type[Exception] = InputError) -> str | int:
    """The record's document id: ``"doc_id"``, else ``"id"``, else ``default`` (None: an
    error). A string or an integer."""
    key = next((k for k in ID_KEYS if k in record), None)
    if key is None:
        if default is None:
            raise error(f'{where}: record has no "doc_id" (or "id")')
        return default
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise error(f'{where}: "{key}" must be a string or an integer, not {type(value).__name__}')
    return value


def record_text(where: str, record: dict, error: type[Exception] = InputError) -> str:
    """The record's ``"text"``: a string of valid Unicode."""
    if TEXT_KEY not in record:
        raise error(f'{where}: record has no "text"')
    text = record[TEXT_KEY]
    if not isinstance(text, str):
        raise error(f'{where}: "text" must be a string, not {type(text).__name__}')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f'{where}: "text" holds a lone surrogate (not valid Unicode)') from exc
    return text


def record_metadata(record: dict) -> dict[str, Any]:
    """The record's fields other than its id and text."""
    return {k: v for k, v in record.items() if k not in ID_KEYS and k != TEXT_KEY}


def read_documents(paths: Iterable[str], suffixes: tuple[str, ...] = FOLDER_SUFFIXES) -> Iterator[Doc]:
    """All documents of all inputs, lazily, in order; a record without an id is
    named ``"<path>:<line>"``."""
    for path in expand(paths, suffixes):
        if is_record_file(path):
            for where, record, nbytes in read_records(path):
                doc_id = record_doc_id(where, record, default=where)
                yield Doc(doc_id, record_text(where, record), nbytes, record_metadata(record))
        else:
            yield read_text_file(path)
