"""The retrieval policy chunkforge recommends, chosen by ``benches/retrieval_eval.py``,
``benches/retrieval_buckets.py`` and ``benches/retrieval_defaults.py`` on the dev set of
``benches/devset``: knobs tuned on its dev half, decided on its test half by the defaults
rule (issue 41; ``beats`` in ``benches/retrieval_lab.py``): a candidate replaces the
incumbent when it is ahead outside the paired 95% bootstrap CI on the whole test half or on
at least one evidence-length or genre slice, at 500 or 1,000 tokens, and behind outside the
CI on none, and the dev half agrees (``adopted``). The policy: the index's hybrid ranking
over leaves seen with their search prefix (``Index(search_prefix=True)``), up to ``k`` hit leaves, each lending the leaves near it in
its section ``spread**distance`` of its relevance, leaves in that order while
``budget_tokens`` lasts (``spread`` 0.5, tuned on the dev half, ahead of the bare hits on
60-120 and >120-token evidence and on rules at 500 tokens and behind nowhere:
``benches/results/retrieval-buckets.md``). No abstention ``floor``: a floor only loses
answerable recall, so by the rule it cannot be ahead anywhere; the curve to choose one,
answerable recall lost against unanswerable questions left empty, is in
``benches/results/retrieval-defaults.md``. Used by ``Index.query``, the store's ``query``,
``chunkforge query``, the service's ``/query`` and the framework retrievers (no optional
dependencies, so the CLI can read it without the index extra)."""

from typing import Final, TypedDict


class Policy(TypedDict):
    """The recommended policy's values, each with its own type."""

    k: int
    budget_tokens: int
    spread: float | None
    floor: float | None


RECOMMENDED: Final[Policy] = {"k": 100, "budget_tokens": 1000, "spread": 0.5, "floor": None}

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
