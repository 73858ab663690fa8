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
import functools
import gzip
import hashlib
import importlib.util
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, TypeVar

import numpy as np
from tqdm import tqdm

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

if TYPE_CHECKING:
    import pyarrow as pa

    from .encoder import Encoder

FOLDER_SUFFIXES = (".md", ".txt", ".rst", ".adoc")
CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rs", ".go", ".java")
STRATEGIES = ("token", "recursive", "sentence", "markdown", "code", "hierarchical")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
BATCH_DOCS = 256
BATCH_BYTES = 8 << 20
PART_ROWS = 4096
R = TypeVar("R")


class InputError(Exception):
    """Bad input; the message names the file (and line) at fault."""


class Doc(NamedTuple):
    """One document: its id for the output, its text and its size in bytes."""

    doc_id: str | int
    text: str
    nbytes: int


class ChunkRecord(NamedTuple):
    """One chunk to embed: its id (``doc_id``, ``index``) and its text."""

    doc_id: str
    index: int
    text: str


@dataclass
class Totals:
    """Running counts for the progress bar and the summary line."""

    docs: int = 0
    chunks: int = 0
    nbytes: int = 0


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkforge`` argument parser."""
    parser = argparse.ArgumentParser(prog="chunkforge", description="Native-accelerated text chunking for RAG.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chunk = commands.add_parser(
        "chunk",
        help="chunk files, folders and JSONL into JSON lines",
        description="Chunk documents and write one JSON line per chunk: "
        '{"doc_id", "index", "start", "end", "token_count", "text", "heading_path", "kind", '
        '"id", "parent_id", "level"} (or a Parquet file with those columns). "markdown" picks the '
        "syntax from each name (.md Markdown, .rst reStructuredText, .txt/.adoc AsciiDoc titles), "
        '"code" the language from the extension; "hierarchical" writes every node of the tree.',
    )
    chunk.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a text file, a folder (its .md/.txt/.rst files, recursively) or a .jsonl/.jsonl.gz file",
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
    chunk.add_argument("--max-tokens", type=int, default=512, metavar="N", help="token limit per chunk (default 512)")
    chunk.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="tokens repeated between chunks; sentences for --strategy sentence (default 0)",
    )
    chunk.add_argument("--tokenizer", metavar="FILE", help="tokenizer.json to count with (default: all-MiniLM-L6-v2)")
    chunk.add_argument(
        "--out", metavar="FILE", help="output file, written atomically; .parquet for Parquet (default: stdout)"
    )
    chunk.add_argument("--threads", type=int, metavar="N", help="worker threads (default: all cores)")
    chunk.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    embed = commands.add_parser(
        "embed",
        help="embed chunks (JSON lines) into vectors",
        description="Embed the chunks of a JSONL file (as written by `chunkforge chunk`: one "
        '{"doc_id", "index", "text"} record a line) into float32 vectors, in input order. '
        "Resumes where it stopped when rerun after a crash.",
    )
    embed.add_argument("path", metavar="CHUNKS.jsonl", help="chunk records (.jsonl or .jsonl.gz)")
    embed.add_argument(
        "--model", default="default", metavar="DIR|default", help="model folder, or `default` (all-MiniLM-L6-v2)"
    )
    embed.add_argument(
        "--variant",
        choices=("optimized", "fp32", "int8", "fp16"),
        default="optimized",
        help="graph variant of the default model (default optimized)",
    )
    embed.add_argument(
        "--out",
        required=True,
        metavar="FILE",
        help="vectors.parquet (doc_id, index, vector columns; needs pyarrow) or vectors.npy (rows in input order); "
        "without a suffix .parquet when pyarrow is installed, else .npy",
    )
    embed.add_argument(
        "--on-overflow",
        choices=("warn", "truncate", "error"),
        default="warn",
        help="chunks longer than the model's max length: truncate with a warning (default), quietly, or stop",
    )
    embed.add_argument(
        "--max-batch-tokens", type=int, metavar="N", help="padded tokens per batch (default: 1024 on CPU, 16384 on GPU)"
    )
    embed.add_argument("--part-rows", type=int, default=PART_ROWS, metavar="N", help="chunks per resumable part")
    embed.add_argument("--threads", type=int, metavar="N", help="ONNX Runtime intra-op threads (default: all cores)")
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
        self.strategy, self.tokenizer = args.strategy, args.tokenizer
        self.max_tokens, self.overlap = args.max_tokens, args.overlap
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


def parse_levels(spec: str) -> tuple[int, ...]:
    """``"2048,512,128"`` as a tuple of ints."""
    try:
        return tuple(int(x) for x in spec.split(","))
    except ValueError as exc:
        raise InputError(f"--levels must be comma-separated integers, got {spec!r}") from exc


def chunk_record(doc: Doc, c: Chunk) -> dict:
    """The output record of one chunk; plain chunks get the stable id of a level-0 node."""
    level = 0 if c.level is None else c.level
    return {
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
    }


def expand(paths: Iterable[str], suffixes: tuple[str, ...] = FOLDER_SUFFIXES) -> Iterator[str]:
    """Input files: files as given, folders expanded to their files ending in one
    of ``suffixes``, in sorted order."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        root = Path(path)
        found = sorted(p.relative_to(root) for p in root.rglob("*") if p.name.endswith(suffixes) and p.is_file())
        yield from (os.path.join(path, rel) for rel in found)


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


