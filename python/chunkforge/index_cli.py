"""The ``index`` and ``query`` commands of the ``chunkforge`` CLI.

``chunkforge index build DOCS... --out INDEX`` builds an :class:`~chunkforge.index.Index`
of files, folders and JSONL (as ``chunkforge chunk`` reads them; a JSONL record's
``source`` is kept for filters); ``chunkforge query INDEX "question"`` prints the
payload with citations (``[n] doc_id:start-end``), or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from typing import Any

from ._recommended import RECOMMENDED
from ._io import InputError, check_paths, is_record_file, read_documents as read_inputs


def add_parsers(commands: Any) -> None:
    """Registers ``index build`` and ``query`` on the CLI's subparsers."""
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
    build.add_argument("--parent-tokens", type=int, nargs="*", default=[256], metavar="N",
                       help="sizes of the levels between sections and leaves, largest first (default 256); "
                       "BM25 ranks the leaves' parents")
    build.add_argument("--no-hybrid", action="store_true", help="dense ranking only (no BM25)")
    build.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    build.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")
    query = commands.add_parser(
        "query",
        help="search an index and print the payload with citations",
        description="Retrieve the best leaves for a question and expand them into passages.",
    )
    query.add_argument("index", metavar="INDEX", help="index folder (from `chunkforge index build`)")
    query.add_argument("question")
    query.add_argument("--k", type=int, default=RECOMMENDED["k"], metavar="N",
                       help=f"leaves to retrieve (default {RECOMMENDED['k']})")
    how = query.add_mutually_exclusive_group()
    how.add_argument("--window", type=int, metavar="W", help="W sentences either side of each hit (default: none; "
                     "the hits as they are retrieved best at a fixed budget, see benches/results/retrieval-eval.md)")
    how.add_argument("--auto-merge", type=float, metavar="RATIO", help="merge into parents above RATIO of children")
    how.add_argument("--parent", action="store_true", help="return each hit's parent")
    query.add_argument("--window-tokens", type=int, metavar="N",
                       help="grow each hit by whole sentences within its section up to N tokens")
    query.add_argument("--budget", type=int, default=RECOMMENDED["budget_tokens"], metavar="TOKENS",
                       help=f"token budget of the payload (default {RECOMMENDED['budget_tokens']}; 0: no budget)")
    query.add_argument("--order", choices=("score", "document"), default="score", help="passage order")
    query.add_argument("--pack", choices=("skip", "stop"), default="skip", help="a passage over the budget")
    query.add_argument("--trim", action="store_true", help="trim the first passage over the budget to sentences")
    query.add_argument("--doc-id", action="append", metavar="ID", help="only this document (repeatable)")
    query.add_argument("--source", action="append", metavar="NAME", help="only this source (repeatable)")
    query.add_argument("--heading", action="append", metavar="TITLE", help="heading path prefix (repeat per level)")
    query.add_argument("--json", action="store_true", help="print the payload as JSON")
    query.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


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
    """The ``index build`` or ``query`` command; returns the summary line."""
    try:
        from .index import CorruptIndexError, Index
    except ImportError as exc:
        raise InputError(str(exc)) from exc
    if args.command == "index":
        check_paths(args.paths)
        try:
            index = Index(leaf_tokens=args.leaf_tokens, parent_tokens=tuple(args.parent_tokens),
                          hybrid=not args.no_hybrid)
            index.add(read_documents(args.paths), show_progress=False if args.no_progress else None)
            index.save(args.out)
        except (ValueError, TypeError) as exc:
            raise InputError(str(exc)) from exc
        return f"{len(index)} docs, {index.leaf_count} leaves -> {args.out}"
    try:
        index = Index.load(args.index)
    except (FileNotFoundError, CorruptIndexError) as exc:
        raise InputError(str(exc)) from exc
    try:
        hits = index.search(args.question, k=args.k, doc_id=args.doc_id, source=args.source,
                            heading_prefix=args.heading)
        payload = index.expand(hits, window=args.window, window_tokens=args.window_tokens, parent=args.parent,
                               auto_merge=args.auto_merge, budget_tokens=args.budget or None, order=args.order,
                               pack=args.pack, trim=args.trim)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc)) from exc
    if args.json:
        print(json.dumps({
            "passages": [{"doc_id": p.doc_id, "start": p.start, "end": p.end, "token_count": p.token_count,
                          "score": p.score, "heading_path": list(p.heading_path), "text": p.text,
                          "hits": [[h.start, h.end] for h in p.hits]} for p in payload.passages],
            "dropped": [{"doc_id": h.doc_id, "start": h.start, "end": h.end} for h in payload.dropped],
        }, ensure_ascii=False))
    else:
        print(payload.render())
    return f"{len(payload.passages)} passages, {payload.token_count} tokens, {len(payload.dropped)} hits dropped"
