"""Shared fixtures: the two real tokenizers (WordPiece and byte-level BPE) in
chunkforge's and in HF ``tokenizers``' form, and the shipped corpus."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest
import tokenizers

import chunkforge

DATA = Path(__file__).parent / "data"
PACKAGE_DATA = Path(chunkforge.__file__).parent / "data"
TOKENIZER_FILES = {
    "wordpiece": PACKAGE_DATA / "all-MiniLM-L6-v2.tokenizer.json",
    "bpe": DATA / "bytelevel-bpe-8k.tokenizer.json",
}


@cache
def corpus(name: str = "docs-corpus-small.jsonl.gz") -> list[dict]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@cache
def hf_tokenizer(kind: str) -> tokenizers.Tokenizer:
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER_FILES[kind]))
    tok.no_truncation()
    tok.no_padding()
    return tok


@cache
def cf_tokenizer(kind: str) -> chunkforge.Tokenizer:
    return chunkforge.Tokenizer.from_file(TOKENIZER_FILES[kind])


def hf_count(kind: str, text: str) -> int:
    return len(hf_tokenizer(kind).encode(text, add_special_tokens=False).ids)


@pytest.fixture(params=sorted(TOKENIZER_FILES))
def kind(request) -> str:
    return request.param
