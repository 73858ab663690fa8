"""Readers of structured sources: HTML, PDF (with a text layer), DOCX and Docling's JSON
(a ``DoclingDocument``), each read into one :class:`~chunkforge.readers.document.ReadDocument`:
canonical Markdown text, its blocks and their provenance (see ``docs/readers.md``).

The libraries are optional extras, imported by the format's module when a file of that
format is read: ``chunkforge[html]`` (selectolax), ``[pdf]`` (pypdfium2), ``[docx]``
(python-docx), ``[docling]`` (docling-core), ``[documents]`` for all four; a missing one
is an :class:`~chunkforge.errors.InputError` naming the extra.

>>> format_for_path("site/index.HTML"), format_for_path("paper.pdf"), format_for_path("run.docling.json")
('html', 'pdf', 'docling')
>>> format_for_path("notes.md") is None
True
>>> doc = read_bytes(b"<h1>Hi</h1><p>One <b>two</b>.</p><script>x()</script>", "page.html")
>>> doc.text, doc.title
('# Hi\\n\\nOne two.\\n', 'Hi')
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Protocol

from ..errors import InputError
from .document import Block, Citation, ReadDocument, ReadError, cite

FORMATS = ("html", "pdf", "docx", "docling")
"""The formats a reader reads."""

SUFFIXES: dict[str, str] = {
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".docling.json": "docling",
}
"""The file-name endings (lower-cased) that pick a reader."""

EXTRAS = {"html": "html", "pdf": "pdf", "docx": "docx", "docling": "docling"}
"""The ``chunkforge[...]`` extra each format needs."""

MAX_SOURCE_BYTES = 1 << 30
"""The largest source file read (1 GiB), as for text files."""


class Reader(Protocol):
    """A format's reader: the bytes of one source named ``name`` (for messages) into a document."""

    def __call__(self, data: bytes, name: str, **options: Any) -> ReadDocument: ...


def format_for_path(path: str) -> str | None:
    """The format a file name's ending picks (:data:`SUFFIXES`), or None."""
    lower = os.fspath(path).lower()
    return next((fmt for suffix, fmt in SUFFIXES.items() if lower.endswith(suffix)), None)


def reader(fmt: str) -> Reader:
    """The ``read`` function of format ``fmt``; InputError for an unknown format."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    module = importlib.import_module(f".{fmt}", __name__)
    read: Reader = module.read
    return read


def read_bytes(data: bytes, name: str, format: str | None = None, main_content: bool = False) -> ReadDocument:
    """The document of the source bytes ``data``; ``format`` None picks it from ``name``'s
    ending. ``main_content`` (HTML) leaves navigation and boilerplate out."""
    fmt = format or format_for_path(name)
    if fmt is None:
        raise InputError(f"{name}: no reader for this file name (formats: {', '.join(FORMATS)})")
    options: dict[str, Any] = {"main_content": main_content} if fmt == "html" else {}
    return reader(fmt)(data, name, **options)


def read_file(path: str | os.PathLike[str], format: str | None = None, main_content: bool = False) -> ReadDocument:
    """The document of the source file at ``path`` (see :func:`read_bytes`); errors name the file.

    >>> doc = read_file("tests/data/documents/report.docx")  # a file of the repository's tests
    >>> doc.title, doc.text.splitlines()[:3]
    ('Quarterly Report', ['# Quarterly Report', '', '# Overview'])
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if len(data) > MAX_SOURCE_BYTES:
        raise InputError(f"{name} is larger than {MAX_SOURCE_BYTES} bytes (the largest file read)")
    return read_bytes(data, name, format, main_content)


def needs_extra(fmt: str, name: str, library: str) -> InputError:
    """The error for a missing optional library: names the file and the extra to install."""
    return ReadError(f'reading {name} needs {library}: pip install "chunkforge[{EXTRAS[fmt]}]"', "reader not installed")


__all__ = [
    "EXTRAS",
    "FORMATS",
    "SUFFIXES",
    "Block",
    "Citation",
    "ReadDocument",
    "ReadError",
    "Reader",
    "cite",
    "format_for_path",
    "read_bytes",
    "read_file",
    "reader",
]
