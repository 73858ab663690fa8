"""Semantic chunking throughput: chunkforge's SemanticChunker against LlamaIndex's
SemanticSplitterNodeParser driven by the same ONNX encoder through a small adapter.

Both use all-MiniLM-L6-v2 (optimized graph, 2 intra-op threads), the 95th
percentile threshold and one sentence of context (chunkforge ``window=1``: one
sentence each side of a boundary, each sentence embedded once; LlamaIndex
``buffer_size=1``: sentence i-1..i+1 combined, so about three times the tokens).
LlamaIndex has no token limit: the largest chunk and the share over ``max_tokens``
are reported. LlamaIndex runs in its own virtual environment:

    python benches/semantic_bench.py [--docs 20] [--json out.json]
    bench-venv/bin/python benches/semantic_bench.py --llamaindex [--docs 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "docs-corpus-small.jsonl.gz"


def llamaindex_chunks(docs: list[str], enc: object) -> list[list[str]]:
    from llama_index.core import Document
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    class ChunkforgeEmbedding(BaseEmbedding):
        """LlamaIndex adapter over chunkforge's ONNX encoder."""

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return enc.embed(texts).tolist()  # type: ignore[attr-defined]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    splitter = SemanticSplitterNodeParser.from_defaults(
        embed_model=ChunkforgeEmbedding(embed_batch_size=2048),
        buffer_size=1,
        breakpoint_percentile_threshold=95,
        include_metadata=False,
        include_prev_next_rel=False,
    )
    return [[n.get_content() for n in splitter.get_nodes_from_documents([Document(text=d)])] for d in docs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--llamaindex", action="store_true", help="run LlamaIndex's splitter (in its own venv)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.llamaindex:  # chunkforge and onnxruntime from the main environment, after the venv's own packages
        sys.path += [
            str(ROOT / "python"),
            f"{sys.base_prefix}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages",
        ]
    from chunkforge import Encoder, SemanticChunker

    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f][: args.docs]
    enc = Encoder.default(intra_op_threads=2, on_overflow="truncate")
    start = time.perf_counter()
    if args.llamaindex:
        name, texts = "llamaindex SemanticSplitterNodeParser", llamaindex_chunks(docs, enc)
    else:
        name = "chunkforge SemanticChunker"
        texts = [[c.text for c in doc] for doc in SemanticChunker(enc, max_tokens=args.max_tokens).chunk_batch(docs)]
    seconds = time.perf_counter() - start
    counts = [enc.tokenizer.count(t) for doc in texts for t in doc]
    result = {
        "splitter": name,
        "docs": len(docs),
        "doc_tokens": int(enc.tokenizer.count_batch(docs).sum()),
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(docs) / seconds, 3),
        "chunks": len(counts),
        "mean_chunk_tokens": round(sum(counts) / len(counts), 1),
        "max_chunk_tokens": max(counts),
        f"share_over_{args.max_tokens}": round(sum(c > args.max_tokens for c in counts) / len(counts), 4),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
