"""A readers-writer lock: many readers at once, or one writer. Writers are
preferred (a waiting writer holds back new readers, so a stream of queries
cannot starve it); a thread already reading may read again (nested calls),
and the writing thread may read or write again."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class RWLock:
    def __init__(self) -> None:
        # the condition's own mutex, taken directly on the readers' path: a read is two
        # acquire/release pairs, not two ``with`` blocks of Python-level __enter__/__exit__
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer: int | None = None
        self._waiting_writers = 0
        self._depth = threading.local()

    def acquire_read(self) -> bool:
        """Starts a read (waiting for a writer); True when it is the thread's outermost
        one. Pass that to :meth:`release_read`."""
        depth = getattr(self._depth, "n", 0)
        outer = depth == 0 and self._writer != threading.get_ident()
        if outer:
            self._mutex.acquire()
            try:
                while self._writer is not None or self._waiting_writers:
                    self._cond.wait()
                self._readers += 1
            finally:
                self._mutex.release()
        self._depth.n = depth + 1
        return outer

    def release_read(self, outer: bool) -> None:
        """Ends a read started by :meth:`acquire_read` (which returned ``outer``)."""
        self._depth.n -= 1
        if outer:
            self._mutex.acquire()
            try:
                self._readers -= 1
                if self._readers == 0 and self._waiting_writers:  # only writers wait for readers
                    self._cond.notify_all()
            finally:
                self._mutex.release()

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        outer = self.acquire_read()
        try:
            yield
        finally:
            self.release_read(outer)

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        if getattr(self._depth, "n", 0):
            raise RuntimeError("a thread that is reading cannot start writing (it would wait for itself)")
        with self._cond:
            self._waiting_writers += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            except BaseException:  # interrupted while waiting: the readers it held back go on
                self._waiting_writers -= 1
                self._cond.notify_all()
                raise
            self._waiting_writers -= 1
            self._writer = me
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._cond.notify_all()


def reads(method: F) -> F:
    """Runs the method under a read of ``self._lock`` (no context manager: queries
    take microseconds)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self._lock
        outer = lock.acquire_read()
        try:
            return method(self, *args, **kwargs)
        finally:
            lock.release_read(outer)

    return wrapper  # type: ignore[return-value]


def writes(method: F) -> F:
    """Runs the method under ``self._lock.write()``."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock.write():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
