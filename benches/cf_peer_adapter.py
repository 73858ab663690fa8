"""chunkforge's adapters for ``../shared/bench/peer_chunk_bench.py`` (``--extra``).

Run from this folder so that the module is importable, e.g.::

    cd benches && PYTHONPATH=../python python ../../shared/bench/peer_chunk_bench.py \\
        --limit-mb 5 --rounds 3 --extra cf_peer_adapter:recursive --extra cf_peer_adapter:token

Each function is called as ``f(texts, tokenizer_path, max_tokens)`` and returns, per
text, a list of ``(start, end)`` str offsets.
"""

from __future__ import annotations

from functools import cache

import chunkforge

__version__ = chunkforge.__version__


@cache
def _chunker(kind: str, tokenizer_path: str, max_tokens: int):
    tok = chunkforge.Tokenizer.from_file(tokenizer_path)
    cls = {
        "recursive": chunkforge.RecursiveChunker,
        "token": chunkforge.TokenChunker,
        "sentence": chunkforge.SentenceChunker,
    }[kind]
    return cls(tok, max_tokens=max_tokens)


def _per_doc(kind: str, texts, tokenizer_path, max_tokens):
    chunker = _chunker(kind, tokenizer_path, max_tokens)
    out = []
    for t in texts:
        s, e, _ = chunker.spans(t)
        out.append(list(zip(s.tolist(), e.tolist())))
    return out


def _batched(kind: str, texts, tokenizer_path, max_tokens, threads: int):
    doc, start, end, _ = _chunker(kind, tokenizer_path, max_tokens).spans_batch(texts, threads=threads)
    out = [[] for _ in texts]
    for d, s, e in zip(doc.tolist(), start.tolist(), end.tolist()):
        out[d].append((s, e))
    return out


def recursive(texts, tokenizer_path, max_tokens):
    """RecursiveChunker, one document per call (single thread)."""
    return _per_doc("recursive", texts, tokenizer_path, max_tokens)


def token(texts, tokenizer_path, max_tokens):
    """TokenChunker, one document per call (single thread)."""
    return _per_doc("token", texts, tokenizer_path, max_tokens)


def sentence(texts, tokenizer_path, max_tokens):
    """SentenceChunker, one document per call (single thread)."""
    return _per_doc("sentence", texts, tokenizer_path, max_tokens)


def recursive_batch2(texts, tokenizer_path, max_tokens):
    """RecursiveChunker.spans_batch on 2 threads."""
    return _batched("recursive", texts, tokenizer_path, max_tokens, 2)


def token_batch2(texts, tokenizer_path, max_tokens):
    """TokenChunker.spans_batch on 2 threads."""
    return _batched("token", texts, tokenizer_path, max_tokens, 2)
