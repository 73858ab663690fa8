"""The service's HTTP/1.1 connections: uvicorn's h11 protocol with a deadline for each
request to arrive whole and a cap on open connections.

uvicorn closes a connection idle between requests (``timeout_keep_alive``) but not one that
sends its request a byte at a time, nor one that never sends it (measured: 500 stalled
connections were still open after 75 s, 5,000 took a worker from 632 MB to 1 GB). Here each
request's head and body must arrive within ``request_timeout_s`` of the connection opening or
of the previous answer, else the connection is closed; past ``max_connections`` open ones, a
new connection is answered 503 and closed. (Written here because uvicorn has neither; its
``limit_concurrency`` counts only requests already received.) The same class serves every
request, whether or not uvicorn would pick httptools.

>>> GuardedH11Protocol.configure(request_timeout_s=10.0, max_connections=1000)
>>> GuardedH11Protocol.request_timeout_s
10.0
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_BUSY_BODY = b"too many open connections\n"
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
    + f"content-length: {len(_BUSY_BODY)}\r\nconnection: close\r\n\r\n".encode()
    + _BUSY_BODY
)
"""The answer to a connection past the cap."""


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request deadline and a connection cap (see the module)."""

    request_timeout_s: float = 10.0
    max_connections: int = 1000

    @classmethod
    def configure(cls, *, request_timeout_s: float, max_connections: int) -> None:
        """Sets the limits (per process: each worker's app sets them as it starts)."""
        cls.request_timeout_s = request_timeout_s
        cls.max_connections = max_connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections:
            transport.write(BUSY)
            transport.close()
            return
        super().connection_made(transport)
        self._start_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        if self in self.connections or self.cycle is not None:
            super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._stop_deadline()  # the request is in: the app's own timeout takes over

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may read a pipelined request whole
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._start_deadline()

    def _start_deadline(self) -> None:
        self._stop_deadline()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._too_slow)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        """The request did not arrive whole in time: the connection is closed."""
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()
