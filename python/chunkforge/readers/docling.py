"""A DoclingDocument (Docling's JSON) into canonical Markdown, read with docling-core
(``chunkforge[docling]``; no model runs here: Docling's model-based PDF pipeline runs
wherever the user runs it, and its saved result is read). Body items in reading order
(``iterate_items``; page headers and footers are in Docling's furniture layer, left
out): the title and section headers are headings (title level 1, a section header its
level + 1), list items one list (numbered where Docling says enumerated), tables with
their first grid row as the header, code as fenced blocks, captions, footnotes and text
as paragraphs, pictures by their captions only.

Provenance: each block's page (1-based, as Docling numbers them) and box in points with a
top-left origin (Docling's bottom-left boxes are flipped with the page's height), the last
page as ``page_end`` when an item spans pages.
"""

from __future__ import annotations

from typing import Any

from .document import ReadDocument, ReadError, TextBuilder, inline


def read(data: bytes, name: str, **_: Any) -> ReadDocument:
    """The document of a DoclingDocument's JSON bytes (see the module)."""
    try:
        from docling_core.types.doc import (  # type: ignore[attr-defined]  # its documented names, re-exported untyped
            CodeItem,
            DoclingDocument,
            ListItem,
            PictureItem,
            SectionHeaderItem,
            TableItem,
            TextItem,
            TitleItem,
        )
        from pydantic import ValidationError
    except ImportError as exc:
        from . import needs_extra

        raise needs_extra("docling", name, "docling-core") from exc
    try:
        doc = DoclingDocument.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"msg": str(exc), "loc": ()}
        at = ".".join(str(x) for x in first.get("loc", ()))
        raise ReadError(
            f"{name} is not a DoclingDocument: {first['msg']}{f' at {at}' if at else ''}", "damaged"
        ) from exc
    except ValueError as exc:
        raise ReadError(f"{name} is not a DoclingDocument: {exc}", "damaged") from exc
    out = TextBuilder()
    items: list[tuple[str, int, bool]] = []
    list_where: dict[str, Any] = {}
    list_base = 0
    title = ""

    def close_list() -> None:
        if items:
            out.items(items, **list_where)
            items.clear()

    for item, level in doc.iterate_items():
        if isinstance(item, PictureItem):
            continue
        where = _where(doc, item)
        if isinstance(item, ListItem):
            if not items:
                list_where.clear()
                list_where.update(where)
                list_base = level
            items.append((item.text, max(level - list_base, 0), bool(item.enumerated)))
            continue
        close_list()
        if isinstance(item, TitleItem):
            title = title or inline(item.text)
            out.heading(item.text, 1, **where)
        elif isinstance(item, SectionHeaderItem):
            out.heading(item.text, int(item.level) + 1, **where)
        elif isinstance(item, TableItem):
            rows = [[cell.text for cell in row] for row in item.data.grid]
            out.table(rows, **where)
        elif isinstance(item, CodeItem):
            language = getattr(item.code_language, "value", "") or ""
            out.code(item.text, "" if language == "unknown" else language.lower(), **where)
        elif isinstance(item, TextItem):
            kind = "caption" if str(getattr(item.label, "value", item.label)) == "caption" else "paragraph"
            out.paragraph(item.text, kind, **where)
    close_list()
    name_title = doc.name if doc.name and doc.name != "Document" else ""
    return out.build("docling", title or name_title or None)


def _where(doc: Any, item: Any) -> dict[str, Any]:
    """A Docling item's page, page_end and top-left box (the first provenance entry's)."""
    prov = getattr(item, "prov", None) or []
    if not prov:
        return {}
    first = prov[0]
    page = int(first.page_no)
    bbox = first.bbox
    size = doc.pages.get(page).size if page in doc.pages else None
    if size is not None:
        bbox = bbox.to_top_left_origin(page_height=size.height)
    x0, x1 = sorted((float(bbox.l), float(bbox.r)))
    y0, y1 = sorted((float(bbox.t), float(bbox.b)))
    last = max(int(p.page_no) for p in prov)
    where: dict[str, Any] = {"page": page, "bbox": (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))}
    if last != page:
        where["page_end"] = last
    return where
