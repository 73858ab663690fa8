"""The public surface: one Chunker protocol, keyword-only parameters after ``max_tokens``,
one error base, chunks that score directly."""

from __future__ import annotations

import warnings

import pytest

import chunkforge
from chunkforge import (
    Chunker,
    ChunkforgeError,
    CodeChunker,
    ContextAwareChunker,
    DatasetError,
    HierarchicalChunker,
    InputError,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
)

TEXT = "# Guide\n\nFirst paragraph here. Another sentence.\n\n## Install\n\nRun pip install chunkforge.\n"


def shipped() -> list[object]:
    out = [
        TokenChunker(max_tokens=16),
        RecursiveChunker(max_tokens=16),
        SentenceChunker(max_tokens=16),
        MarkdownChunker(max_tokens=16),
        HierarchicalChunker(levels=(32, 8)),
        ContextAwareChunker(MarkdownChunker(max_tokens=32)),
    ]
    try:
        out.append(CodeChunker(language="python", max_tokens=16))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("chunker", shipped(), ids=lambda c: type(c).__name__)
def test_every_chunker_satisfies_the_protocol(chunker):
    assert isinstance(chunker, Chunker)
    chunks = chunker.chunk(TEXT)
    spans = chunker.spans(TEXT)
    assert [(c.start, c.end) for c in chunks] == list(zip(spans.start.tolist(), spans.end.tolist()))
    batch = chunker.spans_batch([TEXT, TEXT])
    assert len(batch.doc) == 2 * len(chunks)
    assert [len(cs) for cs in chunker.chunk_batch([TEXT, "x"])][0] == len(chunks)


def test_semantic_chunker_satisfies_the_protocol():
    assert all(hasattr(chunkforge.SemanticChunker, m) for m in ("chunk", "chunk_batch", "spans", "spans_batch"))


@pytest.mark.parametrize(
    "make, positional, keywords",
    [
        (MarkdownChunker, (None, 256, 32), {"min_tokens": 32}),
        (RecursiveChunker, (None, 64, 8), {"overlap": 8}),
        (TokenChunker, (None, 64, 8), {"overlap": 8}),
        (SentenceChunker, (None, 64, 1), {"overlap_sentences": 1}),
    ],
)
def test_parameters_after_max_tokens_are_keyword_only(make, positional, keywords):
    with pytest.raises(TypeError, match="positional argument"):
        make(*positional)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(*positional[:2], **keywords)


def test_one_error_base():
    for error in (InputError, DatasetError):
        assert issubclass(error, ChunkforgeError) and issubclass(error, ValueError)
    from chunkforge.eval import DatasetError as EvalDatasetError

    assert EvalDatasetError is DatasetError


def test_chunks_score_directly_with_their_doc_id():
    from chunkforge.eval import Document, Query, Span, SpanMeasure, score

    text = "Cats sleep. Dogs bark."
    chunks = RecursiveChunker(max_tokens=4).chunk(text).with_doc_id("a")
    measure = SpanMeasure([Document("a", text)], unit="chars")
    query = Query("q", "?", (Span("a", 0, 11),))
    from_chunks = score([query], [chunks], measure)
    from_spans = score([query], [[Span("a", c.start, c.end) for c in chunks]], measure)
    assert from_chunks.recall.tolist() == from_spans.recall.tolist() == [1.0]
