"""The retrieval policy chunkforge recommends, chosen by ``benches/retrieval_eval.py`` and
``benches/retrieval_buckets.py`` on the dev set of ``benches/devset`` (tuned on its dev half,
decided on its test half by a paired bootstrap CI, a tie going to the simpler policy;
``benches/results/retrieval-buckets.md``): the index's hybrid ranking over leaves seen with
their search prefix (``Index(search_prefix=True)``), up to ``k`` hit leaves, sent as they are
in score order while ``budget_tokens`` lasts (``spread``: None; spreading relevance to the
hits' neighbours, ``Index.expand(spread=0.5)``, tied with it on the test half). Used by ``Index.query``, ``chunkforge query`` and the
service's ``/query`` (no optional dependencies, so the CLI can read it without the
index extra)."""

from typing import Final, TypedDict


class Policy(TypedDict):
    """The recommended policy's values, each with its own type."""

    k: int
    budget_tokens: int
    spread: float | None


RECOMMENDED: Final[Policy] = {"k": 100, "budget_tokens": 1000, "spread": None}

# The encoder's batches, in padded tokens (read by the CLI's help without importing onnxruntime):
# on CPUs small batches keep the GEMMs in cache, GPUs need large ones to fill the device. The
# sweeps that chose them: benches/results/embed-cpu.md ("Fairer baseline, 512-token batches")
# and benches/results/gpu-embed.md.
DEFAULT_CPU_BATCH_TOKENS = 512
DEFAULT_GPU_BATCH_TOKENS = 16384
# OpenVINO's CPU kernels (the bf16 path) run faster on larger batches than ONNX Runtime's:
# benches/results/embed-cpu.md
DEFAULT_OPENVINO_BATCH_TOKENS = 2048
# Encoder.default's variants, as the CLI offers them ("auto": the fastest that keeps cosine
# >= 0.9999 to fp32 on this machine, see chunkforge.encoder.auto_variant)
VARIANTS = ("auto", "bf16", "optimized", "fp32", "int8", "fp16")
