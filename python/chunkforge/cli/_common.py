"""What the commands share: where output goes (atomically), and the checks of ``--out``."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .._io import atomic_file  # noqa: F401  (re-exported for the commands)
from ..errors import InputError


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[IO[str]]:
    """stdout for None or ``-``; else a temp file beside ``path``, renamed over it on
    success and removed on any failure (including Ctrl-C)."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_file(Path(path)) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as out:
        yield out


def refuse_output_input(out: str | None, inputs: Iterable[str]) -> None:
    """InputError when ``--out`` is one of the input files (it would be overwritten)."""
    if out is None or out == "-" or not os.path.exists(out):
        return
    for path in inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(out, path):
                raise InputError(f"--out {out} is also an input ({path}); write to another file")


def load_index_encoder(index: Any) -> None:
    """Loads the index's encoder now, so that a model that cannot be loaded or
    converted (missing weights, a read-only cache) is a one-line error, as in ``embed``."""
    try:
        _ = index.encoder
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"cannot load the index's encoder: {exc}") from exc
