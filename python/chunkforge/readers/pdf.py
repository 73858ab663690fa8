"""PDF (with a text layer) into canonical Markdown, read with pypdfium2 (PDFium;
``chunkforge[pdf]``): characters with their boxes, type size and font, the outline
and the page's ruling lines. The layout rules are hand-written (PDFium gives characters,
not paragraphs or reading order; the libraries that do both are AGPL or model-based):

- **Lines.** Characters in content order make lines; a line breaks where PDFium marks
  one, where the baseline moves, or at a horizontal gap over 1.5 times the type size (a
  column gutter or a table cell), so each piece (a *segment*) lies in one column.
- **Page furniture.** A segment in the top or bottom 12% of a page whose text (digits
  read as ``#``) recurs at the same height on at least half of the pages (and two) is a
  running header or footer, and a page number (``7``, ``Page 7 of 9``, ``vii``) there
  is dropped on any page. So is a page's top (bottom) line in that zone, set apart from
  the text below (above) it by over three type sizes, when pages' top (bottom) lines share
  its height on at least 40% of the pages (and two): running heads whose text changes
  with the section.
- **Columns and reading order.** Segments side by side on one baseline with a gap
  between them mark a gutter; a gutter seen on three lines or more splits the page
  into columns. Reading order: top to bottom, where a segment crossing a gutter (a
  title over both columns) closes a band, and within a band each column top to bottom,
  left to right.
- **Paragraphs.** Consecutive lines of one column and one style (size, weight) whose
  baselines are at most 1.6 type sizes apart; a line ending in a hyphen joins the next
  without it.
- **Headings.** From the outline where the PDF has one (a paragraph whose text, its
  number such as ``1.2`` or ``Chapter 3`` aside, is an outline title of its page; level
  from the outline's depth); otherwise a short
  paragraph (three lines at most) set at least 15% larger than the body's type size (the
  size of most characters), or bold where the body is not and not smaller than it: larger
  sizes get higher levels, bold before regular at one size.
- **Tables.** Ruling lines (thin path objects) that touch one another, or horizontal rules
  of one width at most 120 points apart (a table ruled only across), make a table: the
  horizontal rules give the rows (with vertical rules too, each band between rules is a
  row, its lines joined; without, each baseline is a row), the vertical rules the
  columns (without, gaps in the characters' x coverage wider than the type size; two
  columns at least). The first row is the header.
  Tables without rules are read as text, and so is a page of over 400 ruling lines (a drawing).
- **Leaders.** A contents page's dot leaders (``Scope . . . . 12``) are dropped.
- **Captions.** A paragraph starting ``Table N`` / ``Figure N`` / ``Fig. N``.

Provenance: each block's 1-based page and box (x0, y0, x1, y1) in points, top-left origin.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .document import ReadDocument, ReadError, TextBuilder, inline

MARGIN_ZONE = 0.12
GAP_SIZES = 1.5
EDGE_GAP = 3.0
PARAGRAPH_SIZES = 1.6
HEADING_RATIO = 1.15
BOLD_HEADING_RATIO = 0.95
RULE_THICKNESS = 2.0
MAX_RULES = 400
STACKED_RULES = 120.0
"""The largest distance (points) between two horizontal rules of one width that belong to one table."""
"""A page with more ruling lines than this (a chart, a drawing) gets no table search: grouping
them pairwise would cost quadratic time."""
PAGE_NUMBER = re.compile(r"^(page\s*)?([#]+|[ivxlcdm]+)(\s*(of|/)\s*[#]+)?$", re.I)
CAPTION = re.compile(r"^(table|figure|fig\.)\s*[0-9IVX]+", re.I)
NUMBERING = re.compile(r"^((chapter|section|appendix|part)\s+)?([0-9]+|[a-z])(\.[0-9]+)*\.?\s+", re.I)
"""A heading's number, which the outline's title often leaves out (``1.2 Scope`` / ``Scope``)."""
LEADERS = re.compile(r"(?:\s?\.){5,}")
"""A table of contents' dot leaders (``Scope . . . . . 12``), dropped."""
BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|^[A-Z]{6}\+?CMBX|^CMBX|^SFBX", re.I)
"""Bold by its name (TeX's Computer Modern and EC bold fonts are ``CMBX``/``SFBX``, weight 545)."""


