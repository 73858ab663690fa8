"""Progress bars (tqdm on stderr): shown on a terminal unless asked otherwise; off a terminal,
the long commands print a plain progress line every 30 s instead (:func:`job_progress`)."""

from __future__ import annotations

import os
import sys
import threading
import time
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


LINES_EVERY_ENV = "CHUNKFORGE_PROGRESS_SECONDS"
"""Seconds between the progress lines of a long command off a terminal (default 30)."""


def lines_every() -> float:
    """The seconds between progress lines: ``$CHUNKFORGE_PROGRESS_SECONDS``, else 30.

    >>> lines_every() > 0
    True
    """
    value = os.environ.get(LINES_EVERY_ENV, "")
    try:
        seconds = float(value) if value else 30.0
    except ValueError:
        seconds = 30.0
    return seconds if seconds > 0 else 30.0


class ProgressLines:
    """Progress off a terminal, where a bar would be one endless line of carriage returns: a
    plain line on stderr every ``every`` seconds (``chunkforge DESC: N/TOTAL UNIT, POSTFIX,
    ELAPSED elapsed``), from a daemon thread, so a step that does not report for minutes
    still shows the job is alive. Answers the bar methods the commands call (``update``,
    ``set_postfix_str``, ``total``, ``refresh``, ``close``); prints nothing before the first
    ``every`` seconds, so a short run stays quiet.

    >>> with ProgressLines("embed-docs", unit=" docs", every=3600) as bar:
    ...     bar.update(2)
    ...     bar.set_postfix_str("5 chunks")
    ...     bar.line().startswith("chunkforge embed-docs: 2 docs, 5 chunks, ")
    True
    """

    def __init__(self, desc: str, *, unit: str = "", total: int | None = None, every: float | None = None) -> None:
        self.desc, self.unit, self.total = desc, unit, total
        self.n = 0
        self.postfix = ""
        self.every = lines_every() if every is None else every
        self.started = time.monotonic()
        self.file = sys.stderr
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, name="chunkforge-progress", daemon=True)
        self._thread.start()

    def line(self) -> str:
        """The line printed now."""
        with self._lock:
            count = f"{self.n}/{self.total}" if self.total else str(self.n)
            postfix = f", {self.postfix}" if self.postfix else ""
            elapsed = int(time.monotonic() - self.started)
        return f"chunkforge {self.desc}: {count}{self.unit}{postfix}, {elapsed // 60}:{elapsed % 60:02d} elapsed"

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            try:
                print(self.line(), file=self.file, flush=True)
            except (OSError, ValueError):  # stderr closed or gone: stop printing, keep working
                return

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        with self._lock:
            self.postfix = s

    def refresh(self) -> None:
        """Nothing: the next line shows the new state."""

    def close(self) -> None:
        self._stop.set()

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def job_progress(show: bool | str | None, command: str, **options: Any) -> tqdm | ProgressLines:
    """The progress of a long command (``embed``, ``embed-docs``, ``eval``). ``show``: True
    always a tqdm bar, False nothing, None a bar only on a terminal (as :func:`progress`), and
    ``"log"`` a bar on a terminal, else :class:`ProgressLines` naming ``command`` (what the
    commands pass, so that a job run from a script, a pipe or a scheduler still says it is alive).

    >>> job_progress(False, "eval").disable
    True
    """
    if show == "log":
        if not sys.stderr.isatty():
            return ProgressLines(command, **{k: v for k, v in options.items() if k in ("unit", "total")})
        show = None
    return progress(None if show is None else bool(show), **options)
