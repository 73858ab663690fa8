"""Chunk representations: the text the encoder sees (``Chunk.embed_text``) may hold
more than the chunk's source span (document title, heading path, context), while
``start``/``end`` keep pointing at the span.

- :func:`with_embed_text` renders ``embed_text`` from a template;
- :class:`~chunkforge.chunkers.context_aware.ContextAwareChunker` wraps a chunker so that
  ``embed_text``, prefix included, fits the token limit;
- :func:`contextualize` asks the user's LLM function for a short context per chunk
  (the contextual-retrieval recipe), cached in SQLite by (document hash, span).

>>> from chunkforge import MarkdownChunker, with_embed_text
>>> doc = "# Install\\n\\nRun the installer."
>>> [c.embed_text for c in with_embed_text(MarkdownChunker(max_tokens=32).chunk(doc), title="Guide")]
['Guide > Install\\n\\n# Install\\n\\nRun the installer.']
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
import string
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ._checks import check_int
from .chunk import Chunk, Chunks
from .errors import ArgumentError, ArgumentTypeError

DEFAULT_TEMPLATE = "{title} > {heading_path}\n\n{context}\n\n{text}"
FIELDS = ("title", "heading_path", "context", "text")

CONTEXT_PROMPT = """<document>
{document}
</document>
Here is the chunk we want to situate within the whole document
<chunk>
{chunk}
</chunk>
Please give a short succinct context to situate this chunk within the overall document \
for the purposes of improving search retrieval of the chunk. Answer only with the succinct \
context and nothing else."""


def context_prompt(document: str, chunk_text: str) -> str:
    """The contextual-retrieval prompt (:data:`CONTEXT_PROMPT`) for one chunk, for
    the LLM function given to :func:`contextualize`.

    >>> context_prompt("Full text.", "Full").splitlines()[1]
    'Full text.'
    """
    return CONTEXT_PROMPT.format(document=document, chunk=chunk_text)


def render(chunk: Chunk, title: str | None = None, template: str = DEFAULT_TEMPLATE) -> str:
    """The text to embed for ``chunk``: ``template`` with ``{title}``,
    ``{heading_path}`` (headings joined by ``" > "``), ``{context}`` and ``{text}``.
    An empty field is dropped with the separator before it (after it, when no
    field precedes it), so the default gives ``text`` alone for a chunk with no
    title, headings or context.

    >>> render(Chunk("Body.", 0, 5, 2, 0, heading_path=("A", "B")), title="T")
    'T > A > B\\n\\nBody.'
    >>> render(Chunk("Body.", 0, 5, 2, 0), template="passage: {text}")
    'passage: Body.'
    """
    values = {
        "title": title or "",
        "heading_path": " > ".join(h for h in chunk.heading_path if h),
        "context": chunk.context or "",
        "text": chunk.text,
    }
    out: list[str] = []
    emitted = drop_next = False
    for literal, field, spec, conversion in _parse(template):
        if drop_next:
            literal, drop_next = "", False
        if field is None:
            out.append(literal)
            continue
        value = values[field]
        if value:
            value = _formatter.convert_field(value, conversion) if conversion else value
            out += [literal, format(value, spec or "")]
            emitted = True
        elif not emitted:
            out.append(literal)
            drop_next = True
    return "".join(out)


def with_embed_text(chunks: Iterable[Chunk], title: str | None = None, template: str = DEFAULT_TEMPLATE) -> list[Chunk]:
    """Copies of ``chunks`` with ``embed_text`` rendered by :func:`render`.

    >>> [c.embed_text for c in with_embed_text([Chunk("Hi.", 0, 3, 2, 0)], title="Doc")]
    ['Doc\\n\\nHi.']
    """
    _parse(template)
    return Chunks(dataclasses.replace(c, embed_text=render(c, title, template)) for c in chunks)


def contextualize(
    chunks: Sequence[Chunk],
    document: str,
    fn: Callable[[str, str], str],
    *,
    batch_size: int = 8,
    cache: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
    namespace: str | None = None,
) -> list[Chunk]:
    """Copies of ``chunks`` of ``document`` whose ``context`` starts with
    ``fn(document, chunk.text)``: the user's LLM call, e.g. on
    :func:`context_prompt` (no LLM is bundled). Calls run ``batch_size`` at a time
    in threads; each finished batch is stored in the SQLite file ``cache``
    (default ``<cache folder>/contextualize.sqlite``) under ``namespace`` (default:
    ``fn``'s qualified name), the document's SHA-256 and the chunk's span, so a
    rerun pays nothing. ``embed_text`` is cleared: render it again with
    :func:`with_embed_text`.

    >>> from chunkforge import RecursiveChunker
    >>> doc = "Acme's revenue grew 3% in Q2. It was driven by cloud sales."
    >>> def fn(document, chunk_text):  # an LLM call in real use: llm(context_prompt(document, chunk_text))
    ...     return "From Acme's Q2 report."
    >>> chunks = contextualize(RecursiveChunker(max_tokens=8).chunk(doc), doc, fn, use_cache=False)
    >>> chunks = with_embed_text(chunks, title="Report")
    >>> chunks[0].context, chunks[0].embed_text.split("\\n\\n")
    ("From Acme's Q2 report.", ['Report', "From Acme's Q2 report.", "Acme's revenue grew 3%"])
    """
    if not callable(fn):
        raise ArgumentTypeError(
            f"must be a function (document, chunk_text) -> str, not {type(fn).__name__}", param="fn"
        )
    if not isinstance(document, str):
        raise ArgumentTypeError(f"must be a str, not {type(document).__name__}", param="document")
    batch_size = check_int("batch_size", batch_size, 1)
    chunks = list(chunks)
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk) or document[c.start : c.end] != c.text:
            raise ArgumentError(
                "is not a Chunk of this document (its text differs from document[start:end])", param=f"chunks[{i}]"
            )
    namespace = namespace or f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    digest = hashlib.sha256(document.encode("utf-8", "surrogatepass")).hexdigest()
    db = _open_cache(cache) if use_cache else None
    try:
        found = _lookup(db, namespace, digest) if db else {}
        todo = [c for c in dict.fromkeys((c.start, c.end) for c in chunks) if c not in found]
        with ThreadPoolExecutor(max_workers=min(batch_size, max(1, len(todo)))) as pool:
            for b in range(0, len(todo), batch_size):
                batch = todo[b : b + batch_size]
                answers = list(pool.map(lambda span: fn(document, document[span[0] : span[1]]), batch))
                for span, answer in zip(batch, answers):
                    if not isinstance(answer, str):
                        raise ArgumentTypeError(
                            f"must return a str, returned {type(answer).__name__} for span {span}", param="fn"
                        )
                    found[span] = answer.strip()
                if db:
                    db.executemany(
                        "INSERT OR REPLACE INTO context VALUES (?, ?, ?, ?, ?)",
                        [(namespace, digest, s, e, found[(s, e)]) for s, e in batch],
                    )
                    db.commit()
    finally:
        if db:
            db.close()
    return [
        dataclasses.replace(
            c, context="\n\n".join(x for x in (found[(c.start, c.end)], c.context) if x) or None, embed_text=None
        )
        for c in chunks
    ]


def _open_cache(path: str | os.PathLike[str] | None) -> sqlite3.Connection:
    if path is None:
        from ._io import cache_root

        path = cache_root() / "contextualize.sqlite"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), check_same_thread=False)
    db.execute(
        "CREATE TABLE IF NOT EXISTS context (namespace TEXT, document TEXT, start INTEGER, "
        "end INTEGER, context TEXT, PRIMARY KEY (namespace, document, start, end))"
    )
    return db


def _lookup(db: sqlite3.Connection, namespace: str, digest: str) -> dict[tuple[int, int], str]:
    rows = db.execute(
        "SELECT start, end, context FROM context WHERE namespace = ? AND document = ?", (namespace, digest)
    )
    return {(s, e): text for s, e, text in rows}


_formatter = string.Formatter()


def _parse(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    """The template's parts; errors name ``template``."""
    if not isinstance(template, str):
        raise ArgumentTypeError(f"must be a str, not {type(template).__name__}", param="template")
    try:
        parts = list(_formatter.parse(template))
    except ValueError as exc:
        raise ArgumentError(f"{template!r} is not a format string: {exc}", param="template") from None
    fields = [f for _, f, _, _ in parts if f is not None]
    unknown = [f for f in fields if f not in FIELDS]
    if unknown or "text" not in fields:
        raise ArgumentError(
            f"{template!r} must contain {{text}} and only the fields {', '.join('{' + f + '}' for f in FIELDS)}",
            param="template",
        )
    return parts
