"""LangChain adapters: a ``TextSplitter`` on any chunkforge chunker and an ``Embeddings``
on a chunkforge :class:`~chunkforge.Encoder` (``pip install "chunkforge[langchain]"``).

Before (LangChain alone)::

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(tok, chunk_size=256, chunk_overlap=32)

After::

    from chunkforge.integrations.langchain import ChunkforgeEmbeddings, ChunkforgeTextSplitter
    splitter = ChunkforgeTextSplitter(RecursiveChunker(max_tokens=256, overlap=32))
    docs = splitter.create_documents([text], metadatas=[{"source": "guide.md"}])   # exact start_index
    embeddings = ChunkforgeEmbeddings()                                            # Encoder.default()
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from . import chunk_metadata, import_or_explain

import_or_explain("langchain_text_splitters", "langchain")
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_text_splitters import TextSplitter  # noqa: E402


class ChunkforgeTextSplitter(TextSplitter):
    """A LangChain ``TextSplitter`` that cuts with a chunkforge chunker (default:
    ``RecursiveChunker()``). ``chunk_size``/``chunk_overlap`` report the chunker's
    ``max_tokens``/``overlap`` and lengths are counted in its tokenizer's tokens.
    Documents carry ``start_index`` (with ``add_start_index=True``, the default here)
    from the chunk's exact offset, not from searching the text, and the chunk's
    ``token_count``, ``heading_path``, ``kind`` and ``context`` where set.
    """

    def __init__(self, chunker: Any = None, *, add_start_index: bool = True, **kwargs: Any) -> None:
        if chunker is None:
            from ..chunkers import RecursiveChunker

            chunker = RecursiveChunker()
        if not callable(getattr(chunker, "chunk", None)):
            raise TypeError(f"chunker must be a chunkforge chunker, not {type(chunker).__name__}")
        kwargs.setdefault("chunk_size", chunker.max_tokens)
        kwargs.setdefault("chunk_overlap", getattr(chunker, "overlap", 0))
        kwargs.setdefault("length_function", chunker.tokenizer.count)
        super().__init__(add_start_index=add_start_index, **kwargs)
        self.chunker = chunker

    def split_text(self, text: str) -> list[str]:
        """The chunks' texts."""
        return [c.text for c in self.chunker.chunk(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        """One ``Document`` per chunk, each with a copy of its text's metadata."""
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"metadatas has {len(metadatas)} entries for {len(texts)} texts")
        documents = []
        for i, text in enumerate(texts):
            for chunk in self.chunker.chunk(text):
                metadata = copy.deepcopy(metadatas[i]) if metadatas else {}
                if self._add_start_index:
                    metadata["start_index"] = chunk.start
                metadata.update(chunk_metadata(chunk))
                documents.append(Document(page_content=chunk.text, metadata=metadata))
        return documents

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        """Splits documents, keeping their metadata (and ``id`` as ``source_id``)."""
        documents = list(documents)
        metadatas = [{**d.metadata, **({"source_id": d.id} if d.id else {})} for d in documents]
        return self.create_documents([d.page_content for d in documents], metadatas)


class ChunkforgeEmbeddings(Embeddings):
    """LangChain ``Embeddings`` on a chunkforge encoder (default ``Encoder.default()``):
    ``embed_documents`` in length-sorted batches, ``embed_query`` on the low-latency path."""

    def __init__(self, encoder: Any = None) -> None:
        if encoder is None:
            from ..encoder import Encoder

            encoder = Encoder.default()
        if not callable(getattr(encoder, "embed", None)):
            raise TypeError(f"encoder must be a chunkforge.Encoder, not {type(encoder).__name__}")
        self.encoder = encoder

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.encoder.embed(list(texts)).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        vector: list[float] = self.encoder.embed_query(text).tolist()
        return vector


# -- retrieval: chunkforge's packed passages, from `chunkforge serve` or an in-process Index ------

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict, Field, PrivateAttr  # noqa: E402


class ChunkforgeRetriever(BaseRetriever):
    """A LangChain retriever of chunkforge's expanded, packed passages: one ``Document`` per
    passage of ``query`` on ``index`` (the URL of a running ``chunkforge serve``, or an
    in-process :class:`~chunkforge.index.Index`), its ``metadata`` the passage's ``doc_id``,
    exact ``start``/``end``, ``token_count``, ``score``, ``heading_path``, ``hit_ids`` (and,
    served, the index ``version``). ``k`` and ``expansion`` (``budget_tokens``, ``window``, ...;
    served, search filters too) as for :meth:`Index.query <chunkforge.index.Index.query>`.

    >>> retriever = ChunkforgeRetriever(index="http://127.0.0.1:8000", expansion={"budget_tokens": 500})  # doctest: +SKIP
    >>> retriever.invoke("how do I install it?")[0].metadata["start"]  # doctest: +SKIP
    1204
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: Any
    k: int | None = None
    expansion: dict[str, Any] = Field(default_factory=dict)
    _queried: Any = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        from ..serve.client import connect

        super().model_post_init(context)
        self._queried = connect(self.index)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        from ..serve.client import retrieve

        return [
            Document(page_content=text, metadata=meta)
            for text, meta in retrieve(self._queried, query, self.k, self.expansion)
        ]
