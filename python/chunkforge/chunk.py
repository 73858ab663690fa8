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
