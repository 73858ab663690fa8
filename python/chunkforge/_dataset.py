"""The bulk job's dataset manifest as a type: what the job writes (``manifest.json``, last)
and what every reader of a dataset (``Index.from_dataset``, the store's writer, the shard
readers) takes from it, checked once.

A manifest is trusted for nothing it does not prove: each field has its type, every shard
file lies inside the dataset folder (no absolute path, no ``..``), the shards' counts add up
to the totals (an entry dropped by hand is found), and a shard file is read only after its
bytes hash to the SHA-256 the manifest records (:meth:`ShardEntry.verified`). Errors are
:class:`~chunkforge.errors.InputError` naming the file.

>>> import tempfile
>>> from chunkforge import bulk
>>> folder = tempfile.TemporaryDirectory()
>>> summary = bulk.run(["README.md", "docs/how-it-works.md"], folder.name, shard_docs=1, progress=False)
>>> manifest = DatasetManifest.read(folder.name)
>>> sum(entry.docs for entry in manifest.shards)
2
>>> folder.cleanup()
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ._io import MANIFEST, file_sha256, read_manifest
from .errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

SHA256 = re.compile(r"[0-9a-f]{64}")
FORMAT = "chunkforge.embed-docs/1"
"""What the job writes in a manifest's ``format``."""


def _field(where: Path, data: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = data.get(name)
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise InputError(f"{where}: {name!r} must be {what}, not {value!r}; rerun the job")
    return value


def _count(where: Path, data: dict[str, Any], name: str) -> int:
    value: int = _field(where, data, name, int, "a count")
    if value < 0:
        raise InputError(f"{where}: {name!r} must be a count, not {value!r}; rerun the job")
    return value


def _inside(where: Path, name: str) -> str:
    """A shard file's name, relative and inside the dataset folder."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name or "\0" in name:
        raise InputError(f"{where}: shard file {name!r} is not a path inside the dataset")
    return name


@dataclass(frozen=True)
class ShardEntry:
    """One shard of a dataset: its leaves' (or chunks') file and, with tree units, its
    documents' trees file, each with its SHA-256, and its counts."""

    file: str
    file_sha256: str
    trees: str | None
    trees_sha256: str | None
    docs: int
    rows: int
    tokens: int

    @classmethod
    def of(cls, where: Path, entry: Any, trees: bool) -> ShardEntry:
        if not isinstance(entry, dict):
            raise InputError(f"{where}: a shard entry must be an object, not {entry!r}; rerun the job")
        names = ("file", "trees") if trees else ("file",)
        files: dict[str, str | None] = {"trees": None, "trees_sha256": None}
        for name in names:
            files[name] = _inside(where, _field(where, entry, name, str, "a file name"))
            digest = _field(where, entry, f"{name}_sha256", str, "a SHA-256")
            if not SHA256.fullmatch(digest):
                raise InputError(f"{where}: {name}_sha256 of {entry[name]!r} is not a SHA-256; rerun the job")
            files[f"{name}_sha256"] = digest
        return cls(
            str(files["file"]),
            str(files["file_sha256"]),
            files["trees"],
            files["trees_sha256"],
            _count(where, entry, "docs"),
            _count(where, entry, "rows"),
            _count(where, entry, "tokens"),
        )

    def as_dict(self) -> dict[str, Any]:
        """The entry as the manifest writes it."""
        out: dict[str, Any] = {"file": self.file}
        if self.trees is not None:
            out["trees"] = self.trees
        out.update(docs=self.docs, rows=self.rows, tokens=self.tokens, file_sha256=self.file_sha256)
        if self.trees_sha256 is not None:
            out["trees_sha256"] = self.trees_sha256
        return out

    def verified(self, root: str | os.PathLike[str], which: str = "file") -> Path:
        """The path of this shard's ``which`` file (``"file"`` or ``"trees"``) once its bytes hash
        to the manifest's SHA-256 (InputError naming it otherwise)."""
        name, digest = (self.file, self.file_sha256) if which == "file" else (self.trees, self.trees_sha256)
        if name is None or digest is None:
            raise InputError(f"{root}: shard {self.file} has no {which} file")
        path = Path(root) / name
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot read it ({exc.strerror or exc}); rerun the job") from exc
        if actual != digest:
            raise InputError(f"{path} does not match the SHA-256 its manifest records (damaged?); rerun the job")
        return path


