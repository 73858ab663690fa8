"""BERT ``model.safetensors`` -> ONNX graph, without PyTorch, cached on disk.

The graph uses standard ONNX ops only and spells attention in the plain
MatMul / Div / Add(mask) / Softmax / MatMul form that the ONNX Runtime
transformer optimizer recognises, so the ``optimized`` variant gets fused
``Attention`` and ``SkipLayerNormalization`` kernels. Variants:

- ``fp32``: the plain graph; ``optimized``: fused by ORT's transformer optimizer;
- ``fp16``: the optimized graph in float16 with float32 inputs/outputs (for GPUs);
- ``int8``: the optimized graph with dynamic int8 MatMuls, per-channel weights.

Every file is written to a temp file in the cache folder and renamed into place
(``os.replace``), so an interrupted conversion never leaves a half-written model.

>>> path = ensure_variant(model_dir, "optimized")  # doctest: +SKIP
>>> path.name  # doctest: +SKIP
'model-optimized.onnx'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

VARIANTS = ("fp32", "optimized", "fp16", "int8")
CONVERTER_VERSION = 2
OPSET = 17
MASK_VALUE = -10000.0  # finite in float16 too, unlike float32's minimum


def cache_root() -> Path:
    """The cache folder: ``$CHUNKFORGE_CACHE``, else ``$XDG_CACHE_HOME/chunkforge``, else ``~/.cache/chunkforge``."""
    env = os.environ.get("CHUNKFORGE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chunkforge"


def ensure_variant(model_dir: str | os.PathLike[str], variant: str = "optimized", cache: Path | None = None) -> Path:
    """Path of ``variant`` of the BERT model in ``model_dir``, converting on first use.

    The cache key covers the weights file (size and modification time), the
    config and the converter version, so changed weights get a fresh conversion.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    model_dir = Path(model_dir)
    weights, config = model_dir / "model.safetensors", model_dir / "config.json"
    for path in (weights, config):
        if not path.is_file():
            raise FileNotFoundError(f"missing {path.name} in model folder {model_dir}")
    folder = (cache or cache_root()) / _fingerprint(weights, config)
    target = folder / f"model-{variant}.onnx"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if variant == "fp32":
        model = build_bert_graph(weights, json.loads(config.read_text(encoding="utf-8")))
        _write_atomic(target, lambda tmp: _save(model, tmp))
    elif variant == "optimized":
        _write_atomic(target, lambda tmp: optimize(ensure_variant(model_dir, "fp32", cache), tmp, config))
    elif variant == "fp16":
        _write_atomic(target, lambda tmp: optimize(ensure_variant(model_dir, "fp32", cache), tmp, config, fp16=True))
    else:
        _write_atomic(target, lambda tmp: quantize_int8(ensure_variant(model_dir, "optimized", cache), tmp))
    return target


