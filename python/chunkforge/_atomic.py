"""Writing a file so that readers see the old content or the new, never a mix:
the one helper every writer of chunkforge uses (CLI outputs, embed parts, ONNX
conversions, index files).

- A regular file (or a name not yet taken) is written to a temp file beside it,
  synced, given the umask's permissions and renamed over it.
- A symlink is followed: the file it points to is replaced, the link stays.
- Anything else (``/dev/stdout``, a FIFO, a device) cannot be replaced by a
  rename: the content is written to a temp file in the system's temp folder and
  then copied into it (write-through, not atomic).
- A file can carry a checksum (``PATH.sha256``, :func:`write_checksum`): a
  cached or resumable file is reused only when :func:`checksum_ok`.
- Temp files are named ``.NAME.PID-RANDOM.tmp``: one left by a killed process
  is removed by the next write of the same name once that process is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


class OutputError(OSError):
    """A file could not be written; the message names it."""


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """A temp path to write; on success its content becomes ``target``'s (see the
    module's rules), on any failure (Ctrl-C included) it is removed. Errors
    creating the temp file or putting it in place are :class:`OutputError`."""
    target = Path(target)
    try:
        mode = os.stat(target).st_mode  # follows symlinks
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {target}: it is a folder")
    through = mode is not None and not stat.S_ISREG(mode)
    final = target if through else Path(os.path.realpath(target))
    folder = Path(tempfile.gettempdir()) if through else final.parent
    if not through:
        remove_stale(final)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.{os.getpid()}-", suffix=suffix)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        try:
            if through:
                with open(tmp, "rb") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            else:
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, final)
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def remove_stale(target: Path) -> list[Path]:
    """Removes temp files of ``target`` (``.NAME.PID-*.tmp*``) left by processes that
    no longer run; returns them."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)-[^/]*\.tmp")
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process umask (read by setting it and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def checksum_path(path: Path) -> Path:
    """Where the checksum of ``path`` is kept: ``PATH.sha256`` beside it."""
    return path.with_name(path.name + ".sha256")


def write_checksum(path: Path) -> None:
    """Writes ``PATH.sha256`` (atomically) for a finished file."""
    with atomic_path(checksum_path(path)) as tmp:
        tmp.write_text(file_sha256(path) + "\n", encoding="ascii")


def checksum_ok(path: Path) -> bool:
    """True when ``path`` and its checksum exist and agree; False when not
    (missing, truncated, flipped bytes, killed before the checksum was written):
    the caller makes the file again, replacing it atomically."""
    try:
        return checksum_path(path).read_text(encoding="ascii").strip() == file_sha256(path)
    except (OSError, UnicodeDecodeError):
        return False
