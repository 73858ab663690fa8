"""The store's reader: :class:`StoreIndex` (``Index.open(uri)``) serves ``search`` / ``expand``
/ ``query`` over a store of :func:`~chunkforge.index.store_write.write_store` with the in-memory
index's fusion and packing; the hit documents' trees are read into a native expander with a
bounded cache, so a query process holds the ANN index's cache, not the corpus."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._checks import check_int
from .._recommended import RECOMMENDED
from .._search import int8_cosines, int8_rows, normalized
from ..errors import ArgumentError, ChunkforgeError, InputError
from ..tokenizer import Tokenizer
from . import expansion
from .bm25 import BM25
from .expansion import LeafLayout, abstains, check_floor, leaf_labels
from .filters import TAGS_VERSION, Filter, sql_quote
from .fusion import BM25_POOL, DENSE_POOL, pooled_with, top_leaves
from .options import ExpandOptions, search_filter, spells_search_keywords, split_keywords
from .payload import DocumentTree, Hit, Payload
from .store_cache import CACHE_BYTES, Cached, DocumentCache, Key, leaf_layout
from .store_side import Side
from .store_tables import DOCS, LEAVES, PARENTS, _connect, _lancedb, last_commit, parent_key
from .trees import TreeSettings, are_spans, checked_spans, overlapping, read_docs

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Unpack

    from ..encoder import Encoder
    from .options import SearchKeywords

INDEX_CACHE_BYTES = 512 << 20
"""Bytes of LanceDB's index cache in a query process (IVF partitions and full-text posting
lists read; its own default is 6 GB), kept across reloads. Measured at 10M leaves, 600 distinct
questions: 512 MiB and 1 GiB answered at the same speed, in 1.7 and 1.9 GB processes."""
NPROBES = 32
"""IVF partitions the nearest-leaves search reads (of one per 4,096 leaves)."""
REFINE_FACTOR = 4
"""LanceDB's nearest-leaves search (a filtered one, or any on a store without a side) rescores
``REFINE_FACTOR`` times the leaves it returns with their full vectors, read from the leaves
table. Measured on the real model's vectors at 1M leaves (the same 150 new questions at each
setting): 4 finds 0.71 of the exact 64 nearest, 10 finds 0.79, but a whole query (100 leaves
asked, so 1,000 vectors read) then took 43 against 35 ms at p50 for new questions in the growth
runs, 118 against 90 ms at 10M leaves (``benches/results/store-growth.md``)."""
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
    vectors: np.ndarray, unit: np.ndarray, keys: tuple[list[str], list[int], list[int]]
) -> dict[tuple[str, int], tuple[int, float]]:
    """``(doc_id, leaf) -> (passage, cosine)`` of leaves (``vectors``, ``keys``: their
    ``doc_id``, ``leaf`` and ``passage``), each cosine with the unit vector ``unit`` from the
    leaf's vector in int8 (:func:`int8_cosines`): one rule whichever search found a leaf, the
    in-memory index's and the side's."""
    cos = int8_cosines(*int8_rows(vectors), unit)
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


class StoreError(ChunkforgeError, RuntimeError):
    """A store that cannot answer (a damaged table or index, a store removed under a reader);
    the message names the store and the table. Not the caller's fault: the service answers 503."""


class _Checkout:
    """One commit of the store as a reader sees it: its tables at that commit's versions, its
    settings, and the documents read from it so far (:class:`DocumentCache`). A query runs on
    one checkout from start to end, so a reload (a new checkout) never changes the tables or
    the documents under it."""

    def __init__(
        self,
        commit: dict[str, Any],
        tables: dict[str, Any],
        side: Side | None,
        tokenizer: Tokenizer,
        cache_bytes: int,
        uri: str,
    ) -> None:
        settings = json.loads(commit["settings"])
        self.version = int(commit["version"])
        self.tables, self.side = tables, side
        self.settings = TreeSettings.from_dict(settings["tree"])
        self.model: dict[str, Any] = settings["model"]
        self.tags = settings.get("tags", 1)
        self.level = len(self.settings.parent_tokens) + 1
        self.docs = DocumentCache(tables[DOCS], side, tokenizer, cache_bytes, f"{uri}/{DOCS}", _run)


