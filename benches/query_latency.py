"""End-to-end query latency on a ~100k-leaf index: ``Index.query(question)`` with the
defaults (embed the question with the ONNX encoder, dense and BM25
ranking, fusion, expansion and packing into 1,000 tokens), and the index's build
time and peak memory.

The index holds the first documents of ``tests/data/docs-corpus.jsonl.gz`` up to
``--leaves`` leaves. Embedding 100k leaves takes ~20 minutes on two cores, and
neither latency nor build cost depends on what the vectors say, so the leaves get
seeded random unit vectors (the same for every build); questions are embedded for
real. Questions are leaf sentences of the index minus their first word. To compare
two builds, run this once with each (the other build's package first on
``PYTHONPATH``) and read the ratios. ``--index DIR`` saves the index there on the first
run and loads it on the next ones (query figures only), so that two builds can take
turns many times on the same index.

    python benches/query_latency.py --leaves 100000 --queries 300
    python benches/query_latency.py --index bench-index  # then again, with the other build
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time
from pathlib import Path

import numpy as np

from chunkforge.encoder import Encoder
from chunkforge.index import Index

from bench_texts import corpus_documents


class RandomLeaves:
    """The default encoder, except that ``embed`` (used for leaves) returns seeded random unit vectors."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder, self.tokenizer, self.dim = encoder, encoder.tokenizer, encoder.dim
        self.max_length, self.special_token_counts = encoder.max_length, encoder.special_token_counts
        self.rng = np.random.default_rng(0)

    def embed(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        # float32 throughout and normalized in place: the fake encoder adds no more memory than
        # the real one's output array (a float64 draw would be the peak of the whole build)
        v = self.rng.standard_normal((len(texts), self.dim), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v

    def embed_token_ids(self, token_ids: list[np.ndarray], show_progress: bool = False) -> np.ndarray:
        return self.embed([""] * len(token_ids))

    def embed_query(self, text: str) -> np.ndarray:
        return self.encoder.embed_query(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--leaves", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--index", metavar="DIR", help="load the index saved here; build and save it if there is none")
    args = parser.parse_args()
    encoder = RandomLeaves(Encoder.default())
    built = ""
    if args.index and Path(args.index, "CURRENT").is_file():
        index = Index.load(args.index, encoder.encoder)
    else:
        docs = corpus_documents(args.leaves)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0, cpu0 = time.perf_counter(), time.process_time()
        index = Index.build(docs, encoder)  # type: ignore[arg-type]
        build, build_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        built = (
            f": built in {build:.1f} s ({build_cpu:.1f} s CPU, random vectors), peak RSS {rss / 1024:.0f} MB "
            f"(+{(rss - rss0) / 1024:.0f} MB over the loaded encoder)"
        )
        if args.index:
            index.save(args.index)
    rng = random.Random(0)
    leaves = [h for h in index.leaves(score=0.0) if len(h.text) > 40]
    questions = [" ".join(h.text.split()[1:20]) for h in rng.sample(leaves, min(args.queries, len(leaves)))]
    index.query(questions[0])
    gc.collect()
    gc.freeze()
    # the default query, and beside it (same questions, interleaved) the query without its
    # spread payload: their difference is what spreading the hits' relevance costs
    stages: dict[str, list[float]] = {"embed": [], "query": [], "query spread=None": []}
    for q in questions:
        t1 = time.perf_counter()
        encoder.embed_query(q)
        t2 = time.perf_counter()
        index.query(q)
        t3 = time.perf_counter()
        index.query(q, spread=None)
        t4 = time.perf_counter()
        stages["embed"].append(t2 - t1)
        stages["query"].append(t3 - t2)
        stages["query spread=None"].append(t4 - t3)
    print(f"{index!r}{built or ' (loaded)'}; {len(questions)} queries")
    for name, samples in stages.items():
        a = np.array(samples) * 1e3
        print(f"{name:18s} p50 {np.percentile(a, 50):7.2f} ms  p99 {np.percentile(a, 99):7.2f} ms")


if __name__ == "__main__":
    main()
