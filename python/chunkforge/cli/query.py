"""``chunkforge query INDEX "question"``: prints the payload with citations
(``[n] doc_id:start-end``), or JSON with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._recommended import RECOMMENDED
from ..errors import InputError
from ._common import load_index_encoder


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge query`` on the CLI's subcommands."""
    query = commands.add_parser(
        "query",
        help="search an index and print the payload with citations",
        description="Retrieve the best leaves for a question and expand them into passages.",
    )
    query.add_argument(
        "index",
        metavar="INDEX",
        help="index folder (from `chunkforge index build`), a dataset folder of `chunkforge embed-docs --index`, "
        "or the LanceDB store of `embed-docs --index --lancedb URI`",
    )
    query.add_argument("question")
    query.add_argument(
        "--k", type=int, default=RECOMMENDED["k"], metavar="N", help=f"leaves to retrieve (default {RECOMMENDED['k']})"
    )
    how = query.add_mutually_exclusive_group()
    how.add_argument(
        "--window",
        type=int,
        metavar="W",
        help="W sentences either side of each hit instead of --spread (default: none; spread retrieved best "
        "at a fixed budget, see benches/results/retrieval-buckets.md)",
    )
    how.add_argument("--auto-merge", type=float, metavar="RATIO", help="merge into parents above RATIO of children")
    how.add_argument("--parent", action="store_true", help="return each hit's parent")
    query.add_argument(
        "--window-tokens",
        type=int,
        metavar="N",
        help="grow each hit by whole sentences within its section up to N tokens",
    )
    query.add_argument(
        "--spread",
        type=float,
        metavar="DECAY",
        help=f"each hit lends the leaves near it DECAY**distance of its relevance (default {RECOMMENDED['spread']}, "
        "the recommended; 0: off, the hits as they are; see benches/results/retrieval-buckets.md)",
    )
    query.add_argument(
        "--floor",
        type=float,
        default=RECOMMENDED["floor"],
        metavar="COSINE",
        help="print no passage when the best cosine of the question with a hit leaf is under COSINE (default: "
        "off; the curve to choose one: benches/results/retrieval-defaults.md)",
    )
    query.add_argument(
        "--budget-tokens",
        type=int,
        default=RECOMMENDED["budget_tokens"],
        metavar="TOKENS",
        help=f"token budget of the payload (default {RECOMMENDED['budget_tokens']}; 0: no budget)",
    )
    query.add_argument("--order", choices=("score", "document"), default="score", help="passage order")
    query.add_argument("--pack", choices=("skip", "stop"), default="skip", help="a passage over the budget")
    query.add_argument("--trim", action="store_true", help="trim the first passage over the budget to sentences")
    query.add_argument("--doc-id", action="append", metavar="ID", help="only this document (repeatable)")
    query.add_argument("--source", action="append", metavar="NAME", help="only this source (repeatable)")
    query.add_argument("--heading", action="append", metavar="TITLE", help="heading path prefix (repeat per level)")
    query.add_argument(
        "--where",
        action="append",
        metavar="FIELD=VALUE",
        help="only documents whose metadata FIELD is VALUE (repeatable: a field given twice takes either value)",
    )
    query.add_argument("--json", action="store_true", help="print the payload as JSON")
    query.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def where_filter(pairs: list[str] | None, flag: str = "--where") -> dict[str, list[Any]] | None:
    """``--where FIELD=VALUE`` flags as a metadata filter: VALUE is a number, ``true``,
    ``false`` or ``null`` when it reads as one in JSON, else the string itself.

    >>> where_filter(["acl=public", "year=2024", "acl=staff", "draft=false"])
    {'acl': ['public', 'staff'], 'year': [2024], 'draft': [False]}
    """
    if not pairs:
        return None
    where: dict[str, list[Any]] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError(f"{flag} must be FIELD=VALUE, not {pair!r}")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        if isinstance(parsed, (dict, list, str)) or (isinstance(parsed, float) and parsed != parsed):
            parsed = value
        where.setdefault(name, []).append(parsed)
    return where


def run(args: argparse.Namespace) -> str:
    """The ``query`` command; returns the summary line."""
    try:
        from ..index.options import ExpandOptions
        from ..serve.source import SourceError, open_index
    except ImportError as exc:
        raise InputError.of(exc) from exc
    try:
        index: Any = open_index(args.index)
    except SourceError as exc:
        raise InputError.of(exc) from exc
    load_index_encoder(index)
    try:
        given = {
            "window": args.window,
            "window_tokens": args.window_tokens,
            "parent": args.parent,
            "auto_merge": args.auto_merge,
            **({} if args.spread is None else {"spread": args.spread or None}),
        }
        options = ExpandOptions.recommended(
            None,
            **{k: v for k, v in given.items() if v not in (None, False) or k == "spread"},
            budget_tokens=args.budget_tokens or None,
            order=args.order,
            pack=args.pack,
            trim=args.trim,
        )
        payload = index.query(
            args.question,
            k=args.k,
            doc_id=args.doc_id,
            source=args.source,
            heading_prefix=args.heading,
            where=where_filter(args.where),
            options=options,
            floor=args.floor,
        )
    except (ValueError, TypeError) as exc:
        raise InputError.of(exc) from exc
    if args.json:
        print(
            json.dumps(
                {
                    "passages": [
                        {
                            "doc_id": p.doc_id,
                            "start": p.start,
                            "end": p.end,
                            "token_count": p.token_count,
                            "score": p.score,
                            "heading_path": list(p.heading_path),
                            "text": p.text,
                            "hits": [[h.start, h.end] for h in p.hits],
                            "citation": None if (c := payload.citation(p)) is None else c.as_dict(),
                        }
                        for p in payload.passages
                    ],
                    "dropped": [{"doc_id": h.doc_id, "start": h.start, "end": h.end} for h in payload.dropped],
                    "metadata": {  # a read document's provenance is cited passage by passage
                        doc_id: {k: v for k, v in fields.items() if k != "provenance"}
                        for doc_id, fields in payload.metadata.items()
                    },
                    "abstained": payload.abstained,
                },
                ensure_ascii=False,
            )
        )
    else:
        print(payload.render())
    if payload.abstained:
        print(f"no passage: the best match scored under --floor {args.floor}", file=sys.stderr)
    return f"{len(payload.passages)} passages, {payload.token_count} tokens, {len(payload.dropped)} hits dropped"
