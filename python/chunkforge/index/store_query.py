"""The store's reader: :class:`StoreIndex` (``Index.open(uri)``) serves ``search`` / ``expand``
/ ``query`` over a store of :func:`~chunkforge.index.store_write.write_store` with the in-memory
index's fusion and packing; the hit documents' trees are read into a native expander with a
bounded cache, so a query process holds the ANN index's cache, not the corpus."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._checks import check_int
from .._recommended import RECOMMENDED
from .._search import int8_rows, normalized
from ..errors import ArgumentError, ChunkforgeError, InputError
from ..tokenizer import Tokenizer
from . import expansion
from .bm25 import BM25
from .expansion import LeafLayout, abstains, check_floor, leaf_labels
from .filters import TAGS_VERSION, Filter, sql_quote
from .fusion import BM25_POOL, DENSE_POOL, pooled_with, top_leaves
from .options import ExpandOptions, search_filter, spells_search_keywords, split_keywords
from .payload import DocumentTree, Hit, Payload
from .store_side import Side, int8_scores
from .store_tables import DOCS, LEAVES, PARENTS, _connect, _lancedb, last_commit, parent_key
from .trees import SavedRow, TreeSettings, are_spans, checked_spans, overlapping, read_rows, scratch_expander

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Unpack

    from ..encoder import Encoder
    from .options import SearchKeywords

CACHE_BYTES = 256 << 20
"""Resident bytes of the documents a query process keeps read (least recently used out):
their text, tokens and trees in the expander, counted as :data:`RESIDENT_PER_TEXT_BYTE` times
the text."""
RESIDENT_PER_TEXT_BYTE = 13
"""Resident bytes a document read into the expander takes per byte of its UTF-8 text, rounded
up (measured: 3,000 documents of the 1M-leaf stand-in store of ``benches/store_growth.py``,
28.6 MB of text, took 353 MB, 12.4 a byte; 14.2 before the expander sampled its code point
offsets)."""
INDEX_CACHE_BYTES = 512 << 20
"""Bytes of LanceDB's index cache in a query process (IVF partitions and full-text posting
lists read; its own default is 6 GB), kept across reloads. Measured at 10M leaves, 600 distinct
questions: 512 MiB and 1 GiB answered at the same speed, in 1.7 and 1.9 GB processes."""
VECTOR_CACHE_ROWS = 1 << 15
"""Float vectors of the nearest leaves a query process keeps read (least recently used out;
48 MiB of float32 at 384 dimensions, and about 0.2 KiB a row of bookkeeping): a leaf found
again is rescored without a read from the leaves table (at 10M leaves a read of the 64 to 100
nearest took 5.5 to 7.4 ms)."""
NPROBES = 32
"""IVF partitions the nearest-leaves search reads (of one per 4,096 leaves)."""
REFINE_FACTOR = 4
"""The nearest-leaves search rescores ``REFINE_FACTOR`` times the leaves it returns with their
full vectors, read from the leaves table. Measured on the real model's vectors at 1M leaves
(the same 150 new questions at each setting): 4 finds 0.71 of the exact 64 nearest, 10 finds
0.79, but a whole query (100 leaves asked, so 1,000 vectors read) then took 43 against 35 ms at
p50 for new questions in the growth runs, 118 against 90 ms at 10M leaves
(``benches/results/store-growth.md``)."""
_METADATA_CACHE_BYTES = 256 << 20  # LanceDB's file metadata cache (its default: 1 GB)
_FTS_LIMIT = 4 * DENSE_POOL  # parents a full-text query returns (then those of the nearest leaves)


def _submit(query: Any) -> concurrent.futures.Future[Any]:
    """Starts a coroutine of LanceDB's async API on its background event loop (reset after a
    fork), for the store's readers: the async API skips the schema reads the sync one makes on
    every query (measured at 119k leaves: 3.1 against 5.2 ms a full-text query)."""
    from lancedb.background_loop import LOOP

    return asyncio.run_coroutine_threadsafe(query, LOOP.loop)


def _run(query: Any) -> Any:
    """The result of a coroutine (:func:`_submit`) or of one already submitted; the coroutine is
    cancelled when the wait is interrupted."""
    future = query if isinstance(query, concurrent.futures.Future) else _submit(query)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def _checked_out(uri: str, commit: dict[str, Any], session: Any) -> dict[str, Any]:
    """The leaves, parents and docs tables (LanceDB's async tables) at a commit's versions,
    their caches in ``session``."""
    db = await _lancedb().connect_async(uri, session=session)
    tables = {}
    for name in (LEAVES, PARENTS, DOCS):
        tables[name] = await db.open_table(name)
        await tables[name].checkout(commit[name])
    return tables


def _cosines(
    vectors: np.ndarray, vector: np.ndarray, keys: tuple[list[str], list[int], list[int]], int8: bool = False
) -> dict[tuple[str, int], tuple[int, float]]:
    """``(doc_id, leaf) -> (passage, cosine)`` of leaves (``vectors``, ``keys``: their
    ``doc_id``, ``leaf`` and ``passage``), the cosines computed here to 6 decimals (one rule
    whichever search found a leaf: BLAS's last bit depends on a row's place in its block, and
    leaves of equal text must tie exactly); ``int8``: from the vectors in int8
    (:func:`int8_scores`)."""
    if int8:
        cos = int8_scores(*int8_rows(vectors), vector)
    else:
        wide = vectors.astype(np.float64)
        cos = np.round(wide @ vector.astype(np.float64) / np.maximum(np.linalg.norm(wide, axis=1), 1e-12), 6)
    return {(d, int(leaf)): (int(p), float(c)) for d, leaf, p, c in zip(*keys, cos)}


def _vectors(rows: pa.Table) -> np.ndarray:
    """The ``vector`` column of leaf rows as one float32 array."""
    column = rows.column("vector").combine_chunks()
    vectors: np.ndarray = column.flatten().to_numpy().reshape(len(column), column.type.list_size)
    return vectors


def _keys(rows: pa.Table) -> tuple[list[str], list[int], list[int]]:
    """The ``doc_id``, ``leaf`` and ``passage`` columns of leaf rows."""
    doc_ids, leaves, passages = (rows.column(name).to_pylist() for name in ("doc_id", "leaf", "passage"))
    return doc_ids, leaves, passages


class _Cached:
    """A document read from the store into the expander: its slot, its leaves' labels and
    spans, its metadata, its length and its resident size (bytes)."""

    __slots__ = ("slot", "labels", "starts", "ends", "sections", "metadata", "length", "size")

    def __init__(self, slot: int, labels: np.ndarray, doc: SavedRow, utf8_bytes: int) -> None:
        self.slot, self.labels, self.metadata = slot, labels, doc.metadata
        self.starts, self.ends = doc.nodes[doc.leaves, 0], doc.nodes[doc.leaves, 1]
        self.sections = doc.nodes[doc.leaves, 3]
        self.length, self.size = len(doc.text), RESIDENT_PER_TEXT_BYTE * utf8_bytes

    @property
    def layout(self) -> LeafLayout:
        """The document's leaves (for ``spread`` and for finding a hit's leaf)."""
        return LeafLayout(self.labels, self.starts, self.sections, self.ends)


class StoreError(ChunkforgeError, RuntimeError):
    """A store that cannot answer (a damaged table or index, a store removed under a reader);
    the message names the store and the table. Not the caller's fault: the service answers 503."""


