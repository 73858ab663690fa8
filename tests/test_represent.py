"""Chunk representations: embed_text templates, chunkers that budget for the
prefix, and the contextualize hook with its SQLite cache (a deterministic fn)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from chunkforge import (
    Chunk,
    ContextAwareChunker,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    Tokenizer,
    context_prompt,
    contextualize,
    with_embed_text,
)
from chunkforge.represent import render

from conftest import DATA

README = (DATA / "markdown" / "getrandom-README.md").read_text(encoding="utf-8")
TITLE = "getrandom: a small cross-platform library for retrieving random data from the operating system"


def test_templates() -> None:
    chunk = Chunk("Body.", 10, 15, 2, 0, heading_path=("Install", "Linux"), context="| a | b |")
    assert render(chunk, "Guide") == "Guide > Install > Linux\n\n| a | b |\n\nBody."
    assert render(chunk) == "Install > Linux\n\n| a | b |\n\nBody."
    plain = Chunk("Body.", 10, 15, 2, 0)
    assert render(plain) == "Body."
    assert render(plain, "Guide") == "Guide\n\nBody."
    assert render(chunk, "T", template="passage: {text} ({title!r})") == "passage: Body. ('T')"
    assert render(plain, template="{title}: {text}") == "Body."  # no field before it: the separator after goes
    assert render(plain, "T", template="{title}: {text}") == "T: Body."
    for bad in ("{title}", "{text} {author}", "{text"):
        with pytest.raises(ValueError, match="template"):
            with_embed_text([plain], template=bad)


def test_embed_text_keeps_offsets() -> None:
    chunks = MarkdownChunker(max_tokens=96).chunk(README)
    shown = with_embed_text(chunks, title=TITLE)
    assert [(c.start, c.end, c.text) for c in shown] == [(c.start, c.end, c.text) for c in chunks]
    for c in shown:
        assert README[c.start : c.end] == c.text and c.embed_text.endswith(c.text)
        assert c.embed_text.startswith(" > ".join((TITLE, *c.heading_path)))
    assert any(len(c.heading_path) >= 2 for c in shown)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MarkdownChunker(max_tokens=80, min_tokens=10),
        lambda: RecursiveChunker(max_tokens=80, overlap=8),
        lambda: SentenceChunker(max_tokens=80),
    ],
)
def test_context_aware_budget(make) -> None:
    tok = Tokenizer.default()
    plain = with_embed_text(make().chunk(README), title=TITLE)
    assert max(tok.count(c.embed_text) for c in plain) > 80  # the prefix overflows without the wrapper
    chunks = ContextAwareChunker(make()).chunk(README, title=TITLE)
    assert all(tok.count(c.embed_text) <= 80 for c in chunks)
    assert max(tok.count(c.embed_text) for c in chunks) > 60  # the budget is not wasted
    for i, c in enumerate(chunks):
        assert c.index == i and README[c.start : c.end] == c.text and c.token_count == tok.count(c.text)


def test_reserve_tokens() -> None:
    tok = Tokenizer.default()
    chunks = ContextAwareChunker(RecursiveChunker(max_tokens=100), reserve_tokens=40).chunk(README, title=TITLE)
    assert all(c.token_count <= 60 and tok.count(c.embed_text) <= 100 for c in chunks)
    with pytest.raises(ValueError, match=r"reserve_tokens \(2\) is less than chunk \d+'s prefix"):
        ContextAwareChunker(RecursiveChunker(max_tokens=100), reserve_tokens=2).chunk(README, title=TITLE)
    with pytest.raises(ValueError, match="reserve_tokens"):
        ContextAwareChunker(RecursiveChunker(max_tokens=100), reserve_tokens=100)
    with pytest.raises(ValueError, match=r"max_tokens \(8\) is less than chunk \d+'s prefix alone"):
        ContextAwareChunker(RecursiveChunker(max_tokens=8)).chunk(README, title=TITLE)
    with pytest.raises(TypeError, match="chunker"):
        ContextAwareChunker(object())
    batch = ContextAwareChunker(SentenceChunker(max_tokens=64)).chunk_batch([README, "A. B."], titles=[TITLE, None])
    assert batch[1][0].embed_text == "A. B."


class Summarizer:
    """A deterministic stand-in for an LLM call that records its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, document: str, chunk_text: str) -> str:
        assert chunk_text in document and context_prompt(document, chunk_text).count(chunk_text) >= 1
        with self.lock:
            self.calls.append(chunk_text)
        return f"  From a {len(document)}-character README; chunk of {len(chunk_text.split())} words.\n"


def test_contextualize_caches_by_document_and_span(tmp_path: Path) -> None:
    cache = tmp_path / "context.sqlite"
    chunks = MarkdownChunker(max_tokens=64).chunk(README)
    fn = Summarizer()
    out = contextualize(chunks, README, fn, batch_size=4, cache=cache)
    assert sorted(fn.calls) == sorted(c.text for c in chunks)
    for before, after in zip(chunks, out):
        generated = f"From a {len(README)}-character README; chunk of {len(before.text.split())} words."
        assert after.context == "\n\n".join(x for x in (generated, before.context) if x)
        assert (after.start, after.end, after.text, after.embed_text) == (before.start, before.end, before.text, None)
    again = Summarizer()
    assert contextualize(chunks, README, again, cache=cache) == out and again.calls == []  # a rerun pays nothing
    edited = README.replace("getrandom", "GetRandom", 1)
    contextualize(MarkdownChunker(max_tokens=64).chunk(edited), edited, again, cache=cache)
    assert len(again.calls) == len(chunks)  # another document hash
    other = Summarizer()
    contextualize(chunks[:3], README, other, cache=cache, namespace="another-model")
    assert len(other.calls) == 3
    shown = with_embed_text(out[:1], title="Crate")
    assert shown[0].embed_text.startswith(f"Crate > {out[0].heading_path[0]}\n\nFrom a ")
    assert contextualize([], README, Summarizer(), cache=cache) == []


def test_contextualize_errors(tmp_path: Path) -> None:
    chunks = RecursiveChunker(max_tokens=32).chunk(README[:500])
    with pytest.raises(TypeError, match="fn must return a str"):
        contextualize(chunks, README[:500], lambda d, c: None, use_cache=False)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match=r"chunks\[0\]"):
        contextualize(chunks, README[1:501], Summarizer(), use_cache=False)
    with pytest.raises(ValueError, match="batch_size"):
        contextualize(chunks, README[:500], Summarizer(), batch_size=0, use_cache=False)
    with pytest.raises(TypeError, match="fn"):
        contextualize(chunks, README[:500], "gpt", use_cache=False)  # type: ignore[arg-type]
