"""Structure-aware chunking of Markdown, reStructuredText and AsciiDoc."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .. import _native
from ..chunk import Chunk, ChunkBatch, Chunks
from ..tokenizer import _as_list, check_threads
from ._base import BaseChunker, BatchSpans, Spans, check_int, check_min_tokens

KINDS = ("text", "heading", "table", "code", "list", "quote", "html")
SYNTAXES = ("markdown", "rst", "asciidoc")


def syntax_for_path(name: str) -> str | None:
    """The markup of a file from its name: ``markdown`` (``.md``), ``rst`` (``.rst``,
    and Sphinx's ``.rst.txt`` sources), ``asciidoc`` (``.adoc``, ``.txt``) or None.

    >>> syntax_for_path("guide.md"), syntax_for_path("api.rst.txt"), syntax_for_path("x.csv")
    ('markdown', 'rst', None)
    """
    lower = name.lower()
    if lower.endswith((".rst", ".rst.txt")):
        return "rst"
    if lower.endswith((".md", ".markdown")):
        return "markdown"
    if lower.endswith((".adoc", ".asciidoc", ".txt")):
        return "asciidoc"
    return None


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
        min_tokens: int = 0,
        overlap: int = 0,
        syntax: str = "markdown",
    ) -> None:
        super().__init__(tokenizer, max_tokens, overlap)
        self.min_tokens = check_min_tokens(min_tokens, self.max_tokens)
        if syntax not in SYNTAXES:
            raise ValueError(f"syntax must be one of {', '.join(SYNTAXES)}, not {syntax!r}")
        self.syntax = syntax
        self._native = _native.Chunker(
            self.tokenizer._native, syntax, self.max_tokens, overlap=self.overlap, min_tokens=self.min_tokens
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
        token_ids = [[ids[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())] for _, _, ids, bounds in docs]
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
                        text[s:e], s, e, n, i,
                        heading_path=paths[sec],
                        kind=KINDS[kind],
                        context=text[cs:ce] if cs >= 0 else None,
                    )
                    for i, (s, e, n, sec, kind, cs, ce) in enumerate(rows.tolist())
                )
            )
        return out

    def _params(self) -> dict[str, Any]:
        return {**super()._params(), "min_tokens": self.min_tokens, "syntax": self.syntax}
