"""Snapshot tests on real documents: chunk spans of a few shipped corpus
documents, one per source, for each chunker. A change in boundaries shows up
here as a diff; regenerate deliberately with ``CHUNKFORGE_UPDATE_GOLDEN=1``."""

from __future__ import annotations

import json
import os

import pytest

from chunkforge import RecursiveChunker, SentenceChunker, TokenChunker

from conftest import DATA, cf_tokenizer, corpus, hf_count

GOLDEN = DATA / "golden"
CHUNKERS = {
    "recursive-128": lambda tok: RecursiveChunker(tok, max_tokens=128),
    "recursive-256-overlap32": lambda tok: RecursiveChunker(tok, max_tokens=256, overlap=32),
    "sentence-128": lambda tok: SentenceChunker(tok, max_tokens=128, overlap_sentences=1),
    "token-128": lambda tok: TokenChunker(tok, max_tokens=128, overlap=16),
}


def golden_docs() -> list[dict]:
    """The first document of each source that is at least 3 KB long."""
    picked: dict[str, dict] = {}
    for doc in corpus():
        if doc["source"] not in picked and len(doc["text"]) >= 3000:
            picked[doc["source"]] = doc
    return sorted(picked.values(), key=lambda d: d["id"])


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
@pytest.mark.parametrize("name", sorted(CHUNKERS))
def test_golden(kind, name):
    chunker = CHUNKERS[name](cf_tokenizer(kind))
    got = {}
    for doc in golden_docs():
        chunks = chunker.chunk(doc["text"])
        for c in chunks:
            assert doc["text"][c.start : c.end] == c.text
            assert c.token_count == hf_count(kind, c.text) <= chunker.max_tokens
        got[doc["id"]] = [[c.start, c.end, c.token_count] for c in chunks]
    path = GOLDEN / f"{kind}-{name}.json"
    if os.environ.get("CHUNKFORGE_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=0) + "\n")
    assert len(got) == 3
    assert got == json.loads(path.read_text())


@pytest.mark.parametrize("max_tokens", [64, 256])
def test_golden_markdown(max_tokens):
    """Snapshots of MarkdownChunker on real READMEs (tables, code fences, nested headings)."""
    from chunkforge import MarkdownChunker

    chunker = MarkdownChunker(cf_tokenizer("wordpiece"), max_tokens=max_tokens)
    got = {}
    for path in sorted((DATA / "markdown").glob("*-README.md")):
        text = path.read_text()
        chunks = chunker.chunk(text)
        assert all(text[c.start : c.end] == c.text and c.token_count <= max_tokens for c in chunks)
        got[path.name] = [[c.start, c.end, c.token_count, c.kind, list(c.heading_path), c.context] for c in chunks]
    path = GOLDEN / f"markdown-{max_tokens}.json"
    if os.environ.get("CHUNKFORGE_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(got, indent=0, ensure_ascii=False) + "\n")
    assert got == json.loads(path.read_text())
