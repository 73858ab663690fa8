"""The encoder's ONNX graph as both runtimes take it: read (weights stored as external data
stay on disk), its inputs and token-states output found, and a pooled output added
(:data:`POOLED_OUTPUT`: mean or ``[CLS]`` pooling, L2-normalized, computed in the graph).

>>> load_graph(Path("missing.onnx"))
Traceback (most recent call last):
FileNotFoundError: ONNX graph not found: missing.onnx
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from ..errors import ModelError

try:
    import onnx
except ImportError as exc:
    raise ImportError('chunkforge.Encoder needs onnx (pip install "chunkforge[embed]")') from exc

Pooling = Literal["mean", "cls"]
TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
POOLED_OUTPUT = "chunkforge_sentence_embedding"


def load_graph(graph: Path) -> onnx.ModelProto:
    if not graph.is_file():
        raise FileNotFoundError(f"ONNX graph not found: {graph}")
    try:
        # weights stored as external data stay on disk: ONNX Runtime reads them (no 2 GB limit)
        return onnx.load(str(graph), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f"cannot load the ONNX graph: {exc}", where=str(graph)) from exc


def external_data(model: onnx.ModelProto) -> bool:
    """Whether the graph's weights (some of them) are stored outside it, beside its file."""
    return any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)


def graph_io(model: onnx.ModelProto, graph: Path) -> tuple[dict[str, type], str]:
    """The graph's inputs (name -> numpy int type) and its token-states output."""
    dtypes = {onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32}
    weights = {init.name for init in model.graph.initializer}
    inputs: dict[str, type] = {}
    for node in model.graph.input:
        if node.name in weights:
            continue
        if node.name not in ("input_ids", "attention_mask", "token_type_ids"):
            raise ModelError(
                f"unexpected graph input {node.name!r} (a BERT graph takes "
                "input_ids, attention_mask and optionally token_type_ids)",
                where=str(graph),
            )
        elem = node.type.tensor_type.elem_type
        if elem not in dtypes:
            raise ModelError(
                f"input {node.name!r} has type {onnx.TensorProto.DataType.Name(elem).lower()}, expected int64 or int32",
                where=str(graph),
            )
        inputs[node.name] = dtypes[elem]
    for name in ("input_ids", "attention_mask"):
        if name not in inputs:
            raise ModelError(
                f"graph lacks the input {name!r} (inputs: {', '.join(inputs) or 'none'})", where=str(graph)
            )
    outputs = {node.name: node for node in model.graph.output}
    named = [name for name in TOKEN_OUTPUTS if name in outputs]
    ranked = [name for name, node in outputs.items() if len(node.type.tensor_type.shape.dim) == 3]
    if not named and not ranked:
        raise ModelError(
            f"no token-states output ({' or '.join(TOKEN_OUTPUTS)}, "
            f"or any [batch, sequence, hidden] output) among {', '.join(outputs)}",
            where=str(graph),
        )
    return inputs, (named or ranked)[0]


def with_pooled_output(model: onnx.ModelProto, states: str, pooling: Pooling, normalize: bool) -> bytes:
    """The graph with one more output, :data:`POOLED_OUTPUT`: the float32 ``(batch, dim)``
    mean (over the attention mask) or ``[CLS]`` pooling of ``states``, L2-normalized when
    ``normalize``. Pooling on the device returns ``dim`` floats a text instead of
    ``tokens * dim``, and saves the host a pass over the token states."""
    from onnx import TensorProto, helper

    from .export import OnnxAttribute, onnx_node

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    g = model.graph
    states_type = next(o.type.tensor_type.elem_type for o in g.output if o.name == states)
    nodes: list[onnx.NodeProto] = []
    consts: list[onnx.TensorProto] = []

    def node(op: str, inputs: list[str], **attrs: OnnxAttribute) -> str:
        out = f"{POOLED_OUTPUT}/{op}_{len(nodes)}"
        nodes.append(onnx_node(op, inputs, [out], **attrs))
        return out

    def axes_node(op: str, x: str, axes: list[int], **attrs: OnnxAttribute) -> str:
        if opset < 13:  # axes became an input in opset 13 (ReduceSum, Unsqueeze)
            return node(op, [x], axes=axes, **attrs)
        name = f"{POOLED_OUTPUT}/axes_{len(consts)}"
        consts.append(helper.make_tensor(name, TensorProto.INT64, [len(axes)], axes))
        return node(op, [x, name], **attrs)

    def scalar(value: float) -> str:
        name = f"{POOLED_OUTPUT}/const_{len(consts)}"
        consts.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    x = states if states_type == TensorProto.FLOAT else node("Cast", [states], to=TensorProto.FLOAT)
    if pooling == "cls":
        consts.append(helper.make_tensor(f"{POOLED_OUTPUT}/first", TensorProto.INT64, [], [0]))
        pooled = node("Gather", [x, f"{POOLED_OUTPUT}/first"], axis=1)
    else:
        weights = axes_node("Unsqueeze", node("Cast", ["attention_mask"], to=TensorProto.FLOAT), [2])
        summed = axes_node("ReduceSum", node("Mul", [x, weights]), [1], keepdims=0)
        count = axes_node("ReduceSum", weights, [1], keepdims=0)
        pooled = node("Div", [summed, node("Max", [count, scalar(1e-9)])])
    if normalize:
        norm = node("Sqrt", [axes_node("ReduceSum", node("Mul", [pooled, pooled]), [1], keepdims=1)])
        pooled = node("Div", [pooled, node("Max", [norm, scalar(1e-12)])])
    nodes.append(helper.make_node("Identity", [pooled], [POOLED_OUTPUT]))
    g.node.extend(nodes)
    g.initializer.extend(consts)
    g.output.append(helper.make_tensor_value_info(POOLED_OUTPUT, TensorProto.FLOAT, [None, None]))
    data: bytes = model.SerializeToString()
    return data
