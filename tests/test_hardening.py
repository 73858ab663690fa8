"""Hostile input to the native core (issue 15): every case is a clear error naming
the parameter or an exact result. Real tokenizers, real threads, real processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkforge
from chunkforge import MarkdownChunker, RecursiveChunker, SentenceChunker, TokenChunker, _native

from conftest import TOKENIZER_FILES, WHITE_SPACE, cf_tokenizer, hf_tokenizer

ROOT = Path(__file__).resolve().parent.parent
PYTHONPATH = str(Path(chunkforge.__file__).resolve().parent.parent)


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PYTHONPATH": PYTHONPATH, "PATH": "/usr/bin:/bin"},
    )


def assert_exact(tok: chunkforge.Tokenizer, text: str, chunks: list, max_tokens: int) -> None:
    """Offsets index the text, counts re-encode, the limit holds except for a
    single character that alone encodes above it, no chunk is empty."""
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.text.strip(WHITE_SPACE) == c.text and c.text
        assert c.token_count == tok.count(c.text)
        assert c.token_count <= max_tokens or len(c.text) == 1, c


def covered(text: str, chunks: list) -> bool:
    mask = np.zeros(len(text), bool)
    for c in chunks:
        mask[c.start : c.end] = True
    return all(mask[i] or ch in WHITE_SPACE for i, ch in enumerate(text))


# 1. threads are validated against a cap


@pytest.mark.parametrize("threads", [0, -1, 10**6, 10**30])
def test_threads_out_of_range_is_a_clear_error(threads):
    cap = _native.max_threads()
    assert cap >= 4
    tok = cf_tokenizer("wordpiece")
    calls = [
        lambda: RecursiveChunker(tok, max_tokens=8).spans_batch(["a b"], threads=threads),
        lambda: TokenChunker(tok, max_tokens=8).chunk_batch(["a b"], threads=threads),
        lambda: MarkdownChunker(tok, max_tokens=8).spans_batch(["a b"], threads=threads),
        lambda: tok.count_batch(["a b"], threads=threads),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=rf"threads must be between 1 and {cap}"):
            call()


def test_threads_at_the_cap_work():
    cap = _native.max_threads()
    spans = RecursiveChunker(max_tokens=8).spans_batch(["a b c."] * 3, threads=cap)
    assert spans.doc.tolist() == [0, 1, 2]


# 2. pools for explicit thread counts are bounded


def test_thread_pools_are_bounded():
    """Every distinct `threads` value up to the cap, twice: the live threads settle at
    the four most recent pools (evicted pools' threads exit), not one pool per value."""
    result = run_python(
        """
        import os, time
        import chunkforge
        c = chunkforge.RecursiveChunker(max_tokens=8)
        c.spans_batch(["a"])                       # the global pool
        base = len(os.listdir("/proc/self/task"))
        cap = chunkforge._native.max_threads()
        sizes = list(range(2, cap + 1))
        for _ in range(2):
            for n in sizes:
                c.spans_batch(["a b"] * 4, threads=n)
        bound = base + sum(sorted(sizes)[-4:])
        deadline = time.monotonic() + 60
        while len(os.listdir("/proc/self/task")) > bound and time.monotonic() < deadline:
            time.sleep(0.1)
        print(len(os.listdir("/proc/self/task")), bound, sum(sizes) + base)
        """
    )
    assert result.returncode == 0, result.stderr
    live, bound, unbounded = map(int, result.stdout.split())
    assert live <= bound, (live, bound, unbounded)


# 3. a token whose text re-encodes above max_tokens is cut between characters


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        ("wordpiece", "aße", ["a", "ß", "e"]),
        ("bpe", " -->", ["--", ">"]),
    ],
)
def test_token_chunker_one_token_over_the_limit(kind, text, expected):
    tok = cf_tokenizer(kind)
    chunks = TokenChunker(tok, max_tokens=1).chunk(text)
    assert [c.text for c in chunks] == expected
    assert_exact(tok, text, chunks, 1)


