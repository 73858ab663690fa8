"""The chunkers: one module per kind, sharing :class:`BaseChunker`; :mod:`.registry` names
them for the CLI, the bulk job and the evaluation."""

from ._base import BaseChunker, BatchSpans, Chunker, Spans
from .code import LANGUAGES, CodeChunker, language_for_path
from .context_aware import ContextAwareChunker
from .counted import CountedChunker
from .hierarchy import HierarchicalChunker, node_id
from .late import LateChunker, LateChunks, LateTokens
from .markdown import MarkdownChunker
from .recursive import RecursiveChunker
from .semantic import SemanticChunker
from .sentence import SentenceChunker
from .token import TokenChunker

__all__ = [
    "LANGUAGES",
    "BaseChunker",
    "BatchSpans",
    "Chunker",
    "CodeChunker",
    "ContextAwareChunker",
    "CountedChunker",
    "HierarchicalChunker",
    "LateChunker",
    "LateChunks",
    "LateTokens",
    "MarkdownChunker",
    "RecursiveChunker",
    "SemanticChunker",
    "SentenceChunker",
    "Spans",
    "TokenChunker",
    "language_for_path",
    "node_id",
]
