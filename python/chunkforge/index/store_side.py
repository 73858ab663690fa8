"""The store's side indexes: built from a commit's tables by :func:`build_side` (``write_store``
does it for each commit of a local store, before it adds the commit) into
``<store>/side/<version>/``, and read in place by its readers (:class:`Side`: the arrays and
the graph mapped, a document's row read from the file), which then answer a search without
LanceDB's three searches and its take:

- the nearest leaves: an HNSW graph (usearch) over the leaves' distinct int8 vectors
  (:func:`int8_rows`, as the in-memory index keeps them), read in place (``view``) and searched
  on a helper thread while the reader reads the best BM25 parents' sections; below
  :data:`EXACT_MAX` leaves an exact scan of them;
- the parents' BM25 scores: postings by term (parent rows and each one's share of the score,
  :class:`~chunkforge.index.bm25.BM25`'s terms and formula, so the scores of the store's
  full-text index), read from the highest shares down, four times deeper each round, until the
  best parents are known (or summed whole, for questions of common words);
- the leaves of the best parents: the leaves' rows by parent; every leaf found is scored from
  its int8 copy, as in memory, so a search reads no vector from the leaves table;
- the documents: each one's sections (:func:`~chunkforge.index.trees.section_parts`: a hit's
  expansion never leaves its section), in an Arrow file of one record batch a section, so that
  a hit costs one read of its section, neither a LanceDB take (at 10M leaves about 2 ms a
  call) nor its whole document; the sections a search needs are asked of the disk at once
  (:attr:`Side.prefetch`), so that their reads overlap.

A side is written to a temporary folder and renamed into place, so a reader finds all of it
or none, and names its tables' versions, so that it is never read with other tables; a
reader whose commit has no side (a store on object storage, one written with ``side=False``
or before sides) uses LanceDB's searches, as does a filtered search. A side is rebuilt whole
for each commit: at 10M leaves (372k distinct vectors, 82k documents, 627k sections) in 315 s
on 2 cores, 8.7 GB.

The postings and their search are written here, not taken from a library: their scores must
be :class:`~chunkforge.index.bm25.BM25`'s to the last term (the store answers as the in-memory
index), and they are numpy arrays a reader maps rather than loads.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._search import EXACT_MAX, helper_threads, int8_cosines, int8_rows, top_k
from ..errors import InputError
from .bm25 import BM25
from .store_tables import DOCS, LANCEDB_EXTRA, LEAVES, PARENTS, _lancedb, is_local, schemas
from .trees import read_rows, section_parts

if TYPE_CHECKING:
    import pyarrow as pa

SIDE = "side"
"""The folder of a store that holds its side indexes, one folder a commit version."""
FORMAT = 5
"""The side's layout version (``side.json``): :func:`build_side` rebuilds a side of another."""
FORMATS_READ = (4, 5)
"""The layouts a reader reads (it ignores a side of another): format 4 has no
``part_offset``, so its sections are read without :attr:`Side.prefetch`."""
CONNECTIVITY = 16
"""Links a node of the HNSW graph keeps (usearch's ``connectivity``)."""
EXPANSION_ADD = 64
"""Candidates the graph's build keeps a node (usearch's ``expansion_add``)."""
EXPANSION_SEARCH = 256
"""Candidates a search keeps (usearch's ``expansion_search``; a search asking for more keeps
that many). Measured on the real model's vectors (150k distinct leaves, 60 questions): 0.88 of
the exact 64 nearest, against 0.76 with 128, in about 2 ms."""
HEAD_POSTINGS = 64
"""Postings of each question term a BM25 search reads first, the highest impacts (unless they
are over :data:`ROUND_POSTINGS` in all: then it sums every posting at once)."""
ROUND_POSTINGS = 1024
"""Postings a round of a BM25 search reads at most: past that all of its terms' postings are
summed at once (scoring each parent read costs a search of each term's postings)."""
SUM_EVERY_PARENT = 32
"""Summing all of its terms' postings, a BM25 search keeps a score for every parent once the
postings are more than 1/32 of the parents (else for the parents they name)."""
_BATCH = 1 << 16  # rows read from a table at a time
_DOC_BATCH = 256  # documents read from the docs table at a time


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


