"""Structure-aware chunking of Markdown, reStructuredText and AsciiDoc."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _native
from .._io import SYNTAXES, syntax_for_path, syntax_named  # noqa: F401  (syntax_for_path: the one rule, re-exported)
from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError
from ..tokenizer import _as_list, check_threads
from ._base import BaseChunker, BatchSpans, Spans, check_min_tokens

KINDS = ("text", "heading", "table", "code", "list", "quote", "html")


class MarkdownChunker(BaseChunker):
    """Chunks along a document's structure: a chunk never crosses a section
    (every heading opens one), carries its ``heading_path`` and ``kind``, keeps
    a table's header (a table too long is split between rows, and every later
    piece repeats the header row in ``context``), keeps code blocks whole when
    they fit (else splits them at blank lines, then lines), and keeps a list
    with the paragraph that introduces it when the budget allows. A lone
    heading, and any chunk under ``min_tokens``, merges into a neighbour of its
    section when the union fits. ``overlap`` works as in
    :class:`RecursiveChunker`, within a section. Markdown is parsed by ``pulldown-cmark``
    (CommonMark + GFM tables; YAML front matter is metadata, not chunked);
    ``syntax="rst"`` / ``"asciidoc"`` recognise those formats' section titles.

    >>> from chunkforge import MarkdownChunker
    >>> doc = "# Guide\\n\\nIntro text.\\n\\n## Install\\n\\nRun pip.\\n"
    >>> [(c.heading_path, c.text) for c in MarkdownChunker(max_tokens=64).chunk(doc)]
    [(('Guide',), '# Guide\\n\\nIntro text.'), (('Guide', 'Install'), '## Install\\n\\nRun pip.')]
    """

    def __init__(
        self,
        tokenizer: Any = None,
        max_tokens: int | None = None,
        *,
        min_tokens: int = 0,
        overlap: int = 0,
        syntax: str = "markdown",
    ) -> None:
        super().__init__(tokenizer, max_tokens, overlap)
        self.min_tokens = check_min_tokens(min_tokens, self.max_tokens)
        known = syntax_named(syntax)
        if known is None:
            raise ArgumentError(f"must be one of {', '.join(SYNTAXES)}, not {syntax!r}", param="syntax")
        self.syntax = known
        self._native = _native.Chunker(
            self.tokenizer._native, known, self.max_tokens, overlap=self.overlap, min_tokens=self.min_tokens
        )

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks one document."""
        return self.chunk_batch([text], threads=1)[0]

    __call__ = chunk

    def _structured(self, texts: list[str], threads: int | None) -> list[tuple[np.ndarray, list[list[str]]]]:
        return self._native.structured_batch(texts, threads=check_threads(threads))

    def spans(self, text: str) -> Spans:
        """Chunk spans of one document as numpy columns."""
        rows = self._structured([text], 1)[0][0]
        return Spans(rows[:, 0], rows[:, 1], rows[:, 2])

    def spans_batch(self, texts: Iterable[str], threads: int | None = None) -> BatchSpans:
        """Chunk spans of many documents as numpy columns."""
        docs = self._structured(_as_list(texts), threads)
        rows = np.concatenate([r for r, _ in docs]) if docs else np.zeros((0, 7), np.int64)
        doc = np.repeat(np.arange(len(docs), dtype=np.int64), [len(r) for r, _ in docs])
        return BatchSpans(doc, rows[:, 0], rows[:, 1], rows[:, 2])

    def chunk_batch(self, texts: Iterable[str], threads: int | None = None) -> list[list[Chunk]]:
        """Chunks many documents in parallel (GIL released); output in input order."""
        texts = _as_list(texts)
        return self._chunks(texts, self._structured(texts, threads))

    # ---- the bulk job's seam (see BaseChunker.chunk_batch_ids)

    def chunk_batch_ids(
        self, texts: Iterable[str], *, threads: int | None = None
    ) -> tuple[list[list[Chunk]], list[list[np.ndarray]]]:
        """:meth:`chunk_batch` and each chunk's token ids from the tokenization it was sized on."""
        texts = _as_list(texts)
        docs = self._native.structured_batch_ids(texts, threads=check_threads(threads))
        chunks = self._chunks(texts, [(rows, sections) for rows, sections, _, _ in docs])
        token_ids = [
            [ids[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())] for _, _, ids, bounds in docs
        ]
        return chunks, token_ids

    @staticmethod
    def _chunks(texts: list[str], structured: list[tuple[np.ndarray, list[list[str]]]]) -> list[list[Chunk]]:
        """The Chunk lists of texts from the native rows and sections of ``structured_batch``."""
        out = ChunkBatch()
        for text, (rows, sections) in zip(texts, structured):
            paths = [tuple(p) for p in sections]
            out.append(
                Chunks(
                    Chunk(
                        text[s:e],
                        s,
                        e,
                        n,
                        i,
                        heading_path=paths[sec],
                        kind=KINDS[kind],
                        context=text[cs:ce] if cs >= 0 else None,
                    )
                    for i, (s, e, n, sec, kind, cs, ce) in enumerate(rows.tolist())
                )
            )
        return out

    def sections(self, text: str) -> list[tuple[int, int, tuple[str, ...]]]:
        """``(start, end, heading_path)`` of each section of ``text`` that holds chunks, in
        order (a section's span runs from its first chunk's start to its last one's end).

        >>> MarkdownChunker(max_tokens=64).sections("# A\\n\\nOne.\\n\\n## B\\n\\nTwo.")
        [(0, 9, ('A',)), (11, 21, ('A', 'B'))]
        """
        rows, paths = self._structured([text], 1)[0]
        out: list[tuple[int, int, tuple[str, ...]]] = []
        last = -1
        for s, e, _, sec in rows[:, :4].tolist():
            if sec == last:
                out[-1] = (out[-1][0], e, out[-1][2])
            else:
                out.append((s, e, tuple(paths[sec])))
            last = sec
        return out

    def _params(self) -> dict[str, Any]:
        return {**super()._params(), "min_tokens": self.min_tokens, "syntax": self.syntax}


SECTION_TOKENS = 1 << 30
"""``max_tokens`` of a chunker that only outlines sections (no section is ever split)."""


def sections(text: str, syntax: str | None, tokenizer: Any = None) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, heading_path)`` of the sections of ``text`` parsed as ``syntax``
    (see :meth:`MarkdownChunker.sections`); ``syntax=None`` (no known markup): the
    stripped text as one section without headings, none when it is blank.

    >>> sections("  Plain text.  ", None)
    [(2, 13, ())]
    """
    if syntax is None:
        stripped = text.strip()
        if not stripped:
            return []
        start = len(text) - len(text.lstrip())
        return [(start, start + len(stripped), ())]
    return _outliner(tokenizer, syntax).sections(text)


_OUTLINERS: dict[str, MarkdownChunker] = {}


def _outliner(tokenizer: Any, syntax: str) -> MarkdownChunker:
    """A section-outlining chunker; the default tokenizer's are kept, one per syntax."""
    if tokenizer is not None:
        return MarkdownChunker(tokenizer, max_tokens=SECTION_TOKENS, syntax=syntax)
    if syntax not in _OUTLINERS:
        _OUTLINERS[syntax] = MarkdownChunker(max_tokens=SECTION_TOKENS, syntax=syntax)
    return _OUTLINERS[syntax]
