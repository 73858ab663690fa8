"""The store's side indexes: built from a commit's tables by :func:`build_side` (``write_store``
does it after each commit of a local store) into ``<store>/side/<version>/``, and memory-mapped
by its readers (:class:`Side`), which then answer a search without LanceDB's three searches:

- the nearest leaves: an HNSW graph (usearch) over the leaves' int8 vectors (:func:`int8_rows`,
  as the in-memory index keeps them), read in place (``view``), exact below :data:`EXACT_MAX` leaves;
- the parents' BM25 scores: postings by term (parent rows and term frequencies) and the
  parents' lengths, scored as :class:`~chunkforge.index.bm25.BM25` scores (the same terms and
  formula, so the same scores as the store's full-text index);
- the leaves of the best parents: the leaves' rows by parent, rescored from int8 as in memory;
- the documents' row numbers in the docs table, read by offset rather than by a filter.

A side is written to a temporary folder and renamed into place, so a reader finds all of it
or none; a reader whose commit has no side (a store on object storage, a build that was
killed, a store written before sides) uses LanceDB's searches, as does a filtered search.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._search import EXACT_MAX, int8_cosines, int8_rows
from .bm25 import BM25
from .store_tables import DOCS, LEAVES, PARENTS, _lancedb, is_local

SIDE = "side"
"""The folder of a store that holds its side indexes, one folder a commit version."""
FORMAT = 1
"""The side's layout version (``side.json``); a reader ignores a side of another."""
CONNECTIVITY = 16
"""Links a node of the HNSW graph keeps (usearch's ``connectivity``)."""
EXPANSION_ADD = 64
"""Candidates the graph's build keeps a node (usearch's ``expansion_add``)."""
EXPANSION_SEARCH = 256
"""Candidates a search keeps (usearch's ``expansion_search``), at least twice those asked."""
_BATCH = 1 << 16  # rows read from a table at a time


def side_folder(uri: str | os.PathLike[str], version: int) -> Path:
    """The side of the commit ``version`` of the local store at ``uri``.

    >>> side_folder("store.lancedb", 3).as_posix()
    'store.lancedb/side/3'
    """
    return Path(os.fspath(uri).removeprefix("file://")) / SIDE / str(version)


def _tables_at(uri: str, commit: dict[str, Any]) -> dict[str, Any]:
    db = _lancedb().connect(uri)
    tables = {}
    for name in (LEAVES, PARENTS, DOCS):
        tables[name] = db.open_table(name)
        tables[name].checkout(commit[name])
    return tables


def _batches(table: Any, columns: list[str]) -> Iterator[Any]:
    """The rows of ``table`` (its version checked out), in row order, ``_BATCH`` at a time."""
    yield from table.search().select(columns).limit(None).to_batches(_BATCH)


