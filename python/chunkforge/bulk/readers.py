"""The bulk job's inputs: files, folders, JSONL(.gz) and Parquet read lazily as documents
(chunkforge's reader, :mod:`chunkforge._io`), ids checked unique, cut into shard batches.

>>> from chunkforge._io import Doc
>>> [len(b) for b in shard_batches([Doc(str(i), "text", 4) for i in range(10)], shard_docs=1)]
[1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .._io import (
    FOLDER_SUFFIXES,
    ID_KEYS,
    PARQUET_SUFFIXES,
    STDIN,
    TEXT_KEY,
    Doc,
    expand,
    is_record_file,
    read_documents,
    read_records,
    record_doc,
    record_doc_id,
    record_text,
)
from .._options import CODE_SUFFIXES
from ..errors import ArgumentError, InputError
from .spec import JobSpec

MAX_SHARD_DOCS = 512
MAX_SHARD_BYTES = 16 << 20


def is_parquet(path: str) -> bool:
    """A Parquet file, or a folder holding Parquet files (read as one dataset)."""
    if os.path.isdir(path):
        return any(p.name.endswith(PARQUET_SUFFIXES) for p in Path(path).rglob("*") if p.is_file())
    return path.endswith(PARQUET_SUFFIXES)


def input_files(inputs: Sequence[str], spec: JobSpec) -> Iterator[str]:
    """The files of the inputs, in order: a folder of Parquet files gives its Parquet files,
    any other folder its text files (source files for ``strategy="code"``)."""
    suffixes = CODE_SUFFIXES if spec.strategy == "code" else FOLDER_SUFFIXES
    for path in inputs:
        yield from expand([path], PARQUET_SUFFIXES if os.path.isdir(path) and is_parquet(path) else suffixes)


def read_inputs(inputs: Sequence[str], spec: JobSpec) -> Iterator[Doc]:
    """All documents of all inputs, lazily and in order, ids as strings: chunkforge's reader
    (``chunkforge._io``: source documents through :mod:`chunkforge.readers`, a folder's
    unreadable files skipped and counted), the id and text taken from
    ``spec.id_column``/``spec.text_column``, a record's ``"format"`` read as in ``_io``."""
    suffixes = CODE_SUFFIXES if spec.strategy == "code" else FOLDER_SUFFIXES
    for path in inputs:
        if os.path.isdir(path) and is_parquet(path):
            names = list(expand([path], PARQUET_SUFFIXES))
        elif is_record_file(path):
            names = [path]
        else:
            for doc in read_documents([path], suffixes, main_content=spec.main_content):
                yield Doc(str(doc.doc_id), doc.text, doc.nbytes, doc.metadata if spec.units == "tree" else {})
            continue
        for name in names:
            yield from _records(name, spec)


def _records(name: str, spec: JobSpec) -> Iterator[Doc]:
    for where, record, nbytes in read_records(name):
        if spec.text_column != TEXT_KEY:
            if spec.text_column not in record:
                raise InputError(f'record has no "{spec.text_column}"', param="text_column", where=where, aside=True)
            record = {**record, TEXT_KEY: record[spec.text_column]}
        if spec.id_column is not None:
            record = {k: v for k, v in record.items() if k not in ID_KEYS}
            if spec.id_column not in record:
                raise InputError(f'record has no "{spec.id_column}"', param="id_column", where=where, aside=True)
            record[ID_KEYS[0]] = record[spec.id_column]
        text = record_text(where, record)
        doc_id = str(record_doc_id(where, record, default=where))
        doc = record_doc(where, record, doc_id, text, nbytes or len(text.encode("utf-8")))
        yield doc if spec.units == "tree" else doc._replace(metadata={})


def count_docs(inputs: Sequence[str], spec: JobSpec) -> int:
    """How many documents the inputs hold (Parquet metadata, JSONL lines, files): the
    progress bar's total, for its ETA. Only regular files are counted."""
    import gzip

    total = 0
    if STDIN in inputs:  # read once, by the job
        raise ArgumentError("no count of stdin (read once, by the job)", param="inputs", aside=True)
    for name in input_files(inputs, spec):
        if not os.path.isfile(name):  # a FIFO or a device is read once, by the job
            raise ArgumentError(f"no count of {name} (not a regular file)", param="inputs", aside=True)
        if name.endswith(PARQUET_SUFFIXES):
            import pyarrow.parquet as pq

            total += pq.ParquetFile(name).metadata.num_rows
        elif is_record_file(name):
            with gzip.open(name) if name.endswith(".gz") else open(name, "rb") as f:
                total += sum(1 for line in f if line.strip())
        else:
            total += 1
    return total


def unique_ids(docs: Iterable[Doc]) -> Iterator[Doc]:
    """``docs``; InputError at the first id seen before (a row's ``doc_id`` names one
    document). Keeps a 16-byte digest per id."""
    seen: set[bytes] = set()
    for doc in docs:
        digest = hashlib.blake2b(str(doc.doc_id).encode(), digest_size=16).digest()
        if digest in seen:
            raise InputError(
                f"document id {str(doc.doc_id)!r} is used more than once in the inputs; ids must be unique "
                "(id_column names the id field)"
            )
        seen.add(digest)
        yield doc


def shard_batches(docs: Iterable[Doc], shard_docs: int) -> Iterator[list[Doc]]:
    """Documents in batches cut by content: after a document whose id hashes to 0 modulo
    ``shard_docs``, or at MAX_SHARD_DOCS documents or MAX_SHARD_BYTES bytes."""
    batch: list[Doc] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += doc.nbytes
        cut = int.from_bytes(hashlib.blake2b(str(doc.doc_id).encode(), digest_size=8).digest(), "big") % shard_docs
        if cut == 0 or len(batch) >= MAX_SHARD_DOCS or size >= MAX_SHARD_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