class StoreIndex:
    """``search`` / ``expand`` / ``query`` over a LanceDB store written by :func:`write_store`,
    as :class:`~chunkforge.Index` serves them in memory (same fusion, same packing, same
    filters). Opened at the latest commit; :meth:`reload` moves to a newer one, and a query
    running meanwhile finishes on the commit it started on. Safe to share between threads.
    ``cache_bytes``: the documents kept read (resident bytes); ``index_cache_bytes``: LanceDB's
    cache of the index parts read (together, what a query process holds beyond the encoder and
    the side's mapped files); ``nprobes`` and ``refine_factor``: the ANN search's
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
        self._at = _Checkout(commit, tables, side, tokenizer, self.cache_bytes, self.uri)
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

    def _entries(self, at: _Checkout, keys: Iterable[Key]) -> dict[Key, Cached]:
        """The cached entries of those of ``keys`` the store holds; the lock is held. Every search
        and expansion passes here, so a store removed under the reader is found here."""
        if at.side is not None and not at.side.in_store():
            raise StoreError(f"the store {self.uri} is gone: it was removed under this reader")
        try:
            return at.docs.load(keys)
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
        columns = ["doc_id", "text", "metadata", "headings", "nodes", "leaves", "sentences"]
        query = self._now.tables[DOCS].query().where(f"doc_id = {sql_quote(doc_id)}").select(columns).limit(2)
        rows = self._read(query.to_arrow(), DOCS)
        if not rows.num_rows:
            raise KeyError(f"no document {doc_id!r} in the store")
        try:
            tree = read_docs(rows, f"{self.uri}/{DOCS}")[0].tree
        except InputError as exc:  # a damaged row
            raise StoreError(f"the store {self.uri} cannot be read ({DOCS} table: {exc}); write it again") from exc
        return DocumentTree(tree.nodes.copy(), tree.leaves.copy(), tree.sentences.copy(), tree.headings)  # the caller's

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
                dense = side.scored(side.nearest(unit, k), unit)
            else:
                dense = self._read(self._nearest(at.tables[LEAVES], vector, k, predicate), LEAVES)
            ranked = sorted(dense.items(), key=lambda item: (-item[1][1], item[0]))[:k]
            if best is not None and ranked:
                best.append(ranked[0][1][1])
            return self._hits(at, [(key, cos) for key, (_, cos) in ranked])
        if side is not None:
            rows, pooled, bm25 = self._side_ranked(at, side, query, unit, k)
            dense = side.scored(rows, unit)
            pooled_with(dense, pooled)
        else:
            dense, bm25 = self._read(self._ranked(at.tables, query, vector, max(k, DENSE_POOL), predicate), PARENTS)
        if not dense:
            return []
        scored, top = top_leaves(dense, bm25, self.weights, k)
        if best is not None:
            best.append(top)
        return self._hits(at, scored)

    def _side_ranked(
        self, at: _Checkout, side: Side, query: str, unit: np.ndarray, k: int
    ) -> tuple[np.ndarray, dict[tuple[str, int], tuple[int, float]], dict[tuple[str, int], float]]:
        """As :meth:`_ranked`, from the side, for ``k`` hits: the rows of the ``max(k,
        DENSE_POOL)`` nearest leaves; the leaves of the ``BM25_POOL`` best parents by BM25
        (``(doc_id, leaf) -> (passage, cosine)``, the cosine from int8, as the in-memory index
        scores them); the BM25 scores of the parents of both that match (``(doc_id, passage)
        -> score``). While the graph is searched, the sections of the best parents' leaves that
        would be hits were no nearest leaf better are read into the cache (at most ``k``; most
        often they are hits)."""
        searching = side.nearest_later(unit, max(k, DENSE_POOL))
        try:
            best = side.lexical(query, BM25_POOL)
            pooled, bm25 = side.pooled(best, unit), side.bm25(query, np.array(best))
            ahead = [leaf for leaf, _ in top_leaves(pooled, bm25, self.weights, k)[0]]
            with at.docs.lock:
                self._entries(at, at.docs.of_leaves(ahead))
        except BaseException:
            searching.cancel()
            raise
        rows = searching.result()
        bm25.update(side.bm25(query, side.leaf_parent[rows]))
        return rows, pooled, bm25

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
        return _cosines(_vectors(rows), normalized(vector[None, :])[0], _keys(rows))

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
        return _cosines(_vectors(rows), normalized(vector[None, :])[0], _keys(rows))

    def _hits(self, at: _Checkout, scored: list[tuple[tuple[str, int], float]]) -> list[Hit]:
        """Hits of ``((doc_id, leaf), score)``, their sections (or documents) read into the cache."""
        if not scored:
            return []
        with at.docs.lock:
            keys = at.docs.of_leaves(key for key, _ in scored)
            cached = self._entries(at, keys)
            if len(keys) < len(scored) or len(cached) < len(set(keys)):
                raise StoreError(
                    f"the store {self.uri}: a leaf's document is missing from its {DOCS} table; write it again"
                )
            labels = [cached[key].label(leaf) for key, ((_, leaf), _) in zip(keys, scored)]
            return at.docs.expander.hits(labels, [s for _, s in scored], at.level)

    def hits_for(self, spans: Iterable[tuple[str, int, int, float]], *, filter: Filter | None = None) -> list[Hit]:
        """Hits of the leaves that spans found elsewhere overlap (see :meth:`chunkforge.Index.hits_for`)."""
        return self._hits_for(self._now, spans, filter or Filter())

    def _hits_for(self, at: _Checkout, spans: Iterable[tuple[str, int, int, float]], passes: Filter) -> list[Hit]:
        best: dict[tuple[str, int], float] = {}
        with at.docs.lock:
            for i, (doc_id, start, end, score) in enumerate(checked_spans(spans)):
                entries = list(self._entries(at, at.docs.over(doc_id, start, end)).values())
                if not entries or not passes.admits(doc_id, entries[0].metadata):
                    raise KeyError(f"spans[{i}]: no document {doc_id!r} in the store")
                if end > entries[0].length:
                    raise ValueError(f"spans[{i}]: {start}-{end} is not a span of {doc_id!r} (0-{entries[0].length})")
                for entry in entries:
                    for j in overlapping(entry.starts, entry.ends, start, end):
                        leaf = entry.first_leaf + j
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
        with at.docs.lock:
            documents = self._read_for(at, sent)

            def layout_of(doc_id: str) -> LeafLayout | None:
                entries = documents.get(doc_id)
                return None if not entries or not passes.admits(doc_id, entries[0].metadata) else leaf_layout(entries)

            labels, scores = leaf_labels(cast("list[Hit]", sent), layout_of, "this store")
            found = at.docs.expander.hits(labels, scores, at.level)
            return self._expand_held(at, found, documents, chosen)

    def _read_for(self, at: _Checkout, hits: Iterable[object]) -> dict[str, list[Cached]]:
        """The read sections (or documents) of the hits' leaves (by where each starts), by document;
        the lock is held."""
        starts = [
            (h.doc_id, int(h.start))
            for h in hits
            if isinstance(h, Hit) and isinstance(h.doc_id, str) and isinstance(h.start, (int, np.integer))
        ]
        keys = at.docs.of_leaves(starts, by_start=True)
        documents: dict[str, list[Cached]] = {}
        for entry in self._entries(at, keys).values():
            documents.setdefault(entry.doc_id, []).append(entry)
        return documents

    def _expand(self, at: _Checkout, hits: list[Hit], options: ExpandOptions) -> Payload:
        """The payload of hits made on ``at``."""
        with at.docs.lock:
            return self._expand_held(at, hits, self._read_for(at, hits), options)

    def _expand_held(
        self, at: _Checkout, hits: list[Hit], documents: dict[str, list[Cached]], options: ExpandOptions
    ) -> Payload:
        """:meth:`_expand` with the lock held and the hits' sections (or documents) read."""
        return expansion.expand(
            at.docs.expander,
            hits,
            lambda ps: {p.doc_id: documents[p.doc_id][0].metadata for p in ps},
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
