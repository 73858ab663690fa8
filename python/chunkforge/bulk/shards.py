"""A dataset folder's shards: where they lie and how they are named, their columns, their
counts and manifest entries, whether one is whole, and reading a finished dataset.

>>> shard_path(Path("vectors"), "0" * 32).as_posix()
'vectors/shards/00000000000000000000000000000000.parquet'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._dataset import DatasetManifest
from .._io import Doc, file_sha256, read_manifest
from ..errors import InputError
from .readers import read_inputs, shard_batches, unique_ids
from .spec import JobSpec

if TYPE_CHECKING:
    import pyarrow as pa

SHARDS = "shards"
"""The folder of a dataset's shards."""
PARQUET_SUFFIX = ".parquet"
TREES_SUFFIX = ".trees.parquet"
"""With ``units="tree"``, the documents' trees of shard ``<key>.parquet`` are in ``<key>.trees.parquet``."""
OWN_SHARD_FILE = re.compile(r"[0-9a-f]{32}(\.trees)?\.parquet|\.[0-9a-f]{32}(\.trees)?\.parquet\.\d+-[^/]*\.tmp")
"""The names the job writes in ``shards/``: a shard (``KEY.parquet``) or its temp file; the
clean-up removes no other file."""


def shard_dir(root: Path) -> Path:
    """The shards' folder of the dataset folder ``root``."""
    return root / SHARDS


def shard_path(root: Path, key: str) -> Path:
    """The shard of ``key`` (its rows) in the dataset folder ``root``."""
    return shard_dir(root) / f"{key}{PARQUET_SUFFIX}"


def trees_path(root: Path, key: str) -> Path:
    """The documents' trees of the shard of ``key`` (``units="tree"``)."""
    return shard_dir(root) / f"{key}{TREES_SUFFIX}"


class ShardStats(NamedTuple):
    """One shard's counts: documents, rows and their tokens, chunks (and their tokens)
    embedded rather than taken from the vector cache."""

    docs: int
    rows: int
    tokens: int
    embedded: int
    embedded_tokens: int

    @classmethod
    def of(cls, docs: int, table: pa.Table, embedded: int = 0, embedded_tokens: int = 0) -> ShardStats:
        """The counts of a shard table of ``docs`` documents."""
        return cls(docs, table.num_rows, int(np.sum(table.column("token_count"))), embedded, embedded_tokens)


class Planned(NamedTuple):
    """One batch of documents and the shard file that holds (or will hold) its rows."""

    key: str
    docs: list[Doc]
    exists: bool


def recorded_hashes(root: Path) -> dict[str, str]:
    """The SHA-256 the last manifest of ``root`` recorded for each shard file (by its path in
    the manifest); empty when there is no readable manifest or it recorded none."""
    try:
        shards = read_manifest(root).get("shards", [])
    except InputError:
        return {}
    hashes: dict[str, str] = {}
    for entry in shards if isinstance(shards, list) else []:
        for name in ("file", "trees"):
            if isinstance(entry, dict) and isinstance(entry.get(f"{name}_sha256"), str):
                hashes[str(entry[name])] = entry[f"{name}_sha256"]
    return hashes


def with_hashes(root: Path, entry: dict[str, Any], known: dict[str, str]) -> dict[str, Any]:
    """``entry`` with the SHA-256 of each of its files (``file_sha256``, ``trees_sha256``):
    the recorded one for a kept file, else read from the file just written."""
    for name in ("file", "trees"):
        if name in entry:
            entry[f"{name}_sha256"] = known.get(entry[name]) or file_sha256(root / entry[name])
    return entry


