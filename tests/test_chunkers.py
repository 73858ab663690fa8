"""Chunker properties on random and adversarial text, for both tokenizers:
exact offsets, the token limit when re-encoded alone, overlap within what was
asked, full coverage; plus parameter errors and batch behaviour."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkforge
from chunkforge import RecursiveChunker, SentenceChunker, TokenChunker

from conftest import WHITE_SPACE, cf_tokenizer, corpus, hf_count

PIECES = [
    "Hello",
    "world",
    "the",
    "kernel",
    "scheduler's",
    "naïve",
    "café",
    "3.14",
    "e.g.",
    "Dr.",
    "😀",
    "👍🏽",
    "👨‍👩‍👧",
    "中文字符",
    "日本語。",
    "한국어",
    "e\u0301",
    "\u0301",
    "עברית",
    "مرحبا",
    "\r\n",
    "\n",
    "\n\n",
    "\t",
    " ",
    "  ",
    "\x00",
    "\x0b",
    ".",
    ",",
    ";",
    "!",
    "?",
    "...",
    "—",
    "unbelievably",
    "antidisestablishmentarianism",
    "x" * 120,
    "ab" * 40,
    "a.b.c.d.e.f",
    "[CLS]",
    "<|endoftext|>",
    "```",
    "|---|",
    "it’s",
    "“quoted”",
    "\u200b",
    "\u00ad",
    "İ",
]

adversarial_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=120).map(
    lambda parts: " ".join(parts) if len(parts) % 3 else "".join(parts)
)

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(kind: str, cls, **params):
    return cls(cf_tokenizer(kind), **params)


def check_chunks(kind: str, text: str, chunks, max_tokens: int, *, coverage: bool) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text and c.text == c.text.strip(WHITE_SPACE), "chunks are trimmed, never empty"
        assert c.token_count == hf_count(kind, c.text), "token_count is the count re-encoded alone"
        assert c.token_count <= max_tokens
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end
    if coverage:
        covered = bytearray(len(text))
        for c in chunks:
            covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        missing = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
        assert not missing, f"uncovered characters {missing[:5]}"


@PROPERTY
@given(text=adversarial_text, max_tokens=st.integers(4, 40), overlap=st.integers(0, 10), min_tokens=st.integers(0, 6))
def test_recursive_properties(text, max_tokens, overlap, min_tokens):
    overlap = min(overlap, max_tokens - 1)
    for kind in ("wordpiece", "bpe"):
        chunks = make(
            kind, RecursiveChunker, max_tokens=max_tokens, overlap=overlap, min_tokens=min(min_tokens, max_tokens)
        ).chunk(text)
        check_chunks(kind, text, chunks, max_tokens, coverage=True)
        for a, b in zip(chunks, chunks[1:]):
            if b.start < a.end:
                assert hf_count(kind, text[b.start : a.end]) <= overlap


@PROPERTY
@given(text=adversarial_text, max_tokens=st.integers(4, 40), overlap_sentences=st.integers(0, 2))
def test_sentence_properties(text, max_tokens, overlap_sentences):
    for kind in ("wordpiece", "bpe"):
        chunks = make(kind, SentenceChunker, max_tokens=max_tokens, overlap_sentences=overlap_sentences).chunk(text)
        check_chunks(kind, text, chunks, max_tokens, coverage=True)
        if overlap_sentences == 0:
            assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:]))


@PROPERTY
@given(text=adversarial_text, max_tokens=st.integers(4, 40), overlap=st.integers(0, 10))
def test_token_properties(text, max_tokens, overlap):
    overlap = min(overlap, max_tokens - 1)
    for kind in ("wordpiece", "bpe"):
        chunks = make(kind, TokenChunker, max_tokens=max_tokens, overlap=overlap).chunk(text)
        check_chunks(kind, text, chunks, max_tokens, coverage=False)
        # every token of the text lies in some window
        offsets = cf_tokenizer(kind).encode_offsets(text).offsets.tolist()
        spans = [(c.start, c.end) for c in chunks]
        for s, e in offsets:
            piece = text[s:e]
            if piece.strip(WHITE_SPACE):  # a BPE token may carry whitespace that windows trim
                s += len(piece) - len(piece.lstrip(WHITE_SPACE))
                e -= len(piece) - len(piece.rstrip(WHITE_SPACE))
                assert any(a <= s and e <= b for a, b in spans), (s, e)
        for a, b in zip(chunks, chunks[1:]):
            if b.start < a.end:
                assert hf_count(kind, text[b.start : a.end]) <= overlap


def test_token_windows_are_full_on_real_text(kind):
    text = corpus()[0]["text"]
    chunks = make(kind, TokenChunker, max_tokens=64).chunk(text)
    check_chunks(kind, text, chunks, 64, coverage=False)
    # windows are cut at the limit, except where a mid-word start costs a token or two
    assert sum(c.token_count for c in chunks[:-1]) >= 62 * (len(chunks) - 1)


def test_real_documents_all_strategies(kind):
    for doc in corpus()[:12]:
        text = doc["text"]
        for cls, params in [
            (RecursiveChunker, {"overlap": 16}),
            (SentenceChunker, {"overlap_sentences": 1}),
            (TokenChunker, {"overlap": 16}),
        ]:
            chunks = make(kind, cls, max_tokens=128, **params).chunk(text)
            check_chunks(kind, text, chunks, 128, coverage=cls is not TokenChunker)


def test_recursive_prefers_coarse_boundaries():
    para = "This sentence has exactly some words in it. " * 3
    text = (para.strip() + "\n\n") * 4
    chunks = RecursiveChunker(max_tokens=40).chunk(text)
    assert [c.text for c in chunks] == [para.strip()] * 4


def test_custom_separators():
    text = "alpha beta---gamma delta---epsilon"
    chunks = RecursiveChunker(max_tokens=5, separators=["---"]).chunk(text)
    assert [c.text for c in chunks] == ["alpha beta---", "gamma delta---", "epsilon"]


def test_min_tokens_merges_fragments():
    text = "Heading\n\n" + "Body sentence with several words. " * 8
    plain = RecursiveChunker(max_tokens=40).chunk(text)
    floored = RecursiveChunker(max_tokens=40, min_tokens=5).chunk(text)
    assert plain[0].text == "Heading"
    assert floored[0].text.startswith("Heading\n\nBody")
    assert all(c.token_count <= 40 for c in floored)


def test_empty_and_whitespace():
    for cls in (RecursiveChunker, SentenceChunker, TokenChunker):
        assert cls().chunk("") == []
        assert cls().chunk(" \n\t \r\n") == []


def test_long_inputs_respect_the_limit(kind):
    """A long document and a 1 MB 'word' without separators (time: benches/)."""
    word = "abcdefghij" * 100_000
    for cls in (RecursiveChunker, TokenChunker):
        spans = make(kind, cls, max_tokens=256).spans(word)
        assert spans.start[0] == 0 and spans.end[-1] == len(word)
        assert spans.token_count.max() <= 256
    text = " ".join(d["text"] for d in corpus()[:40])
    spans = make(kind, RecursiveChunker, max_tokens=512).spans(text)
    assert spans.token_count.max() <= 512
    sample = [text[s:e] for s, e in zip(spans.start[::25], spans.end[::25])]
    assert all(hf_count(kind, t) <= 512 for t in sample)


def test_batch_matches_single_in_order():
    texts = [d["text"] for d in corpus()[:40]] + ["", "short one"]
    chunker = RecursiveChunker(max_tokens=128)
    batch = chunker.chunk_batch(texts, threads=2)
    assert batch == [chunker.chunk(t) for t in texts]
    doc, start, end, count = chunker.spans_batch(texts, threads=1)
    assert len(doc) == sum(len(b) for b in batch)
    assert doc.tolist() == sorted(doc.tolist())
    flat = [c for b in batch for c in b]
    assert start.tolist() == [c.start for c in flat] and count.tolist() == [c.token_count for c in flat]


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"max_tokens": 0}, ValueError, "max_tokens"),
        ({"max_tokens": 2.5}, TypeError, "max_tokens"),
        ({"max_tokens": True}, TypeError, "max_tokens"),
        ({"overlap": -1}, ValueError, "overlap"),
        ({"max_tokens": 8, "overlap": 8}, ValueError, "overlap"),
        ({"overlap": "2"}, TypeError, "overlap"),
        ({"tokenizer": 3.0}, TypeError, "tokenizer"),
        ({"tokenizer": "/nonexistent/tokenizer.json"}, FileNotFoundError, "tokenizer.json"),
    ],
)
def test_bad_parameters(params, error, match):
    with pytest.raises(error, match=match):
        RecursiveChunker(**params)


def test_bad_parameters_specific():
    with pytest.raises(ValueError, match="min_tokens"):
        RecursiveChunker(max_tokens=8, min_tokens=9)
    with pytest.raises(TypeError, match="separators"):
        RecursiveChunker(separators="\n")
    with pytest.raises(ValueError, match="overlap_sentences"):
        SentenceChunker(overlap_sentences=-1)
    with pytest.raises(ValueError, match="threads"):
        RecursiveChunker().spans_batch(["a"], threads=0)
    with pytest.raises(TypeError, match="text must be str"):
        RecursiveChunker().chunk(None)
    with pytest.raises(ValueError, match="lone surrogate"):
        RecursiveChunker().chunk("a\udc00b")


def test_accepts_tokenizer_forms():
    from conftest import TOKENIZER_FILES, hf_tokenizer

    text = "Some words to count here."
    expected = RecursiveChunker(cf_tokenizer("bpe"), max_tokens=3).chunk(text)
    assert RecursiveChunker(str(TOKENIZER_FILES["bpe"]), max_tokens=3).chunk(text) == expected
    assert RecursiveChunker(hf_tokenizer("bpe"), max_tokens=3).chunk(text) == expected
    assert RecursiveChunker(max_tokens=3)(text) == RecursiveChunker(chunkforge.Tokenizer.default(), max_tokens=3).chunk(
        text
    )


@PROPERTY
@given(text=adversarial_text, cuts=st.lists(st.integers(0, 10_000), min_size=2, max_size=12))
def test_span_counts_equal_hf(text, cuts):
    """The sizer behind every chunker: any span's count equals HF re-encoding it alone."""
    cuts = sorted(c % (len(text) + 1) for c in cuts)
    for kind in ("wordpiece", "bpe"):
        counter = cf_tokenizer(kind).span_counter(text)
        assert len(counter) == len(text)
        for s, e in zip(cuts, cuts[1:]):
            assert counter.count(s, e) == hf_count(kind, text[s:e]), (s, e)
        assert counter.count_many(cuts[:-1], cuts[1:]) == [hf_count(kind, text[s:e]) for s, e in zip(cuts, cuts[1:])]


def test_span_counter_regressions():
    bpe = cf_tokenizer("bpe")
    assert bpe.span_counter(" 's").count(1, 3) == 1  # a fragment joins the next word: GPT-2's 's
    with pytest.raises(ValueError, match="not within the text"):
        bpe.span_counter("abc").count(2, 9)


def test_limit_holds_with_custom_separators_and_huge_characters():
    bpe = cf_tokenizer("bpe")
    text = "constructor(public width: number, public height: number) {}"
    chunks = RecursiveChunker(bpe, max_tokens=5, separators=["\n\n", "\n"]).chunk(text)
    check_chunks("bpe", text, chunks, 5, coverage=True)
    # one character above the limit (4 byte tokens, limit 3) is a chunk of its own, once
    assert [(c.start, c.end) for c in RecursiveChunker(bpe, max_tokens=3).chunk("📐 x")] == [(0, 1), (2, 3)]
