"""A cross-encoder a user supplies: a BERT ``BertForSequenceClassification`` folder as
downloaded from the Hugging Face Hub (``model.safetensors``, ``config.json``,
``tokenizer.json``; e.g. a MiniLM MS MARCO reranker), converted to ONNX without PyTorch as the
bi-encoder is (:mod:`chunkforge.encoder.export`: the BERT body, then ``[CLS]`` -> the pooler's
dense layer and tanh -> the classifier), once, into the cache folder, written atomically.

It scores (question, passage) pairs, ``[CLS] question [SEP] passage [SEP]`` with token types
0 then 1, the passage truncated to the model's length; a pair's score does not depend on its
batch mates (the padding is masked). chunkforge ships no cross-encoder weights and makes no
quality claim for one: the conversion is tested against a NumPy forward pass on small random
weights, and reranking with one is measured on the dev set only for its cost
(``benches/results/retrieval-rerank.md``); measure one on your data before you rely on it.
It plugs into :func:`chunkforge.index.rerank.rerank_query`.

>>> CrossEncoder.from_pretrained("missing-folder")
Traceback (most recent call last):
FileNotFoundError: model folder not found: missing-folder
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._checks import check_int
from .._io import cache_root, checksum_ok, write_checksum
from ..errors import ArgumentError, ModelError
from ..tokenizer import Tokenizer
from .export import OPSET, _save, _write_atomic, build_bert_graph, check_convertible, model_files, optimize

if TYPE_CHECKING:
    import onnx

CROSS_CONVERTER_VERSION = 1
CROSS_VARIANTS = ("fp32", "optimized")
LOGITS = "logits"


def build_cross_graph(weights: Path, config: dict[str, Any]) -> onnx.ModelProto:
    """The ONNX graph of a ``BertForSequenceClassification``: ``input_ids``,
    ``attention_mask``, ``token_type_ids`` (int64, [batch, sequence]) -> ``logits`` (float32,
    [batch, num_labels]): the BERT body (:func:`~chunkforge.encoder.export.build_bert_graph`),
    its ``[CLS]`` state through ``bert.pooler.dense`` and tanh, then ``classifier``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    model = build_bert_graph(weights, config)
    w = load_file(str(weights))
    head = {}
    for key, name in (
        ("bert.pooler.dense.weight", "pooler_w"),
        ("bert.pooler.dense.bias", "pooler_b"),
        ("classifier.weight", "classifier_w"),
        ("classifier.bias", "classifier_b"),
    ):
        value = w.get(key, w.get(key.removeprefix("bert.")))
        if value is None:
            raise ModelError(
                f"has no tensor {key!r}; not a BertForSequenceClassification checkpoint", where=str(weights)
            )
        head[name] = value.astype(np.float32)
    g = model.graph
    g.initializer.extend(
        [
            numpy_helper.from_array(np.ascontiguousarray(head["pooler_w"].T), "pooler_w"),
            numpy_helper.from_array(head["pooler_b"], "pooler_b"),
            numpy_helper.from_array(np.ascontiguousarray(head["classifier_w"].T), "classifier_w"),
            numpy_helper.from_array(head["classifier_b"], "classifier_b"),
            numpy_helper.from_array(np.array(0, np.int64), "cls_position"),
        ]
    )
    g.node.extend(
        [
            helper.make_node("Gather", ["last_hidden_state", "cls_position"], ["cls_state"], name="cls", axis=1),
            helper.make_node("MatMul", ["cls_state", "pooler_w"], ["pooler_mm"], name="pooler_matmul"),
            helper.make_node("Add", ["pooler_mm", "pooler_b"], ["pooler_add"], name="pooler_add"),
            helper.make_node("Tanh", ["pooler_add"], ["pooled"], name="pooler_tanh"),
            helper.make_node("MatMul", ["pooled", "classifier_w"], ["classifier_mm"], name="classifier_matmul"),
            helper.make_node("Add", ["classifier_mm", "classifier_b"], [LOGITS], name="classifier_add"),
        ]
    )
    del g.output[:]
    labels = int(head["classifier_b"].shape[0])
    g.output.append(helper.make_tensor_value_info(LOGITS, TensorProto.FLOAT, ["batch", labels]))
    model.opset_import[0].version = OPSET
    onnx.checker.check_model(model)
    return model


def ensure_cross_graph(
    model_dir: str | os.PathLike[str], variant: str = "optimized", cache: Path | None = None
) -> Path:
    """Path of ``variant`` (``"fp32"``, or ``"optimized"``: attention and layer norms fused by
    ONNX Runtime's transformer optimizer) of the cross-encoder in ``model_dir``, converting on
    first use; the cache key covers the weights file (size, modification time), the config and
    the converter, as the bi-encoder's does."""
    if variant not in CROSS_VARIANTS:
        raise ArgumentError(f"must be one of {', '.join(CROSS_VARIANTS)}, not {variant!r}", param="variant")
    weights, config, fingerprint = model_files(model_dir, "cross", CROSS_CONVERTER_VERSION)
    folder = (cache or cache_root()) / fingerprint
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / "model-fp32.onnx"
    if not checksum_ok(fp32):
        model = build_cross_graph(weights, json.loads(config.read_text(encoding="utf-8")))
        _write_atomic(fp32, functools.partial(_save, model))
        write_checksum(fp32)
    if variant == "fp32":
        return fp32
    target = folder / "model-optimized.onnx"
    if not checksum_ok(target):
        _write_atomic(target, functools.partial(optimize, fp32, config_path=config))
        write_checksum(target)
    return target


