"""End-to-end query latency: embed the query (ONNX, one thread) + hybrid search
(hnswlib + bm25s, fused) + expand, on a saved index; questions are leaf
sentences of the index's own documents, reworded by dropping their first word.

    python benches/query_latency.py INDEX [--queries 200]
"""

from __future__ import annotations

import argparse
import gc
import random
import time

import numpy as np

from chunkforge.index import Index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    index = Index.load(args.index)
    rng = random.Random(0)
    leaves = [h for h in index.leaves(score=0.0) if len(h.text) > 40]
    questions = [" ".join(h.text.split()[1:20]) for h in rng.sample(leaves, min(args.queries, len(leaves)))]
    index.query(questions[0], window=2, budget_tokens=1000)  # loads the encoder, builds BM25
    gc.collect()
    gc.freeze()
    stages: dict[str, list[float]] = {"embed": [], "search": [], "expand": [], "total": []}
    for q in questions:
        t0 = time.perf_counter()
        index.encoder.embed_query(q)
        t1 = time.perf_counter()
        hits = index.search(q, k=12)  # embeds again: search is what users call
        t2 = time.perf_counter()
        index.expand(hits, window=2, budget_tokens=1000)
        t3 = time.perf_counter()
        stages["embed"].append(t1 - t0)
        stages["search"].append(t2 - t1)
        stages["expand"].append(t3 - t2)
        stages["total"].append(t3 - t1)
    print(f"{index}: {len(questions)} queries")
    for name, samples in stages.items():
        a = np.array(samples) * 1e3
        print(f"{name:8s} p50 {np.percentile(a, 50):7.2f} ms  p99 {np.percentile(a, 99):7.2f} ms")


if __name__ == "__main__":
    main()