def read_jsonl(path: str, parse: Callable[[str, int, bytes], R]) -> Iterator[R]:
    """The records of a JSONL file (gzip when named ``.gz``), each ``parse(path, lineno, line)``;
    blank lines are skipped."""
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as lines:
            for lineno, line in enumerate(lines, 1):
                if line.strip():
                    yield parse(path, lineno, line)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc


def parse_record(path: str, lineno: int, line: bytes, id_field: str = "id", text_field: str = "text") -> Doc:
    """One JSONL line as a document (its id and text under ``id_field`` and ``text_field``);
    the id defaults to ``"<path>:<line>"``."""
    where = f"{path}:{lineno}"
    record = json_object(where, line)
    doc_id = record.get(id_field, where)
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise InputError(f'{where}: "{id_field}" must be a string or an integer, not {type(doc_id).__name__}')
    return Doc(doc_id, record_text(where, record, text_field), len(line))


def parse_chunk_record(path: str, lineno: int, line: bytes) -> ChunkRecord:
    """One chunk record; ``doc_id`` falls back to ``id`` then ``"<path>:<line>"``, ``index`` to 0."""
    where = f"{path}:{lineno}"
    record = json_object(where, line)
    doc_id = record.get("doc_id", record.get("id", where))
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise InputError(f'{where}: "doc_id" must be a string or an integer, not {type(doc_id).__name__}')
    index = record.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise InputError(f'{where}: "index" must be an integer, not {type(index).__name__}')
    return ChunkRecord(str(doc_id), index, record_text(where, record))


def json_object(where: str, line: bytes) -> dict:
    """One JSONL line parsed as a JSON object."""
    try:
        record = json.loads(line)
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from exc
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    return record


def record_text(where: str, record: dict, field: str = "text") -> str:
    """The record's ``field`` (``"text"``): a string of valid Unicode."""
    if field not in record:
        raise InputError(f'{where}: record has no "{field}"')
    return checked_text(where, f'"{field}"', record[field])


def checked_text(where: str, name: str, text: object) -> str:
    """``text`` when it is a string of valid Unicode; else InputError naming ``where`` and ``name``."""
    if not isinstance(text, str):
        raise InputError(f"{where}: {name} must be a string, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{where}: {name} holds a lone surrogate (not valid Unicode)") from exc
    return text


def read_docs(
    paths: Iterable[str], suffixes: tuple[str, ...] = FOLDER_SUFFIXES, id_field: str = "id", text_field: str = "text"
) -> Iterator[Doc]:
    """All documents of all inputs, lazily, in order; JSONL records keep their id and text
    under ``id_field`` and ``text_field``."""
    parse = functools.partial(parse_record, id_field=id_field, text_field=text_field)
    for path in expand(paths, suffixes):
        if path.endswith(JSONL_SUFFIXES):
            yield from read_jsonl(path, parse)
        else:
            yield read_text_file(path)


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

        table = pa.Table.from_pylist([{**r, "doc_id": str(r["doc_id"])} for r in records], schema=chunk_schema())
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


