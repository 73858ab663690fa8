"""The query-time expansion chunkforge recommends, chosen by
``benches/expansion_eval.py`` (``benches/results/expansion-eval.md``): on the
labelled set, with packing that takes each hit's expansion in score order, 24 hits
widened by 2 sentences either side (``window=2``) had the best evidence recall at
500 and 1,000 tokens (0.886 and 0.955 dense-ranked; 0.864 and 0.943 with the
index's default hybrid ranking, level with plain 128-token chunks), ahead of the
hit sentences sent as they are (0.795 and 0.909 for 50 hybrid hits). Used by
``Index.query`` and ``chunkforge query`` (no optional dependencies, so the CLI can
read it without the index extra)."""

RECOMMENDED = {"k": 24, "window": 2, "budget_tokens": 1000}

# The encoder's batches, in padded tokens (read by the CLI's help without importing onnxruntime):
# on CPUs small batches keep the GEMMs in cache (512 tokens ran 1.03x (fused fp32) and 1.09x
# (int8) faster than 1,024, and 1.2x faster than 8,192); GPUs need large ones to fill the device.
DEFAULT_CPU_BATCH_TOKENS = 512
DEFAULT_GPU_BATCH_TOKENS = 16384
