"""Retrieval for an evaluation: the token budget cut and the embedding cache (the
search itself is :class:`chunkforge._search.VectorSearch`).

>>> budget_cut([400, 700, 300, 50], 1000)
[0, 2, 3]
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._search import EXACT_MAX, VectorSearch  # noqa: F401  (re-exported: chunkforge.eval.VectorSearch)
from ..errors import ArgumentError, DatasetError

if TYPE_CHECKING:
    from ..encoder import Encoder


def budget_cut(token_counts: Sequence[int], budget_tokens: int, pack: str = "skip") -> list[int]:
    """Positions of the ranked chunks that fit a context of ``budget_tokens`` tokens:
    ``pack="skip"`` (the default, as in ``Index.expand``) skips a chunk that does not fit
    and lets smaller later ones fill the budget, ``"stop"`` stops at it.

    >>> budget_cut([400, 700, 300, 50], 1000), budget_cut([400, 700, 300, 50], 1000, "stop")
    ([0, 2, 3], [0])
    """
    budget = budget_tokens
    if pack not in ("stop", "skip"):
        raise ArgumentError(f"must be 'stop' or 'skip', not {pack!r}", param="pack")
    taken, used = [], 0
    for i, n in enumerate(token_counts):
        if used + n > budget:
            if pack == "stop":
                break
            continue
        taken.append(i)
        used += n
    return taken


def encoder_key(encoder: Encoder) -> str:
    """What identifies an encoder's vectors: its graph file (path, size, mtime) and settings."""
    st = encoder.graph.stat()
    parts = [
        str(encoder.graph.resolve()),
        st.st_size,
        st.st_mtime_ns,
        encoder.max_length,
        encoder.pooling,
        encoder.normalize,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


class EmbeddingCache:
    """Vectors on disk (SQLite) keyed by (encoder, text hash): a sweep of configs
    embeds each distinct text once. ``embedded`` and ``reused`` count texts.

    >>> import tempfile
    >>> from chunkforge import Encoder
    >>> folder = tempfile.TemporaryDirectory()
    >>> cache = EmbeddingCache(folder.name + "/embeddings.sqlite")
    >>> vectors = cache.embed(Encoder.default(), ["a chunk", "another"])
    >>> vectors = cache.embed(Encoder.default(), ["a chunk", "a third"])
    >>> vectors.shape, cache.embedded, cache.reused
    ((2, 384), 3, 1)
    >>> folder.cleanup()
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash BLOB, vector BLOB, "
                "PRIMARY KEY (model, hash)) WITHOUT ROWID"
            )
        except (OSError, sqlite3.Error) as exc:
            raise DatasetError(f"embedding cache {self.path}: {exc}") from exc
        self.embedded = self.reused = 0

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """``encoder.embed(texts)``, with every text seen before read from the cache."""
        model = encoder_key(encoder)
        hashes = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            batch = unique[i : i + 500]
            rows = self._db.execute(
                f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({','.join('?' * len(batch))})",
                [model, *batch],
            )
            found.update((h, np.frombuffer(v, np.float32)) for h, v in rows)
        missing = [h for h in unique if h not in found]
        if missing:
            first = {h: i for i, h in reversed(list(enumerate(hashes)))}
            vectors = encoder.embed([texts[first[h]] for h in missing])
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                    [(model, h, v.tobytes()) for h, v in zip(missing, vectors)],
                )
            found.update(zip(missing, vectors))
        self.embedded += len(missing)
        self.reused += len(texts) - len(missing)
        return np.stack([found[h] for h in hashes]) if texts else np.zeros((0, encoder.dim), np.float32)

    def close(self) -> None:
        self._db.close()


Embed = Callable[[Sequence[str]], np.ndarray]