def _batches(table: Any, columns: list[str], rows: int = _BATCH) -> Iterator[Any]:
    """The rows of ``table`` (its version checked out), in row order, ``rows`` at a time."""
    yield from table.search().select(columns).limit(None).to_batches(rows)


def build_side(uri: str | os.PathLike[str], commit: dict[str, Any]) -> Path | None:
    """Builds the side of ``commit`` (a row of the store's commits table: its version and its
    tables' versions) and returns its folder; None for a store that is not on local disk. A
    side of the same tables is kept; the sides of commits older than the one before are
    removed. ``write_store`` calls it, with the store's writer lock held, before it adds the
    commit, so that a reader that sees a commit finds its side."""
    uri = os.fspath(uri)
    if not is_local(uri):
        return None
    try:
        import usearch.index  # noqa: F401
    except ImportError as exc:
        raise InputError(f"the store's side indexes need usearch: {LANCEDB_EXTRA}") from exc
    version = int(commit["version"])
    final = side_folder(uri, version)
    held = _read_meta(final)
    if held.get("format") != FORMAT or held.get("tables") != _versions(commit):
        work = final.with_name(f".{version}.{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        tables = _tables_at(uri.removeprefix("file://"), commit)
        doc_ids = _write_parts(work, tables[DOCS])
        number = {d: i for i, d in enumerate(doc_ids)}
        parents, bm25 = _write_parents(work, tables[PARENTS], number)
        exact = _write_leaves(work, tables[LEAVES], number, parents)
        (work / "docs.json").write_text(json.dumps(doc_ids), encoding="utf-8")
        meta = {"format": FORMAT, "version": version, "tables": _versions(commit), "exact": exact, **bm25}
        (work / "side.json").write_text(json.dumps(meta), encoding="utf-8")  # written last
        for path in [*work.iterdir(), work]:  # on disk before the rename makes it a side
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        shutil.rmtree(final, ignore_errors=True)  # a side of other tables (a killed update's)
        work.rename(final)
    for old in final.parent.iterdir():
        if old.name.isdigit() and version - 1 <= int(old.name) <= version:
            continue
        shutil.rmtree(old, ignore_errors=True)  # older sides, and work folders of killed builds
    return final


def _versions(commit: dict[str, Any]) -> dict[str, int]:
    """The versions of a commit's tables (a side is of those)."""
    return {name: int(commit[name]) for name in (LEAVES, PARENTS, DOCS)}


def _read_meta(folder: Path) -> dict[str, Any]:
    """A side's ``side.json`` (empty when there is none)."""
    try:
        meta: dict[str, Any] = json.loads((folder / "side.json").read_text(encoding="utf-8"))
        return meta
    except FileNotFoundError:
        return {}


def _write_parts(work: Path, docs: Any) -> list[str]:
    """The docs table's rows, in row order, cut into their sections' parts
    (:func:`~chunkforge.index.trees.section_parts`) in an Arrow file (``parts.arrow``) of one
    record batch a part, so that a reader reads a hit's section alone; beside it each
    document's parts (``part_ptr``), each part's start (``part_base``), first leaf
    (``part_leaf``) and bytes in the file (``part_offset``: part ``i``'s from ``part_offset[i]``
    to ``part_offset[i + 1]``, the first one's with the file's schema) and each document's
    length (``doc_length``); returns the documents' ids."""
    import pyarrow as pa

    columns = schemas(1)[DOCS]  # the docs table's columns (but its shard), and each part's start
    kept = [f for f in columns if f.name not in ("doc_id", "shard")]
    schema = pa.schema([columns.field("doc_id"), pa.field("base", pa.int64()), *kept])
    names = ["doc_id", "text", "metadata", "headings", "nodes", "leaves", "sentences"]
    with_words = "words" in docs.schema.names
    doc_ids: list[str] = []
    ptr, bases, first_leaves, lengths, offsets = [0], [], [], [], [0]
    where = f"{work.name}: the docs table"
    with pa.OSFile(os.fspath(work / "parts.arrow"), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for batch in _batches(docs, names + ["words"] * with_words, _DOC_BATCH):
            table = pa.Table.from_batches([batch])
            words = table.column("words").to_pylist() if with_words else [None] * table.num_rows
            metadata = table.column("metadata").to_pylist()  # as stored
            for i, (row, saved) in enumerate(zip(read_rows(table, where), words)):
                parts = section_parts(row.text, json.loads(row.headings), row.nodes, row.leaves, row.sentences, saved)
                for part in parts:
                    columns = {
                        "doc_id": [row.doc_id],
                        "base": [part.base],
                        "text": [part.text],
                        "metadata": [metadata[i]],
                        "headings": [part.headings],
                        "nodes": [part.nodes.reshape(-1).tolist()],
                        "leaves": [part.leaves.tolist()],
                        "sentences": [part.sentences.reshape(-1).tolist()],
                        "words": [part.words],
                    }
                    writer.write_batch(pa.record_batch(columns, schema=schema))
                    offsets.append(sink.tell())
                doc_ids.append(row.doc_id)
                ptr.append(ptr[-1] + len(parts))
                bases += [p.base for p in parts]
                first_leaves += [p.first_leaf for p in parts]
                lengths.append(len(row.text))
    np.save(work / "part_ptr.npy", np.array(ptr, np.int64))
    np.save(work / "part_base.npy", np.array(bases, np.int64))
    np.save(work / "part_leaf.npy", np.array(first_leaves, np.int64))
    np.save(work / "part_offset.npy", np.array(offsets, np.int64))
    np.save(work / "doc_length.npy", np.array(lengths, np.int64))
    return doc_ids


def _write_parents(
    work: Path, parents: Any, number: dict[str, int]
) -> tuple[dict[tuple[int, int], int], dict[str, Any]]:
    """The parents' documents and passages, and their BM25 postings (CSR by term): each
    term's parent rows, ascending, with the term's share of their score (its impact), and
    their order by impact; returns ``(doc, passage) -> parent row`` and the counts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    vocab: dict[str, int] = {}
    docs, passages, lengths, blocks = [], [], [], []
    first = 0
    for batch in _batches(parents, ["doc_id", "passage", "terms"]):
        docs.append(np.array([number[d] for d in batch.column("doc_id").to_pylist()], np.int32))
        passages.append(batch.column("passage").to_numpy().astype(np.int32))
        terms = batch.column("terms")  # no words: null, as splitting "" gives [""]
        words = pc.utf8_split_whitespace(pc.if_else(pc.equal(terms, ""), pa.scalar(None, pa.string()), terms))
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
    count, words = len(doc), int(length.sum())
    norm = BM25.K1 * (1 - BM25.B + BM25.B * length / (words / count)) if count else np.zeros(0)
    idf = np.log(1 + (count - df + 0.5) / (df + 0.5))
    post_parent = np.lib.format.open_memmap(work / "post_parent.npy", "w+", np.int32, (int(ptr[-1]),))
    impact = np.zeros(int(ptr[-1]), np.float64)
    cursor = ptr[:-1].copy()
    for terms, rows, tfs in blocks:  # parents ascend block by block, so each term's postings do
        if not len(terms):
            continue
        unique, start, n = np.unique(terms, return_index=True, return_counts=True)
        at = cursor[terms] + np.arange(len(terms)) - np.repeat(start, n)
        post_parent[at] = rows
        impact[at] = idf[terms] * tfs * (BM25.K1 + 1) / (tfs + norm[rows])  # BM25.scores' term
        cursor[unique] += n
    post_parent.flush()
    term_of = np.repeat(np.arange(len(vocab), dtype=np.int32), df)
    rank = np.lexsort((-impact, term_of)) - ptr[:-1][term_of]  # each term's postings, highest first
    np.save(work / "post_rank.npy", rank.astype(np.int32))
    np.save(work / "post_impact.npy", impact)
    np.save(work / "post_ptr.npy", ptr)
    np.save(work / "parent_doc.npy", doc)
    np.save(work / "parent_passage.npy", passage)
    (work / "vocab.json").write_text(json.dumps(list(vocab)), encoding="utf-8")
    rows_of = {(int(d), int(p)): i for i, (d, p) in enumerate(zip(doc.tolist(), passage.tolist()))}
    return rows_of, {"parents": count, "words": words}


def _write_leaves(work: Path, leaves: Any, number: dict[str, int], parents: dict[tuple[int, int], int]) -> bool:
    """The leaves' int8 vectors and scales, documents, numbers and parents, their rows by
    parent (CSR), and above :data:`EXACT_MAX` leaves the HNSW graph over their distinct
    vectors (:func:`_copies`); returns whether the side searches exactly (no graph)."""
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
        vectors = column.flatten().to_numpy().reshape(len(column), dim)
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
    if n <= EXACT_MAX:
        return True
    first, copies, copy_ptr = _copies(codes)
    np.save(work / "copies.npy", copies)
    np.save(work / "copy_ptr.npy", copy_ptr)
    graph = Hnsw(ndim=dim, metric="cos", dtype="i8", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD)
    for start in range(0, len(first), 1 << 18):
        stop = min(start + (1 << 18), len(first))
        graph.add(np.arange(start, stop), codes[first[start:stop]])
    graph.save(os.fspath(work / "leaves.usearch"))
    return False


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
    clashes, vectors = [], len(first)
    for start in range(0, n, 1 << 16):  # a row whose hash another vector shares: a vector of its own
        rows = np.arange(start, min(start + (1 << 16), n))
        clash = rows[(codes[rows] != codes[first[group[rows]]]).any(axis=1)]
        group[clash] = vectors + np.arange(len(clash))
        vectors += len(clash)
        clashes.append(clash)
    first = np.concatenate([first, *clashes])
    order = np.argsort(first, kind="stable")  # vectors in the order of their first rows
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rank[group], minlength=len(first)))])
    return first[order], np.argsort(rank[group], kind="stable"), ptr


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, ascending: ``np.unique``'s, by a sort (its hash table took 70 µs
    for the few hundred values of a query, a sort 9).

    >>> _distinct(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    ordered = np.sort(values)
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if len(ordered) else ordered


def _top(scores: np.ndarray, n: int, floor: float = 0.0) -> np.ndarray:
    """The indices of the ``n`` highest positive ``scores``, highest first, ties by index (as
    a stable sort of all of them, without sorting all of them). ``floor``, when known, is at
    most the ``n``-th highest score: only the scores from it up are sorted.

    >>> _top(np.array([0.5, 2.0, 0.0, 2.0, 1.0]), 3).tolist()
    [1, 3, 4]
    >>> _top(np.array([0.5, 2.0, 0.0, 2.0, 1.0]), 3, floor=1.0).tolist()
    [1, 3, 4]
    """
    candidates = np.flatnonzero(scores >= floor) if floor > 0 else np.flatnonzero(scores > 0)
    if len(candidates) > n:
        kth = np.partition(scores[candidates], len(candidates) - n)[len(candidates) - n]
        candidates = candidates[scores[candidates] >= kth]
    return candidates[np.argsort(-scores[candidates], kind="stable")][:n]


class Side:
    """A commit's side indexes (see the module): the arrays and the graph memory-mapped, the
    document ids and the vocabulary read, the documents' file open. :meth:`open` finds them.
    Safe to share between threads (one graph search and one document read at a time)."""

    prefetch: bool = hasattr(os, "posix_fadvise")
    """Whether :meth:`parts` asks the disk for all of the parts it reads before it reads the
    first (``posix_fadvise(POSIX_FADV_WILLNEED)`` of each one's bytes, where the platform has
    it), so that the reads of a new question's sections overlap rather than come one by one.
    Measured at 10M leaves, the sections read from the disk: a new question's p50 0.80x to
    0.83x (``benches/results/store-growth.md``)."""

    def __init__(self, folder: Path, meta: dict[str, Any]) -> None:
        import pyarrow as pa

        if meta.get("format") not in FORMATS_READ:
            raise ValueError(f"{folder}: side format {meta.get('format')}, not {FORMAT}")
        self.folder, self.version, self.exact = folder, int(meta["version"]), bool(meta["exact"])
        self._store = folder.absolute().parent.parent  # as opened, whatever the working folder later
        # mapped, then plain arrays over the maps: slicing a np.memmap costs microseconds, and a
        # query slices hundreds of times
        arrays = {p.stem: np.load(p, mmap_mode="r").view(np.ndarray) for p in folder.glob("*.npy")}
        self.codes, self.scales = arrays["codes"], arrays["scales"]
        self.leaf_doc, self.leaf_no, self.leaf_parent = arrays["leaf_doc"], arrays["leaf_no"], arrays["leaf_parent"]
        self.by_parent, self.parent_ptr = arrays["by_parent"], arrays["parent_ptr"]
        self.parent_doc, self.parent_passage = arrays["parent_doc"], arrays["parent_passage"]
        self.post_ptr, self.post_parent = arrays["post_ptr"], arrays["post_parent"]
        self.post_rank, self.post_impact = arrays["post_rank"], arrays["post_impact"]
        self.parents = int(meta["parents"])
        self.doc_ids: list[str] = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
        self.doc_rows = {d: i for i, d in enumerate(self.doc_ids)}
        self.part_ptr, self.part_base, self.part_leaf = arrays["part_ptr"], arrays["part_base"], arrays["part_leaf"]
        self.doc_length = arrays["doc_length"]
        # each part's document in the high half: one search finds many leaves' parts
        doc_of_part = np.repeat(np.arange(len(self.doc_ids), dtype=np.int64), np.diff(self.part_ptr)) << 32
        self._leaf_keys, self._base_keys = doc_of_part | self.part_leaf, doc_of_part | self.part_base
        self._file = pa.OSFile(os.fspath(folder / "parts.arrow"))
        self._parts = pa.ipc.open_file(self._file)
        count, expected = self._parts.num_record_batches, int(self.part_ptr[-1])
        if len(self.part_ptr) != len(self.doc_ids) + 1 or count != expected:
            raise ValueError(f"{folder}: {count} parts in parts.arrow, not {expected}")
        self.part_offset: np.ndarray | None = arrays.get("part_offset")  # None: format 4
        offsets = self.part_offset
        if offsets is not None and not (
            len(offsets) == count + 1
            and offsets[0] == 0
            and np.all(np.diff(offsets) > 0)
            and offsets[-1] < self._file.size()
        ):
            raise ValueError(f"{folder}: part_offset.npy does not place the {count} parts of parts.arrow")
        self.vocab = {w: i for i, w in enumerate(json.loads((folder / "vocab.json").read_text(encoding="utf-8")))}
        self.lock = threading.Lock()  # usearch's search reuses the graph's per-thread buffers
        self._parts_lock = threading.Lock()  # one file position
        if not self.exact:
            from usearch.index import Index as Hnsw

            self.copies, self.copy_ptr = arrays["copies"], arrays["copy_ptr"]
            graph = Hnsw.restore(os.fspath(folder / "leaves.usearch"), view=True)
            if graph is None:
                raise ValueError(f"{folder}: no graph")
            graph.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # its setter has no annotations
            self.graph = graph

    @classmethod
    def open(cls, uri: str | os.PathLike[str], commit: dict[str, Any]) -> Side | None:
        """The side of ``commit`` (a row of the commits table) of the store at ``uri``; None
        when it has none (or one of other tables: a killed update's, until the writer's next
        run), or one that cannot be read (said in a warning): the reader then searches
        LanceDB's indexes."""
        if not is_local(os.fspath(uri)):
            return None
        folder = side_folder(uri, int(commit["version"]))
        try:
            meta = _read_meta(folder)
            return cls(folder, meta) if meta.get("tables") == _versions(commit) else None
        except (ImportError, OSError, ValueError, KeyError) as exc:
            warnings.warn(
                f"the store's side {folder} cannot be read ({exc}); searching LanceDB's indexes", stacklevel=3
            )
            return None

    def in_store(self) -> bool:
        """Whether its store is still on disk: its mapped arrays and open file answer after the
        store was removed, which a search reading only them would not notice."""
        return self._store.is_dir()

    def parts(self, rows: list[int]) -> pa.Table:
        """The parts at ``rows`` (:func:`_write_parts`), in that order, each read from the
        side's file alone (a read, not a map: a query process's memory then holds the parts it
        keeps, not the pages around them), all of them asked of the disk first (:attr:`prefetch`)."""
        import pyarrow as pa

        offsets = self.part_offset
        if self.prefetch and offsets is not None:
            fd = self._file.fileno()
            for r in rows:
                os.posix_fadvise(fd, int(offsets[r]), int(offsets[r + 1] - offsets[r]), os.POSIX_FADV_WILLNEED)
        with self._parts_lock:
            batches = [self._parts.get_batch(r) for r in rows]
        return pa.Table.from_batches(batches, self._parts.schema)

    def parts_of(self, leaves: list[tuple[str, int]], by_start: bool = False) -> list[int]:
        """The part of each of the ``leaves`` ``(doc_id, leaf)`` of documents the side holds
        (those of others, and offsets no document has, left out); ``by_start``: of ``(doc_id,
        start)``, the part each code point ``start`` is in."""
        found = [(self.doc_rows.get(d), x) for d, x in leaves]
        keys = np.array([(d << 32) | x for d, x in found if d is not None and 0 <= x < 1 << 32], np.int64)
        parts = np.searchsorted(self._base_keys if by_start else self._leaf_keys, keys, "right") - 1
        return [int(p) for p in parts.tolist()]

    def parts_over(self, doc_id: str, start: int, end: int) -> range:
        """The parts of ``doc_id`` that code points ``start`` to ``end`` touch (at least the one
        ``start`` is in; none for a document the side does not hold or one without parts)."""
        d = self.doc_rows.get(doc_id)
        if d is None:
            return range(0)
        lo, hi = int(self.part_ptr[d]), int(self.part_ptr[d + 1])
        bases = self.part_base[lo:hi]
        first = max(int(np.searchsorted(bases, start, "right")) - 1, 0)
        return range(lo + first, lo + max(int(np.searchsorted(bases, end)), first + 1)) if hi > lo else range(0)

    def leaves(self, rows: np.ndarray) -> tuple[list[str], list[int], list[int]]:
        """The ``doc_id``, ``leaf`` and ``passage`` of leaf rows."""
        return (
            [self.doc_ids[d] for d in self.leaf_doc[rows].tolist()],
            self.leaf_no[rows].tolist(),
            self.parent_passage[self.leaf_parent[rows]].tolist(),
        )

    def nearest(self, unit: np.ndarray, k: int) -> np.ndarray:
        """The rows (in the leaves table) of the ``k`` nearest leaves of the unit vector
        ``unit`` by their int8 vectors, ascending; below :data:`EXACT_MAX` leaves exactly, by
        :func:`int8_cosines` (ties: the lower row), as the leaves of the best parents are scored
        (usearch's own scan quantizes the question too, and its 64th leaf was not always
        theirs: a cosine 7e-5 above the 65th's)."""
        if not len(self.codes):
            return np.zeros(0, np.int64)
        if self.exact:
            return np.sort(top_k(int8_cosines(self.codes, self.scales, unit), k)[0].astype(np.int64))
        codes, _ = int8_rows(unit[None, :])
        with self.lock:
            vectors = self.graph.search(codes[0], k, threads=1).keys.tolist()  # distinct vectors, nearest first
        rows = np.concatenate([self.copies[self.copy_ptr[v] : self.copy_ptr[v + 1]] for v in vectors] or [[]])
        return np.sort(rows[:k].astype(np.int64))

    def nearest_later(self, unit: np.ndarray, k: int) -> concurrent.futures.Future[np.ndarray]:
        """:meth:`nearest` on a search helper thread: the graph's search lets go of the GIL, so the
        caller's Python runs meanwhile (a query reads the sections of the best BM25 parents)."""
        return helper_threads().submit(self.nearest, unit, k)

    def lexical(self, query: str, pool: int) -> list[int]:
        """The ``pool`` best parent rows by BM25 for ``query``, best first (ties: the lower row
        first), as :meth:`BM25.scores` scores them. Exact without reading every posting: the
        parents of each term's highest impacts are scored, from the :data:`HEAD_POSTINGS`
        highest on and four times as many each round, until no parent left unread can enter the
        pool (each term's next impact, summed, is below the pool's last score); once a round
        would read more than :data:`ROUND_POSTINGS`, all are summed at once."""
        spans = self._spans(query)
        depth, floor = HEAD_POSTINGS, 0.0
        while spans:
            if sum(min(depth, hi - lo) for lo, hi in spans) > ROUND_POSTINGS:
                return self._best_of_all(spans, pool, floor)
            rows = _distinct(
                np.concatenate([self.post_parent[lo + self.post_rank[lo : min(lo + depth, hi)]] for lo, hi in spans])
            )
            scores = self._scores(spans, rows)
            best = _top(scores, pool)
            floor = float(scores[best[-1]]) if len(best) == pool else 0.0
            unread = sum(
                float(self.post_impact[lo + self.post_rank[lo + depth]]) for lo, hi in spans if lo + depth < hi
            )
            if not unread or floor > unread:
                return [int(r) for r in rows[best].tolist()]
            depth *= 4
        return []

    def bm25(self, query: str, parents: np.ndarray) -> dict[tuple[str, int], float]:
        """``(doc_id, passage) -> BM25 score`` of the parent rows ``parents`` that match ``query``
        (the scores of :meth:`BM25.scores`)."""
        rows = _distinct(np.asarray(parents, self.post_parent.dtype))  # the postings' own type: not copied
        scores = self._scores(self._spans(query), rows)
        found = rows[scores > 0]
        keys = zip(self.parent_doc[found].tolist(), self.parent_passage[found].tolist(), scores[scores > 0].tolist())
        return {(self.doc_ids[d], passage): score for d, passage, score in keys}

    def _spans(self, query: str) -> list[tuple[int, int]]:
        """The postings of each of the question's terms, as ``(first, end)``."""
        return [(int(self.post_ptr[t]), int(self.post_ptr[t + 1])) for t in self._terms(query)]

    def _best_of_all(self, spans: list[tuple[int, int]], pool: int, floor: float) -> list[int]:
        """:meth:`lexical`'s ``pool`` best parent rows, every posting in ``spans`` summed (in the
        order of :meth:`_scores`); ``floor``: at most the ``pool``-th best score."""
        parents = np.concatenate([self.post_parent[lo:hi] for lo, hi in spans])
        impacts = np.concatenate([self.post_impact[lo:hi] for lo, hi in spans])
        if SUM_EVERY_PARENT * len(parents) > self.parents:
            return [int(r) for r in _top(np.bincount(parents, impacts, minlength=self.parents), pool, floor).tolist()]
        rows = _distinct(parents)
        scores = np.bincount(np.searchsorted(rows, parents), impacts, minlength=len(rows))
        return [int(r) for r in rows[_top(scores, pool, floor)].tolist()]

    def _scores(self, spans: list[tuple[int, int]], rows: np.ndarray) -> np.ndarray:
        """The BM25 scores of the parent ``rows`` (ascending), each term's share found by a search of
        its postings (ordered by parent)."""
        scores = np.zeros(len(rows))
        for lo, hi in spans:
            postings = self.post_parent[lo:hi]
            at = np.minimum(np.searchsorted(postings, rows), hi - lo - 1)
            found = postings[at] == rows
            scores[found] += self.post_impact[lo + at[found]]
        return scores

    def _terms(self, query: str) -> list[int]:
        return [t for t in (self.vocab.get(w) for w in set(BM25.words(query))) if t is not None]

    def scored(self, rows: np.ndarray, unit: np.ndarray) -> dict[tuple[str, int], tuple[int, float]]:
        """``(doc_id, leaf) -> (passage, cosine)`` of the leaves at ``rows``, each cosine with the
        unit vector ``unit`` from the leaf's int8 vector (as the in-memory index scores it)."""
        cos = int8_cosines(self.codes[rows], self.scales[rows], unit)
        return {(d, leaf): (p, c) for d, leaf, p, c in zip(*self.leaves(rows), cos.tolist())}

    def pooled(self, parents: list[int], unit: np.ndarray) -> dict[tuple[str, int], tuple[int, float]]:
        """The leaves of the parent rows ``parents`` (:meth:`scored`): as the in-memory index
        scores them."""
        pooled = [self.by_parent[self.parent_ptr[p] : self.parent_ptr[p + 1]] for p in parents]
        return self.scored(np.sort(np.concatenate(pooled)) if pooled else np.zeros(0, np.int64), unit)
