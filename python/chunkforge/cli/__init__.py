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
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, TextIO

from ..errors import ChunkforgeError, InputError

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

LONG_COMMANDS = ("embed", "embed-docs", "eval")
"""Commands that can run for minutes: off a terminal they print a progress line every 30 s and
their summary line on stderr (not with ``--no-progress``), so that logs show them alive."""


class Parser(argparse.ArgumentParser):
    """The parser of ``chunkforge`` and of each (sub)command: a long flag is taken only as
    spelled (``--max-token`` is not ``--max-tokens``: no abbreviations), and a flag a command
    does not know is reported with that command's usage, not the top level's.

    >>> Parser(prog="p").allow_abbrev
    False
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # A subcommand's parser is run through parse_known_args, and argparse hands what it does not
        # know back up to the top-level parser, which then prints its own usage: refuse it here.
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        # the flags of the (sub)command that parsed, a subcommand's first (see flag_of)
        parsed.cli_flags = {**self.flags, **getattr(parsed, "cli_flags", {})}
        return parsed, extras

    @property
    def flags(self) -> dict[str, str]:
        """Each argument's ``dest`` and how the command line spells it: its long flag
        (``max_tokens``: ``--max-tokens``), or a positional's metavar (``PATH``)."""
        spelled: dict[str, str] = {}
        for action in self._actions:
            if action.dest in (argparse.SUPPRESS, "help"):
                continue
            if action.option_strings:
                spelled[action.dest] = max(action.option_strings, key=len)
            elif isinstance(action.metavar, str):
                spelled[action.dest] = action.metavar
            else:
                spelled[action.dest] = action.dest.upper()
        return spelled


def flag_of(param: str | None, args: argparse.Namespace, extra: Mapping[str, str] = {}) -> str | None:
    """How the command of ``args`` spells the library's parameter ``param``: a flag the command
    names after another parameter (``extra``, a command's ``FLAGS``), else the flag whose
    ``dest`` is ``param``; None when the command has no such flag.

    >>> args = build_parser().parse_args(["chunk", "a.md", "--max-tokens", "0"])
    >>> flag_of("max_tokens", args), flag_of("max_length", args), flag_of("paths", args)
    ('--max-tokens', None, 'PATH')
    """
    if param is None:
        return None
    return extra.get(param) or getattr(args, "cli_flags", {}).get(param)


def spelled(exc: ChunkforgeError, args: argparse.Namespace) -> str:
    """A library error's message as the command line says it: its parameter (``exc.param``)
    spelled as the command's flag (:func:`flag_of`), or as the library says it where the
    command has no flag for it."""
    flag = flag_of(exc.param, args, getattr(_command(args.command), "FLAGS", {}))
    return str(exc) if flag is None else exc.named(flag)


@contextmanager
def _warnings_with_flags(args: argparse.Namespace) -> Iterator[None]:
    """Warnings about a parameter (an encoder's :class:`~chunkforge.encoder.TruncationWarning`)
    printed as one line with the command's flag; other warnings as Python prints them."""
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        named = getattr(message, "named", None)
        if not callable(named):
            shown(message, category, filename, lineno, file, line)
            return
        flag = flag_of(getattr(message, "param", None), args, getattr(_command(args.command), "FLAGS", {}))
        text = str(message) if flag is None else named(flag)
        print(f"chunkforge: warning: {text}", file=sys.stderr if file is None else file)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name], __name__)


def _run(name: str, args: argparse.Namespace) -> str:
    return str(_command(name).run(args))


def build_parser() -> argparse.ArgumentParser:
    """The ``chunkforge`` argument parser."""
    from .. import __version__

    parser = Parser(prog="chunkforge", description="Native-accelerated text chunking for RAG.")
    parser.add_argument("--version", action="version", version=f"chunkforge {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
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
        with _warnings_with_flags(args):
            summary = _run(args.command, args)
    except ChunkforgeError as exc:
        print(f"chunkforge: error: {spelled(exc, args)}", file=sys.stderr)
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
    long_job = args.command in LONG_COMMANDS and not getattr(args, "no_progress", False)
    if args.verbose or sys.stderr.isatty() or long_job:
        print(f"chunkforge: {summary} in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


__all__ = ["COMMANDS", "LONG_COMMANDS", "InputError", "Parser", "build_parser", "main"]
