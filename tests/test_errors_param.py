"""Errors as data beyond the core: the chunkers built on an encoder, the evaluation, the
framework adapters, the service's client and the bulk job raise argument errors that are
ChunkforgeErrors carrying the parameter they are about (``param``), still ValueErrors or
TypeErrors as callers expect (real calls, no mocks)."""

from __future__ import annotations

from pathlib import Path

import pytest

import chunkforge
from chunkforge import ChunkforgeError
from chunkforge.errors import ArgumentError, ArgumentTypeError, DatasetError

DATA = Path(__file__).parent / "data"
TEXT = "Cats purr. Dogs bark. Birds sing at dawn. " * 8


def raised(make, param: str, kind: type[Exception] = ValueError) -> ChunkforgeError:
    """The error ``make()`` raises: a ChunkforgeError of ``kind`` about ``param``."""
    with pytest.raises(ChunkforgeError) as caught:
        make()
    error = caught.value
    assert isinstance(error, kind) and isinstance(error, ValueError), repr(error)
    assert isinstance(error, ArgumentTypeError if kind is TypeError else ChunkforgeError)
    assert error.param == param, (error.param, str(error))
    return error


def test_chunker_arguments():
    error = raised(lambda: chunkforge.RecursiveChunker(max_tokens=16, separators=["\n", ""]), "separators")
    assert isinstance(error, ArgumentError) and str(error).startswith("separators must not contain")
    context = chunkforge.ContextAwareChunker(chunkforge.RecursiveChunker(max_tokens=16), reserve_tokens=2)
    error = raised(
        lambda: context.chunk(TEXT, title="A title of many words that takes its tokens " * 2), "reserve_tokens"
    )
    assert str(error).startswith("reserve_tokens (2) is less than chunk ")


@pytest.fixture(scope="module")
def encoder(model_cache):
    return chunkforge.Encoder.default()


def test_late_and_semantic_arguments(encoder):
    late = chunkforge.LateChunker(None, encoder)
    raised(lambda: chunkforge.LateChunker(None, encoder, segment_overlap=10_000), "segment_overlap")
    assert str(raised(lambda: late.chunk(TEXT), "chunker")).startswith("chunker is None")
    error = raised(lambda: late.embed_chunks(TEXT, [(0, 10), (5, 10_000)]), "chunks")
    assert str(error).startswith("chunks[0][1] = (5, 10000) is not a non-empty span")
    assert str(raised(lambda: late.token_vectors(["a", 3]), "texts", TypeError)).startswith("texts[1] must be a str")
    raised(lambda: chunkforge.SemanticChunker(encoder, threshold="p200"), "threshold")
    raised(lambda: chunkforge.SemanticChunker(encoder).chunk_batch([TEXT, None]), "texts", TypeError)


def test_evaluation_arguments(encoder):
    from chunkforge.eval import SpanMeasure, evaluate, load_corpus, load_queries
    from chunkforge.eval.datasets import Document, Span
    from chunkforge.eval.metrics import score
    from chunkforge.eval.retrieval import budget_cut

    docs = [Document("a", "one two three four")]
    raised(lambda: SpanMeasure(docs, unit="words"), "unit")
    measure = SpanMeasure(docs, unit="chars")
    error = raised(lambda: measure.overlaps([[Span("b", 0, 1)]], [[]]), "evidence")
    assert str(error) == "evidence[0][0]: doc_id 'b' is not in the corpus"
    raised(lambda: measure.overlaps([[]], []), "retrieved")
    raised(lambda: score([], [], measure, coverage=0), "coverage")
    raised(lambda: budget_cut([1, 2], 3, pack="fill"), "pack")
    corpus = load_corpus(DATA / "eval" / "corpus.jsonl")
    queries = load_queries(DATA / "eval" / "queries.jsonl", corpus)
    chunker = chunkforge.RecursiveChunker(max_tokens=64)
    raised(lambda: evaluate(corpus, queries, chunker, encoder, k=0), "k")
    raised(lambda: evaluate(corpus, queries, chunker, encoder, k="3"), "k", TypeError)
    raised(lambda: evaluate(corpus, queries, chunker, encoder, representation="nope"), "[representation] type")


def test_a_config_error_keeps_its_file_as_where_not_in_its_text(tmp_path, capsys):
    from chunkforge.cli import main
    from chunkforge.eval import Config

    bad = tmp_path / "bad.toml"
    bad.write_text('[chunker]\ntype = "fractal"\n', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        Config.load(bad)
    assert (caught.value.where, caught.value.param) == (f"config {bad}", "[chunker] type")
    assert str(caught.value).startswith(f"config {bad}: [chunker] type must be one of")
    zero = tmp_path / "zero.toml"
    zero.write_text('[chunker]\ntype = "recursive"\nmax_tokens = 0\n', encoding="utf-8")
    argv = ["eval", "--corpus", str(DATA / "eval" / "corpus.jsonl"), "--queries", str(DATA / "eval" / "queries.jsonl")]
    assert main([*argv, "--config", str(zero), "--no-cache"]) == 2
    # a config's parameter is not a flag: named as the config names it, after the config's name
    assert capsys.readouterr().err == "chunkforge: error: config zero: max_tokens must be >= 1, got 0\n"


def test_framework_adapter_arguments():
    from chunkforge.integrations import check_chunker, check_encoder, refuse_unknown, resize_chunker

    raised(lambda: check_chunker("recursive"), "chunker", TypeError)
    raised(lambda: check_encoder(3), "encoder", TypeError)
    sentences = chunkforge.SentenceChunker(max_tokens=64)
    assert str(raised(lambda: resize_chunker(sentences, None, 8), "chunk_overlap")).startswith(
        "chunk_overlap: SentenceChunker has no overlap to set"
    )
    raised(lambda: refuse_unknown(dict, {"chunksize": 1}, ["chunk_size"], ()), "chunksize", TypeError)
    pytest.importorskip("langchain_text_splitters")
    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    raised(lambda: ChunkforgeTextSplitter(length_function=3), "length_function", TypeError)
    raised(lambda: ChunkforgeTextSplitter().create_documents(["a", "b"], [{}]), "metadatas")


def test_service_client_and_bulk_arguments():
    pytest.importorskip("httpx")
    from chunkforge.bulk import JobSpec
    from chunkforge.bulk.readers import count_docs
    from chunkforge.index.filters import Filter
    from chunkforge.serve.client import ServiceClient

    client = ServiceClient("http://127.0.0.1:9")  # refused before any request is sent
    raised(lambda: client.expand([], filter=Filter()), "filter", TypeError)
    assert str(raised(lambda: count_docs(["-"], JobSpec()), "inputs")).endswith("(inputs)")
