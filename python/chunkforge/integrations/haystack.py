"""Haystack components: a document splitter on any chunkforge chunker, and document
and text embedders on a chunkforge :class:`~chunkforge.Encoder`
(``pip install "chunkforge[haystack]"``).

Before (Haystack alone)::

    splitter = DocumentSplitter(split_by="word", split_length=200, split_overlap=20)   # words, not tokens

After::

    from chunkforge.integrations.haystack import ChunkforgeDocumentEmbedder, ChunkforgeDocumentSplitter
    pipeline.add_component("splitter", ChunkforgeDocumentSplitter(RecursiveChunker(max_tokens=256, overlap=32)))
    pipeline.add_component("embedder", ChunkforgeDocumentEmbedder(meta_fields_to_embed=["title"]))
    Pipeline.loads(pipeline.dumps(), allowed_modules=["chunkforge.integrations.haystack"])   # saved, loaded
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from ..errors import ArgumentError
from . import check_chunker, check_encoder, chunk_metadata, from_config, import_or_explain, to_config

import_or_explain("haystack", "haystack")
from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402


@component
class ChunkforgeDocumentSplitter:
    """Splits each document with a chunkforge chunker (default: a ``RecursiveChunker``
    sized to the default embedding model's window, 254 tokens, so that the default embedders
    never truncate). Every split keeps the document's ``meta`` and adds, as Haystack's
    ``DocumentSplitter`` does, ``source_id``, ``split_id`` and ``split_idx_start`` (the
    chunk's exact offset), plus ``token_count`` and, where set, ``heading_path``, ``kind``
    and ``context``. Serializes with the chunker's configuration.

    >>> from chunkforge import RecursiveChunker
    >>> splitter = ChunkforgeDocumentSplitter(RecursiveChunker(max_tokens=64))
    >>> ChunkforgeDocumentSplitter.from_dict(splitter.to_dict()).chunker.max_tokens
    64
    """

    def __init__(self, chunker: Any = None) -> None:
        self.chunker = check_chunker(chunker)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, chunker=to_config(self.chunker))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkforgeDocumentSplitter:
        return _from_dict(cls, data, "chunker")

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        out = []
        for n, doc in enumerate(documents):
            if doc.content is None:
                raise ArgumentError(f"[{n}] (id {doc.id}) has no text content (content is None)", param="documents")
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
    """Sets ``embedding`` on each document (default encoder ``Encoder.default()``), with
    the parameters of Haystack's ``SentenceTransformersDocumentEmbedder``: the text embedded
    is ``prefix``, the values of ``meta_fields_to_embed`` and the ``content`` joined by
    ``embedding_separator``, then ``suffix``; ``batch_size`` caps the texts in a batch
    (batches are always capped at the encoder's ``max_batch_tokens`` padded tokens; None:
    only that). Serializes with the encoder's configuration.

    >>> embedder = ChunkforgeDocumentEmbedder(meta_fields_to_embed=["title"], batch_size=64)
    >>> embedder.batch_size
    64
    """

    def __init__(
        self,
        encoder: Any = None,
        show_progress: bool = False,
        *,
        prefix: str = "",
        suffix: str = "",
        batch_size: int | None = None,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
    ) -> None:
        self.encoder = encoder
        self.show_progress = show_progress
        self.prefix, self.suffix = prefix, suffix
        self.batch_size = batch_size
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator

    def warm_up(self) -> None:
        self.encoder = check_encoder(self.encoder)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            encoder=to_config(self.encoder),
            show_progress=self.show_progress,
            prefix=self.prefix,
            suffix=self.suffix,
            batch_size=self.batch_size,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkforgeDocumentEmbedder:
        return _from_dict(cls, data, "encoder")

    def text_to_embed(self, document: Document) -> str:
        """What is embedded for ``document``: prefix, meta fields, content, suffix."""
        fields = [str(document.meta[k]) for k in self.meta_fields_to_embed if document.meta.get(k) is not None]
        return self.prefix + self.embedding_separator.join([*fields, document.content or ""]) + self.suffix

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.warm_up()
        texts = [self.text_to_embed(d) for d in documents]
        vectors = self.encoder.encode(texts, batch_size=self.batch_size, show_progress_bar=self.show_progress)
        return {"documents": [dataclasses.replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors)]}


@component
class ChunkforgeTextEmbedder:
    """Embeds one text (a query: ``prefix + text + suffix``) on the encoder's low-latency path.
    Serializes with the encoder's configuration."""

    def __init__(self, encoder: Any = None, *, prefix: str = "", suffix: str = "") -> None:
        self.encoder = encoder
        self.prefix, self.suffix = prefix, suffix

    def warm_up(self) -> None:
        self.encoder = check_encoder(self.encoder)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, encoder=to_config(self.encoder), prefix=self.prefix, suffix=self.suffix)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkforgeTextEmbedder:
        return _from_dict(cls, data, "encoder")

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        self.warm_up()
        return {"embedding": self.encoder.embed_query(self.prefix + text + self.suffix).tolist()}


