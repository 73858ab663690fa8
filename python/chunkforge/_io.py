"""The one module for files: reading documents and records with one document-id
rule, writing files atomically, the cache folder and the markup of a file name.
Every command (``chunk``, ``embed``, ``embed-docs``, ``index build``, ``eval``) and
every writer (CLI outputs, embed parts, ONNX conversions, index files) goes through it.

Reading. Inputs are text files (their path is their id), source documents (``.html``,
``.htm``, ``.xhtml``, ``.pdf``, ``.docx``, ``.docling.json``: read by
:mod:`chunkforge.readers` into Markdown, their provenance in the metadata), folders (their
files with the given suffixes, recursively, in sorted order), JSONL files (``.jsonl``/``.jsonl.gz``,
one object a line), Parquet files (``.parquet``, one row a record; needs pyarrow) and
``-`` (JSONL records on stdin). A record's id is its ``"doc_id"``, else its ``"id"``
(``doc_id`` wins when both are there: chunk records carry the document in ``doc_id``
and their own id in ``id``); its ``"text"`` is the text; every other field is metadata,
passed through to what is made of it. A record whose ``"format"`` is ``"html"`` or
``"docling"`` holds that source in its text and is read by that reader (``"main_content":
true`` leaves an HTML page's navigation and boilerplate out).

Skips. A folder's files of other suffixes are left out, silently. A file of a folder that
cannot be read (not UTF-8, a scanned PDF, a damaged DOCX, ...) is skipped, not fatal:
:class:`ReadReport` counts the skips by reason and a one-line summary goes to stderr; a
folder of which nothing could be read is an :class:`~chunkforge.errors.InputError`. A
file named on its own is read or is an error.

Markup. :func:`syntax_for_path` is the one rule: ``.md``/``.markdown`` and the source
documents (read into Markdown) Markdown,
``.rst``/``.rst.txt`` reStructuredText, ``.adoc``/``.asciidoc``/``.txt`` AsciiDoc;
any other name (a record id such as ``"doc-7"``) has no known markup: None, which
:func:`syntax_or_default` reads as Markdown, :class:`~chunkforge.MarkdownChunker`'s
own default.

Writing (:func:`atomic_path`): readers see the old content or the new, never a mix.

- A regular file (or a name not yet taken) is written to a temp file beside it,
  synced, given the umask's permissions and renamed over it.
- A symlink is followed: the file it points to is replaced, the link stays.
- Anything else (``/dev/stdout``, a FIFO, a device) cannot be replaced by a
  rename: the content is written to a temp file in the system's temp folder and
  then copied into it (write-through, not atomic).
- A file can carry a checksum (``PATH.sha256``, :func:`write_checksum`): a
  cached or resumable file is reused only when :func:`checksum_ok`.
- Temp files are named ``.NAME.PID-RANDOM.tmp``: one left by a killed process
  is removed by the next write of the same name once that process is gone.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from .errors import InputError

if TYPE_CHECKING:
    from ._native import Syntax

DOCUMENT_SUFFIXES = (".html", ".htm", ".xhtml", ".pdf", ".docx", ".docling.json")
"""Source documents, read by :mod:`chunkforge.readers` (the suffixes of ``readers.SUFFIXES``)."""
FOLDER_SUFFIXES = (".md", ".txt", ".rst", ".adoc", *DOCUMENT_SUFFIXES)
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
PARQUET_SUFFIXES = (".parquet",)
STDIN = "-"
ID_KEYS = ("doc_id", "id")
"""The document id fields, the first present wins."""
TEXT_KEY = "text"
PARQUET_BATCH_ROWS = 1024
MAX_INPUT_BYTES = 1 << 30
"""The largest text file, and the longest JSONL line, read (1 GiB): an endless input such as
``/dev/zero`` is an error, not a read until memory runs out."""


class Doc(NamedTuple):
    """One document: its id, its text, its size in bytes and its metadata (the
    record's other fields; for a plain file, none)."""

    doc_id: str | int
    text: str
    nbytes: int
    metadata: dict[str, Any] = {}


def is_record_file(path: str) -> bool:
    """True for inputs read as records (JSONL, Parquet, stdin) rather than as one text."""
    return path == STDIN or path.endswith(JSONL_SUFFIXES + PARQUET_SUFFIXES)


def expand(paths: Iterable[str], suffixes: tuple[str, ...] = FOLDER_SUFFIXES) -> Iterator[str]:
    """Input files: files (and ``-``) as given, folders expanded to their files ending
    in one of ``suffixes``, in sorted order."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        root = Path(path)
        found = sorted(p.relative_to(root) for p in root.rglob("*") if p.name.endswith(suffixes) and p.is_file())
        yield from (os.path.join(path, rel) for rel in found)


def check_paths(paths: Iterable[str]) -> None:
    """InputError for the first input that does not exist (``-`` always does)."""
    for path in paths:
        if path != STDIN and not os.path.exists(path):
            raise InputError(f"no such file or folder: {path}")


def read_text_file(path: str) -> Doc:
    """A plain file as one document, its path as its id."""
    try:
        with open(path, "rb") as f:
            return _read_text(path, f)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_text(name: str, stream: BinaryIO) -> Doc:
    """A binary stream as one UTF-8 document named ``name``, read to at most MAX_INPUT_BYTES."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES} bytes (the largest text file read)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not valid UTF-8 (byte {exc.start})") from exc
    return Doc(name, text, len(data))


