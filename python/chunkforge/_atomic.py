"""Atomic writes moved to :mod:`chunkforge._io` (the one I/O module); these names stay
importable from here for one release."""

from ._io import (  # noqa: F401
    OutputError,
    atomic_path,
    checksum_ok,
    checksum_path,
    file_sha256,
    remove_stale,
    write_checksum,
)
