"""Chunks sized by any token counter: a ``str -> int`` callable or a tiktoken encoding, for
teams that embed with a provider whose tokenizer is not a ``tokenizer.json``.

The splitting runs in Python and calls the counter on every candidate chunk, so it is far
slower than the native chunkers (``benches/results/counted.md``); offsets are exact as
everywhere (``text[c.start:c.end] == c.text``).

>>> from chunkforge.chunkers.counted import CountedChunker
>>> [c.text for c in CountedChunker(len, max_tokens=12).chunk("one two. three four five.")]
['one two.', 'three four', 'five.']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._checks import check_int
from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError, ArgumentTypeError
from ._base import BatchSpans, Spans, batch_spans_of, rebuild, spans_of

SEPARATORS = ("\n\n", "\n", ". ", "? ", "! ", " ")
"""Where a counter's chunks are cut, coarsest first (then between characters)."""


def as_counter(counter: Any) -> Callable[[str], int]:
    """A ``str -> int`` counter from a callable, or from a tiktoken ``Encoding`` (anything
    with ``encode``; special-token text counts as plain text); TypeError naming ``counter``.

    >>> as_counter(len)("four")
    4
    """
    encode = getattr(counter, "encode", None)
    if callable(encode) and hasattr(counter, "n_vocab"):  # a tiktoken Encoding

        def count(text: str) -> int:
            return len(encode(text, disallowed_special=()))

        return count
    if callable(counter):
        return counter  # type: ignore[no-any-return]
    raise ArgumentTypeError(
        f"must be a callable str -> int or a tiktoken Encoding, not {type(counter).__name__}", param="counter"
    )


class CountedChunker:
    """:class:`~chunkforge.RecursiveChunker`'s way of cutting (the coarsest separator that makes
    pieces fit, then neighbours merged greedily up to the limit), sized by ``counter``: chunks
    of at most ``max_tokens`` by its count, trimmed of whitespace; consecutive chunks share
    whole trailing pieces of at most ``overlap`` tokens. A piece no separator splits that still
    does not fit is cut between characters.

    >>> words = CountedChunker(lambda text: len(text.split()), max_tokens=3)
    >>> [(c.text, c.token_count) for c in words.chunk("One two three four. Five six.")]
    [('One two three', 3), ('four. Five six.', 3)]
    """

    def __init__(
        self, counter: Any, max_tokens: int, *, overlap: int = 0, separators: Sequence[str] = SEPARATORS
    ) -> None:
        self.counter = counter
        self._count = as_counter(counter)
        self.max_tokens = check_int("max_tokens", max_tokens, 1)
        self.overlap = check_int("overlap", overlap, 0)
        if self.overlap >= self.max_tokens:
            raise ArgumentError(f"({overlap}) must be smaller than max_tokens ({max_tokens})", param="overlap")
        if isinstance(separators, str) or not all(isinstance(s, str) and s for s in separators):
            raise ArgumentTypeError("must be a list of non-empty str", param="separators")
        self.separators = tuple(separators)

    def chunk(self, text: str) -> Chunks:
        """Chunks one document."""
        return Chunks(counted_chunks(text, self._count, self.max_tokens, self.overlap, self.separators))

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str]) -> list[list[Chunk]]:
        """Chunks many documents, in input order (one after the other: the counter is Python)."""
        return ChunkBatch(self.chunk(text) for text in texts)

    def spans(self, text: str) -> Spans:
        """Chunk spans of one document as numpy columns."""
        return spans_of(self.chunk(text))

    def spans_batch(self, texts: Iterable[str]) -> BatchSpans:
        """Chunk spans of many documents as numpy columns."""
        return batch_spans_of(self.chunk_batch(texts))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its parameters (a tiktoken encoding pickles by name)."""
        params = {"counter": self.counter, "max_tokens": self.max_tokens, "overlap": self.overlap}
        return (rebuild, (CountedChunker, {**params, "separators": self.separators}))

    def __repr__(self) -> str:
        return f"CountedChunker({self.counter!r}, max_tokens={self.max_tokens}, overlap={self.overlap})"


def counted_chunks(
    text: str, count: Callable[[str], int], size: int, overlap: int, separators: Sequence[str] = SEPARATORS
) -> list[Chunk]:
    """Chunks of ``text`` of at most ``size`` by ``count`` (see :class:`CountedChunker`).

    >>> [c.text for c in counted_chunks("one two. three four five.", len, 12, 0)]
    ['one two.', 'three four', 'five.']
    """

    def measure(start: int, end: int) -> int:  # what the chunk would count, trimmed
        return count(text[start:end].strip())

    pieces = _fitting_pieces(text, 0, len(text), measure, size, tuple(separators))
    spans = []
    i = 0
    while i < len(pieces):
        j = i + 1
        while j < len(pieces) and measure(pieces[i][0], pieces[j][1]) <= size:
            j += 1
        spans.append((pieces[i][0], pieces[j - 1][1]))
        if j == len(pieces):
            break
        # the next chunk starts at the earliest piece whose tail fits the overlap and leaves room for piece j
        i += 1
        while i < j and not (
            measure(pieces[i][0], pieces[j - 1][1]) <= overlap and measure(pieces[i][0], pieces[j][1]) <= size
        ):
            i += 1
    chunks: list[Chunk] = []
    for start, end in spans:
        piece = text[start:end]
        start, end = start + len(piece) - len(piece.lstrip()), end - (len(piece) - len(piece.rstrip()))
        if start < end:
            chunks.append(Chunk(text[start:end], start, end, count(text[start:end]), len(chunks)))
    return chunks


def _fitting_pieces(
    text: str, start: int, end: int, measure: Callable[[int, int], int], size: int, separators: tuple[str, ...]
) -> list[tuple[int, int]]:
    """``[start, end)`` cut after the coarsest separator it holds, recursively, into pieces that fit."""
    if measure(start, end) <= size:
        return [(start, end)]
    k = next((k for k, sep in enumerate(separators) if text.find(sep, start, end) != -1), None)
    if k is None:
        return [(i, i + 1) for i in range(start, end)]
    separator = separators[k]
    pieces, a = [], start
    while (found := text.find(separator, a, end)) != -1:
        pieces.extend(_fitting_pieces(text, a, found + len(separator), measure, size, separators[k + 1 :]))
        a = found + len(separator)
    if a < end:
        pieces.extend(_fitting_pieces(text, a, end, measure, size, separators[k + 1 :]))
    return pieces
