"""Late chunking against plain chunk-then-embed of the same chunks (CPU).

Both sides chunk the same documents with the same chunker and embed with the same
encoder (all-MiniLM-L6-v2, optimized graph, 2 intra-op threads): *plain* embeds
each chunk's text alone (``Encoder.embed``, token-budget batching), *late* runs
``LateChunker.chunk_batch`` (segments of 256 tokens, ``segment_overlap``
shared). Rounds alternate between the two; the best round of each is reported,
with the tokens each side sent through the model (special tokens included).

    python benches/late_bench.py [--docs 0] [--max-tokens 128] [--rounds 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np

from chunkforge import Encoder, LateChunker, RecursiveChunker

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "docs-corpus-small.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=0, help="first N documents (0: all 156)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--segment-overlap", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    docs = docs[: args.docs or None]
    enc = Encoder.default(intra_op_threads=2)
    chunker = RecursiveChunker(enc.tokenizer, max_tokens=args.max_tokens)
    late = LateChunker(chunker, enc, segment_overlap=args.segment_overlap)

    def plain() -> int:
        chunks = chunker.chunk_batch(docs)
        return len(enc.embed([c.text for doc in chunks for c in doc]))

    def late_run() -> int:
        return sum(len(r.chunks) for r in late.chunk_batch(docs))

    times: dict[str, list[float]] = {"plain": [], "late": []}
    for _ in range(args.rounds):
        for name, fn in (("plain", plain), ("late", late_run)):
            t = time.perf_counter()
            n_chunks = fn()
            times[name].append(time.perf_counter() - t)
    chunks = chunker.chunk_batch(docs)
    plain_tokens = int(sum(c.token_count + 2 for doc in chunks for c in doc))
    counts = enc.tokenizer.count_batch(docs).tolist()
    doc_tokens = int(sum(counts))
    late_tokens = 0
    for n in counts:  # the windows LateChunker runs: late.segment_tokens tokens + [CLS]/[SEP] each
        starts, _ = late.segments(n)
        late_tokens += int((np.minimum(starts + late.segment_tokens, n) - starts).sum()) + 2 * len(starts)
    best = {k: min(v) for k, v in times.items()}
    result = {
        "docs": len(docs),
        "chunks": n_chunks,
        "doc_tokens": doc_tokens,
        "max_tokens": args.max_tokens,
        "segment_overlap": args.segment_overlap,
        "plain_s": round(best["plain"], 2),
        "late_s": round(best["late"], 2),
        "plain_docs_per_s": round(len(docs) / best["plain"], 2),
        "late_docs_per_s": round(len(docs) / best["late"], 2),
        "late_over_plain": round(best["late"] / best["plain"], 3),
        "plain_model_tokens": plain_tokens,
        "late_model_tokens": late_tokens,
        "all_rounds_s": times,
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
