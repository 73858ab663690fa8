"""The ``chunkforge`` command line: one module per command.

- ``chunkforge chunk PATH...`` (:mod:`~chunkforge.cli.chunk`): chunks into JSON lines or Parquet;
- ``chunkforge embed CHUNKS --out FILE`` (:mod:`~chunkforge.cli.embed`): embeds chunk records, resumably;
- ``chunkforge embed-docs DOCS --out DATASET`` (:mod:`~chunkforge.cli.embed_docs`): the bulk job;
- ``chunkforge index build`` / ``chunkforge query`` (:mod:`~chunkforge.cli.index`, :mod:`~chunkforge.cli.query`);
- ``chunkforge eval`` (:mod:`~chunkforge.cli.eval`): compares chunking configs;
- ``chunkforge serve INDEX`` (:mod:`~chunkforge.cli.serve`): the query service.

Inputs are read by :mod:`chunkforge._io` (one reader, one document-id rule); chunkers
and encoders are built from the flags by :mod:`chunkforge._options`.

>>> build_parser().parse_args(["chunk", "a.md"]).strategy
'recursive'
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from types import ModuleType

from ..errors import InputError

COMMANDS = {
    "chunk": ".chunk",
    "embed": ".embed",
    "eval": ".eval",
    "index": ".index",
    "query": ".query",
    "serve": ".serve",
    "embed-docs": ".embed_docs",
}
"""Each command and the module (relative to this package) with its ``add_parser`` and ``run``."""


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name], __name__)


def _run(name: str, args: argparse.Namespace) -> str:
    return str(_command(name).run(args))


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkforge`` argument parser."""
    from .. import __version__

    parser = argparse.ArgumentParser(prog="chunkforge", description="Native-accelerated text chunking for RAG.")
    parser.add_argument("--version", action="version", version=f"chunkforge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        _command(name).add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``chunkforge`` command; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    started = time.perf_counter()
    try:
        summary = _run(args.command, args)
    except InputError as exc:
        print(f"chunkforge: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep the exit flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        print(f"chunkforge: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("chunkforge: interrupted", file=sys.stderr)
        return 130
    if args.verbose or sys.stderr.isatty():
        print(f"chunkforge: {summary} in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


__all__ = ["COMMANDS", "InputError", "build_parser", "main"]
