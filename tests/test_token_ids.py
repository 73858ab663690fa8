"""Chunk token ids from the chunker's own tokenization equal HF ``tokenizers``'
encoding of each chunk's text alone (what the bulk job and the index embed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkforge import _native

from conftest import cf_tokenizer, corpus, hf_tokenizer

TEXT = st.lists(
    st.sampled_from(list("ab c.\n\t-'é😀x1") + ["tmp464", "https://x.org/a_b", " the", "Ünïcode", "[CLS]"]),
    max_size=120,
).map("".join)


def check(kind: str, texts: list[str], strategy: str, max_tokens: int) -> None:
    chunker = _native.Chunker(cf_tokenizer(kind)._native, strategy, max_tokens)
    if strategy == "markdown":
        rows = chunker.structured_batch_ids(texts)
        spans = [(i, int(s), int(e)) for i, (r, _, _, _) in enumerate(rows) for s, e in r[:, :2].tolist()]
        ids = [ids[a:b] for _, _, ids, bounds in rows for a, b in zip(bounds[:-1], bounds[1:])]
    else:
        doc, start, end, _, all_ids, bounds = chunker.spans_batch_ids(texts)
        spans = list(zip(doc.tolist(), start.tolist(), end.tolist()))
        ids = [all_ids[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        assert all(np.array_equal(x, y) for x, y in zip((doc, start, end), chunker.spans_batch(texts)[:3]))
    assert len(ids) == len(spans)
    for (i, s, e), got in zip(spans, ids):
        expected = hf_tokenizer(kind).encode(texts[i][s:e], add_special_tokens=False).ids
        assert got.tolist() == expected, (kind, strategy, texts[i][s:e])


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "token", "markdown"])
def test_ids_of_the_shipped_corpus(kind, strategy):
    check(kind, [d["text"] for d in corpus()[:20]], strategy, 64)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(TEXT, min_size=1, max_size=3),
    strategy=st.sampled_from(["recursive", "sentence", "token"]),
    max_tokens=st.integers(1, 12),
)
def test_ids_equal_encoding_each_chunk_alone(kind, texts, strategy, max_tokens):
    check(kind, texts, strategy, max_tokens)
