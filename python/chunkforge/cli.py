"""Command line: ``chunkforge chunk PATH...`` writes chunks as JSON lines;
``chunkforge embed CHUNKS.jsonl --out vectors.parquet`` embeds them.

Inputs are text files (``.md``, ``.txt``, ``.rst`` when found in folders), folders
(searched recursively, in sorted order) and JSONL files (``.jsonl``/``.jsonl.gz``,
one ``{"id", "text"}`` record a line). Documents are read lazily and chunked in
bounded batches, so memory stays flat however large the input.

``embed`` streams the chunks in parts of ``--part-rows`` records; each part's
vectors go to a file named after a hash of the part and the settings, in
``<out>.parts/``, written atomically. A rerun after a crash reuses the parts
already written and recomputes the rest, so no row is lost or repeated; the
parts are then joined into ``--out`` (atomically) and the folder is removed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import itertools
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import numpy as np
from ._progress import progress

from ._atomic import OutputError, atomic_path, checksum_ok, write_checksum
from ._io import (
    FOLDER_SUFFIXES,
    Doc,
    InputError,
    check_paths,
    expand,
    read_documents,
    read_records,
    record_doc_id,
    record_text,
)
from .chunk import Chunk
from .chunkers import (
    CodeChunker,
    HierarchicalChunker,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    language_for_path,
    node_id,
)
from .chunkers.markdown import syntax_for_path
from .tokenizer import Tokenizer, as_tokenizer, check_threads

if TYPE_CHECKING:
    import pyarrow as pa

    from .encoder import Encoder

CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rs", ".go", ".java")
STRATEGIES = ("token", "recursive", "sentence", "markdown", "code", "hierarchical")
BATCH_DOCS = 256
BATCH_BYTES = 8 << 20
PART_ROWS = 4096


class ChunkRecord(NamedTuple):
    """One chunk to embed: its id (``doc_id``, ``index``), its text and the whole record."""

    doc_id: str
    index: int
    text: str
    fields: dict = {}


@dataclass
class Totals:
    """Running counts for the progress bar and the summary line."""

    docs: int = 0
    chunks: int = 0
    nbytes: int = 0


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkforge`` argument parser."""
    from . import __version__
    from ._recommended import DEFAULT_CPU_BATCH_TOKENS, DEFAULT_GPU_BATCH_TOKENS

    parser = argparse.ArgumentParser(prog="chunkforge", description="Native-accelerated text chunking for RAG.")
    parser.add_argument("--version", action="version", version=f"chunkforge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chunk = commands.add_parser(
        "chunk",
        help="chunk files, folders, JSONL and Parquet into JSON lines",
        description="Chunk documents and write one JSON line per chunk: "
        '{"doc_id", "index", "start", "end", "token_count", "text", "heading_path", "kind", '
        '"id", "parent_id", "level", "context"} followed by the input record\'s other fields '
        '(e.g. "source"), or a Parquet file with those columns (the record\'s fields as JSON in '
        '"metadata"). A record\'s id is its "doc_id", else its "id". "markdown" picks the '
        "syntax from each name (.md Markdown, .rst reStructuredText, .txt/.adoc AsciiDoc titles), "
        '"code" the language from the extension; "hierarchical" writes every node of the tree.',
    )
    chunk.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a text file, a folder (its .md/.txt/.rst/.adoc files, recursively), a .jsonl/.jsonl.gz or "
        ".parquet file of records, or - (JSONL records on stdin)",
    )
    chunk.add_argument(
        "--strategy",
        choices=STRATEGIES,
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
        "--model", metavar="DIR|default",
        help="count with this model folder's tokenizer, up to its window (default: default, all-MiniLM-L6-v2)",
    )
    counted_by.add_argument("--tokenizer", metavar="FILE", help="count with this tokenizer.json instead")
    chunk.add_argument(
        "--out", metavar="FILE", help="output file, written atomically; .parquet for Parquet; - for stdout (default)"
    )
    chunk.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    chunk.add_argument("--threads", type=int, metavar="N", help="worker threads (default: all cores)")
    chunk.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    embed = commands.add_parser(
        "embed",
        help="embed chunks (JSON lines) into vectors",
        description="Embed the chunks of a JSONL or Parquet file (as written by `chunkforge chunk`: one "
        '{"doc_id", "index", "text"} record each; the document id is "doc_id", else "id") into float32 '
        "vectors, in input order. Resumes where it stopped when rerun after a crash.",
    )
    embed.add_argument("path", metavar="CHUNKS", help="chunk records (.jsonl, .jsonl.gz, .parquet, or - for stdin)")
    embed.add_argument(
        "--model", default="default", metavar="DIR|default",
        help="model folder (ONNX, or BERT safetensors converted once), or default (all-MiniLM-L6-v2)",
    )
    embed.add_argument(
        "--variant",
        choices=("optimized", "fp32", "int8", "fp16"),
        default="optimized",
        help="graph variant when converting safetensors weights (default optimized)",
    )
    embed.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="vectors.parquet (doc_id, index, vector columns and --fields; needs pyarrow), vectors.npy (rows in "
        "input order), or - (JSON lines on stdout, not resumable); without a suffix .parquet when pyarrow is "
        "installed, else .npy",
    )
    embed.add_argument(
        "--fields", metavar="NAME,...",
        help="chunk record fields to store beside each vector (e.g. text,start,end,heading_path,source; "
        "all: every field); Parquet or JSON lines",
    )
    embed.add_argument(
        "--on-overflow",
        choices=("warn", "truncate", "error"),
        default="warn",
        help="chunks longer than the model's max length: truncate with a warning (default), quietly, or stop",
    )
    embed.add_argument(
        "--max-batch-tokens", type=int, metavar="N",
        help=f"padded tokens per batch (default: {DEFAULT_CPU_BATCH_TOKENS} on CPU, {DEFAULT_GPU_BATCH_TOKENS} on GPU)",
    )
    embed.add_argument("--part-rows", type=int, default=PART_ROWS, metavar="N", help="chunks per resumable part")
    embed.add_argument("--threads", type=int, metavar="N", help="ONNX Runtime intra-op threads (default: all cores)")
    embed.add_argument("--no-progress", action="store_true", help="no progress bars (shown only on a terminal)")
    embed.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    from .eval import add_parser as add_eval_parser

    add_eval_parser(commands)
    from .index_cli import add_parsers as add_index_parsers

    add_index_parsers(commands)
    from .pipeline import add_parser as add_embed_docs_parser

    add_embed_docs_parser(commands)
    return parser


