"""An index on disk: versioned folders behind a ``CURRENT`` pointer, a checksummed
manifest, and the checks that turn a damaged folder into a clear error."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ChunkforgeError
from ..tokenizer import DEFAULT_TOKENIZER, Tokenizer

FORMAT = "chunkforge-index/2"
"""What :meth:`Index.save` writes; format 1 (one HNSW graph, ``vectors.hnsw``) still loads."""
READABLE = ("chunkforge-index/1", FORMAT)


class CorruptIndexError(ChunkforgeError):
    """A folder that is not a chunkforge index, or a corrupt one; the message names the file."""


def tokenizer_json(tokenizer: Tokenizer) -> str:
    """The ``tokenizer.json`` text of a tokenizer loaded from a file or the default one."""
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


def fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
