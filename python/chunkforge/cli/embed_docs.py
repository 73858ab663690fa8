"""``chunkforge embed-docs DOCS... --out DATASET``: the bulk job (:mod:`chunkforge.bulk`) from
the command line; the library's errors name its parameters, this command its flags.

>>> from chunkforge.cli import build_parser
>>> build_parser().parse_args(["embed-docs", "notes", "--out", "vectors", "--float16"]).float16
True
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import bulk
from .._recommended import VARIANTS
from ..bulk.spec import SHARD_DOCS
from ..chunkers.registry import bulk_strategies
from ..errors import InputError

FLAGS = {
    "dtype": "--float16",
    "units": "--index",
    "search_prefix": "--no-search-prefix",
    "inputs": "DOCS",
}
"""The bulk job's parameters that a flag named otherwise sets, and the flags (the others are
the flags whose ``dest`` they are, see :func:`chunkforge.cli.flag_of`)."""


def add_parser(commands: Any) -> None:
    """The ``embed-docs`` command."""
    cmd = commands.add_parser(
        "embed-docs",
        help="chunk and embed documents into a Parquet dataset (incremental, resumable)",
        description="Chunk and embed documents into the dataset folder --out: Parquet shards of one row per "
        "chunk (doc_id, chunk_id, start, end, token_count, heading_path, [text], text_hash, vector) and "
        "manifest.json. A rerun re-embeds only what changed and resumes after a crash.",
    )
    cmd.add_argument(
        "paths",
        nargs="+",
        metavar="DOCS",
        help="a text file, a folder (its .md/.txt/.rst/.adoc files), a .jsonl/.jsonl.gz file, "
        "a Parquet file or folder of Parquet files, or - (JSONL on stdin)",
    )
    cmd.add_argument("--out", required=True, metavar="DATASET", help="dataset folder (created, or updated in place)")
    cmd.add_argument(
        "--main-content",
        action="store_true",
        help="HTML: only the main content (navigation, headers, footers, sidebars and forms left out, as a crawl needs)",
    )
    cmd.add_argument(
        "--model", default="default", metavar="DIR|default", help="model folder, or `default` (all-MiniLM-L6-v2)"
    )
    cmd.add_argument(
        "--variant",
        choices=VARIANTS,
        default="auto",
        help="auto: the fastest that keeps cosine >= 0.9999 to fp32 on this machine (bf16 on OpenVINO where the CPU has it); "
        "else the graph variant (default auto)",
    )
    cmd.add_argument(
        "--strategy", choices=bulk_strategies(), default="recursive", help="how to cut (default recursive)"
    )
    cmd.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="token limit per chunk (default: the model's window, 254 for all-MiniLM-L6-v2)",
    )
    cmd.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="tokens repeated between chunks; sentences for --strategy sentence (default 0)",
    )
    cmd.add_argument(
        "--id-column",
        metavar="NAME",
        help="document id field of JSONL records and Parquet rows (default: doc_id, else id)",
    )
    cmd.add_argument(
        "--text-column",
        default="text",
        metavar="NAME",
        help="document text field of JSONL records and Parquet rows (default text)",
    )
    cmd.add_argument(
        "--index",
        action="store_true",
        help="write what chunkforge's index needs instead of plain chunks: every document's tree (sections, "
        "parents, leaves), its text and metadata, and a row with a vector per leaf (chunkforge.Index.from_dataset, "
        "the LanceDB store); --strategy, --max-tokens and --overlap do not apply",
    )
    cmd.add_argument(
        "--leaf-tokens", type=int, default=48, metavar="N", help="with --index: tokens per leaf (default 48)"
    )
    cmd.add_argument(
        "--parent-tokens",
        default="256",
        metavar="N[,N...]",
        help="with --index: tokens of the parent levels, largest first, or '' for none (default 256)",
    )
    cmd.add_argument(
        "--no-search-prefix",
        action="store_true",
        help="with --index: no search prefix (by default each document's title and each leaf's heading path come before what its vector and BM25 see)",
    )
    cmd.add_argument("--with-text", action="store_true", help="store each chunk's text in the rows")
    cmd.add_argument("--float16", action="store_true", help="store vectors as float16 (default float32)")
    cmd.add_argument(
        "--lancedb",
        metavar="URI",
        help="also write the rows to this LanceDB database (table chunks; with --index, the store that "
        "chunkforge.Index.open and `chunkforge query` serve: leaves, parents, docs, commits), updated incrementally",
    )
    cmd.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="chunk and embed on a Ray cluster: its address, `auto`, or `local` for a new local one",
    )
    cmd.add_argument("--ray-actors", type=int, metavar="N", help="encoder actors on Ray (default: one per GPU, else 2)")
    cmd.add_argument(
        "--on-overflow",
        choices=("warn", "truncate", "error"),
        default="warn",
        help="chunks longer than the model's window: truncate with a warning (default), quietly, or stop",
    )
    cmd.add_argument(
        "--max-batch-tokens",
        type=int,
        metavar="N",
        help="padded tokens per encoder batch (default: 2048 with OpenVINO, 512 on CPU, 16384 on GPU)",
    )
    cmd.add_argument(
        "--shard-docs",
        type=int,
        default=SHARD_DOCS,
        metavar="N",
        help=f"mean documents per shard (default {SHARD_DOCS})",
    )
    cmd.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="PATH",
        help="take vectors already computed instead of embedding them again: another dataset folder, or a "
        "Parquet file written by `chunkforge embed` (same model; by chunk text); repeatable",
    )
    cmd.add_argument("--threads", type=int, metavar="N", help="chunker and ONNX Runtime threads (default: all cores)")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    cmd.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def parent_tokens(value: str) -> tuple[int, ...]:
    """``--parent-tokens``: comma-separated sizes."""
    try:
        return tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError as exc:
        raise InputError(f"--parent-tokens must be integers separated by commas, not {value!r}") from exc


def run(args: argparse.Namespace) -> str:
    """The ``embed-docs`` command; returns the summary line, raises InputError naming the flag."""
    spec = bulk.JobSpec(
        model=args.model,
        variant=args.variant,
        strategy=args.strategy,
        max_tokens=args.max_tokens,
        overlap=args.overlap,
        with_text=args.with_text,
        dtype="float16" if args.float16 else "float32",
        id_column=args.id_column,
        text_column=args.text_column,
        on_overflow=args.on_overflow,
        max_batch_tokens=args.max_batch_tokens,
        threads=args.threads,
        shard_docs=args.shard_docs,
        units="tree" if args.index else "chunks",
        leaf_tokens=args.leaf_tokens,
        parent_tokens=parent_tokens(args.parent_tokens),
        search_prefix=not args.no_search_prefix,
        reuse=tuple(args.reuse),
        main_content=args.main_content,
    )
    summary = bulk.run(
        args.paths,
        args.out,
        spec=spec,
        progress=False if args.no_progress else "log",
        lancedb=args.lancedb,
        ray=args.ray,
        ray_actors=args.ray_actors,
    )
    return summary.line()
