"""The document model of the readers: a source file read into canonical text (Markdown),
its blocks (structure, with offsets into that text) and their provenance (where each
block came from in the source), the compact provenance a document's metadata carries,
and :func:`cite`, which names the pages, boxes or source ranges of any span.

Canonical text is Markdown, as Docling's export is: ATX headings, paragraphs separated
by blank lines, ``- `` / ``1. `` list items, GitHub pipe tables (header row and ``|---|``
line), fenced code blocks, captions as their own paragraph. Every chunk slices it:
``text[start:end] == chunk.text``.

>>> builder = TextBuilder()
>>> builder.heading("Install", 1, page=1, bbox=(72.0, 60.0, 200.0, 80.0))
>>> builder.paragraph("Run pip.", page=2, bbox=(72.0, 90.0, 300.0, 100.0))
>>> doc = builder.build("pdf", "Guide")
>>> doc.text
'# Install\\n\\nRun pip.\\n'
>>> doc.provenance()["blocks"]
[[0, 9, 1, 72.0, 60.0, 200.0, 80.0], [11, 19, 2, 72.0, 90.0, 300.0, 100.0]]
>>> cite(doc.provenance(), 0, 19).label()
'p. 1-2'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

BLOCK_KINDS = ("heading", "paragraph", "list", "table", "code", "caption")
"""What a block is."""

DOCX_ITEM_KINDS = ("paragraph", "table")
"""DOCX provenance's ``kind_code``: 0 a body paragraph, 1 a body table (``index`` counts each kind)."""

BBox = tuple[float, float, float, float]


class ReadError(InputError):
    """A source file a reader cannot turn into text; ``cause`` is the short cause a folder's
    skip counts group by (``"no text layer"``, ``"encrypted"``, ``"damaged"``, ...)."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a read document: ``kind`` (one of :data:`BLOCK_KINDS`), ``start``/``end``
    (``str`` offsets into the canonical text), ``level`` (a heading's, 1-6), and its
    provenance: ``page`` (1-based; ``page_end`` when it spans pages) and ``bbox`` (x0, y0,
    x1, y1 in PDF points, top-left origin) for PDF and Docling, ``source_start``/``source_end``
    (the range in the source file's decoded text) for HTML, ``index`` (the body paragraph or
    table index; ``kind`` says which) for DOCX."""

    kind: str
    start: int
    end: int
    level: int | None = None
    page: int | None = None
    page_end: int | None = None
    bbox: BBox | None = None
    source_start: int | None = None
    source_end: int | None = None
    index: int | None = None


@dataclass(frozen=True)
class ReadDocument:
    """A source file read: its canonical ``text`` (Markdown), ``format`` (``html``, ``pdf``,
    ``docx``, ``docling``), ``title`` (or None) and ``blocks`` in text order."""

    text: str
    format: str
    title: str | None
    blocks: tuple[Block, ...] = field(default=())

    def provenance(self) -> dict[str, Any]:
        """The compact, JSON-serialisable provenance: ``{"format", "blocks"}``, one list a block:

        - ``pdf``, ``docling``: ``[start, end, page, x0, y0, x1, y1]`` (``page_end`` appended
          when the block spans pages; page and box None where the source gave none);
        - ``html``: ``[start, end, source_start, source_end]`` (None where no text aligned);
        - ``docx``: ``[start, end, kind_code, index]``, ``kind_code`` 0 a paragraph, 1 a table.
        """
        rows: list[list[Any]] = []
        for b in self.blocks:
            if self.format == "html":
                rows.append([b.start, b.end, b.source_start, b.source_end])
            elif self.format == "docx":
                code = DOCX_ITEM_KINDS.index("table" if b.kind == "table" else "paragraph")
                rows.append([b.start, b.end, code, b.index])
            else:
                row: list[Any] = [b.start, b.end, b.page, *(b.bbox or (None, None, None, None))]
                if b.page_end is not None and b.page_end != b.page:
                    row.append(b.page_end)
                rows.append(row)
        return {"format": self.format, "blocks": rows}

    def metadata(self) -> dict[str, Any]:
        """The document record's metadata: ``{"syntax": "markdown", "format", "title",
        "provenance"}`` (``title`` only when there is one)."""
        meta: dict[str, Any] = {"syntax": "markdown", "format": self.format}
        if self.title:
            meta["title"] = self.title
        meta["provenance"] = self.provenance()
        return meta


