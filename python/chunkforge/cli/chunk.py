"""``chunkforge chunk PATH...``: chunks files, folders, JSONL and Parquet into JSON
lines (or Parquet). Documents are read lazily and chunked in bounded batches, so memory
stays flat however large the input.

>>> chunk_schema().names[:4]
['doc_id', 'index', 'start', 'end']
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .._io import FOLDER_SUFFIXES, Doc, atomic_file, check_paths, expand, read_documents
from .._options import CODE_SUFFIXES, ChunkerOptions, ChunkerSet
from .._progress import progress
from ..chunk import Chunk
from ..chunkers import node_id
from ..chunkers.registry import cli_strategies
from ..errors import InputError
from ..readers.document import PROVENANCE, citation_of
from ..tokenizer import check_threads
from ._common import open_output, refuse_output_input

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

BATCH_DOCS = 256

BATCH_BYTES = 8 << 20


@dataclass
class Totals:
    """Running counts for the progress bar and the summary line."""

    docs: int = 0
    chunks: int = 0
    nbytes: int = 0


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge chunk`` on the CLI's subcommands."""
    chunk = commands.add_parser(
        "chunk",
        help="chunk files, folders, JSONL and Parquet into JSON lines",
        description="Chunk documents and write one JSON line per chunk: "
        '{"doc_id", "index", "start", "end", "token_count", "text", "heading_path", "kind", '
        '"id", "parent_id", "level", "context"} followed by the input record\'s other fields '
        '(e.g. "source"), or a Parquet file with those columns (the record\'s fields as JSON in '
        '"metadata"). A record\'s id is its "doc_id", else its "id". "markdown" picks the '
        "syntax from each name (.md Markdown, .rst reStructuredText, .txt/.adoc AsciiDoc titles, any other "
        "name Markdown), "
        '"code" the language from the extension; "hierarchical" writes every node of the tree.',
    )
    chunk.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a text file, a folder (its .md/.txt/.rst/.adoc files, recursively), a .jsonl/.jsonl.gz or "
        ".parquet file of records, or - (stdin: JSONL records, or one plain text when it does not start with {)",
    )
    chunk.add_argument(
        "--strategy",
        choices=cli_strategies(),
        default="recursive",
        help="how to cut (default recursive)",
    )
    chunk.add_argument(
        "--levels",
        default="2048,512,128",
        metavar="N,N,...",
        help="token limits of the tree's levels for --strategy hierarchical (default 2048,512,128)",
    )
    chunk.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="token limit per chunk (default: the --model's window, 254 for the default model, so that "
        "`chunkforge embed` never truncates; 512 with --tokenizer)",
    )
    chunk.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="tokens repeated between chunks; sentences for --strategy sentence (default 0)",
    )
    counted_by = chunk.add_mutually_exclusive_group()
    counted_by.add_argument(
        "--model",
        metavar="DIR|default",
        help="count with this model folder's tokenizer, up to its window (default: default, all-MiniLM-L6-v2)",
    )
    counted_by.add_argument("--tokenizer", metavar="FILE", help="count with this tokenizer.json instead")
    chunk.add_argument(
        "--out",
        metavar="FILE",
        help="output file, written atomically: .jsonl (or no suffix) for JSON lines, .csv, .parquet; "
        "- for stdout (default)",
    )
    chunk.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    chunk.add_argument(
        "--main-content",
        action="store_true",
        help="HTML: only the main content (navigation, headers, footers, sidebars and forms left out, as a crawl needs)",
    )
    chunk.add_argument("--threads", type=int, metavar="N", help="worker threads (default: all cores)")
    chunk.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def chunk_record(doc: Doc, c: Chunk) -> dict[str, Any]:
    """The output record of one chunk; plain chunks get the stable id of a level-0 node.
    The document's metadata (its record's other fields, e.g. ``source``) follows the
    chunk's fields; a metadata field named like a chunk field is dropped. A chunk of a read
    document (HTML, PDF, DOCX) carries its ``citation`` (pages, box or source range) rather
    than the document's whole provenance."""
    level = 0 if c.level is None else c.level
    record: dict[str, Any] = {
        "doc_id": doc.doc_id,
        "index": c.index,
        "start": c.start,
        "end": c.end,
        "token_count": c.token_count,
        "text": c.text,
        "heading_path": list(c.heading_path),
        "kind": c.kind,
        "id": c.id or node_id(str(doc.doc_id), c.start, c.end, level),
        "parent_id": c.parent_id,
        "level": level,
        "context": c.context,
    }
    for key, value in doc.metadata.items():
        if key != PROVENANCE:  # a read document's: the chunk carries its own citation instead
            record.setdefault(key, value)
    citation = citation_of(doc.metadata, c.start, c.end)
    if citation is not None:
        record.setdefault("citation", citation)
    return record


def batched(docs: Iterable[Doc], max_docs: int = BATCH_DOCS, max_bytes: int = BATCH_BYTES) -> Iterator[list[Doc]]:
    """Groups documents into batches of at most ``max_docs`` docs or about ``max_bytes`` bytes."""
    batch: list[Doc] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += doc.nbytes
        if len(batch) >= max_docs or size >= max_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


OUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
"""What ``--out`` writes by its suffix (none, or ``-``: JSON lines)."""


def out_format(path: str | None) -> str:
    """The format ``--out`` names; InputError for a suffix of none of them.

    >>> out_format("chunks.csv"), out_format(None), out_format("chunks")
    ('csv', 'jsonl', 'jsonl')
    """
    suffix = "" if path is None or path == "-" else Path(path).suffix.lower()
    if suffix and suffix not in OUT_FORMATS:
        raise InputError(f"--out {path}: expected a .jsonl, .csv or .parquet file, or - for stdout")
    return OUT_FORMATS.get(suffix, "jsonl")


