"""Recursive separator splitting with greedy merging."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _native
from ..errors import ArgumentError, ArgumentTypeError
from ._base import BaseChunker, check_min_tokens


class RecursiveChunker(BaseChunker):
    """Splits at the coarsest separators that make pieces fit ``max_tokens``
    (blank lines, line breaks, sentence ends, clause punctuation, whitespace,
    then token boundaries), and merges neighbours greedily up to the limit.

    ``overlap`` reserves room: each chunk's new text takes at most
    ``max_tokens - overlap`` tokens, and every chunk after the first starts with
    whole trailing pieces (pieces, lines, sentences, clauses or words) of the
    previous one, at most ``overlap`` tokens and at least half of it when the
    previous chunk does not end in a word longer than that; ``min_tokens`` merges smaller chunks into a neighbour
    when the union fits; ``separators`` replaces the hierarchy with literal
    strings, coarsest first (each is kept at the end of the piece before it).

    >>> from chunkforge import RecursiveChunker
    >>> text = "Intro line.\\n\\nA second paragraph, longer than the first one."
    >>> [c.text for c in RecursiveChunker(max_tokens=8).chunk(text)]
    ['Intro line.', 'A second paragraph,', 'longer than the first one.']
    """

    def __init__(
        self,
        tokenizer: Any = None,
        max_tokens: int | None = None,
        *,
        overlap: int = 0,
        separators: Sequence[str] | None = None,
        min_tokens: int = 0,
    ) -> None:
        super().__init__(tokenizer, max_tokens, overlap)
        self.min_tokens = check_min_tokens(min_tokens, self.max_tokens)
        if separators is not None:
            if isinstance(separators, str) or not all(isinstance(s, str) for s in separators):
                raise ArgumentTypeError("must be a list of str", param="separators")
            if any(s == "" for s in separators):
                raise ArgumentError(
                    "must not contain an empty string (token boundaries are always the last resort)",
                    param="separators",
                )
            separators = list(separators)
        self.separators = separators
        self._native = _native.Chunker(
            self.tokenizer._native,
            "recursive",
            self.max_tokens,
            overlap=self.overlap,
            min_tokens=self.min_tokens,
            separators=separators,
        )

    def _params(self) -> dict[str, Any]:
        return {**super()._params(), "separators": self.separators, "min_tokens": self.min_tokens}
