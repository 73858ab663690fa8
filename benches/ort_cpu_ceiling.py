"""How close the fused fp32 encoder is to ONNX Runtime's CPU ceiling (issue 3).

Three measurements on this machine, 2 intra-op threads:

1. the best fp32 GEMM rate: one 1024x384x1536 MatMul (an FFN layer's shape) in ONNX
   Runtime (MLAS), and the same product in numpy;
2. ORT's profiler on the fused graph over the texts of ``embed``: kernel time by
   operator type, and the GFLOP/s of the MatMul and Attention kernels;
3. throughput of three attention layouts of the same model: the fused ``Attention``
   (the default), ``MultiHeadAttention`` with the QKV projection as one MatMul, and
   attention left unfused.

    python benches/ort_cpu_ceiling.py [--texts 500]
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.transformers import optimizer
from onnxruntime.transformers.fusion_options import FusionOptions

from chunkforge import Encoder
from chunkforge.encoder.graph import POOLED_OUTPUT, load_graph, with_pooled_output

from bench_texts import mixed_texts

THREADS = 2
LAYERS, HIDDEN, FFN = 6, 384, 1536


def options(profile: str | None = None) -> ort.SessionOptions:
    o = ort.SessionOptions()
    o.intra_op_num_threads, o.inter_op_num_threads = THREADS, 1
    if profile:
        o.enable_profiling, o.profile_file_prefix = True, profile
    return o


def gemm_peak(m: int = 1024, k: int = HIDDEN, n: int = FFN, calls: int = 200) -> tuple[float, float]:
    """GFLOP/s of the best of 5 runs of ``calls`` products: (ONNX Runtime, numpy)."""
    w = numpy_helper.from_array(np.random.rand(k, n).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), options(), providers=["CPUExecutionProvider"])
    x = np.random.rand(m, k).astype(np.float32)
    b = numpy_helper.to_array(w)

    def best(run: object) -> float:
        rates = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                run()  # type: ignore[operator]
            rates.append(2 * m * k * n * calls / (time.perf_counter() - start) / 1e9)
        return max(rates)

    return best(lambda: session.run(None, {"x": x})), best(lambda: x @ b)


def run_all(session: ort.InferenceSession, batches: list) -> np.ndarray:
    return np.concatenate(
        [
            session.run(
                [POOLED_OUTPUT], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            for ids, mask in batches
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=500)
    args = parser.parse_args()
    ort_rate, numpy_rate = gemm_peak()
    print(
        f"fp32 GEMM 1024x{HIDDEN}x{FFN}, {THREADS} threads: ONNX Runtime {ort_rate:.0f} GFLOP/s, numpy {numpy_rate:.0f}"
    )

    plain = Encoder.default("fp32", on_overflow="truncate")
    texts = mixed_texts()[: args.texts]
    batches = [
        plain.tokenizer.encode_padded([texts[i] for i in idx], plain.max_length)[:2] for idx in plain.batches(texts)
    ]
    real = sum(int(mask.sum()) for _, mask in batches)
    attention_macs = sum(int(mask.sum()) * mask.shape[1] * 2 * HIDDEN for _, mask in batches) * LAYERS
    macs = {
        "MatMul": real * LAYERS * (HIDDEN * HIDDEN + 2 * HIDDEN * FFN),
        "Attention": real * LAYERS * 3 * HIDDEN * HIDDEN + attention_macs,
    }

    with tempfile.TemporaryDirectory() as tmp:
        layouts = {
            "Attention (default)": {},
            "MultiHeadAttention": {"use_multi_head_attention": True},
            "unfused": {"enable_attention": False},
        }
        sessions = {}
        for name, settings in layouts.items():
            fusion = FusionOptions("bert")
            for key, value in settings.items():
                setattr(fusion, key, value)
            fused = optimizer.optimize_model(
                str(plain.graph),
                model_type="bert",
                num_heads=12,
                hidden_size=HIDDEN,
                use_gpu=False,
                opt_level=0,
                optimization_options=fusion,
            )
            path = Path(tmp) / f"{len(sessions)}.onnx"
            fused.save_model_to_file(str(path))
            model = with_pooled_output(load_graph(path), plain._output, "mean", True)
            disabled = {"disabled_optimizers": ["AttentionFusion"]} if name == "unfused" else {}
            sessions[name] = ort.InferenceSession(model, options(), providers=["CPUExecutionProvider"], **disabled)

        profiled = ort.InferenceSession(
            with_pooled_output(load_graph(Path(tmp) / "0.onnx"), plain._output, "mean", True),
            options(str(Path(tmp) / "profile")),
            providers=["CPUExecutionProvider"],
        )
        run_all(profiled, batches)
        events = json.loads(Path(profiled.end_profiling()).read_text())
        by_op: collections.Counter[str] = collections.Counter()
        for e in events:
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                by_op[e["args"]["op_name"]] += e["dur"]
        total = sum(by_op.values())
        print(f"fused graph, {len(texts)} texts ({real} tokens), kernel time by operator:")
        for op, us in by_op.most_common(6):
            rate = f", {2 * macs[op] / (us / 1e6) / 1e9:.0f} GFLOP/s" if op in macs else ""
            print(f"  {op:24s} {100 * us / total:5.1f}%{rate}")

        times: dict[str, list[float]] = {name: [] for name in sessions}
        vectors = {}
        for _ in range(3):
            for name, session in sessions.items():
                start = time.perf_counter()
                vectors[name] = run_all(session, batches)
                times[name].append(time.perf_counter() - start)
        first = next(iter(vectors.values()))
        for name in sessions:
            cos = (vectors[name] * first).sum(1).min()
            print(f"{name:20s} {real / min(times[name]):8.0f} tok/s (best of 3), worst cosine to the default {cos:.6f}")


if __name__ == "__main__":
    main()
