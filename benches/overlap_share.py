"""Share of adjacent chunk pairs that overlap, and the overlap sizes, on the sample corpus.

    PYTHONPATH=python python benches/overlap_share.py [--max-tokens 256] [--overlap 32]

Pairs are counted within one document (and, for MarkdownChunker, one section); the
overlap size is the token count of the shared text re-encoded alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

import chunkforge
from chunkforge.chunkers.markdown import syntax_for_path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "docs-corpus-small.jsonl.gz"


def overlap_stats(chunker, docs, tokenizer) -> tuple[int, list[int]]:
    """(adjacent pairs in a section, token sizes of the overlaps of those that overlap)."""
    pairs, sizes = 0, []
    for text, chunks in zip(docs, chunker.chunk_batch(docs)):
        for a, b in zip(chunks, chunks[1:]):
            if a.heading_path != b.heading_path:
                continue
            pairs += 1
            if b.start < a.end:
                sizes.append(tokenizer.count(text[b.start : a.end]))
    return pairs, sizes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--overlap", type=int, default=32)
    args = ap.parse_args()
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    tok = chunkforge.Tokenizer.default()
    docs = [r["text"] for r in records]
    by_syntax: dict[str, list[str]] = {}
    for r in records:
        by_syntax.setdefault(syntax_for_path(r["id"]) or "markdown", []).append(r["text"])
    rows = [("recursive", chunkforge.RecursiveChunker(tok, args.max_tokens, overlap=args.overlap), docs)]
    rows += [
        (
            f"markdown (syntax={syntax})",
            chunkforge.MarkdownChunker(tok, args.max_tokens, overlap=args.overlap, syntax=syntax),
            texts,
        )
        for syntax, texts in sorted(by_syntax.items())
    ]
    rows.append(
        ("sentence (overlap_sentences=2)", chunkforge.SentenceChunker(tok, args.max_tokens, overlap_sentences=2), docs)
    )
    print(f"max_tokens={args.max_tokens} overlap={args.overlap}, {len(docs)} docs")
    print("| chunker | adjacent pairs | overlapping | overlap tokens p10 / p50 / p90 / max |")
    print("| --- | ---: | ---: | --- |")
    for name, chunker, texts in rows:
        pairs, sizes = overlap_stats(chunker, texts, tok)
        q = np.percentile(sizes, [10, 50, 90]).astype(int).tolist() + [max(sizes)] if sizes else ["-"] * 4
        print(f"| {name} | {pairs} | {len(sizes) / max(pairs, 1):.1%} | {' / '.join(map(str, q))} |")


if __name__ == "__main__":
    main()