def shard_ok(path: Path, sha256: str | None = None) -> bool:
    """True when ``path`` is a whole shard. With the SHA-256 the manifest recorded for it, the
    file's bytes must hash to it (no decoding: 2.7x less time than the full read); without one (a file
    the manifest does not list: a killed run's), it must be a Parquet file that reads in full,
    every page matching its CRC (shards are written with page checksums). A truncated, empty,
    damaged or replaced shard is False: the job builds it again."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return False
    if sha256 is not None:
        try:
            return file_sha256(path) == sha256
        except OSError:
            return False
    try:
        pq.read_table(path, page_checksum_verification=True)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is both
        return False
    return True


def shard_exists(root: Path, key: str, spec: JobSpec, known: dict[str, str] | None = None) -> bool:
    """Whether the shard of ``key`` is whole in the dataset folder ``root`` (:func:`shard_ok`,
    by the hashes ``known`` from the last manifest, :func:`recorded_hashes`; with its trees,
    for ``units="tree"``). A shard that is not whole leaves ``known``: it is built again."""
    known = {} if known is None else known
    paths = [shard_path(Path(), key).as_posix()]
    if spec.units == "tree":
        paths.append(trees_path(Path(), key).as_posix())
    if all(shard_ok(root / path, known.get(path)) for path in paths):
        return True
    for path in paths:
        known.pop(path, None)
    return False


def shard_stats(root: Path, item: Planned) -> ShardStats:
    """The counts of an existing shard (from its token counts)."""
    import pyarrow.parquet as pq

    return ShardStats.of(len(item.docs), pq.read_table(shard_path(root, item.key), columns=["token_count"]))


def shard_entry(key: str, stats: ShardStats, spec: JobSpec) -> dict[str, Any]:
    """The manifest's entry of a shard (and of its docs table, ``trees``, with ``units="tree"``)."""
    entry: dict[str, Any] = {"file": shard_path(Path(), key).as_posix()}
    if spec.units == "tree":
        entry["trees"] = trees_path(Path(), key).as_posix()
    return {**entry, "docs": stats.docs, "rows": stats.rows, "tokens": stats.tokens}


def batch_key(settings: str, docs: list[Doc]) -> str:
    """The shard name of a batch: a hash of the job's settings and each document's id and text
    (each id preceded by its length, so no two batches hash the same bytes)."""
    digest = hashlib.blake2b(settings.encode(), digest_size=16)
    for doc in docs:
        doc_id = str(doc.doc_id).encode()
        digest.update(len(doc_id).to_bytes(8, "big") + doc_id)
        digest.update(hashlib.blake2b(doc.text.encode(), digest_size=16).digest())
        if doc.metadata:  # units="tree" keeps it with the document
            digest.update(hashlib.blake2b(json.dumps(doc.metadata, sort_keys=True, default=str).encode()).digest())
    return digest.hexdigest()


def plan(inputs: Sequence[str], spec: JobSpec, settings: str, root: Path, known: dict[str, str]) -> Iterator[Planned]:
    """The corpus as shard batches, each with its key and whether its shard exists (checked
    by the hashes ``known`` from the last manifest where it recorded them)."""
    for docs in shard_batches(unique_ids(read_inputs(inputs, spec)), spec.shard_docs):
        key = batch_key(settings, docs)
        yield Planned(key, docs, shard_exists(root, key, spec, known))


def own_shards_only(root: Path) -> bool:
    """True for a ``shards`` folder holding nothing but the job's own files (a killed first
    run's): such a folder without a manifest is resumed, any other is not a dataset."""
    folder = shard_dir(root)
    return folder.is_dir() and all(OWN_SHARD_FILE.fullmatch(p.name) and p.is_file() for p in folder.iterdir())


def remove_unlisted(root: Path, shards: Iterable[dict[str, Any]]) -> None:
    """Removes shard files (and leftover temp files) the manifest does not list; files and
    folders of other names are the user's and stay."""
    listed = {Path(s[name]).name for s in shards for name in ("file", "trees") if name in s}
    for path in shard_dir(root).iterdir():
        if path.name not in listed and OWN_SHARD_FILE.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def iter_shards(out: str | os.PathLike[str]) -> Iterator[Path]:
    """The shard files of a finished dataset, in corpus order.

    >>> import tempfile
    >>> from chunkforge import bulk
    >>> folder = tempfile.TemporaryDirectory()
    >>> summary = bulk.run(["docs/how-it-works.md"], folder.name, progress=False)
    >>> [p.name for p in iter_shards(folder.name)]  # named by their content
    ['....parquet']
    >>> folder.cleanup()
    """
    root = Path(out)
    for entry in DatasetManifest.read(root).shards:
        yield root / entry.file


def read_dataset(out: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """All rows of a dataset folder, in corpus order (the manifest's shards, in order).

    >>> import tempfile
    >>> from chunkforge import bulk
    >>> folder = tempfile.TemporaryDirectory()
    >>> summary = bulk.run(["docs/how-it-works.md"], folder.name, progress=False)
    >>> read_dataset(folder.name, columns=["doc_id", "vector"]).num_rows == summary.rows
    True
    >>> folder.cleanup()
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(out)
    files = list(iter_shards(root))
    if not files:
        return DatasetManifest.read(root).schema().empty_table()
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f, columns=columns, page_checksum_verification=True))
        except (OSError, ValueError) as exc:
            raise InputError(f"{f} is damaged ({exc}); rerun the job to rebuild it") from exc
    return pa.concat_tables(tables)