class _Checkout:
    """One commit of the store as a reader sees it: its tables at that commit's versions, its
    settings, and the documents read from it so far (a native expander with a bounded cache).
    A query runs on one checkout from start to end, so a reload (a new checkout) never changes
    the tables or the documents under it."""

    def __init__(
        self, commit: dict[str, Any], tables: dict[str, Any], side: Side | None, tokenizer: Tokenizer, cache_bytes: int
    ) -> None:
        settings = json.loads(commit["settings"])
        self.version = int(commit["version"])
        self.tables, self.side = tables, side
        self.settings = TreeSettings.from_dict(settings["tree"])
        self.model: dict[str, Any] = settings["model"]
        self.tags = settings.get("tags", 1)
        self.level = len(self.settings.parent_tokens) + 1
        self.cache_bytes = cache_bytes
        self.lock = threading.Lock()  # the cache and its expander
        self.expander = scratch_expander(tokenizer)
        self.cache: OrderedDict[str, _Cached] = OrderedDict()
        self.cached_bytes = 0
        self.vectors: OrderedDict[int, np.ndarray] = OrderedDict()  # leaf row -> float vector
        self.vectors_lock = threading.Lock()
        self.free: list[int] = []
        self.next_label = 0

    def load(self, doc_ids: Iterable[str], uri: str) -> dict[str, _Cached]:
        """The cached entries of those of ``doc_ids`` the store holds (read when missing); the
        lock is held."""
        wanted = list(dict.fromkeys(doc_ids))
        missing = [d for d in wanted if d not in self.cache]
        if missing:
            import pyarrow.compute as pc

            rows = self._rows(missing)
            words = rows.column("words").to_pylist() if "words" in rows.column_names else None
            utf8_bytes = pc.binary_length(rows.column("text")).to_pylist()
            self._insert(read_rows(rows, f"{uri}/{DOCS}"), utf8_bytes, words)
        found = {}
        for d in wanted:
            if d in self.cache:
                self.cache.move_to_end(d)
                found[d] = self.cache[d]
        self._evict(keep=set(found))
        return found

    def _rows(self, doc_ids: list[str]) -> pa.Table:
        """The docs table's rows of those of ``doc_ids`` it holds, in the table's order (the
        expander's slots, which order passages of equal scores): from the side's copy when the
        commit has a side, else by a filter on ``doc_id``."""
        if self.side is None:
            ids = ", ".join(sql_quote(d) for d in doc_ids)
            return _run(self.tables[DOCS].query().where(f"doc_id IN ({ids})").limit(len(doc_ids) + 1).to_arrow())
        held = sorted((d for d in doc_ids if d in self.side.doc_rows), key=self.side.doc_rows.__getitem__)
        try:
            rows = self.side.documents(held)
        except (OSError, ValueError) as exc:  # a damaged file (pyarrow's errors)
            raise RuntimeError(f"its side {self.side.folder} cannot be read ({exc})") from exc
        if rows.column("doc_id").to_pylist() != held:
            raise RuntimeError(f"its side {self.side.folder} does not match the table")
        return rows

    def _insert(self, docs: list[SavedRow], utf8_bytes: list[int], words: list[bytes | None] | None = None) -> None:
        """Puts ``docs`` (their texts ``utf8_bytes`` long) into the expander (in one call, their
        headings read there) and the cache: a document whose ``words`` the store kept (a store
        written before it kept words has no such column) is not tokenized again, the others are
        (in parallel)."""
        labels = []
        for doc in docs:
            n = len(doc.leaves)
            take = min(n, len(self.free))
            labels.append(self.free[len(self.free) - take :] + list(range(self.next_label, self.next_label + n - take)))
            del self.free[len(self.free) - take :]
            self.next_label += n - take
        slots = self.expander.add_docs(
            [doc.text for doc in docs],
            [doc.sentences for doc in docs],
            [doc.nodes[:, :4] for doc in docs],
            [doc.leaves.tolist() for doc in docs],
            labels,
            [doc.doc_id for doc in docs],
            [doc.headings for doc in docs],
            words,
        )
        for slot, doc_labels, doc, size in zip(slots, labels, docs, utf8_bytes):
            entry = _Cached(slot, np.asarray(doc_labels, np.int64), doc, size)
            self.cache[doc.doc_id] = entry
            self.cached_bytes += entry.size

    def _evict(self, keep: set[str]) -> None:
        while self.cached_bytes > self.cache_bytes and len(self.cache) > len(keep):
            doc_id = next(d for d in self.cache if d not in keep)
            entry = self.cache.pop(doc_id)
            self.expander.remove(entry.slot)
            self.free += entry.labels.tolist()
            self.cached_bytes -= entry.size


