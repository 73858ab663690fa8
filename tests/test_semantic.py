"""SemanticChunker: topic cuts, absolute/percentile thresholds, hard max_tokens,
min_tokens floor and exact offsets (property tests on corpus sentences)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkforge import Encoder, SemanticChunker, split_sentences

from conftest import WHITE_SPACE, corpus

TOPICS = [
    (
        "Cats are small carnivorous mammals kept as pets. A cat sleeps for most of the day. "
        "Kittens learn to hunt by playing with their siblings. Many cats purr when they are content."
    ),
    (
        "The Rust compiler checks ownership and borrowing at compile time. Rust programs have no garbage collector. "
        "Cargo builds Rust crates and fetches their dependencies. The borrow checker rejects dangling references."
    ),
    (
        "A French omelette is cooked quickly over medium heat with butter. Whisk the eggs with salt before cooking. "
        "Roll the omelette onto a warm plate while its centre is still soft. Chives make a good garnish for eggs."
    ),
]
DOC = " ".join(TOPICS)


@pytest.fixture(scope="module")
def encoder(model_cache: Path) -> Encoder:
    return Encoder.default(intra_op_threads=2)


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    out = []
    for record in corpus()[:12]:
        text = record["text"]
        out += [text[s:e] for s, e in split_sentences(text)[:60]]
    return out


def check_chunks(text: str, chunks, chunker: SemanticChunker) -> None:
    tok = chunker.tokenizer
    end = 0
    for i, c in enumerate(chunks):
        assert c.index == i and text[c.start : c.end] == c.text and c.text.strip(WHITE_SPACE) == c.text
        assert c.token_count == tok.count(c.text) <= chunker.max_tokens
        assert c.start >= end and text[end : c.start].strip(WHITE_SPACE) == ""  # in order, nothing but space lost
        end = c.end
    assert text[end:].strip(WHITE_SPACE) == ""
    counter = tok.span_counter(text)
    for i, c in enumerate(chunks):  # a chunk under the floor has no neighbour that could absorb it
        if c.token_count < chunker.min_tokens:
            for j in (i - 1, i + 1):
                if 0 <= j < len(chunks):
                    a, b = sorted((c, chunks[j]), key=lambda x: x.start)
                    assert counter.count(a.start, b.end) > chunker.max_tokens


def test_cuts_at_topic_changes(encoder: Encoder) -> None:
    chunker = SemanticChunker(encoder, max_tokens=512, min_tokens=0, threshold="p80")
    sents = split_sentences(DOC)
    dist = chunker.distances_batch([DOC], [sents])[0]
    assert len(dist) == 11 and set(np.argsort(dist)[-2:].tolist()) == {3, 7}
    assert [c.text for c in chunker.chunk(DOC)] == TOPICS


def test_absolute_thresholds(encoder: Encoder) -> None:
    sents = split_sentences(DOC)
    never = SemanticChunker(encoder, max_tokens=512, threshold=2.5).chunk(DOC)
    assert [(c.start, c.end) for c in never] == [(sents[0][0], sents[-1][1])]
    always = SemanticChunker(encoder, max_tokens=512, min_tokens=0, threshold=-1.0).chunk(DOC)
    assert [(c.start, c.end) for c in always] == sents


def test_window_distances(encoder: Encoder) -> None:
    sents = split_sentences(DOC)
    dist = SemanticChunker(encoder, window=2).distances_batch([DOC], [sents])[0]
    for i in (0, 5, 10):  # windows of 2 sentences each side, clipped at the document's edges
        left = DOC[sents[max(0, i - 1)][0] : sents[i][1]]
        right = DOC[sents[i + 1][0] : sents[min(len(sents) - 1, i + 2)][1]]
        a, b = encoder.embed([left, right])
        assert dist[i] == pytest.approx(1 - a @ b, abs=1e-5)


def test_hard_limit_inside_one_sentence(encoder: Encoder) -> None:
    text = "Intro sentence here. " + " ".join(["tokenization"] * 150) + " end. Outro sentence."
    chunker = SemanticChunker(encoder, max_tokens=32, min_tokens=8)
    chunks = chunker.chunk(text)
    check_chunks(text, chunks, chunker)
    assert len(chunks) >= 10


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    max_tokens=st.integers(8, 160),
    floor=st.floats(0, 0.6),
    threshold=st.one_of(st.sampled_from(["p50", "p90", "p95", "p99", "p100", "p0"]), st.floats(-0.5, 2.5)),
    window=st.integers(1, 3),
)
def test_properties(
    encoder: Encoder, sentences: list[str], data, max_tokens: int, floor: float, threshold: float | str, window: int
) -> None:
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    picked = rng.sample(sentences, rng.randint(0, 30))
    text = "".join(s + rng.choice([" ", "  ", "\n", "\n\n", "\t "]) for s in picked)
    chunker = SemanticChunker(
        encoder, max_tokens=max_tokens, min_tokens=int(max_tokens * floor), threshold=threshold, window=window
    )
    check_chunks(text, chunker.chunk(text), chunker)


def test_batch_equals_one_by_one(encoder: Encoder) -> None:
    docs = [DOC, "", "   ", "One sentence only.", corpus()[3]["text"][:4000]]
    chunker = SemanticChunker(encoder, max_tokens=96)
    batch = chunker.chunk_batch(docs)
    assert batch[1] == batch[2] == [] and len(batch[3]) == 1
    assert batch == [chunker.chunk(d) for d in docs]
    for doc, chunks in zip(docs, batch):
        check_chunks(doc, chunks, chunker)


def test_bad_arguments(encoder: Encoder) -> None:
    with pytest.raises(ValueError, match="threshold"):
        SemanticChunker(encoder, threshold="95")
    with pytest.raises(ValueError, match="threshold"):
        SemanticChunker(encoder, threshold="p101")
    with pytest.raises(TypeError, match="threshold"):
        SemanticChunker(encoder, threshold=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_tokens"):
        SemanticChunker(encoder, max_tokens=10, min_tokens=11)
    with pytest.raises(ValueError, match="window"):
        SemanticChunker(encoder, window=0)
    with pytest.raises(TypeError, match="encoder"):
        SemanticChunker("minilm")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        SemanticChunker(encoder).chunk_batch(["ok", 3])  # type: ignore[list-item]
