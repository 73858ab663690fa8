"""chunkforge: native-accelerated text chunking for retrieval-augmented generation.

Tokenize once with the embedding model's own tokenizer, cut on that offset map,
and return chunks whose ``start``/``end`` index the source ``str`` exactly.

>>> import chunkforge
>>> chunks = chunkforge.RecursiveChunker(max_tokens=128).chunk("Some text. More text.")
>>> chunks[0].text
'Some text. More text.'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _native
from .chunk import Chunk, ChunkBatch, Chunks
from .chunkers import (
    BaseChunker,
    BatchSpans,
    Chunker,
    CodeChunker,
    ContextAwareChunker,
    CountedChunker,
    HierarchicalChunker,
    LateChunker,
    LateChunks,
    LateTokens,
    MarkdownChunker,
    RecursiveChunker,
    SemanticChunker,
    SentenceChunker,
    Spans,
    TokenChunker,
    language_for_path,
)
from .errors import ArgumentError, ArgumentTypeError, ChunkforgeError, DatasetError, InputError
from .represent import context_prompt, contextualize, with_embed_text
from .tokenizer import Encoding, Tokenizer

if TYPE_CHECKING:  # the lazy names below, as their classes and modules for type checkers and editors
    from . import bulk, encoder, eval, index, integrations  # noqa: F401
    from .encoder import Encoder, TokenEmbeddings, TruncationWarning
    from .index import Hit, Index, Passage, Payload

_ENCODER_NAMES = ("Encoder", "TokenEmbeddings", "TruncationWarning")
_INDEX_NAMES = ("Hit", "Index", "Passage", "Payload")
# submodules with dependencies of their own, imported on first use (``chunkforge.bulk.run``)
_SUBMODULES = ("bulk", "encoder", "eval", "index", "integrations")


def __getattr__(name: str) -> object:
    """Imports the encoder (and onnxruntime) on first use of ``chunkforge.Encoder``,
    the index (hnswlib, bm25s, pyarrow) on first use of ``chunkforge.Index``, and the
    submodules ``bulk``, ``eval``, ``index``, ``integrations`` on first use."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in _INDEX_NAMES:
        from . import index

        return getattr(index, name)
    if name in _ENCODER_NAMES:
        from . import encoder

        return getattr(encoder, name)
    raise AttributeError(f"module 'chunkforge' has no attribute {name!r}")


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
    "ArgumentError",
    "ArgumentTypeError",
    "BaseChunker",
    "BatchSpans",
    "Chunk",
    "Chunker",
    "ChunkBatch",
    "ChunkforgeError",
    "Chunks",
    "CodeChunker",
    "ContextAwareChunker",
    "CountedChunker",
    "DatasetError",
    "Encoder",
    "Encoding",
    "HierarchicalChunker",
    "Hit",
    "Index",
    "InputError",
    "LateChunker",
    "LateChunks",
    "LateTokens",
    "MarkdownChunker",
    "Passage",
    "Payload",
    "RecursiveChunker",
    "SemanticChunker",
    "SentenceChunker",
    "Spans",
    "TokenEmbeddings",
    "TokenChunker",
    "Tokenizer",
    "TruncationWarning",
    "context_prompt",
    "contextualize",
    "language_for_path",
    "split_sentences",
    "with_embed_text",
]
__version__ = "0.1.0"
