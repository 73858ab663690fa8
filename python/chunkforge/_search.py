"""Cosine search over a matrix of vectors, shared by ``chunkforge.eval`` and the index:
exact (numpy) up to :data:`EXACT_MAX` rows, hnswlib beyond.

>>> ids, sims = top_k(np.array([[0.1, 0.9, 0.5]]), 2)
>>> ids.tolist(), sims.tolist()
([[1, 2]], [[0.9, 0.5]])
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

EXACT_MAX = 20_000
"""Up to this many rows, exact search (numpy here, usearch's scan in the store's side);
beyond, a graph (hnswlib here, usearch's in the side)."""


def normalized(v: np.ndarray) -> np.ndarray:
    """``v`` as contiguous float32 rows of unit length (zero rows stay zero)."""
    v = np.ascontiguousarray(v, np.float32)
    unit: np.ndarray = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return unit


def int8_rows(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, scales)``: the rows of ``v`` as unit vectors in int8, one float32 scale a row
    (a cosine within ~0.005 of float32's: ``codes @ unit * scales``). The in-memory index keeps
    its leaves so and scores every leaf from them; the store scores by the same rule.

    >>> codes, scales = int8_rows(np.array([[3.0, 4.0]]))
    >>> codes.tolist(), round(float(int8_cosines(codes, scales, np.array([0.6, 0.8]))[0]), 3)
    ([[95, 127]], 0.999)
    """
    unit = normalized(v)
    scales = (np.maximum(np.abs(unit).max(axis=1), 1e-12) / 127).astype(np.float32)
    return np.rint(unit / scales[:, None]).astype(np.int8), scales


def int8_cosines(codes: np.ndarray, scales: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Cosines of int8 rows (:func:`int8_rows`) with the unit vector ``unit``, to 6 decimals
    (float64): every leaf's score in an index and a store, whichever search found it (a
    float32 sum's last bit depends on a row's place in its block, and leaves of equal text must
    tie exactly).

    >>> int8_cosines(*int8_rows(np.array([[3.0, 4.0]])), np.array([0.6, 0.8], np.float32)).tolist()
    [0.999055]
    """
    cos = (codes.astype(np.float32) @ unit.astype(np.float32)) * scales
    rounded: np.ndarray = np.round(cos.astype(np.float64), 6)
    return rounded


def top_k(similarities: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, similarities)`` of the ``k`` best columns of each row, best first (ties:
    the lower id first); a 1-d input gives 1-d outputs."""
    ids = np.argsort(-similarities, axis=-1, kind="stable")[..., :k]
    return ids, np.take_along_axis(similarities, ids, axis=-1)


class VectorSearch:
    """Cosine search over ``(n, d)`` vectors: exact (numpy) up to ``exact_max`` rows,
    hnswlib (M=16, ef_construction=200, ef >= 2 x depth) beyond.

    >>> VectorSearch(np.eye(3, dtype=np.float32)).search(np.eye(3, dtype=np.float32)[[1]], 2)[0].tolist()
    [[1, 0]]
    """

    def __init__(self, vectors: np.ndarray, exact_max: int = EXACT_MAX, threads: int | None = None) -> None:
        self.vectors = normalized(vectors)
        self.exact = len(vectors) <= exact_max
        self.threads = threads or os.cpu_count() or 1
        if not self.exact:
            try:
                import hnswlib
            except ImportError as exc:
                raise ImportError(
                    f"{len(vectors)} chunks need hnswlib: pip install 'chunkforge[eval]' (or raise exact_max)"
                ) from exc
            self.index = hnswlib.Index(space="ip", dim=vectors.shape[1])
            self.index.init_index(max_elements=len(vectors), ef_construction=200, M=16, random_seed=0)
            self.index.add_items(self.vectors, np.arange(len(vectors)), num_threads=self.threads)

    def search(self, queries: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, similarities)``, ``(q, depth)`` each, best first (depth capped at n)."""
        depth = min(depth, len(self.vectors))
        queries = normalized(queries)
        if self.exact:
            return top_k(queries @ self.vectors.T, depth)
        self.index.set_ef(max(2 * depth, 64))
        ids, dist = self.index.knn_query(queries, k=depth, num_threads=self.threads)
        return ids.astype(np.int64), 1.0 - dist


HELPER_THREADS = 1
"""Threads that run one half of a search while the calling thread runs the other (the
index's second graph, the store's nearest-neighbour query)."""
_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def helper_threads() -> ThreadPoolExecutor:
    """The process's search helper threads (made again in a forked child, where the
    parent's threads do not run).

    >>> helper_threads().submit(sum, [1, 2]).result()
    3
    """
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(HELPER_THREADS, thread_name_prefix="chunkforge-search"))
        return _pool[1]
