"""The public surface: one Chunker protocol, keyword-only parameters (old positional
calls deprecated), one error base, chunks that score directly, deprecated spellings."""

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
def test_positional_parameters_after_max_tokens_are_deprecated(make, positional, keywords):
    with pytest.warns(DeprecationWarning, match="by keyword"):
        old = make(*positional)
    assert repr(old) == repr(make(*positional[:2], **keywords))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(*positional[:2], **keywords)  # the new spelling does not warn


def test_positional_and_keyword_for_the_same_parameter_is_an_error():
    with pytest.raises(TypeError, match="multiple values"):
        MarkdownChunker(None, 256, 32, min_tokens=8)


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


@pytest.mark.parametrize(
    "argv", [["query", "INDEX", "q"], ["eval", "--corpus", "c", "--queries", "q", "--config", "t"]]
)
def test_old_budget_flag_is_a_hidden_deprecated_alias(argv, capsys):
    from chunkforge.cli import build_parser

    parser = build_parser()
    assert parser.parse_args([*argv, "--budget-tokens", "50"]).budget_tokens == 50
    assert parser.parse_args([*argv, "--budget", "60"]).budget_tokens == 60
    assert "--budget is deprecated, use --budget-tokens" in capsys.readouterr().err
    sub = parser._subparsers._group_actions[0].choices[argv[0]]  # noqa: SLF001
    assert "--budget " not in sub.format_help() and "--budget-tokens" in sub.format_help()
