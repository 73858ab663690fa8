"""Which variant and runtime :meth:`Encoder.default() <chunkforge.encoder.Encoder.default>`
runs on the machine at hand: :func:`auto_variant`, and what it says once when a faster
CPU runtime is not installed (:func:`advise_runtime`).

>>> auto_variant(["CUDAExecutionProvider", "CPUExecutionProvider"])  # on a GPU: fused fp32 on ONNX Runtime
'optimized'
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Sequence

from .._recommended import VARIANTS
from ..errors import ArgumentError
from .onnxruntime import default_providers

OPENVINO_EXTRA = 'pip install "chunkforge[openvino]"'


class RuntimeAdvice(UserWarning):
    """``Encoder.default()`` runs slower than this machine allows: a faster CPU runtime is not
    installed (said once per process, see :func:`advise_runtime`)."""


def auto_variant(providers: Sequence[str] | None = None) -> str:
    """The variant ``variant="auto"`` loads: the fastest that keeps cosine >= 0.9999 to fp32
    (``benches/results/embed-cpu.md``): ``"optimized"`` on a GPU (ONNX Runtime with CUDA in
    ``providers``, default :func:`default_providers`), else ``"bf16"`` where OpenVINO is
    installed and the CPU computes in bf16, else ``"optimized"`` (int8 is faster on CPUs
    with VNNI and without bf16 but drifts to cosine 0.994; without VNNI it is no faster).

    >>> auto_variant() in ("bf16", "optimized")  # bf16 on OpenVINO where the CPU computes in it
    True
    """
    if "CUDAExecutionProvider" in (default_providers() if providers is None else providers):
        return "optimized"
    if importlib.util.find_spec("openvino") is not None:
        from .openvino import cpu_has_bf16

        if cpu_has_bf16():
            return "bf16"
    return "optimized"


def cpu_flags_bf16() -> bool | None:
    """Whether the CPU has AMX or AVX512_BF16 by the kernel's CPU flags (``/proc/cpuinfo``), without
    OpenVINO; None where that cannot be told (another system, or a CPU whose flags say nothing of x86).

    >>> cpu_flags_bf16() in (True, False, None)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.partition(":")[2].split()
                    return "avx512_bf16" in flags or "amx_bf16" in flags
    except OSError:
        return None
    return None


_advised = False


def advise_runtime(asked: str, variant: str, options: dict[str, object]) -> str | None:
    """What ``Encoder.default(asked)`` says, once per process, on stderr (a :class:`RuntimeAdvice`
    warning), when ``"auto"`` ran ``variant`` on ONNX Runtime because OpenVINO is not
    installed although the CPU has bf16, where ``"bf16"`` on OpenVINO is faster (2x with
    AVX512_BF16, 4.2x with AMX: ``benches/results/embed-cpu.md``): what it picked, what it
    could pick and the command. Returns the message, or None when there is nothing to say.
    """
    global _advised
    if _advised or asked != "auto" or variant == "bf16":
        return None
    providers = options.get("providers")
    if "CUDAExecutionProvider" in (list(providers) if isinstance(providers, (list, tuple)) else default_providers()):
        return None  # on a GPU "auto" runs ONNX Runtime by choice
    if importlib.util.find_spec("openvino") is not None or cpu_flags_bf16() is not True:
        return None
    _advised = True
    message = (
        f"Encoder.default() picked variant {variant!r} (fused fp32 on ONNX Runtime) because OpenVINO is not "
        "installed; this CPU has bf16 (AMX or AVX512_BF16), where variant 'bf16' on OpenVINO is 2x to 4x "
        f"faster at cosine 0.9999 to fp32: {OPENVINO_EXTRA}"
    )
    warnings.warn(message, RuntimeAdvice, stacklevel=3)
    return message


def _variant_settings(variant: str, options: dict[str, object]) -> tuple[str, dict[str, object]]:
    """``variant`` with "auto" resolved, and the encoder options it adds to ``options``."""
    if variant not in VARIANTS:
        raise ArgumentError(f"must be one of {', '.join(VARIANTS)}, not {variant!r}", param="variant")
    if variant == "auto":
        variant = auto_variant(options.get("providers"))  # type: ignore[arg-type]
    if variant == "bf16":
        return variant, {"runtime": "openvino", "precision": "bf16", **options}
    return variant, options


def _graph_of(variant: str) -> str:
    """The ONNX graph variant (``onnx_export.VARIANTS``) an encoder variant runs."""
    return "fp32" if variant == "bf16" else variant
