"""The LanceDB store's layout, shared by its writer (:mod:`~chunkforge.index.store_write`) and
its reader (:mod:`~chunkforge.index.store_query`): the tables and their columns, a parent's key,
the commits, and how a store is found (see :mod:`chunkforge.index.store`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

LANCEDB_EXTRA = 'pip install "chunkforge[lancedb,index]"'
LEAVES, PARENTS, DOCS, COMMITS = "leaves", "parents", "docs", "commits"


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError as exc:
        raise InputError(f"the store needs lancedb: {LANCEDB_EXTRA}") from exc
    return lancedb


def parent_key(doc_id: str, passage: int) -> int:
    """A parent's key in the store, stable across updates: 64 bits of BLAKE2b of its document
    id and number, as a signed integer (B-tree indexed on the leaves).

    >>> parent_key("a.md", 0) == parent_key("a.md", 0) != parent_key("a.md", 1)
    True
    """
    digest = hashlib.blake2b(f"{doc_id}\0{passage}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def schemas(dim: int) -> dict[str, pa.Schema]:
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
                ("words", pa.binary()),
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


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a local folder holding a store of :func:`write_store` (its commits table)."""
    return (Path(path) / f"{COMMITS}.lance").is_dir()


def is_local(uri: str) -> bool:
    """Whether ``uri`` is a path on this machine (not ``s3://``, ``gs://``, ``az://``, ...).

    >>> is_local("store.lancedb"), is_local("s3://bucket/store")
    (True, False)
    """
    return "://" not in uri or uri.startswith("file://")


def _connect(uri: str) -> Any:
    """A connection to the store at ``uri`` for reading: a local path that holds no store is a
    FileNotFoundError, and nothing is created there (LanceDB's ``connect`` makes the folder)."""
    if is_local(uri) and not is_store(uri.removeprefix("file://")):
        raise FileNotFoundError(f"no chunkforge store at {uri}")
    return _lancedb().connect(uri)


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
    commit = last_commit(_connect(os.fspath(uri)))
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
