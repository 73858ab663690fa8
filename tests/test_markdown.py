"""Structure-aware chunking: real Markdown (crate READMEs with tables and code
fences, the CommonMark/GFM spec examples), reST/AsciiDoc titles of the shipped
corpus, and properties: offsets, limit, sections never crossed, table headers."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkforge import MarkdownChunker, RecursiveChunker

from conftest import DATA, cf_tokenizer, corpus, hf_count

MD = DATA / "markdown"
READMES = sorted(MD.glob("*-README.md"))
ATX = re.compile(r"#{1,6}\s")


def atx_headings(text: str) -> list[int]:
    """Offsets of ATX heading lines outside code fences."""
    out, pos, fenced = [], 0, False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and ATX.match(line):
            out.append(pos)
        pos += len(line)
    return out


def check(text: str, chunks, max_tokens: int, kind: str = "wordpiece", front_matter: int = 0) -> None:
    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert c.index == i
        assert text[c.start : c.end] == c.text
        assert c.token_count == hf_count(kind, c.text) <= max_tokens
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(text) if i >= front_matter and not covered[i] and not ch.isspace()]
    assert not missing, f"uncovered {missing[:5]}: {text[missing[0] : missing[0] + 20]!r}"


@pytest.mark.parametrize("path", READMES, ids=lambda p: p.name)
@pytest.mark.parametrize("max_tokens", [64, 256])
def test_readmes(path, max_tokens):
    text = path.read_text()
    chunks = MarkdownChunker(max_tokens=max_tokens).chunk(text)
    check(text, chunks, max_tokens)
    for c in chunks:
        # sections are never crossed: a heading inside a chunk has only headings
        # before it (an empty parent section merged into its first subsection)
        for h in atx_headings(text):
            if c.start < h < c.end:
                before = text[c.start : h].splitlines()
                assert all(not line.strip() or ATX.match(line) for line in before), c.text[:80]
        if c.start >= atx_headings(text)[0]:
            assert c.heading_path, "every chunk after the first heading has a heading path"


def test_tables_keep_their_header():
    text = (MD / "getrandom-README.md").read_text()
    chunks = MarkdownChunker(max_tokens=64).chunk(text)
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) > 2
    split = [c for c in tables if c.context]
    assert split, "the long table was split between rows"
    for c in split:
        assert c.context.startswith("|") and "\n" not in c.context
        assert c.context not in c.text
        if hf_count("wordpiece", c.context) < 32:
            assert c.token_count + hf_count("wordpiece", c.context) < 64
    assert sum(c.text.startswith("|") for c in split) > len(split) / 2, "pieces are mostly whole rows"
    whole = MarkdownChunker(max_tokens=4096).chunk(text)
    assert all(c.context is None for c in whole if c.kind == "table")


def test_code_blocks_stay_whole_when_they_fit():
    text = (MD / "darling-README.md").read_text()
    fences = re.findall(r"^```.*?^```", text, flags=re.S | re.M)
    chunks = MarkdownChunker(max_tokens=256).chunk(text)
    for fence in fences:
        if hf_count("wordpiece", fence) <= 256:
            assert any(fence in c.text for c in chunks)


def test_front_matter_is_not_text():
    text = "---\ntitle: Hello\ntags: [a, b]\n---\n# Title\n\nBody text here.\n"
    chunks = MarkdownChunker(max_tokens=64).chunk(text)
    assert [c.text for c in chunks] == ["# Title\n\nBody text here."]


def test_lone_heading_merges_and_list_stays_with_intro():
    items = "\n".join(f"- item number {i} with a few words" for i in range(12))
    text = f"# Top\n\n## Steps\n\nDo the following:\n\n{items}\n"
    chunks = MarkdownChunker(max_tokens=60).chunk(text)
    # the empty "Top" section joins its first subsection; the list starts with its intro
    assert chunks[0].text.startswith("# Top\n\n## Steps\n\nDo the following:\n\n- item number 0")
    assert all(c.heading_path == ("Top", "Steps") for c in chunks)
    assert len(chunks) > 1
    assert [c for c in chunks if c.kind == "heading"] == []


def test_spec_examples_properties():
    examples = json.loads((MD / "pulldown-cmark-spec-examples.json").read_text())
    assert len(examples) > 600
    chunker = MarkdownChunker(max_tokens=16)
    for ex in examples:
        text = ex["markdown"]
        front = re.match(r"---\n.*?\n(?:---|\.\.\.)(?:\n|$)", text, flags=re.S)
        fm = len(text) if ex["suite"] == "metadata_blocks" else front.end() if front else 0
        check(text, chunker.chunk(text), 16, front_matter=fm)


markdownish = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "# H1",
                "## H2 title",
                "### Deep",
                "para text. More words here.",
                "- a\n- b\n- c",
                "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |",
                "```py\nx = 1\n\ny = 2\n```",
                "> quote",
                "[x]: http://example.com",
                "***",
                "<div>html</div>",
                "😀 中文 é",
            ]
        ),
        st.text(max_size=30),
    ),
    max_size=25,
).map("\n\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdownish, max_tokens=st.integers(4, 48), min_tokens=st.integers(0, 4), overlap=st.integers(0, 3))
def test_markdown_properties(text, max_tokens, min_tokens, overlap):
    for kind in ("wordpiece", "bpe"):
        chunker = MarkdownChunker(
            cf_tokenizer(kind),
            max_tokens=max_tokens,
            min_tokens=min(min_tokens, max_tokens),
            overlap=min(overlap, max_tokens - 1),
        )
        check(text, chunker.chunk(text), max_tokens, kind)


def _titles(text: str) -> list[int]:
    """Start offsets of reST/AsciiDoc underlined titles: after a blank line, a line
    underlined by one punctuation character repeated about as long as the title."""
    pattern = r"(?:^|\n\n)([^\s\n][^\n]*)\n(([=\-~^\"'`#*+])\3{2,})\n"
    return [m.start(1) for m in re.finditer(pattern, text) if len(m.group(2)) + 2 >= len(m.group(1))]


def crossing_share(chunks_per_doc, docs) -> float:
    """Share of chunks holding text of one section and the title of another
    (titles of an empty parent section at a chunk's start do not count)."""
    adornment = re.compile(r"([=\-~^\"'`#*+])\1{2,}")
    crossing = total = 0
    for chunks, doc in zip(chunks_per_doc, docs):
        titles = _titles(doc)
        for c in chunks:
            total += 1
            for t in titles:
                if c.start < t < c.end:
                    lines = doc[c.start : t].splitlines() + [""]
                    content = [
                        a
                        for a, b in zip(lines, lines[1:])
                        if a.strip() and not adornment.fullmatch(a.strip()) and not adornment.fullmatch(b.strip())
                    ]
                    if content:
                        crossing += 1
                        break
    return crossing / total


def test_corpus_chunks_do_not_cross_titles():
    docs = [d["text"] for d in corpus() if d["source"] != "python3.11-doc"][:60] + [
        d["text"] for d in corpus() if d["source"] == "python3.11-doc"
    ][:30]
    plain = RecursiveChunker(max_tokens=256).chunk_batch(docs)
    structured = MarkdownChunker(max_tokens=256, syntax="rst").chunk_batch(docs)
    assert crossing_share(plain, docs) > 0.05
    assert crossing_share(structured, docs) == 0
    for doc, chunks in zip(docs, structured):
        check(doc, chunks, 256)
    assert sum(bool(c.heading_path) for cs in structured for c in cs) > 0.9 * sum(map(len, structured))


def test_asciidoc_titles():
    text = "= Manual\n\n== Usage\n\nRun it.\n\n=== Options\n\nSome options.\n"
    chunks = MarkdownChunker(max_tokens=8, syntax="asciidoc").chunk(text)
    assert [c.heading_path for c in chunks] == [("Manual", "Usage"), ("Manual", "Usage", "Options")]


def test_bad_syntax():
    with pytest.raises(ValueError, match="syntax"):
        MarkdownChunker(syntax="html")
    with pytest.raises(ValueError, match="min_tokens"):
        MarkdownChunker(max_tokens=8, min_tokens=9)