# 4. YAML front matter only at the start


def test_markdown_rule_blocks_are_not_front_matter():
    text = "# Doc\n\nIntro.\n\n---\nNote: keep this.\n---\n"
    chunks = MarkdownChunker().chunk(text)
    assert "Note: keep this." in "".join(c.text for c in chunks)
    assert covered(text, chunks)
    front = "---\ntitle: x\n---\n# Doc\n\nBody.\n"
    chunks = MarkdownChunker().chunk(front)
    assert "title" not in "".join(c.text for c in chunks) and chunks[0].start == front.index("# Doc")


# 5. no empty chunk


def test_markdown_table_with_a_whitespace_row_has_no_empty_chunk():
    text = "| a | b |\n|---|---|\n| x | y |\n\u3000\n"
    tok = cf_tokenizer("wordpiece")
    chunks = MarkdownChunker(tok, max_tokens=3).chunk(text)
    assert chunks and all(c.text for c in chunks)
    assert_exact(tok, text, chunks, 3)
    assert covered(text, chunks)


# 6. characters that encode to no token are still in a chunk


@pytest.mark.parametrize("text", ["\u200bhello world", "\u200b", "a\u200b", "\u200b\u200b b \u200b"])
def test_token_chunker_keeps_zero_token_characters(text):
    tok = cf_tokenizer("wordpiece")
    for max_tokens, overlap in [(1, 0), (2, 1), (8, 0)]:
        chunks = TokenChunker(tok, max_tokens=max_tokens, overlap=overlap).chunk(text)
        assert covered(text, chunks), chunks
        assert_exact(tok, text, chunks, max_tokens)


# 7. one character over max_tokens: a chunk of its own, and what the README says about it


@pytest.mark.parametrize(
    "make",
    [
        lambda tok, n: TokenChunker(tok, max_tokens=n),
        lambda tok, n: RecursiveChunker(tok, max_tokens=n),
        lambda tok, n: SentenceChunker(tok, max_tokens=n),
        lambda tok, n: MarkdownChunker(tok, max_tokens=n),
    ],
)
@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_single_characters_over_the_limit(make, kind):
    tok = cf_tokenizer(kind)
    text = "한 x 한국어 \U0001f600 ok 𝔘𝔫𝔦 ĳ"
    for n in (1, 2, 3):
        chunks = make(tok, n).chunk(text)
        assert_exact(tok, text, chunks, n)
        assert covered(text, chunks)
    assert [(c.text, c.token_count) for c in RecursiveChunker(cf_tokenizer("wordpiece"), max_tokens=2).chunk("한")] == [
        ("한", 3)
    ]


