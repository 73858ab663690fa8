"""CountedChunker: chunks sized by a tiktoken encoding or any callable, offsets exact."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from chunkforge import CountedChunker

from conftest import corpus, hf_count, tiktoken_encoding

TEXT = "\n\n".join(d["text"] for d in corpus()[:8])[:12000]


def covered_all_but_whitespace(text: str, chunks) -> bool:
    seen = np.zeros(len(text), bool)
    for c in chunks:
        seen[c.start : c.end] = True
    return all(ch.isspace() for ch in np.array(list(text))[~seen]) if (~seen).any() else True


def test_a_tiktoken_encoding_sizes_the_chunks():
    pytest.importorskip("tiktoken")
    encoding = tiktoken_encoding()
    chunks = CountedChunker(encoding, max_tokens=60).chunk(TEXT)
    counts = [len(encoding.encode(c.text)) for c in chunks]
    assert counts == [c.token_count for c in chunks] and max(counts) <= 60
    assert sum(counts) < sum(len(c.text.encode()) for c in chunks)  # merges counted: not bytes
    assert all(TEXT[c.start : c.end] == c.text for c in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert covered_all_but_whitespace(TEXT, chunks)
    # packed: no two neighbours would have fitted as one chunk
    assert all(len(encoding.encode(TEXT[a.start : b.end].strip())) > 60 for a, b in zip(chunks, chunks[1:]))


def test_a_callable_sizes_the_chunks_with_overlap():
    count = lambda text: hf_count("bpe", text)  # noqa: E731  (an HF tokenizer's count, as a plain callable)
    chunker = CountedChunker(count, max_tokens=48, overlap=12)
    chunks = chunker.chunk(TEXT)
    assert all(count(c.text) == c.token_count <= 48 for c in chunks)
    assert all(TEXT[c.start : c.end] == c.text for c in chunks)
    shared = [TEXT[b.start : a.end] for a, b in zip(chunks, chunks[1:]) if b.start < a.end]
    assert shared and all(count(s.strip()) <= 12 for s in shared)
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    # the batch and span forms agree with chunk
    batch = chunker.chunk_batch([TEXT, "", "short text"])
    assert batch[0] == chunks and batch[1] == [] and [c.text for c in batch[2]] == ["short text"]
    spans = chunker.spans(TEXT)
    assert spans.start.tolist() == starts and spans.token_count.tolist() == [c.token_count for c in chunks]
    assert chunker.spans_batch([TEXT, "short text"]).doc.tolist() == [0] * len(chunks) + [1]


def test_a_word_longer_than_the_limit_is_cut_between_characters():
    chunks = CountedChunker(len, max_tokens=5).chunk("abcdefghijkl mn")
    assert [c.text for c in chunks] == ["abcde", "fghij", "kl mn"]


def test_bad_counters_and_sizes_are_refused_by_name():
    with pytest.raises(TypeError, match="counter"):
        CountedChunker("cl100k_base", max_tokens=10)
    with pytest.raises(ValueError, match="overlap"):
        CountedChunker(len, max_tokens=10, overlap=10)
    with pytest.raises(ValueError, match="max_tokens"):
        CountedChunker(len, max_tokens=0)
    with pytest.raises(TypeError, match="separators"):
        CountedChunker(len, max_tokens=10, separators=["\n", ""])


def test_pickles_when_its_counter_does():
    chunker = CountedChunker(len, max_tokens=20, overlap=4)
    again = pickle.loads(pickle.dumps(chunker))
    assert again.chunk(TEXT[:2000]) == chunker.chunk(TEXT[:2000])
