"""An index on disk: versioned folders behind a ``CURRENT`` pointer, a checksummed
manifest, and the checks that turn a damaged folder into a clear error."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ChunkforgeError
from ..tokenizer import DEFAULT_TOKENIZER, Tokenizer

FORMAT = "chunkforge-index/2"
"""What :meth:`Index.save` writes; format 1 (one HNSW graph, ``vectors.hnsw``) still loads."""
READABLE = ("chunkforge-index/1", FORMAT)
VERSION = re.compile(r"v-\d+")
"""The name of a version folder, as ``CURRENT`` gives it."""


class CorruptIndexError(ChunkforgeError):
    """A folder that is not a chunkforge index, or a corrupt one; the message names the file."""


def tokenizer_json(tokenizer: Tokenizer) -> str:
    """The ``tokenizer.json`` text of a tokenizer loaded from a file, from JSON text or the default one."""
    if tokenizer._json is not None:
        return tokenizer._json
    if Path(tokenizer.source).is_file():
        return Path(tokenizer.source).read_text(encoding="utf-8")
    if tokenizer.source == DEFAULT_TOKENIZER:
        return (resources.files("chunkforge") / "data" / DEFAULT_TOKENIZER).read_text(encoding="utf-8")
    raise ValueError(f"cannot save an index whose tokenizer has no file ({tokenizer!r}); load it from a file")


MANIFEST_FIELDS: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "settings": dict,
    "dim": (int, type(None)),
    "next_label": int,
    "documents": int,
    "files": dict,
    "checksum": str,
}


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest without its ``checksum`` field (keys sorted)."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def check_manifest(manifest: Any, path: Path) -> None:
    """CorruptIndexError naming ``path`` unless the manifest is whole (its checksum
    matches) and well formed."""
    if not isinstance(manifest, dict) or manifest.get("format") not in READABLE:
        raise CorruptIndexError(f"{path}: not a {' or '.join(READABLE)} manifest")
    for key, kind in MANIFEST_FIELDS.items():
        value = manifest.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise CorruptIndexError(f"corrupt index: {path}: {key!r} is missing or of the wrong type")
    if manifest["checksum"] != manifest_checksum(manifest):
        raise CorruptIndexError(f"corrupt index: {path} does not match its checksum")
    if manifest["next_label"] < 0 or manifest["documents"] < 0 or (manifest["dim"] or 1) < 1:
        raise CorruptIndexError(f"corrupt index: {path}: negative counts")
    files = manifest["files"]
    graphs = manifest.get("graphs", [])
    if not isinstance(graphs, list) or not all(isinstance(n, str) and n in files for n in graphs):
        raise CorruptIndexError(f"corrupt index: {path}: bad graph list")
    if not all(isinstance(n, str) and "/" not in n and isinstance(c, list) and len(c) == 2 for n, c in files.items()):
        raise CorruptIndexError(f"corrupt index: {path}: bad file list")


def checksum(path: Path) -> list[int]:
    """``[size, crc32]`` of a file."""
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return [path.stat().st_size, crc]


@contextlib.contextmanager
def holding(root: Path, shared: bool) -> Iterator[None]:
    """Holds the index folder ``root``: shared by loads, alone by a save, so no save removes
    the version a load is reading and two saves take turns (an advisory lock on the folder,
    in any process; the system releases it when the holder dies)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def version_folder(root: Path) -> Path:
    """The version folder ``root/CURRENT`` names; CorruptIndexError unless it names one of
    ``root``'s own version folders (``v-<n>``: no path, absolute or relative)."""
    pointer = root / "CURRENT"
    if not pointer.is_file():
        raise CorruptIndexError(f"{root} is not a chunkforge index (no CURRENT file)")
    name = read_pointer(pointer)
    if not VERSION.fullmatch(name):
        raise CorruptIndexError(f"corrupt index: {pointer} names {name!r}, not a version folder (v-<n>) of the index")
    return root / name


POINTER_BYTES = 64
"""The most of ``CURRENT`` read (a version's name is about 9 bytes)."""


def read_pointer(pointer: Path) -> str:
    """The version name in ``CURRENT``: a regular file (not a FIFO, a device or ``/dev/zero``
    behind a link: opened without blocking, checked before it is read) of at most
    :data:`POINTER_BYTES`; CorruptIndexError naming it otherwise."""
    try:
        fd = os.open(pointer, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise CorruptIndexError(f"corrupt index: cannot read {pointer}: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CorruptIndexError(f"corrupt index: {pointer} is not a regular file")
        data = os.read(fd, POINTER_BYTES + 1)
    except OSError as exc:
        raise CorruptIndexError(f"corrupt index: cannot read {pointer}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > POINTER_BYTES:
        raise CorruptIndexError(f"corrupt index: {pointer} is longer than {POINTER_BYTES} bytes")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise CorruptIndexError(f"corrupt index: {pointer} is not UTF-8") from exc


def check_labels(labels: np.ndarray, manifest: dict[str, Any], path: Path) -> None:
    """CorruptIndexError naming ``path`` unless the leaves' labels (``-1``: not a leaf) are
    distinct and below ``next_label``, and ``next_label`` is at most the vectors the graphs
    can hold (each label ever given has one there): checked before native code, which
    allocates by label, sees them."""
    leaves = labels[labels >= 0]
    if (labels < -1).any() or (len(leaves) and int(leaves.max()) >= manifest["next_label"]):
        raise CorruptIndexError(f"corrupt index: {path}: a leaf label is out of range")
    if len(np.unique(leaves)) != len(leaves):
        raise CorruptIndexError(f"corrupt index: {path}: a leaf label is used twice")
    graphs = manifest.get("graphs", ["vectors.hnsw"])  # format 1 kept one graph
    graph_bytes = sum(manifest["files"].get(name, [0])[0] for name in graphs)
    if manifest["next_label"] > graph_bytes // (4 * (manifest["dim"] or 1)):
        raise CorruptIndexError(
            f"corrupt index: next_label {manifest['next_label']} is more than the graphs ({graph_bytes} bytes) hold"
        )


def headings_of(value: Any, path: Path) -> list[list[str]]:
    """A document's saved ``headings`` (JSON: a list of heading paths, lists of strings);
    CorruptIndexError naming ``path`` when it is not that."""
    try:
        headings = json.loads(value)
    except (TypeError, ValueError) as exc:
        raise CorruptIndexError(f"corrupt index: {path}: headings are not JSON ({exc})") from exc
    if not isinstance(headings, list) or not all(
        isinstance(h, list) and all(isinstance(s, str) for s in h) for h in headings
    ):
        raise CorruptIndexError(f"corrupt index: {path}: headings must be lists of strings")
    return headings


def fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
