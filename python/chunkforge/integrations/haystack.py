"""Haystack components: a document splitter on any chunkforge chunker, and document
and text embedders on a chunkforge :class:`~chunkforge.Encoder`
(``pip install "chunkforge[haystack]"``).

Before (Haystack alone)::

    splitter = DocumentSplitter(split_by="word", split_length=200, split_overlap=20)   # words, not tokens

After::

    from chunkforge.integrations.haystack import ChunkforgeDocumentEmbedder, ChunkforgeDocumentSplitter
    pipeline.add_component("splitter", ChunkforgeDocumentSplitter(RecursiveChunker(max_tokens=256, overlap=32)))
    pipeline.add_component("embedder", ChunkforgeDocumentEmbedder())
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import chunk_metadata, import_or_explain

import_or_explain("haystack", "haystack")
from haystack import Document, component  # noqa: E402


@component
class ChunkforgeDocumentSplitter:
    """Splits each document with a chunkforge chunker (default ``RecursiveChunker()``).
    Every split keeps the document's ``meta`` and adds, as Haystack's ``DocumentSplitter``
    does, ``source_id``, ``split_id`` and ``split_idx_start`` (the chunk's exact offset),
    plus ``token_count`` and, where set, ``heading_path``, ``kind`` and ``context``."""

    def __init__(self, chunker: Any = None) -> None:
        if chunker is None:
            from ..chunkers import RecursiveChunker

            chunker = RecursiveChunker()
        if not callable(getattr(chunker, "chunk", None)):
            raise TypeError(f"chunker must be a chunkforge chunker, not {type(chunker).__name__}")
        self.chunker = chunker

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        out = []
        for doc in documents:
            if doc.content is None:
                raise ValueError(f"document {doc.id} has no text content (content is None)")
            for i, chunk in enumerate(self.chunker.chunk(doc.content)):
                meta = {
                    **doc.meta,
                    "source_id": doc.id,
                    "split_id": i,
                    "split_idx_start": chunk.start,
                    **chunk_metadata(chunk),
                }
                out.append(Document(content=chunk.text, meta=meta))
        return {"documents": out}


@component
class ChunkforgeDocumentEmbedder:
    """Sets ``embedding`` on each document (its ``content``; default ``Encoder.default()``)."""

    def __init__(self, encoder: Any = None, show_progress: bool = False) -> None:
        self.encoder = encoder
        self.show_progress = show_progress

    def warm_up(self) -> None:
        if self.encoder is None:
            from ..encoder import Encoder

            self.encoder = Encoder.default()

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.warm_up()
        vectors = self.encoder.embed([d.content or "" for d in documents], show_progress=self.show_progress)
        return {"documents": [dataclasses.replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors)]}


@component
class ChunkforgeTextEmbedder:
    """Embeds one text (a query) on the encoder's low-latency path."""

    def __init__(self, encoder: Any = None) -> None:
        self.encoder = encoder

    def warm_up(self) -> None:
        if self.encoder is None:
            from ..encoder import Encoder

            self.encoder = Encoder.default()

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        self.warm_up()
        return {"embedding": self.encoder.embed_query(text).tolist()}


# -- retrieval: chunkforge's packed passages, from `chunkforge serve` or an in-process Index ------


@component
class ChunkforgeRetriever:
    """A Haystack retriever of chunkforge's expanded, packed passages: one ``Document`` per
    passage of ``query`` on ``index`` (the URL of a running ``chunkforge serve``, or an
    in-process :class:`~chunkforge.index.Index`), scored by the passage's best hit, its
    ``meta`` the passage's ``doc_id``, exact ``start``/``end``, ``token_count``, ``score``,
    ``heading_path``, ``hit_ids`` (and, served, the index ``version``). ``k`` and
    ``expansion`` as for :meth:`Index.query <chunkforge.index.Index.query>`; ``run`` may
    override ``k``.

    >>> pipeline.add_component("retriever", ChunkforgeRetriever("http://127.0.0.1:8000"))  # doctest: +SKIP
    >>> pipeline.run({"retriever": {"query": "how do I install it?"}})["retriever"]["documents"][0].meta["start"]  # doctest: +SKIP
    1204
    """

    def __init__(self, index: Any, k: int | None = None, expansion: dict[str, Any] | None = None) -> None:
        from ..serve.client import connect

        self.index = connect(index)
        self.k = k
        self.expansion = dict(expansion or {})

    @component.output_types(documents=list[Document])
    def run(self, query: str, k: int | None = None) -> dict[str, list[Document]]:
        from ..serve.client import retrieve

        passages = retrieve(self.index, query, self.k if k is None else k, self.expansion)
        return {"documents": [Document(content=text, meta=meta, score=meta["score"]) for text, meta in passages]}