class StoreIndex:
    """``search`` / ``expand`` / ``query`` over a LanceDB store written by :func:`write_store`,
    as :class:`~chunkforge.Index` serves them in memory (same fusion, same packing, same
    filters). Opened at the latest commit; :meth:`reload` moves to a newer one, and a query
    running meanwhile finishes on the commit it started on. Safe to share between threads.
    ``cache_bytes``: the documents kept read (resident bytes); ``index_cache_bytes``: LanceDB's
    cache of the index parts read (together with :data:`VECTOR_CACHE_ROWS` vectors, what a query
    process holds beyond the encoder); ``nprobes`` and ``refine_factor``: the ANN search's
    (:data:`NPROBES`, :data:`REFINE_FACTOR`); ``side``: search a commit's side indexes
    (:mod:`~chunkforge.index.store_side`) when it has them, and LanceDB's indexes when filtered
    or when it has none (``False``: always LanceDB's). A path that holds no store is a
    FileNotFoundError (nothing is created there).

    A store of two documents, one public and one for staff (in a temporary folder):

    >>> import json, tempfile
    >>> from chunkforge import bulk
    >>> folder = tempfile.TemporaryDirectory()
    >>> docs = [{"id": "a.md", "acl": "public", "text": "# Setup\\n\\nInstall it with pip. Then run the tests."},
    ...         {"id": "b.md", "acl": "staff", "text": "# Setup\\n\\nInstall it from the internal mirror."}]
    >>> with open(f"{folder.name}/docs.jsonl", "w") as f:
    ...     _ = f.write("".join(json.dumps(doc) + "\\n" for doc in docs))
    >>> store = f"{folder.name}/store.lancedb"
    >>> _ = bulk.run([f"{folder.name}/docs.jsonl"], f"{folder.name}/vectors", units="tree", lancedb=store, progress=False)
    >>> index = StoreIndex(store)
    >>> print(index.query("how do I install it?", where={"acl": "public"}).render())
    [1] a.md:0-49 (Setup)
    # Setup
    <BLANKLINE>
    Install it with pip. Then run the tests.
    >>> sorted({h.doc_id for h in index.search("install", k=3)})
    ['a.md', 'b.md']
    >>> {h.doc_id for h in index.search("install", k=3, where={"acl": "public"})}
    {'a.md'}
    >>> folder.cleanup()
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        encoder: Encoder | None = None,
        *,
        cache_bytes: int = CACHE_BYTES,
        index_cache_bytes: int = INDEX_CACHE_BYTES,
        weights: tuple[float, float] = (1.0, 1.0),
        nprobes: int = NPROBES,
        refine_factor: int = REFINE_FACTOR,
        side: bool = True,
    ) -> None:
        self.uri = os.fspath(uri)
        self._db = _connect(self.uri)
        self._encoder = encoder
        self.cache_bytes = check_int("cache_bytes", cache_bytes, 0)
        self.index_cache_bytes = check_int("index_cache_bytes", index_cache_bytes, 0)
        self._session = _lancedb().Session(
            index_cache_size_bytes=self.index_cache_bytes, metadata_cache_size_bytes=_METADATA_CACHE_BYTES
        )
        self.weights = (float(weights[0]), float(weights[1]))
        self.nprobes = check_int("nprobes", nprobes, 1)
        self.refine_factor = check_int("refine_factor", refine_factor, 1)
        self.side = bool(side)
        self._at: _Checkout | None = None
        if not self.reload():
            raise FileNotFoundError(f"no chunkforge store at {self.uri} (no commit)")

    # -- versions ----------------------------------------------------------

    def reload(self) -> bool:
        """Moves to the store's latest commit when there is a newer one; True when it moved.
        A query already running finishes on the commit it started on."""
        commit = last_commit(self._db)
        if commit is None or (self._at is not None and commit["version"] == self._at.version):
            return False
        tables = _run(_checked_out(self.uri, commit, self._session))
        tokenizer = self._encoder.tokenizer if self._encoder is not None else Tokenizer.default()
        side = Side.open(self.uri, commit) if self.side else None
        self._at = _Checkout(commit, tables, side, tokenizer, self.cache_bytes)
        return True

    @property
    def _now(self) -> _Checkout:
        assert self._at is not None  # set by __init__
        return self._at

    @property
    def version(self) -> int:
        """The commit this index answers from."""
        return self._now.version

    @property
    def settings(self) -> TreeSettings:
        """How the store's documents were cut."""
        return self._now.settings

    @property
    def model(self) -> dict[str, Any]:
        """The store's model (``name``, ``dim``, ``variant``)."""
        return self._now.model

    @property
    def tokenizer(self) -> Tokenizer:
        return self._encoder.tokenizer if self._encoder is not None else Tokenizer.default()

    @property
    def encoder(self) -> Encoder:
        """The encoder of the questions (the store's model, when it is the default one)."""
        if self._encoder is None:
            from ..encoder import Encoder

            if self.model["name"] != "default":
                raise ValueError(f"the store was embedded with {self.model['name']!r}: pass that Encoder")
            self._encoder = Encoder.default(self.model.get("variant") or "optimized")
        return self._encoder

    def __len__(self) -> int:
        return int(self._read(self._now.tables[DOCS].count_rows(), DOCS))

    @property
    def leaf_count(self) -> int:
        """Number of leaves."""
        return int(self._read(self._now.tables[LEAVES].count_rows(), LEAVES))

    def _read(self, query: Any, table: str) -> Any:
        """Runs a query of ``table``; a store that cannot answer is a :class:`StoreError`."""
        try:
            return _run(query)
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"the store {self.uri} cannot be read ({table} table: {exc}); write it again") from exc

    # -- documents, read on demand ------------------------------------------

    def _entries(self, at: _Checkout, doc_ids: Iterable[str]) -> dict[str, _Cached]:
        """The cached entries of those of ``doc_ids`` the store holds; the lock is held."""
        try:
            return at.load(doc_ids, self.uri)
        except (OSError, RuntimeError, InputError) as exc:  # InputError: a damaged row
            raise StoreError(f"the store {self.uri} cannot be read ({DOCS} table: {exc}); write it again") from exc

    def document(self, doc_id: str) -> str:
        """The text of a document."""
        row = self._doc_rows([doc_id], ["text"])
        return str(row[0]["text"])

    def metadata(self, doc_id: str) -> dict[str, Any]:
        """A document's metadata."""
        return dict(json.loads(self._doc_rows([doc_id], ["metadata"])[0]["metadata"]))

    def tree(self, doc_id: str) -> DocumentTree:
        """A document's tree as stored."""
        at = self._now
        with at.lock:
            entry = self._entries(at, [doc_id]).get(doc_id)
            if entry is None:
                raise KeyError(f"no document {doc_id!r} in the store")
            return DocumentTree(*at.expander.tree(entry.slot))

    def _doc_rows(self, doc_ids: Sequence[str], columns: list[str]) -> list[dict[str, Any]]:
        ids = ", ".join(sql_quote(d) for d in doc_ids)
        query = self._now.tables[DOCS].query().where(f"doc_id IN ({ids})").select(columns).limit(len(doc_ids) + 1)
        rows: list[dict[str, Any]] = self._read(query.to_arrow(), DOCS).to_pylist()
        if len(rows) < len(doc_ids):
            raise KeyError(f"no document {doc_ids[0]!r} in the store")
        return rows

    # -- search ------------------------------------------------------------

    @spells_search_keywords
    def search(self, query: str, k: int = 12, **keywords: Unpack[SearchKeywords]) -> list[Hit]:
        """The ``k`` best leaves for ``query``, best first (see :meth:`chunkforge.Index.search`): the
        nearest leaves (the ANN index) and the leaves of the best parents by BM25 (the full-text
        index), fused as the in-memory index fuses them; ``where``, ``doc_id``, ``source`` and
        ``filter`` narrow it as in memory (pushed down to LanceDB's filters); the class's example
        searches a store."""
        passes, hybrid = search_filter(keywords)
        return self._search(self._now, query, k, passes, hybrid)

    def _search(
        self, at: _Checkout, query: str, k: int, passes: Filter, hybrid: bool | None, best: list[float] | None = None
    ) -> list[Hit]:
        """The hits; ``best`` gets the best cosine of the question with a hit leaf."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        k = check_int("k", k, 1)
        if passes.heading_prefix is not None:
            raise ArgumentError("is not supported by the store; filter by metadata (where=)", param="heading_prefix")
        if passes.where is not None and at.tags != TAGS_VERSION:
            raise InputError(
                f"the store {self.uri} was written by an earlier chunkforge, whose tags filter otherwise: "
                "write a new store from the dataset to filter it by metadata"
            )
        if passes.nothing:
            return []
        predicate = passes.sql()
        hybrid = True if hybrid is None else hybrid
        vector = self.encoder.embed_query(query)
        side = at.side if predicate is None else None  # a filtered search: LanceDB's filters
        unit = normalized(vector[None, :])[0]
        if not hybrid:
            if side is not None:
                rows = side.nearest(unit, k)
                dense = self._rescored(at, rows, vector, lambda: side.leaves(rows)[0])  # all k are hits
            else:
                dense = self._read(self._nearest(at.tables[LEAVES], vector, k, predicate), LEAVES)
            ranked = sorted(dense.items(), key=lambda item: (-item[1][1], item[0]))[:k]
            if best is not None and ranked:
                best.append(ranked[0][1][1])
            return self._hits(at, [(key, cos) for key, (_, cos) in ranked])
        if side is not None:
            rows, pooled, bm25 = side.ranked(query, unit, max(k, DENSE_POOL), BM25_POOL)

            def likely() -> list[str]:
                guess = side.scored(rows, unit)
                pooled_with(guess, pooled)
                return [doc_id for (doc_id, _), _ in top_leaves(guess, bm25, self.weights, k)[0]]

            dense = self._rescored(at, rows, vector, likely)
            pooled_with(dense, pooled)
        else:
            dense, bm25 = self._read(self._ranked(at.tables, query, vector, max(k, DENSE_POOL), predicate), PARENTS)
        if not dense:
            return []
        scored, top = top_leaves(dense, bm25, self.weights, k)
        if best is not None:
            best.append(top)
        return self._hits(at, scored)

    def _rescored(
        self, at: _Checkout, rows: np.ndarray, vector: np.ndarray, likely: Callable[[], list[str]]
    ) -> dict[tuple[str, int], tuple[int, float]]:
        """:meth:`_taken` of ``rows``; while their vectors are read (a wait on the disk at 10M
        leaves), the documents ``likely()`` names (the hits' as the leaves' int8 cosines rank
        them) are read into the cache, so the hits find them there but for a leaf the
        rescoring moves across the ``k``-th place (its document is read after them, so its
        slot, which orders passages of equal scores, comes after theirs, as a document read by
        an earlier question may)."""
        reading = _submit(self._taken(at, rows, vector))
        try:
            names = likely()
            with at.lock:
                self._entries(at, names)
        except BaseException:
            reading.cancel()
            raise
        return cast("dict[tuple[str, int], tuple[int, float]]", self._read(reading, LEAVES))

    async def _ranked(
        self, tables: dict[str, Any], query: str, vector: np.ndarray, k: int, predicate: str | None
    ) -> tuple[dict[tuple[str, int], tuple[int, float]], dict[tuple[str, int], float]]:
        """The ``k`` nearest leaves and the leaves of the best parents by BM25 (``(doc_id, leaf)
        -> (passage, cosine)``), and the parents' BM25 scores. The nearest leaves run at once
        with the full-text query and the leaves of its best parents: a second query scores only
        parents outside the first one's ``_FTS_LIMIT`` best, so the ``BM25_POOL`` best are
        known after the first."""

        async def lexical() -> tuple[dict[tuple[str, int], float], dict[tuple[str, int], tuple[int, float]]]:
            bm25 = await self._bm25(tables[PARENTS], query, predicate)
            best = [parent for parent, _ in sorted(bm25.items(), key=lambda item: -item[1])[:BM25_POOL]]
            return bm25, await self._leaves_of(tables[LEAVES], best, vector, predicate)

        dense, (bm25, lexical_leaves) = await asyncio.gather(
            self._nearest(tables[LEAVES], vector, k, predicate), lexical()
        )
        if len(bm25) == _FTS_LIMIT:  # more parents match: score the nearest leaves' parents too
            missing = {(d, passage) for (d, _), (passage, _) in dense.items()} - bm25.keys()
            bm25.update(await self._bm25(tables[PARENTS], query, predicate, among=missing))
        pooled_with(dense, lexical_leaves)
        return dense, bm25

    async def _nearest(
        self, leaves: Any, vector: np.ndarray, k: int, predicate: str | None
    ) -> dict[tuple[str, int], tuple[int, float]]:
        """``(doc_id, leaf) -> (passage, cosine)`` of the ``k`` nearest leaves."""
        search = leaves.vector_search(vector.astype(np.float32)).distance_type("cosine").limit(k)
        search = search.nprobes(self.nprobes).refine_factor(self.refine_factor)
        if predicate:
            search = search.where(predicate)  # before the search (LanceDB's default)
        rows = await search.select(["doc_id", "leaf", "passage", "vector", "_distance"]).to_arrow()
        return _cosines(_vectors(rows), vector, _keys(rows))

    async def _taken(
        self, at: _Checkout, rows: np.ndarray, vector: np.ndarray
    ) -> dict[tuple[str, int], tuple[int, float]]:
        """``(doc_id, leaf) -> (passage, cosine)`` of the leaves at ``rows`` (the side's nearest):
        their vectors read from the leaves table by row number (checked against the side's int8
        copies: reading ``doc_id``, ``leaf`` and ``passage`` too took three times as long) unless
        kept from an earlier query (:data:`VECTOR_CACHE_ROWS`), the rest from the side."""
        side = at.side
        assert side is not None  # a commit with a side
        if not len(rows):
            return {}
        wanted = rows.tolist()
        with at.vectors_lock:
            kept = {r: at.vectors[r] for r in wanted if r in at.vectors}
        missing = [r for r in wanted if r not in kept]
        if missing:
            taken = await at.tables[LEAVES].take_offsets(missing).select(["vector"]).to_arrow()
            read = _vectors(taken)
            if len(read) != len(missing) or not np.array_equal(int8_rows(read)[0], side.codes[missing]):
                raise RuntimeError(f"its side {side.folder} does not match the leaves table")
            kept.update(zip(missing, (v.copy() for v in read)))  # rows apart: each one evicted alone
        with at.vectors_lock:
            for r in wanted:
                at.vectors[r] = kept[r]
                at.vectors.move_to_end(r)
            while len(at.vectors) > VECTOR_CACHE_ROWS:
                at.vectors.popitem(last=False)
        return _cosines(np.stack([kept[r] for r in wanted]), vector, side.leaves(rows))

    async def _bm25(
        self, parents: Any, query: str, predicate: str | None, among: set[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], float]:
        """``(doc_id, passage) -> BM25 score`` of the ``_FTS_LIMIT`` best parents, or of those
        ``among`` that match (LanceDB's full-text index: the in-memory BM25's scores)."""
        terms = " ".join(dict.fromkeys(BM25.words(query)))
        if not terms or among == set():
            return {}
        search = parents.query().nearest_to_text(terms).limit(_FTS_LIMIT if among is None else len(among))
        clauses = [predicate] if predicate else []
        if among:
            clauses.append("parent IN (" + ", ".join(str(parent_key(d, p)) for d, p in sorted(among)) + ")")
        if clauses:
            search = search.where(" AND ".join(clauses))  # before the search (LanceDB's default)
        rows = (await search.select(["doc_id", "passage", "_score"]).to_arrow()).to_pydict()
        return {(d, int(p)): float(s) for d, p, s in zip(rows["doc_id"], rows["passage"], rows["_score"])}

    async def _leaves_of(
        self,
        leaves: Any,
        parents: list[tuple[str, int]],
        vector: np.ndarray,
        predicate: str | None,
    ) -> dict[tuple[str, int], tuple[int, float]]:
        """The leaves of ``parents``, with their cosines (from int8, as in memory)."""
        if not parents:
            return {}
        keys = ", ".join(str(parent_key(d, p)) for d, p in parents)
        where = f"parent IN ({keys})" + (f" AND {predicate}" if predicate else "")
        query = leaves.query().where(where).select(["doc_id", "leaf", "passage", "vector"]).limit(1 << 20)
        rows = await query.to_arrow()
        return _cosines(_vectors(rows), vector, _keys(rows), int8=True)

    def _hits(self, at: _Checkout, scored: list[tuple[tuple[str, int], float]]) -> list[Hit]:
        """Hits of ``((doc_id, leaf), score)``, their documents read into the cache."""
        if not scored:
            return []
        with at.lock:
            cached = self._entries(at, (key[0] for key, _ in scored))
            if len(cached) < len({key[0] for key, _ in scored}):
                raise StoreError(
                    f"the store {self.uri}: a leaf's document is missing from its {DOCS} table; write it again"
                )
            labels = [int(cached[d].labels[leaf]) for (d, leaf), _ in scored]
            return at.expander.hits(labels, [s for _, s in scored], at.level)

    def hits_for(self, spans: Iterable[tuple[str, int, int, float]], *, filter: Filter | None = None) -> list[Hit]:
        """Hits of the leaves that spans found elsewhere overlap (see :meth:`chunkforge.Index.hits_for`)."""
        return self._hits_for(self._now, spans, filter or Filter())

    def _hits_for(self, at: _Checkout, spans: Iterable[tuple[str, int, int, float]], passes: Filter) -> list[Hit]:
        best: dict[tuple[str, int], float] = {}
        with at.lock:
            for i, (doc_id, start, end, score) in enumerate(checked_spans(spans)):
                entry = self._entries(at, [doc_id]).get(doc_id)
                if entry is None or not passes.admits(doc_id, entry.metadata):
                    raise KeyError(f"spans[{i}]: no document {doc_id!r} in the store")
                if end > entry.length:
                    raise ValueError(f"spans[{i}]: {start}-{end} is not a span of {doc_id!r} (0-{entry.length})")
                for leaf in overlapping(entry.starts, entry.ends, start, end):
                    best[(doc_id, leaf)] = max(best.get((doc_id, leaf), float("-inf")), score)
        return self._hits(at, sorted(best.items(), key=lambda item: (-item[1], item[0])))

    # -- expansion ---------------------------------------------------------

    def expand(
        self,
        hits: Iterable[Hit] | Sequence[tuple[str, int, int, float]],
        options: ExpandOptions | None = None,
        /,
        *,
        filter: Filter | None = None,
        **given: Any,
    ) -> Payload:
        """Hits -> passages, as :meth:`chunkforge.Index.expand`: hits of this store (made by any
        of its commits: a leaf is found by its document and span) or spans ``(doc_id, start,
        end, score)`` found elsewhere, of documents ``filter`` passes. The payload's metadata
        is each passage's document's."""
        chosen = ExpandOptions.of(options, **given)
        at, passes, sent = self._now, filter or Filter(), list(hits)
        if are_spans(sent):
            spans = cast("Sequence[tuple[str, int, int, float]]", sent)
            return self._expand(at, self._hits_for(at, spans, passes), chosen)
        with at.lock:
            cached = self._entries(at, (h.doc_id for h in sent if isinstance(h, Hit) and isinstance(h.doc_id, str)))

            def layout_of(doc_id: str) -> LeafLayout | None:
                entry = cached.get(doc_id)
                return None if entry is None or not passes.admits(doc_id, entry.metadata) else entry.layout

            labels, scores = leaf_labels(cast("list[Hit]", sent), layout_of, "this store")
            found = at.expander.hits(labels, scores, at.level)
            return self._expand_held(at, found, cached, chosen)

    def _expand(self, at: _Checkout, hits: list[Hit], options: ExpandOptions) -> Payload:
        """The payload of hits made on ``at``."""
        with at.lock:
            return self._expand_held(at, hits, self._entries(at, (h.doc_id for h in hits)), options)

    def _expand_held(
        self, at: _Checkout, hits: list[Hit], cached: dict[str, _Cached], options: ExpandOptions
    ) -> Payload:
        """:meth:`_expand` with the lock held and the hits' documents read."""
        return expansion.expand(
            at.expander,
            hits,
            lambda ps: {p.doc_id: cached[p.doc_id].metadata for p in ps},
            at.level,
            options,
        )

    @spells_search_keywords
    def query(
        self,
        question: str,
        k: int = RECOMMENDED["k"],
        *,
        options: ExpandOptions | None = None,
        floor: float | None = RECOMMENDED["floor"],
        **given: Any,
    ) -> Payload:
        """:meth:`search` then :meth:`expand` on one commit, ``budget_tokens`` 1,000 unless given
        (the recommended policy, as :meth:`chunkforge.Index.query`); under ``floor`` (the best
        cosine of the question with a hit leaf) an empty payload that says so
        (``abstained``), as :meth:`chunkforge.Index.query`."""
        checked = check_floor(floor)
        keywords, given = split_keywords(given)
        chosen = ExpandOptions.recommended(options, **given)
        at = self._now
        best: list[float] = []
        passes, hybrid = search_filter(keywords)
        hits = self._search(at, question, k, passes, hybrid, best)
        if checked is not None and abstains(max(best, default=None), checked):
            return Payload([], hits, {}, abstained=True)
        return self._expand(at, hits, chosen)

    def __repr__(self) -> str:
        return f"StoreIndex({self.uri!r}, version {self.version}, {self.leaf_count} leaves)"
