"""Command line: ``chunkforge chunk PATH...`` writes chunks as JSON lines.

Inputs are text files (``.md``, ``.txt``, ``.rst`` when found in folders), folders
(searched recursively, in sorted order) and JSONL files (``.jsonl``/``.jsonl.gz``,
one ``{"id", "text"}`` record a line). Documents are read lazily and chunked in
bounded batches, so memory stays flat however large the input.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, NamedTuple

from tqdm import tqdm

from .chunkers import BaseChunker, RecursiveChunker, SentenceChunker, TokenChunker

FOLDER_SUFFIXES = (".md", ".txt", ".rst")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
BATCH_DOCS = 256
BATCH_BYTES = 8 << 20


class InputError(Exception):
    """Bad input; the message names the file (and line) at fault."""


class Doc(NamedTuple):
    """One document: its id for the output, its text and its size in bytes."""

    doc_id: str | int
    text: str
    nbytes: int


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
        '{"doc_id", "index", "start", "end", "token_count", "text"}.',
    )
    chunk.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a text file, a folder (its .md/.txt/.rst files, recursively) or a .jsonl/.jsonl.gz file",
    )
    chunk.add_argument(
        "--strategy",
        choices=("token", "recursive", "sentence"),
        default="recursive",
        help="how to cut (default recursive)",
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
    chunk.add_argument("--out", metavar="FILE", help="output file, written atomically (default: stdout)")
    chunk.add_argument("--threads", type=int, metavar="N", help="worker threads (default: all cores)")
    chunk.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    return parser


def make_chunker(strategy: str, tokenizer: str | None, max_tokens: int, overlap: int) -> BaseChunker:
    """The chunker for ``strategy``; ``tokenizer`` is a file path or None for the default."""
    if strategy == "token":
        return TokenChunker(tokenizer, max_tokens=max_tokens, overlap=overlap)
    if strategy == "sentence":
        return SentenceChunker(tokenizer, max_tokens=max_tokens, overlap_sentences=overlap)
    return RecursiveChunker(tokenizer, max_tokens=max_tokens, overlap=overlap)


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Input files: files as given, folders expanded to their text files in sorted order."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        root = Path(path)
        found = sorted(p.relative_to(root) for p in root.rglob("*") if p.name.endswith(FOLDER_SUFFIXES) and p.is_file())
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


def read_jsonl(path: str) -> Iterator[Doc]:
    """The records of a JSONL file (gzip when named ``.gz``); blank lines are skipped."""
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as lines:
            for lineno, line in enumerate(lines, 1):
                if line.strip():
                    yield parse_record(path, lineno, line)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc


def parse_record(path: str, lineno: int, line: bytes) -> Doc:
    """One JSONL line as a document; the id defaults to ``"<path>:<line>"``."""
    where = f"{path}:{lineno}"
    try:
        record = json.loads(line)
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from exc
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "text" not in record:
        raise InputError(f'{where}: record has no "text"')
    text = record["text"]
    if not isinstance(text, str):
        raise InputError(f'{where}: "text" must be a string, not {type(text).__name__}')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f'{where}: "text" holds a lone surrogate (not valid Unicode)') from exc
    doc_id = record.get("id", where)
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise InputError(f'{where}: "id" must be a string or an integer, not {type(doc_id).__name__}')
    return Doc(doc_id, text, len(line))


def read_docs(paths: Iterable[str]) -> Iterator[Doc]:
    """All documents of all inputs, lazily, in order."""
    for path in expand(paths):
        if path.endswith(JSONL_SUFFIXES):
            yield from read_jsonl(path)
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


def write_batch(chunker: BaseChunker, batch: list[Doc], out: IO[str], threads: int | None) -> int:
    """Chunks one batch and writes its chunks as JSON lines; returns the chunk count."""
    texts = [doc.text for doc in batch]
    spans = chunker.spans_batch(texts, threads=threads)
    index = [0] * len(batch)
    lines = []
    for d, s, e, n in zip(spans.doc.tolist(), spans.start.tolist(), spans.end.tolist(), spans.token_count.tolist()):
        record = {"doc_id": batch[d].doc_id, "index": index[d], "start": s, "end": e, "token_count": n}
        lines.append(json.dumps({**record, "text": texts[d][s:e]}, ensure_ascii=False) + "\n")
        index[d] += 1
    out.write("".join(lines))
    return len(lines)


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """stdout for None or ``-``; else a temp file beside ``path``, renamed over it on
    success and removed on any failure (including Ctrl-C)."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--out {path} is a folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write --out {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
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


def run_chunk(args: argparse.Namespace) -> Totals:
    """The ``chunk`` command; raises InputError on bad input or arguments."""
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    try:
        chunker = make_chunker(args.strategy, args.tokenizer, args.max_tokens, args.overlap)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(str(exc)) from exc
    for path in args.paths:
        if not os.path.exists(path):
            raise InputError(f"no such file or folder: {path}")
    totals = Totals()
    show = sys.stderr.isatty()
    with open_output(args.out) as out, tqdm(unit=" docs", file=sys.stderr, disable=not show, dynamic_ncols=True) as bar:
        for batch in batched(read_docs(args.paths)):
            totals.chunks += write_batch(chunker, batch, out, args.threads)
            totals.docs += len(batch)
            totals.nbytes += sum(doc.nbytes for doc in batch)
            bar.set_postfix_str(f"{totals.nbytes / 1e6:.1f} MB, {totals.chunks} chunks", refresh=False)
            bar.update(len(batch))
    return totals


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``chunkforge`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    started = time.perf_counter()
    try:
        totals = run_chunk(args)
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
        seconds = time.perf_counter() - started
        print(
            f"chunkforge: {totals.docs} docs, {totals.chunks} chunks, "
            f"{totals.nbytes / 1e6:.1f} MB in {seconds:.2f} s",
            file=sys.stderr,
        )
    return 0
