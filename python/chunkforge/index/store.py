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
(:func:`~chunkforge.index.filters.tags_of`, with a label-list index) on its leaves and parents, so that
``where=`` is pushed down to LanceDB's filters.

Beside the tables, each commit of a local store gets its side indexes
(:mod:`~chunkforge.index.store_side`, ``<store>/side/<version>/``): an HNSW graph over the
leaves' int8 vectors, the parents' BM25 postings, the rows of each parent's leaves and a copy
of the documents; readers map the arrays and read a document's row from the copy, and search
them in place of LanceDB's indexes, reading no vector (a leaf's cosine is its int8 copy's, as
in memory); a filtered search still goes through LanceDB's filters.

An update (the job's next run) deletes the rows of the shards that are gone and adds those of
the new ones (a changed document rebuilds only its own shard's rows), then appends a commit.
Readers open the tables at the versions of the latest commit, so they never see half an update;
a job killed mid-update leaves no commit, and its next run first restores every table to the
last commit's version.

:class:`StoreIndex` (``Index.open(uri)``) serves ``search`` / ``expand`` / ``query`` over the store
with the in-memory index's fusion and packing: the hit documents' trees are read into a native
expander with a bounded cache, so a query process holds the ANN index's cache, not the corpus.

The modules: :mod:`~chunkforge.index.store_tables` (the tables, their columns, the commits),
:mod:`~chunkforge.index.store_write` (:func:`write_store`, and :func:`write_lancedb`, the bulk
job's one LanceDB writer), :mod:`~chunkforge.index.store_side` (the side indexes) and
:mod:`~chunkforge.index.store_query` (:class:`StoreIndex`); this module names what they offer.

>>> is_store("no-store-here"), is_local("store.lancedb"), is_local("s3://bucket/store")
(False, True, False)

The bulk job's tree dataset (``vectors``) into a store, then queried (in a temporary folder):

>>> import tempfile
>>> from chunkforge import bulk
>>> from chunkforge.index import Index
>>> folder = tempfile.TemporaryDirectory()
>>> vectors, store = f"{folder.name}/vectors", f"{folder.name}/store.lancedb"
>>> _ = bulk.run(["docs/how-it-works.md"], vectors, units="tree", progress=False)
>>> write_store(vectors, store)
1
>>> Index.open(store).query("how are offsets computed?", budget_tokens=60).passages[0].doc_id
'docs/how-it-works.md'
>>> folder.cleanup()
"""

from __future__ import annotations

from .store_cache import CACHE_BYTES, RESIDENT_PER_TEXT_BYTE
from .store_query import INDEX_CACHE_BYTES, StoreError, StoreIndex
from .store_tables import (
    COMMITS,
    DOCS,
    LANCEDB_EXTRA,
    LEAVES,
    PARENTS,
    is_local,
    is_store,
    last_commit,
    latest_version,
    parent_key,
    table_names,
)
from .store_write import ANN_INDEXES, ANN_MIN_ROWS, ANN_PARTITION_ROWS, AnnIndex, write_lancedb, write_store

__all__ = [
    "ANN_INDEXES",
    "ANN_MIN_ROWS",
    "ANN_PARTITION_ROWS",
    "CACHE_BYTES",
    "COMMITS",
    "DOCS",
    "INDEX_CACHE_BYTES",
    "LANCEDB_EXTRA",
    "LEAVES",
    "PARENTS",
    "RESIDENT_PER_TEXT_BYTE",
    "AnnIndex",
    "StoreError",
    "StoreIndex",
    "is_local",
    "is_store",
    "last_commit",
    "latest_version",
    "parent_key",
    "table_names",
    "write_lancedb",
    "write_store",
]
