"""The encoder's OpenVINO runtime (``pip install "chunkforge[openvino]"``): the same ONNX
graph (with the same pooled output) ONNX Runtime runs, compiled for the CPU, in bfloat16
where the CPU has it (AMX or AVX512_BF16), else in float32.

The encoder's runner takes OpenVINO's throughput hint (on 2 threads: 2 streams of one thread
each) and :meth:`OpenVinoRunner.run_each` keeps a batch running on every stream, 1.07-1.09x
the latency hint's speed on 2 cores with the same vectors; a single :meth:`OpenVinoRunner.run`
splits its rows between the streams. The query runner keeps the latency hint.

Batches are padded to a multiple of :data:`PAD_MULTIPLE` tokens: OpenVINO's bf16 kernels
work on blocks of 16 keys, and a text whose last tokens fall in a partly filled block comes
out up to 9e-4 different from the same text whose tokens all sit in full blocks (as they
do when a longer batch mate pads it). Padded to whole blocks, a text's vector no longer
depends on its batch mates (``benches/results/embed-cpu.md``).

>>> from chunkforge.encoder import Encoder, POOLED_OUTPUT
>>> from chunkforge.encoder.graph import load_graph, with_pooled_output
>>> enc = Encoder.default("fp32")
>>> model_bytes = with_pooled_output(load_graph(enc.graph), "last_hidden_state", "mean", True)
>>> runner = OpenVinoRunner(model_bytes, "fp32", threads=2)
>>> ids, mask, _, _ = enc.tokenizer.encode_padded(["one text", "and another"], enc.max_length)
>>> runner.run({"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}, POOLED_OUTPUT).shape
(2, 384)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TypeVar

import numpy as np

from ..errors import ArgumentError, ModelError


def _without_telemetry() -> None:
    """Declines OpenVINO's usage statistics for this process, by their own rule for CI, while
    ``openvino`` is imported: its model converter starts a client there that, where the user
    never answered (no consent file), sends from a forked process: network traffic from a
    library's user, and a fork inside a threaded program (lancedb warns of deadlocks)."""
    if "CI" in os.environ:
        import openvino  # noqa: F401

        return
    os.environ["CI"] = "true"
    try:
        import openvino  # noqa: F401
    finally:
        del os.environ["CI"]


try:
    _without_telemetry()
    import openvino as ov
except ImportError as exc:
    raise ImportError('the OpenVINO runtime needs openvino (pip install "chunkforge[openvino]")') from exc

Precision = Literal["bf16", "fp32"]
PRECISIONS = ("bf16", "fp32")
Hint = Literal["THROUGHPUT", "LATENCY"]
Key = TypeVar("Key")
PAD_MULTIPLE = 16
_HINTS = {"bf16": "bf16", "fp32": "f32"}
_core: ov.Core | None = None


def core() -> ov.Core:
    """The process's OpenVINO core (made once: it reads the plugins)."""
    global _core
    if _core is None:
        _core = ov.Core()
    return _core


def cpu_has_bf16() -> bool:
    """Whether OpenVINO computes in bfloat16 on this CPU (AMX or AVX512_BF16).

    >>> cpu_has_bf16() in (True, False)
    True
    """
    return "BF16" in core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoRunner:
    """One compiled model and a queue of infer requests, one a stream, per calling thread
    (requests are not thread-safe; the compiled model is). ``threads``: OpenVINO's inference threads (None:
    its default, one per physical core); ``max_width``: batches are padded up to that many
    tokens at most (the encoder's ``max_length``: the graph has positions that far);
    ``hint``: OpenVINO's performance hint (``"THROUGHPUT"``: as many streams as it finds
    best; ``"LATENCY"``: one)."""

    def __init__(
        self,
        model: bytes,
        precision: Precision,
        threads: int | None = None,
        max_width: int = 512,
        hint: Hint = "THROUGHPUT",
    ) -> None:
        if precision not in PRECISIONS:
            raise ArgumentError(f"must be one of {', '.join(PRECISIONS)}, not {precision!r}", param="precision")
        config: dict[str, object] = {"INFERENCE_PRECISION_HINT": _HINTS[precision], "PERFORMANCE_HINT": hint}
        if hint == "LATENCY":
            config["NUM_STREAMS"] = 1
        if threads is not None:
            config["INFERENCE_NUM_THREADS"] = threads
        try:
            self._model = core().compile_model(core().read_model(model, b""), "CPU", config)
        except RuntimeError as exc:  # OpenVINO raises RuntimeError for graphs it cannot read or compile
            raise ModelError(f"OpenVINO cannot compile the graph: {exc}") from exc
        self.precision = precision
        self.inputs = [port.get_any_name() for port in self._model.inputs]
        self.max_width = max_width
        self.streams = int(self._model.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        self._local = threading.local()

    def run(self, feed: dict[str, np.ndarray], output: str) -> np.ndarray:
        """``output`` for the ``(batch, length)`` inputs in ``feed`` (padded here to whole
        blocks; token outputs are cut back to ``length``), its rows split between the streams."""
        rows = len(next(iter(feed.values())))
        cuts = np.linspace(0, rows, max(1, min(rows, self.streams)) + 1).astype(int).tolist()
        parts = dict(
            self.run_each(((lo, {n: v[lo:hi] for n, v in feed.items()}) for lo, hi in zip(cuts, cuts[1:])), output)
        )
        return np.concatenate([parts[lo] for lo in cuts[:-1]])

    def run_each(
        self, feeds: Iterable[tuple[Key, dict[str, np.ndarray]]], output: str
    ) -> Iterator[tuple[Key, np.ndarray]]:
        """``(key, output)`` for each ``(key, feed)``, as :meth:`run`; a feed runs on each
        stream at once, and the outputs come in the order they are done."""
        queue = getattr(self._local, "queue", None)
        if queue is None:
            queue = self._local.queue = ov.AsyncInferQueue(self._model, self.streams)
        done: list[tuple[Key, np.ndarray]] = []

        def finished(request: Any, key_width: tuple[Key, int]) -> None:
            values = request.get_tensor(output).data
            done.append((key_width[0], np.array(values[:, : key_width[1]] if values.ndim == 3 else values)))

        queue.wait_all()  # a caller that stopped reading may have left some running
        queue.set_callback(finished)
        started = returned = 0
        for key, feed in feeds:
            width = next(iter(feed.values())).shape[1]
            extra = min(-width % PAD_MULTIPLE, max(self.max_width - width, 0))
            padded = {name: np.pad(feed[name], ((0, 0), (0, extra))) if extra else feed[name] for name in self.inputs}
            queue.start_async(padded, (key, width))
            started += 1
            while done:
                returned += 1
                yield done.pop()
        queue.wait_all()
        while done:
            returned += 1
            yield done.pop()
        if returned != started:  # a callback that failed is only printed by OpenVINO
            raise RuntimeError(f"OpenVINO returned {returned} of {started} batches")
