"""GPU throughput of chunkforge's encoder (all-MiniLM-L6-v2) with ONNX Runtime CUDA.

Real tokens per second of ``Encoder.embed`` (length-sorted token-budget batches,
I/O binding) for the fp32 (optimized) and fp16 graphs at several batch budgets,
and the fp16 cosine against fp32. Needs ``onnxruntime-gpu`` and an NVIDIA GPU.

    python benches/gpu_embed.py [--budgets 4096,16384,65536] [--repeat 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
from bench_texts import mixed_texts
from chunkforge import Encoder

CUDA = "CUDAExecutionProvider"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="4096,16384,65536", help="max_batch_tokens values, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="times the 2,000 texts are repeated")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if CUDA not in ort.get_available_providers():
        sys.exit(f"gpu_embed.py: ONNX Runtime has no {CUDA} here (providers: {', '.join(ort.get_available_providers())}); "
                 "install onnxruntime-gpu (instead of onnxruntime) on a machine with an NVIDIA GPU")

    texts = mixed_texts() * args.repeat
    budgets = [int(b) for b in args.budgets.split(",")]
    vectors: dict[str, np.ndarray] = {}
    for variant in ("optimized", "fp16"):
        for budget in budgets:
            enc = Encoder.default(variant, providers=[CUDA, "CPUExecutionProvider"], max_batch_tokens=budget,
                                  on_overflow="truncate")
            if enc._session.get_providers()[0] != CUDA:
                sys.exit(f"gpu_embed.py: the session fell back to {enc._session.get_providers()}; is a GPU visible?")
            real = int(np.minimum(enc.tokenizer.count_batch(texts) + 2, enc.max_length).sum())
            enc.embed(texts[:2000])
            times = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                vectors[variant] = enc.embed(texts)
                times.append(time.perf_counter() - start)
            seconds = statistics.median(times)
            print(f"{variant:9s} budget {budget:6d}: {real / seconds:10.0f} tok/s  ({len(texts) / seconds:7.0f} texts/s, "
                  f"median of {args.rounds})", flush=True)
    cos = (vectors["fp16"] * vectors["optimized"]).sum(1)
    print(f"fp16 vs fp32 cosine on {len(texts)} texts: worst {cos.min():.6f}, mean {cos.mean():.6f}")


if __name__ == "__main__":
    main()