def build_side(uri: str | os.PathLike[str], commit: dict[str, Any], *, threads: int = 0) -> Path | None:
    """Builds the side of ``commit`` (a row of the store's commits table) and returns its
    folder; None for a store that is not on local disk. A side already built is kept; the
    sides of commits older than the one before are removed. ``threads``: the HNSW build's
    (0: all cores). Called by ``write_store`` with the store's writer lock held."""
    uri = os.fspath(uri)
    if not is_local(uri):
        return None
    version = int(commit["version"])
    final = side_folder(uri, version)
    if not (final / "side.json").is_file():
        work = final.with_name(f".{version}.{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        tables = _tables_at(uri.removeprefix("file://"), commit)
        doc_ids = [d for b in _batches(tables[DOCS], ["doc_id"]) for d in b.column("doc_id").to_pylist()]
        number = {d: i for i, d in enumerate(doc_ids)}
        parents, bm25 = _write_parents(work, tables[PARENTS], number)
        dim = _write_leaves(work, tables[LEAVES], number, parents, threads)
        (work / "docs.json").write_text(json.dumps(doc_ids), encoding="utf-8")
        meta = {"format": FORMAT, "version": version, "dim": dim, **bm25}
        (work / "side.json").write_text(json.dumps(meta), encoding="utf-8")  # written last
        shutil.rmtree(final, ignore_errors=True)  # a folder without side.json: not a side
        work.rename(final)
    for old in final.parent.iterdir():
        if old.name.isdigit() and version - 1 <= int(old.name) <= version:
            continue
        shutil.rmtree(old, ignore_errors=True)  # older sides, and work folders of killed builds
    return final


def _write_parents(
    work: Path, parents: Any, number: dict[str, int]
) -> tuple[dict[tuple[int, int], int], dict[str, Any]]:
    """The parents' documents, passages and lengths, and their BM25 postings (CSR by term);
    returns ``(doc, passage) -> parent row`` and the counts BM25 scores with."""
    import pyarrow.compute as pc

    vocab: dict[str, int] = {}
    docs, passages, lengths, blocks = [], [], [], []
    first = 0
    for batch in _batches(parents, ["doc_id", "passage", "terms"]):
        docs.append(np.array([number[d] for d in batch.column("doc_id").to_pylist()], np.int32))
        passages.append(batch.column("passage").to_numpy().astype(np.int32))
        words = pc.utf8_split_whitespace(batch.column("terms"))
        counts = pc.list_value_length(words).fill_null(0).to_numpy().astype(np.int64)
        lengths.append(counts)
        flat = pc.list_flatten(words).dictionary_encode()
        ids = np.array([vocab.setdefault(w, len(vocab)) for w in flat.dictionary.to_pylist()], np.int64)
        terms = ids[flat.indices.to_numpy()] if len(flat) else np.zeros(0, np.int64)
        rows = np.repeat(np.arange(first, first + batch.num_rows, dtype=np.int64), counts)
        keys, tfs = np.unique((terms << 32) | rows, return_counts=True)  # by term, then parent
        blocks.append((keys >> 32, keys & 0xFFFFFFFF, tfs))
        first += batch.num_rows
    doc = np.concatenate(docs) if docs else np.zeros(0, np.int32)
    passage = np.concatenate(passages) if passages else np.zeros(0, np.int32)
    length = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    df = np.zeros(len(vocab), np.int64)
    for terms, _, _ in blocks:
        df += np.bincount(terms, minlength=len(vocab))
    ptr = np.concatenate([[0], np.cumsum(df)])
    post_parent = np.lib.format.open_memmap(work / "post_parent.npy", "w+", np.int32, (int(ptr[-1]),))
    post_tf = np.lib.format.open_memmap(work / "post_tf.npy", "w+", np.int32, (int(ptr[-1]),))
    cursor = ptr[:-1].copy()
    for terms, rows, tfs in blocks:  # parents ascend block by block, so each term's postings do
        if not len(terms):
            continue
        unique, start, count = np.unique(terms, return_index=True, return_counts=True)
        at = cursor[terms] + np.arange(len(terms)) - np.repeat(start, count)
        post_parent[at], post_tf[at] = rows, tfs
        cursor[unique] += count
    post_parent.flush()
    post_tf.flush()
    np.save(work / "post_ptr.npy", ptr)
    np.save(work / "parent_doc.npy", doc)
    np.save(work / "parent_passage.npy", passage)
    np.save(work / "parent_length.npy", length.astype(np.float64))
    (work / "vocab.json").write_text(json.dumps(list(vocab)), encoding="utf-8")
    rows_of = {(int(d), int(p)): i for i, (d, p) in enumerate(zip(doc.tolist(), passage.tolist()))}
    return rows_of, {"parents": len(doc), "words": int(length.sum())}


def _write_leaves(
    work: Path, leaves: Any, number: dict[str, int], parents: dict[tuple[int, int], int], threads: int
) -> int:
    """The leaves' int8 vectors and scales, documents, numbers and parents, their rows by
    parent (CSR), and the HNSW graph over them (keys: leaf rows); returns the dimension."""
    from usearch.index import Index as Hnsw

    n = leaves.count_rows()
    dim = leaves.schema.field("vector").type.list_size
    codes = np.lib.format.open_memmap(work / "codes.npy", "w+", np.int8, (n, dim))
    scales = np.zeros(n, np.float32)
    doc, leaf, parent = (np.zeros(n, np.int32) for _ in range(3))
    at = 0
    for batch in _batches(leaves, ["doc_id", "leaf", "passage", "vector"]):
        end = at + batch.num_rows
        column = batch.column("vector")
        vectors = column.values.to_numpy().reshape(len(column), dim)
        codes[at:end], scales[at:end] = int8_rows(vectors)
        numbers = [number[d] for d in batch.column("doc_id").to_pylist()]
        doc[at:end] = numbers
        leaf[at:end] = batch.column("leaf").to_numpy()
        parent[at:end] = [parents[key] for key in zip(numbers, batch.column("passage").to_pylist())]
        at = end
    codes.flush()
    by_parent = np.argsort(parent, kind="stable").astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(parent, minlength=len(parents)))])
    for name, array in {
        "scales": scales,
        "leaf_doc": doc,
        "leaf_no": leaf,
        "leaf_parent": parent,
        "by_parent": by_parent,
        "parent_ptr": ptr,
    }.items():
        np.save(work / f"{name}.npy", array)
    graph = Hnsw(ndim=dim, metric="cos", dtype="i8", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD)
    if n > EXACT_MAX:
        first, copies, copy_ptr = _copies(codes)
        np.save(work / "copies.npy", copies)
        np.save(work / "copy_ptr.npy", copy_ptr)
        for start in range(0, len(first), 1 << 18):
            stop = min(start + (1 << 18), len(first))
            graph.add(np.arange(start, stop), codes[first[start:stop]], threads=threads)
    graph.save(os.fspath(work / "leaves.usearch"))
    return int(dim)


