"""The documents a store's reader has read (:class:`DocumentCache`): a native expander and a
bounded cache of what was read into it, least recently used out. With a side
(:mod:`~chunkforge.index.store_side`) the unit read is a part of a document, one section (a
hit's expansion never leaves its section, so its section answers as its whole document
would), read alone from the side's copy; without one it is a whole document, read from the
docs table."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..tokenizer import Tokenizer
from .expansion import LeafLayout
from .filters import sql_quote
from .store_side import Side
from .trees import SavedRow, read_rows, scratch_expander

if TYPE_CHECKING:
    import pyarrow as pa

CACHE_BYTES = 256 << 20
"""Resident bytes of the documents a query process keeps read (least recently used out):
their text, tokens and trees in the expander, counted as :data:`RESIDENT_PER_TEXT_BYTE` times
the text."""
RESIDENT_PER_TEXT_BYTE = 13
"""Resident bytes a document read into the expander takes per byte of its UTF-8 text, rounded
up (measured: 3,000 documents of the 1M-leaf stand-in store of ``benches/store_growth.py``,
28.6 MB of text, took 353 MB, 12.4 a byte; 14.2 before the expander sampled its code point
offsets)."""

Key = int | str
"""What the cache holds: a part's row in the side, or (without a side) a document's id."""


class Cached:
    """A document, or a part of one, read into the expander: its slot, its document's id, the
    document's index of its first leaf, its leaves' labels, spans and sections (a part's own:
    0), its document's metadata and length, and its resident size (bytes)."""

    __slots__ = ("slot", "doc_id", "first_leaf", "labels", "starts", "ends", "sections", "metadata", "length", "size")

    def __init__(self, slot: int, labels: np.ndarray, doc: SavedRow, first_leaf: int, length: int, utf8: int) -> None:
        self.slot, self.doc_id, self.first_leaf, self.labels = slot, doc.doc_id, first_leaf, labels
        self.starts, self.ends = doc.nodes[doc.leaves, 0], doc.nodes[doc.leaves, 1]
        self.sections, self.metadata = doc.nodes[doc.leaves, 3], doc.metadata
        self.length, self.size = length, RESIDENT_PER_TEXT_BYTE * utf8

    def label(self, leaf: int) -> int:
        """The label of the document's leaf ``leaf`` (one of this part's)."""
        return int(self.labels[leaf - self.first_leaf])

    @property
    def layout(self) -> LeafLayout:
        """Its leaves (for finding a hit's leaf)."""
        return LeafLayout(self.labels, self.starts, self.sections, self.ends)


def leaf_layout(entries: list[Cached]) -> LeafLayout:
    """The leaves of a document's read parts, in text order."""
    if len(entries) == 1:
        return entries[0].layout
    ordered = sorted(entries, key=lambda e: e.first_leaf)
    return LeafLayout(*(np.concatenate([getattr(e, name) for e in ordered]) for name in LeafLayout._fields))