class CrossEncoder:
    """Scores (question, passage) pairs with a cross-encoder ONNX graph (``logits`` output,
    [batch, labels]): the score is the logit of a one-label model, else the last label's
    minus the first's. Use :meth:`from_pretrained` for a Hugging Face folder.

    ``max_length``: tokens of a pair, special ones included (the question is cut to half of it,
    the passage to what is left); ``batch_tokens``: padded tokens a batch (pairs sorted by
    length); ``threads``: ONNX Runtime's intra-op threads (None: its default).
    """

    def __init__(
        self,
        graph: str | os.PathLike[str],
        tokenizer: Tokenizer,
        *,
        max_length: int = 512,
        batch_tokens: int = 4096,
        threads: int | None = None,
        providers: Sequence[str] | None = None,
    ) -> None:
        from .onnxruntime import default_providers, session

        self.graph = Path(graph)
        self.tokenizer = tokenizer
        self.max_length = check_int("max_length", max_length, 8)
        self.batch_tokens = check_int("batch_tokens", batch_tokens, 1)
        prefix, suffix = tokenizer.special_tokens
        if len(prefix) != 1 or len(suffix) != 1:
            raise ModelError(f"a BERT tokenizer adds [CLS] and [SEP], not {prefix} / {suffix}", where=tokenizer.source)
        self._cls, self._sep, self._pad = prefix[0], suffix[0], tokenizer.pad_id
        if not self.graph.is_file():
            raise FileNotFoundError(f"ONNX graph not found: {self.graph}")
        self._session = session(
            self.graph,
            list(providers) if providers is not None else default_providers(),
            threads,
            None,
            self.graph.read_bytes(),
            spin_us=0,
        )
        names = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise ModelError(
                f"a cross-encoder graph takes input_ids and attention_mask, not {names}", where=str(self.graph)
            )
        self._types = "token_type_ids" in names
        self._output = next((o.name for o in self._session.get_outputs() if o.name == LOGITS), None)
        if self._output is None:
            self._output = self._session.get_outputs()[0].name

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], variant: str = "optimized", **options: Any) -> CrossEncoder:
        """A cross-encoder for a BERT ``BertForSequenceClassification`` folder
        (``model.safetensors``, ``config.json``, ``tokenizer.json``), converted once into the
        cache folder (:func:`ensure_cross_graph`); ``max_length`` defaults to the model's
        ``max_position_embeddings`` (at most 512). ``options``: the constructor's."""
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder not found: {folder}")
        check_convertible(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        options.setdefault("max_length", min(512, int(config.get("max_position_embeddings", 512))))
        return cls(ensure_cross_graph(folder, variant), Tokenizer.from_pretrained(folder), **options)

    def pairs(self, question: str, passages: Sequence[str]) -> list[np.ndarray]:
        """Each pair's token ids: ``[CLS] question [SEP] passage [SEP]``, truncated to
        ``max_length`` (the question to half of it, the passage to the rest)."""
        q = self.tokenizer.encode_offsets(question).ids[: (self.max_length - 3) // 2]
        room = self.max_length - 3 - len(q)
        out = []
        for text in passages:
            p = self.tokenizer.encode_offsets(text).ids[:room]
            out.append(np.concatenate([[self._cls], q, [self._sep], p, [self._sep]]).astype(np.int64))
        return out

    def score_pairs(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """float32 ``(len(passages),)`` scores of ``question`` with each passage's text."""
        q_len = min(len(self.tokenizer.encode_offsets(question).ids), (self.max_length - 3) // 2) + 2
        ids = self.pairs(question, passages)
        out = np.empty(len(ids), np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        at = 0
        while at < len(order):
            end = at + 1
            while end < len(order) and (end - at + 1) * len(ids[order[end]]) <= self.batch_tokens:
                end += 1
            batch = order[at:end]
            width = len(ids[batch[-1]])
            feed_ids = np.full((len(batch), width), self._pad, np.int64)
            mask = np.zeros((len(batch), width), np.int64)
            types = np.zeros((len(batch), width), np.int64)
            for r, i in enumerate(batch):
                n = len(ids[i])
                feed_ids[r, :n], mask[r, :n], types[r, q_len:n] = ids[i], 1, 1
            feed = {"input_ids": feed_ids, "attention_mask": mask}
            if self._types:
                feed["token_type_ids"] = types
            logits = np.asarray(self._session.run([self._output], feed)[0], np.float32).reshape(len(batch), -1)
            out[batch] = logits[:, 0] if logits.shape[1] == 1 else logits[:, -1] - logits[:, 0]
            at = end
        return out

    def score(self, question: str, passages: Sequence[Any]) -> np.ndarray:
        """Scores of passages (``str``, or objects with a ``text``, such as a payload's
        passages): a :class:`~chunkforge.index.rerank.PassageScorer`."""
        return self.score_pairs(question, [p if isinstance(p, str) else p.text for p in passages])

    def __repr__(self) -> str:
        return f"CrossEncoder({str(self.graph)!r}, max_length={self.max_length})"
