"""The text encoder: sentence embeddings and token embeddings of a BERT-family ONNX graph,
run by ONNX Runtime or, on the CPU, by OpenVINO.

One module per concept: :mod:`.front` is :class:`Encoder`, what users call (loading,
batching, the overflow policy); :mod:`.onnxruntime` and :mod:`.openvino` are the two
runtimes; :mod:`.graph` reads a graph and adds its pooled output; :mod:`.export` converts
``model.safetensors`` to ONNX graphs (fp32, optimized, fp16, int8) in the cache folder;
:mod:`.variants` picks what :meth:`Encoder.default` runs on this machine; :mod:`.compat`
holds sentence-transformers' names and reads a model folder's configuration.

>>> enc = Encoder.default()
>>> enc.embed(["how do I reset my password?"]).shape
(1, 384)
"""

from __future__ import annotations

from .compat import read_model_config
from .front import (
    EMBED_EXTRA,
    MODEL_PACKAGE,
    OVERFLOW_POLICIES,
    QUERY_SPIN_US,
    QUERY_THREADS,
    RUNTIMES,
    Encoder,
    Overflow,
    Runtime,
    TokenEmbeddings,
    TruncationWarning,
)
from .graph import POOLED_OUTPUT, Pooling
from .onnxruntime import default_providers
from .variants import OPENVINO_EXTRA, RuntimeAdvice, advise_runtime, auto_variant, cpu_flags_bf16

__all__ = [
    "EMBED_EXTRA",
    "MODEL_PACKAGE",
    "OPENVINO_EXTRA",
    "OVERFLOW_POLICIES",
    "POOLED_OUTPUT",
    "QUERY_SPIN_US",
    "QUERY_THREADS",
    "RUNTIMES",
    "Encoder",
    "Overflow",
    "Pooling",
    "Runtime",
    "RuntimeAdvice",
    "TokenEmbeddings",
    "TruncationWarning",
    "advise_runtime",
    "auto_variant",
    "cpu_flags_bf16",
    "default_providers",
    "read_model_config",
]
