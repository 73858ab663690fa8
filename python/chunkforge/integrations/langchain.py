"""LangChain adapters: a ``TextSplitter`` on any chunkforge chunker and an ``Embeddings``
on a chunkforge :class:`~chunkforge.Encoder` (``pip install "chunkforge[langchain]"``).

Before (LangChain alone)::

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(tok, chunk_size=256, chunk_overlap=32)

After::

    from chunkforge.integrations.langchain import ChunkforgeEmbeddings, ChunkforgeTextSplitter
    splitter = ChunkforgeTextSplitter(chunk_size=200, chunk_overlap=20)       # default model's tokens
    splitter = ChunkforgeTextSplitter.from_tiktoken_encoder("cl100k_base", chunk_size=200)   # or any counter
    docs = splitter.create_documents([text], metadatas=[{"source": "guide.md"}])   # exact start_index
    embeddings = ChunkforgeEmbeddings()                                            # Encoder.default()
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..chunk import Chunk
from ..chunkers.counted import SEPARATORS, counted_chunks
from ..errors import ArgumentError, ArgumentTypeError
from . import check_chunker, check_encoder, chunk_metadata, import_or_explain, resize_chunker, warn_past_window

import_or_explain("langchain_text_splitters", "langchain")
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_text_splitters import TextSplitter  # noqa: E402


class ChunkforgeTextSplitter(TextSplitter):
    """A LangChain ``TextSplitter`` that cuts with a chunkforge chunker (default: a
    ``RecursiveChunker`` sized to the default embedding model's window, 254 tokens, so
    that ``ChunkforgeEmbeddings()`` never truncates). ``chunk_size``/``chunk_overlap``
    resize the chunker (its ``max_tokens``/``overlap``, in its tokenizer's tokens, not the
    characters LangChain's own splitters count: a ``chunk_size`` past the model's window
    warns, as such chunks would be truncated when embedded);
    ``length_function`` (any ``str -> int``, as ``from_tiktoken_encoder`` passes) sizes
    chunks by that count instead, cutting in Python at ``separators`` (the chunker's, else
    paragraphs, lines, sentences, words) with offsets still exact. Documents carry
    ``start_index`` (with ``add_start_index=True``, the default here) from the chunk's
    exact offset, not from searching the text, and the chunk's ``token_count``,
    ``heading_path``, ``kind`` and ``context`` where set.

    >>> text = "Splitters cut documents into pieces. Each piece keeps its offsets. " * 10
    >>> splitter = ChunkforgeTextSplitter(chunk_size=16, chunk_overlap=4)
    >>> max(c.token_count for c in splitter.chunker.chunk(text)) <= 16
    True
    """

    def __init__(
        self,
        chunker: Any = None,
        *,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        length_function: Callable[[str], int] | None = None,
        add_start_index: bool = True,
        **kwargs: Any,
    ) -> None:
        chunker = check_chunker(chunker)
        if length_function is None:
            chunker = resized(chunker, chunk_size, chunk_overlap)
            warn_past_window(chunker, chunk_size, " (or length_function=len to count characters)")
        elif not callable(length_function):
            raise ArgumentTypeError(
                f"must be a callable str -> int, not {type(length_function).__name__}", param="length_function"
            )
        super().__init__(
            chunk_size=chunker.max_tokens if chunk_size is None else chunk_size,
            chunk_overlap=getattr(chunker, "overlap", 0) if chunk_overlap is None else chunk_overlap,
            length_function=length_function or chunker.tokenizer.count,
            add_start_index=add_start_index,
            **kwargs,
        )
        self.chunker = chunker
        self._counter = length_function

    @classmethod
    def from_huggingface_tokenizer(cls, tokenizer: Any, **kwargs: Any) -> ChunkforgeTextSplitter:
        """Sized in ``tokenizer``'s tokens: a ``transformers`` fast tokenizer or a
        ``tokenizers.Tokenizer`` runs natively (a ``RecursiveChunker`` on it); a slow
        ``transformers`` tokenizer counts ``len(tokenizer.tokenize(text))``."""
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        if hasattr(backend, "to_str"):
            from ..chunkers import RecursiveChunker

            return cls(RecursiveChunker(backend, max_tokens=kwargs.pop("chunk_size", None)), **kwargs)
        if not callable(getattr(tokenizer, "tokenize", None)):
            raise ArgumentTypeError(
                f"must be a Hugging Face tokenizer, not {type(tokenizer).__name__}", param="tokenizer"
            )
        return cls(length_function=lambda text: len(tokenizer.tokenize(text)), **kwargs)

    def chunks(self, text: str) -> list[Chunk]:
        """The chunks of ``text`` (the chunker's, or sized by ``length_function``)."""
        if self._counter is None:
            chunks: list[Chunk] = self.chunker.chunk(text)
            return chunks
        separators = getattr(self.chunker, "separators", None) or SEPARATORS
        return counted_chunks(text, self._counter, self._chunk_size, self._chunk_overlap, separators)

    def split_text(self, text: str) -> list[str]:
        """The chunks' texts."""
        return [c.text for c in self.chunks(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        """One ``Document`` per chunk, each with a copy of its text's metadata."""
        if metadatas is not None and len(metadatas) != len(texts):
            raise ArgumentError(f"has {len(metadatas)} entries for {len(texts)} texts", param="metadatas")
        documents = []
        for i, text in enumerate(texts):
            for chunk in self.chunks(text):
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


def resized(chunker: Any, max_tokens: int | None, overlap: int | None) -> Any:
    """``chunker`` built again with ``max_tokens``/``overlap`` where given (LangChain's
    ``chunk_size``/``chunk_overlap``); errors name the LangChain parameter.

    >>> from chunkforge import RecursiveChunker
    >>> small = resized(RecursiveChunker(max_tokens=100), 50, 5)
    >>> small.max_tokens, small.overlap
    (50, 5)
    """
    return resize_chunker(chunker, max_tokens, overlap)


class ChunkforgeEmbeddings(Embeddings):
    """LangChain ``Embeddings`` on a chunkforge encoder (default ``Encoder.default()``):
    ``embed_documents`` in length-sorted batches, ``embed_query`` on the low-latency path."""

    def __init__(self, encoder: Any = None) -> None:
        self.encoder = check_encoder(encoder)

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

    >>> retriever = ChunkforgeRetriever(index="http://127.0.0.1:8000", expansion={"budget_tokens": 500})
    >>> sorted(retriever.invoke("how do I install it?")[0].metadata)  # a running chunkforge serve
    ['doc_id', 'end', 'heading_path', 'hit_ids', 'score', 'start', 'token_count', 'version']
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
