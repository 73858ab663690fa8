"""CPU throughput and latency of chunkforge's encoder (all-MiniLM-L6-v2).

Real (non-padding) tokens per second on 2,000 mixed-length texts, 2 intra-op
threads, in interleaved rounds: naive batches of 32 in input order (plain fp32
graph, padded to the longest) against chunkforge's length-sorted token-budget
batching with the fp32, optimized (fused) and int8 graphs; then the worst cosine
of each to the PyTorch reference (13 texts) and to fp32 (the 2,000 texts), and
``embed_query`` latency on a 12-token query.

    python benches/embed_bench.py [--rounds 3] [--budget N] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from chunkforge import Encoder

from bench_texts import mixed_texts

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm-reference.npz"
QUERY = "what is the capital city of portugal and its population"  # 12 tokens with [CLS]/[SEP]
THREADS = 2


def naive(enc: Encoder, batch: int = 32) -> Callable[[list[str]], np.ndarray]:
    """Batches of ``batch`` texts in input order, each padded to its longest text."""

    def run(texts: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), batch):
            ids, mask, _, _ = enc.tokenizer.encode_padded(texts[start : start + batch], enc.max_length)
            out.append(enc.embed_padded(ids, mask))  # the session and pooling embed uses
        return np.concatenate(out)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--budget", type=int, default=None, help="max_batch_tokens (default: the encoder's, 512 on CPU)"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()

    texts = mixed_texts()
    options = {"intra_op_threads": THREADS, "max_batch_tokens": args.budget, "on_overflow": "truncate"}
    encoders = {v: Encoder.default(v, **options) for v in ("fp32", "optimized", "int8")}
    runs: dict[str, Callable[[list[str]], np.ndarray]] = {"naive32_fp32": naive(encoders["fp32"])}
    runs.update({f"budget_{v}": enc.embed for v, enc in encoders.items()})
    lengths = np.minimum(encoders["fp32"].tokenizer.count_batch(texts) + 2, 256)
    real_tokens = int(lengths.sum())
    padded = sum(len(lengths[i : i + 32]) * int(lengths[i : i + 32].max()) for i in range(0, len(lengths), 32))
    print(
        f"{len(texts)} texts, {real_tokens} real tokens; naive batches pad to {padded} "
        f"(+{padded / real_tokens - 1:.0%}); {THREADS} intra-op threads, budget {args.budget}",
        flush=True,
    )

    for run in runs.values():
        run(texts[:64])
    times: dict[str, list[float]] = {name: [] for name in runs}
    vectors: dict[str, np.ndarray] = {}
    names = list(runs)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            start = time.perf_counter()
            vectors[name] = runs[name](texts)
            times[name].append(time.perf_counter() - start)
        print(f"round {r}: " + "  ".join(f"{n} {times[n][-1]:.1f}s" for n in names), flush=True)

    ref = np.load(REFERENCE)
    ref_texts = [str(t) for t in ref["texts"]]
    results: dict[str, dict[str, float]] = {}
    base = statistics.median(times["naive32_fp32"])
    for name in names:
        seconds = statistics.median(times[name])
        variant = name.split("_", 1)[1]
        on_ref = (encoders[variant].embed(ref_texts) * ref["sentence_embeddings"]).sum(1)
        on_texts = (vectors[name] * vectors["budget_fp32"]).sum(1)
        results[name] = {
            "median_s": seconds,
            "tokens_per_s": real_tokens / seconds,
            "vs_naive": base / seconds,
            "worst_cos_reference": float(on_ref.min()),
            "worst_cos_fp32_2000": float(on_texts.min()),
        }
        print(
            f"{name:14s} {real_tokens / seconds:8.0f} tok/s  x{base / seconds:.2f} vs naive  "
            f"worst cos: reference {on_ref.min():.5f}, fp32 on the 2,000 {on_texts.min():.5f}",
            flush=True,
        )

    query = encoders["optimized"]
    assert int(query.tokenizer.count(QUERY)) + 2 == 12
    for variant in ("optimized", "int8"):
        enc = encoders[variant]
        for _ in range(20):
            enc.embed_query(QUERY)
        latency = []
        for _ in range(200):
            start = time.perf_counter()
            enc.embed_query(QUERY)
            latency.append((time.perf_counter() - start) * 1e3)
        p50, p99 = np.percentile(latency, [50, 99])
        results[f"query_{variant}"] = {"p50_ms": float(p50), "p99_ms": float(p99)}
        print(f"embed_query {variant}: p50 {p50:.2f} ms, p99 {p99:.2f} ms (200 calls)", flush=True)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"real_tokens": real_tokens, "padded_naive": padded, "times": times, "results": results}, indent=1
            )
        )


if __name__ == "__main__":
    main()
