"""The benchmark texts: 1,200 prose sentences and 800 passages of 100-250 tokens
from ``tests/data/docs-corpus-small.jsonl.gz``, shuffled with a fixed seed.

Passages are chunks of the documents cut by chunkforge's ``RecursiveChunker``
(what an embedding pipeline would feed the encoder); sentences are 6-60 word
sentences of prose paragraphs (no code, tables or markup).

>>> texts = mixed_texts()  # doctest: +SKIP
>>> len(texts)  # doctest: +SKIP
2000
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import chunkforge

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "docs-corpus-small.jsonl.gz"


def prose(paragraph: str) -> str | None:
    """The paragraph on one line when it reads as prose, else None."""
    lines = paragraph.split("\n")
    if any(line.startswith((" ", "\t", ">>>", "..", "$", "|")) for line in lines):
        return None
    text = re.sub(r"\s+", " ", paragraph).strip()
    if len(text.split()) < 6 or sum(c.isalpha() or c == " " for c in text) / len(text) < 0.85:
        return None
    return text


def mixed_texts(n_sentences: int = 1200, n_passages: int = 800, seed: int = 20240601) -> list[str]:
    """``n_sentences`` sentences and ``n_passages`` passages, shuffled."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f]
    sentences = []
    for doc in docs:
        for par in filter(None, map(prose, re.split(r"\n\s*\n", doc))):
            sentences += [par[s:e] for s, e in chunkforge.split_sentences(par) if 6 <= len(par[s:e].split()) <= 60]
    chunker = chunkforge.RecursiveChunker(max_tokens=248)
    passages = [c.text for doc in docs for c in chunker.chunk(doc) if c.token_count >= 98]
    sentences, passages = list(dict.fromkeys(sentences)), list(dict.fromkeys(passages))
    if len(sentences) < n_sentences or len(passages) < n_passages:
        raise RuntimeError(f"{CORPUS} gave only {len(sentences)} sentences and {len(passages)} passages")
    rng = random.Random(seed)
    texts = rng.sample(sentences, n_sentences) + rng.sample(passages, n_passages)
    rng.shuffle(texts)
    return texts


def corpus_documents(leaves: int) -> list[dict]:
    """The first documents of the 35 MB corpus (``tests/data/docs-corpus.jsonl.gz``)
    holding about ``leaves`` sentences (one index leaf each, roughly)."""
    out, total = [], 0
    with gzip.open(CORPUS.with_name("docs-corpus.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            out.append({"id": record["id"], "text": record["text"]})
            total += record["text"].count(". ") + record["text"].count("\n\n") + 1
            if total >= leaves:
                break
    return out


def corpus_chunks(n: int = 2000, max_tokens: int = 254) -> list[str]:
    """The first ``n`` chunks of ``tests/data/docs-corpus-small.jsonl.gz`` in corpus order, cut by
    ``RecursiveChunker(max_tokens)`` (all-MiniLM-L6-v2's window: what a bulk re-embedding feeds it).

    >>> len(corpus_chunks())  # doctest: +SKIP
    2000
    """
    chunker = chunkforge.RecursiveChunker(max_tokens=max_tokens)
    out: list[str] = []
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            out += [c.text for c in chunker.chunk(json.loads(line)["text"])]
            if len(out) >= n:
                return out[:n]
    raise RuntimeError(f"{CORPUS} gave only {len(out)} chunks")