@dataclass
class _Seg:
    """A run of characters on one baseline in one column (a line, or a piece of one)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    base: float
    size: float
    bold: bool
    page: int
    column: int = 0
    spanning: bool = False


@dataclass
class _Table:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    rows: list[list[str]] = field(default_factory=list)


def read(data: bytes, name: str, **_: Any) -> ReadDocument:
    """The document of PDF bytes (see the module)."""
    try:
        import pypdfium2 as pdfium
    except ImportError as exc:
        from . import needs_extra

        raise needs_extra("pdf", name, "pypdfium2") from exc
    if b"%PDF-" not in data[:1024]:
        raise ReadError(f"{name} is not a PDF file (no %PDF header)", "damaged")
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ReadError(f"{name} is encrypted: decrypt it first (e.g. qpdf --decrypt)", "encrypted") from exc
        raise ReadError(f"{name} is a damaged PDF: {exc}", "damaged") from exc
    try:
        pages: list[tuple[list[_Seg], list[_Table], float, float]] = []
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                pages.append(_page(page, index + 1))
            finally:
                page.close()
        outline = _outline(pdf)
        title = (pdf.get_metadata_value("Title") or "").strip() if hasattr(pdf, "get_metadata_value") else ""
    except pdfium.PdfiumError as exc:
        raise ReadError(f"{name} is a damaged PDF: {exc}", "damaged") from exc
    finally:
        pdf.close()
    if not any(s.text.strip() for segs, tables, _, _ in pages for s in segs) and not any(t for _, t, _, _ in pages):
        raise ReadError(f"{name} has no text layer: run OCR on it first (e.g. ocrmypdf)", "no text layer")
    _drop_furniture(pages)
    return _build(pages, outline, title)


# ---------------------------------------------------------------- one page


def _page(page: Any, number: int) -> tuple[list[_Seg], list[_Table], float, float]:
    import pypdfium2.raw as raw

    width, height = page.get_size()
    textpage = page.get_textpage()
    try:
        chars = _chars(raw, textpage.raw, height)
    finally:
        textpage.close()
    tables = _tables(page, number, height, chars)
    inside = [
        any(t.x0 - 1 <= c[1] <= t.x1 + 1 and t.y0 - 1 <= (c[2] + c[4]) / 2 <= t.y1 + 1 for t in tables) for c in chars
    ]
    chars = [c for c, hidden in zip(chars, inside) if not hidden] if tables else chars
    return _segments(chars, number), tables, width, height


# a character: (text, x0, y0, x1, y1, baseline, size, bold) in top-left coordinates; "\n" ends a line
_Char = tuple[str, float, float, float, float, float, float, bool]


def _chars(raw: Any, tp: Any, height: float) -> list[_Char]:
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    ox, oy = ctypes.c_double(), ctypes.c_double()
    loose = raw.FS_RECTF()
    buf = ctypes.create_string_buffer(256)
    flags = ctypes.c_int()
    box_args = (ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom), ctypes.byref(top))
    origin_args = (ctypes.byref(ox), ctypes.byref(oy))
    loose_arg, flags_arg = ctypes.byref(loose), ctypes.byref(flags)
    unicode, generated, char_box, loose_box = (
        raw.FPDFText_GetUnicode,
        raw.FPDFText_IsGenerated,
        raw.FPDFText_GetCharBox,
        raw.FPDFText_GetLooseCharBox,
    )
    origin, font_size, font_info, font_weight = (
        raw.FPDFText_GetCharOrigin,
        raw.FPDFText_GetFontSize,
        raw.FPDFText_GetFontInfo,
        raw.FPDFText_GetFontWeight,
    )
    fonts: dict[bytes, bool] = {}
    out: list[_Char] = []
    for i in range(raw.FPDFText_CountChars(tp)):
        code = unicode(tp, i)
        ch = chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
        if ch in "\r\n":
            if ch == "\n" or not out or out[-1][0] != "\n":
                out.append(("\n", 0, 0, 0, 0, 0, 0, False))
            continue
        if ch == " " and generated(tp, i):
            out.append((" ", math.nan, 0, math.nan, 0, math.nan, 0, False))
            continue
        char_box(tp, i, *box_args)
        x0, x1 = left.value, right.value
        if loose_box(tp, i, loose_arg):  # advance-wide: the glyphs of a word touch
            x0, x1 = loose.left, loose.right
        origin(tp, i, *origin_args)
        font_info(tp, i, buf, 256, flags_arg)
        font = buf.value
        bold = fonts.get(font)
        if bold is None:
            weight = font_weight(tp, i)
            bold = fonts[font] = weight >= 600 or bool(
                BOLD_NAME.search(font.decode("latin-1")) or flags.value & 0x40000
            )
        out.append((ch, x0, height - top.value, x1, height - bottom.value, height - oy.value, font_size(tp, i), bold))
    return out


def _segments(chars: list[_Char], page: int) -> list[_Seg]:
    segs: list[_Seg] = []
    cur: list[_Char] = []

    def close() -> None:
        body = [c for c in cur if not math.isnan(c[1]) and c[0] != "\n"]
        text = "".join(c[0] for c in cur).strip()
        if body and text:
            sizes = Counter(round(c[6] * 2) / 2 for c in body if not c[0].isspace())
            size = sizes.most_common(1)[0][0] if sizes else body[0][6]
            bold = sum(c[7] for c in body if not c[0].isspace()) * 2 > sum(1 for c in body if not c[0].isspace())
            segs.append(
                _Seg(
                    text,
                    min(c[1] for c in body),
                    min(c[2] for c in body),
                    max(c[3] for c in body),
                    max(c[4] for c in body),
                    Counter(round(c[5], 1) for c in body).most_common(1)[0][0],
                    size,
                    bold,
                    page,
                )
            )
        cur.clear()

    last: _Char | None = None
    for c in chars:
        if c[0] == "\n":
            close()
            last = None
            continue
        if math.isnan(c[1]):  # a generated space
            if cur:
                cur.append(c)
            continue
        if last is not None and not c[0].isspace():
            size = max(c[6], last[6], 1.0)
            if abs(c[5] - last[5]) > 0.5 * size or c[1] < last[1] - size or c[1] - last[3] > GAP_SIZES * size:
                close()
        if c[0].isspace() and not cur:
            continue
        cur.append(c)
        if not c[0].isspace():
            last = c
    close()
    return segs


def _tables(page: Any, number: int, height: float, chars: list[_Char]) -> list[_Table]:
    """Tables from ruling lines (see the module)."""
    import pypdfium2.raw as raw

    rules: list[tuple[float, float, float, float, bool]] = []  # x0, y0, x1, y1 (top-left), horizontal
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=2):
        left, bottom, right, top = obj.get_bounds()
        w, h = right - left, top - bottom
        if h <= RULE_THICKNESS and w >= 10:
            rules.append((left, height - top, right, height - bottom, True))
        elif w <= RULE_THICKNESS and h >= 6:
            rules.append((left, height - top, right, height - bottom, False))
    if not 3 <= len(rules) <= MAX_RULES:
        return []
    parent = list(range(len(rules)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(rules):
        for j in range(i + 1, len(rules)):
            b = rules[j]
            touch = a[0] - 2 <= b[2] and b[0] - 2 <= a[2] and a[1] - 2 <= b[3] and b[1] - 2 <= a[3]
            # rules across only (booktabs): horizontal rules of one width, near one another
            stacked = (
                a[4] and b[4] and abs(a[0] - b[0]) <= 3 and abs(a[2] - b[2]) <= 3 and abs(a[1] - b[1]) <= STACKED_RULES
            )
            if touch or stacked:
                parent[find(i)] = find(j)
    groups: dict[int, list[tuple[float, float, float, float, bool]]] = {}
    for i, rule in enumerate(rules):
        groups.setdefault(find(i), []).append(rule)
    tables = []
    for group in groups.values():
        hs = _distinct(sorted((r[1] + r[3]) / 2 for r in group if r[4]))
        vs = _distinct(sorted((r[0] + r[2]) / 2 for r in group if not r[4]))
        if len(hs) < 2 or (len(vs) < 2 and len(hs) < 3):
            continue
        x0, x1 = min(r[0] for r in group), max(r[2] for r in group)
        y0, y1 = min(r[1] for r in group), max(r[3] for r in group)
        cells = [
            c
            for c in chars
            if c[0] != "\n" and not math.isnan(c[1]) and x0 <= c[1] and c[3] <= x1 + 1 and y0 <= (c[2] + c[4]) / 2 <= y1
        ]
        if not cells:
            continue
        table = _Table(number, x0, y0, x1, y1)
        columns = vs if len(vs) >= 2 else _gaps(cells)
        table.rows = _cells(cells, hs, columns, grid=len(vs) >= 2)
        if len(table.rows) >= 2 and len(columns) >= 3:  # two columns at least
            tables.append(table)
    return tables


def _distinct(values: list[float], tolerance: float = 2.0) -> list[float]:
    out: list[float] = []
    for v in values:
        if not out or v - out[-1] > tolerance:
            out.append(v)
    return out


def _gaps(cells: list[_Char]) -> list[float]:
    """Column boundaries of a table without vertical rules: gaps in the characters' x coverage
    wider than the type size."""
    spans = sorted((c[1], c[3], c[6]) for c in cells if not c[0].isspace())
    bounds = [spans[0][0] - 1]
    right = spans[0][1]
    for x0, x1, size in spans[1:]:
        if x0 - right > size:
            bounds.append((x0 + right) / 2)
        right = max(right, x1)
    return [*bounds, right + 1]


def _cells(chars: list[_Char], hs: list[float], vs: list[float], grid: bool) -> list[list[str]]:
    """The rows of a table's text. Without vertical rules each baseline is a row. With them
    each band between horizontal rules is one, unless its first column holds several lines
    and every other column starts on its first line (rows drawn without rules between them):
    then each line of the first column starts a row, and the other columns' lines (a cell
    wrapped over lines) join the row above them."""
    ncols = len(vs) - 1
    cells: dict[tuple[int, int], list[_Char]] = {}
    for c in chars:
        mid_y, mid_x = (c[2] + c[4]) / 2, (c[1] + c[3]) / 2
        band = sum(1 for h in hs if h < mid_y) - 1
        col = sum(1 for v in vs if v < mid_x) - 1
        if 0 <= col < ncols:
            cells.setdefault((band, col), []).append(c)
    rows: dict[tuple[int, float], list[list[_Char]]] = {}
    for band in sorted({b for b, _ in cells}):
        lines = {
            col: sorted({round(c[5]) for c in cells[band, col] if not c[0].isspace()})
            for col in range(ncols)
            if (band, col) in cells
        }
        starts = lines.get(0, [])
        anchored = not grid or (
            len(starts) > 1 and all(abs(found[0] - starts[0]) <= 1 for found in lines.values() if found)
        )
        for col in lines:
            for c in cells[band, col]:
                base = round(c[5])
                if not grid:
                    key = float(base)
                elif anchored:
                    key = float(max((s for s in starts if s <= base + 1), default=starts[0]))
                else:
                    key = 0.0
                rows.setdefault((band, key), [[] for _ in range(ncols)])[col].append(c)
    out = [[_cell_text(cell) for cell in rows[key]] for key in sorted(rows)]
    return [r for r in out if any(r)]


def _cell_text(chars: list[_Char]) -> str:
    lines: dict[float, list[_Char]] = {}
    for c in chars:
        lines.setdefault(round(c[5]), []).append(c)
    parts = []
    for base in sorted(lines):
        line = sorted(lines[base], key=lambda c: c[1])
        text = ""
        prev: _Char | None = None
        for c in line:
            if prev is not None and c[1] - prev[3] > 0.15 * max(c[6], 1.0) and not text.endswith(" "):
                text += " "
            text += c[0]
            prev = c
        parts.append(text)
    return inline(" ".join(parts))


# ---------------------------------------------------------------- across pages


def _drop_furniture(pages: list[tuple[list[_Seg], list[_Table], float, float]]) -> None:
    """Removes running headers and footers and page numbers (see the module), in place."""
    keys: list[set[tuple[str, int]]] = []
    slots: Counter[tuple[str, int]] = Counter()
    for segs, _, _, height in pages:
        keys.append({_key(s) for s in segs if _in_margin(s, height)})
        slots.update(_edge_slots(segs, height))
    counts = Counter(k for page_keys in keys for k in page_keys)
    need = max(2, math.ceil(len(pages) / 2))
    slot_need = max(2, math.ceil(len(pages) * 0.4))
    for segs, _, _, height in pages:
        edges = {slot for slot in _edge_slots(segs, height) if slots[slot] >= slot_need}
        segs[:] = [
            s
            for s in segs
            if not (
                _in_margin(s, height)
                and (
                    counts[_key(s)] >= need
                    or PAGE_NUMBER.match(_digits(s.text))
                    or ("top", round(s.base / 2)) in edges
                    or ("bottom", round(s.base / 2)) in edges
                )
            )
        ]


def _edge_slots(segs: list[_Seg], height: float) -> set[tuple[str, int]]:
    """The baselines of a page's top line and bottom line when they sit in the margin zone set
    apart from the text next to them (over three type sizes): where running heads and feet whose
    text changes from page to page (a section title) sit."""
    slots: set[tuple[str, int]] = set()
    bases = sorted({round(s.base, 1) for s in segs})
    if len(bases) < 2:
        return slots
    size = max((s.size for s in segs), default=10.0)
    sizes = {round(s.base, 1): s.size for s in segs}
    top, below = bases[0], bases[1]
    if top <= height * MARGIN_ZONE and below - top > EDGE_GAP * sizes[top]:
        slots.add(("top", round(top / 2)))
    bottom, above = bases[-1], bases[-2]
    if bottom >= height * (1 - MARGIN_ZONE) and bottom - above > EDGE_GAP * min(sizes[bottom], size):
        slots.add(("bottom", round(bottom / 2)))
    return slots


def _digits(text: str) -> str:
    return re.sub(r"[0-9]+", "#", inline(text))


def _key(seg: _Seg) -> tuple[str, int]:
    return _digits(seg.text).lower(), round(seg.base / 4)


def _in_margin(seg: _Seg, height: float) -> bool:
    return seg.y1 <= height * MARGIN_ZONE or seg.y0 >= height * (1 - MARGIN_ZONE)


def _order(segs: list[_Seg], tables: list[_Table]) -> list[_Seg | _Table]:
    """Reading order of one page (see the module)."""
    by_base: dict[int, list[_Seg]] = {}
    for s in segs:
        by_base.setdefault(round(s.base / 2), []).append(s)
    gaps: list[tuple[float, float]] = []
    for line in by_base.values():
        line.sort(key=lambda s: s.x0)
        gaps += [(a.x1, b.x0) for a, b in zip(line, line[1:]) if b.x0 - a.x1 > GAP_SIZES * max(a.size, 1.0)]
    gutters: list[list[float]] = []  # [left, right, lines]: the x range free on every line that has the gap
    for left, right in sorted(gaps, key=lambda g: g[1] - g[0]):
        for g in gutters:
            if max(g[0], left) < min(g[1], right):
                g[0], g[1], g[2] = max(g[0], left), min(g[1], right), g[2] + 1
                break
        else:
            gutters.append([left, right, 1])
    centres = sorted((g[0] + g[1]) / 2 for g in gutters if g[2] >= 3)
    items: list[_Seg | _Table] = [*segs, *tables]
    for item in items:
        if centres:
            crosses = any(item.x0 < c < item.x1 for c in centres)
            column = sum(1 for c in centres if c <= item.x0)
        else:
            crosses, column = False, 0
        if isinstance(item, _Seg):
            item.spanning, item.column = crosses, column
    items.sort(key=lambda i: (i.y0, i.x0))
    out: list[_Seg | _Table] = []
    band: list[_Seg | _Table] = []
    for item in items:
        spanning = (
            item.spanning if isinstance(item, _Seg) else any(item.x0 < c < item.x1 for c in centres)
        ) or not centres
        if spanning and centres:
            out += sorted(band, key=_band_key(centres))
            band = []
            out.append(item)
        else:
            band.append(item)
    out += sorted(band, key=_band_key(centres))
    return out


def _band_key(centres: list[float]) -> Any:
    return lambda i: (sum(1 for c in centres if c <= i.x0), i.y0, i.x0)


@dataclass
class _Para:
    segs: list[_Seg]

    @property
    def text(self) -> str:
        out = ""
        for s in self.segs:
            t = s.text.strip()
            if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
                out = out[:-1] + t
            else:
                out = f"{out} {t}" if out else t
        return out

    def bbox(self) -> tuple[float, float, float, float]:
        return (
            round(min(s.x0 for s in self.segs), 2),
            round(min(s.y0 for s in self.segs), 2),
            round(max(s.x1 for s in self.segs), 2),
            round(max(s.y1 for s in self.segs), 2),
        )


def _paragraphs(ordered: list[_Seg | _Table]) -> list[_Para | _Table]:
    out: list[_Para | _Table] = []
    for item in ordered:
        if isinstance(item, _Table):
            out.append(item)
            continue
        prev = out[-1] if out and isinstance(out[-1], _Para) else None
        last = prev.segs[-1] if prev else None
        if (
            last is not None
            and last.column == item.column
            and last.spanning == item.spanning
            and abs(last.size - item.size) < 0.6
            and last.bold == item.bold
            and 0 < item.base - last.base <= PARAGRAPH_SIZES * max(item.size, 1.0)
        ):
            assert prev is not None
            prev.segs.append(item)
        else:
            out.append(_Para([item]))
    return out


def _outline(pdf: Any) -> dict[int, list[tuple[str, int]]]:
    """Outline titles by 1-based page: ``[(normalised title, level)]``."""
    found: dict[int, list[tuple[str, int]]] = {}
    try:
        for item in pdf.get_toc(max_depth=6):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = _norm(item.get_title() or "")
            if index is not None and title:
                found.setdefault(index + 1, []).append((title, item.level + 1))
    except Exception:  # noqa: BLE001 - a broken outline is no outline; the text is still read
        return {}
    return found


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": "'", "\u0300": None})


def _norm(text: str) -> str:
    """Text compared with outline titles: one line, case folded, typographic quotes plain."""
    return inline(text.translate(_QUOTES)).casefold()


def _heading_style(p: _Para, body: float, body_bold: bool) -> tuple[float, bool] | None:
    """``(size, bold)`` when a paragraph reads as a heading (see the module), else None."""
    size, bold = p.segs[0].size, p.segs[0].bold
    if len(p.text) > 200 or len(p.segs) > 3:
        return None
    if size >= body * HEADING_RATIO:
        return size, bold
    if bold and not body_bold and size >= body * BOLD_HEADING_RATIO and len(p.segs) <= 2:
        return size, bold
    return None


def _build(
    pages: list[tuple[list[_Seg], list[_Table], float, float]], outline: dict[int, list[tuple[str, int]]], title: str
) -> ReadDocument:
    paras_by_page = [_paragraphs(_order(segs, tables)) for segs, tables, _, _ in pages]
    sizes: Counter[float] = Counter()
    bold_chars = 0
    total = 0
    for paras in paras_by_page:
        for p in paras:
            if isinstance(p, _Para):
                for s in p.segs:
                    n = len(s.text)
                    sizes[s.size] += n
                    total += n
                    bold_chars += n if s.bold else 0
    body = sizes.most_common(1)[0][0] if sizes else 10.0
    body_bold = bold_chars * 2 > total
    styles: set[tuple[float, bool]] = set()  # (size, bold) of the paragraphs read as headings
    for paras in paras_by_page:
        for p in paras:
            if isinstance(p, _Para) and not outline:
                style = _heading_style(p, body, body_bold)
                if style is not None:
                    styles.add(style)
    ranks = sorted(styles, key=lambda st: (-st[0], not st[1]))  # larger first; bold before regular
    out = TextBuilder()
    first_heading = ""
    for number, paras in enumerate(paras_by_page, 1):
        titles = list(outline.get(number, []))
        for p in paras:
            if isinstance(p, _Table):
                box = (round(p.x0, 2), round(p.y0, 2), round(p.x1, 2), round(p.y1, 2))
                out.table(p.rows, page=p.page, bbox=box)
                continue
            text = LEADERS.sub(" ", p.text).strip()
            where: dict[str, Any] = {"page": number, "bbox": p.bbox()}
            level = None
            if outline:
                key = _norm(text)
                bare = NUMBERING.sub("", key)
                match = next((t for t in titles if t[0] in (key, bare)), None)
                if match is not None:
                    titles.remove(match)
                    level = match[1]
            elif len(text) <= 200:
                style = _heading_style(p, body, body_bold)
                if style is not None:
                    level = ranks.index(style) + 1
            if level is not None:
                first_heading = first_heading or inline(text)
                out.heading(text, level, **where)
            elif CAPTION.match(text):
                out.paragraph(text, "caption", **where)
            else:
                out.paragraph(text, **where)
    return out.build("pdf", title or first_heading or None)
