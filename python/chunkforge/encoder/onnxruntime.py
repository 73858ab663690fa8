"""The encoder's ONNX Runtime sessions: CUDA then the CPU when ``onnxruntime-gpu`` is installed
(``pip uninstall onnxruntime && pip install onnxruntime-gpu``: the two packages cannot be
installed together), else the CPU; on CUDA a batch runs with I/O binding.

>>> default_providers()[-1]
'CPUExecutionProvider'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelError

try:
    import onnxruntime as ort
except ImportError as exc:
    raise ImportError(
        'chunkforge.Encoder needs onnxruntime (pip install "chunkforge[embed]", or onnxruntime-gpu)'
    ) from exc

InferenceSession = ort.InferenceSession
"""ONNX Runtime's session class (what :func:`session` makes)."""
_SPIN_DURATION = tuple(int(x) for x in ort.__version__.split(".")[:2]) >= (1, 26)
"""Whether ONNX Runtime reads ``session.intra_op.spin_duration_us`` (1.26 on): older ones
ignore it and spin on, so a bounded spin falls back to sleeping at once there."""


def default_providers() -> list[str]:
    """CUDA then CPU when ``onnxruntime-gpu`` is installed, else CPU. (TensorRT only
    when asked for: ONNX Runtime lists it wherever its plugin ships, libraries or not.)"""
    available = ort.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]


def session(
    graph: Path,
    providers: Sequence[str],
    intra: int | None,
    inter: int | None,
    model: bytes,
    spin_us: int | None = None,
) -> ort.InferenceSession:
    """A session on the serialized ``model``, read from the file ``graph`` (its
    external data, if any, is read by ONNX Runtime from beside ``graph``); with ``spin_us``
    its idle intra-op threads spin that many microseconds, then sleep (0: they sleep at once;
    None: ONNX Runtime's default, they spin on long after a call)."""
    options = ort.SessionOptions()
    if spin_us == 0 or (spin_us is not None and not _SPIN_DURATION):
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    elif spin_us is not None:
        options.add_session_config_entry("session.intra_op.spin_duration_us", str(spin_us))
    options.add_session_config_entry("session.model_external_initializers_file_folder_path", str(graph.parent))
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1 if inter is None else inter
    if intra is not None:
        options.intra_op_num_threads = intra
    try:
        # fp32 means fp32 on CUDA too: TF32 matmuls move token states by up to 3e-3
        chosen = [(p, {"use_tf32": "0"}) if p == "CUDAExecutionProvider" else p for p in providers]
        return ort.InferenceSession(model, options, providers=chosen)
    except Exception as exc:  # ORT raises its own exception types for corrupt graphs and bad providers
        raise ModelError(f"cannot load the ONNX graph: {exc}", where=str(graph)) from exc


def run(session: ort.InferenceSession, feed: dict[str, np.ndarray], output: str, cuda: bool) -> np.ndarray:
    """``output`` of ``session`` for the inputs in ``feed``; on CUDA (``cuda``) with I/O binding:
    the inputs copied to the device once, only ``output`` copied back."""
    result: np.ndarray  # onnxruntime's outputs are numpy arrays
    if not cuda:
        result = session.run([output], feed)[0]
        return result
    binding = session.io_binding()
    for name, value in feed.items():
        binding.bind_cpu_input(name, value)
    binding.bind_output(output, "cuda")
    session.run_with_iobinding(binding)
    result = binding.copy_outputs_to_cpu()[0]
    return result