def stdin_is_jsonl() -> bool:
    """Whether stdin holds JSONL records rather than one plain text: its first buffered bytes
    are blank or start with ``{`` (read ahead, nothing consumed)."""
    peek = getattr(sys.stdin.buffer, "peek", None)
    head = peek(1).lstrip() if peek is not None else b""
    return not head or head.startswith(b"{")


def read_stdin_text() -> Doc:
    """All of stdin as one plain-text document named ``<stdin>``."""
    try:
        return _read_text("<stdin>", sys.stdin.buffer)
    except OSError as exc:
        raise InputError(f"cannot read <stdin>: {exc.strerror or exc}") from exc


def read_records(path: str, error: type[Exception] = InputError) -> Iterator[tuple[str, dict[str, Any], int]]:
    """``(where, record, nbytes)`` for each record of a JSONL(.gz) or Parquet file or of
    stdin (``-``, JSONL); ``where`` is ``"<path>:<line>"`` (``<stdin>``; the row, from 1,
    for Parquet). Blank lines are skipped; errors are ``error`` naming the place."""
    if path.endswith(PARQUET_SUFFIXES):
        yield from _parquet_records(path, error)
        return
    name = "<stdin>" if path == STDIN else path
    try:
        if path == STDIN:
            lines = sys.stdin.buffer
        else:
            lines = gzip.open(path) if path.endswith(".gz") else open(path, "rb")
        with lines:
            for lineno, line in enumerate(iter(lambda: lines.readline(MAX_INPUT_BYTES + 1), b""), 1):
                where = f"{name}:{lineno}"
                if len(line) > MAX_INPUT_BYTES:
                    raise error(f"{where}: line longer than {MAX_INPUT_BYTES} bytes (the longest read)")
                if line.strip():
                    yield where, json_object(where, line, error), len(line)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from exc


def _parquet_records(path: str, error: type[Exception]) -> Iterator[tuple[str, dict[str, Any], int]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise error(f'reading {path} needs pyarrow: pip install "chunkforge[parquet]"') from exc
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS)
        row = 0
        for batch in batches:
            for record in batch.to_pylist():
                row += 1
                text = record.get(TEXT_KEY)
                yield (
                    f"{path}:{row}",
                    record,
                    len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0,
                )
    except OSError as exc:  # pyarrow's ArrowInvalid is an OSError/ValueError subclass
        raise error(f"cannot read {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: from row {row + 1}: a string is not valid UTF-8 ({exc.reason})") from exc
    except ValueError as exc:
        raise error(f"cannot read {path}: not a Parquet file ({exc})") from exc


