"""HierarchicalChunker tree invariants on real documents and random text:
children inside their parent and tiling it, every leaf at the last level and
within its limit, consistent parent/children links, stable ids."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkforge import Chunk, CodeChunker, HierarchicalChunker, RecursiveChunker, SentenceChunker, TokenChunker
from chunkforge.chunkers import node_id
from test_chunkers import adversarial_text
from test_code_chunker import SOURCES

from conftest import WHITE_SPACE, cf_tokenizer, corpus, hf_count

PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def uncovered(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> list[int]:
    covered = bytearray(end - start)
    for s, e in spans:
        covered[s - start : e - start] = b"\x01" * (e - s)
    return [i for i in range(start, end) if not covered[i - start] and not text[i].isspace()]


def check_tree(kind: str, text: str, nodes: list[Chunk], levels: tuple[int, ...], doc_id: str) -> None:
    last = len(levels) - 1
    by_id = {n.id: n for n in nodes}
    assert len(by_id) == len(nodes), "ids are unique"
    position = {n.id: i for i, n in enumerate(nodes)}
    for level in range(len(levels)):
        row = [n for n in nodes if n.level == level]
        assert [n.index for n in row] == list(range(len(row))), "index: position in its level"
        assert all(a.end <= b.start for a, b in zip(row, row[1:])), "a level is in document order, no overlap"
    for n in nodes:
        assert text[n.start : n.end] == n.text and n.text.strip(WHITE_SPACE)
        assert n.token_count == hf_count(kind, n.text) <= levels[n.level]
        assert n.id == node_id(doc_id, n.start, n.end, n.level)
        assert (n.level == last) == (not n.children), "every leaf is at the last level"
        if n.level == 0:
            assert n.parent_id is None
        else:
            parent = by_id[n.parent_id]
            assert parent.level == n.level - 1 and n.id in parent.children
            assert position[parent.id] < position[n.id], "parents before children"
            assert parent.start <= n.start and n.end <= parent.end
        children = [by_id[c] for c in n.children]
        assert all(c.parent_id == n.id for c in children)
        assert all(a.end <= b.start for a, b in zip(children, children[1:])), "siblings do not overlap"
        if children:
            assert not uncovered(text, n.start, n.end, [(c.start, c.end) for c in children]), "siblings tile"
            if n.token_count <= levels[n.level + 1]:
                assert [(c.start, c.end) for c in children] == [(n.start, n.end)], "a parent that fits has one child"
    roots = [(n.start, n.end) for n in nodes if n.level == 0]
    assert not uncovered(text, 0, len(text), roots)


@pytest.mark.parametrize("levels", [(512, 128, 32), (200, 40), (64,)])
def test_real_documents(kind, levels):
    chunker = HierarchicalChunker(cf_tokenizer(kind), levels=levels)
    for doc in corpus()[:40]:
        nodes = chunker.chunk(doc["text"], doc_id=doc["id"])
        check_tree(kind, doc["text"], nodes, levels, doc["id"])


def test_ids_are_stable_and_depend_on_the_document_id():
    doc = next(d for d in corpus() if 5000 < len(d["text"]) < 20000)
    first = HierarchicalChunker(levels=(256, 64, 16)).chunk(doc["text"], doc_id=doc["id"])
    again = HierarchicalChunker(levels=(256, 64, 16)).chunk(doc["text"], doc_id=doc["id"])
    other = HierarchicalChunker(levels=(256, 64, 16)).chunk(doc["text"], doc_id=doc["id"] + "-copy")
    assert len(first) > 20 and first == again
    assert [(n.start, n.end, n.level) for n in other] == [(n.start, n.end, n.level) for n in first]
    assert not {n.id for n in first} & {n.id for n in other}


def test_leaves_and_parents():
    text = corpus()[2]["text"]
    chunker = HierarchicalChunker(levels=(300, 60))
    nodes = chunker.chunk(text, "doc")
    leaves, parents = chunker.leaves(text, "doc"), chunker.parents(text, "doc")
    assert leaves == [n for n in nodes if n.level == 1] and parents == [n for n in nodes if n.level == 0]
    assert len(leaves) > len(parents) > 1
    assert [n.id for n in leaves] == [c for p in parents for c in p.children]


@PROPERTY
@given(text=adversarial_text, top=st.integers(12, 80), shrink=st.integers(2, 4), depth=st.integers(1, 3))
def test_random_text(text, top, shrink, depth):
    levels = tuple(max(top // shrink**k, 4) for k in range(depth))
    levels = tuple(n for i, n in enumerate(levels) if i == 0 or n < levels[i - 1])
    for kind in ("wordpiece", "bpe"):
        nodes = HierarchicalChunker(cf_tokenizer(kind), levels=levels).chunk(text, doc_id="d")
        check_tree(kind, text, nodes, levels, "d")
        assert nodes == HierarchicalChunker(cf_tokenizer(kind), levels=levels).chunk(text, doc_id="d")


@pytest.mark.parametrize(
    "base",
    [
        TokenChunker,
        SentenceChunker,
        lambda tokenizer, max_tokens: RecursiveChunker(tokenizer, max_tokens, min_tokens=max_tokens // 4),
    ],
    ids=["token", "sentence", "recursive-min-tokens"],
)
def test_other_base_chunkers(base):
    levels = (256, 64, 16)
    chunker = HierarchicalChunker(cf_tokenizer("wordpiece"), levels=levels, base=base)
    for doc in corpus()[:10]:
        check_tree("wordpiece", doc["text"], chunker.chunk(doc["text"], doc["id"]), levels, doc["id"])


def test_code_base_keeps_structure():
    levels = (64, 24)
    base = lambda tokenizer, max_tokens: CodeChunker(tokenizer, language="rust", max_tokens=max_tokens)  # noqa: E731
    nodes = HierarchicalChunker(levels=levels, base=base).chunk(SOURCES["rust"], "lib.rs")
    check_tree("wordpiece", SOURCES["rust"], nodes, levels, "lib.rs")
    assert {n.kind for n in nodes} == {"code"}
    assert ("Rectangle",) in {n.heading_path for n in nodes if n.level == 0}


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"levels": (128, 512)}, ValueError, "levels must be strictly decreasing"),
        ({"levels": (128, 128)}, ValueError, "levels must be strictly decreasing"),
        ({"levels": (128, 0)}, ValueError, r"levels\[1\] must be >= 1"),
        ({"levels": (128, 64.0)}, TypeError, r"levels\[1\] must be an int"),
        ({"levels": ()}, TypeError, "levels must be a non-empty sequence"),
        ({"levels": 128}, TypeError, "levels must be a non-empty sequence"),
        ({"base": "recursive"}, TypeError, "base must be a chunker class or a factory"),
        ({"base": lambda tokenizer, max_tokens: None}, TypeError, "base must make chunkers"),
    ],
)
def test_bad_parameters(params, error, match):
    with pytest.raises(error, match=match):
        HierarchicalChunker(**params)


def test_overlapping_base_is_refused():
    base = lambda tokenizer, max_tokens: RecursiveChunker(tokenizer, max_tokens, overlap=max_tokens // 2)  # noqa: E731
    with pytest.raises(ValueError, match="made overlapping chunks; use overlap=0"):
        HierarchicalChunker(levels=(512, 32), base=base).chunk(corpus()[2]["text"])
    with pytest.raises(TypeError, match="doc_id must be a str"):
        HierarchicalChunker().chunk("text", doc_id=3)


@pytest.mark.parametrize("doc_id", ["guide.md", "", "é/文/\U0001f600.md", "lone \ud800 surrogate"])
def test_node_id_is_blake2b_of_id_span_and_level(doc_id):
    for start, end, level in [(0, 120, 1), (7, 9, 0), (2**40, 2**40 + 5, 3)]:
        key = f"{doc_id}\x00{start}\x00{end}\x00{level}".encode("utf-8", "surrogatepass")
        assert node_id(doc_id, start, end, level) == hashlib.blake2b(key, digest_size=8).hexdigest()
