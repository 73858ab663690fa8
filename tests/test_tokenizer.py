"""The tokenizer: loading, and exact equality with HF ``tokenizers``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkforge
from chunkforge import Tokenizer

from conftest import DATA, TOKENIZER_FILES, cf_tokenizer, corpus, hf_count, hf_tokenizer

TRICKY = [
    "",
    "   \n\t ",
    "Hello, World! naïve café — ÅNGSTRÖM",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "中文字符和日本語のテキスト。한국어",
    "combining e\u0301 a\u0308 \u0301alone",
    "CRLF\r\nline\rCR\x0bVT\x0cFF\x00NUL\x1fUS",
    "RTL עברית ومرحبا",
    "special [CLS] [SEP] [MASK] [UNK] <|endoftext|> tokens",
    "zero\u200bwidth\u200djoiner\u00adsoft",
    "İstanbul ǅ ß ﬁ Ⅻ ①",
    "x" * 300 + " " + "ab" * 150,
    "it’s “quoted” ‘text’…",
]


def test_default_is_minilm_and_fast():
    tok = Tokenizer.default()
    assert tok is Tokenizer.default()
    assert tok.fast_path
    # the shipped file truncates at 128: counting must not
    text = "word " * 1000
    assert tok.count(text) == 1000 == hf_count("wordpiece", text)


@pytest.mark.parametrize("text", TRICKY)
def test_counts_ids_and_offsets_equal_hf(kind, text):
    tok, hf = cf_tokenizer(kind), hf_tokenizer(kind)
    enc = hf.encode(text, add_special_tokens=False)
    assert tok.count(text) == len(enc.ids)
    ids, offsets = tok.encode_offsets(text)
    assert ids.tolist() == enc.ids
    assert [tuple(o) for o in offsets.tolist()] == enc.offsets


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_random_text_counts_equal_hf(text):
    for kind in TOKENIZER_FILES:
        enc = hf_tokenizer(kind).encode(text, add_special_tokens=False)
        assert cf_tokenizer(kind).count(text) == len(enc.ids)
        assert cf_tokenizer(kind).encode_offsets(text).ids.tolist() == enc.ids


def test_whole_corpus_counts_equal_hf(kind):
    """The differential test: per-document counts on the whole shipped corpus."""
    texts = [d["text"] for d in corpus("docs-corpus.jsonl.gz")]
    ours = cf_tokenizer(kind).count_batch(texts)
    theirs = np.array([len(e.ids) for e in hf_tokenizer(kind).encode_batch_fast(texts, add_special_tokens=False)])
    assert len(texts) == 3630
    assert np.array_equal(ours, theirs), np.nonzero(ours != theirs)[0][:10]


def test_count_batch_order_and_threads():
    tok = Tokenizer.default()
    texts = [d["text"] for d in corpus()][:50]
    one = tok.count_batch(texts, threads=1)
    assert one.dtype == np.int64
    assert np.array_equal(one, tok.count_batch(texts, threads=2))
    assert one.tolist() == [tok.count(t) for t in texts]


def test_loaders(tmp_path):
    src = TOKENIZER_FILES["wordpiece"]
    (tmp_path / "tokenizer.json").write_text(src.read_text())
    assert Tokenizer.from_pretrained(tmp_path).count("a b c") == 3
    assert Tokenizer.from_str(src.read_text()).count("a b c") == 3
    assert Tokenizer.from_tokenizers(hf_tokenizer("bpe")).count("Hello world") == hf_count("bpe", "Hello world")


def test_general_path_for_other_pipelines():
    """A tokenizer.json outside the fast path still counts exactly (HF's pipeline)."""
    spec = json.loads(TOKENIZER_FILES["wordpiece"].read_text())
    spec["pre_tokenizer"] = {"type": "Whitespace"}
    tok = Tokenizer.from_str(json.dumps(spec))
    assert not tok.fast_path
    text = "Splitting isn't hard, is it?"
    assert tok.count(text) == 9


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json"):
        Tokenizer.from_file(tmp_path / "missing.json")
    bad = tmp_path / "corrupt.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="corrupt.json"):
        Tokenizer.from_file(bad)
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        Tokenizer.from_pretrained(tmp_path)
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        Tokenizer.from_tokenizers(42)


def test_bad_text():
    tok = Tokenizer.default()
    with pytest.raises(TypeError, match="text must be str"):
        tok.count(b"bytes")
    with pytest.raises(ValueError, match="lone surrogate"):
        tok.count("bad \ud800 text")
    with pytest.raises(TypeError, match=r"texts\[1\] must be str"):
        tok.count_batch(["ok", 3])
    with pytest.raises(TypeError, match="not a single str"):
        tok.count_batch("abc")


def test_shipped_data_has_licence():
    assert (DATA / "README.md").exists()
    assert "Apache-2.0" in (TOKENIZER_FILES["wordpiece"].parent / "NOTICE").read_text()
    assert chunkforge.__version__


def test_saved_words_stand_in_for_tokenizing_a_document_again():
    """``words`` are a text's words with their token counts, saved (what the store keeps with a
    document); an expander given them adds the document as it would by tokenizing it, and
    refuses words that are not the text's."""
    from chunkforge import _native
    from chunkforge.index.options import ExpandOptions
    from chunkforge.index.payload import Hit, Packed, Passage

    tk = cf_tokenizer("wordpiece")
    text = "Hello [CLS] world, naïve café.\n\n" + corpus()[0]["text"][:3000]
    (saved,) = tk._native.words([text])
    assert saved is not None
    gaps, lengths, tokens = np.frombuffer(saved, "<u2").reshape(-1, 3).T.astype(np.int64)
    ends = np.cumsum(gaps + lengths)
    assert (tokens >> 1).sum() == hf_count("wordpiece", text)
    utf8 = text.encode()
    words = [utf8[e - n : e].decode() for e, n in zip(ends.tolist(), lengths.tolist())]
    assert [w for w, added in zip(words, (tokens & 1).tolist()) if added] == ["[CLS]"]
    assert all(w.strip() == w and w for w in words)

    built = _native.Expander(tk._native, Hit, Passage, Packed)
    (tree,) = built.build([text], ["markdown"], 32, [128])
    built.insert([tree], [list(range(len(tree.leaves)))], ["d"], [text])
    nodes, leaves, sentences, headings = built.tree(0)
    payloads = []
    for kept, paths in ((None, headings), ([saved], json.dumps(headings))):  # as lists, as a docs table's JSON
        expander = _native.Expander(tk._native, Hit, Passage, Packed)
        labels = [list(range(len(leaves)))]
        expander.add_docs([text], [sentences], [nodes[:, :4]], [leaves.tolist()], labels, ["d"], [paths], kept)
        assert expander.tree(0)[3] == headings
        hits = expander.hits([0, 3, len(leaves) - 1], [1.0, 0.8, 0.5], 2)
        payloads.append(expander.expand(hits, ExpandOptions(window=1, budget_tokens=200), 2))
    assert payloads[0] == payloads[1] and len(headings) > 1
    for paths in ('{"a": 1}', "[[1]]", "[["):
        with pytest.raises(ValueError, match=r"document 0.*headings: not a JSON array"):
            _native.Expander(tk._native, Hit, Passage, Packed).add_docs(
                [text], [sentences], [nodes[:, :4]], [leaves.tolist()], labels, ["d"], [paths]
            )
    bad = bytearray(saved)
    bad[8:10] = (len(utf8) + 1).to_bytes(2, "little")  # word 1 runs past the text's end
    expander = _native.Expander(tk._native, Hit, Passage, Packed)
    with pytest.raises(ValueError, match=r"document 0.*word 1 "):
        expander.add_docs(
            [text],
            [sentences],
            [nodes[:, :4]],
            [leaves.tolist()],
            [list(range(len(leaves)))],
            ["d"],
            [headings],
            [bytes(bad)],
        )