class DocumentCache:
    """What a commit's reader has read of its documents (see the module): the parts (with a
    side) or the documents in a native expander, at most ``cache_bytes`` resident. Hold
    :attr:`lock` around every call and every use of :attr:`expander`."""

    def __init__(
        self,
        docs_table: Any,
        side: Side | None,
        tokenizer: Tokenizer,
        cache_bytes: int,
        where: str,
        run: Callable[[Any], Any],
    ) -> None:
        self.docs_table, self.side, self.cache_bytes, self.where, self._run = docs_table, side, cache_bytes, where, run
        self.lock = threading.Lock()
        self.expander = scratch_expander(tokenizer)
        self.cache: OrderedDict[Key, Cached] = OrderedDict()
        self.cached_bytes = 0
        self.free: list[int] = []
        self.next_label = 0

    def of_leaves(self, leaves: Iterable[tuple[str, int]], by_start: bool = False) -> list[Key]:
        """What holds each of the leaves ``(doc_id, leaf)`` (those of documents the store holds);
        ``by_start``: of ``(doc_id, start)``, what holds each code point ``start``."""
        if self.side is None:
            return [doc_id for doc_id, _ in leaves]
        return list(self.side.parts_of(list(leaves), by_start))  # list[int] is no list[Key] to mypy

    def over(self, doc_id: str, start: int, end: int) -> list[Key]:
        """What holds the document ``doc_id``'s code points ``start`` to ``end``."""
        return [doc_id] if self.side is None else list(self.side.parts_over(doc_id, start, end))

    def load(self, keys: Iterable[Key]) -> dict[Key, Cached]:
        """The entries of ``keys`` (those the store holds), read when missing."""
        wanted = list(dict.fromkeys(keys))
        missing = [k for k in wanted if k not in self.cache]
        if missing:
            rows, read, first_leaves, lengths = self._rows(missing)
            self._insert(rows, read_rows(rows, self.where), read, first_leaves, lengths)
        found = {}
        for k in wanted:
            if k in self.cache:
                self.cache.move_to_end(k)
                found[k] = self.cache[k]
        self._evict(keep=set(found))
        return found

    def _rows(self, keys: list[Key]) -> tuple[pa.Table, list[Key], list[int], list[int] | None]:
        """The rows of those of ``keys`` the store holds, their keys and first leaves, and their
        documents' lengths (None: their texts'): with a side its parts (in its order), else a
        filter on the docs table's ``doc_id`` (in the table's order: the expander's slots, which
        order passages of equal scores of different documents; the parts of a side's documents
        order by the document's row)."""
        if self.side is None:
            ids = ", ".join(sql_quote(str(d)) for d in keys)
            rows = self._run(self.docs_table.query().where(f"doc_id IN ({ids})").limit(len(keys) + 1).to_arrow())
            return rows, rows.column("doc_id").to_pylist(), [0] * rows.num_rows, None
        side, parts = self.side, sorted(int(k) for k in keys)
        try:
            rows = side.parts(parts)
        except (OSError, ValueError) as exc:  # a damaged file (pyarrow's errors)
            raise RuntimeError(f"its side {side.folder} cannot be read ({exc})") from exc
        docs = np.searchsorted(side.part_ptr, parts, "right") - 1
        expected = [side.doc_ids[d] for d in docs.tolist()]
        if (
            rows.column("base").to_pylist() != side.part_base[parts].tolist()
            or rows.column("doc_id").to_pylist() != expected
        ):
            raise RuntimeError(f"its side {side.folder} does not match the table")
        return rows, list(parts), side.part_leaf[parts].tolist(), side.doc_length[docs].tolist()

    def _insert(
        self, rows: pa.Table, docs: list[SavedRow], keys: list[Key], first_leaves: list[int], lengths: list[int] | None
    ) -> None:
        """Puts ``rows`` (whole documents, or parts of them: with a ``base`` column), read as
        ``docs``, into the expander (in one call, their headings read there) and the cache: a
        text whose words the store kept is not tokenized again, the others are (in parallel)."""
        import pyarrow.compute as pc

        words = rows.column("words").to_pylist() if "words" in rows.column_names else None
        utf8 = pc.binary_length(rows.column("text")).to_pylist()
        parts = None
        if "base" in rows.column_names:
            assert self.side is not None  # parts come from a side
            groups = [self.side.doc_rows[doc.doc_id] for doc in docs]
            parts = list(zip(rows.column("base").to_pylist(), groups))
        labels = []
        for doc in docs:
            n = len(doc.leaves)
            take = min(n, len(self.free))
            labels.append(self.free[len(self.free) - take :] + list(range(self.next_label, self.next_label + n - take)))
            del self.free[len(self.free) - take :]
            self.next_label += n - take
        slots = self.expander.add_docs(
            [doc.text for doc in docs],
            [doc.sentences for doc in docs],
            [doc.nodes[:, :4] for doc in docs],
            [doc.leaves.tolist() for doc in docs],
            labels,
            [doc.doc_id for doc in docs],
            [doc.headings for doc in docs],
            words,
            parts,
        )
        for i, (slot, doc_labels, doc) in enumerate(zip(slots, labels, docs)):
            length = len(doc.text) if lengths is None else lengths[i]
            entry = Cached(slot, np.asarray(doc_labels, np.int64), doc, first_leaves[i], length, utf8[i])
            self.cache[keys[i]] = entry
            self.cached_bytes += entry.size

    def _evict(self, keep: set[Key]) -> None:
        while self.cached_bytes > self.cache_bytes and len(self.cache) > len(keep):
            key = next(k for k in self.cache if k not in keep)
            entry = self.cache.pop(key)
            self.expander.remove(entry.slot)
            self.free += entry.labels.tolist()
            self.cached_bytes -= entry.size