def build_bert_graph(weights: Path, config: dict) -> onnx.ModelProto:
    """The ONNX graph of a ``BertModel``: ``input_ids``, ``attention_mask``,
    ``token_type_ids`` (int64, [batch, sequence]) -> ``last_hidden_state``."""
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"config.json describes model_type={config.get('model_type')!r}, "
                         f"hidden_act={config.get('hidden_act')!r}; only BERT with erf GELU is supported")
    try:
        w = {k.removeprefix("bert."): v for k, v in load_file(str(weights)).items()}
    except Exception as exc:
        raise ValueError(f"cannot read {weights}: {exc}") from exc
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    nodes: list[onnx.NodeProto] = []
    inits: dict[str, np.ndarray] = {}

    def init(name: str, value: np.ndarray) -> str:
        inits[name] = np.ascontiguousarray(value)
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def param(key: str) -> np.ndarray:
        if key not in w:
            raise ValueError(f"{weights} has no tensor {key!r}; not a BertModel checkpoint")
        return w[key].astype(np.float32)

    def dense(x: str, prefix: str, name: str) -> str:
        mm = node("MatMul", [x, init(f"{prefix}.weight", param(f"{prefix}.weight").T)], f"{name}_matmul")
        return node("Add", [mm, init(f"{prefix}.bias", param(f"{prefix}.bias"))], f"{name}_add")

    def layer_norm(x: str, prefix: str, name: str) -> str:
        scale, bias = init(f"{prefix}.weight", param(f"{prefix}.weight")), init(f"{prefix}.bias", param(f"{prefix}.bias"))
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
    types = node("Gather", [init("token_type_embeddings", param("embeddings.token_type_embeddings.weight")),
                            "token_type_ids"], "types")
    summed = node("Add", [node("Add", [words, positions], "words_positions"), types], "embeddings_sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "embeddings_ln")

    # Additive mask (1 - mask) * -10000, shape [batch, 1, 1, sequence].
    mask = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", "axis1"], "mask_u1"), "axis2"], "mask_u2")
    mask = node("Mul", [node("Sub", ["one_f", node("Cast", [mask], "mask_f", to=TensorProto.FLOAT)], "mask_inv"),
                        "mask_value"], "mask_bias")

    for i in range(int(config["num_hidden_layers"])):
        p, n = f"encoder.layer.{i}", f"l{i}"

        q, k, v = (
            node("Transpose", [node("Reshape", [dense(x, f"{p}.attention.self.{name}", f"{n}_{tag}"), "heads_shape"],
                                    f"{n}_{tag}_heads")], f"{n}_{tag}_t", perm=perm)
            for name, tag, perm in (("query", "q", [0, 2, 1, 3]), ("key", "k", [0, 2, 3, 1]),
                                    ("value", "v", [0, 2, 1, 3]))
        )
        scores = node("Div", [node("MatMul", [q, k], f"{n}_qk"), "sqrt_head"], f"{n}_scaled")
        probs = node("Softmax", [node("Add", [scores, mask], f"{n}_masked")], f"{n}_probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"{n}_ctx")], f"{n}_ctx_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "hidden_shape"], f"{n}_ctx_merged")
        attn = dense(context, f"{p}.attention.output.dense", f"{n}_attn_out")
        x = layer_norm(node("Add", [attn, x], f"{n}_attn_residual"), f"{p}.attention.output.LayerNorm", f"{n}_attn_ln")
        up = dense(x, f"{p}.intermediate.dense", f"{n}_ffn_up")
        erf = node("Erf", [node("Div", [up, "sqrt2"], f"{n}_gelu_div")], f"{n}_gelu_erf")
        gelu = node("Mul", [node("Mul", [up, node("Add", [erf, "one_f"], f"{n}_gelu_add")], f"{n}_gelu_mul"), "half"],
                    f"{n}_gelu")
        down = dense(gelu, f"{p}.output.dense", f"{n}_ffn_down")
        x = layer_norm(node("Add", [down, x], f"{n}_ffn_residual"), f"{p}.output.LayerNorm", f"{n}_ffn_ln")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    ids = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
           for name in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(nodes, "bert", ids, [out],
                              [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
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
    model = optimizer.optimize_model(str(src), model_type="bert", num_heads=int(config["num_attention_heads"]),
                                     hidden_size=int(config["hidden_size"]), use_gpu=False, opt_level=0)
    fused = model.get_fused_operator_statistics()
    layers = int(config["num_hidden_layers"])
    if fused.get("Attention", 0) != layers or fused.get("SkipLayerNormalization", 0) < 2 * layers - 1:
        raise RuntimeError(f"ORT fusion of {src} incomplete: {fused}")
    if fp16:
        model.convert_float_to_float16(keep_io_types=True)
    model.save_model_to_file(str(dst))


def quantize_int8(src: Path, dst: Path) -> None:
    """Dynamic int8 quantization of the MatMuls of ``src`` (per-channel weight scales)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _save(model: onnx.ModelProto, path: Path) -> None:
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def _fingerprint(weights: Path, config: Path) -> str:
    stat = weights.stat()
    key = f"{CONVERTER_VERSION}:{stat.st_size}:{stat.st_mtime_ns}:".encode() + config.read_bytes()
    return f"bert-{hashlib.sha256(key).hexdigest()[:16]}"


def _write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Runs ``write(tmp)`` on a temp path beside ``target``, then renames it over ``target``."""
    with _temp_path(target) as tmp, _quiet_logging():
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, target)


@contextlib.contextmanager
def _temp_path(target: Path) -> Iterator[Path]:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=".tmp.onnx")
    os.close(fd)
    try:
        yield Path(name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    """Hides the optimizer's and quantizer's advisory warnings (producer name, pre-processing)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)
