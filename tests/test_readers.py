"""The document readers (chunkforge.readers) on real files: HTML, PDF, DOCX and Docling JSON
read into Markdown whose offsets every chunk keeps, with no markup, script or PDF syntax,
running headers and footers gone, tables with their header rows, provenance per block,
and a clear one-line error for each bad input."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("selectolax")
pytest.importorskip("pypdfium2")
pytest.importorskip("docx")
pytest.importorskip("docling_core")

from chunkforge import MarkdownChunker, RecursiveChunker  # noqa: E402
from chunkforge._io import ReadReport, read_documents, syntax_for_path  # noqa: E402
from chunkforge.cli import main  # noqa: E402
from chunkforge.errors import InputError  # noqa: E402
from chunkforge.readers import FORMATS, format_for_path, read_bytes, read_file  # noqa: E402
from chunkforge.readers.document import ReadDocument, cite  # noqa: E402

DATA = Path(__file__).parent / "data" / "documents"
FAQ = DATA / "debian-faq"
SHIPPED = [
    DATA / "page.html",
    DATA / "report.pdf",
    DATA / "outline.pdf",
    DATA / "report.docx",
    DATA / "report.docling.json",
    FAQ / "basic-defs.en.html",
    FAQ / "pkg-basics.en.html",
    FAQ / "debian-faq.en.pdf",
]
MARKUP = re.compile(
    r"</?(p|div|span|script|style|table|tr|td|th|li|ul|ol|a|b|em|code|pre|nav|head|body|html)\b[^>]*>", re.I
)
PDF_SYNTAX = re.compile(r"\b\d+ 0 obj\b|\bendobj\b|\bendstream\b|/Type\s*/|/Font\b|/MediaBox|\bxref\b")
_READ: dict[tuple[Path, bool], ReadDocument] = {}


def read(path: Path, main_content: bool = False) -> ReadDocument:
    """Each shipped file read once for the whole module (the FAQ's PDF takes a second)."""
    if (path, main_content) not in _READ:
        _READ[path, main_content] = read_file(path, main_content=main_content)
    return _READ[path, main_content]


def one_line_error(code: int, err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("chunkforge: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])


# ---------------------------------------------------------------- the document model


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_blocks_and_chunks_keep_exact_offsets(path: Path) -> None:
    doc = read(path)
    assert doc.format == format_for_path(str(path)) and doc.format in FORMATS
    assert doc.text.endswith("\n") and doc.blocks
    last = 0
    for block in doc.blocks:
        assert last <= block.start < block.end <= len(doc.text)
        assert doc.text[block.start : block.end].strip() == doc.text[block.start : block.end]
        last = block.end
    metadata = doc.metadata()
    assert metadata["syntax"] == "markdown" and metadata["format"] == doc.format
    assert json.loads(json.dumps(metadata)) == metadata  # JSON as it is
    assert len(metadata["provenance"]["blocks"]) == len(doc.blocks)
    for chunker in (MarkdownChunker(max_tokens=96), RecursiveChunker(max_tokens=64)):
        chunks = chunker.chunk(doc.text)
        assert chunks
        for chunk in chunks:
            assert doc.text[chunk.start : chunk.end] == chunk.text
            assert not MARKUP.search(chunk.text), chunk.text
            assert not PDF_SYNTAX.search(chunk.text), chunk.text


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_markdown_tree_is_built_from_the_headings(path: Path) -> None:
    doc = read(path)
    headings = [b for b in doc.blocks if b.kind == "heading"]
    assert headings
    chunks = MarkdownChunker(max_tokens=128).chunk(doc.text)
    titles = {re.sub(r"^#+ ", "", doc.text[b.start : b.end]) for b in headings}
    paths = {title for c in chunks for title in c.heading_path}
    assert paths and paths <= titles


def test_cite_names_pages_boxes_sources_and_items() -> None:
    pdf = read(DATA / "report.pdf")
    prov = pdf.metadata()["provenance"]
    whole = cite(prov, 0, len(pdf.text))
    assert whole is not None and whole.pages == (1, 2, 3) and whole.label() == "p. 1-3"
    table = next(b for b in pdf.blocks if b.kind == "table")
    found = cite(prov, table.start + 1, table.start + 2)
    assert found is not None and found.pages == (1,) and found.bbox == table.bbox
    assert found.bbox is not None and found.bbox[1] < found.bbox[3]  # top-left origin: y0 above y1
    page = read(DATA / "page.html")
    hit = cite(page.metadata()["provenance"], page.blocks[0].start, page.blocks[0].end)
    assert hit is not None and hit.source and not hit.pages and hit.label() == ""
    docx = read(DATA / "report.docx")
    table_block = next(b for b in docx.blocks if b.kind == "table")
    got = cite(docx.metadata()["provenance"], table_block.start, table_block.end)
    assert got is not None and got.items == (("table", 0),)
    assert cite(None, 0, 5) is None and cite({"format": "pdf"}, 0, 5) is None


# ---------------------------------------------------------------- HTML


def test_html_drops_script_style_comments_and_keeps_structure() -> None:
    doc = read(DATA / "page.html")
    for marker in (
        "SCRIPT-CONTENT-MARKER",
        "NOSCRIPT-MARKER",
        "TEMPLATE-MARKER",
        "COMMENT-MARKER",
        "font-family",
        "written",
    ):
        assert marker not in doc.text
    assert doc.title == "Bonding network interfaces"
    assert "# Bonding network interfaces\n\n" in doc.text and "\n## Modes\n" in doc.text
    assert "### Checking the bond" in doc.text  # inline markup inside a heading
    assert "two interfaces & makes them one" in doc.text and "failover <or> for" in doc.text  # entities decoded
    table = "| Mode | Name | Needs switch support |\n| --- | --- | --- |\n| 0 | balance-rr | yes |"
    assert table in doc.text
    assert "| 1 | active-backup | no |" in doc.text  # a row whose </tr> is missing
    assert "Table 1: Bonding modes\n\n| Mode" in doc.text  # the caption before its table
    assert "1. Load the module.\n2. Create the bond:\n   - with ip link\n   - or with nmcli" in doc.text
    assert "```sh\nip link add bond0 type bond mode active-backup\nip link set eth0 master bond0\n```" in doc.text
    assert "\n\nFigure 1: Two interfaces in one bond.\n\n" in doc.text
    assert "An unclosed paragraph, closed by the parser as browsers do.\n\n## Modes" in doc.text
    kinds = [b.kind for b in doc.blocks]
    assert {"heading", "paragraph", "list", "table", "code", "caption"} <= set(kinds)
    # navigation and boilerplate stay unless asked to go
    assert "ASIDE-MARKER" in doc.text and "FOOTER-MARKER" in doc.text and "Home | Docs" in doc.text


def test_html_main_content_leaves_navigation_and_boilerplate_out() -> None:
    doc = read(DATA / "page.html", main_content=True)
    for marker in ("ASIDE-MARKER", "FOOTER-MARKER", "Home", "Networking", "Related"):
        assert marker not in doc.text
    assert doc.text.startswith("# Bonding network interfaces\n") and "| 4 | 802.3ad | yes (LACP) |" in doc.text
    faq = read(FAQ / "basic-defs.en.html", main_content=True)
    full = read(FAQ / "basic-defs.en.html")
    footer = "| The Debian GNU/Linux FAQ |  | Chapter 2. Getting and installing Debian GNU/Linux |"
    assert footer in full.text and footer not in faq.text  # DocBook's navheader / navfooter
    assert faq.text.startswith("# Chapter 1. Definitions and overview")


@pytest.mark.parametrize(
    "path", [DATA / "page.html", FAQ / "basic-defs.en.html", FAQ / "pkg-basics.en.html"], ids=lambda p: p.name
)
def test_html_source_ranges_hold_the_block_text(path: Path) -> None:
    source = path.read_bytes().decode("utf-8", "replace")
    doc = read(path)
    aligned = 0
    for block in doc.blocks:
        assert block.source_start is not None and block.source_end is not None
        aligned += 1
        raw = source[block.source_start : block.source_end]
        plain = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", raw)).split())
        text = doc.text[block.start : block.end]
        if block.kind == "code":
            text = "\n".join(text.splitlines()[1:-1])
        if block.kind == "list":
            text = re.sub(r"(?m)^\s*(-|\d+\.) ", "", text)
        words, source_words = re.findall(r"\w+", text), re.findall(r"\w+", plain)
        if block.kind in ("paragraph", "caption", "heading"):
            assert words == source_words, (text, plain)
        assert words[0] in source_words and words[-1] in source_words, (text, plain)
    assert aligned == len(doc.blocks)


def test_html_encodings_and_malformed_markup() -> None:
    latin = "<meta charset=iso-8859-1><p>caf\xe9</p>".encode("latin-1")
    assert read_bytes(latin, "l.html").text == "café\n"
    undeclared = b"<p>caf\xe9 cr\xe8me</p>"  # not UTF-8, no charset: windows-1252, as browsers do
    assert read_bytes(undeclared, "u.html").text == "café crème\n"
    nested = read_bytes(b"<p>one<div>two</p>three<table><tr><td>a<td>b<tr><td>c</table>", "m.html")
    assert nested.text == "one\n\ntwo\n\nthree\n\n| a | b |\n| --- | --- |\n| c |  |\n"
    escaped = read_bytes(b"<p># not a heading</p><p>1. not a list</p><p>- nor this</p>", "e.html")
    assert [c.kind for c in MarkdownChunker(max_tokens=64).chunk(escaped.text)] == ["text"]
    deep = read_bytes(b"<div>" * 5000 + b"deep" + b"</div>" * 5000, "deep.html")
    assert "deep" in deep.text


# ---------------------------------------------------------------- PDF


def test_pdf_headers_footers_and_page_numbers_are_gone() -> None:
    doc = read(DATA / "report.pdf")
    assert "ACME Corporation" not in doc.text and "Page 1 of 3" not in doc.text and "of 3" not in doc.text
    assert doc.title == "Quarterly Report"
    headings = [(b.level, doc.text[b.start : b.end]) for b in doc.blocks if b.kind == "heading"]
    assert headings == [
        (1, "# Quarterly Report"),
        (2, "## Overview"),
        (2, "## Revenue by region"),
        (2, "## Two columns"),
        (2, "## Outlook"),
        (3, "### Risks"),
    ]
    faq = read(FAQ / "debian-faq.en.pdf")
    for running in ("CHAPTER 1. DEFINITIONS AND OVERVIEW", "1.6. HOW DOES THE DEBIAN PROJECT"):
        assert running not in faq.text
    for block in faq.blocks:  # no page number left in a page's top or bottom margin (A4: 842 points high)
        assert block.bbox is not None
        in_margin = block.bbox[3] <= 0.12 * 842 or block.bbox[1] >= 0.88 * 842
        assert not (in_margin and re.fullmatch(r"\d+", faq.text[block.start : block.end])), block


def test_pdf_reading_order_follows_columns() -> None:
    doc = read(DATA / "report.pdf")
    order = [doc.text.index(f"{side} column paragraph {n}.") for side in ("Left", "Right") for n in range(1, 5)]
    assert order == sorted(order)
    left = next(b for b in doc.blocks if doc.text[b.start : b.end].startswith("Left column paragraph 1."))
    assert doc.text[left.start : left.end].endswith("drops what repeats on every page.")  # one paragraph, lines joined
    assert left.page == 2 and left.bbox is not None and left.bbox[2] < 300  # in the left column


def test_pdf_tables_keep_their_header_row() -> None:
    doc = read(DATA / "report.pdf")
    table = next(b for b in doc.blocks if b.kind == "table")
    assert doc.text[table.start : table.end] == "\n".join(
        ["| Region | Q1 | Q2 | Q3 |", "| --- | --- | --- | --- |"]
        + [
            f"| {r} | {10 + i} | {12 + i} | {15 + i} |"
            for i, r in enumerate(["North", "South", "East", "West", "Central"])
        ]
    )
    assert "Table 1: Revenue by region, in millions." in doc.text
    assert next(b for b in doc.blocks if doc.text[b.start : b.end].startswith("Table 1:")).kind == "caption"
    for chunk in MarkdownChunker(max_tokens=48).chunk(doc.text):  # the table split between rows
        if "| North |" in chunk.text or "| Central |" in chunk.text:
            assert "| Region | Q1 | Q2 | Q3 |" in chunk.text or "| Region | Q1 | Q2 | Q3 |" in (chunk.context or "")


def test_pdf_headings_from_the_outline() -> None:
    doc = read(DATA / "outline.pdf")  # headings in the body's type size: only the outline knows them
    headings = [(b.level, b.page, doc.text[b.start : b.end]) for b in doc.blocks if b.kind == "heading"]
    assert headings == [
        (1, 1, "# Installation"),
        (2, 1, "## Requirements"),
        (1, 2, "# Configuration"),
        (2, 2, "## Options"),
    ]
    faq = read(FAQ / "debian-faq.en.pdf")
    levels = [b.level for b in faq.blocks if b.kind == "heading"]
    assert len(levels) > 100 and set(levels) == {1, 2, 3, 4}  # chapters, sections, subsections, paragraphs
    assert "## 1.7 How does one pronounce Debian and what does this word mean?" in faq.text


# ---------------------------------------------------------------- DOCX and Docling


def test_docx_headings_lists_tables_in_body_order() -> None:
    doc = read(DATA / "report.docx")
    assert doc.title == "Quarterly Report"
    assert doc.text.startswith("# Quarterly Report\n\n# Overview\n\nThe overview.")
    assert "## Regions\n\n- North grew fastest.\n- South held steady.\n1. First step.\n2. Second step.\n\n" in doc.text
    assert (
        "| Region | Q1 | Q2 |\n| --- | --- | --- |\n| North | 10 | 12 |\n| South | 11 | 13 |\n\n# Outlook" in doc.text
    )
    rows = doc.metadata()["provenance"]["blocks"]
    assert [r[2:] for r in rows] == [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 0], [0, 8], [0, 9]]


def test_docling_document_with_pages_and_boxes() -> None:
    doc = read(DATA / "report.docling.json")
    assert doc.title == "Quarterly Report"
    assert "ACME Corporation" not in doc.text  # Docling's furniture layer
    assert "## Overview" in doc.text and "- North grew fastest.\n- South held steady." in doc.text
    assert "Table 1: Revenue by region.\n\n| Region | Q1 | Q2 |\n| --- | --- | --- |\n| North | 10 | 12 |" in doc.text
    assert "```\npip install chunkforge[documents]\n```" in doc.text
    first = doc.blocks[0]
    assert first.page == 1 and first.bbox == (72.0, 75.0, 230.0, 94.0)  # flipped to a top-left origin
    assert [b.page for b in doc.blocks][-1] == 2


def test_docling_document_built_with_docling_core() -> None:
    from docling_core.types.doc import DocItemLabel, DoclingDocument

    built = DoclingDocument(name="notes")
    built.add_heading("Setup", level=1)
    built.add_text(DocItemLabel.TEXT, "Install it.")
    doc = read_bytes(built.model_dump_json().encode(), "notes.docling.json")
    assert doc.text == "## Setup\n\nInstall it.\n" and doc.title == "notes"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("scan.pdf", (DATA / "scan.pdf").read_bytes(), ["has no text layer", "OCR"]),
        ("encrypted.pdf", (DATA / "encrypted.pdf").read_bytes(), ["is encrypted"]),
        ("cut.pdf", (DATA / "report.pdf").read_bytes()[:900], ["damaged PDF"]),
        ("fake.pdf", b"hello, I am text", ["not a PDF file"]),
        ("memo.docx", b"just text, not a zip", ["not a DOCX file", "not a zip"]),
        ("old.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), ["encrypted or a legacy .doc"]),
        ("zip.docx", b"PK\x05\x06" + bytes(18), ["damaged DOCX"]),
        ("image.html", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), ["binary file, not HTML"]),
        ("bad.docling.json", b'{"name": 3}', ["not a DoclingDocument"]),
        ("image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff" + bytes(64), ["not valid UTF-8"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_bad_input_is_one_clear_line(name: str, data: bytes, words: list[str], tmp_path: Path, capsys) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    code = main(["chunk", str(path), "--out", str(tmp_path / "out.jsonl")])
    one_line_error(code, capsys.readouterr().err, str(path), *words)
    if format_for_path(name):
        with pytest.raises(InputError, match=re.escape(str(path))):
            read_file(path)


def test_a_folder_of_documents_is_chunked(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for path in (DATA / "page.html", DATA / "report.pdf", DATA / "report.docx", DATA / "report.docling.json"):
        shutil.copy(path, folder)
    (folder / "notes.md").write_text("# Notes\n\nPlain Markdown still works.\n")
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", str(folder), "--out", str(out), "--strategy", "markdown", "--max-tokens", "64"]) == 0
    assert capsys.readouterr().err == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    docs = {Path(r["doc_id"]).name for r in records}
    assert docs == {"page.html", "report.pdf", "report.docx", "report.docling.json", "notes.md"}
    texts = {d.doc_id: d.text for d in read_documents([str(folder)])}
    for r in records:
        assert texts[r["doc_id"]][r["start"] : r["end"]] == r["text"]
        assert not MARKUP.search(r["text"]) and not PDF_SYNTAX.search(r["text"])
        assert "SCRIPT-CONTENT-MARKER" not in r["text"]
    assert any(
        r["heading_path"] == ["Quarterly Report", "Revenue by region"] for r in records if r["doc_id"].endswith(".pdf")
    )
    assert syntax_for_path("x.pdf") == syntax_for_path("x.docling.json") == "markdown"


def test_skipped_files_are_counted_and_a_folder_of_nothing_is_an_error(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(DATA / "report.docx", folder)
    shutil.copy(DATA / "scan.pdf", folder)
    shutil.copy(DATA / "encrypted.pdf", folder)
    (folder / "latin.txt").write_bytes(b"caf\xe9")
    (folder / "photo.png").write_bytes(b"\x89PNG")
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", str(folder), "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chunkforge: skipped 3 files: ")
    for part in ("1 no text layer", "1 encrypted", "1 not valid UTF-8", "scan.pdf"):
        assert part in err[0]
    assert {json.loads(line)["doc_id"] for line in out.read_text().splitlines()} == {str(folder / "report.docx")}
    report = ReadReport()
    assert len(list(read_documents([str(folder)], report=report))) == 1
    assert report.read == 1 and sum(report.skipped.values()) == 3
    # every file skipped or of no known format: exit 2, one line, the counts given
    bad = tmp_path / "scans"
    bad.mkdir()
    shutil.copy(DATA / "scan.pdf", bad)
    (bad / "photo.png").write_bytes(b"\x89PNG")
    code = main(["chunk", str(bad), "--out", str(out)])
    one_line_error(
        code, capsys.readouterr().err, f"no documents read from {bad}", "1 no text layer", "1 file of no known format"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(
        main(["chunk", str(empty)]), capsys.readouterr().err, f"no documents read from {empty}", "holds no files"
    )


def test_records_holding_html(tmp_path: Path, capsys) -> None:
    page = (DATA / "page.html").read_text(encoding="utf-8")
    records = tmp_path / "crawl.jsonl"
    rows = [
        {"id": "page", "format": "html", "main_content": True, "url": "https://example.org/bond", "text": page},
        {"id": "plain", "text": "Plain text, read as it is."},
    ]
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = list(read_documents([str(records)]))
    assert docs[0].text == read(DATA / "page.html", main_content=True).text
    assert docs[0].metadata["url"] == "https://example.org/bond" and docs[0].metadata["format"] == "html"
    assert "main_content" not in docs[0].metadata and docs[1].text == rows[1]["text"]
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", str(records), "--out", str(out)]) == 0
    for line in out.read_text().splitlines():
        assert "FOOTER-MARKER" not in json.loads(line)["text"] and not MARKUP.search(json.loads(line)["text"])
    pdf_record = tmp_path / "pdf.jsonl"
    pdf_record.write_text(json.dumps({"id": "x", "format": "pdf", "text": "%PDF-1.4"}) + "\n")
    one_line_error(
        main(["chunk", str(pdf_record)]), capsys.readouterr().err, f"{pdf_record}:1", "needs the file itself"
    )


def test_bulk_job_reads_documents_and_html_records(tmp_path: Path) -> None:
    from chunkforge.bulk.readers import read_inputs
    from chunkforge.bulk.spec import JobSpec

    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(DATA / "report.pdf", folder)
    records = tmp_path / "crawl.jsonl"
    records.write_text(
        json.dumps({"id": "page", "format": "html", "text": "<h1>T</h1><script>x()</script><p>Body.</p>"}) + "\n"
    )
    spec = JobSpec(units="tree")
    docs = list(read_inputs([str(folder), str(records)], spec))
    assert [d.doc_id for d in docs] == [str(folder / "report.pdf"), "page"]
    assert docs[0].text == read(DATA / "report.pdf").text and docs[0].metadata["provenance"]["format"] == "pdf"
    assert docs[1].text == "# T\n\nBody.\n" and docs[1].metadata["title"] == "T"


def test_index_build_and_query_cite_pdf_pages(tmp_path: Path, model_cache, capsys) -> None:
    pytest.importorskip("hnswlib")
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(DATA / "report.pdf", folder)
    shutil.copy(DATA / "page.html", folder)
    out = tmp_path / "idx"
    assert main(["index", "build", str(folder), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    question = "which region had the highest revenue in Q3?"
    assert main(["query", str(out), question, "--k", "3", "--budget-tokens", "200"]) == 0
    printed = capsys.readouterr().out
    cited = re.findall(rf"^\[\d+\] {re.escape(str(folder / 'report.pdf'))}:\d+-\d+ \(.*\) p\. \d(-\d)?$", printed, re.M)
    assert cited, printed
    # a folder of which nothing can be read builds no empty index
    scans = tmp_path / "scans"
    scans.mkdir()
    shutil.copy(DATA / "scan.pdf", scans)
    code = main(["index", "build", str(scans), "--out", str(tmp_path / "empty-idx")])
    one_line_error(code, capsys.readouterr().err, f"no documents read from {scans}", "no text layer")
    assert not (tmp_path / "empty-idx").exists()


def test_parquet_records_holding_html(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "crawl.parquet"
    page = (DATA / "page.html").read_text(encoding="utf-8")
    pq.write_table(pa.table({"id": ["a", "b"], "format": ["html", None], "text": [page, "As it is."]}), path)
    docs = list(read_documents([str(path)]))
    assert docs[0].text == read(DATA / "page.html").text and docs[0].metadata["provenance"]["format"] == "html"
    assert docs[1].text == "As it is." and docs[1].metadata == {"format": None}


def test_hostile_html_stays_linear(tmp_path: Path) -> None:
    import time

    fostered = b"<table>" + b"<tr><td>cell</td></tr>stray text " * 3000 + b"</table>"
    nul = b"<p>text</p>" * 1000 + b"<p>a\x00b</p>" * 2000  # NUL past the first 8 KiB: not a binary file
    for data in (fostered, nul):
        started = time.perf_counter()
        doc = read_bytes(data, "hostile.html")
        assert time.perf_counter() - started < 10
        assert doc.text and doc.blocks[-1].source_start is not None  # the table's cells, the last paragraph


def test_embed_docs_index_keeps_provenance_and_cites_pages(tmp_path: Path, model_cache, capsys) -> None:
    pytest.importorskip("hnswlib")
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(DATA / "report.pdf", folder)
    shutil.copy(DATA / "report.docx", folder)
    out = tmp_path / "out"
    assert main(["embed-docs", str(folder), "--out", str(out), "--index", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "revenue of the central region", "--k", "3", "--budget-tokens", "200"]) == 0
    printed = capsys.readouterr().out
    assert re.search(rf"^\[\d+\] {re.escape(str(folder / 'report.pdf'))}:\d+-\d+ .*p\. \d", printed, re.M), printed


def test_a_page_of_many_lines_is_read_in_linear_time(tmp_path: Path) -> None:
    import time

    from reportlab.pdfgen import canvas

    path = tmp_path / "drawing.pdf"
    c = canvas.Canvas(str(path), invariant=1)
    for i in range(3000):  # a chart's worth of thin vertical lines: no pairwise grouping
        c.line(10 + i % 500, 10, 10 + i % 500, 700)
    c.drawString(100, 750, "A drawing with many lines.")
    c.showPage()
    c.save()
    started = time.perf_counter()
    assert read_file(path).text == "A drawing with many lines.\n"
    assert time.perf_counter() - started < 10


def test_ray_chunk_rows_read_a_format_column(model_cache) -> None:
    pa = pytest.importorskip("pyarrow")
    from dataclasses import asdict

    from chunkforge.bulk.ray import ChunkRows
    from chunkforge.bulk.spec import JobSpec

    rows = ChunkRows(asdict(JobSpec(with_text=True)))  # the actor's code, called here without a cluster
    page = "<h1>Bonding</h1><script>SCRIPT-CONTENT-MARKER</script><p>Bonding joins two interfaces.</p>"
    batch = pa.table({"id": ["a", "b"], "format": ["html", None], "text": [page, "<p>kept as it is</p>"]})
    out = rows(batch).to_pylist()
    texts = {r["doc_id"]: r["text"] for r in out}
    assert "SCRIPT-CONTENT-MARKER" not in texts["a"] and "<h1>" not in texts["a"] and "Bonding joins" in texts["a"]
    assert texts["b"] == "<p>kept as it is</p>"


def test_pdf_table_ruled_only_across_keeps_its_header(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    path = tmp_path / "booktabs.pdf"
    c = canvas.Canvas(str(path), invariant=1)
    c.setFont("Helvetica", 10)
    c.drawString(72, 760, "Libraries used:")
    rows = [("Package", "Version", "Licence"), ("selectolax", "1.0.2", "MIT"), ("pypdfium2", "5.15", "Apache-2.0")]
    y = 730
    c.line(72, y + 14, 400, y + 14)  # top rule, the rule under the header, the bottom rule: no vertical rules
    for i, row in enumerate(rows):
        for x, text in zip((76, 200, 300), row):
            c.drawString(x, y, text)
        if i == 0:
            c.line(72, y - 4, 400, y - 4)
        y -= 16
    c.line(72, y + 10, 400, y + 10)
    c.drawString(72, y - 20, "After the table.")
    c.showPage()
    c.save()
    assert read_file(path).text == (
        "Libraries used:\n\n| Package | Version | Licence |\n| --- | --- | --- |\n"
        "| selectolax | 1.0.2 | MIT |\n| pypdfium2 | 5.15 | Apache-2.0 |\n\nAfter the table.\n"
    )
