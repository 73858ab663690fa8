"""Late chunking against the PyTorch reference, one-pass equivalence for short
documents, and the macro windows of long ones (each token from exactly one window)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chunkforge import Encoder, LateChunker, MarkdownChunker, RecursiveChunker, SentenceChunker

from conftest import DATA, corpus

REF = np.load(DATA / "minilm-reference.npz")
LC = np.load(DATA / "late-chunking-reference.npz")
LC_TEXT = str(REF["lc_text"])
LIGHTHOUSE = str(REF["texts"][10])  # 599 content tokens


@pytest.fixture(scope="module")
def encoder(model_cache: Path) -> Encoder:
    return Encoder.default(intra_op_threads=2)


@pytest.fixture(scope="module")
def small_window(model_cache: Path) -> Encoder:
    """A 64-token window, so that a 600-token document needs many macro windows."""
    return Encoder.default(max_length=64, max_batch_tokens=512, intra_op_threads=2)


def test_matches_reference(model_cache: Path) -> None:
    late = LateChunker(None, Encoder.default("optimized", max_length=512, intra_op_threads=2))
    spans = [tuple(s) for s in LC["lc_span_char_bounds"].tolist()]
    vectors = late.embed_chunks(LC_TEXT, spans)
    cosines = np.einsum("ij,ij->i", vectors, LC["lc_late_span_embeddings"])
    assert cosines.min() > 0.9999, cosines
    tokens = late.token_vectors([LC_TEXT])[0]
    assert tokens.segments.tolist() == [[0, 402]]
    np.testing.assert_array_equal(tokens.offsets, REF["lc_offset_mapping"][1:-1])
    np.testing.assert_allclose(tokens.vectors, REF["lc_token_embeddings"][1:-1], atol=1e-4)


def test_short_document_is_one_pass(encoder: Encoder) -> None:
    text = str(REF["texts"][2])[:900]
    late = LateChunker(SentenceChunker(max_tokens=40), encoder)
    tokens = late.token_vectors([text])[0]
    one_pass = encoder.token_embeddings([text])[0]
    assert tokens.segments.tolist() == [[0, len(tokens.vectors)]] and not tokens.segment.any()
    np.testing.assert_array_equal(tokens.offsets, one_pass.offsets[~one_pass.special])
    np.testing.assert_allclose(tokens.vectors, one_pass.vectors[~one_pass.special], atol=1e-5)
    chunks, vectors = late.chunk(text)
    assert len(chunks) > 2 and vectors.shape == (len(chunks), encoder.dim)
    for chunk, vector in zip(chunks, vectors):
        inside = (one_pass.offsets[:, 0] >= chunk.start) & (one_pass.offsets[:, 1] <= chunk.end) & ~one_pass.special
        mean = one_pass.vectors[inside].mean(0)
        assert vector @ (mean / np.linalg.norm(mean)) > 0.99999


def test_long_document_each_token_from_one_window(small_window: Encoder) -> None:
    late = LateChunker(RecursiveChunker(max_tokens=24), small_window, segment_overlap=16)
    tokens = late.token_vectors([LIGHTHOUSE])[0]
    n, size = len(tokens.vectors), late.segment_tokens
    starts, ends = tokens.segments.T
    assert n == 599 and starts[0] == 0 and ends[-1] == n and (ends - starts == size).all()
    assert (starts[1:] > starts[:-1]).all() and (ends[:-1] - starts[1:] >= 16).all()
    assert len(starts) == -(-(n - 16) // (size - 16))  # as few windows as the overlap allows
    # each token's window holds it, and no other window holds it farther from an edge
    for p, w in enumerate(tokens.segment.tolist()):
        holding = [k for k in range(len(starts)) if starts[k] <= p < ends[k]]
        depth = [min(p - starts[k], ends[k] - 1 - p) for k in holding]
        assert w == holding[int(np.argmax(depth))]
    # and its vector is that window's output: re-run windows whose text re-encodes to the same ids
    ids = small_window.tokenizer.encode_offsets(LIGHTHOUSE).ids
    checked = 0
    for w, (a, b) in enumerate(tokens.segments.tolist()):
        piece = LIGHTHOUSE[tokens.offsets[a, 0] : tokens.offsets[b - 1, 1]]
        if not np.array_equal(small_window.tokenizer.encode_offsets(piece).ids, ids[a:b]):
            continue  # the window starts inside a word
        alone = small_window.token_embeddings([piece])[0].vectors[1:-1]
        owned = np.flatnonzero(tokens.segment == w)
        np.testing.assert_allclose(tokens.vectors[owned], alone[owned - a], atol=1e-4)
        checked += 1
    assert checked >= len(starts) // 2
    chunks, vectors = late.chunk(LIGHTHOUSE)
    assert len(chunks) == len(vectors) > 20
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_batch_equals_one_by_one(small_window: Encoder) -> None:
    docs = [LIGHTHOUSE, "", "Short one. Two sentences.", LC_TEXT, corpus()[1]["text"]]
    late = LateChunker(SentenceChunker(max_tokens=32), small_window)
    batch = late.chunk_batch(docs)
    assert batch[1].chunks == [] and batch[1].vectors.shape == (0, small_window.dim)
    for doc, (chunks, vectors) in zip(docs, batch):
        alone = late.chunk(doc)
        assert alone.chunks == chunks
        np.testing.assert_allclose(alone.vectors, vectors, atol=1e-5)


def test_chunks_from_any_chunker_and_spans(encoder: Encoder) -> None:
    text = (DATA / "markdown" / "getrandom-README.md").read_text(encoding="utf-8")[:3000]
    late = LateChunker(None, encoder)
    chunks = MarkdownChunker(max_tokens=64).chunk(text)
    by_chunk = late.embed_chunks(text, chunks)
    by_span = late.embed_chunks(text, [(c.start, c.end) for c in chunks])
    np.testing.assert_array_equal(by_chunk, by_span)
    # a span cutting inside words pools the tokens it overlaps
    assert late.embed_chunks(text, [(1, 4)]).shape == (1, encoder.dim)


def test_late_vectors_carry_document_context(model_cache: Path) -> None:
    """The reference's point: the 2nd and 3rd spans never name Lisbon; late chunking
    brings them closer to Lisbon queries than embedding the spans alone."""
    enc = Encoder.default(max_length=512, intra_op_threads=2)
    spans = [tuple(s) for s in LC["lc_span_char_bounds"].tolist()]
    late = LateChunker(None, enc).embed_chunks(LC_TEXT, spans)
    naive = enc.embed([LC_TEXT[s:e] for s, e in spans])
    queries = enc.embed([str(q) for q in LC["lc_queries"]])
    assert ((queries @ late.T)[:, 1:] > (queries @ naive.T)[:, 1:]).all()


def test_bad_arguments(encoder: Encoder) -> None:
    with pytest.raises(ValueError, match="segment_overlap"):
        LateChunker(None, encoder, segment_overlap=254)
    with pytest.raises(TypeError, match="segment_overlap"):
        LateChunker(None, encoder, segment_overlap=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="chunker"):
        LateChunker("recursive", encoder)
    late = LateChunker(None, encoder)
    with pytest.raises(ValueError, match="no chunker"):
        late.chunk("text")
    with pytest.raises(ValueError, match=r"chunks\[0\]\[1\] = \(3, 99\)"):
        late.embed_chunks("Some text.", [(0, 4), (3, 99)])
    with pytest.raises(ValueError, match=r"holds no token"):
        late.embed_chunks("One.   Two.", [(4, 7)])
    with pytest.raises(ValueError, match="one list per text"):
        late.embed_chunks_batch(["a", "b"], [[(0, 1)]])


def test_late_window_names_are_gone(encoder):
    """The "window" names of 0.1 are gone: one name per idea (segments)."""
    with pytest.raises(TypeError, match="window_overlap"):
        LateChunker(None, encoder, window_overlap=16)  # type: ignore[call-arg]
    late = LateChunker(None, encoder, segment_overlap=16)
    tokens = late.token_vectors(["One. Two."])[0]
    assert not any(hasattr(late, n) for n in ("window", "window_overlap")) and not hasattr(tokens, "windows")