class ChunkerSet:
    """The chunker for each document: one per strategy, and for ``markdown`` /
    ``code`` one per syntax or language, picked from the document's name."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.strategy, self.tokenizer = args.strategy, chunk_tokenizer(args)
        self.max_tokens, self.overlap = args.max_tokens, args.overlap  # max_tokens None: the tokenizer's window
        self.levels = parse_levels(args.levels) if args.strategy == "hierarchical" else ()
        self._cache: dict[str, object] = {}
        self.key("x.py" if args.strategy == "code" else "x.md")  # bad parameters fail before any input is read

    def key(self, name: str) -> str:
        """Which chunker handles the document called ``name``."""
        if self.strategy == "markdown":
            key = syntax_for_path(name) or "asciidoc"  # plain text: AsciiDoc's titles cover underlined ones
        elif self.strategy == "code":
            language = language_for_path(name)
            if language is None:
                raise InputError(f"{name}: cannot tell its programming language from the extension")
            key = language
        else:
            key = self.strategy
        if key not in self._cache:
            self._cache[key] = self._make(key)
        return key

    def _make(self, key: str) -> object:
        tok, n, overlap = self.tokenizer, self.max_tokens, self.overlap
        try:
            if self.strategy == "token":
                return TokenChunker(tok, max_tokens=n, overlap=overlap)
            if self.strategy == "sentence":
                return SentenceChunker(tok, max_tokens=n, overlap_sentences=overlap)
            if self.strategy == "markdown":
                return MarkdownChunker(tok, max_tokens=n, overlap=overlap, syntax=key)
            if self.strategy == "code":
                return CodeChunker(tok, language=key, max_tokens=n)
            if self.strategy == "hierarchical":
                return HierarchicalChunker(tok, levels=self.levels)
            return RecursiveChunker(tok, max_tokens=n, overlap=overlap)
        except (OSError, ValueError, TypeError, ImportError) as exc:
            raise InputError(str(exc)) from exc

    def chunks(self, batch: list[Doc], threads: int | None) -> list[list[Chunk]]:
        """The chunks of every document of the batch, in order."""
        if self.strategy == "hierarchical":
            tree = self._cache[self.key("")]
            return [tree.chunk(doc.text, doc_id=str(doc.doc_id)) for doc in batch]  # type: ignore[attr-defined]
        out: list[list[Chunk]] = [[] for _ in batch]
        groups: dict[str, list[int]] = {}
        for i, doc in enumerate(batch):
            groups.setdefault(self.key(str(doc.doc_id)), []).append(i)
        for key, members in groups.items():
            chunker = self._cache[key]
            done = chunker.chunk_batch([batch[i].text for i in members], threads=threads)  # type: ignore[attr-defined]
            for i, chunks in zip(members, done):
                out[i] = chunks
        return out


def chunk_tokenizer(args: argparse.Namespace) -> Tokenizer:
    """The tokenizer of ``chunk``: ``--tokenizer FILE``, else ``--model``'s (the default
    model's when not given), which knows the model's window (the default ``--max-tokens``)."""
    try:
        if args.tokenizer is not None:
            return as_tokenizer(args.tokenizer)
        if args.model in (None, "default"):
            return Tokenizer.default_model()
        return Tokenizer.from_pretrained(args.model)
    except (OSError, ValueError, TypeError) as exc:
        flag = "--tokenizer" if args.tokenizer is not None else "--model"
        prefix = "" if args.tokenizer is not None else f"{flag} {args.model}: "
        raise InputError(f"{prefix}{exc}") from exc


def parse_levels(spec: str) -> tuple[int, ...]:
    """``"2048,512,128"`` as a tuple of ints."""
    try:
        return tuple(int(x) for x in spec.split(","))
    except ValueError as exc:
        raise InputError(f"--levels must be comma-separated integers, got {spec!r}") from exc


def chunk_record(doc: Doc, c: Chunk) -> dict:
    """The output record of one chunk; plain chunks get the stable id of a level-0 node.
    The document's metadata (its record's other fields, e.g. ``source``) follows the
    chunk's fields; a metadata field named like a chunk field is dropped."""
    level = 0 if c.level is None else c.level
    record = {
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
        record.setdefault(key, value)
    return record


def parse_chunk_record(where: str, record: dict) -> ChunkRecord:
    """One chunk record; its document id by the one rule (``doc_id``, else ``id``, else
    ``"<path>:<line>"``), ``index`` 0 when absent."""
    doc_id = record_doc_id(where, record, default=where)
    index = record.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise InputError(f'{where}: "index" must be an integer, not {type(index).__name__}')
    return ChunkRecord(str(doc_id), index, record_text(where, record), record)


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


class ChunkWriter:
    """Writes chunk records as JSON lines, or as Parquet row groups when the
    output is named ``.parquet``."""

    def __init__(self, out: IO[str] | None, parquet: Path | None) -> None:
        self.out, self.parquet, self._writer = out, parquet, None

    def write(self, records: list[dict]) -> None:
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


def parquet_row(record: dict, names: list[str]) -> dict:
    """A chunk record as a Parquet row: the document's metadata as one JSON text column."""
    metadata = {k: v for k, v in record.items() if k not in names}
    return {**record, "doc_id": str(record["doc_id"]),
            "metadata": json.dumps(metadata, ensure_ascii=False) if metadata else None}


def chunk_schema() -> pa.Schema:
    """The Parquet schema of chunk records."""
    import pyarrow as pa

    return pa.schema(
        [
            ("doc_id", pa.string()), ("index", pa.int64()), ("start", pa.int64()), ("end", pa.int64()),
            ("token_count", pa.int64()), ("text", pa.string()), ("heading_path", pa.list_(pa.string())),
            ("kind", pa.string()), ("id", pa.string()), ("parent_id", pa.string()), ("level", pa.int64()),
            ("context", pa.string()), ("metadata", pa.string()),
        ]
    )


@contextlib.contextmanager
def open_chunk_writer(path: str | None) -> Iterator[ChunkWriter]:
    """A writer to stdout, or to ``path`` atomically (Parquet when named ``.parquet``)."""
    if path is not None and path.endswith(".parquet"):
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
        yield ChunkWriter(out, None)


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """stdout for None or ``-``; else a temp file beside ``path``, renamed over it on
    success and removed on any failure (including Ctrl-C)."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_file(Path(path)) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as out:
        yield out


@contextlib.contextmanager
def atomic_file(target: Path) -> Iterator[Path]:
    """A temp path whose content becomes ``target``'s on success (``_atomic``: atomic
    for files, write-through for devices and pipes, symlinks followed); an
    output that cannot be written is an InputError naming ``--out``."""
    try:
        with atomic_path(target) as tmp:
            yield tmp
    except OutputError as exc:
        raise InputError(f"--out: {exc}") from exc


def refuse_output_input(out: str | None, inputs: Iterable[str]) -> None:
    """InputError when ``--out`` is one of the input files (it would be overwritten)."""
    if out is None or out == "-" or not os.path.exists(out):
        return
    for path in inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(out, path):
                raise InputError(f"--out {out} is also an input ({path}); write to another file")


def run_chunk(args: argparse.Namespace) -> str:
    """The ``chunk`` command; returns the summary line, raises InputError on bad input or arguments."""
    try:
        check_threads(args.threads)
    except ValueError as exc:
        raise InputError(f"--{exc}") from exc
    chunkers = ChunkerSet(args)
    check_paths(args.paths)
    suffixes = CODE_SUFFIXES if args.strategy == "code" else FOLDER_SUFFIXES
    refuse_output_input(args.out, expand(args.paths, suffixes))
    totals = Totals()
    with open_chunk_writer(args.out) as writer, progress(False if args.no_progress else None, unit=" docs") as bar:
        for batch in batched(read_documents(args.paths, suffixes)):
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


def output_format(out: str) -> tuple[Path, str]:
    """The ``--out`` path and its format (``parquet``, ``npy``, or ``jsonl`` for ``-``: stdout);
    a bare name gets ``.parquet`` when pyarrow is installed, else ``.npy``."""
    if out == "-":
        return Path(out), "jsonl"
    path = Path(out)
    if path.suffix not in (".parquet", ".npy"):
        if path.suffix:
            raise InputError(f"--out {out}: expected a .parquet or .npy file, or - for JSON lines on stdout")
        path = path.with_name(path.name + (".parquet" if importlib.util.find_spec("pyarrow") else ".npy"))
    fmt = path.suffix[1:]
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise InputError(f"--out {out}: writing Parquet needs pyarrow (pip install pyarrow); or write .npy")
    return path, fmt


def parse_fields(spec: str | None, fmt: str) -> list[str] | None:
    """``--fields``: the chunk record fields to keep beside each vector (None: all of them)."""
    if spec is None:
        return []
    if fmt == "npy":
        raise InputError("--fields needs Parquet or JSON lines output (--out FILE.parquet or --out -), not .npy")
    if spec.strip() == "all":
        return None
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        raise InputError(f"--fields must name fields (comma-separated) or be all, got {spec!r}")
    return [name for name in names if name not in ("doc_id", "index")]


def record_fields(record: ChunkRecord, fields: list[str] | None) -> dict:
    """The fields of a chunk record kept beside its vector (absent ones: None)."""
    if fields is None:
        return {k: v for k, v in record.fields.items() if k not in ("doc_id", "index")}
    return {name: record.fields.get(name) for name in fields}


def load_encoder(args: argparse.Namespace) -> Encoder:
    """The encoder named by ``--model``; InputError names the bad argument."""
    for name in ("threads", "max_batch_tokens", "part_rows"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    options = {"on_overflow": args.on_overflow, "max_batch_tokens": args.max_batch_tokens,
               "intra_op_threads": args.threads}
    try:
        from .encoder import Encoder

        show = False if args.no_progress else None
        if args.model == "default":
            encoder = Encoder.default(args.variant, show_progress=show, **options)
        else:
            encoder = Encoder.from_pretrained(args.model, variant=args.variant, show_progress=show, **options)
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"--model {args.model}: {exc}") from exc
    encoder.overflow_option = "--on-overflow {}"  # messages name the flag, not the Python keyword
    return encoder


def write_part(path: Path, part: list[ChunkRecord], vectors: np.ndarray, fmt: str, fields: list[str] | None) -> None:
    """One part's vectors (and ids and ``fields``, for Parquet), written atomically, then
    its checksum beside it (``PART.sha256``): a part is reused only when both agree."""
    with atomic_file(path) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as f:
                np.save(f, vectors)
        else:
            import pyarrow.parquet as pq

            pq.write_table(chunk_table(part, vectors, fields), tmp)
    write_checksum(path)


def chunk_table(part: list[ChunkRecord], vectors: np.ndarray, fields: list[str] | None = ()) -> pa.Table:
    """A pyarrow table: ``doc_id`` string, ``index`` int64, the chunk record ``fields``
    (types as pyarrow infers them), ``vector`` fixed-size list of float32."""
    import pyarrow as pa

    dim = vectors.shape[1]
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dim)
    kept = pa.Table.from_pylist([record_fields(r, fields) for r in part]) if fields != () and part else None
    columns = {"doc_id": pa.array([r.doc_id for r in part], pa.string()),
               "index": pa.array([r.index for r in part], pa.int64())}
    if kept is not None:
        columns.update({name: kept.column(name) for name in kept.column_names})
    elif fields:
        columns.update({name: pa.nulls(len(part)) for name in fields})
    return pa.table({**columns, "vector": column})


def join_parts(parts: list[Path], out: Path, fmt: str, dim: int) -> None:
    """Concatenates the part files into ``out`` (atomically), one part in memory at a time."""
    with atomic_file(out) as tmp:
        if fmt == "npy":
            rows = sum(np.load(p, mmap_mode="r").shape[0] for p in parts)
            if rows == 0:
                with open(tmp, "wb") as f:
                    np.save(f, np.zeros((0, dim), np.float32))
                return
            joined = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, dim))
            start = 0
            for p in parts:
                block = np.load(p, mmap_mode="r")
                joined[start:start + len(block)] = block
                start += len(block)
            joined.flush()
            del joined
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schemas = [pq.read_schema(p) for p in parts] or [chunk_table([], np.zeros((0, dim), np.float32)).schema]
            try:  # fields kept beside the vector: a column all null in one part takes its type from the others
                schema = pa.unify_schemas(schemas, promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise InputError(f"--fields: a field has different types in different chunks ({exc})") from exc
            schema = pa.schema([f for f in schema if f.name != "vector"] + [schema.field("vector")])
            with pq.ParquetWriter(tmp, schema) as writer:
                for p in parts:
                    table = pq.read_table(p)
                    writer.write_table(pa.Table.from_arrays(
                        [table.column(f.name).cast(f.type) if f.name in table.column_names
                         else pa.nulls(len(table), f.type) for f in schema], schema=schema))


def part_digest(settings: str, part: list[ChunkRecord]) -> str:
    """A hash of the settings and the part's records: names the part file."""
    digest = hashlib.sha256(settings.encode())
    for record in part:
        digest.update(json.dumps(record, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()[:16]


def run_embed(args: argparse.Namespace) -> str:
    """The ``embed`` command; returns the summary line, raises InputError on bad input or arguments."""
    if args.path != "-" and not os.path.isfile(args.path):
        raise InputError(f"no such file: {args.path}")
    out, fmt = output_format(args.out)
    refuse_output_input(str(out), [args.path])
    fields = parse_fields(args.fields, fmt)
    encoder = load_encoder(args)
    from .encoder import TruncationWarning

    records = (parse_chunk_record(where, record) for where, record, _ in read_records(args.path))
    with warnings.catch_warnings(record=True) as caught, progress(
        False if args.no_progress else None, unit=" chunks", desc="embedding"
    ) as bar:
        warnings.simplefilter("always", TruncationWarning)

        def embed(part: list[ChunkRecord], first: int) -> np.ndarray:
            try:
                vectors = encoder.embed([r.text for r in part], show_progress=bar)
            except ValueError as exc:
                raise InputError(f"{args.path}, chunks {first}-{first + len(part) - 1}: {exc}") from exc
            for warning in caught:
                print(f"chunkforge: warning: {args.path}, chunks {first}-{first + len(part) - 1}: "
                      f"{warning.message}", file=sys.stderr)
            caught.clear()
            return vectors

        if fmt == "jsonl":
            return stream_embeddings(records, args.part_rows, embed, fields)
        return embed_in_parts(args, out, fmt, encoder, records, embed, fields, bar)


def stream_embeddings(records: Iterator[ChunkRecord], part_rows: int, embed: Callable, fields: list[str] | None) -> str:
    """``--out -``: one JSON line a chunk on stdout (``doc_id``, ``index``, the kept fields, ``vector``)."""
    count = 0
    while part := list(itertools.islice(records, part_rows)):
        vectors = embed(part, count)
        sys.stdout.write("".join(
            json.dumps({"doc_id": r.doc_id, "index": r.index, **(record_fields(r, fields) if fields != [] else {}),
                        "vector": v.tolist()}, ensure_ascii=False) + "\n"
            for r, v in zip(part, vectors)))
        count += len(part)
    sys.stdout.flush()
    return f"{count} chunks embedded -> stdout"


def embed_in_parts(args: argparse.Namespace, out: Path, fmt: str, encoder: Encoder, records: Iterator[ChunkRecord],
                   embed: Callable, fields: list[str] | None, bar: Any) -> str:
    """Resumable output: parts written atomically, reused on a rerun, then joined."""
    graph = encoder.graph.stat()
    settings = json.dumps([str(encoder.graph), graph.st_size, graph.st_mtime_ns, encoder.max_length,
                           encoder.pooling, encoder.normalize, args.part_rows, fmt, fields])
    parts_dir = out.with_name(out.name + ".parts")
    try:
        parts_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write --out {out}: {exc.strerror or exc}") from exc
    try:
        return embed_parts(args, out, fmt, encoder, records, embed, fields, bar, settings, parts_dir)
    finally:
        with contextlib.suppress(OSError):
            parts_dir.rmdir()  # only when empty: a failure before any part leaves no folder


def embed_parts(args: argparse.Namespace, out: Path, fmt: str, encoder: Encoder, records: Iterator[ChunkRecord],
                embed: Callable, fields: list[str] | None, bar: Any, settings: str, parts_dir: Path) -> str:
    """The parts (a part is reused when its checksum agrees), joined into ``out``."""
    parts: list[Path] = []
    embedded = reused = 0
    while part := list(itertools.islice(records, args.part_rows)):
        path = parts_dir / f"part-{len(parts):06d}-{part_digest(settings, part)}.{fmt}"
        if checksum_ok(path):
            reused += len(part)
            bar.update(len(part))
        else:
            write_part(path, part, embed(part, embedded + reused), fmt, fields)
            embedded += len(part)
        parts.append(path)
    join_parts(parts, out, fmt, encoder.dim)
    shutil.rmtree(parts_dir)
    return f"{embedded + reused} chunks ({embedded} embedded, {reused} from an earlier run) -> {out}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``chunkforge`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    started = time.perf_counter()
    try:
        if args.command == "eval":
            from .eval import run as run_eval

            summary = run_eval(args)
        elif args.command == "embed-docs":
            from .pipeline import run_command as run_embed_docs

            summary = run_embed_docs(args)
        elif args.command in ("index", "query"):
            from .index_cli import run as run_index

            summary = run_index(args)
        else:
            summary = run_embed(args) if args.command == "embed" else run_chunk(args)
    except InputError as exc:
        print(f"chunkforge: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep the exit flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"chunkforge: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("chunkforge: interrupted", file=sys.stderr)
        return 130
    if args.verbose or sys.stderr.isatty():
        print(f"chunkforge: {summary} in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0
