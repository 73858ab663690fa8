"""``chunkforge index build DOCS... --out INDEX``: builds an :class:`~chunkforge.index.Index`
of files, folders, JSONL and Parquet (as ``chunkforge chunk`` reads them; a record's
``source`` is kept for filters)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

from .._io import check_paths, is_record_file
from .._io import read_documents as read_inputs
from ..errors import InputError
from ._common import load_index_encoder


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge index build`` on the CLI's subcommands."""
    index = commands.add_parser("index", help="build a retrieval index", description="Manage retrieval indexes.")
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
    build.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    build.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def read_documents(paths: list[str]) -> Iterator[dict[str, str]]:
    """Documents ``{"id", "text", "source"}`` of files, folders, JSONL and Parquet files
    and stdin (the one reader and id rule of ``chunkforge chunk``); ``source`` is the
    record's own when it is a string, else the input file (a plain file: its folder)."""
    for path in paths:
        for doc in read_inputs([path]):
            source = doc.metadata.get("source")
            if not isinstance(source, str):
                source = path if is_record_file(path) else os.path.dirname(str(doc.doc_id))
            yield {"id": str(doc.doc_id), "text": doc.text, "source": source}


def run(args: argparse.Namespace) -> str:
    """The ``index build`` command; returns the summary line."""
    try:
        from ..index import Index
    except ImportError as exc:
        raise InputError(str(exc)) from exc
    check_paths(args.paths)
    try:
        index = Index(leaf_tokens=args.leaf_tokens, parent_tokens=tuple(args.parent_tokens), hybrid=not args.no_hybrid)
        load_index_encoder(index)
        index.add(read_documents(args.paths), show_progress=False if args.no_progress else None)
        index.save(args.out)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc)) from exc
    return f"{len(index)} docs, {index.leaf_count} leaves -> {args.out}"