def test_the_manual_states_the_most_tokens_of_one_character():
    """The chunking manual's figures: the most tokens one code point encodes to, over all of Unicode."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    most = {kind: int(cf_tokenizer(kind).count_batch(chars).max()) for kind in ("wordpiece", "bpe")}
    assert most == {"wordpiece": 3, "bpe": 4}
    readme = (ROOT / "docs" / "chunking.md").read_text(encoding="utf-8")
    assert "up to 3 tokens with the default WordPiece tokenizer" in readme
    assert "up to 4 with byte-level BPE" in readme


# 8. added tokens: the fast path between them, identical to HF

ADDED = {
    "wordpiece": ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "[CLS"],
    "bpe": ["<|endoftext|>", "<|endoftext|", "<|ENDOFTEXT|>"],
}


def assert_same_as_hf(kind: str, text: str) -> None:
    ours = cf_tokenizer(kind).encode_offsets(text)
    hf = hf_tokenizer(kind).encode(text, add_special_tokens=False)
    assert ours.ids.tolist() == hf.ids, text
    assert [tuple(o) for o in ours.offsets.tolist()] == hf.offsets, text
    assert cf_tokenizer(kind).count(text) == len(hf.ids)


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_added_tokens_fixed_cases_equal_hf(kind):
    special = ADDED[kind][0]
    for text in [
        f"a {special} b",
        f"{special}{special}x{special}",
        f"héllo{special}  wörld {special}",
        f"  {special}",
        f"{special}  ",
        f"x   {special}\n\n  y",
        f"naïve{special}'s café",
        special,
    ]:
        assert_same_as_hf(kind, text)
    assert cf_tokenizer(kind).fast_path


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_added_tokens_random_text_equals_hf(data):
    kind = data.draw(st.sampled_from(["wordpiece", "bpe"]))
    pieces = data.draw(
        st.lists(st.one_of(st.text(max_size=12), st.sampled_from(ADDED[kind] + [" ", "'s", "\n"])), max_size=12)
    )
    text = "".join(pieces)
    assert_same_as_hf(kind, text)
    tok = cf_tokenizer(kind)
    for c in RecursiveChunker(tok, max_tokens=3).chunk(text) + TokenChunker(tok, max_tokens=2, overlap=1).chunk(text):
        assert (
            c.token_count == len(hf_tokenizer(kind).encode(c.text, add_special_tokens=False).ids) <= 3
            or len(c.text) == 1
        )


def test_added_token_keeps_memory_linear():
    """5 MB with one [CLS]: HF's general path needed ~150 bytes a byte (7.5 GB for 50 MB);
    the fast path stays within a few bytes a byte."""
    result = run_python(
        """
        import resource, chunkforge
        tok = chunkforge.Tokenizer.default()
        text = "[CLS] " + "The quick brown fox jumps over the lazy dog, again and again. " * 80_000
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        n = tok.count(text)
        spans = chunkforge.RecursiveChunker(tok, max_tokens=256).spans(text)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(n, len(spans.start), (after - before) * 1024 / len(text))
        """
    )
    assert result.returncode == 0, result.stderr
    n, chunks, per_byte = result.stdout.split()
    assert int(n) == 1 + 80_000 * 14 and int(chunks) > 1000
    assert float(per_byte) < 30, per_byte


def test_added_tokens_not_modelled_take_the_general_path():
    """A normalized added token is matched case-insensitively on normalized text:
    such a tokenizer leaves texts that may hold one to HF's pipeline, exactly."""
    import json

    spec = json.loads(TOKENIZER_FILES["wordpiece"].read_text(encoding="utf-8"))
    spec["added_tokens"].append(
        {
            "id": 2000,
            "content": "Hello",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": True,
            "special": False,
        }
    )
    tok = chunkforge.Tokenizer.from_str(json.dumps(spec))
    import tokenizers

    hf = tokenizers.Tokenizer.from_str(json.dumps(spec))
    hf.no_padding()
    hf.no_truncation()
    for text in ["say HELLO [CLS] there", "say hi [CLS] there", "hello"]:
        ours = tok.encode_offsets(text)
        theirs = hf.encode(text, add_special_tokens=False)
        assert ours.ids.tolist() == theirs.ids and [tuple(o) for o in ours.offsets.tolist()] == theirs.offsets


# found by the fuzzer (fuzz/): inputs that broke an invariant, kept as regression tests