@dataclass(frozen=True, slots=True)
class Citation:
    """Where a span of a read document came from: the ``pages`` it covers (PDF, Docling),
    the first block's ``bbox``, the ``source`` ranges (HTML) and the DOCX ``items``
    (``(kind, index)``)."""

    format: str
    pages: tuple[int, ...] = ()
    bbox: BBox | None = None
    source: tuple[tuple[int, int], ...] = ()
    items: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The citation as JSON-ready data (only what it has): what a chunk record and a served
        passage carry.

        >>> Citation("pdf", (3, 4), (72.0, 90.0, 300.0, 120.0)).as_dict()
        {'format': 'pdf', 'pages': [3, 4], 'bbox': [72.0, 90.0, 300.0, 120.0]}
        """
        out: dict[str, Any] = {"format": self.format}
        if self.pages:
            out["pages"] = list(self.pages)
        if self.bbox is not None:
            out["bbox"] = list(self.bbox)
        if self.source:
            out["source"] = [list(r) for r in self.source]
        if self.items:
            out["items"] = [list(i) for i in self.items]
        return out

    def label(self) -> str:
        """A short citation: ``p. 3`` / ``p. 3-4`` for pages, else ``""``."""
        if not self.pages:
            return ""
        first, last = self.pages[0], self.pages[-1]
        return f"p. {first}" if first == last else f"p. {first}-{last}"


def cite(provenance: Mapping[str, Any] | None, start: int, end: int) -> Citation | None:
    """The citation of ``text[start:end]`` from a document's ``metadata["provenance"]``: the
    blocks the span overlaps (an empty span: the block holding ``start``). None when there
    is no provenance (a document no reader made) or it is not of a known shape.

    >>> prov = {"format": "html", "blocks": [[0, 9, 120, 160], [11, 30, 170, 260]]}
    >>> cite(prov, 5, 20).source
    ((120, 160), (170, 260))
    """
    if not isinstance(provenance, Mapping):
        return None
    fmt = provenance.get("format")
    rows = provenance.get("blocks")
    if not isinstance(fmt, str) or not isinstance(rows, Sequence):
        return None
    hit = [r for r in rows if _overlaps(r, start, end)]
    pages: set[int] = set()
    bbox: BBox | None = None
    source: list[tuple[int, int]] = []
    items: list[tuple[str, int]] = []
    for row in hit:
        if fmt == "html" and len(row) >= 4 and row[2] is not None and row[3] is not None:
            source.append((int(row[2]), int(row[3])))
        elif fmt == "docx" and len(row) >= 4 and row[3] is not None:
            items.append((DOCX_ITEM_KINDS[int(row[2])], int(row[3])))
        elif fmt not in ("html", "docx") and len(row) >= 3 and row[2] is not None:
            first = int(row[2])
            last = int(row[7]) if len(row) >= 8 and row[7] is not None else first
            pages.update(range(first, last + 1))
            if bbox is None and len(row) >= 7 and None not in row[3:7]:
                bbox = (float(row[3]), float(row[4]), float(row[5]), float(row[6]))
    return Citation(fmt, tuple(sorted(pages)), bbox, tuple(source), tuple(items))


def _overlaps(row: Any, start: int, end: int) -> bool:
    if not isinstance(row, Sequence) or len(row) < 2:
        return False
    b_start, b_end = row[0], row[1]
    if not isinstance(b_start, int) or not isinstance(b_end, int):
        return False
    if start == end:
        return b_start <= start < b_end or (b_start == b_end == start)
    return b_start < end and b_end > start


# ---------------------------------------------------------------- writing canonical Markdown

_WS = re.compile(r"\s+")
# a line start Markdown would read as structure: a heading, a quote, a list item, a
# thematic break, a fence, a table row, an HTML block
_LINE_START = re.compile(
    r"^(#{1,6}(\s|$)|>|[-*+](\s|$)|\d{1,9}[.)](\s|$)|(-\s*){3,}$|(\*\s*){3,}$|(_\s*){3,}$|```|~~~|\||<)"
)


def inline(text: str) -> str:
    """``text`` as one line: runs of whitespace (newlines included) become one space, ends stripped.

    >>> inline("  two\\n  lines ")
    'two lines'
    """
    return _WS.sub(" ", text).strip()


def escape_start(line: str) -> str:
    """``line`` with a backslash in front when Markdown would read its start as structure.

    >>> escape_start("# not a heading"), escape_start("1. not a list"), escape_start("plain")
    ('\\\\# not a heading', '\\\\1. not a list', 'plain')
    """
    return "\\" + line if _LINE_START.match(line) else line


def table_cell(text: str) -> str:
    """A cell's text for a pipe table: one line, ``|`` escaped."""
    return inline(text).replace("\\", "\\\\").replace("|", "\\|")


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows (the first the header) as a GitHub pipe table; short rows padded.

    >>> print(pipe_table([["Name", "Size"], ["a", "1"]]))
    | Name | Size |
    | --- | --- |
    | a | 1 |
    """
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return ""
    cells = [[table_cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "| " + " | ".join(["---"] * width) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in cells[1:]]
    return "\n".join(lines)


def code_fence(code: str, language: str = "") -> str:
    """``code`` in a fenced block, the fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    body = code.strip("\n")
    return f"{fence}{inline(language)}\n{body}\n{fence}"


