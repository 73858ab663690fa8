"""LlamaIndex adapters: a ``NodeParser`` on any chunkforge chunker and a ``BaseEmbedding``
on a chunkforge :class:`~chunkforge.Encoder` (``pip install "chunkforge[llamaindex]"``).

Before (LlamaIndex alone)::

    parser = SentenceSplitter(chunk_size=256, chunk_overlap=32)      # offsets found by str.find
    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[2048, 512, 128])

After::

    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding, ChunkforgeNodeParser
    parser = ChunkforgeNodeParser(RecursiveChunker(max_tokens=256, overlap=32))
    parser = ChunkforgeNodeParser(HierarchicalChunker(levels=(2048, 512, 128)))  # PARENT/CHILD relationships
    embed_model = ChunkforgeEmbedding()                                        # Encoder.default()

Retrieval: ``ChunkforgeRetriever`` (chunkforge's packed passages, served or in process) and
``ChunkforgeExpander`` (a node postprocessor expanding any retriever's nodes on an ``Index``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .._config import encoder_label
from ..errors import ArgumentError, ArgumentTypeError
from . import (
    check_chunker,
    check_encoder,
    chunk_metadata,
    from_config,
    import_or_explain,
    refuse_unknown,
    resize_chunker,
    to_config,
    warn_past_window,
)

import_or_explain("llama_index.core", "llamaindex")
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.node_parser import NodeParser  # noqa: E402
from llama_index.core.schema import BaseNode, Document, NodeRelationship, TextNode  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

# chunk fields put in node metadata, kept out of the text the embedder and the LLM see
CHUNK_KEYS = ("token_count", "heading_path", "kind", "context", "chunk_id", "parent_id", "level")


class ChunkforgeNodeParser(NodeParser):
    """Parses documents into ``TextNode``s with a chunkforge chunker (default: a
    ``RecursiveChunker`` sized to the default embedding model's window, 254 tokens, so
    that ``ChunkforgeEmbedding()`` never truncates): ``start_char_idx``/``end_char_idx`` are the chunk's exact
    offsets into the document (LlamaIndex's own parsers find them with ``str.find``),
    metadata gains ``token_count`` and, where set, ``heading_path``, ``kind`` and
    ``context`` (excluded from the embedded and LLM text). LlamaIndex's ``chunk_size`` and
    ``chunk_overlap`` resize the chunker (its ``max_tokens``/``overlap``, in its tokenizer's
    tokens, as for ``SentenceSplitter``); an unknown keyword is a ``TypeError``. With a
    :class:`~chunkforge.HierarchicalChunker` every node of the tree is returned, with
    ``PARENT``/``CHILD`` relationships as LlamaIndex's ``HierarchicalNodeParser`` sets
    them (``get_leaf_nodes`` and ``AutoMergingRetriever`` work on them) and the tree's
    stable ids as node ids. ``to_dict`` holds the chunker's whole configuration (so an
    ``IngestionPipeline`` caches two parsers of different sizes apart) and ``from_dict``
    builds it again.

    >>> from chunkforge import RecursiveChunker
    >>> parser = ChunkforgeNodeParser(RecursiveChunker(max_tokens=64))
    >>> ChunkforgeNodeParser.from_dict(parser.to_dict()).chunker.max_tokens
    64
    """

    _chunker: Any = PrivateAttr()

    def __init__(
        self, chunker: Any = None, *, chunk_size: int | None = None, chunk_overlap: int | None = None, **kwargs: Any
    ) -> None:
        refuse_unknown(type(self), kwargs, type(self).model_fields, ("chunker", "chunk_size", "chunk_overlap"))
        super().__init__(**kwargs)
        self._chunker = resize_chunker(check_chunker(chunker), chunk_size, chunk_overlap)
        warn_past_window(self._chunker, chunk_size)

    @property
    def chunk_size(self) -> int | None:
        """The chunker's ``max_tokens`` (LlamaIndex's ``chunk_size``, in its tokenizer's tokens)."""
        return getattr(self._chunker, "max_tokens", None)

    @property
    def chunk_overlap(self) -> int | None:
        """The chunker's ``overlap`` in tokens (LlamaIndex's ``chunk_overlap``), None without one."""
        return getattr(self._chunker, "overlap", None)

    @property
    def chunker(self) -> Any:
        return self._chunker

    @classmethod
    def class_name(cls) -> str:
        return "ChunkforgeNodeParser"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().to_dict(**kwargs), "chunker": to_config(self._chunker)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> ChunkforgeNodeParser:
        data = {**data, **kwargs}
        data.pop("class_name", None)
        id_func = data.get("id_func")
        if isinstance(id_func, dict):  # to_dict writes a function's name only
            if id_func.get("id_func_name") != "default_id_func":
                raise ArgumentError(
                    f"{id_func.get('id_func_name')!r} cannot be read back: from_dict(data, id_func=...)",
                    param="id_func",
                )
            del data["id_func"]
        return cls(from_config(data.pop("chunker", None)), **data)

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        from .._progress import progress
        from ..chunkers import HierarchicalChunker

        out: list[BaseNode] = []
        tree = isinstance(self._chunker, HierarchicalChunker)
        for node in progress(bool(show_progress), iterable=nodes, desc="parsing nodes", unit=" docs"):
            text = node.get_content()
            chunks = self._chunker.chunk(text, doc_id=node.node_id) if tree else self._chunker.chunk(text)
            source = node.as_related_node_info()
            made: dict[str, TextNode] = {}
            for i, chunk in enumerate(chunks):
                meta = chunk_metadata(chunk)
                made_node = TextNode(
                    id_=chunk.id if tree else self.id_func(i, node),
                    text=chunk.text,
                    start_char_idx=chunk.start,
                    end_char_idx=chunk.end,
                    metadata={**node.metadata, **meta} if self.include_metadata else meta,
                    excluded_embed_metadata_keys=[*node.excluded_embed_metadata_keys, *CHUNK_KEYS],
                    excluded_llm_metadata_keys=[*node.excluded_llm_metadata_keys, *CHUNK_KEYS],
                    metadata_separator=node.metadata_separator,
                    metadata_template=node.metadata_template,
                    text_template=node.text_template,
                    relationships={NodeRelationship.SOURCE: source},
                )
                if tree and chunk.parent_id is not None:
                    parent = made[chunk.parent_id]
                    made_node.relationships[NodeRelationship.PARENT] = parent.as_related_node_info()
                    parent.relationships.setdefault(NodeRelationship.CHILD, []).append(  # type: ignore[union-attr]
                        made_node.as_related_node_info()
                    )
                made[made_node.node_id] = made_node
                out.append(made_node)
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # LlamaIndex's post-processing finds offsets again with str.find: keep the exact ones
        exact = [(n.start_char_idx, n.end_char_idx) if isinstance(n, TextNode) else None for n in nodes]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node, span in zip(nodes, exact):
            if span is not None and isinstance(node, TextNode):
                node.start_char_idx, node.end_char_idx = span
        return nodes


class ChunkforgeEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` on a chunkforge encoder (default ``Encoder.default()``):
    batches through ``Encoder.embed`` (length-sorted, token-budgeted), queries through
    ``embed_query``; the async methods run them on a worker thread, off the event loop.
    ``to_dict`` holds the encoder's configuration (the factory, model and variant that
    made it, e.g. ``Encoder.default("int8")``) and ``from_dict`` builds it again.

    >>> from chunkforge import Encoder
    >>> embed_model = ChunkforgeEmbedding(Encoder.default("optimized"))
    >>> embed_model.model_name
    'Encoder.default(optimized)'
    """

    _encoder: Any = PrivateAttr()

    def __init__(self, encoder: Any = None, **kwargs: Any) -> None:
        refuse_unknown(type(self), kwargs, type(self).model_fields, ("encoder",))
        encoder = check_encoder(encoder)
        kwargs.setdefault("model_name", encoder_label(to_config(encoder)))
        super().__init__(**kwargs)
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "ChunkforgeEmbedding"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().to_dict(**kwargs), "encoder": to_config(self._encoder)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> ChunkforgeEmbedding:
        data = {**data, **kwargs}
        data.pop("class_name", None)
        return cls(from_config(data.pop("encoder", None)), **data)

    def _get_query_embedding(self, query: str) -> list[float]:
        vector: list[float] = self._encoder.embed_query(query).tolist()
        return vector

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)

    def _get_text_embedding(self, text: str) -> list[float]:
        vector: list[float] = self._encoder.embed([text])[0].tolist()
        return vector

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._encoder.embed(texts).tolist()
        return vectors


# -- retrieval: chunkforge's packed passages, from `chunkforge serve` or an in-process Index ------

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle  # noqa: E402

PASSAGE_KEYS = ("doc_id", "start", "end", "token_count", "score", "heading_path", "hit_ids", "version")
"""Passage fields put in node metadata, kept out of the text the embedder and the LLM see."""


class ChunkforgeRetriever(BaseRetriever):
    """A LlamaIndex retriever of chunkforge's expanded, packed passages: one ``TextNode`` per
    passage of ``query`` on ``index`` (the URL of a running ``chunkforge serve``, or an
    in-process :class:`~chunkforge.index.Index`), with exact ``start_char_idx``/``end_char_idx``
    into its document, scored by the passage's best hit; ``metadata`` the passage's
    ``doc_id``, ``start``, ``end``, ``token_count``, ``score``, ``heading_path``,
    ``hit_ids`` (and, served, the index ``version``). ``k`` and ``expansion`` as for
    :meth:`Index.query <chunkforge.index.Index.query>`.

    >>> retriever = ChunkforgeRetriever("http://127.0.0.1:8000", expansion={"budget_tokens": 500})
    >>> node = retriever.retrieve("how do I install it?")[0].node  # a running chunkforge serve
    >>> node.start_char_idx == node.metadata["start"], node.metadata["token_count"] <= 500
    (True, True)
    """

    def __init__(
        self, index: Any, k: int | None = None, expansion: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        from ..serve.client import connect

        super().__init__(**kwargs)
        self.index = connect(index)
        self.k = k
        self.expansion = dict(expansion or {})

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        from ..serve.client import retrieve

        return passage_nodes(retrieve(self.index, query_bundle.query_str, self.k, self.expansion))


def passage_nodes(records: list[tuple[str, dict[str, Any]]]) -> list[NodeWithScore]:
    """One scored ``TextNode`` per passage (text and metadata of :func:`~chunkforge.serve.client.passage_records`)."""
    return [
        NodeWithScore(
            node=TextNode(
                text=text,
                metadata=meta,
                start_char_idx=meta["start"],
                end_char_idx=meta["end"],
                excluded_embed_metadata_keys=list(PASSAGE_KEYS),
                excluded_llm_metadata_keys=list(PASSAGE_KEYS),
            ),
            score=meta["score"],
        )
        for text, meta in records
    ]


from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402


class ChunkforgeExpander(BaseNodePostprocessor):
    """ "Index small, send big" after any LlamaIndex retriever: the retrieved nodes (their
    ``ref_doc_id`` and exact ``start_char_idx``/``end_char_idx``, as
    :class:`ChunkforgeNodeParser` sets them; the score, 1.0 when it has none) become spans of
    an in-process :class:`~chunkforge.index.Index` (or a store's ``Index.open``) holding the
    same documents under the same ids, expanded by :meth:`Index.expand
    <chunkforge.index.Index.expand>` with ``expansion`` (``budget_tokens``, ``window``,
    ``parent``, ...) into passage nodes as :class:`ChunkforgeRetriever` returns them.

    >>> from llama_index.core import Document, VectorStoreIndex
    >>> from chunkforge import Encoder
    >>> from chunkforge.index import Index
    >>> text = "# Cats\\n\\nCats purr. They sleep all day. A cat naps on the sofa.\\n\\n# Dogs\\n\\nDogs bark."
    >>> encoder = Encoder.default()
    >>> index = Index.build([{"id": "pets.md", "text": text}], encoder)
    >>> nodes = ChunkforgeNodeParser(chunk_size=8).get_nodes_from_documents([Document(text=text, id_="pets.md")])
    >>> vector_retriever = VectorStoreIndex(nodes, embed_model=ChunkforgeEmbedding(encoder)).as_retriever(similarity_top_k=1)
    >>> [n.node.text for n in vector_retriever.retrieve("where do cats sleep?")]
    ['A cat naps on the sofa.']
    >>> expander = ChunkforgeExpander(index, expansion={"window": 2, "budget_tokens": 800})
    >>> [n.node.text for n in expander.postprocess_nodes(vector_retriever.retrieve("where do cats sleep?"))]
    ['Cats purr. They sleep all day. A cat naps on the sofa.']
    """

    _index: Any = PrivateAttr()
    _expansion: dict[str, Any] = PrivateAttr()

    def __init__(self, index: Any, expansion: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(getattr(index, "expand", None)):
            raise ArgumentTypeError(
                f"must be a chunkforge Index (or Index.open's store), not {type(index).__name__}", param="index"
            )
        self._index = index
        self._expansion = dict(expansion or {})

    @classmethod
    def class_name(cls) -> str:
        return "ChunkforgeExpander"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        from ..serve.client import passage_records

        spans = []
        for i, scored in enumerate(nodes):
            node = scored.node
            start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
            if node.ref_doc_id is None or start is None or end is None:
                raise ArgumentError(
                    f"[{i}] has no ref_doc_id or no start_char_idx/end_char_idx to expand", param="nodes"
                )
            spans.append((node.ref_doc_id, start, end, 1.0 if scored.score is None else float(scored.score)))
        if not spans:
            return []
        return passage_nodes(passage_records(self._index.expand(spans, **self._expansion)))