def chunk_schema() -> pa.Schema:
    """The Parquet schema of chunk records."""
    import pyarrow as pa

    return pa.schema(
        [
            ("doc_id", pa.string()), ("index", pa.int64()), ("start", pa.int64()), ("end", pa.int64()),
            ("token_count", pa.int64()), ("text", pa.string()), ("heading_path", pa.list_(pa.string())),
            ("kind", pa.string()), ("id", pa.string()), ("parent_id", pa.string()), ("level", pa.int64()),
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
    """A temp path beside ``target``, synced and renamed over it on success and
    removed on any failure (including Ctrl-C)."""
    if target.is_dir():
        raise InputError(f"--out {target} is a folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write --out {target}: {exc.strerror or exc}") from exc
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as done:
            os.fsync(done.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def current_umask() -> int:
    """The process umask (read by setting it and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def run_chunk(args: argparse.Namespace) -> str:
    """The ``chunk`` command; returns the summary line, raises InputError on bad input or arguments."""
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    chunkers = ChunkerSet(args)
    for path in args.paths:
        if not os.path.exists(path):
            raise InputError(f"no such file or folder: {path}")
    suffixes = CODE_SUFFIXES if args.strategy == "code" else FOLDER_SUFFIXES
    totals = Totals()
    show = sys.stderr.isatty()
    with open_chunk_writer(args.out) as writer, tqdm(
        unit=" docs", file=sys.stderr, disable=not show, dynamic_ncols=True
    ) as bar:
        for batch in batched(read_docs(args.paths, suffixes)):
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
    """The ``--out`` path and its format (``parquet`` or ``npy``); a bare name gets
    ``.parquet`` when pyarrow is installed, else ``.npy``."""
    path = Path(out)
    if path.suffix not in (".parquet", ".npy"):
        if path.suffix:
            raise InputError(f"--out {out}: expected a .parquet or .npy file")
        path = path.with_name(path.name + (".parquet" if importlib.util.find_spec("pyarrow") else ".npy"))
    fmt = path.suffix[1:]
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise InputError(f"--out {out}: writing Parquet needs pyarrow (pip install pyarrow); or write .npy")
    return path, fmt


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

        if args.model == "default":
            return Encoder.default(args.variant, **options)
        return Encoder.from_dir(args.model, **options)
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"--model {args.model}: {exc}") from exc


def write_part(path: Path, part: list[ChunkRecord], vectors: np.ndarray, fmt: str) -> None:
    """One part's vectors (and ids, for Parquet), written atomically."""
    with atomic_file(path) as tmp:
        if fmt == "npy":
            with open(tmp, "wb") as f:
                np.save(f, vectors)
        else:
            import pyarrow.parquet as pq

            pq.write_table(chunk_table(part, vectors), tmp)


def chunk_table(part: list[ChunkRecord], vectors: np.ndarray) -> pa.Table:
    """A pyarrow table: ``doc_id`` string, ``index`` int64, ``vector`` fixed-size list of float32."""
    import pyarrow as pa

    dim = vectors.shape[1]
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dim)
    return pa.table({"doc_id": pa.array([r.doc_id for r in part], pa.string()),
                     "index": pa.array([r.index for r in part], pa.int64()), "vector": column})


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
            import pyarrow.parquet as pq

            schema = chunk_table([], np.zeros((0, dim), np.float32)).schema
            with pq.ParquetWriter(tmp, schema) as writer:
                for p in parts:
                    writer.write_table(pq.read_table(p))


def part_digest(settings: str, part: list[ChunkRecord]) -> str:
    """A hash of the settings and the part's records: names the part file."""
    digest = hashlib.sha256(settings.encode())
    for record in part:
        digest.update(json.dumps(record, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()[:16]


def run_embed(args: argparse.Namespace) -> str:
    """The ``embed`` command; returns the summary line, raises InputError on bad input or arguments."""
    if not os.path.isfile(args.path):
        raise InputError(f"no such file: {args.path}")
    out, fmt = output_format(args.out)
    encoder = load_encoder(args)
    graph = encoder.graph.stat()
    settings = json.dumps([str(encoder.graph), graph.st_size, graph.st_mtime_ns, encoder.max_length,
                           encoder.pooling, encoder.normalize, args.part_rows, fmt])
    parts_dir = out.with_name(out.name + ".parts")
    try:
        parts_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write --out {out}: {exc.strerror or exc}") from exc
    parts: list[Path] = []
    embedded = reused = 0
    records = read_jsonl(args.path, parse_chunk_record)
    with tqdm(unit=" chunks", file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True) as bar:
        while part := list(itertools.islice(records, args.part_rows)):
            path = parts_dir / f"part-{len(parts):06d}-{part_digest(settings, part)}.{fmt}"
            if path.exists():
                reused += len(part)
            else:
                try:
                    vectors = encoder.embed([r.text for r in part])
                except ValueError as exc:
                    first = embedded + reused
                    raise InputError(f"{args.path}, chunks {first}-{first + len(part) - 1}: {exc}") from exc
                write_part(path, part, vectors, fmt)
                embedded += len(part)
            parts.append(path)
            bar.update(len(part))
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