def test_fuzz_find_token_units_shrink_underflow():
    """A piece whose token window re-encoded to more tokens over the limit than the
    window held: the shrink step underflowed (a hang in release builds). Run in a
    child process so that a hang fails the test instead of stopping the suite."""
    data = (ROOT / "tests/data/fuzz/split-token-units-overflow.bin").read_bytes()
    result = run_python(
        f"""
        import chunkforge
        text = {data[4:].decode("utf-8", "replace")!r}.encode()[:512].decode("utf-8", "ignore")
        tok = chunkforge.Tokenizer.default()
        chunks = chunkforge.RecursiveChunker(tok, max_tokens=1, min_tokens=1).chunk(text)
        assert all(text[c.start:c.end] == c.text and c.token_count == tok.count(c.text) for c in chunks)
        assert all(c.token_count <= 1 or len(c.text) == 1 for c in chunks)
        print(len(chunks))
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 50


def test_fuzz_find_bpe_span_starting_in_a_whitespace_run():
    """A span starting inside a run of tabs before `-`: byte-level BPE splits the run by
    what follows it, so the recount of the cut run must reach the next non-space word."""
    tok = cf_tokenizer("bpe")
    text = "| SHARED\t\t\t-\tsize of mapping\n\t| PRIVATE READ-only\t-\t0 cost"
    counter = tok.span_counter(text)
    for s in range(len(text)):
        for e in range(s, min(len(text), s + 24) + 1):
            assert counter.count(s, e) == len(hf_tokenizer("bpe").encode(text[s:e], add_special_tokens=False).ids), (
                s,
                e,
                text[s:e],
            )


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (
            "wordpiece",
            "artY:5]el\nto\x01?\x05\x03out\n    patch-accepk = chunkfo\x7fge.Tokeni    ua =====+=\n*   * :ref:`"
            "geniia=====+=**:f:`gpreiee e=a=====+=\n* trs.\n\n[`.o/fodt+]:s://cru.t-g.g/r\ne",
        ),
        (
            "bpe",
            (ROOT / "tests/data/fuzz/outline-list-link-definition.bin").read_bytes()[4:].decode("utf-8", "replace"),
        ),
    ],
)
def test_fuzz_find_list_split_into_items_keeps_text_between_them(kind, text):
    """A list too long for a chunk goes item by item; text the parser counted into the
    list but into no item (here a link definition after it) was dropped."""
    tok = cf_tokenizer(kind)
    for max_tokens in (1, 9, 33, 64):
        chunks = MarkdownChunker(tok, max_tokens=max_tokens).chunk(text)
        assert covered(text, chunks), max_tokens
        assert_exact(tok, text, chunks, max_tokens)


def test_fuzz_find_span_starting_inside_an_added_token():
    """A span starting inside `<|endoftext|>`: HF starts a fresh piece after an added
    token (`'d` is a contraction there), but the span alone glues `|>'` together; such
    spans are counted by re-encoding them."""
    tok = cf_tokenizer("bpe")
    data = (ROOT / "tests/data/fuzz/sizer-span-inside-added-token.bin").read_bytes()
    for text in [data[4:].decode("utf-8", "replace"), "More <|endoftext|>'deXt.\n", "x [CLS]'s y", "a<|endoftext|> b"]:
        for kind in ("bpe", "wordpiece"):
            tok = cf_tokenizer(kind)
            counter = tok.span_counter(text)
            for s in range(len(text)):
                for e in range(s, min(len(text), s + 16) + 1):
                    expected = len(hf_tokenizer(kind).encode(text[s:e], add_special_tokens=False).ids)
                    assert counter.count(s, e) == expected, (kind, s, e, text[s:e])


# issue 28: the bulk job's shard names frame each document id unambiguously


def test_batch_key_tells_crafted_ids_apart():
    """Ids used to be joined to text digests by a NUL: an id holding a NUL and another
    document's digest made a one-document batch hash like a two-document one, so a
    different corpus would have reused the first corpus's shard."""
    import hashlib

    from chunkforge._io import Doc
    from chunkforge.bulk.shards import batch_key

    # a text whose 16-byte digest is ASCII, so that it can sit inside a str id
    first = next(
        t
        for t in (f"text {i}" for i in range(10**6))
        if max(hashlib.blake2b(t.encode(), digest_size=16).digest()) < 128
    )
    digest = hashlib.blake2b(first.encode(), digest_size=16).digest().decode("ascii")
    two = [Doc("x", first, 1), Doc("y", "second text", 1)]
    one = [Doc("x\0" + digest + "y", "second text", 1)]
    assert batch_key("settings", two) != batch_key("settings", one)
    assert batch_key("settings", two) == batch_key("settings", list(two))
