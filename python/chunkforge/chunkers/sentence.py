"""Sentences packed up to a token limit."""

from __future__ import annotations

from typing import Any

from .. import _native
from .._checks import check_int
from ._base import BaseChunker


class SentenceChunker(BaseChunker):
    """Packs whole sentences (see :func:`chunkforge.split_sentences`) up to
    ``max_tokens``; a sentence longer than the limit is split at clauses, then
    words, then tokens. ``overlap_sentences`` repeats that many trailing
    sentences of the previous chunk at the start of the next (fewer when not all
    fit beside the next new sentence; pieces of a split sentence carry none).

    >>> from chunkforge import SentenceChunker
    >>> text = "Dr. Smith arrived. He sat down. Then he left."
    >>> [c.text for c in SentenceChunker(max_tokens=10).chunk(text)]
    ['Dr. Smith arrived. He sat down.', 'Then he left.']
    """

    def __init__(self, tokenizer: Any = None, max_tokens: int | None = None, *, overlap_sentences: int = 0) -> None:
        super().__init__(tokenizer, max_tokens, 0)
        self.overlap_sentences = check_int("overlap_sentences", overlap_sentences, 0)
        self._native = _native.Chunker(
            self.tokenizer._native, "sentence", self.max_tokens, overlap_sentences=self.overlap_sentences
        )

    def _params(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer, "max_tokens": self.max_tokens, "overlap_sentences": self.overlap_sentences}
