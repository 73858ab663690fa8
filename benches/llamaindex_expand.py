"""LlamaIndex doing chunkforge's ``expand(hits, auto_merge=0.5, window=2)`` on the
same trees and hits: ``AutoMergingRetriever`` (merge loop, over a docstore of the
hierarchy) then ``MetadataReplacementPostProcessor`` (each remaining leaf
replaced by its sentence window, stored in its metadata as
``SentenceWindowNodeParser`` does). Needs llama-index-core; reads the file
written by ``benches/expand_bench.py --export``.

    bench-venv/bin/python benches/llamaindex_expand.py expand-data.json
"""

from __future__ import annotations

import gc
import json
import sys
import time

import numpy as np
from llama_index.core.postprocessor import MetadataReplacementPostProcessor
from llama_index.core.retrievers import AutoMergingRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.storage import StorageContext
from llama_index.core.storage.docstore import SimpleDocumentStore


class FixedRetriever:
    """Stands in for the vector retriever: returns the hits of the current query."""

    def __init__(self) -> None:
        self.hits: list[NodeWithScore] = []

    def retrieve(self, query: QueryBundle) -> list[NodeWithScore]:
        return list(self.hits)


def build(docs: list[dict]) -> tuple[SimpleDocumentStore, dict[int, TextNode]]:
    """The hierarchy as TextNodes with parent/child links; leaves by label."""
    store = SimpleDocumentStore()
    by_label: dict[int, TextNode] = {}
    for doc in docs:
        text = doc["text"]
        ids = [f"{doc['id']}#{i}" for i in range(len(doc["nodes"]))]
        nodes = [TextNode(id_=ids[i], text=text[s:e]) for i, (s, e, _) in enumerate(doc["nodes"])]
        for i, (_, _, parent) in enumerate(doc["nodes"]):
            if parent >= 0:
                nodes[i].relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=ids[parent])
                kids = nodes[parent].relationships.setdefault(NodeRelationship.CHILD, [])
                kids.append(RelatedNodeInfo(node_id=ids[i]))
        for leaf, label, (ws, we) in zip(doc["leaves"], doc["labels"], doc["windows"]):
            nodes[leaf].metadata["window"] = text[ws:we]
            by_label[label] = nodes[leaf]
        store.add_documents(nodes)
    return store, by_label


def main(path: str) -> None:
    data = json.loads(open(path, encoding="utf-8").read())
    started = time.perf_counter()
    store, by_label = build(data["docs"])
    print(f"LlamaIndex docstore of {len(store.docs)} nodes in {time.perf_counter() - started:.1f} s")
    fixed = FixedRetriever()
    retriever = AutoMergingRetriever(fixed, StorageContext.from_defaults(docstore=store), simple_ratio_thresh=0.5)
    replace = MetadataReplacementPostProcessor(target_metadata_key="window")
    gc.collect()
    gc.freeze()
    times, sizes = [], []
    for rounds in range(2):
        for query in data["queries"]:
            fixed.hits = [NodeWithScore(node=by_label[label], score=score) for label, score in query]
            t0 = time.perf_counter()
            nodes = replace.postprocess_nodes(retriever.retrieve(QueryBundle("")))
            if rounds:
                times.append(time.perf_counter() - t0)
                sizes.append(len(nodes))
    a = np.array(times) * 1e6
    print(
        f"AutoMergingRetriever + MetadataReplacementPostProcessor: p50 {np.percentile(a, 50):.1f} us  "
        f"p99 {np.percentile(a, 99):.1f} us  ({np.mean(sizes):.1f} nodes) over {len(times)} queries"
    )


if __name__ == "__main__":
    main(sys.argv[1])