T = TypeVar("T")


def _from_dict(cls: type[T], data: dict[str, Any], name: str) -> T:
    """``default_from_dict`` with the init parameter ``name`` built from its chunkforge config."""
    init = dict(data.get("init_parameters", {}))
    init[name] = from_config(init.get(name))
    return default_from_dict(cls, {**data, "init_parameters": init})


# -- retrieval: chunkforge's packed passages, from `chunkforge serve` or an in-process Index ------


@component
class ChunkforgeRetriever:
    """A Haystack retriever of chunkforge's expanded, packed passages: one ``Document`` per
    passage of ``query`` on ``index`` (the URL of a running ``chunkforge serve``, or an
    in-process :class:`~chunkforge.index.Index`), scored by the passage's best hit, its
    ``meta`` the passage's ``doc_id``, exact ``start``/``end``, ``token_count``, ``score``,
    ``heading_path``, ``hit_ids`` (and, served, the index ``version``). ``k`` and
    ``expansion`` as for :meth:`Index.query <chunkforge.index.Index.query>`; ``run`` may
    override ``k``. Served, it saves with its pipeline (``to_dict``: the URL, ``k`` and
    ``expansion``); an in-process index is not data, and ``to_dict`` says so (serve it, or
    add the retriever after loading the pipeline).

    >>> from haystack import Pipeline
    >>> pipeline = Pipeline()
    >>> _ = pipeline.add_component("retriever", ChunkforgeRetriever("http://127.0.0.1:8000"))  # a running chunkforge serve
    >>> documents = pipeline.run({"retriever": {"query": "how do I install it?"}})["retriever"]["documents"]
    >>> sorted(documents[0].meta)
    ['doc_id', 'end', 'heading_path', 'hit_ids', 'score', 'start', 'token_count', 'version']
    """

    def __init__(self, index: Any, k: int | None = None, expansion: dict[str, Any] | None = None) -> None:
        from ..serve.client import connect

        self.index = connect(index)
        self.k = k
        self.expansion = dict(expansion or {})

    def to_dict(self) -> dict[str, Any]:
        from ..serve.client import ServiceClient

        if not isinstance(self.index, ServiceClient):
            from haystack.core.errors import SerializationError

            raise SerializationError(
                f"ChunkforgeRetriever on an in-process {type(self.index).__name__} cannot be saved with the pipeline: "
                "serve the index (`chunkforge serve INDEX`) and pass its URL, or add the retriever after loading"
            )
        return default_to_dict(self, index=self.index.url, k=self.k, expansion=self.expansion)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkforgeRetriever:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, k: int | None = None) -> dict[str, list[Document]]:
        from ..serve.client import retrieve

        passages = retrieve(self.index, query, self.k if k is None else k, self.expansion)
        return {"documents": [Document(content=text, meta=meta, score=meta["score"]) for text, meta in passages]}