def _copies(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first row of each distinct int8 vector, ``copies``: the rows by vector (rows of
    equal vectors together, the vectors in the order of their first rows, then by row), and
    where each vector's rows start in it (CSR). The graph holds each distinct vector once:
    copies of a text (a licence, a page footer) would otherwise fill each other's links, and
    they tie in any search anyway.

    >>> first, copies, ptr = _copies(np.array([[1, 2], [3, 4], [1, 2]], np.int8))
    >>> first.tolist(), copies.tolist(), ptr.tolist()
    ([0, 1], [0, 2, 1], [0, 2, 3])
    """
    n, weights = len(codes), np.random.default_rng(0).integers(1, 1 << 62, codes.shape[1], dtype=np.int64) | 1
    hashes = np.zeros(n, np.int64)
    for start in range(0, n, 1 << 16):  # 64 bits of each row (wrapping), then checked row by row
        hashes[start : start + (1 << 16)] = codes[start : start + (1 << 16)].astype(np.int64) @ weights
    _, group = np.unique(hashes, return_inverse=True)
    first = np.full(group.max(initial=-1) + 1, n, np.int64)
    np.minimum.at(first, group, np.arange(n))
    for start in range(0, n, 1 << 16):  # a row whose hash another vector shares: a vector of its own
        rows = np.arange(start, min(start + (1 << 16), n))
        clash = rows[(codes[rows] != codes[first[group[rows]]]).any(axis=1)]
        group[clash] = len(first) + np.arange(len(clash))
        first = np.concatenate([first, clash])
    order = np.argsort(first, kind="stable")  # vectors in the order of their first rows
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rank[group], minlength=len(first)))])
    return first[order], np.argsort(rank[group], kind="stable"), ptr


class Side:
    """A commit's side indexes, memory-mapped read-only (see the module); :meth:`open` finds
    them. Safe to share between threads."""

    def __init__(self, folder: Path) -> None:
        from usearch.index import Index as Hnsw

        meta = json.loads((folder / "side.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{folder}: side format {meta.get('format')}, not {FORMAT}")
        self.folder, self.version = folder, int(meta["version"])
        arrays = {p.stem: np.load(p, mmap_mode="r") for p in folder.glob("*.npy")}
        self.codes, self.scales = arrays["codes"], arrays["scales"]
        self.leaf_doc, self.leaf_no, self.leaf_parent = arrays["leaf_doc"], arrays["leaf_no"], arrays["leaf_parent"]
        self.by_parent, self.parent_ptr = arrays["by_parent"], arrays["parent_ptr"]
        self.parent_doc, self.parent_passage = arrays["parent_doc"], arrays["parent_passage"]
        self.post_ptr, self.post_parent, self.post_tf = arrays["post_ptr"], arrays["post_parent"], arrays["post_tf"]
        self.doc_ids: list[str] = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
        self.doc_rows = {d: i for i, d in enumerate(self.doc_ids)}
        self.vocab = {w: i for i, w in enumerate(json.loads((folder / "vocab.json").read_text(encoding="utf-8")))}
        self.count = int(meta["parents"])
        length = arrays["parent_length"]
        self.norm = BM25.K1 * (1 - BM25.B + BM25.B * length / (meta["words"] / self.count)) if self.count else length
        self.exact = len(self.codes) <= EXACT_MAX
        if not self.exact:
            self.copies, self.copy_ptr = arrays["copies"], arrays["copy_ptr"]
        graph = Hnsw.restore(os.fspath(folder / "leaves.usearch"), view=True)
        if graph is None:
            raise ValueError(f"{folder}: no graph")
        graph.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # its setter has no annotations
        self.graph = graph

    @classmethod
    def open(cls, uri: str | os.PathLike[str], version: int) -> Side | None:
        """The side of commit ``version`` of the store at ``uri``; None when it has none, or
        one that cannot be read (said in a warning: the reader then searches LanceDB's indexes)."""
        if not is_local(os.fspath(uri)):
            return None
        folder = side_folder(uri, version)
        if not (folder / "side.json").is_file():
            return None
        try:
            return cls(folder)
        except (ImportError, OSError, ValueError, KeyError) as exc:
            warnings.warn(
                f"the store's side {folder} cannot be read ({exc}); searching LanceDB's indexes", stacklevel=3
            )
            return None

    def leaves(self, rows: np.ndarray) -> tuple[list[str], list[int], list[int]]:
        """The ``doc_id``, ``leaf`` and ``passage`` of leaf rows."""
        return (
            [self.doc_ids[d] for d in self.leaf_doc[rows].tolist()],
            self.leaf_no[rows].tolist(),
            self.parent_passage[self.leaf_parent[rows]].tolist(),
        )

    def nearest(self, unit: np.ndarray, k: int) -> np.ndarray:
        """The rows (in the leaves table) of the ``k`` nearest leaves of the unit vector
        ``unit`` by their int8 vectors, ascending; exact below :data:`EXACT_MAX` leaves."""
        if not len(self.codes):
            return np.zeros(0, np.int64)
        codes, _ = int8_rows(unit[None, :])
        if self.exact:
            from usearch.index import search

            found = search(self.codes, codes[0], min(k, len(self.codes)), "cos", exact=True)
            return np.sort(found.keys.astype(np.int64))
        vectors = self.graph.search(codes[0], k).keys.tolist()  # distinct vectors, nearest first
        rows = np.concatenate([self.copies[self.copy_ptr[v] : self.copy_ptr[v + 1]] for v in vectors] or [[]])
        return np.sort(rows[:k].astype(np.int64))

    def bm25(self, query: str) -> np.ndarray:
        """Every parent row's BM25 score for ``query`` (:meth:`BM25.scores`)."""
        scores = np.zeros(self.count, np.float64)
        for word in set(BM25.words(query)):
            t = self.vocab.get(word)
            if t is None:
                continue
            lo, hi = int(self.post_ptr[t]), int(self.post_ptr[t + 1])
            rows, tfs = self.post_parent[lo:hi], self.post_tf[lo:hi].astype(np.float64)
            idf = np.log(1 + (self.count - (hi - lo) + 0.5) / (hi - lo + 0.5))
            scores[rows] += idf * tfs * (BM25.K1 + 1) / (tfs + self.norm[rows])
        return scores

    def ranked(
        self, query: str, unit: np.ndarray, k: int, pool: int
    ) -> tuple[np.ndarray, dict[tuple[str, int], tuple[int, float]], dict[tuple[str, int], float]]:
        """As the store's LanceDB searches: the rows of the ``k`` nearest leaves; the leaves of
        the ``pool`` best parents by BM25 (``(doc_id, leaf) -> (passage, cosine)``, the cosine
        from int8, as the in-memory index rescores them); the BM25 scores of the parents of
        both that match (``(doc_id, passage) -> score``)."""
        scores = self.bm25(query)
        matched = np.flatnonzero(scores)
        best = matched[np.argsort(-scores[matched], kind="stable")[:pool]].tolist()
        near = self.nearest(unit, k)
        pooled = [self.by_parent[self.parent_ptr[p] : self.parent_ptr[p + 1]] for p in best]
        rows = np.sort(np.concatenate(pooled)) if pooled else np.zeros(0, np.int64)
        cos = np.round(int8_cosines(self.codes[rows], self.scales[rows], unit).astype(np.float64), 6)
        lexical = {(d, leaf): (p, c) for d, leaf, p, c in zip(*self.leaves(rows), cos.tolist())}
        parents = np.unique(self.leaf_parent[np.concatenate([near, rows])])
        parents = parents[scores[parents] > 0]
        bm25 = zip(self.parent_doc[parents].tolist(), self.parent_passage[parents].tolist(), scores[parents].tolist())
        return near, lexical, {(self.doc_ids[d], p): s for d, p, s in bm25}