class TextBuilder:
    """Canonical Markdown written block by block, each block's offsets recorded (blocks
    separated by one blank line, the text ending in a newline)."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pos = 0
        self.blocks: list[Block] = []

    def add(self, kind: str, text: str, **provenance: Any) -> Block | None:
        """Appends one block of ready Markdown; an empty one is left out."""
        text = text.strip("\n")
        if not text.strip():
            return None
        if self._parts:
            self._parts.append("\n\n")
            self._pos += 2
        block = Block(kind, self._pos, self._pos + len(text), **provenance)
        self._parts.append(text)
        self._pos += len(text)
        self.blocks.append(block)
        return block

    def heading(self, title: str, level: int, **provenance: Any) -> None:
        """An ATX heading (level clamped to 1-6) of a one-line title."""
        level = min(max(level, 1), 6)
        title = inline(title)
        if title:
            self.add("heading", "#" * level + " " + title, level=level, **provenance)

    def paragraph(self, text: str, kind: str = "paragraph", **provenance: Any) -> None:
        """A paragraph (or caption): one line, its start escaped."""
        self.add(kind, escape_start(inline(text)), **provenance)

    def items(self, items: Iterable[tuple[str, int, bool]], **provenance: Any) -> None:
        """A list block from ``(text, depth, numbered)`` items (depth from 0)."""
        lines = []
        counters: dict[int, tuple[bool, int]] = {}  # depth: (numbered, items so far)
        indents = [""]  # per depth: a nested item starts at its parent item's text (CommonMark)
        for text, depth, numbered in items:
            body = inline(text)
            if not body:
                continue
            depth = min(depth, len(indents) - 1)
            counters = {d: n for d, n in counters.items() if d <= depth}
            kind, count = counters.get(depth, (numbered, 0))
            counters[depth] = (numbered, count + 1 if kind == numbered else 1)
            marker = f"{counters[depth][1]}." if numbered else "-"
            del indents[depth + 1 :]
            indents.append(indents[depth] + " " * (len(marker) + 1))
            lines.append(indents[depth] + f"{marker} " + escape_start(body))
        self.add("list", "\n".join(lines), **provenance)

    def table(self, rows: Sequence[Sequence[str]], **provenance: Any) -> None:
        """A pipe table, the first row its header."""
        if rows and any(inline(c) for r in rows for c in r):
            self.add("table", pipe_table(rows), **provenance)

    def code(self, code: str, language: str = "", **provenance: Any) -> None:
        """A fenced code block."""
        if code.strip():
            self.add("code", code_fence(code, language), **provenance)

    def build(self, fmt: str, title: str | None) -> ReadDocument:
        """The read document."""
        text = "".join(self._parts) + ("\n" if self._parts else "")
        return ReadDocument(text, fmt, inline(title) if title else None, tuple(self.blocks))


PROVENANCE = "provenance"
"""The metadata field that holds a read document's provenance (:meth:`ReadDocument.provenance`)."""


def citation_of(metadata: Mapping[str, Any] | None, start: int, end: int) -> dict[str, Any] | None:
    """The citation of ``[start, end)`` of a document with ``metadata`` as JSON-ready data
    (:meth:`Citation.as_dict`), None for a document no reader made: what a chunk, hit or served
    passage carries in place of the document's whole provenance.

    >>> citation_of({"provenance": {"format": "pdf", "blocks": [[0, 9, 2, 0, 0, 1, 1]]}}, 0, 5)
    {'format': 'pdf', 'pages': [2], 'bbox': [0.0, 0.0, 1.0, 1.0]}
    """
    found = cite((metadata or {}).get(PROVENANCE), start, end)
    return None if found is None else found.as_dict()
