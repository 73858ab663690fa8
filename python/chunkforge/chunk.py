"""The unit every chunker returns: a span of the source text."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import ArgumentError

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of a document.

    ``start``/``end`` are Python ``str`` indices into the source text, so
    ``text[chunk.start:chunk.end] == chunk.text`` always holds.
    ``token_count`` is the number of tokens of ``chunk.text`` encoded alone
    (no special tokens); ``index`` is the chunk's position in its document.

    Structure-aware chunkers also fill ``heading_path`` (the enclosing headings,
    outermost first), ``kind`` (``text``, ``table``, ``code``, ``list``, ...) and
    ``context`` (what the chunk's representation needs besides its own text: a
    table's header row, a method's class signature); hierarchical chunkers fill
    ``id`` (stable: derived from document id, span and level), ``parent_id``,
    ``level`` (0 = the largest) and ``children`` (ids). ``embed_text`` is the text
    the encoder sees when it differs from ``text`` (title, headings, context
    prepended: see :func:`chunkforge.with_embed_text`); offsets still index ``text``.
    ``doc_id`` names the document when known (:meth:`Chunks.with_doc_id`), so that
    chunks score directly as retrieved spans in :func:`chunkforge.eval.score`.

    >>> from chunkforge import RecursiveChunker
    >>> doc = "First paragraph.\\n\\nSecond one."
    >>> c = RecursiveChunker(max_tokens=4).chunk(doc)[1]
    >>> (c.text, c.start, c.end, c.token_count, c.index)
    ('Second one.', 18, 29, 3, 1)
    """

    text: str
    start: int
    end: int
    token_count: int
    index: int
    heading_path: tuple[str, ...] = ()
    kind: str = "text"
    context: str | None = None
    id: str | None = None
    parent_id: str | None = None
    level: int | None = None
    children: tuple[str, ...] = ()
    embed_text: str | None = None
    doc_id: str | None = None


# the columns of a chunk table, in Chunk's field order
_COLUMNS = (
    "text",
    "start",
    "end",
    "token_count",
    "index",
    "heading_path",
    "kind",
    "context",
    "id",
    "parent_id",
    "level",
    "children",
    "embed_text",
)


def _arrow_schema(extra: tuple[tuple[str, pa.DataType], ...] = ()) -> pa.Schema:
    import pyarrow as pa

    types = {
        "text": pa.string(),
        "start": pa.int64(),
        "end": pa.int64(),
        "token_count": pa.int64(),
        "index": pa.int64(),
        "heading_path": pa.list_(pa.string()),
        "kind": pa.string(),
        "context": pa.string(),
        "id": pa.string(),
        "parent_id": pa.string(),
        "level": pa.int64(),
        "children": pa.list_(pa.string()),
        "embed_text": pa.string(),
    }
    return pa.schema([*extra, *((name, types[name]) for name in _COLUMNS)])


def _import_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise ImportError('to_arrow() needs pyarrow: pip install "chunkforge[parquet]"') from exc


class Chunks(list[Chunk]):
    """The chunks of one document: a ``list`` of :class:`Chunk` that also converts
    to a table, one row a chunk (``to_arrow()``, ``to_pandas()``).

    >>> from chunkforge import RecursiveChunker
    >>> table = RecursiveChunker(max_tokens=4).chunk("First paragraph.\\n\\nSecond one.").to_arrow()
    >>> table.column("text").to_pylist(), table.column("start").to_pylist()
    (['First paragraph.', 'Second one.'], [0, 18])
    """

    def to_arrow(self) -> pa.Table:
        """A ``pyarrow.Table`` with a column per :class:`Chunk` field."""
        _import_pyarrow()
        import pyarrow as pa

        rows = [{name: getattr(c, name) for name in _COLUMNS} for c in self]
        return pa.Table.from_pylist(rows, schema=_arrow_schema())

    def with_doc_id(self, doc_id: str) -> Chunks:
        """Copies of the chunks with ``doc_id`` set.

        >>> from chunkforge import RecursiveChunker
        >>> RecursiveChunker(max_tokens=4).chunk("One. Two.").with_doc_id("a")[0].doc_id
        'a'
        """
        return Chunks(dataclasses.replace(c, doc_id=doc_id) for c in self)

    def to_pandas(self) -> object:
        """A ``pandas.DataFrame`` of :meth:`to_arrow`."""
        return self.to_arrow().to_pandas()


class ChunkBatch(list[list[Chunk]]):
    """The chunks of many documents: a ``list`` of :class:`Chunks` in input order
    that converts to one table with a ``doc`` column (the input index), or
    ``doc_id`` when ``doc_ids`` are given.

    >>> from chunkforge import RecursiveChunker
    >>> batch = RecursiveChunker(max_tokens=4).chunk_batch(["One. Two.", "Three."])
    >>> batch.to_arrow(doc_ids=["a", "b"]).column("doc_id").to_pylist()
    ['a', 'b']
    """

    def to_arrow(self, doc_ids: list[str] | None = None) -> pa.Table:
        _import_pyarrow()
        import pyarrow as pa

        if doc_ids is not None and len(doc_ids) != len(self):
            raise ArgumentError(f"has {len(doc_ids)} entries for {len(self)} documents", param="doc_ids")
        key, kind = ("doc", pa.int64()) if doc_ids is None else ("doc_id", pa.string())
        rows = [
            {key: d if doc_ids is None else doc_ids[d], **{name: getattr(c, name) for name in _COLUMNS}}
            for d, chunks in enumerate(self)
            for c in chunks
        ]
        return pa.Table.from_pylist(rows, schema=_arrow_schema(((key, kind),)))

    def to_pandas(self, doc_ids: list[str] | None = None) -> object:
        return self.to_arrow(doc_ids).to_pandas()
