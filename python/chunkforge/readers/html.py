"""HTML into canonical Markdown, parsed by a real HTML5 parser: selectolax's Lexbor
(``chunkforge[html]``), which parses malformed markup as browsers do.

Kept: headings h1-h6, paragraphs and other block text, lists (nested, ``ol`` numbered),
tables (the ``thead`` row, else the first row, as the header; ``caption`` before),
``pre`` as fenced code, figure captions. Always left out: ``script``, ``style``,
``noscript``, ``template``, comments and the ``head`` (its ``title`` is the title).
``main_content=True`` (as a crawl needs) reads only ``<main>`` (or ``role="main"``, or the
one ``<article>``) when there is one, and leaves out ``nav``, ``header``, ``footer``,
``aside``, ``form``, hidden elements, the ARIA landmarks ``navigation``, ``banner``,
``contentinfo``, ``complementary``, ``search`` and elements whose class or id is one of
:data:`BOILERPLATE_NAMES` (menus, breadcrumbs, sidebars, cookie notices, share links,
DocBook's ``navheader``/``navfooter``).

Provenance: each block's character range in the source file's decoded text. Neither
Lexbor (through selectolax) nor html5lib reports source positions, so they are found by
aligning the parsed text nodes, in document order, with the text runs between the
source's tags (entities and ``\\r\\n`` decoded as the parser decodes them): a forward
search, hand-written because no maintained Python HTML5 parser exposes offsets.
"""

from __future__ import annotations

import bisect
import codecs
import html as html_entities
import re
from typing import Any

from .document import ReadDocument, ReadError, TextBuilder, inline

DROPPED = frozenset({"script", "style", "noscript", "template", "head", "-comment", "iframe", "object", "svg", "math"})
"""Elements never read."""
BOILERPLATE_TAGS = frozenset({"nav", "header", "footer", "aside", "form", "dialog", "button", "select"})
BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"})
BOILERPLATE_NAMES = re.compile(
    r"^(nav|navbar|navigation|navheader|navfooter|menu|menubar|breadcrumbs?|sidebar|side-bar|sidenav|"
    r"footer|site-footer|site-header|masthead|cookies?|cookie-(banner|notice|consent)|skip-link|skiplink|"
    r"share|sharing|social|related|related-posts|advert|advertisement|ads|pagination)$",
    re.I,
)
"""A class or id token marking navigation or boilerplate (with ``main_content=True``)."""
BLOCK_TAGS = frozenset(
    "address article aside blockquote body center details dd dialog div dl dt fieldset figure footer form "
    "header hgroup hr html li main menu nav ol p section summary ul caption figcaption legend".split()
)
HEADINGS = {f"h{n}": n for n in range(1, 7)}


def read(data: bytes, name: str, main_content: bool = False, **_: Any) -> ReadDocument:
    """The document of HTML source bytes (see the module)."""
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError as exc:
        from . import needs_extra

        raise needs_extra("html", name, "selectolax") from exc
    source = decode(data, name)
    tree = LexborHTMLParser(source)
    walker = _Walker(_Aligner(source), main_content)
    root = tree.body
    if main_content:
        root = _main_element(tree) or root
    try:
        if root is not None:
            walker.walk(root)
        walker.flush()
    except RecursionError:
        # nesting deeper than Python's recursion allows (hostile or generated markup): the
        # text alone, a paragraph per line, no structure or source ranges
        walker = _Walker(_Aligner(""), main_content)
        for line in (root.text(deep=True, separator="\n") if root is not None else "").splitlines():
            walker.out.paragraph(line)
    title_node = tree.head.css_first("title") if tree.head is not None else None
    title = inline(title_node.text(deep=True)) if title_node is not None else ""
    return walker.out.build("html", title or walker.first_h1)


