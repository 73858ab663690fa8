"""The chunkers: one module per kind, sharing :class:`BaseChunker`."""

from ._base import BaseChunker, BatchSpans, Chunker, Spans
from .code import LANGUAGES, CodeChunker, language_for_path
from .hierarchy import HierarchicalChunker, node_id
from .markdown import MarkdownChunker
from .recursive import RecursiveChunker
from .sentence import SentenceChunker
from .token import TokenChunker

__all__ = [
    "LANGUAGES",
    "BaseChunker",
    "BatchSpans",
    "Chunker",
    "CodeChunker",
    "HierarchicalChunker",
    "MarkdownChunker",
    "RecursiveChunker",
    "SentenceChunker",
    "Spans",
    "TokenChunker",
    "language_for_path",
    "node_id",
]
