"""Fixed token windows."""

from __future__ import annotations

from typing import Any

from .. import _native
from ._base import BaseChunker


class TokenChunker(BaseChunker):
    """Windows of ``max_tokens`` tokens with stride ``max_tokens - overlap``,
    cut on token boundaries. A window whose text would re-encode to more than
    ``max_tokens`` tokens (it starts inside a word) is shortened, never exceeded.

    >>> from chunkforge import TokenChunker
    >>> [c.text for c in TokenChunker(max_tokens=3).chunk("one two three four five")]
    ['one two three', 'four five']
    """

    def __init__(self, tokenizer: Any = None, max_tokens: int | None = None, *, overlap: int = 0) -> None:
        super().__init__(tokenizer, max_tokens, overlap)
        self._native = _native.Chunker(self.tokenizer._native, "token", self.max_tokens, self.overlap)
