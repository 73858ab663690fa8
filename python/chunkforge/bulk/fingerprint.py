"""The identity of an encoder's vectors, part of every shard's name and of the vector
cache's key (:func:`vectors_key`): a hash of its graph's bytes, its tokenizer's definition
and its settings.

>>> tokenizer_json(Tokenizer.default()).startswith("{")
True
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import file_sha256
from ..tokenizer import DEFAULT_TOKENIZER, Tokenizer

if TYPE_CHECKING:
    from ..encoder import Encoder


def vectors_key(fingerprint: str, dtype: str) -> str:
    """What a vector-cache entry must match to be reused: the model fingerprint
    (:func:`model_fingerprint`) and the dtype, as recorded in a Parquet file's
    ``chunkforge.vectors`` metadata.

    >>> vectors_key("86b4c13d", "float32")
    '{"model": "86b4c13d", "dtype": "float32"}'
    """
    return json.dumps({"model": fingerprint, "dtype": dtype})


def model_fingerprint(encoder: Encoder) -> str:
    """A hash of what makes the encoder's vectors: its graph's bytes, its tokenizer's
    definition, max_length, pooling and normalization."""
    digest = hashlib.sha256(graph_digest(encoder.graph).encode())
    digest.update((tokenizer_json(encoder.tokenizer) or encoder.tokenizer.source).encode())
    digest.update(json.dumps([encoder.max_length, encoder.pooling, encoder.normalize]).encode())
    if encoder.runtime != "onnxruntime":  # the same graph, other numerics (bf16)
        digest.update(",".join(encoder.active_providers).encode())
    return digest.hexdigest()[:32]


@functools.lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def graph_digest(graph: Path) -> str:
    """SHA-256 of a graph file, computed once per process while the file is unchanged."""
    stat = graph.stat()
    return _file_digest(str(graph.resolve()), stat.st_size, stat.st_mtime_ns)


def tokenizer_json(tokenizer: Tokenizer) -> str | None:
    """The ``tokenizer.json`` text a tokenizer was loaded from, when it is known."""
    if tokenizer.source == DEFAULT_TOKENIZER:
        return (resources.files("chunkforge") / "data" / DEFAULT_TOKENIZER).read_text(encoding="utf-8")
    if os.path.isfile(tokenizer.source):
        return Path(tokenizer.source).read_text(encoding="utf-8")
    return None
