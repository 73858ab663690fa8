"""pytest-benchmark suite for the core (not part of the test run).

    python -m pytest benches/test_bench_chunkers.py --benchmark-columns=median,ops

Groups compare like with like: the tokenizer against HF's pipeline, each chunker
on the same documents, one thread against two, and input sizes for linearity.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest
import tokenizers

import chunkforge

DATA = Path(__file__).parents[1] / "tests" / "data"


@cache
def texts() -> list[str]:
    with gzip.open(DATA / "docs-corpus-small.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


@cache
def hf() -> tokenizers.Tokenizer:
    tok = tokenizers.Tokenizer.from_str(_default_json())
    tok.no_truncation()
    tok.no_padding()
    return tok


def _default_json() -> str:
    return (Path(chunkforge.__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json").read_text()


@pytest.mark.benchmark(group="count")
def test_count_chunkforge(benchmark):
    tok = chunkforge.Tokenizer.default()
    benchmark(tok.count_batch, texts(), threads=1)


@pytest.mark.benchmark(group="count")
def test_count_hf_tokenizers(benchmark):
    benchmark.pedantic(hf().encode_batch_fast, args=(texts(),), kwargs={"add_special_tokens": False}, rounds=2)


@pytest.mark.parametrize("cls", [chunkforge.RecursiveChunker, chunkforge.TokenChunker, chunkforge.SentenceChunker])
@pytest.mark.benchmark(group="chunk 1.5 MB, 512 tokens, 1 thread")
def test_chunkers(benchmark, cls):
    chunker = cls(max_tokens=512)
    benchmark(lambda: [chunker.chunk(t) for t in texts()])


@pytest.mark.benchmark(group="2 KB document")
def test_latency_2kb(benchmark):
    chunker = chunkforge.RecursiveChunker(max_tokens=512)
    docs = [t[:2048] for t in texts() if len(t) >= 2048]
    it = iter(docs * 1000)
    benchmark(lambda: chunker.chunk(next(it)))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.benchmark(group="spans_batch threads")
def test_spans_batch_threads(benchmark, threads):
    chunker = chunkforge.RecursiveChunker(max_tokens=512)
    benchmark(chunker.spans_batch, texts(), threads=threads)


@pytest.mark.parametrize("mb", [1, 2, 4])
@pytest.mark.benchmark(group="linearity: one word without separators")
def test_long_word(benchmark, mb):
    word = "abcdefghij" * (100_000 * mb)
    chunker = chunkforge.RecursiveChunker(
        chunkforge.Tokenizer.from_file(DATA / "bytelevel-bpe-8k.tokenizer.json"), max_tokens=512
    )
    benchmark.pedantic(chunker.spans, args=(word,), rounds=2)


@pytest.mark.parametrize("copies", [1, 2, 4])
@pytest.mark.benchmark(group="linearity: one long document")
def test_long_document(benchmark, copies):
    doc = "\n\n".join(texts() * copies)  # 1.5, 3, 6 MB in a single str
    chunker = chunkforge.RecursiveChunker(max_tokens=512)
    benchmark.pedantic(chunker.spans, args=(doc,), rounds=2)
