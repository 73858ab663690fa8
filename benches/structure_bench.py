"""Sections on the shipped corpus: the share of chunks that cross a section title,
RecursiveChunker against MarkdownChunker (reST titles for the kernel and Python
docs, AsciiDoc for git's), and their throughput side by side (CPU time, 1 thread).

    python benches/structure_bench.py [--limit-mb 10] [--max-tokens 512] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import chunkforge

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_markdown import crossing_share  # noqa: E402  (the tests' definition of crossing)

SYNTAX = {"git-doc": "asciidoc", "linux-doc-6.1": "rst", "python3.11-doc": "rst"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT / "tests" / "data" / "docs-corpus.jsonl.gz"))
    ap.add_argument("--limit-mb", type=float, default=10)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    docs, size = [], 0
    with gzip.open(args.corpus, "rt", encoding="utf-8") as f:
        for line in f:
            if size >= args.limit_mb * 1e6:
                break
            docs.append(json.loads(line))
            size += len(docs[-1]["text"].encode())
    texts = [d["text"] for d in docs]
    recursive = chunkforge.RecursiveChunker(max_tokens=args.max_tokens)
    structured = {s: chunkforge.MarkdownChunker(max_tokens=args.max_tokens, syntax=s) for s in set(SYNTAX.values())}

    def run_structured() -> list:
        return [structured[SYNTAX[d["source"]]].chunk_batch([d["text"]], threads=1)[0] for d in docs]

    def run_recursive() -> list:
        return recursive.chunk_batch(texts, threads=1)

    timings: dict[str, list[float]] = {"recursive": [], "markdown": []}
    outputs = {}
    for _ in range(args.rounds):
        for name, fn in (("recursive", run_recursive), ("markdown", run_structured)):
            t0 = time.process_time()
            outputs[name] = fn()
            timings[name].append(time.process_time() - t0)
    mb = size / 1e6
    print(f"{len(docs)} docs, {mb:.1f} MB, max_tokens={args.max_tokens}")
    print("| chunker | chunks | crossing a section title | with heading path | cpuMB/s (best of rounds) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in ("recursive", "markdown"):
        chunks = outputs[name]
        n = sum(map(len, chunks))
        with_path = sum(bool(c.heading_path) for cs in chunks for c in cs)
        print(
            f"| {name} | {n} | {crossing_share(chunks, texts):.2%} | {with_path / n:.1%} | {mb / min(timings[name]):.1f} |"
        )
    print(f"throughput ratio recursive/markdown: {min(timings['markdown']) / min(timings['recursive']):.2f}x")


if __name__ == "__main__":
    main()
