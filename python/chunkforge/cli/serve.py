"""``chunkforge serve INDEX``: the query service over a saved index or a LanceDB store (see ``docs/serve.md``)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

from ..errors import InputError


def add_parser(commands: Any) -> None:
    """Registers ``chunkforge serve`` on the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="serve an index over HTTP: /query, /search, /expand, hot reload",
        description="Serve a saved index or a LanceDB store (opened once per worker, switched to each new "
        "saved version or store commit between requests): POST /query, /search, /expand; GET /health, /stats, /openapi.json.",
    )
    serve.add_argument(
        "index",
        metavar="INDEX",
        help="index folder (from `chunkforge index build` or Index.save), or a LanceDB store (`embed-docs --index --lancedb`)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--workers", type=int, default=1, metavar="N", help="processes, each with the index (default 1)")
    serve.add_argument(
        "--threads", type=int, default=32, metavar="N", help="requests run at once per worker (default 32)"
    )
    serve.add_argument("--timeout", type=float, default=10.0, metavar="S", help="seconds per request (default 10.0)")
    serve.add_argument(
        "--max-body", type=int, default=1 << 20, metavar="BYTES", help="largest request body (default 1048576, 1 MiB)"
    )
    serve.add_argument(
        "--reload-interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between looks for a new saved version (default 1.0; 0: never reload)",
    )
    serve.add_argument(
        "--pin-where",
        action="append",
        metavar="FIELD=VALUE",
        help="hold every request, /expand included, to documents whose metadata FIELD is VALUE (repeatable; "
        "a field given twice takes either value; VALUE is read as JSON when it is a number, true, false or null)",
    )
    serve.add_argument(
        "--filter-header",
        metavar="NAME",
        help='answer only requests carrying header NAME, a JSON filter {"where": ..., "source": ..., "doc_id": ...} '
        "set per user by a proxy in front, and hold each to it (see docs/serve.md)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds for a request's head and body to arrive, else the connection is closed (default 10.0)",
    )
    serve.add_argument(
        "--max-connections", type=int, default=1000, metavar="N", help="open connections per worker (default 1000)"
    )
    serve.add_argument(
        "--max-answer-chars",
        type=int,
        default=4_000_000,
        metavar="N",
        help="characters of text in one answer (default 4000000)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="log each request")


def run(args: argparse.Namespace) -> str:
    """The ``serve`` command: runs until interrupted; returns the summary line."""
    try:
        import uvicorn

        from ..serve import Settings, SourceError, create_app, source_for
        from ..serve.app import SETTINGS_ENV, settings_environment
        from ..serve.protocol import GuardedH11Protocol
        from .query import where_filter
    except ImportError as exc:
        raise InputError(f'{exc}: pip install "chunkforge[serve]"') from exc
    for flag, value, least in (
        ("--port", args.port, 0),
        ("--workers", args.workers, 1),
        ("--threads", args.threads, 1),
        ("--max-body", args.max_body, 1),
        ("--max-connections", args.max_connections, 1),
        ("--max-answer-chars", args.max_answer_chars, 1),
    ):
        if value < least:
            raise InputError(f"{flag} must be at least {least}, not {value}")
    if args.port > 65535:
        raise InputError(f"--port must be at most 65535, not {args.port}")
    if not args.timeout > 0 or not args.reload_interval >= 0 or not args.request_timeout > 0:
        raise InputError("--timeout and --request-timeout must be positive and --reload-interval not negative")
    pin = where_filter(args.pin_where, "--pin-where")
    if pin is not None:
        from ..index.filters import Filter

        Filter.of(where=pin)  # a bad value is an error now, not at the first request
    settings = Settings(
        timeout_s=args.timeout,
        max_body_bytes=args.max_body,
        reload_interval_s=args.reload_interval,
        threads=args.threads,
        max_answer_chars=args.max_answer_chars,
        request_timeout_s=args.request_timeout,
        max_connections=args.max_connections,
        pin=pin,
        filter_header=args.filter_header,
    )
    try:  # a busy port is a one-line error here, not uvicorn's log and exit 3 after the index loaded
        socket.create_server(
            (args.host, args.port), family=socket.AF_INET6 if ":" in args.host else socket.AF_INET
        ).close()
    except OSError as exc:
        raise InputError(f"--host {args.host} --port {args.port}: cannot listen there ({exc.strerror or exc})") from exc
    source = source_for(args.index)
    log_level = "info" if args.verbose else "warning"
    url = f"http://{args.host}:{args.port}"
    try:
        if args.workers == 1:
            app = create_app(source, settings)
            print(f"chunkforge serve: {args.index} ({app.state.service.served.version}) on {url}", file=sys.stderr)
            uvicorn.run(
                app,
                host=args.host,
                port=args.port,
                log_level=log_level,
                access_log=args.verbose,
                http=GuardedH11Protocol,
            )
        else:
            source.probe()  # each worker opens the index itself
            print(f"chunkforge serve: {args.index} on {url}, {args.workers} workers", file=sys.stderr)
            os.environ[SETTINGS_ENV] = settings_environment(os.path.abspath(args.index), settings)
            uvicorn.run(
                "chunkforge.serve.app:app_from_environment",
                factory=True,
                host=args.host,
                port=args.port,
                workers=args.workers,
                log_level=log_level,
                access_log=args.verbose,
                http=GuardedH11Protocol,
            )
    except SourceError as exc:
        raise InputError.of(exc) from exc
    return f"served {args.index} on {args.host}:{args.port}"
