"""Naive vs late-chunked vs semantic chunks on the labelled set in tests/data/eval
(20 documents, 48 queries with evidence spans), default model, through
``chunkforge.eval``: top-5 and a 1,000-token budget, token-level recall / IoU.

*naive* and *late* share the same chunk boundaries (RecursiveChunker at 128 and 256
tokens) and differ only in the vectors: each chunk embedded alone vs late chunking
(one pass per document, macro windows of 256 tokens, 32 shared). *semantic* is
SemanticChunker (p95, window 1, max 256 tokens), embedded alone and late.

    python benches/late_semantic_eval.py [--out benches/results/late-semantic.md]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from chunkforge import Encoder, LateChunker, RecursiveChunker, SemanticChunker
from chunkforge import eval as ev

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "eval"


def late_representation(docs, chunks, encoder, embed) -> np.ndarray:
    """``chunkforge.eval`` representation: late chunking over each whole document."""
    return np.vstack(LateChunker(None, encoder).embed_chunks_batch([d.text for d in docs], chunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benches/results/late-semantic.md"))
    args = parser.parse_args()
    corpus = ev.load_corpus(DATA / "corpus.jsonl")
    queries = ev.load_queries(DATA / "queries.jsonl", corpus)
    enc = Encoder.default(on_overflow="truncate", intra_op_threads=2)
    measure = ev.SpanMeasure(corpus)
    semantic = SemanticChunker(enc, max_tokens=256)
    runs = [
        ("naive recursive-128", RecursiveChunker(enc.tokenizer, max_tokens=128), "plain"),
        ("late recursive-128", RecursiveChunker(enc.tokenizer, max_tokens=128), late_representation),
        ("naive recursive-256", RecursiveChunker(enc.tokenizer, max_tokens=256), "plain"),
        ("late recursive-256", RecursiveChunker(enc.tokenizer, max_tokens=256), late_representation),
        ("semantic-256", semantic, "plain"),
        ("semantic-256 late", semantic, late_representation),
    ]
    results = [
        ev.evaluate(
            corpus, queries, chunker, enc, representation=rep, k=5, budget_tokens=1000, measure=measure, name=name
        )
        for name, chunker, rep in runs
    ]
    header = {
        "command": "python benches/late_semantic_eval.py",
        "dataset": "tests/data/eval",
        "model": "all-MiniLM-L6-v2 (optimized ONNX, max_length 256)",
        "k": 5,
        "budget": 1000,
        "coverage": 0.5,
        "unit": "tokens",
    }
    text = ev.markdown(ev.report(results, queries, corpus, header))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text.split("## Similarity")[0])


if __name__ == "__main__":
    main()
