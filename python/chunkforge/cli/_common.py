"""What the commands share: where output goes (atomically), the checks of ``--out`` and the
encoder of ``--model``. (Library errors carry the parameter they are about, which
:func:`chunkforge.cli.main` spells as the command's flag.)

>>> with open_output("-") as out:
...     print("one record", file=out)
one record
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .._io import atomic_file  # noqa: F401  (re-exported for the commands)
from .._options import EncoderOptions, load_encoder
from ..errors import InputError

if TYPE_CHECKING:
    from ..encoder import Encoder


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


def load_cli_encoder(args: Any) -> Encoder:
    """The encoder of ``--model`` and the command's other encoder flags (a command may lack
    ``--on-overflow`` or ``--max-batch-tokens``); errors carry the parameter (``model``)."""
    for name in ("threads", "max_batch_tokens", "shard_rows"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise InputError(f"must be >= 1, got {value}", param=name)
    options = EncoderOptions(
        model=args.model,
        variant=args.variant,
        on_overflow=getattr(args, "on_overflow", "warn"),
        max_batch_tokens=getattr(args, "max_batch_tokens", None),
        threads=args.threads,
        show_progress=False if args.no_progress else None,
    )
    return load_encoder(options)
