"""The index's readers-writer lock, with real threads (and a real signal)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from chunkforge._rwlock import RWLock

WAIT = 10  # seconds a step may take before the test fails
HOLD = 120  # seconds a reader holds the lock at most, waiting for the test's go (a loaded host is slow)


def started(target, *args) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def stays_blocked(event: threading.Event) -> bool:
    """True when ``event`` is still unset after a while (the thread setting it is waiting)."""
    return not event.wait(0.3)


def test_reads_nest_and_a_reader_cannot_start_writing():
    lock = RWLock()
    with lock.read(), lock.read():
        with pytest.raises(RuntimeError, match="reading cannot start writing"):
            with lock.write():
                pass
    with lock.write(), lock.read(), lock.write():  # the writer may read and write again
        pass
    assert lock._readers == 0 and lock._writer is None


def test_many_readers_at_once_and_a_writer_waits_for_them():
    lock = RWLock()
    inside, leave, wrote = threading.Barrier(3), threading.Event(), threading.Event()

    def reader() -> None:
        with lock.read():
            inside.wait(WAIT)  # both readers hold the lock together
            leave.wait(WAIT)

    def writer() -> None:
        with lock.write():
            wrote.set()

    readers = [started(reader) for _ in range(2)]
    inside.wait(WAIT)
    started(writer)
    assert stays_blocked(wrote)
    leave.set()
    assert wrote.wait(WAIT)
    for t in readers:
        t.join(WAIT)


def test_a_waiting_writer_holds_back_new_readers():
    lock = RWLock()
    reading, leave, wrote, read_after = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []

    def first_reader() -> None:
        with lock.read():
            reading.set()
            leave.wait(WAIT)

    def writer() -> None:
        with lock.write():
            order.append("writer")
            wrote.set()

    def late_reader() -> None:
        with lock.read():
            order.append("reader")
            read_after.set()

    started(first_reader)
    reading.wait(WAIT)
    started(writer)
    while not lock._waiting_writers:
        time.sleep(0.01)
    started(late_reader)
    assert stays_blocked(read_after)  # not let in while the writer waits
    leave.set()
    assert wrote.wait(WAIT) and read_after.wait(WAIT)
    assert order == ["writer", "reader"]


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
def test_a_writer_interrupted_while_waiting_lets_the_readers_it_held_back_in():
    """Ctrl-C while a writer waits for readers: the readers queued behind it go on."""
    lock = RWLock()
    reading, leave, read_after = threading.Event(), threading.Event(), threading.Event()
    done: list[str] = []

    def first_reader() -> None:
        with lock.read():
            reading.set()
            leave.wait(HOLD)  # the test sets it; the bound only keeps a broken lock from hanging
        done.append("first reader")

    def late_reader() -> None:
        with lock.read():
            read_after.set()

    def interrupt(main: int) -> None:
        while not lock._waiting_writers:
            time.sleep(0.01)
        started(late_reader)
        time.sleep(0.3)
        signal.pthread_kill(main, signal.SIGINT)

    started(first_reader)
    reading.wait(WAIT)
    # Python's own SIGINT handler, whatever a library loaded by an earlier test put there
    # (in the whole suite the signal was taken elsewhere and never raised here)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        started(interrupt, threading.get_ident())
        with pytest.raises(KeyboardInterrupt):
            with lock.write():  # waits for first_reader until the signal
                pass
    finally:
        signal.signal(signal.SIGINT, previous)
    assert read_after.wait(WAIT)
    assert not done  # it got in while the first reader still reads
    leave.set()
    assert lock._waiting_writers == 0 and lock._writer is None
