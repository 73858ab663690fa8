"""Peak memory of ``spans_batch`` over a whole corpus (default: the 35 MB shipped corpus).

    python benches/memory_spans_batch.py [--corpus FILE] [--threads N]

Prints the process's peak RSS after loading the texts and after chunking, so the
difference is what chunking costs on top of holding the corpus in memory.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import chunkforge
from peak_memory import peak_rss_mb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(Path(__file__).parents[1] / "tests" / "data" / "docs-corpus.jsonl.gz"))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()
    with gzip.open(args.corpus, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    chunker = chunkforge.RecursiveChunker(max_tokens=args.max_tokens)
    chunker.spans_batch(texts[:5])
    base = peak_rss_mb()
    t0 = time.perf_counter()
    spans = chunker.spans_batch(texts, threads=args.threads)
    secs = time.perf_counter() - t0
    peak = peak_rss_mb()
    print(f"{len(texts)} docs, {mb:.1f} MB, {len(spans.doc)} chunks in {secs:.2f} s ({mb / secs:.1f} MB/s wall)")
    print(f"peak RSS: {base:.0f} MB with the corpus loaded, {peak:.0f} MB after spans_batch (+{peak - base:.0f} MB)")


if __name__ == "__main__":
    main()
