"""``chunkforge eval``: compares chunking configs on labelled queries (the library is
:mod:`chunkforge.eval`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_file, cache_root
from .._progress import job_progress
from .._search import EXACT_MAX
from ..errors import ChunkforgeError, DatasetError, InputError
from ..eval import (
    Config,
    EmbeddingCache,
    SpanMeasure,
    evaluate,
    evaluate_index,
    load_corpus,
    load_queries,
    markdown,
    plot,
    report,
)

if TYPE_CHECKING:
    from ..encoder import Encoder


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge eval`` on the CLI's subcommands."""
    p = commands.add_parser(
        "eval",
        help="compare chunking configs and retrieval policies on labelled queries",
        description="Chunk a corpus with each config, embed, retrieve for labelled queries, and score the "
        "retrieved context against the evidence spans at top k and at a token budget. A config with [index] "
        "and [query] tables scores Index.query (a retrieval policy) on the same queries.",
    )
    p.add_argument("--corpus", required=True, metavar="FILE", help='corpus JSONL(.gz): {"doc_id", "text", ...}')
    p.add_argument(
        "--queries",
        required=True,
        metavar="FILE",
        help='queries JSONL: {"query", "references": [{"doc_id", "start", "end"}], "type"?}',
    )
    p.add_argument(
        "--config",
        required=True,
        action="append",
        metavar="TOML",
        help="a config (chunker, representation, encoder; or index, query: a retrieval policy); repeat to compare, "
        "the first is the baseline",
    )
    p.add_argument("--k", type=int, default=5, metavar="N", help="chunks retrieved per query (default 5)")
    p.add_argument(
        "--budget-tokens",
        type=int,
        default=1000,
        metavar="TOKENS",
        help="context budget in tokens, chunks taken in rank order (default 1000; 0: off)",
    )
    p.add_argument(
        "--pack",
        choices=("skip", "stop"),
        default="skip",
        help="at the budget: skip a chunk that does not fit (default), or stop at it",
    )
    p.add_argument("--unit", choices=("tokens", "chars"), default="tokens", help="what the metrics count")
    p.add_argument(
        "--coverage",
        type=float,
        default=0.5,
        metavar="F",
        help="share of an evidence span the context must cover for it to count as found (default 0.5)",
    )
    p.add_argument(
        "--tokenizer", metavar="FILE", help="tokenizer.json the metrics count with (default: all-MiniLM-L6-v2)"
    )
    p.add_argument(
        "--exact-max",
        type=int,
        default=EXACT_MAX,
        metavar="N",
        help=f"exact search up to N chunks, hnswlib beyond (default {EXACT_MAX})",
    )
    p.add_argument("--cache", metavar="FILE", help="embedding cache (default: <cache folder>/embeddings.sqlite)")
    p.add_argument("--no-cache", action="store_true", help="embed everything, read and write no cache")
    p.add_argument(
        "--out", metavar="PREFIX", help="write PREFIX.json, PREFIX.md and PREFIX.png (default: Markdown on stdout)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    p.add_argument("-v", "--verbose", action="store_true", help="print a summary line on stderr")


def run(args: argparse.Namespace) -> str:
    """The ``eval`` command; returns the summary line, raises the CLI's InputError on bad input."""
    for flag, value, low in (
        ("--k", args.k, 1),
        ("--budget-tokens", args.budget_tokens, 0),
        ("--exact-max", args.exact_max, 0),
    ):
        if value < low:
            raise InputError(f"{flag} must be >= {low}, got {value}")
    if not 0 < args.coverage <= 1:
        raise InputError(f"--coverage must be in (0, 1], got {args.coverage}")
    try:
        corpus = load_corpus(args.corpus)
        queries = load_queries(args.queries, corpus)
        configs = [Config.load(path) for path in args.config]
        names = [c.name for c in configs]
        if len(set(names)) < len(names):
            raise DatasetError(f"--config: two configs are named {next(n for n in names if names.count(n) > 1)!r}")
        measure = SpanMeasure(corpus, args.unit, args.tokenizer)
        cache = None if args.no_cache else EmbeddingCache(args.cache or cache_root() / "embeddings.sqlite")
    except (OSError, ValueError) as exc:
        raise InputError.of(exc) from exc
    encoders: dict[str, Encoder] = {}
    results = []
    with job_progress(False if args.no_progress else "log", "eval", total=len(configs), unit=" configs") as bar:
        for config in configs:
            bar.set_postfix_str(config.name, refresh=True)
            key = json.dumps(config.encoder, sort_keys=True)
            try:
                if key not in encoders:
                    encoders[key] = config.make_encoder()
                encoder = encoders[key]
                if config.index is not None:
                    results.append(
                        evaluate_index(
                            corpus,
                            queries,
                            encoder,
                            index_options=config.index,
                            query_options=config.query,
                            k=args.k,
                            budget_tokens=args.budget_tokens or None,
                            pack=args.pack,
                            measure=measure,
                            coverage=args.coverage,
                            name=config.name,
                        )
                    )
                    bar.update(1)
                    continue
                results.append(
                    evaluate(
                        corpus,
                        queries,
                        config.make_chunker(encoder.tokenizer),
                        encoder,
                        representation=config.representation["type"],
                        representation_params={k: v for k, v in config.representation.items() if k != "type"},
                        k=args.k,
                        budget_tokens=args.budget_tokens or None,
                        pack=args.pack,
                        measure=measure,
                        coverage=args.coverage,
                        cache=cache,
                        exact_max=args.exact_max,
                        name=config.name,
                    )
                )
            except (ImportError, OSError, ValueError, TypeError) as exc:
                # the parameters of a config's tables are not flags: the message as the library says it
                placed = isinstance(exc, ChunkforgeError) and exc.where == f"config {config.name}"
                raise InputError(str(exc) if placed else f"config {config.name}: {exc}") from exc
            bar.update(1)
    header = {
        "corpus": f"{args.corpus} ({len(corpus)} docs)",
        "queries": args.queries,
        "k": args.k,
        "budget": args.budget_tokens or None,
        "pack": args.pack,
        "unit": args.unit,
        "coverage": args.coverage,
        "tokenizer": args.tokenizer or "all-MiniLM-L6-v2",
        "search": "exact (numpy)" if all(r.settings["exact_search"] for r in results) else "hnswlib",
        "configs": "; ".join(f"{c.name}: {c.describe()}" for c in configs),
    }
    rep = report(results, queries, corpus, header)
    text = markdown(rep)
    where = "stdout"
    if args.out is None:
        sys.stdout.write(text)
    else:
        outputs = [Path(args.out + ".json"), Path(args.out + ".md")]
        for path, body in zip(outputs, (json.dumps(rep, indent=1, ensure_ascii=False) + "\n", text)):
            with atomic_file(path) as tmp:
                tmp.write_text(body, encoding="utf-8")
        try:
            with atomic_file(Path(args.out + ".png")) as tmp:
                plot(rep, tmp)
            outputs.append(Path(args.out + ".png"))
        except ImportError:
            print("chunkforge: matplotlib is not installed, no plot (pip install 'chunkforge[eval]')", file=sys.stderr)
        where = ", ".join(map(str, outputs))
    reused = f", {cache.embedded} texts embedded, {cache.reused} from the cache" if cache else ""
    if cache:
        cache.close()
    return f"{len(configs)} configs, {len(queries)} queries{reused} -> {where}"
