"""The index on LanceDB, for corpora that do not fit one process: ``pip install "chunkforge[lancedb,index]"``.

:func:`write_store` puts the bulk job's tree dataset (``embed-docs --index``) into a LanceDB
database (embedded, on local disk or object storage) as four tables:

- ``leaves``: a row a leaf (``doc_id``, ``leaf``: its number in the document, ``passage``, ``tags``,
  ``vector``), with an on-disk ANN index once it is large (:data:`ANN_MIN_ROWS`);
- ``parents``: a row a BM25 passage (the leaves' parents) with its ``terms`` (the in-memory
  index's BM25 terms), full-text indexed;
- ``docs``: a row a document: its text, metadata and tree, read on demand by queries;
- ``commits``: a row per update, naming the version of each table it wrote.

A document's metadata is kept with it (``docs.metadata``) and, for filtering, as ``tags``
(``field=<value as JSON>``, with a label-list index) on its leaves and parents, so that
``where=`` is pushed down to LanceDB's filters.

An update (the job's next run) deletes the rows of the shards that are gone and adds those of
the new ones (a changed document rebuilds only its own shard's rows), then appends a commit.
Readers open the tables at the versions of the latest commit, so they never see half an update;
a job killed mid-update leaves no commit, and its next run first restores every table to the
last commit's version.

:class:`StoreIndex` (``Index.open(uri)``) serves ``search`` / ``expand`` / ``query`` over the store
with the in-memory index's fusion and packing: the hit documents' trees are read into a native
expander with a bounded cache, so a query process holds the ANN index's cache, not the corpus.

>>> from chunkforge.index import Index  # doctest: +SKIP
>>> write_store("vectors", "store.lancedb")  # doctest: +SKIP
>>> Index.open("store.lancedb").query("how do I install it?").render()  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from .._checks import check_int
from .._io import read_manifest
from .._recommended import RECOMMENDED
from .._search import int8_cosines, int8_rows
from ..errors import InputError
from ..tokenizer import Tokenizer
from . import expansion
from .bm25 import BM25
from .expansion import LeafLayout, Order, Pack, recommended
from .fusion import BM25_POOL, DENSE_POOL, fuse
from .payload import DocumentTree, Hit, Payload
from .prefix import passage_texts, title_of
from .trees import (
    SCALARS,
    SavedDoc,
    TreeSettings,
    are_spans,
    check_where,
    checked_spans,
    overlapping,
    passages,
    read_docs,
    scratch_expander,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from ..encoder import Encoder

LANCEDB_EXTRA = 'pip install "chunkforge[lancedb,index]"'
LEAVES, PARENTS, DOCS, COMMITS = "leaves", "parents", "docs", "commits"
ANN_MIN_ROWS = 65536
"""Leaves from which the ``leaves`` table gets an ANN index (below, an exact scan is as fast)."""
ANN_PARTITION_ROWS = 4096
"""Leaves per IVF partition. LanceDB's ``optimize`` joins smaller partitions (measured: 264
partitions of 265 rows became 3), so ``sqrt(rows)`` partitions, smaller than this below 16M
rows, collapsed into a few large ones that every query scans whole."""
CACHE_BYTES = 256 << 20
"""Resident bytes of the documents a query process keeps read (least recently used out):
their text, tokens and trees in the expander, counted as :data:`RESIDENT_PER_TEXT_BYTE` times
the text."""
RESIDENT_PER_TEXT_BYTE = 11
"""Resident bytes a document read into the expander takes per byte of its UTF-8 text
(measured: 3,000 documents of the shipped corpus, 30.7 MB of text, took 323 MB)."""
INDEX_CACHE_BYTES = 512 << 20
"""Bytes of LanceDB's index cache in a query process (IVF partitions and full-text posting
lists read; its own default is 6 GB), kept across reloads. Measured at 10M leaves, 600 distinct
questions: 512 MiB and 1 GiB answered at the same speed, in 1.7 and 1.9 GB processes."""
AnnIndex = Literal["IVF_PQ", "IVF_HNSW_SQ"]
ANN_INDEXES: tuple[AnnIndex, ...] = ("IVF_PQ", "IVF_HNSW_SQ")
_DELETE_KEYS = 256  # shard keys per delete statement
_METADATA_CACHE_BYTES = 256 << 20  # LanceDB's file metadata cache (its default: 1 GB)
_FTS_LIMIT = 4 * DENSE_POOL  # parents a full-text query returns (then those of the nearest leaves)
_ADD_ROWS = 262144  # leaves (and their parents and documents) added per commit


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError as exc:
        raise InputError(f"the store needs lancedb: {LANCEDB_EXTRA}") from exc
    return lancedb


def _run(query: Any) -> Any:
    """Runs a coroutine of LanceDB's async API on its background event loop (reset after a
    fork), for the store's readers: the async API skips the schema reads the sync one makes on
    every query (measured at 119k leaves: 3.1 against 5.2 ms a full-text query)."""
    from lancedb.background_loop import LOOP

    return LOOP.run(query)  # type: ignore[no-untyped-call]


async def _checked_out(uri: str, commit: dict[str, Any], session: Any) -> dict[str, Any]:
    """The leaves, parents and docs tables (LanceDB's async tables) at a commit's versions,
    their caches in ``session``."""
    db = await _lancedb().connect_async(uri, session=session)
    tables = {}
    for name in (LEAVES, PARENTS, DOCS):
        tables[name] = await db.open_table(name)
        await tables[name].checkout(commit[name])
    return tables


def tags_of(metadata: Mapping[str, Any]) -> list[str]:
    """A document's filterable tags: ``field=<value as JSON>`` of each scalar field.

    >>> tags_of({"acl": "public", "year": 2024, "authors": ["a", "b"]})
    ['acl="public"', 'year=2024']
    """
    return [
        f"{name}={json.dumps(value, ensure_ascii=False)}"
        for name, value in sorted(metadata.items())
        if value is None or isinstance(value, SCALARS)
    ]


def where_sql(where: dict[str, list[Any]]) -> str:
    """A checked ``where`` filter as a LanceDB predicate on ``tags`` (every field must match).

    >>> where_sql({"acl": ["public", "it's"]})
    'array_has_any(tags, [\\'acl="public"\\', \\'acl="it\\'\\'s"\\'])'
    """
    clauses = []
    for name, values in where.items():
        tags = ", ".join("'" + tags_of({name: v})[0].replace("'", "''") + "'" for v in values)
        clauses.append(f"array_has_any(tags, [{tags}])")
    return " AND ".join(clauses)


def parent_key(doc_id: str, passage: int) -> int:
    """A parent's key in the store, stable across updates: 64 bits of BLAKE2b of its document
    id and number, as a signed integer (B-tree indexed on the leaves).

    >>> parent_key("a.md", 0) == parent_key("a.md", 0) != parent_key("a.md", 1)
    True
    """
    digest = hashlib.blake2b(f"{doc_id}\0{passage}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _schemas(dim: int) -> dict[str, pa.Schema]:
    import pyarrow as pa

    return {
        LEAVES: pa.schema(
            [
                ("doc_id", pa.string()),
                ("leaf", pa.int32()),
                ("passage", pa.int32()),
                ("parent", pa.int64()),
                ("shard", pa.string()),
                ("tags", pa.list_(pa.string())),
                ("vector", pa.list_(pa.float32(), dim)),
            ]
        ),
        PARENTS: pa.schema(
            [
                ("doc_id", pa.string()),
                ("passage", pa.int32()),
                ("parent", pa.int64()),
                ("shard", pa.string()),
                ("tags", pa.list_(pa.string())),
                ("terms", pa.string()),
            ]
        ),
        DOCS: pa.schema(
            [
                ("doc_id", pa.string()),
                ("shard", pa.string()),
                ("text", pa.large_string()),
                ("metadata", pa.string()),
                ("headings", pa.string()),
                ("nodes", pa.list_(pa.int64())),
                ("leaves", pa.list_(pa.int64())),
                ("sentences", pa.list_(pa.int64())),
            ]
        ),
        COMMITS: pa.schema(
            [
                ("version", pa.int64()),
                ("leaves", pa.int64()),
                ("parents", pa.int64()),
                ("docs", pa.int64()),
                ("shards", pa.large_string()),
                ("settings", pa.string()),
                ("written", pa.float64()),
            ]
        ),
    }


def _shard_rows(
    root: Path, entry: dict[str, Any], schemas: dict[str, pa.Schema], settings: TreeSettings
) -> dict[str, pa.Table]:
    """The rows one shard of a tree dataset (cut with ``settings``) puts in each table."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    key = Path(entry["file"]).name.split(".")[0]
    leaves = pq.read_table(root / entry["file"], columns=["doc_id", "passage", "vector"])
    trees = pq.read_table(root / entry["trees"])
    docs = read_docs(trees, entry["trees"])
    counts = [len(d.tree.leaves) for d in docs]
    if sum(counts) != leaves.num_rows:
        raise InputError(f"{root / entry['file']}: its leaves do not match its trees; rerun the job")
    tags = [tags_of(d.metadata) for d in docs]
    vectors = leaves.column("vector").combine_chunks()
    if vectors.type.value_type != pa.float32():
        vectors = pc.cast(vectors, pa.list_(pa.float32(), vectors.type.list_size))
    parent_rows: dict[str, list[Any]] = {"doc_id": [], "passage": [], "tags": [], "terms": []}
    for doc, doc_tags in zip(docs, tags):
        found = passages(doc.tree.nodes, doc.tree.leaves)
        title = title_of(doc.metadata) if settings.search_prefix else None
        texts = passage_texts(doc.text, found.spans, found.sections, doc.tree.headings, title)
        parent_rows["doc_id"] += [doc.doc_id] * len(texts)
        parent_rows["passage"] += list(range(len(texts)))
        parent_rows["tags"] += [doc_tags] * len(texts)
        parent_rows["terms"] += [" ".join(BM25.words(t)) for t in texts]
    shard = pa.array([key] * leaves.num_rows, pa.string())
    leaf_docs, leaf_passages = leaves.column("doc_id").to_pylist(), leaves.column("passage").to_pylist()
    return {
        LEAVES: pa.Table.from_arrays(
            [
                leaves.column("doc_id"),
                pa.array([i for n in counts for i in range(n)], pa.int32()),
                pa.array(leaf_passages, pa.int32()),
                pa.array([parent_key(d, p) for d, p in zip(leaf_docs, leaf_passages)], pa.int64()),
                shard,
                pa.array([t for t, n in zip(tags, counts) for _ in range(n)], pa.list_(pa.string())),
                vectors,
            ],
            schema=schemas[LEAVES],
        ),
        PARENTS: pa.table(
            {
                **parent_rows,
                "parent": [parent_key(d, p) for d, p in zip(parent_rows["doc_id"], parent_rows["passage"])],
                "shard": [key] * len(parent_rows["doc_id"]),
            }
        )
        .select(schemas[PARENTS].names)
        .cast(schemas[PARENTS]),
        DOCS: trees.append_column("shard", pa.array([key] * trees.num_rows, pa.string()))
        .select(schemas[DOCS].names)
        .cast(schemas[DOCS]),
    }


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a local folder holding a store of :func:`write_store` (its commits table)."""
    return (Path(path) / f"{COMMITS}.lance").is_dir()


def table_names(db: Any) -> set[str]:
    """The names of the tables of a LanceDB connection (every page)."""
    names: set[str] = set()
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.update(page.tables)
        token = page.page_token
        if not token:
            return names


def latest_version(uri: str | os.PathLike[str]) -> int | None:
    """The version of the latest commit of the store at ``uri`` (None: no commit yet)."""
    commit = last_commit(_lancedb().connect(os.fspath(uri)))
    return None if commit is None else int(commit["version"])


def last_commit(db: Any) -> dict[str, Any] | None:
    """The store's latest commit row (None for a new store)."""
    if COMMITS not in table_names(db):
        return None
    table = db.open_table(COMMITS).to_arrow()
    if table.num_rows == 0:
        return None
    rows: list[dict[str, Any]] = table.to_pylist()
    return max(rows, key=lambda r: r["version"])


def write_store(
    dataset: str | os.PathLike[str],
    uri: str | os.PathLike[str],
    *,
    ann_min_rows: int = ANN_MIN_ROWS,
    ann_partitions: int | None = None,
    ann_index: AnnIndex = "IVF_PQ",
) -> int:
    """Brings the store at ``uri`` up to date with the tree dataset ``dataset`` (``embed-docs
    --index``); returns the new commit's version. Only the shards that changed are deleted or
    added; a store already up to date gets no new commit. From ``ann_min_rows`` leaves the
    vectors get an ANN index of the type ``ann_index`` (``"IVF_PQ"``, smaller; ``"IVF_HNSW_SQ"``)
    with ``ann_partitions`` IVF partitions (default: one per :data:`ANN_PARTITION_ROWS` leaves).

    >>> write_store("vectors", "store.lancedb")  # doctest: +SKIP
    1
    """
    if ann_index not in ANN_INDEXES:
        raise ValueError(f"ann_index must be one of {', '.join(ANN_INDEXES)}, not {ann_index!r}")
    lancedb = _lancedb()
    root = Path(dataset)
    manifest = read_manifest(root)
    if manifest.get("units") != "tree":
        raise InputError(f"{root} holds plain chunks; build it with `embed-docs --index` for the store")
    settings = json.dumps({"tree": manifest["chunker"], "model": manifest["model"]}, sort_keys=True)
    schemas = _schemas(manifest["model"]["dim"])
    tree_settings = TreeSettings.from_dict(manifest["chunker"])
    db = lancedb.connect(os.fspath(uri))
    commit = last_commit(db)
    if commit is not None and commit["settings"] != settings:
        raise InputError(f"the store {uri} was written with other settings or another model; give a new store")
    tables = {}
    for name in (LEAVES, PARENTS, DOCS):
        if name in table_names(db):
            table = db.open_table(name)
            if commit is None or table.version != commit[name]:  # a killed update's rows, or an orphan table
                if commit is None:
                    table = db.create_table(name, schema=schemas[name], mode="overwrite")
                else:
                    table.restore(commit[name])
        else:
            table = db.create_table(name, schema=schemas[name])
        tables[name] = table
    before = set(json.loads(commit["shards"])) if commit is not None else set()
    entries = {Path(e["file"]).name.split(".")[0]: e for e in manifest["shards"]}
    import pyarrow as pa

    gone = sorted(before - set(entries))
    new = [key for key in entries if key not in before]
    if not gone and not new and commit is not None:
        return int(commit["version"])
    for at in range(0, len(gone), _DELETE_KEYS):
        keys = ", ".join(f"'{k}'" for k in gone[at : at + _DELETE_KEYS])
        for table in tables.values():
            table.delete(f"shard IN ({keys})")
    block: dict[str, list[pa.Table]] = {name: [] for name in tables}
    for at, key in enumerate(new):
        for name, rows in _shard_rows(root, entries[key], schemas, tree_settings).items():
            block[name].append(rows)
        if sum(t.num_rows for t in block[LEAVES]) >= _ADD_ROWS or at == len(new) - 1:
            for name, table in tables.items():  # one commit per table and block
                table.add(pa.concat_tables(block[name]))
                block[name] = []
    _index(tables, ann_min_rows, ann_partitions, ann_index)
    version = (int(commit["version"]) if commit is not None else 0) + 1
    row = {
        "version": version,
        **{name: tables[name].version for name in (LEAVES, PARENTS, DOCS)},
        "shards": json.dumps(sorted(entries)),
        "settings": settings,
        "written": time.time(),
    }
    commits = (
        db.open_table(COMMITS) if COMMITS in table_names(db) else db.create_table(COMMITS, schema=schemas[COMMITS])
    )
    commits.add(pa.Table.from_pylist([row], schema=schemas[COMMITS]))
    return version


def _index(tables: dict[str, Any], ann_min_rows: int, ann_partitions: int | None, ann_index: AnnIndex) -> None:
    """The indexes: full text on the parents (rebuilt), label lists on the tags, B-trees on the
    docs' ids and the leaves' parents, and ``ann_index`` (cosine) on the leaves' vectors from
    ``ann_min_rows`` leaves; the other existing indexes take the new rows (``optimize``)."""
    from lancedb import index as lancedb_index

    leaves, parents, docs = tables[LEAVES], tables[PARENTS], tables[DOCS]
    names = {t: {i.name for i in tables[t].list_indices()} for t in tables}
    if parents.count_rows():
        # the terms are the in-memory BM25's own (BM25.words), so its tokenizer only splits them;
        # built anew on every update, as an index that took rows in place scores by other statistics
        terms_only = lancedb_index.FTS(
            base_tokenizer="whitespace",
            lower_case=False,
            stem=False,
            remove_stop_words=False,
            ascii_folding=False,
            max_token_length=None,
        )
        parents.create_index("terms", replace=True, config=terms_only)
    if "tags_idx" not in names[PARENTS] and parents.count_rows():
        parents.create_index("tags", config=lancedb_index.LabelList())
    if "parent_idx" not in names[PARENTS] and parents.count_rows():
        parents.create_index("parent", config=lancedb_index.BTree())
    if not names[DOCS] and docs.count_rows():
        docs.create_index("doc_id", config=lancedb_index.BTree())
    rows = leaves.count_rows()
    has_ann = any("vector" in n for n in names[LEAVES])
    if "tags_idx" not in names[LEAVES] and rows:
        leaves.create_index("tags", config=lancedb_index.LabelList())
        leaves.create_index("parent", config=lancedb_index.BTree())
    for table in tables.values():
        if table.count_rows():
            table.optimize()
    if not has_ann and rows >= ann_min_rows:  # after optimize, which would join its partitions
        partitions = ann_partitions or max(rows // ANN_PARTITION_ROWS, 1)
        config = (
            lancedb_index.IvfPq(distance_type="cosine", num_partitions=partitions, num_sub_vectors=_sub_vectors(leaves))
            if ann_index == "IVF_PQ"
            else lancedb_index.HnswSq(distance_type="cosine", num_partitions=partitions)
        )
        leaves.create_index("vector", config=config)


def _sub_vectors(leaves: Any) -> int:
    """PQ sub-vectors: 8 dimensions each (48 for 384)."""
    dim = leaves.schema.field("vector").type.list_size
    return next(d for d in (dim // 8, dim // 4, dim // 2, 1) if d and dim % d == 0)


def _cosines(rows: pa.Table, vector: np.ndarray, int8: bool = False) -> dict[tuple[str, int], tuple[int, float]]:
    """``(doc_id, leaf) -> (passage, cosine)`` of leaf rows, the cosines computed
    here to 6 decimals (one rule whichever search found a leaf: BLAS's last bit depends on a row's
    place in its block, and leaves of equal text must tie exactly); ``int8``: from the rows in
    int8, as the in-memory index rescores the leaves of its best BM25 parents."""
    if not rows.num_rows:
        return {}
    column = rows.column("vector").combine_chunks()
    vectors = column.values.to_numpy().reshape(len(column), column.type.list_size)
    if int8:
        cos = np.round(int8_cosines(*int8_rows(vectors), vector).astype(np.float64), 6)
    else:
        vectors = vectors.astype(np.float64)
        cos = np.round(vectors @ vector.astype(np.float64) / np.maximum(np.linalg.norm(vectors, axis=1), 1e-12), 6)
    columns = (rows.column(name).to_pylist() for name in ("doc_id", "leaf", "passage"))
    return {(d, int(leaf)): (int(p), float(c)) for d, leaf, p, c in zip(*columns, cos)}


class _Cached:
    """A document read from the store into the expander: its slot, its leaves' labels and
    spans, its metadata, its length and its resident size (bytes)."""

    __slots__ = ("slot", "labels", "starts", "ends", "sections", "metadata", "length", "size")

    def __init__(self, slot: int, labels: np.ndarray, doc: SavedDoc) -> None:
        self.slot, self.labels, self.metadata = slot, labels, doc.metadata
        self.starts, self.ends = doc.tree.nodes[doc.tree.leaves, 0], doc.tree.nodes[doc.tree.leaves, 1]
        self.sections = doc.tree.nodes[doc.tree.leaves, 3]
        self.length, self.size = len(doc.text), RESIDENT_PER_TEXT_BYTE * len(doc.text.encode("utf-8"))

    def label_of(self, hit: Hit) -> int | None:
        """The label of the leaf ``hit`` names by its span (None: no leaf of this document has it)."""
        i = int(np.searchsorted(self.starts, hit.start))
        if i < len(self.starts) and self.starts[i] == hit.start and self.ends[i] == hit.end:
            return int(self.labels[i])
        return None


class StoreIndex:
    """``search`` / ``expand`` / ``query`` over a LanceDB store written by :func:`write_store`,
    as :class:`~chunkforge.Index` serves them in memory (same fusion, same packing). Opened at the
    latest commit; :meth:`reload` moves to a newer one between queries. Safe to share between threads.
    ``cache_bytes``: the documents kept read (resident bytes); ``index_cache_bytes``: LanceDB's cache of
    the index parts read (together, what a query process holds beyond the encoder); ``nprobes``
    and ``refine_factor``: the ANN search's.

    >>> index = StoreIndex("store.lancedb")  # doctest: +SKIP
    >>> index.query("how do I install it?", where={"acl": "public"}).render()  # doctest: +SKIP
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        encoder: Encoder | None = None,
        *,
        cache_bytes: int = CACHE_BYTES,
        index_cache_bytes: int = INDEX_CACHE_BYTES,
        weights: tuple[float, float] = (1.0, 1.0),
        nprobes: int = 32,
        refine_factor: int = 4,
    ) -> None:
        self.uri = os.fspath(uri)
        self._db = _lancedb().connect(self.uri)
        self._encoder = encoder
        self.cache_bytes = check_int("cache_bytes", cache_bytes, 0)
        self.index_cache_bytes = check_int("index_cache_bytes", index_cache_bytes, 0)
        self._session = _lancedb().Session(
            index_cache_size_bytes=self.index_cache_bytes, metadata_cache_size_bytes=_METADATA_CACHE_BYTES
        )
        self.weights = (float(weights[0]), float(weights[1]))
        self.nprobes, self.refine_factor = nprobes, refine_factor
        self._lock = threading.Lock()  # the cache and its expander
        self._tables: dict[str, Any] = {}
        self.version = 0
        if not self.reload():
            raise FileNotFoundError(f"no chunkforge store at {self.uri} (no commit)")

    # -- versions ----------------------------------------------------------

    def reload(self) -> bool:
        """Moves to the store's latest commit when there is a newer one; True when it moved.
        A query already running finishes on the version it started on."""
        commit = last_commit(self._db)
        if commit is None or commit["version"] == self.version:
            return False
        settings = json.loads(commit["settings"])
        tables = _run(_checked_out(self.uri, commit, self._session))
        tree = settings["tree"]
        self.settings = TreeSettings.from_dict(tree)
        self.model = settings["model"]
        with self._lock:
            self._tables = tables
            self.version = int(commit["version"])
            self._reset_cache()
        return True

    def _reset_cache(self) -> None:
        self.tokenizer = self._encoder.tokenizer if self._encoder is not None else Tokenizer.default()
        self._expander = scratch_expander(self.tokenizer)
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cached_bytes = 0
        self._free: list[int] = []
        self._next_label = 0

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
        return int(_run(self._tables[DOCS].count_rows()))

    @property
    def leaf_count(self) -> int:
        """Number of leaves."""
        return int(_run(self._tables[LEAVES].count_rows()))

    # -- documents, read on demand ------------------------------------------

    def _load(self, doc_ids: Iterable[str]) -> dict[str, _Cached]:
        """The cached entries of ``doc_ids`` (read from the store when missing); the lock is held."""
        wanted = list(dict.fromkeys(doc_ids))
        missing = [d for d in wanted if d not in self._cache]
        if missing:
            table = self._tables[DOCS]
            ids = ", ".join("'" + d.replace("'", "''") + "'" for d in missing)
            rows = _run(table.query().where(f"doc_id IN ({ids})").limit(len(missing) + 1).to_arrow())
            self._insert(read_docs(rows, f"{self.uri}/{DOCS}"))
        for d in wanted:
            if d not in self._cache:
                raise KeyError(f"no document {d!r} in the store")
            self._cache.move_to_end(d)
        found = {d: self._cache[d] for d in wanted}
        self._evict(keep=set(wanted))
        return found

    def _insert(self, docs: list[SavedDoc]) -> None:
        """Puts ``docs`` into the expander (in one call: tokenized in parallel) and the cache."""
        labels = []
        for doc in docs:
            n = len(doc.tree.leaves)
            take = min(n, len(self._free))
            labels.append(
                self._free[len(self._free) - take :] + list(range(self._next_label, self._next_label + n - take))
            )
            del self._free[len(self._free) - take :]
            self._next_label += n - take
        trees = [doc.tree for doc in docs]
        slots = self._expander.add_docs(
            [doc.text for doc in docs],
            [t.sentences for t in trees],
            [t.nodes[:, :4] for t in trees],
            [t.leaves.tolist() for t in trees],
            labels,
            [doc.doc_id for doc in docs],
            [t.headings for t in trees],
        )
        for slot, doc_labels, doc in zip(slots, labels, docs):
            entry = _Cached(slot, np.asarray(doc_labels, np.int64), doc)
            self._cache[doc.doc_id] = entry
            self._cached_bytes += entry.size

    def _evict(self, keep: set[str]) -> None:
        while self._cached_bytes > self.cache_bytes and len(self._cache) > len(keep):
            doc_id = next(d for d in self._cache if d not in keep)
            entry = self._cache.pop(doc_id)
            self._expander.remove(entry.slot)
            self._free += entry.labels.tolist()
            self._cached_bytes -= entry.size

    def document(self, doc_id: str) -> str:
        """The text of a document."""
        row = self._doc_rows([doc_id], ["text"])
        return str(row[0]["text"])

    def metadata(self, doc_id: str) -> dict[str, Any]:
        """A document's metadata."""
        return dict(json.loads(self._doc_rows([doc_id], ["metadata"])[0]["metadata"]))

    def tree(self, doc_id: str) -> DocumentTree:
        """A document's tree as stored."""
        with self._lock:
            entry = self._load([doc_id])[doc_id]
            return DocumentTree(*self._expander.tree(entry.slot))

    def _doc_rows(self, doc_ids: Sequence[str], columns: list[str]) -> list[dict[str, Any]]:
        ids = ", ".join("'" + d.replace("'", "''") + "'" for d in doc_ids)
        query = self._tables[DOCS].query().where(f"doc_id IN ({ids})").select(columns).limit(len(doc_ids) + 1)
        rows: list[dict[str, Any]] = _run(query.to_arrow()).to_pylist()
        if len(rows) < len(doc_ids):
            raise KeyError(f"no document {doc_ids[0]!r} in the store")
        return rows

    # -- search ------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 12,
        *,
        doc_id: str | Collection[str] | None = None,
        source: str | Collection[str] | None = None,
        heading_prefix: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        hybrid: bool | None = None,
    ) -> list[Hit]:
        """The ``k`` best leaves for ``query``, best first (see :meth:`chunkforge.Index.search`): the
        nearest leaves (the ANN index) and the leaves of the best parents by BM25 (the full-text
        index), fused as the in-memory index fuses them; ``where``, ``doc_id`` and ``source`` filter
        (pushed down to LanceDB's filters).

        >>> [h.doc_id for h in index.search("install", k=3, where={"acl": "public"})]  # doctest: +SKIP
        """
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        k = check_int("k", k, 1)
        if heading_prefix is not None:
            raise ValueError("heading_prefix is not supported by the store; filter by metadata (where=)")
        checked = check_where(where) or {}
        if source is not None:
            checked["source"] = [source] if isinstance(source, str) else list(source)
        clauses = [where_sql(checked)] if checked else []
        if doc_id is not None:
            ids = [doc_id] if isinstance(doc_id, str) else list(doc_id)
            clauses.append("doc_id IN (" + ", ".join("'" + d.replace("'", "''") + "'" for d in ids) + ")")
        predicate = " AND ".join(clauses) or None
        hybrid = True if hybrid is None else hybrid
        tables = self._tables
        vector = self.encoder.embed_query(query)
        if not hybrid:
            dense = _run(self._nearest(tables[LEAVES], vector, k, predicate))
            ranked = sorted(dense.items(), key=lambda item: (-item[1][1], item[0]))[:k]
            return self._hits([(key, cos) for key, (_, cos) in ranked])
        dense, bm25 = _run(self._ranked(tables, query, vector, max(k, DENSE_POOL), predicate))
        if not dense:
            return []
        keys = list(dense)
        cos = np.array([dense[key][1] for key in keys], np.float64)
        lexical = np.array([bm25.get((key[0], dense[key][0]), 0.0) for key in keys], np.float64)
        tie = np.empty(len(keys), np.int64)  # equal scores (leaves of equal text) by (doc_id, leaf)
        tie[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
        order, fused = fuse(cos, lexical, self.weights, tie)
        return self._hits([(keys[i], float(fused[i])) for i in order[:k].tolist()])

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
        for key, cos in lexical_leaves.items():
            dense.setdefault(key, cos)  # a leaf both searches found keeps its nearest-search cosine
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
        return _cosines(rows, vector)

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
        try:
            rows = (await search.select(["doc_id", "passage", "_score"]).to_arrow()).to_pydict()
        except (ValueError, RuntimeError):  # no term of the query is indexed
            return {}
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
        return _cosines(await query.to_arrow(), vector, int8=True)

    def _hits(self, scored: list[tuple[tuple[str, int], float]]) -> list[Hit]:
        """Hits of ``((doc_id, leaf), score)``, their documents read into the cache."""
        if not scored:
            return []
        with self._lock:
            cached = self._load(key[0] for key, _ in scored)
            labels = [int(cached[d].labels[leaf]) for (d, leaf), _ in scored]
            return self._expander.hits(labels, [s for _, s in scored], len(self.settings.parent_tokens) + 1)

    def hits_for(self, spans: Iterable[tuple[str, int, int, float]]) -> list[Hit]:
        """Hits of the leaves that spans found elsewhere overlap (see :meth:`chunkforge.Index.hits_for`)."""
        best: dict[tuple[str, int], float] = {}
        with self._lock:
            for i, (doc_id, start, end, score) in enumerate(checked_spans(spans)):
                entry = self._load([doc_id])[doc_id]
                if end > entry.length:
                    raise ValueError(f"spans[{i}]: {start}-{end} is not a span of {doc_id!r} (0-{entry.length})")
                for leaf in overlapping(entry.starts, entry.ends, start, end):
                    best[(doc_id, leaf)] = max(best.get((doc_id, leaf), float("-inf")), score)
        return self._hits(sorted(best.items(), key=lambda item: (-item[1], item[0])))

    # -- expansion ---------------------------------------------------------

    def expand(
        self,
        hits: Iterable[Hit] | Sequence[tuple[str, int, int, float]],
        *,
        window: int | None = None,
        parent: bool = False,
        auto_merge: float | None = None,
        budget_tokens: int | None = None,
        order: Order = "score",
        pack: Pack = "skip",
        trim: bool = False,
        window_tokens: int | None = None,
        spread: float | None = None,
    ) -> Payload:
        """Hits -> passages, as :meth:`chunkforge.Index.expand`: hits made by this store index (or
        spans ``(doc_id, start, end, score)`` found elsewhere). The payload's metadata is each
        passage's document's."""
        given: list[Any] = list(hits)
        if are_spans(given):
            given = self.hits_for(cast("Sequence[tuple[str, int, int, float]]", given))
        if not all(isinstance(h, Hit) for h in given):
            raise TypeError("hits must be Hits (or spans (doc_id, start, end, score))")
        hits = cast("list[Hit]", given)
        with self._lock:
            cached = self._load(h.doc_id for h in hits)
            for i, h in enumerate(hits):  # a hit of an older cache or version: relabelled by its span
                label = cached[h.doc_id].label_of(h)
                if label is None:
                    raise ValueError(f"hits[{i}]: {h.doc_id!r} {h.start}-{h.end} is not a leaf of this store")
                if label != h.leaf:
                    hits[i] = dataclasses.replace(h, leaf=label)
            return expansion.expand(
                self._expander,
                hits,
                lambda ps: {p.doc_id: self._cache[p.doc_id].metadata for p in ps},
                lambda doc_id: LeafLayout(cached[doc_id].labels, cached[doc_id].starts, cached[doc_id].sections),
                len(self.settings.parent_tokens) + 1,
                spread=spread,
                window=window,
                parent=parent,
                auto_merge=auto_merge,
                budget_tokens=budget_tokens,
                order=order,
                pack=pack,
                trim=trim,
                window_tokens=window_tokens,
            )

    def query(
        self, question: str, k: int = RECOMMENDED["k"], *, where: Mapping[str, Any] | None = None, **expansion: Any
    ) -> Payload:
        """:meth:`search` then :meth:`expand`, ``budget_tokens`` 1,000 unless given (the
        recommended policy, as :meth:`chunkforge.Index.query`)."""
        return self.expand(self.search(question, k=k, where=where), **recommended(expansion))

    def __repr__(self) -> str:
        return f"StoreIndex({self.uri!r}, version {self.version}, {self.leaf_count} leaves)"
