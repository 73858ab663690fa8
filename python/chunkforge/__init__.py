"""chunkforge: native-accelerated text chunking for retrieval-augmented generation.

Tokenize once with the embedding model's own tokenizer, cut on that offset map,
and return chunks whose ``start``/``end`` index the source ``str`` exactly.

>>> import chunkforge
>>> chunks = chunkforge.RecursiveChunker(max_tokens=128).chunk("Some text. More text.")
>>> chunks[0].text
'Some text. More text.'
"""

from __future__ import annotations

from . import _native
from .chunk import Chunk
from .chunkers import BaseChunker, BatchSpans, RecursiveChunker, SentenceChunker, Spans, TokenChunker
from .tokenizer import Encoding, Tokenizer


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text`` as ``str`` indices.

    Unicode sentence boundaries (UAX #29) plus rules for documents: hard-wrapped
    lines do not end a sentence, abbreviations and initials do not either.

    >>> text = "Dr. Who came. It was 3.5 m tall!"
    >>> [text[s:e] for s, e in split_sentences(text)]
    ['Dr. Who came.', 'It was 3.5 m tall!']
    """
    return _native.split_sentences(text)


__all__ = [
    "BaseChunker",
    "BatchSpans",
    "Chunk",
    "Encoding",
    "RecursiveChunker",
    "SentenceChunker",
    "Spans",
    "TokenChunker",
    "Tokenizer",
    "split_sentences",
]
__version__ = "0.1.0"
