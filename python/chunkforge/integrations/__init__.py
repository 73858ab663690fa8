"""Adapters for the frameworks users already work in; each module imports its
framework only when imported itself (``pip install "chunkforge[langchain]"``,
``"chunkforge[llamaindex]"``, ``"chunkforge[haystack]"``):

- :mod:`chunkforge.integrations.langchain`: ``ChunkforgeTextSplitter`` (a LangChain
  ``TextSplitter`` whose ``start_index`` comes from exact offsets) and
  ``ChunkforgeEmbeddings`` (LangChain ``Embeddings``);
- :mod:`chunkforge.integrations.llamaindex`: ``ChunkforgeNodeParser`` (nodes with exact
  ``start_char_idx``/``end_char_idx``; parent/child relationships from a
  :class:`~chunkforge.HierarchicalChunker`) and ``ChunkforgeEmbedding`` (``BaseEmbedding``);
- :mod:`chunkforge.integrations.haystack`: ``ChunkforgeDocumentSplitter``,
  ``ChunkforgeDocumentEmbedder`` and ``ChunkforgeTextEmbedder`` (Haystack components).
"""

from __future__ import annotations

from typing import Any

from .._config import from_config, to_config
from ..chunk import Chunk


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """What a chunk adds to its document's metadata: ``token_count``, and where set
    ``heading_path`` (a list), ``kind``, ``context``, and the tree's ``id``/``parent_id``/``level``."""
    meta: dict[str, Any] = {"token_count": chunk.token_count}
    if chunk.heading_path:
        meta["heading_path"] = list(chunk.heading_path)
        meta["kind"] = chunk.kind
    if chunk.context is not None:
        meta["context"] = chunk.context
    if chunk.id is not None:
        meta.update(chunk_id=chunk.id, parent_id=chunk.parent_id, level=chunk.level)
    return meta


def import_or_explain(module: str, extra: str) -> Any:
    """Imports ``module``, or raises ImportError saying which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f'this adapter needs {module.split(".")[0]}: pip install "chunkforge[{extra}]"') from exc


def default_chunker() -> Any:
    """``RecursiveChunker`` on the default model's tokenizer, sized to its window (254 tokens):
    what every adapter splits with by default, so that the default embedder never truncates."""
    from ..chunkers import RecursiveChunker
    from ..tokenizer import Tokenizer

    return RecursiveChunker(Tokenizer.default_model())


def check_chunker(chunker: Any) -> Any:
    """``chunker``, or :func:`default_chunker` for None; anything without ``chunk`` is refused."""
    if chunker is None:
        return default_chunker()
    if not callable(getattr(chunker, "chunk", None)):
        raise TypeError(f"chunker must be a chunkforge chunker, not {type(chunker).__name__}")
    return chunker


def check_encoder(encoder: Any) -> Any:
    """``encoder``, or ``Encoder.default()`` for None; anything without ``embed`` is refused."""
    if encoder is None:
        from ..encoder import Encoder

        return Encoder.default()
    if not callable(getattr(encoder, "embed", None)):
        raise TypeError(f"encoder must be a chunkforge.Encoder, not {type(encoder).__name__}")
    return encoder


__all__ = [
    "check_chunker",
    "check_encoder",
    "chunk_metadata",
    "default_chunker",
    "from_config",
    "import_or_explain",
    "to_config",
]
