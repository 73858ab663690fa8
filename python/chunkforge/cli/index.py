"""``chunkforge index build DOCS... --out INDEX``: builds an :class:`~chunkforge.index.Index`
of files, folders, JSONL and Parquet (as ``chunkforge chunk`` reads them; a record's
``source`` is kept for filters), with the default model or ``--model DIR``;
``index add INDEX DOCS...`` and ``index delete INDEX ID...`` change a saved index (saved
again atomically), ``index info INDEX`` describes one."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from typing import Any

from .._io import check_paths, is_record_file
from .._io import read_documents as read_inputs
from ..errors import InputError
from ._common import load_cli_encoder, load_index_encoder


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge index build`` on the CLI's subcommands."""
    index = commands.add_parser(
        "index", help="build, change and describe retrieval indexes", description="Manage retrieval indexes."
    )
    actions = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="index documents",
        description="Split documents into sections, parents and sentence leaves, embed the leaves "
        "(default model) and write the index folder atomically.",
    )
    build.add_argument("paths", nargs="+", metavar="PATH", help="a text file, a folder or a .jsonl/.jsonl.gz file")
    build.add_argument("--out", required=True, metavar="INDEX", help="index folder (replaced atomically)")
    build.add_argument("--leaf-tokens", type=int, default=48, metavar="N", help="token cap of a leaf (default 48)")
    build.add_argument(
        "--parent-tokens",
        type=int,
        nargs="*",
        default=[256],
        metavar="N",
        help="sizes of the levels between sections and leaves, largest first (default 256); "
        "BM25 ranks the leaves' parents",
    )
    build.add_argument("--no-hybrid", action="store_true", help="dense ranking only (no BM25)")
    build.add_argument(
        "--no-search-prefix",
        action="store_true",
        help="no search prefix (by default each document's title and each leaf's heading path come before "
        "what its vector and BM25 see)",
    )
    build.add_argument(
        "--model",
        default="default",
        metavar="DIR|default",
        help="model folder (ONNX, or BERT safetensors converted once), or default (all-MiniLM-L6-v2); "
        "the index remembers it for query, add and delete",
    )
    build.add_argument(
        "--variant",
        choices=("optimized", "fp32", "int8", "fp16"),
        default="optimized",
        help="graph variant of the model (default optimized)",
    )
    build.add_argument("--threads", type=int, metavar="N", help="ONNX Runtime intra-op threads (default: all cores)")
    add_common(build)
    add = actions.add_parser(
        "add", help="add documents to an index", description="Add documents to a saved index and save it again."
    )
    add.add_argument("index", metavar="INDEX", help="index folder (from `chunkforge index build`)")
    add.add_argument("paths", nargs="+", metavar="PATH", help="a text file, a folder or a .jsonl/.jsonl.gz file")
    add_common(add)
    delete = actions.add_parser(
        "delete",
        help="delete documents from an index",
        description="Delete documents by id from a saved index and save it again.",
    )
    delete.add_argument("index", metavar="INDEX", help="index folder (from `chunkforge index build`)")
    delete.add_argument("doc_ids", nargs="+", metavar="ID", help="document id (as `index info --docs` lists them)")
    delete.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    info = actions.add_parser("info", help="describe an index", description="Print what a saved index holds.")
    info.add_argument("index", metavar="INDEX", help="index folder (from `chunkforge index build`)")
    info.add_argument("--docs", action="store_true", help="also list the document ids")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def add_common(parser: argparse.ArgumentParser) -> None:
    """The flags of the commands that embed documents."""
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    parser.add_argument(
        "--main-content",
        action="store_true",
        help="HTML: only the main content (navigation, headers, footers, sidebars and forms left out, as a crawl needs)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


READER_KEYS = ("syntax", "format", "title", "provenance")
"""The metadata a source document's reader adds (``chunkforge.readers``), kept in the index."""


def read_documents(paths: list[str], main_content: bool = False) -> Iterator[dict[str, Any]]:
    """Documents ``{"id", "text", "source"}`` of files, folders, JSONL and Parquet files
    and stdin (the one reader and id rule of ``chunkforge chunk``); ``source`` is the
    record's own when it is a string, else the input file (a plain file: its folder). A
    document read from HTML, PDF, DOCX or Docling JSON also keeps its reader's
    ``syntax``, ``format``, ``title`` and ``provenance`` (its pages, for citations)."""
    for path in paths:
        for doc in read_inputs([path], main_content=main_content):
            source = doc.metadata.get("source")
            if not isinstance(source, str):
                source = path if is_record_file(path) else os.path.dirname(str(doc.doc_id))
            record: dict[str, Any] = {"id": str(doc.doc_id), "text": doc.text, "source": source}
            if "provenance" in doc.metadata:
                record.update((k, doc.metadata[k]) for k in READER_KEYS if k in doc.metadata)
            yield record


def run(args: argparse.Namespace) -> str:
    """The ``index`` commands; returns the summary line."""
    try:
        from ..index import Index
    except ImportError as exc:
        raise InputError.of(exc) from exc
    if args.index_command == "build":
        check_paths(args.paths)
        encoder = load_cli_encoder(args)
        try:
            index = Index(
                encoder,
                leaf_tokens=args.leaf_tokens,
                parent_tokens=tuple(args.parent_tokens),
                hybrid=not args.no_hybrid,
                search_prefix=not args.no_search_prefix,
            )
        except (ValueError, TypeError) as exc:
            raise InputError.of(exc) from exc
        return add_and_save(index, args.paths, args.out, args.no_progress, args.main_content)
    index = load_index(Index, args.index)
    if args.index_command == "add":
        check_paths(args.paths)
        load_index_encoder(index)
        return add_and_save(index, args.paths, args.index, args.no_progress, args.main_content)
    if args.index_command == "delete":
        missing = [doc_id for doc_id in args.doc_ids if doc_id not in index]
        if missing:
            raise InputError(f"no document {missing[0]!r} in {args.index} (index info --docs lists them)")
        for doc_id in dict.fromkeys(args.doc_ids):
            index.delete(doc_id)
        index.save(args.index)
        return f"{len(dict.fromkeys(args.doc_ids))} docs deleted, {len(index)} docs, {index.leaf_count} leaves -> {args.index}"
    facts = index_info(index, args.docs)
    print(json.dumps(facts, ensure_ascii=False) if args.json else "\n".join(f"{k}: {v}" for k, v in facts.items()))
    return f"{len(index)} docs"


def load_index(index_class: Any, path: str) -> Any:
    """The saved index at ``path``; InputError for a missing or corrupt one."""
    from ..index import CorruptIndexError

    try:
        return index_class.load(path)
    except (FileNotFoundError, CorruptIndexError) as exc:
        raise InputError.of(exc) from exc


def add_and_save(index: Any, paths: list[str], out: str, no_progress: bool, main_content: bool = False) -> str:
    """Adds the documents of ``paths`` to ``index`` and saves it to ``out``."""
    load_index_encoder(index)
    try:
        index.add(read_documents(paths, main_content), show_progress=False if no_progress else None)
        index.save(out)
    except (ValueError, TypeError) as exc:
        raise InputError.of(exc) from exc
    return f"{len(index)} docs, {index.leaf_count} leaves -> {out}"


def index_info(index: Any, with_docs: bool) -> dict[str, Any]:
    """What ``index info`` prints: counts, settings and the model."""
    from .._config import encoder_label
    from ..index.persist import encoder_config

    config = index._encoder_config if index._encoder is None else encoder_config(index._encoder)
    facts: dict[str, Any] = {
        "documents": len(index),
        "leaves": index.leaf_count,
        "model": f"Encoder.default({index.encoder_variant})" if config is None else encoder_label(config),
        "dim": index._dim,
        "leaf_tokens": index.leaf_tokens,
        "parent_tokens": list(index.parent_tokens),
        "hybrid": index.hybrid,
        "weights": list(index.weights),
    }
    if with_docs:
        facts["doc_ids"] = index.doc_ids
    return facts
