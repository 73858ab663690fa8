"""DOCX into canonical Markdown, read with python-docx (``chunkforge[docx]``), body
paragraphs and tables in body order: ``Title`` and ``Heading N`` styles are headings
(``Title`` level 1, ``Heading N`` level N), paragraphs in a ``List ...`` style or with
Word numbering are list items (numbered for ``List Number`` styles; depth from the
numbering level or the style's trailing digit), consecutive items one list; tables keep
their first row as the header (a merged cell's text once). The title is the core
properties' title, else the first heading.

Provenance: each block's body paragraph index (its first paragraph's, for a list) or
body table index.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from .document import ReadDocument, ReadError, TextBuilder, inline

HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
LIST_DEPTH = re.compile(r"\s([2-9])$")


def read(data: bytes, name: str, **_: Any) -> ReadDocument:
    """The document of DOCX bytes (see the module)."""
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph
    except ImportError as exc:
        from . import needs_extra

        raise needs_extra("docx", name, "python-docx") from exc
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise ReadError(f"{name} is encrypted or a legacy .doc file, not a DOCX (Office Open XML) file", "encrypted")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ReadError(f"{name} is not a DOCX file (not a zip archive)", "damaged")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - python-docx raises many kinds (KeyError, ValueError, lxml errors) on a bad package
        raise ReadError(f"{name} is a damaged DOCX file: {type(exc).__name__}: {exc}", "damaged") from exc
    out = TextBuilder()
    items: list[tuple[str, int, bool]] = []
    list_index: int | None = None
    first_heading = ""
    paragraph_index = table_index = 0

    def close_list() -> None:
        nonlocal list_index
        if items:
            out.items(items, index=list_index)
            items.clear()
        list_index = None

    try:
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                close_list()
                out.table(_rows(block), index=table_index)
                table_index += 1
                continue
            assert isinstance(block, Paragraph)
            text = block.text
            style = (block.style.name if block.style is not None else "") or ""
            level = 1 if style.lower() == "title" else _heading_level(style)
            numbering = _numbering(block)
            if level is not None:
                close_list()
                first_heading = first_heading or inline(text)
                out.heading(text, level, index=paragraph_index)
            elif style.lower().startswith("list") or numbering is not None:
                if list_index is None:
                    list_index = paragraph_index
                depth = numbering if numbering is not None else _style_depth(style)
                items.append((text, depth, "number" in style.lower()))
            else:
                close_list()
                out.paragraph(text, index=paragraph_index)
            paragraph_index += 1
        close_list()
    except (KeyError, ValueError, AttributeError) as exc:
        raise ReadError(f"{name} is a damaged DOCX file: {type(exc).__name__}: {exc}", "damaged") from exc
    title = (document.core_properties.title or "").strip()
    return out.build("docx", title or first_heading or None)


def _heading_level(style: str) -> int | None:
    match = HEADING_STYLE.match(style.strip())
    return int(match.group(1)) if match else None


def _style_depth(style: str) -> int:
    match = LIST_DEPTH.search(style)
    return int(match.group(1)) - 1 if match else 0


def _numbering(paragraph: Any) -> int | None:
    """The paragraph's Word numbering level (``w:numPr/w:ilvl``), or None when it has no numbering."""
    ppr = paragraph._p.pPr
    if ppr is None or ppr.numPr is None:
        return None
    ilvl = ppr.numPr.ilvl
    return int(ilvl.val) if ilvl is not None and ilvl.val is not None else 0


def _rows(table: Any) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        seen: set[int] = set()
        for cell in row.cells:
            key = id(cell._tc)
            cells.append("" if key in seen else cell.text)
            seen.add(key)
        rows.append(cells)
    return rows
