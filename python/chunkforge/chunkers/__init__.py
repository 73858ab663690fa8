"""The chunkers: one module per kind, sharing :class:`BaseChunker`."""

from ._base import BaseChunker, BatchSpans, Spans
from .recursive import RecursiveChunker
from .sentence import SentenceChunker
from .token import TokenChunker

__all__ = ["BaseChunker", "BatchSpans", "RecursiveChunker", "SentenceChunker", "Spans", "TokenChunker"]
