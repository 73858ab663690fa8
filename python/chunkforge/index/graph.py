"""The leaves' HNSW graphs: deterministic builds on two cores, one search over all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import hnswlib
import numpy as np

from .._search import helper_threads

GRAPHS = 2
"""Graphs a new index spreads its leaves over (label ``l`` in graph ``l % GRAPHS``):
each is filled by one thread, the graphs at once. A constant, not the number of
cores, so that every machine builds the same graphs."""
EF_CONSTRUCTION = 100
"""hnswlib's ``ef_construction`` (recall@100 of two graphs searched at ``ef=100``:
0.995 on 23.6k real leaf vectors, as one graph built at 100 and searched at 200)."""
M = 16
_INSERT_ROWS = 8192  # hnswlib copies (normalizes) what it is given: bounded blocks


class Graph:
    """HNSW graphs (hnswlib, cosine) over labelled unit vectors. Each graph is filled
    by one thread in label order, so two builds give the same graphs byte for byte
    (hnswlib's own parallel insertion depends on thread scheduling); the graphs are
    filled in parallel, so a build still uses two cores. A search asks every graph
    for ``k`` and keeps the ``k`` nearest.

    >>> g = Graph(dim=2)
    >>> g.add(np.array([[1, 0], [0, 1], [1, 1]], np.float32), np.arange(3))
    >>> [label for label, _ in g.search(np.array([1, 0.1], np.float32), k=2)]
    [0, 2]
    """

    def __init__(self, dim: int, graphs: int = GRAPHS, capacity: int = 1024) -> None:
        self.dim = dim
        self._graphs = []
        for _ in range(graphs):
            g = hnswlib.Index(space="cosine", dim=dim)
            g.init_index(max_elements=max(capacity // graphs + 1, 1024), ef_construction=EF_CONSTRUCTION, M=M)
            self._graphs.append(g)
        self._alive = [0] * graphs
        self.top = 0
        """1 + the largest label ever added (deleted ones too)."""

    @classmethod
    def load(cls, paths: Sequence[Path], dim: int, live: np.ndarray, capacity: int) -> Graph:
        """Graphs saved by :meth:`save` (``paths`` in graph order), ``live`` the labels
        not deleted. RuntimeError when a file is not an hnswlib graph."""
        graph = cls.__new__(cls)
        graph.dim, graph._graphs = dim, []
        for path in paths:
            g = hnswlib.Index(space="cosine", dim=dim)
            g.load_index(str(path), max_elements=max(capacity // len(paths) + 1, 1024))
            graph._graphs.append(g)
        graph._alive = np.bincount(live % len(paths), minlength=len(paths)).tolist()
        ids = [i for g in graph._graphs for i in g.get_ids_list()]
        graph.top = max(ids) + 1 if ids else 0
        return graph

    def __len__(self) -> int:
        return sum(self._alive)

    @property
    def files(self) -> list[str]:
        """The file names :meth:`save` writes."""
        return [f"graph-{i}.hnsw" for i in range(len(self._graphs))]

    def save(self, folder: Path) -> None:
        for g, name in zip(self._graphs, self.files):
            g.save_index(str(folder / name))

    def add(self, vectors: np.ndarray, labels: np.ndarray, threads: int | None = None) -> None:
        """Adds ``vectors`` (rows, float32) under the new ``labels`` (ascending). Each graph is
        filled by one thread (the same graphs on every build) unless ``threads`` exceeds the
        number of graphs: then hnswlib inserts with ``threads // graphs`` threads into each."""
        n = len(self._graphs)
        mine = [np.flatnonzero(labels % n == i) for i in range(n)]
        for g, rows in zip(self._graphs, mine):
            need = g.get_current_count() + len(rows)
            if need > g.get_max_elements():
                g.resize_index(max(need, 2 * g.get_max_elements()))

        per_graph = max((threads or n) // n, 1)

        def fill(i: int) -> None:
            rows = mine[i]
            for at in range(0, len(rows), _INSERT_ROWS):
                part = rows[at : at + _INSERT_ROWS]
                self._graphs[i].add_items(vectors[part], labels[part], num_threads=per_graph)

        if n == 1:
            fill(0)
        else:  # hnswlib releases the GIL while it inserts
            with ThreadPoolExecutor(n) as pool:
                list(pool.map(fill, range(n)))
        for i, rows in enumerate(mine):
            self._alive[i] += len(rows)
        if len(labels):
            self.top = max(self.top, int(labels.max()) + 1)

    def delete(self, labels: Sequence[int]) -> None:
        n = len(self._graphs)
        for label in labels:
            self._graphs[label % n].mark_deleted(label)
            self._alive[label % n] -= 1

    def vectors(self, labels: np.ndarray) -> np.ndarray:
        """The stored (unit) vectors of ``labels``."""
        n = len(self._graphs)
        out = np.empty((len(labels), self.dim), np.float32)
        for i, g in enumerate(self._graphs):
            rows = np.flatnonzero(labels % n == i)
            if len(rows):
                out[rows] = np.asarray(g.get_items(labels[rows], return_type="numpy"), np.float32)
        return out

    def search(self, vector: np.ndarray, k: int, keep: Callable[[int], bool] | None = None) -> list[tuple[int, float]]:
        """``(label, cosine)`` of the ``k`` nearest labels ``keep`` accepts, nearest first
        (fewer when the filter leaves too few reachable), each graph searched at
        ``ef=max(k, 100)``. Unfiltered, it is :meth:`start` finished at once; a filter calls
        back into Python, so the graphs are searched one after another on this thread."""
        if keep is None:
            return self.start(vector, k)()
        return self._merged([x for i in range(len(self._graphs)) for x in self._nearest(i, vector, k, keep)], k)

    def start(self, vector: np.ndarray, k: int) -> Callable[[], list[tuple[int, float]]]:
        """Starts an unfiltered :meth:`search` of all graphs but the first on helper threads
        (hnswlib releases the GIL) and returns the function that searches the first here and
        merges: the caller can do other work while the helpers search.

        >>> g = Graph(dim=2); g.add(np.eye(2, dtype=np.float32), np.arange(2))
        >>> finish = g.start(np.array([0, 1], np.float32), k=1)
        >>> finish()
        [(1, 1.0)]
        """
        others = [helper_threads().submit(self._nearest, i, vector, k, None) for i in range(1, len(self._graphs))]

        def finish() -> list[tuple[int, float]]:
            found = self._nearest(0, vector, k, None)
            for other in others:
                found.extend(other.result())
            return self._merged(found, k)

        return finish

    def _nearest(
        self, i: int, vector: np.ndarray, k: int, keep: Callable[[int], bool] | None
    ) -> list[tuple[float, int]]:
        """``(distance, label)`` of graph ``i``'s ``k`` nearest, at ``ef=max(k, 100)``."""
        want = min(k, self._alive[i])
        if want == 0:
            return []
        g = self._graphs[i]
        g.set_ef(max(k, 100))
        try:
            labels, distances = g.knn_query(vector, k=want, filter=keep)
        except RuntimeError:  # too few reachable under the filter: fewer results
            labels, distances = g.knn_query(vector, k=max(1, want // 4), filter=keep)
        return list(zip(distances[0].tolist(), labels[0].tolist()))

    @staticmethod
    def _merged(found: list[tuple[float, int]], k: int) -> list[tuple[int, float]]:
        found.sort()
        return [(int(label), 1.0 - d) for d, label in found[:k]]
