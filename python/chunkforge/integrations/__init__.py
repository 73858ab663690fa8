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
