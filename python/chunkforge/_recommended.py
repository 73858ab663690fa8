"""The retrieval policy chunkforge recommends, chosen by ``benches/retrieval_eval.py``
on the dev set of ``benches/devset`` (tuned on its dev half, decided on its test half
by a paired bootstrap CI; ``benches/results/retrieval-eval.md``): the index's hybrid
ranking, up to ``k`` hit leaves sent as they are while ``budget_tokens`` lasts. Used
by ``Index.query`` and ``chunkforge query`` (no optional dependencies, so the CLI can
read it without the index extra)."""

RECOMMENDED = {"k": 100, "budget_tokens": 1000}

# The encoder's batches, in padded tokens (read by the CLI's help without importing onnxruntime):
# on CPUs small batches keep the GEMMs in cache, GPUs need large ones to fill the device. The
# sweeps that chose them: benches/results/embed-cpu.md ("Fairer baseline, 512-token batches")
# and benches/results/gpu-embed.md.
DEFAULT_CPU_BATCH_TOKENS = 512
DEFAULT_GPU_BATCH_TOKENS = 16384
