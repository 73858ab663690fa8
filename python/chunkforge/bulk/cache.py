"""The vector cache of the bulk job and of ``chunkforge embed``: every earlier shard made with
the same model fingerprint and dtype is a content-addressed store of vectors, keyed by the
chunk text's hash (``text_hash``), so a rebuilt shard re-embeds only chunks whose text is new.
``reuse`` adds other sources: bulk dataset folders and ``chunkforge embed`` Parquet files, so
the two commands share what either has embedded.

>>> found, vectors = VectorCache(Path("no-dataset/shards"), "{}").lookup(["00" * 8], "float32")
>>> found, vectors.shape
(array([False]), (0, 0))
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..errors import InputError
from .shards import PARQUET_SUFFIX, shard_dir

VECTORS_METADATA = b"chunkforge.vectors"
"""The Parquet schema metadata key holding a file's :func:`~chunkforge.bulk.fingerprint.vectors_key`."""


def reuse_sources(reuse: tuple[str, ...] | list[str]) -> list[Path]:
    """The Parquet files of ``reuse``: a bulk dataset folder's shards, or a Parquet file.

    >>> reuse_sources(["missing.parquet"])
    Traceback (most recent call last):
    ...
    chunkforge.errors.InputError: reuse missing.parquet: no such file or folder
    """
    files: list[Path] = []
    for given in reuse:
        path = Path(given)
        if path.is_dir():
            if not shard_dir(path).is_dir():
                raise InputError(f"{given}: a folder, but not a chunkforge dataset (no shards/ in it)", param="reuse")
            files += sorted(shard_dir(path).glob(f"*{PARQUET_SUFFIX}"))
        elif path.is_file():
            if path.suffix != PARQUET_SUFFIX:
                raise InputError(f"{given}: expected a dataset folder or a .parquet file of vectors", param="reuse")
            files.append(path)
        else:
            raise InputError(f"{given}: no such file or folder", param="reuse")
    return files


class VectorCache:
    """Vectors already computed, by chunk text hash: every shard in ``shard_dir`` (None: none)
    and every file of ``reuse`` (see :func:`reuse_sources`) whose ``vectors`` metadata (model
    fingerprint and dtype) matches. The hash index (16 bytes a row) is built on the first
    lookup; vectors are read from at most a few files at a time."""

    def __init__(self, shard_dir: Path | None, vectors: str, reuse: tuple[str, ...] | list[str] = ()) -> None:
        self.shard_dir, self.vectors = shard_dir, vectors
        self.reuse = reuse_sources(reuse)
        self._paths: list[Path] | None = None
        self._hashes = self._where = np.zeros(0, np.uint64)
        self._loaded: OrderedDict[int, np.ndarray | None] = OrderedDict()

    def _build(self) -> None:
        import pyarrow.parquet as pq

        self._paths, hashes, where = [], [], []
        own = sorted(self.shard_dir.glob(f"*{PARQUET_SUFFIX}")) if self.shard_dir is not None else []
        for path in own + self.reuse:
            try:
                meta = pq.read_schema(path).metadata or {}
                if meta.get(VECTORS_METADATA) != self.vectors.encode():
                    continue
                column = pq.read_table(path, columns=["text_hash"], page_checksum_verification=True).column(0)
                keys = np.frombuffer(bytes.fromhex("".join(column.to_pylist())), ">u8").astype(np.uint64)
            except (OSError, ValueError, TypeError):  # not a shard, or a hash missing: not a cache entry
                continue
            if len(keys) != len(column):  # a hash of another length: not a cache entry
                continue
            shard = len(self._paths)
            self._paths.append(path)
            hashes.append(keys)
            where.append((np.uint64(shard) << np.uint64(32)) | np.arange(len(column), dtype=np.uint64))
        all_hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        order = np.argsort(all_hashes, kind="stable")
        self._hashes = all_hashes[order]
        self._where = (np.concatenate(where) if where else np.zeros(0, np.uint64))[order]

    def lookup(self, hashes: list[str], dtype: str) -> tuple[np.ndarray, np.ndarray]:
        """``(found, vectors)``: which hashes are cached, and their vectors (rows of ``found``)."""
        if self._paths is None:
            self._build()
        keys = np.frombuffer(bytes.fromhex("".join(hashes)), ">u8").astype(np.uint64)
        pos = np.minimum(np.searchsorted(self._hashes, keys), max(len(self._hashes) - 1, 0))
        found = (self._hashes[pos] == keys) if len(self._hashes) else np.zeros(len(keys), bool)
        where = self._where[pos[found]]
        shards, rows = (where >> np.uint64(32)).astype(np.int64), (where & np.uint64(0xFFFFFFFF)).astype(np.int64)
        vectors = np.empty((len(where), 0), dtype)
        usable = np.ones(len(where), bool)
        for shard in np.unique(shards):
            mine = shards == shard
            block = self._vectors(int(shard))
            if block is None:  # a damaged shard: its vectors are embedded again
                usable[mine] = False
                continue
            if vectors.shape[1] == 0:
                vectors = np.empty((len(where), block.shape[1]), block.dtype)
            vectors[mine] = block[rows[mine]]
        found[np.flatnonzero(found)[~usable]] = False
        return found, vectors[usable]

    def _vectors(self, shard: int) -> np.ndarray | None:
        """The vectors of a shard, None when its pages do not match their checksums."""
        if shard not in self._loaded:
            import pyarrow.parquet as pq

            assert self._paths is not None
            try:
                table = pq.read_table(self._paths[shard], columns=["vector"], page_checksum_verification=True)
            except (OSError, ValueError):
                self._loaded[shard] = None
            else:
                column = table.column(0).combine_chunks()
                self._loaded[shard] = column.values.to_numpy().reshape(len(column), column.type.list_size)
            while len(self._loaded) > 4:
                self._loaded.popitem(last=False)
        self._loaded.move_to_end(shard)
        return self._loaded[shard]