def json_object(where: str, line: bytes, error: type[Exception] = InputError) -> dict[str, Any]:
    """One JSONL line parsed as a JSON object."""
    try:
        record = json.loads(line)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not valid JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise error(f"{where}: JSON nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise error(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(record, dict):
        raise error(f"{where}: expected a JSON object, got {type(record).__name__}")
    return record


def record_doc_id(
    where: str, record: dict[str, Any], default: str | None = None, error: type[Exception] = InputError
) -> str | int:
    """The record's document id: ``"doc_id"``, else ``"id"``, else ``default`` (None: an
    error). A string or an integer."""
    key = next((k for k in ID_KEYS if k in record), None)
    if key is None:
        if default is None:
            raise error(f'{where}: record has no "doc_id" (or "id")')
        return default
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise error(f'{where}: "{key}" must be a string or an integer, not {type(value).__name__}')
    if isinstance(value, str) and not is_unicode(value):
        raise error(f'{where}: "{key}" holds a lone surrogate (not valid Unicode)')
    return value


def is_unicode(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON's ``"\\ud800"``): it has no UTF-8 form.

    >>> is_unicode("caf\\u00e9"), is_unicode("\\ud800")
    (True, False)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def record_text(where: str, record: dict[str, Any], error: type[Exception] = InputError) -> str:
    """The record's ``"text"``: a string of valid Unicode."""
    if TEXT_KEY not in record:
        raise error(f'{where}: record has no "text"')
    text = record[TEXT_KEY]
    if not isinstance(text, str):
        raise error(f'{where}: "text" must be a string, not {type(text).__name__}')
    if not is_unicode(text):
        raise error(f'{where}: "text" holds a lone surrogate (not valid Unicode)')
    return text


def record_metadata(record: dict[str, Any]) -> dict[str, Any]:
    """The record's fields other than its id and text."""
    return {k: v for k, v in record.items() if k not in ID_KEYS and k != TEXT_KEY}


MANIFEST = "manifest.json"
"""The bulk job's list of a dataset folder's shards, written last."""


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a dataset folder written by the bulk job (:func:`chunkforge.bulk.run`)."""
    path = Path(out) / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{out}: no {MANIFEST} (not a finished chunkforge dataset)") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read it ({exc})") from exc
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: not a chunkforge manifest")
    return manifest


def text_hash(text: str) -> str:
    """The bulk job's vector-cache key of a unit's text (with the dataset's model fingerprint): 64 bits, hex.

    >>> text_hash("Hello")
    '3c5c8a1fdb206886'
    """
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


RECORD_FORMATS = ("html", "docling")
"""The ``"format"`` values of a record whose text is a source to read (a text field holds no PDF or DOCX bytes)."""
FORMAT_KEY = "format"
MAIN_CONTENT_KEY = "main_content"


@dataclass
class ReadReport:
    """What :func:`read_documents` read and skipped: documents read, and files skipped by reason
    (with the first few names of each)."""

    read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, path: str, reason: str) -> None:
        self.skipped[reason] += 1
        names = self.examples.setdefault(reason, [])
        if len(names) < 3:
            names.append(path)

    def summary(self) -> str:
        """One line: ``skipped 3 files: 2 not valid UTF-8 (a.txt, b.txt), 1 no text layer (scan.pdf)``.

        >>> r = ReadReport(); r.skip("a.bin", "not valid UTF-8"); r.skip("s.pdf", "no text layer"); r.summary()
        'skipped 2 files: 1 not valid UTF-8 (a.bin), 1 no text layer (s.pdf)'
        """
        total = sum(self.skipped.values())
        parts = []
        for reason, count in self.skipped.most_common():
            names = self.examples.get(reason, [])
            more = ", ..." if count > len(names) else ""
            parts.append(f"{count} {reason} ({', '.join(names)}{more})")
        return f"skipped {total} file{'s' if total != 1 else ''}: " + ", ".join(parts)


def read_source_file(path: str, main_content: bool = False) -> Doc:
    """A source document (:data:`DOCUMENT_SUFFIXES`) read into Markdown by its reader, its path as its
    id; the metadata is the reader's (``syntax``, ``format``, ``title``, ``provenance``)."""
    from .readers import read_file

    read = read_file(path, main_content=main_content)
    return Doc(path, read.text, len(read.text.encode("utf-8")), read.metadata())


def record_doc(where: str, record: dict[str, Any], doc_id: str | int, text: str, nbytes: int) -> Doc:
    """The document of a record: its text as it is, or, for a ``"format"`` of :data:`RECORD_FORMATS`,
    the text read by that format's reader (the reader's metadata over the record's)."""
    metadata = record_metadata(record)
    fmt = record.get(FORMAT_KEY)
    if fmt is None or fmt not in RECORD_FORMATS:
        if fmt in ("pdf", "docx"):
            raise InputError(f'{where}: "format": "{fmt}" needs the file itself (a text field holds no {fmt} bytes)')
        return Doc(doc_id, text, nbytes, metadata)
    from .readers import read_bytes

    main_content = metadata.pop(MAIN_CONTENT_KEY, False) is True
    read = read_bytes(text.encode("utf-8"), where, fmt, main_content=main_content)
    return Doc(doc_id, read.text, len(read.text.encode("utf-8")), {**metadata, **read.metadata()})


def read_file_doc(path: str, main_content: bool = False) -> Doc:
    """A file named as an input: a source document through its reader, any other as UTF-8 text."""
    if path.lower().endswith(DOCUMENT_SUFFIXES):
        return read_source_file(path, main_content)
    return read_text_file(path)


def read_documents(
    paths: Iterable[str],
    suffixes: tuple[str, ...] = FOLDER_SUFFIXES,
    report: ReadReport | None = None,
    main_content: bool = False,
) -> Iterator[Doc]:
    """All documents of all inputs, lazily, in order; a record without an id is
    named ``"<path>:<line>"``. The files of a folder that cannot be read are skipped and
    counted in ``report`` (by default a summary line goes to stderr at the end); a folder
    of which nothing is read is an InputError. ``main_content`` applies to HTML files."""
    own = report is None
    counts = ReadReport() if report is None else report
    for path in paths:
        if os.path.isdir(path):
            read = ignored = 0
            for name, known in folder_files(path, suffixes):
                if not known:
                    ignored += 1
                    continue
                try:
                    doc = read_file_doc(name, main_content)
                except InputError as exc:
                    counts.skip(name, skip_reason(exc))
                    continue
                read += 1
                counts.read += 1
                yield doc
            if read == 0:
                why = [counts.summary()] if counts.skipped else []
                if ignored:
                    why.append(
                        f"{ignored} file{'s' if ignored != 1 else ''} of no known format ({', '.join(suffixes)})"
                    )
                raise InputError(f"no documents read from {path}: {'; '.join(why) or 'it holds no files'}")
        elif path == STDIN and not stdin_is_jsonl():
            counts.read += 1
            yield read_stdin_text()
        elif is_record_file(path):
            for where, record, nbytes in read_records(path):
                doc_id = record_doc_id(where, record, default=where)
                counts.read += 1
                yield record_doc(where, record, doc_id, record_text(where, record), nbytes)
        else:
            counts.read += 1
            yield read_file_doc(path, main_content)
    if own and counts.skipped:
        print(f"chunkforge: {counts.summary()}", file=sys.stderr)


def folder_files(path: str, suffixes: tuple[str, ...]) -> Iterator[tuple[str, bool]]:
    """``(file, known)`` for each file of a folder, in sorted order: ``known`` when its name
    ends in one of ``suffixes`` (the files :func:`expand` gives)."""
    root = Path(path)
    for rel in sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()):
        yield os.path.join(path, rel), rel.name.endswith(suffixes)


def skip_reason(exc: InputError) -> str:
    """The reason a file was skipped, for :class:`ReadReport`: a reader's own (``no text layer``,
    ``encrypted``, ``damaged``, ``binary``, ``reader not installed``) or ``not valid UTF-8``,
    else ``unreadable``."""
    cause = getattr(exc, "cause", None)  # a reader's ReadError
    if isinstance(cause, str):
        return cause
    return "not valid UTF-8" if "not valid UTF-8" in str(exc) else "unreadable"


# ---------------------------------------------------------------- markup and cache

SYNTAXES: tuple[Syntax, ...] = ("markdown", "rst", "asciidoc")
DEFAULT_SYNTAX: Syntax = "markdown"
"""What a name of no known markup is parsed as (MarkdownChunker's default syntax)."""


def syntax_named(value: object) -> Syntax | None:
    """The syntax of :data:`SYNTAXES` equal to ``value``, or None when ``value`` names none.

    >>> syntax_named("rst"), syntax_named("html"), syntax_named(None)
    ('rst', None, None)
    """
    return next((known for known in SYNTAXES if known == value), None)


def syntax_for_path(name: str) -> Syntax | None:
    """The markup of a file from its name: ``markdown`` (``.md``, ``.markdown``, and the source
    documents of :data:`DOCUMENT_SUFFIXES`, which their readers turn into Markdown), ``rst``
    (``.rst``, and Sphinx's ``.rst.txt`` sources), ``asciidoc`` (``.adoc``, ``.asciidoc``,
    ``.txt``) or None (no known markup).

    >>> syntax_for_path("guide.md"), syntax_for_path("api.rst.txt"), syntax_for_path("x.csv")
    ('markdown', 'rst', None)
    """
    lower = name.lower()
    if lower.endswith(DOCUMENT_SUFFIXES):
        return "markdown"
    if lower.endswith((".rst", ".rst.txt")):
        return "rst"
    if lower.endswith((".md", ".markdown")):
        return "markdown"
    if lower.endswith((".adoc", ".asciidoc", ".txt")):
        return "asciidoc"
    return None


def syntax_or_default(name: str) -> Syntax:
    """:func:`syntax_for_path`, a name of no known markup read as :data:`DEFAULT_SYNTAX`.

    >>> syntax_or_default("notes.txt"), syntax_or_default("doc-7")
    ('asciidoc', 'markdown')
    """
    return syntax_for_path(name) or DEFAULT_SYNTAX


def cache_root() -> Path:
    """The cache folder: ``$CHUNKFORGE_CACHE``, else ``$XDG_CACHE_HOME/chunkforge``, else ``~/.cache/chunkforge``."""
    env = os.environ.get("CHUNKFORGE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chunkforge"


# ---------------------------------------------------------------- writing atomically


class OutputError(OSError):
    """A file could not be written; the message names it."""


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """A temp path to write; on success its content becomes ``target``'s (see the
    module's rules), on any failure (Ctrl-C included) it is removed. Errors
    creating the temp file or putting it in place are :class:`OutputError`."""
    target = Path(target)
    try:
        mode = os.stat(target).st_mode  # follows symlinks
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {target}: it is a folder")
    through = mode is not None and not stat.S_ISREG(mode)
    final = target if through else Path(os.path.realpath(target))
    folder = Path(tempfile.gettempdir()) if through else final.parent
    if not through:
        remove_stale(final)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.{os.getpid()}-", suffix=suffix)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        try:
            if through:
                with open(tmp, "rb") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            else:
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, final)
        except OSError as exc:
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike[str], param: str = "out") -> Iterator[Path]:
    """:func:`atomic_path` for a command's output: a file that cannot be written is an
    :class:`~chunkforge.errors.InputError` about ``param`` (the command line names its flag)."""
    try:
        with atomic_path(target) as tmp:
            yield tmp
    except OutputError as exc:
        raise InputError(f": {exc}", param=param) from exc


def remove_stale(target: Path) -> list[Path]:
    """Removes temp files of ``target`` (``.NAME.PID-*.tmp*``) left by processes that
    no longer run; returns them."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)-[^/]*\.tmp")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    """The process umask (read by setting it and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def checksum_path(path: Path) -> Path:
    """Where the checksum of ``path`` is kept: ``PATH.sha256`` beside it."""
    return path.with_name(path.name + ".sha256")


def write_checksum(path: Path) -> None:
    """Writes ``PATH.sha256`` (atomically) for a finished file."""
    with atomic_path(checksum_path(path)) as tmp:
        tmp.write_text(file_sha256(path) + "\n", encoding="ascii")


def checksum_ok(path: Path) -> bool:
    """True when ``path`` and its checksum exist and agree; False when not
    (missing, truncated, flipped bytes, killed before the checksum was written):
    the caller makes the file again, replacing it atomically."""
    try:
        return checksum_path(path).read_text(encoding="ascii").strip() == file_sha256(path)
    except (OSError, UnicodeDecodeError):
        return False