class ChunkWriter:
    """Writes chunk records as JSON lines, as CSV rows (the Parquet columns; lists and the
    record's other fields as JSON) when ``csv``, or as Parquet row groups to ``parquet``."""

    def __init__(self, out: IO[str] | None, parquet: Path | None, csv: bool = False) -> None:
        self.out, self.parquet = out, parquet
        self._writer: pq.ParquetWriter | None = None
        self._csv = None
        if csv:
            import csv as csv_module

            assert out is not None
            self._csv = csv_module.writer(out)
            self._csv.writerow(CHUNK_COLUMNS)

    def write(self, records: list[dict[str, Any]]) -> None:
        if self._csv is not None:
            self._csv.writerows([csv_row(r) for r in records])
            return
        if self.parquet is None:
            assert self.out is not None
            self.out.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = chunk_schema()
        table = pa.Table.from_pylist([parquet_row(r, schema.names) for r in records], schema=schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.parquet, table.schema)
        self._writer.write_table(table)

    def close(self) -> None:
        if self.parquet is None:
            return
        import pyarrow.parquet as pq

        if self._writer is None:  # no chunk at all: still a valid, empty file
            pq.write_table(chunk_schema().empty_table(), self.parquet)
        else:
            self._writer.close()


def parquet_row(record: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A chunk record as a Parquet row: the document's metadata as one JSON text column."""
    metadata = {k: v for k, v in record.items() if k not in names}
    return {
        **record,
        "doc_id": str(record["doc_id"]),
        "metadata": json.dumps(metadata, ensure_ascii=False) if metadata else None,
    }


CHUNK_COLUMNS = (
    "doc_id",
    "index",
    "start",
    "end",
    "token_count",
    "text",
    "heading_path",
    "kind",
    "id",
    "parent_id",
    "level",
    "context",
    "metadata",
)
"""The columns of Parquet and CSV output: a chunk record's fields, its document's other fields as JSON."""


def csv_row(record: dict[str, Any]) -> list[Any]:
    """A chunk record as a CSV row of :data:`CHUNK_COLUMNS` (``heading_path`` as JSON, None empty)."""
    row = parquet_row(record, list(CHUNK_COLUMNS))
    row["heading_path"] = json.dumps(row["heading_path"], ensure_ascii=False)
    return ["" if row[name] is None else row[name] for name in CHUNK_COLUMNS]


def chunk_schema() -> pa.Schema:
    """The Parquet schema of chunk records."""
    import pyarrow as pa

    types = {"index": pa.int64(), "start": pa.int64(), "end": pa.int64(), "token_count": pa.int64()}
    types.update(heading_path=pa.list_(pa.string()), level=pa.int64())
    return pa.schema([(name, types.get(name, pa.string())) for name in CHUNK_COLUMNS])


@contextlib.contextmanager
def open_chunk_writer(path: str | None) -> Iterator[ChunkWriter]:
    """A writer to stdout, or to ``path`` atomically (by :func:`out_format`: JSON lines, CSV, Parquet)."""
    fmt = out_format(path)
    if fmt == "parquet":
        assert path is not None
        if importlib.util.find_spec("pyarrow") is None:
            raise InputError('--out FILE.parquet needs pyarrow: pip install "chunkforge[parquet]"')
        with atomic_file(Path(path)) as tmp:
            writer = ChunkWriter(None, tmp)
            try:
                yield writer
            finally:
                writer.close()
        return
    with open_output(path) as out:
        yield ChunkWriter(out, None, csv=fmt == "csv")


def chunker_options(args: argparse.Namespace) -> ChunkerOptions:
    """The chunkers the flags ask for (``--levels`` read for ``--strategy hierarchical`` only)."""
    levels: tuple[int, ...] = ()
    if args.strategy == "hierarchical":
        try:
            levels = tuple(int(x) for x in args.levels.split(","))
        except ValueError as exc:
            raise InputError(f"--levels must be comma-separated integers, got {args.levels!r}") from exc
    return ChunkerOptions(args.strategy, args.max_tokens, args.overlap, levels, args.tokenizer, args.model)


def run(args: argparse.Namespace) -> str:
    """The ``chunk`` command; returns the summary line, raises InputError on bad input or arguments."""
    check_threads(args.threads)
    chunkers = ChunkerSet(chunker_options(args))
    out_format(args.out)
    check_paths(args.paths)
    suffixes = CODE_SUFFIXES if args.strategy == "code" else FOLDER_SUFFIXES
    refuse_output_input(args.out, expand(args.paths, suffixes))
    totals = Totals()
    with open_chunk_writer(args.out) as writer, progress(False if args.no_progress else None, unit=" docs") as bar:
        for batch in batched(read_documents(args.paths, suffixes, main_content=args.main_content)):
            records = [
                chunk_record(doc, c) for doc, chunks in zip(batch, chunkers.chunks(batch, args.threads)) for c in chunks
            ]
            writer.write(records)
            totals.chunks += len(records)
            totals.docs += len(batch)
            totals.nbytes += sum(doc.nbytes for doc in batch)
            bar.set_postfix_str(f"{totals.nbytes / 1e6:.1f} MB, {totals.chunks} chunks", refresh=False)
            bar.update(len(batch))
    return f"{totals.docs} docs, {totals.chunks} chunks, {totals.nbytes / 1e6:.1f} MB"