def decode(data: bytes, name: str) -> str:
    """The source's text: by its BOM, else its ``<meta charset>``, else UTF-8, else
    windows-1252 (browsers' fallback). NUL bytes in the first 8 KiB (no UTF-16 BOM) mark a
    binary file, an error."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, "replace")
    if b"\x00" in data[:8192]:
        raise ReadError(f"{name} is a binary file, not HTML", "binary")
    declared = re.search(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_:.-]+)", data[:1024], re.I)
    encoding = "utf-8"
    if declared:
        label = declared.group(1).decode("ascii").lower()
        encoding = "cp1252" if label in ("iso-8859-1", "latin1", "latin-1", "us-ascii", "ascii") else label
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "utf-8"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def _main_element(tree: Any) -> Any:
    """The main content element: ``<main>``, ``[role=main]``, or the one ``<article>``."""
    found = tree.css_first("main") or tree.css_first('[role="main"]')
    if found is not None:
        return found
    articles = tree.css("article")
    return articles[0] if len(articles) == 1 else None


def _is_boilerplate(node: Any) -> bool:
    if node.tag in BOILERPLATE_TAGS:
        return True
    attrs = node.attributes
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    if (attrs.get("role") or "").lower() in BOILERPLATE_ROLES:
        return True
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".split()
    return any(BOILERPLATE_NAMES.match(n) for n in names)


# ---------------------------------------------------------------- source ranges

_MARKUP = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|xmp|iframe|noembed|noframes|noscript|plaintext)\b[^>]*>.*?(?:</\1\s*>|\Z)"
    r"|<[!?/]?[A-Za-z][^>]*(?:>|\Z)"
    r"|<![^>]*(?:>|\Z)",
    re.S | re.I,
)
_ENTITY = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[A-Za-z][A-Za-z0-9]{1,31};?)|\r\n?|\x00")
MAX_MISSES = 1000
"""Text nodes searched again from the start when not found ahead (text the parser moved, such
as text fostered out of a table); past this many a page's other misses stay unaligned, so
hostile markup costs no quadratic time."""


class _Aligner:
    """Maps the parser's text nodes back to the source: the source's text runs (between
    tags) decoded into one stream, with a piecewise map from stream offsets to source
    offsets; :meth:`locate` finds each node's text from where the last one ended."""

    def __init__(self, source: str) -> None:
        parts: list[str] = []
        # piece i: stream offset starts[i], source range (src[i], src_end[i]); literal pieces map 1:1
        self.starts: list[int] = []
        self.src: list[int] = []
        self.src_end: list[int] = []
        self.literal: list[bool] = []
        pos = 0
        last = 0
        for m in _MARKUP.finditer(source):
            pos = self._text(source, last, m.start(), parts, pos)
            last = m.end()
        self._text(source, last, len(source), parts, pos)
        self.stream = "".join(parts)
        self.cursor = 0
        self.misses = 0

    def _text(self, source: str, start: int, end: int, parts: list[str], pos: int) -> int:
        at = start
        for m in _ENTITY.finditer(source, start, end):
            raw = m.group()
            decoded = (
                "\n" if raw[0] == "\r" else "" if raw == "\x00" else html_entities.unescape(raw)
            )  # NUL: dropped in body text
            if decoded == raw:
                continue
            if m.start() > at:
                pos = self._piece(parts, pos, source[at : m.start()], at, m.start(), True)
            pos = self._piece(parts, pos, decoded, m.start(), m.end(), False)
            at = m.end()
        if end > at:
            pos = self._piece(parts, pos, source[at:end], at, end, True)
        return pos

    def _piece(self, parts: list[str], pos: int, text: str, s: int, e: int, literal: bool) -> int:
        parts.append(text)
        self.starts.append(pos)
        self.src.append(s)
        self.src_end.append(e)
        self.literal.append(literal)
        return pos + len(text)

    def _source(self, offset: int, end: bool) -> int:
        i = bisect.bisect_right(self.starts, offset) - 1
        if self.literal[i]:
            return self.src[i] + offset - self.starts[i] + (1 if end else 0)
        return self.src_end[i] if end else self.src[i]

    def locate(self, text: str) -> tuple[int, int] | None:
        """The source range of a text node's (stripped) text, searched from the last one found."""
        text = text.strip()
        if not text:
            return None
        at = self.stream.find(text, self.cursor)
        if at < 0:
            self.misses += 1
            if self.misses > MAX_MISSES:
                return None
            at = self.stream.find(text)  # the parser moved it (e.g. text fostered out of a table)
            if at < 0:
                return None
        else:
            self.cursor = at + len(text)
        return self._source(at, False), self._source(at + len(text) - 1, True)


# ---------------------------------------------------------------- the walk


