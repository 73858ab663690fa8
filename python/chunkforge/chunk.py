"""The unit every chunker returns: a span of the source text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of a document.

    ``start``/``end`` are Python ``str`` indices into the source text, so
    ``text[chunk.start:chunk.end] == chunk.text`` always holds.
    ``token_count`` is the number of tokens of ``chunk.text`` encoded alone
    (no special tokens); ``index`` is the chunk's position in its document.

    Structure-aware chunkers also fill ``heading_path`` (the enclosing headings,
    outermost first), ``kind`` (``text``, ``table``, ``code``, ``list``, ...) and
    ``context`` (what the chunk's representation needs besides its own text: a
    table's header row, a method's class signature); hierarchical chunkers fill
    ``id`` (stable: derived from document id, span and level), ``parent_id``,
    ``level`` (0 = the largest) and ``children`` (ids). ``embed_text`` is the text
    the encoder sees when it differs from ``text`` (title, headings, context
    prepended: see :func:`chunkforge.with_embed_text`); offsets still index ``text``.

    >>> from chunkforge import RecursiveChunker
    >>> doc = "First paragraph.\\n\\nSecond one."
    >>> c = RecursiveChunker(max_tokens=4).chunk(doc)[1]
    >>> (c.text, c.start, c.end, c.token_count, c.index)
    ('Second one.', 18, 29, 3, 1)
    """

    text: str
    start: int
    end: int
    token_count: int
    index: int
    heading_path: tuple[str, ...] = ()
    kind: str = "text"
    context: str | None = None
    id: str | None = None
    parent_id: str | None = None
    level: int | None = None
    children: tuple[str, ...] = ()
    embed_text: str | None = None
