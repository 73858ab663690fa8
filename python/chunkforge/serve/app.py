"""The ASGI app (FastAPI): the servable opened once, each request's search and
expansion run in a thread pool (they release the GIL) under a timeout, a watcher
that switches to a new version between requests.

>>> import tempfile
>>> from fastapi.testclient import TestClient
>>> from chunkforge.index import Index
>>> from chunkforge.serve import SavedIndexSource
>>> folder = tempfile.TemporaryDirectory()
>>> Index.build([{"id": "guide.md", "text": "# Install\\n\\nRun pip install chunkforge."}]).save(folder.name + "/my-index")
>>> app = create_app(SavedIndexSource(folder.name + "/my-index"), Settings(timeout_s=5))
>>> with TestClient(app) as http:  # requests in process, no socket
...     http.post("/query", json={"question": "how do I install it?"}).json()["passages"][0]["doc_id"]
'guide.md'
>>> uvicorn.run(app, host="127.0.0.1", port=8000)  # serves until stopped  # doctest: +SKIP
>>> folder.cleanup()
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import os
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import pydantic_core
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from ..errors import ChunkforgeError
from ..index import Hit, Passage, Payload
from ..index.filters import Filter
from ..index.store import StoreError
from ..readers.document import PROVENANCE
from .models import (
    ErrorResponse,
    ExpandRequest,
    HealthResponse,
    PayloadResponse,
    QueryRequest,
    SearchRequest,
    SearchResponse,
    StatsResponse,
)
from .protocol import GuardedH11Protocol
from .source import Servable, Source, SourceError, source_for

log = logging.getLogger("chunkforge.serve")
T = TypeVar("T")

SETTINGS_ENV = "CHUNKFORGE_SERVE"
"""The environment variable that hands each worker process its index and settings (``--workers N``)."""


@dataclass(frozen=True)
class Settings:
    """``timeout_s`` per request (504 past it), ``max_body_bytes`` per request body (413
    past it), ``reload_interval_s`` between looks for a new version (0: never),
    ``threads`` running searches and expansions at once: more than the cores, since part
    of each request waits (32 served 32 clients at 0.87x the queries/s of 32 threads in
    process, Python's default pool of 6 at 0.54x: ``benches/results/serve.md``).

    Limits: ``max_answer_chars`` of text in one answer (a payload's passages, a search's hits:
    a word the tokenizer cannot split is one token however long, so a token budget alone does
    not bound an answer); ``request_timeout_s`` for a request's head and body to arrive and
    ``max_connections`` open at once (:mod:`chunkforge.serve.protocol`).

    Access: ``pin`` is a metadata filter (``{field: value or [values]}``) every request is held
    to, ``/expand`` included; with ``filter_header``, each request must carry that header, a
    JSON filter ``{"where": {...}, "source": ..., "doc_id": ...}`` set by a proxy in front
    (per user), and is held to it too (``docs/serve.md``). Filters only narrow: a request's own
    filter, the pin and the header's all apply."""

    timeout_s: float = 10.0
    max_body_bytes: int = 1 << 20
    reload_interval_s: float = 1.0
    threads: int = 32
    max_answer_chars: int = 4_000_000
    request_timeout_s: float = 10.0
    max_connections: int = 1000
    pin: dict[str, Any] | None = None
    filter_header: str | None = None


class ErrorAnswer(Exception):
    """An answer other than 200: its status and the message for ``detail``."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class Service:
    """The servable being answered from, the pool its work runs in, and the counters of ``/stats``."""

    def __init__(self, source: Source, settings: Settings) -> None:
        self.source = source
        self.settings = settings
        self.pinned = Filter.of(where=settings.pin) if settings.pin is not None else Filter()
        self.served: Servable = source.open(None)
        self.pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="chunkforge-serve")
        self.started = time.monotonic()
        self.reloads = 0
        self.in_flight = 0
        self.requests: Counter[str] = Counter()

    async def run(self, work: Callable[[], T], path: str, field: str | None = None) -> T:
        """``work()`` for a request to ``path``, in the pool within the timeout; the index's
        ValueError or TypeError (a hit not in this version, a filter it rejects) is a 422 at the
        parameter a chunkforge error names (its ``param``, a field of the body), else at ``field``
        (None: the body)."""
        loop = asyncio.get_running_loop()
        self.in_flight += 1
        try:
            result = await asyncio.wait_for(loop.run_in_executor(self.pool, work), self.settings.timeout_s)
        except asyncio.TimeoutError:
            raise ErrorAnswer(504, f"the request took longer than {self.settings.timeout_s:g} s") from None
        except (StoreError, SourceError) as exc:  # the index cannot answer: not the caller's fault
            raise ErrorAnswer(503, f"the index cannot answer: {exc}") from exc
        except (ValueError, TypeError) as exc:
            param = exc.param if isinstance(exc, ChunkforgeError) else None
            loc = ["body", *([param or field] if param or field else [])]
            raise ErrorAnswer(422, [{"loc": loc, "msg": str(exc), "type": "value_error"}]) from exc
        finally:
            self.in_flight -= 1
        self.requests[path] += 1
        return result

    def filter_for(self, request: Request) -> Filter:
        """The filter a request is held to: the pinned one, narrowed by the proxy's header."""
        name = self.settings.filter_header
        if name is None:
            return self.pinned
        raw = request.headers.get(name)
        if raw is None:
            raise ErrorAnswer(403, f"this service answers only requests with a {name} header (set by its proxy)")
        not_a_filter = f"the {name} header is not a filter"
        try:
            given = json.loads(raw)
        except ValueError as exc:
            raise ErrorAnswer(400, f"{not_a_filter}: {exc}") from exc
        if not isinstance(given, dict) or not set(given) <= {"where", "source", "doc_id"}:
            raise ErrorAnswer(400, f'{not_a_filter}: must be a JSON object of "where", "source" and "doc_id"')
        try:
            return self.pinned.narrow(Filter.of(**given))
        except (ValueError, TypeError) as exc:
            raise ErrorAnswer(400, f"{not_a_filter}: {exc}") from exc

    async def watch(self) -> None:
        """Every ``reload_interval_s``: when the source names another version, opens it
        (outside the request pool) and switches to it; requests already running finish
        on the version they started with. A version that cannot be opened is logged, and
        tried again once the source names another."""
        interval = self.settings.reload_interval_s
        broken: str | None = None
        while True:
            await asyncio.sleep(interval)
            newest: str | None = None  # None: the source cannot even say (no CURRENT)
            try:
                newest = await asyncio.to_thread(self.source.probe)
                if newest in (self.served.version, broken):
                    continue
                served = await asyncio.to_thread(self.source.open, self.served)
            except Exception as exc:  # keep serving the version held
                broken = newest
                log.warning("chunkforge serve: cannot reload (%s); still answering from %s", exc, self.served.version)
                continue
            if served.version != self.served.version:
                self.served = served
                self.reloads += 1
                log.info("chunkforge serve: now answering from %s", served.version)


def create_app(source: Source, settings: Settings | None = None) -> FastAPI:
    """The service's app over ``source``, opened now (once per process)."""
    settings = settings or Settings()
    GuardedH11Protocol.configure(request_timeout_s=settings.request_timeout_s, max_connections=settings.max_connections)
    service = Service(source, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        watcher = asyncio.create_task(service.watch()) if settings.reload_interval_s > 0 else None
        yield
        if watcher is not None:
            watcher.cancel()
        service.pool.shutdown(wait=False, cancel_futures=True)

    from .. import __version__

    app = FastAPI(
        title="chunkforge",
        version=__version__,
        description="Index small, send big: search a chunkforge index and expand the hits into passages "
        "packed into a token budget. Every answer names the index version it came from.",
        lifespan=lifespan,
        max_body_size=settings.max_body_bytes,
    )
    app.state.service = service
    errors: dict[int | str, dict[str, Any]] = {
        400: {
            "model": ErrorResponse,
            "description": "a body that cannot be read (not UTF-8), or a filter header that is not a filter",
        },
        403: {"model": ErrorResponse, "description": "no filter header, where the service requires one"},
        503: {"model": ErrorResponse, "description": "the index cannot answer (its store damaged or removed)"},
        413: {"description": "request body over the limit", "content": {"text/plain": {}}},
        504: {"model": ErrorResponse, "description": "the request took longer than the timeout"},
    }

    @app.exception_handler(ErrorAnswer)
    async def service_error(request: Request, exc: ErrorAnswer) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        """422 naming each field; the offending values are echoed only where JSON can carry
        them (a NaN or a lone surrogate made FastAPI's own answer a 500)."""
        return Response(
            pydantic_core.to_json({"detail": [_error(e) for e in exc.errors()]}),
            status_code=422,
            media_type="application/json",
        )

    @app.post("/search", response_model=SearchResponse, responses=errors)
    async def search(request: SearchRequest, http: Request) -> Response:
        """The best leaves for a query (``Index.search``), of the documents the service's
        filters pass; at most ``max_answer_chars`` of text (``omitted``: the best hits left out)."""
        served, held = service.served, service.filter_for(http)
        options = _search_options(served, request)
        hits = await service.run(lambda: served.search(request.query, **options, filter=held), "/search")
        kept = _within(hits, settings.max_answer_chars)
        return _json({"version": served.version, "hits": _hits(kept), "omitted": len(hits) - len(kept)})

    @app.post(
        "/expand",
        response_model=PayloadResponse,
        responses={**errors, 409: {"model": ErrorResponse, "description": "the hits are from another version"}},
    )
    async def expand(request: ExpandRequest, http: Request) -> Response:
        """Hits (from ``/search``) to a payload (``Index.expand``); ``version`` names the
        version they came from (409 when the service has switched since). Each hit names a leaf
        by its document and span, found again in the index (422 for one that names no leaf of a
        document the service's filters pass): hits open no other text."""
        served, held = service.served, service.filter_for(http)
        if request.version is not None and request.version != served.version:
            raise ErrorAnswer(
                409, f"version: the hits are from {request.version}, the service answers from {served.version}"
            )
        hits = [Hit(**{**h.model_dump(), "heading_path": tuple(h.heading_path)}) for h in request.hits]
        options = dataclasses.replace(request.expand_options(), max_chars=settings.max_answer_chars)
        payload = await service.run(lambda: served.expand(hits, options, filter=held), "/expand", "hits")
        return _json(_payload(served.version, payload, settings.max_answer_chars))

    @app.post("/query", response_model=PayloadResponse, responses=errors)
    async def query(request: QueryRequest, http: Request) -> Response:
        """Search then expand in one request (``Index.query``; ``budget_tokens`` 1,000 unless
        given), of the documents the service's filters pass."""
        served, held = service.served, service.filter_for(http)
        search_options = {**_search_options(served, request), "filter": held}
        options = dataclasses.replace(request.expand_options(), max_chars=settings.max_answer_chars)
        if request.floor is not None:
            search_options["floor"] = request.floor
        payload = await service.run(lambda: served.query(request.question, **search_options, options=options), "/query")
        return _json(_payload(served.version, payload, settings.max_answer_chars))

    @app.get("/health", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
    async def health() -> Response:
        """``ok`` and the version answered from; 503 ``unavailable`` with the reason when the
        index's source is gone or cannot be read (a store deleted under the service)."""
        version = service.served.version
        try:
            await asyncio.to_thread(service.source.probe)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the index cannot be trusted to answer
            return _json({"status": "unavailable", "version": version, "detail": str(exc)}, 503)
        return _json({"status": "ok", "version": version, "detail": None})

    @app.get("/stats", response_model=StatsResponse)
    async def stats() -> dict[str, Any]:
        """The version, the index's size, reloads, searches and expansions in flight and answered."""
        served = service.served
        return {
            "version": served.version,
            "documents": getattr(served, "documents", None),
            "leaves": getattr(served, "leaves", None),
            "reloads": service.reloads,
            "uptime_s": time.monotonic() - service.started,
            "in_flight": service.in_flight,
            "requests": dict(service.requests),
        }

    return app


def _search_options(served: Servable, request: SearchRequest | QueryRequest) -> dict[str, Any]:
    """``search``'s keyword arguments; 422 for ``where`` on an index whose search takes none."""
    options = request.search_options()
    if "where" in options and "where" not in inspect.signature(served.search).parameters:
        raise ErrorAnswer(
            422,
            [{"loc": ["body", "where"], "msg": "this index takes no metadata filter (where)", "type": "value_error"}],
        )
    return options


def _json(answer: dict[str, Any], status: int = 200) -> Response:
    """The answer as JSON, serialized once (pydantic-core) rather than validated against
    the response model first: the dicts below are built in the models' shape (the API
    contract test checks each answer against the spec)."""
    return Response(pydantic_core.to_json(answer), status_code=status, media_type="application/json")


def _utf8(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``), which JSON can carry."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _error(error: Any) -> dict[str, Any]:
    """A validation error as the 422 names it: ``loc`` (for a lone surrogate, down to where it
    is), ``msg``, ``type``, and ``input`` when JSON can carry it (not a NaN, not a string holding
    a lone surrogate)."""
    inner = (error.get("ctx") or {}).get("loc", ()) if error.get("type") == "lone_surrogate" else ()
    out: dict[str, Any] = {
        "loc": [_utf8(p) if isinstance(p, str) else p for p in (*error.get("loc", ()), *inner)],
        "msg": _utf8(str(error.get("msg", ""))),
        "type": str(error.get("type", "")),
    }
    try:
        json.dumps(error.get("input"), allow_nan=False, ensure_ascii=False).encode("utf-8")
        out["input"] = error.get("input")
    except (ValueError, TypeError):
        pass
    return out


def _within(hits: list[Hit], max_chars: int) -> list[Hit]:
    """The best hits while their texts stay within ``max_chars``."""
    used = 0
    for i, h in enumerate(hits):
        used += len(h.text)
        if used > max_chars:
            return hits[:i]
    return hits


def _hit(h: Hit) -> dict[str, Any]:
    return {
        "doc_id": h.doc_id,
        "start": h.start,
        "end": h.end,
        "score": h.score,
        "text": h.text,
        "heading_path": list(h.heading_path),
        "id": h.id,
        "leaf": h.leaf,
    }


def _hits(hits: Iterable[Hit]) -> list[dict[str, Any]]:
    return [_hit(h) for h in hits]


def _passage(p: Passage, payload: Payload) -> dict[str, Any]:
    citation = payload.citation(p)
    return {
        "doc_id": p.doc_id,
        "start": p.start,
        "end": p.end,
        "token_count": p.token_count,
        "score": p.score,
        "heading_path": list(p.heading_path),
        "text": p.text,
        "hits": _hits(p.hits),
        "citation": None if citation is None else citation.as_dict(),
    }


def _payload(version: str, payload: Payload, max_chars: int) -> dict[str, Any]:
    """The payload as the service answers it: the passages (already within ``max_chars``) and
    the dropped hits while their texts fit what is left (``omitted``: those left out)."""
    used = sum(p.end - p.start for p in payload.passages)
    dropped = _within(list(payload.dropped), max(max_chars - used, 0))
    return {
        "version": version,
        "token_count": payload.token_count,
        "passages": [_passage(p, payload) for p in payload.passages],
        "dropped": _hits(dropped),
        "omitted": len(payload.dropped) - len(dropped),
        "metadata": {  # a read document's provenance is cited passage by passage instead
            doc_id: {k: v for k, v in fields.items() if k != PROVENANCE} for doc_id, fields in payload.metadata.items()
        },
        "abstained": payload.abstained,
    }


def app_from_environment() -> FastAPI:
    """The app of one worker process of ``chunkforge serve --workers N``: the index path
    and settings come in ``CHUNKFORGE_SERVE`` (JSON ``{"index": PATH, "settings": {...}}``)."""
    config = json.loads(os.environ[SETTINGS_ENV])
    return create_app(source_for(config["index"]), Settings(**config["settings"]))


def settings_environment(index: str, settings: Settings) -> str:
    """The ``CHUNKFORGE_SERVE`` value :func:`app_from_environment` reads."""
    return json.dumps({"index": index, "settings": asdict(settings)})