def shard_schema(
    dim: int, dtype: str, with_text: bool, tree: bool, metadata: dict[str, str] | None = None
) -> pa.Schema:
    """The columns of a dataset's shards: doc_id, chunk_id, start, end, token_count, heading_path,
    (passage, for the index's ``tree``; text, ``with_text``;) text_hash, vector (fixed-size list
    of ``dtype``, float32 or float16, of ``dim``).

    >>> shard_schema(384, "float16", with_text=False, tree=True).names[-3:]
    ['passage', 'text_hash', 'vector']
    """
    import pyarrow as pa

    fields = [
        ("doc_id", pa.string()),
        ("chunk_id", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("token_count", pa.int32()),
        ("heading_path", pa.list_(pa.string())),
    ]
    if tree:
        fields.append(("passage", pa.int32()))
    if with_text:
        fields.append(("text", pa.string()))
    fields += [("text_hash", pa.string()), ("vector", pa.list_(getattr(pa, dtype)(), dim))]
    return pa.schema(fields, metadata=metadata)


@dataclass(frozen=True)
class DatasetManifest:
    """A finished dataset's manifest (see the module): its model, its units (``"tree"``: the
    index's leaves and trees), its chunker settings, its totals and its shards in order."""

    root: Path
    model: dict[str, Any]
    units: str
    chunker: dict[str, Any]
    vector_dtype: str
    with_text: bool
    docs: int
    rows: int
    tokens: int
    shards: tuple[ShardEntry, ...]
    format: str = FORMAT
    chunkforge_version: str = ""
    columns: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> pa.Schema:
        """The columns of its shards (:func:`shard_schema`), whether it has any or not."""
        return shard_schema(int(self.model["dim"]), self.vector_dtype, self.with_text, self.units == "tree")

    def as_dict(self) -> dict[str, Any]:
        """The manifest as the job writes it (``manifest.json``)."""
        return {
            "format": self.format,
            "chunkforge_version": self.chunkforge_version,
            "model": self.model,
            "units": self.units,
            "chunker": self.chunker,
            "vector_dtype": self.vector_dtype,
            "with_text": self.with_text,
            "columns": self.columns,
            "docs": self.docs,
            "rows": self.rows,
            "tokens": self.tokens,
            "shards": [entry.as_dict() for entry in self.shards],
        }

    def checked(self) -> DatasetManifest:
        """The manifest once its shards add up to its totals and name each file once (InputError
        naming the manifest otherwise): what :meth:`read` checks, and the job before it writes."""
        where = self.root / MANIFEST
        for name in ("docs", "rows"):
            listed = sum(getattr(entry, name) for entry in self.shards)
            if listed != getattr(self, name):
                raise InputError(
                    f"{where}: its shards hold {listed} {name}, its total says {getattr(self, name)} "
                    "(an entry missing?); rerun the job"
                )
        files = [entry.file for entry in self.shards] + [entry.trees for entry in self.shards if entry.trees]
        if len(set(files)) != len(files):
            raise InputError(f"{where}: a shard file is listed twice; rerun the job")
        return self

    @classmethod
    def read(cls, root: str | os.PathLike[str]) -> DatasetManifest:
        """The manifest of the dataset folder ``root``, checked."""
        folder = Path(root)
        data = read_manifest(folder)
        where = folder / MANIFEST
        model: dict[str, Any] = _field(where, data, "model", dict, "an object")
        _field(where, model, "name", str, "a model name")
        if _count(where, model, "dim") < 1:
            raise InputError(f"{where}: the model's 'dim' must be at least 1; rerun the job")
        units = _field(where, data, "units", str, "a unit kind")
        raw = _field(where, data, "shards", list, "a list of shards")
        shards = tuple(ShardEntry.of(where, entry, units == "tree") for entry in raw)
        return cls(
            folder,
            model,
            units,
            _field(where, data, "chunker", dict, "an object"),
            _field(where, data, "vector_dtype", str, "a dtype name"),
            _field(where, data, "with_text", bool, "true or false"),
            _count(where, data, "docs"),
            _count(where, data, "rows"),
            _count(where, data, "tokens"),
            shards,
            str(data.get("format", FORMAT)),
            str(data.get("chunkforge_version", "")),
            data["columns"] if isinstance(data.get("columns"), dict) else {},
        ).checked()
