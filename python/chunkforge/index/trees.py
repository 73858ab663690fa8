"""Document trees as rows: what the bulk job writes with ``units="tree"`` and what an index
reads back without cutting or embedding anything again.

A batch of documents becomes two tables, both cut from one tokenization per document
(:meth:`Expander.build <chunkforge._native.Expander.build>`, as :meth:`Index.add
<chunkforge.Index.add>` cuts them):

- **leaves** (the shard, one row a leaf, in text order): ``doc_id``, ``chunk_id`` (the hit's
  ``id``), ``start``, ``end``, ``token_count``, ``heading_path``, ``passage`` (the leaf's BM25
  passage: its parent, numbered within the document), ``text_hash`` and ``vector``;
- **docs** (one row a document): ``doc_id``, ``text``, ``metadata`` (the record's other
  fields, JSON), ``headings`` (each section's heading path, JSON), ``nodes`` (rows ``(start,
  end, parent, section, level)`` flattened), ``leaves`` (node index of each leaf) and
  ``sentences`` (rows ``(start, end, section)`` flattened).

>>> from chunkforge.index.trees import TreeSettings
>>> TreeSettings().leaf_tokens, TreeSettings().parent_tokens
(48, (256,))
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _native
from .._checks import check_int
from .._io import Doc, is_unicode, syntax_for_path, syntax_named, text_hash
from ..errors import ArgumentError, ArgumentTypeError, InputError
from ..tokenizer import Tokenizer
from .payload import DocumentTree, Hit, Packed, Passage
from .prefix import LeafPrefixer, prefix_text, prefixed, title_of

if TYPE_CHECKING:
    import pyarrow as pa

STRUCTURES = ("auto", "markdown", "rst", "asciidoc", None)


@dataclass(frozen=True)
class TreeSettings:
    """How documents are cut into trees (the :class:`~chunkforge.Index` options of the same
    names): leaves of at most ``leaf_tokens``, levels of ``parent_tokens`` (largest first)
    between sections and leaves, headings read by ``structure`` (``"auto"``: by the document
    id's suffix; a record's ``syntax`` field wins); ``search_prefix``: each leaf's title and
    heading path before what search sees of it (:mod:`chunkforge.index.prefix`)."""

    leaf_tokens: int = 48
    parent_tokens: tuple[int, ...] = (256,)
    structure: str | None = "auto"
    search_prefix: bool = True

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> TreeSettings:
        """The settings a manifest recorded (:meth:`as_dict`); one written before the search
        prefix has none."""
        return cls(
            settings["leaf_tokens"],
            tuple(settings["parent_tokens"]),
            settings["structure"],
            settings.get("search_prefix", False),
        )

    def check(self) -> None:
        """Raises InputError naming the first bad setting."""
        if isinstance(self.leaf_tokens, bool) or not isinstance(self.leaf_tokens, int) or self.leaf_tokens < 1:
            raise InputError(f"must be an integer >= 1, not {self.leaf_tokens!r}", param="leaf_tokens")
        sizes = (*self.parent_tokens, self.leaf_tokens)
        if any(isinstance(n, bool) or not isinstance(n, int) for n in sizes) or any(
            a <= b for a, b in zip(sizes, sizes[1:])
        ):
            raise InputError(
                f"must be integers, decreasing and larger than leaf_tokens, not {sizes}", param="parent_tokens"
            )
        if self.structure not in STRUCTURES:
            raise InputError(
                f"must be 'auto', 'markdown', 'rst', 'asciidoc' or None, not {self.structure!r}", param="structure"
            )
        if not isinstance(self.search_prefix, bool):
            raise InputError(f"must be True or False, not {self.search_prefix!r}", param="search_prefix")

    def syntax(self, doc_id: str, metadata: dict[str, Any]) -> Any:
        """The heading syntax of a document."""
        if "syntax" in metadata:
            given = metadata["syntax"]
            found = syntax_named(given)
            if found is None and given is not None:
                raise InputError(f"document {doc_id!r}: syntax must be 'markdown', 'rst', 'asciidoc' or None")
            return found
        return syntax_for_path(doc_id) if self.structure == "auto" else self.structure

    def as_dict(self) -> dict[str, Any]:
        """The settings as the manifest records them."""
        return {
            "leaf_tokens": self.leaf_tokens,
            "parent_tokens": list(self.parent_tokens),
            "structure": self.structure,
            "search_prefix": self.search_prefix,
        }


class TreeBatch(NamedTuple):
    """A batch of documents cut into trees: the leaves' columns (no vectors), each leaf's
    token ids, and the docs table."""

    columns: dict[str, list[Any]]
    token_ids: list[np.ndarray]
    docs: pa.Table


def scratch_expander(tokenizer: Tokenizer) -> _native.Expander[Hit, Passage, Packed]:
    """An empty native store on ``tokenizer`` that makes this package's hits, passages and
    packed passages."""
    return _native.Expander(tokenizer._native, Hit, Passage, Packed)


class Passages(NamedTuple):
    """The BM25 passages of a tree: ``(start, end)`` of each parent of a leaf (a section when
    there are no parent levels), the section of each, and the passage of each leaf."""

    spans: np.ndarray
    sections: np.ndarray
    leaf_passage: np.ndarray


def passages(nodes: np.ndarray, leaves: np.ndarray) -> Passages:
    """The :class:`Passages` of a tree of ``nodes`` rows ``(start, end, parent, section, level)``."""
    parents, leaf_parent = np.unique(nodes[leaves, 2], return_inverse=True)
    return Passages(
        nodes[parents, :2].reshape(-1, 2), nodes[parents, 3].reshape(-1), leaf_parent.astype(np.int64).reshape(-1)
    )


def are_spans(hits: object) -> bool:
    """Whether what ``expand`` got is a list of spans ``(doc_id, start, end, score)`` (tuples or
    lists) rather than hits (a :class:`Hit`, or any object with a ``leaf`` and a ``score``)."""
    return isinstance(hits, (list, tuple)) and bool(hits) and isinstance(hits[0], (tuple, list))


def checked_spans(spans: Iterable[Any]) -> Iterator[tuple[str, int, int, float]]:
    """Spans found elsewhere, ``(doc_id, start, end, score)``, checked (errors name ``spans[i]``)."""
    for i, span in enumerate(spans):
        if not isinstance(span, (tuple, list)) or len(span) != 4:
            raise ArgumentTypeError(f"[{i}] must be (doc_id, start, end, score), not {span!r}", param="spans")
        doc_id, start, end, score = span
        if not isinstance(doc_id, str):
            raise ArgumentTypeError(f"[{i}] doc_id must be a str, not {doc_id!r}", param="spans")
        start, end = check_int(f"spans[{i}] start", start, 0), check_int(f"spans[{i}] end", end, 0)
        if not start < end:
            raise ArgumentError(f"[{i}]: {start}-{end} is not a span", param="spans")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ArgumentTypeError(f"[{i}] score must be a number, not {score!r}", param="spans")
        yield doc_id, start, end, float(score)


def overlapping(starts: np.ndarray, ends: np.ndarray, start: int, end: int) -> range:
    """The leaves (indices into a document's leaves, spans ``starts``/``ends`` in text order)
    that the span ``start``-``end`` overlaps.

    >>> overlapping(np.array([0, 10, 20]), np.array([8, 18, 28]), 9, 21)
    range(1, 3)
    """
    return range(int(np.searchsorted(ends, start, "right")), int(np.searchsorted(starts, end)))


def metadata_json(doc_id: str, metadata: dict[str, Any]) -> str:
    """A document's metadata as JSON (values JSON has no form for are written as strings);
    InputError naming the document for metadata that cannot be stored, a lone surrogate
    (no UTF-8 form) included.

    >>> metadata_json("a.md", {"title": "caf\u00e9"})
    '{"title": "café"}'
    """
    try:
        text = json.dumps(metadata, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:
        raise InputError(f"document {doc_id!r}: metadata cannot be stored ({exc})") from exc
    if not is_unicode(text):
        field = next(
            (k for k, v in metadata.items() if not is_unicode(json.dumps({k: v}, ensure_ascii=False, default=str))), "?"
        )
        raise InputError(f"document {doc_id!r}: metadata field {field!r} holds a lone surrogate (not valid Unicode)")
    return text


def cut(
    expander: _native.Expander[Any, Any, Any],
    docs: Sequence[Doc],
    settings: TreeSettings,
    level: int,
    prefixer: LeafPrefixer | None = None,
    threads: int | None = None,
) -> TreeBatch:
    """Cuts ``docs`` into trees on ``expander`` (an empty scratch store: the documents pass
    through it and leave it), each document tokenized once. ``level`` is the leaves' tree level
    (their ids are made at it). With ``prefixer`` (``settings.search_prefix``) each leaf's token
    ids start with its prefix's, and its ``text_hash`` is that of its text after its prefix
    (what its vector embeds)."""
    import pyarrow as pa

    from ..chunkers import node_id

    ids = [str(d.doc_id) for d in docs]
    natives = expander.build(
        [d.text for d in docs],
        [settings.syntax(i, d.metadata) for i, d in zip(ids, docs)],
        settings.leaf_tokens,
        list(settings.parent_tokens),
        threads,
    )
    columns: dict[str, list[Any]] = {
        name: []
        for name in ("doc_id", "chunk_id", "start", "end", "token_count", "heading_path", "passage", "text_hash")
    }
    token_ids: list[np.ndarray] = []
    doc_rows: dict[str, list[Any]] = {
        name: [] for name in ("doc_id", "text", "metadata", "headings", "nodes", "leaves", "sentences")
    }
    for doc_id, doc, native in zip(ids, docs, natives):
        flat, bounds = native.leaf_token_ids
        leaf_ids = [flat[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        (slot,) = expander.insert([native], [list(range(len(leaf_ids)))], [doc_id], [doc.text])
        tree = DocumentTree(*expander.tree(slot))
        expander.remove(slot)
        nodes, leaves = tree.nodes, tree.leaves
        leaf_passage = passages(nodes, leaves).leaf_passage
        spans = nodes[leaves, :2].tolist()
        sections = nodes[leaves, 3].tolist()
        texts = [doc.text[s:e] for s, e in spans]
        if prefixer is not None:
            title = title_of(doc.metadata)
            token_ids += prefixer.leaf_ids(leaf_ids, nodes[leaves, 3], tree.headings, title)
            texts = [prefixed(prefix_text(title, tree.headings[s]), t) for s, t in zip(sections, texts)]
        else:
            token_ids += leaf_ids
        columns["doc_id"] += [doc_id] * len(spans)
        columns["chunk_id"] += [node_id(doc_id, s, e, level) for s, e in spans]
        columns["start"] += [s for s, _ in spans]
        columns["end"] += [e for _, e in spans]
        columns["token_count"] += [len(x) for x in leaf_ids]  # the leaf's own
        columns["heading_path"] += [tree.headings[s] for s in sections]
        columns["passage"] += leaf_passage.tolist()
        columns["text_hash"] += [text_hash(t) for t in texts]
        doc_rows["doc_id"].append(doc_id)
        doc_rows["text"].append(doc.text)
        doc_rows["metadata"].append(metadata_json(doc_id, doc.metadata))
        doc_rows["headings"].append(json.dumps(tree.headings, ensure_ascii=False))
        doc_rows["nodes"].append(nodes.reshape(-1).tolist())
        doc_rows["leaves"].append(leaves.tolist())
        doc_rows["sentences"].append(tree.sentences.reshape(-1).tolist())
    table = pa.table(
        {
            "doc_id": pa.array(doc_rows["doc_id"], pa.string()),
            "text": pa.array(doc_rows["text"], pa.large_string()),
            "metadata": pa.array(doc_rows["metadata"], pa.string()),
            "headings": pa.array(doc_rows["headings"], pa.string()),
            "nodes": pa.array(doc_rows["nodes"], pa.list_(pa.int64())),
            "leaves": pa.array(doc_rows["leaves"], pa.list_(pa.int64())),
            "sentences": pa.array(doc_rows["sentences"], pa.list_(pa.int64())),
        }
    )
    return TreeBatch(columns, token_ids, table)


class SavedDoc(NamedTuple):
    """A document read back from a docs table: ids, text, metadata and its tree."""

    doc_id: str
    text: str
    metadata: dict[str, Any]
    tree: DocumentTree


class SavedRow(NamedTuple):
    """A docs table's row, checked: a :class:`SavedDoc` whose tree's ``headings`` are still
    as stored (a JSON array), for the native expander to read."""

    doc_id: str
    text: str
    metadata: dict[str, Any]
    nodes: np.ndarray
    leaves: np.ndarray
    sentences: np.ndarray
    headings: str


def read_rows(table: pa.Table, where: str) -> list[SavedRow]:
    """The rows of a docs table; ``where`` names it in errors (ValueError)."""
    cols = {name: table.column(name).to_pylist() for name in ("doc_id", "text", "headings", "metadata")}
    lists = {name: _int_lists(table, name) for name in ("nodes", "leaves", "sentences")}
    out = []
    for i, doc_id in enumerate(cols["doc_id"]):
        try:
            nodes, leaves, sentences = (lists[name][i] for name in ("nodes", "leaves", "sentences"))
            if nodes is None or leaves is None or sentences is None or cols["headings"][i] is None:
                raise ValueError("a null tree column (nodes, leaves, sentences or headings)")
            metadata = json.loads(cols["metadata"][i])
            row = SavedRow(
                doc_id,
                cols["text"][i],
                metadata,
                nodes.reshape(-1, 5),
                leaves,
                sentences.reshape(-1, 3),
                cols["headings"][i],
            )
        except (ValueError, TypeError) as exc:
            raise InputError(f"document {doc_id!r}: bad tree ({exc})", where=where) from exc
        if not isinstance(metadata, dict):
            raise InputError(f"document {doc_id!r}: metadata is not a JSON object", where=where)
        out.append(row)
    return out


class Part(NamedTuple):
    """A part of a saved document that a store's reader reads alone: one section (its tree's
    root and what lies under it), or the whole document. Offsets are the document's: its
    text is the document's from code point ``base`` on; its nodes' parents and its leaves
    index its own nodes, its sections its own ``headings`` (JSON); ``first_leaf`` is the
    document's index of its first leaf; ``words`` its text's saved words (None: none saved)."""

    base: int
    text: str
    headings: str
    nodes: np.ndarray
    leaves: np.ndarray
    sentences: np.ndarray
    words: bytes | None
    first_leaf: int


def section_parts(
    text: str,
    headings: list[list[str]],
    nodes: np.ndarray,
    leaves: np.ndarray,
    sentences: np.ndarray,
    words: bytes | None,
) -> list[Part]:
    """A saved document's sections as :class:`Part` s, one a root of its tree (``nodes`` rows
    ``(start, end, parent, section, level)``, parents first, as :func:`cut` writes them), each
    with its text, nodes, leaves, sentences and words; the whole document as one part when
    its tree is not one a section's part can hold (a root with nodes, leaves or sentences of
    another section, or a word across a section's end) or holds at most one section. Expansion
    never leaves a section, so a hit's part answers as its whole document would.

    >>> import json
    >>> text = "# A\\n\\nOne.\\n\\n# B\\n\\nTwo."
    >>> nodes = np.array([[0, 9, -1, 0, 0], [6, 9, 0, 0, 1], [11, 20, -1, 1, 0], [17, 20, 2, 1, 1]])
    >>> sentences = np.array([[0, 3, 0], [6, 9, 0], [11, 14, 1], [17, 20, 1]])
    >>> [(p.base, p.text, p.headings, p.first_leaf) for p in section_parts(text, [["A"], ["B"]], nodes, np.array([1, 3]), sentences, None)]
    [(0, '# A\\n\\nOne.', '[["A"]]', 0), (11, '# B\\n\\nTwo.', '[["B"]]', 1)]
    """
    whole = [Part(0, text, json.dumps(headings, ensure_ascii=False), nodes, leaves, sentences, words, 0)]
    roots = np.flatnonzero(nodes[:, 2] < 0)
    if len(roots) < 2:
        return whole  # one section, or none (a blank text: one part still holds its metadata)
    ends = np.append(roots[1:], len(nodes))
    first_leaves = np.searchsorted(leaves, roots)
    last_leaves = np.append(first_leaves[1:], len(leaves))
    if words is not None:
        packed = np.frombuffer(words, "<u2").reshape(-1, 3).astype(np.int64)
        word_ends = np.cumsum(packed[:, 0] + packed[:, 1])
        word_starts = word_ends - packed[:, 1]
        wide = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        utf8 = 1 + (wide >= 0x80) + (wide >= 0x800) + (wide >= 0x10000)
        byte_at = np.concatenate([[0], np.cumsum(utf8)])
    parts = []
    for a, b, lo, hi in zip(roots.tolist(), ends.tolist(), first_leaves.tolist(), last_leaves.tolist()):
        start, end, _, section, _ = nodes[a].tolist()
        own = nodes[a:b]
        in_section = sentences[:, 2] == section
        run = np.flatnonzero(in_section)
        if (
            (own[:, 3] != section).any()
            or (own[:, 0] < start).any()
            or (own[:, 1] > end).any()
            or (own[1:, 2] < a).any()
            or ((leaves[lo:hi] < a) | (leaves[lo:hi] >= b)).any()
            or (
                len(run)
                and (run[-1] - run[0] + 1 != len(run) or sentences[run[0], 0] < start or sentences[run[-1], 1] > end)
            )
        ):
            return whole
        part_words = None
        if words is not None:
            first, last = byte_at[start], byte_at[end]
            w0, w1 = np.searchsorted(word_ends, first, "right"), np.searchsorted(word_starts, last)
            if (w0 < len(word_starts) and word_starts[w0] < first) or (w1 > 0 and word_ends[w1 - 1] > last):
                return whole  # a word across the section's ends
            mine = packed[w0:w1].copy()
            if len(mine):
                mine[0, 0] = word_starts[w0] - first
            part_words = mine.astype("<u2").tobytes()
        local = own.copy()
        local[1:, 2] -= a
        local[:, 3] = 0
        kept = sentences[in_section].copy()
        kept[:, 2] = 0
        parts.append(
            Part(
                start,
                text[start:end],
                json.dumps([headings[section]], ensure_ascii=False),
                local,
                leaves[lo:hi] - a,
                kept,
                part_words,
                lo,
            )
        )
    return parts


def read_docs(table: pa.Table, where: str) -> list[SavedDoc]:
    """The documents of a docs table; ``where`` names it in errors (ValueError)."""
    out = []
    for row in read_rows(table, where):
        try:
            headings = [list(h) for h in json.loads(row.headings)]
        except (ValueError, TypeError) as exc:
            raise InputError(f"document {row.doc_id!r}: bad tree ({exc})", where=where) from exc
        tree = DocumentTree(row.nodes, row.leaves, row.sentences, headings)
        out.append(SavedDoc(row.doc_id, row.text, row.metadata, tree))
    return out


def read_shard(path: str | os.PathLike[str], columns: list[str] | None = None) -> pa.Table:
    """A shard file of a dataset, its Parquet pages checked (InputError naming it)."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=columns, page_checksum_verification=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is damaged ({exc}); rerun the job to rebuild it") from exc


def _int_lists(table: pa.Table, name: str) -> list[np.ndarray | None]:
    """Each row of a list-of-integers column as an int64 array (views of one array; None for a null)."""
    column = table.column(name).combine_chunks()
    values = np.asarray(column.flatten().to_numpy(zero_copy_only=False), np.int64)
    offsets = column.offsets.to_numpy()
    offsets = offsets - offsets[0]
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return [
        values[a:b] if ok else None for a, b, ok in zip(offsets[:-1].tolist(), offsets[1:].tolist(), valid.tolist())
    ]