class _Walker:
    def __init__(self, aligner: _Aligner, main_content: bool) -> None:
        self.aligner = aligner
        self.main_content = main_content
        self.out = TextBuilder()
        self.first_h1 = ""
        self._text: list[str] = []
        self._ranges: list[tuple[int, int]] = []

    def _skip(self, node: Any) -> bool:
        return node.tag in DROPPED or (self.main_content and _is_boilerplate(node))

    @staticmethod
    def _span(ranges: list[tuple[int, int]]) -> dict[str, int]:
        if not ranges:
            return {}
        return {"source_start": min(r[0] for r in ranges), "source_end": max(r[1] for r in ranges)}

    def flush(self, kind: str = "paragraph") -> None:
        text = "".join(self._text)
        if text.strip():
            self.out.paragraph(text, kind, **self._span(self._ranges))
        self._text, self._ranges = [], []

    def collect(self, node: Any, ranges: list[tuple[int, int]], skip: frozenset[str] = frozenset()) -> str:
        """The text of a subtree (dropped elements left out), its source ranges added to ``ranges``."""
        parts: list[str] = []
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                value = child.text_content or ""
                found = self.aligner.locate(value)
                if found:
                    ranges.append(found)
                parts.append(value)
            elif tag in skip or self._skip(child):
                continue
            elif tag == "br":
                parts.append("\n")
            else:
                block = tag in BLOCK_TAGS or tag in HEADINGS or tag in ("tr", "td", "th", "table", "pre")
                if block:
                    parts.append(" ")
                parts.append(self.collect(child, ranges, skip))
                if block:
                    parts.append(" ")
        return "".join(parts)

    def walk(self, node: Any) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                value = child.text_content or ""
                found = self.aligner.locate(value)
                if found:
                    self._ranges.append(found)
                self._text.append(value)
            elif self._skip(child):
                continue
            elif tag in HEADINGS:
                self.flush()
                ranges: list[tuple[int, int]] = []
                title = self.collect(child, ranges)
                if HEADINGS[tag] == 1 and not self.first_h1:
                    self.first_h1 = inline(title)
                self.out.heading(title, HEADINGS[tag], **self._span(ranges))
            elif tag == "pre":
                self.flush()
                ranges = []
                code = self.collect(child, ranges)
                self.out.code(code, _language(child), **self._span(ranges))
            elif tag in ("ul", "ol"):
                self.flush()
                ranges = []
                items: list[tuple[str, int, bool]] = []
                self._list(child, 0, items, ranges)
                self.out.items(items, **self._span(ranges))
            elif tag == "table":
                self.flush()
                self._table(child)
            elif tag in ("figcaption", "caption"):
                self.flush()
                self.walk(child)
                self.flush("caption")
            elif tag == "br":
                self._text.append("\n")
            elif tag in BLOCK_TAGS:
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.walk(child)

    def _list(self, node: Any, depth: int, items: list[tuple[str, int, bool]], ranges: list[tuple[int, int]]) -> None:
        numbered = node.tag == "ol"
        for child in node.iter(include_text=False):
            if self._skip(child):
                continue
            if child.tag in ("ul", "ol"):
                self._list(child, depth + 1, items, ranges)
                continue
            if child.tag != "li":
                items.append((self.collect(child, ranges), depth, numbered))
                continue
            items.append((self.collect(child, ranges, skip=frozenset({"ul", "ol"})), depth, numbered))
            for sub in child.iter(include_text=False):
                self._nested_lists(sub, depth + 1, items, ranges)

    def _nested_lists(
        self, node: Any, depth: int, items: list[tuple[str, int, bool]], ranges: list[tuple[int, int]]
    ) -> None:
        if self._skip(node):
            return
        if node.tag in ("ul", "ol"):
            self._list(node, depth, items, ranges)
            return
        for sub in node.iter(include_text=False):
            self._nested_lists(sub, depth, items, ranges)

    def _table(self, table: Any) -> None:
        ranges: list[tuple[int, int]] = []
        head: list[list[str]] = []
        rows: list[list[str]] = []
        for part in table.iter(include_text=False):
            if part.tag == "caption":
                caption_ranges: list[tuple[int, int]] = []
                text = self.collect(part, caption_ranges)
                self.out.paragraph(text, "caption", **self._span(caption_ranges))
            elif part.tag in ("thead", "tbody", "tfoot", "tr"):
                for tr in [part] if part.tag == "tr" else part.iter(include_text=False):
                    if tr.tag != "tr":
                        continue
                    cells: list[str] = []
                    for cell in tr.iter(include_text=False):
                        if cell.tag not in ("td", "th") or self._skip(cell):
                            continue
                        cells.append(self.collect(cell, ranges))
                        span = cell.attributes.get("colspan") or "1"
                        cells.extend([""] * (min(int(span), 100) - 1 if span.isdigit() and int(span) > 1 else 0))
                    (head if part.tag == "thead" and not head else rows).append(cells)
        self.out.table(head[:1] + rows if head else rows, **self._span(ranges))


def _language(pre: Any) -> str:
    for node in (pre, pre.css_first("code")):
        if node is None:
            continue
        for name in (node.attributes.get("class") or "").split():
            for prefix in ("language-", "lang-", "highlight-"):
                if name.startswith(prefix):
                    return name[len(prefix) :]
    return ""
