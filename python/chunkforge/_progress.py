"""Progress bars (tqdm on stderr): shown on a terminal unless asked otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeGuard

from tqdm import tqdm


class ProgressBar(Protocol):
    """A bar a caller passes in and keeps (e.g. its own tqdm bar): anything with ``update``."""

    def update(self, n: int) -> object: ...


def progress(show: bool | None = None, **options: Any) -> tqdm:
    """A tqdm bar on stderr. ``show``: True always, False never, None (the
    default) only when stderr is a terminal, so logs and pipes stay clean."""
    enabled = sys.stderr.isatty() if show is None else bool(show)
    return tqdm(file=sys.stderr, disable=not enabled, dynamic_ncols=True, **options)


@contextmanager
def advancing(show: bool | None | ProgressBar, **options: Any) -> Iterator[ProgressBar]:
    """``show`` itself when it is a bar (anything with ``update``; its owner closes it), else
    a new :func:`progress` bar (``show`` as there), closed on exit."""
    if _is_bar(show):
        yield show
        return
    bar = progress(None if show is None else bool(show), **options)
    try:
        yield bar
    finally:
        bar.close()


def _is_bar(show: object) -> TypeGuard[ProgressBar]:
    return hasattr(show, "update")
