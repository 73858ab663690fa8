"""An :class:`~chunkforge.index.Index`'s documents: adding them (each cut into its tree by
native code, its leaves embedded into the HNSW graphs, its parents into BM25), deleting them and
reading them back (text, tree, leaves, metadata). :class:`Documents` holds what the index keeps
of them; :class:`~chunkforge.index.ranking.Ranking` searches it and
:class:`~chunkforge.index.Index` adds expansion, persistence and its settings.

>>> from chunkforge.index import Index
>>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot.", "acl": "public"}])
>>> len(index), "a.md" in index, index.doc_ids, index.leaf_count
(1, True, ['a.md'], 3)
>>> index.metadata("a.md")
{'acl': 'public'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._io import is_unicode, syntax_for_path, syntax_named
from .._progress import advancing
from .._rwlock import RWLock, reads, writes
from .._search import int8_rows
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import Tokenizer
from .bm25 import BM25
from .expansion import LeafLayout
from .graph import Graph
from .payload import DocumentTree, Hit, Packed, Passage
from .prefix import LeafPrefixer, passage_texts, title_of
from .storage import CorruptIndexError
from .trees import metadata_json, passages

if TYPE_CHECKING:
    from .._native import Expander, Syntax
    from ..encoder import Encoder

EMBED_ROWS = 32768
"""Leaves embedded per block by :meth:`Index.add`. Each block is freed once it is in the
graph, so a large batch's float32 vectors never sit whole beside the graph (48 MB
blocks: above glibc's largest mmap threshold, so freeing one gives the memory back)."""
_Record = tuple[str, str, str, "Syntax | None", dict[str, Any]]
Saved = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[list[str]]]
"""A document of a saved index: its nodes ``(start, end, parent, section, level)``, leaves
(node indices), leaf labels, sentences and heading paths."""


@dataclass(slots=True)
class _Doc:
    """What Python keeps of a document (its tree lives in the native store): ids,
    text, the label of each leaf and the BM25 passage of each leaf."""

    doc_id: str
    source: str
    text: str
    labels: np.ndarray
    passages: np.ndarray
    metadata: dict[str, Any]


@dataclass(slots=True)
class _Tree:
    """A document cut into its tree, not yet in the index: its native tree (nodes
    and leaves' token ids), and for BM25 the spans of its leaves' parents."""

    doc_id: str
    source: str
    text: str
    metadata: dict[str, Any]
    native: Any  # _native.DocTree
    headings: list[list[str]]  # each section's heading path
    parents: np.ndarray  # (p, 2) start, end of each BM25 passage
    parent_sections: np.ndarray  # the section of each BM25 passage
    leaf_parent: np.ndarray  # the passage of each leaf


class Documents:
    """The documents of an :class:`~chunkforge.index.Index` (see the module): each one's text,
    metadata and leaves' labels here, its tree in the native store, its leaves in the graphs
    and its parents in BM25. The state is made by ``Index.__init__``."""

    leaf_tokens: int
    parent_tokens: tuple[int, ...]
    structure: str | None
    search_prefix: bool
    encoder_variant: str
    tokenizer: Tokenizer
    _encoder: Encoder | None
    _encoder_config: dict[str, Any] | None  # how a saved index's encoder is made again
    _dim: int | None
    _docs: list[_Doc | None]  # by native slot (a deleted document's is reused)
    _slot_of: dict[str, int]  # in insertion order
    _added: int  # documents ever added (the next default id's number)
    _label_slot: np.ndarray
    _next_label: int
    _graph: Graph | None
    _vectors: np.ndarray  # each label's unit vector, int8 with a scale per row
    _scales: np.ndarray
    _leaves: int
    _bm25: BM25
    _label_passage: np.ndarray
    _passage_labels: dict[int, np.ndarray]
    _expander: Expander[Hit, Passage, Packed]  # the documents' trees (native)
    _with_metadata: bool  # payloads carry metadata once a document has some
    _layouts: dict[str, LeafLayout]  # documents' leaves for spread, read on first use
    _lock: RWLock  # readers see one version: add/delete write alone

    @property
    def encoder(self) -> Encoder:
        """The encoder; loaded on first use: the model the index was saved with, else the
        default model (``encoder_variant``)."""
        if self._encoder is None and self._encoder_config is not None:
            from .._config import from_config

            self._encoder = from_config(self._encoder_config)
        if self._encoder is None:
            from ..encoder import Encoder

            self._encoder = Encoder.default(self.encoder_variant)
            if self._dim is not None and self._encoder.dim != self._dim:
                raise ArgumentError(
                    f"the default encoder has dim {self._encoder.dim}, the index {self._dim}",
                    param="encoder",
                    aside=True,
                )
        return self._encoder

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._slot_of

    @property
    @reads
    def doc_ids(self) -> list[str]:
        """Ids of the documents, in insertion order."""
        return list(self._slot_of)

    def _in_order(self) -> list[_Doc]:
        """The documents, in insertion order."""
        return [self._docs[slot] for slot in self._slot_of.values()]  # type: ignore[misc]

    @property
    @reads
    def leaf_count(self) -> int:
        """Number of leaves (embedded units)."""
        return self._leaves

    @reads
    def document(self, doc_id: str) -> str:
        """The text of a document."""
        return self._doc(doc_id).text

    @reads
    def tree(self, doc_id: str) -> DocumentTree:
        """A copy of a document's tree as the index stores it (natively).

        >>> from chunkforge.index import Index
        >>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot."}])
        >>> index.tree("a.md").headings
        [['Cats']]
        """
        slot = self._slot_of.get(doc_id)
        if slot is None:
            raise KeyError(f"no document {doc_id!r} in the index")
        return DocumentTree(*self._expander.tree(slot))

    @reads
    def leaves(self, doc_id: str | None = None, score: float = 1.0) -> list[Hit]:
        """Every leaf (of one document, or of all in insertion order) as a
        :class:`Hit` with ``score``, in text order: hits built by hand for
        :meth:`expand` (re-ranked hits: ``dataclasses.replace(hit, score=s)``).

        >>> from chunkforge.index import Index
        >>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot."}])
        >>> [h.text for h in index.leaves("a.md")]
        ['# Cats', 'Cats purr.', 'They sleep a lot.']
        """
        docs = self._in_order() if doc_id is None else [self._doc(doc_id)]
        labels = [label for doc in docs for label in doc.labels.tolist()]
        return self._hits(labels, [score] * len(labels))

    def add(self, docs: Iterable[str | Mapping[str, Any]], show_progress: bool | None = False) -> None:
        """Adds documents: strings (ids ``doc-<n>``) or mappings with ``text``
        and optionally ``id`` or ``doc_id`` (str; the same id, as the bulk job's records
        name it), ``source`` (str) and ``syntax``; every other field is metadata.
        ``show_progress``: a bar over the leaves embedded (None: on a terminal).

        >>> from chunkforge.index import Index
        >>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot."}])
        >>> index.add([{"id": "guide.md", "text": "# Guide\\n\\nRun it.", "source": "docs"}, "Plain text."])
        >>> index.doc_ids
        ['a.md', 'guide.md', 'doc-2']
        """
        with self._lock.read():
            records = self._records(docs)
        if not records:
            return
        # the slow part (structure, embedding) runs while readers go on
        trees = self._build(records)
        token_ids = [ids for tree in trees for ids in self._leaf_ids(tree)]
        count = len(token_ids)
        with advancing(show_progress, total=count, unit=" leaves", desc="embedding") as bar:
            blocks = [
                self.encoder.embed_token_ids(token_ids[at : at + EMBED_ROWS], show_progress=bar)
                for at in range(0, count, EMBED_ROWS)
            ]
        del token_ids
        with self._lock.write():
            taken = [r[0] for r in records if r[0] in self._slot_of]
            if taken:
                raise ArgumentError(
                    f": document id {taken[0]!r} is already in the index (added meanwhile)", param="docs"
                )
            labels = np.arange(self._next_label, self._next_label + count, dtype=np.int64)
            self._check_free(labels)
            if count and self._graph is None:
                self._dim = self.encoder.dim
                self._graph = Graph(self.encoder.dim, capacity=count)
            at = 0
            while blocks:  # each block freed once in the graph and the int8 copy
                block = blocks.pop(0)
                part = labels[at : at + len(block)]
                self._graph.add(block, part)  # type: ignore[union-attr]
                self._keep_vectors(part, block)
                at += len(block)
                del block
            per_doc = np.split(labels, np.cumsum([len(t.leaf_parent) for t in trees])[:-1]) if trees else []
            slots = self._expander.insert(
                [t.native for t in trees],
                [x.tolist() for x in per_doc],
                [t.doc_id for t in trees],
                [t.text for t in trees],
            )
            self._register(trees, per_doc, slots)

    def _build(self, records: list[_Record]) -> list[_Tree]:
        """The trees of new documents (native code: each document tokenized once,
        sections, parents and leaves cut from that one tokenization)."""
        natives = self._expander.build(
            [r[2] for r in records], [r[3] for r in records], self.leaf_tokens, list(self.parent_tokens)
        )
        return [_tree(r, native) for r, native in zip(records, natives)]

    def _leaf_ids(self, tree: _Tree) -> list[np.ndarray]:
        """What the encoder embeds of each leaf: its token ids, after its prefix's with
        ``search_prefix``."""
        ids = _split(*tree.native.leaf_token_ids)
        if not self.search_prefix:
            return ids
        sections = tree.native.nodes[tree.native.leaves, 3]
        return LeafPrefixer.for_encoder(self.encoder).leaf_ids(ids, sections, tree.headings, title_of(tree.metadata))

    def _check_free(self, labels: np.ndarray) -> None:
        """New labels must be unused by live leaves and by the graph (a corrupt
        ``next_label``): checked before anything is written to the graph."""
        if not len(labels):
            return
        known = labels[labels < len(self._label_slot)]
        graph_top = self._graph.top if self._graph is not None else 0
        if (self._label_slot[known] >= 0).any() or int(labels.min()) < graph_top:
            raise CorruptIndexError(
                f"labels from {int(labels[0])} are already in use: the index is inconsistent "
                "(a corrupt manifest?); rebuild it"
            )

    @writes
    def delete(self, doc_id: str) -> None:
        """Removes a document (its leaves leave the HNSW graphs and BM25).

        >>> from chunkforge.index import Index
        >>> index = Index.build([{"id": "a.md", "text": "# Cats\\n\\nCats purr. They sleep a lot."}])
        >>> index.delete("a.md")
        >>> len(index), index.leaf_count
        (0, 0)
        """
        doc = self._doc(doc_id)
        slot = self._slot_of.pop(doc_id)
        self._layouts.pop(doc_id, None)
        self._leaves -= len(doc.labels)
        if self._graph is not None:
            self._graph.delete(doc.labels.tolist())
        self._label_slot[doc.labels] = -1
        self._expander.remove(slot)
        self._docs[slot] = None
        for p in np.unique(doc.passages).tolist():
            self._bm25.remove(p)
            del self._passage_labels[p]

    def _records(self, docs: Iterable[str | Mapping[str, Any]]) -> list[_Record]:
        """``(id, source, text, syntax, metadata)`` of each new document; metadata is every
        field but ``id`` and ``text``, JSON-serializable."""
        if isinstance(docs, (str, Mapping)):
            raise ArgumentTypeError("must be an iterable of documents, not a single document", param="docs")
        out, seen = [], set()
        for i, doc in enumerate(docs):
            if isinstance(doc, str):
                doc = {"text": doc}
            if not isinstance(doc, Mapping):
                raise ArgumentTypeError(
                    f"[{i}] must be a str or a mapping with 'text', not {type(doc).__name__}", param="docs"
                )
            text = doc.get("text")
            if not isinstance(text, str):
                raise ArgumentTypeError(f"[{i}]['text'] must be a str, not {type(text).__name__}", param="docs")
            if "id" in doc and "doc_id" in doc and doc["id"] != doc["doc_id"]:
                raise ArgumentError(
                    f"[{i}] has both 'id' ({doc['id']!r}) and 'doc_id' ({doc['doc_id']!r}): give one", param="docs"
                )
            doc_id = doc.get("doc_id", doc.get("id", f"doc-{self._added + i}"))
            source = doc.get("source", "")
            if not isinstance(doc_id, str) or not isinstance(source, str):
                raise ArgumentTypeError(f"[{i}]: 'id' (or 'doc_id') and 'source' must be str", param="docs")
            for name, value in (("id", doc_id), ("source", source), ("text", text)):
                if not is_unicode(value):
                    raise ArgumentError(f"[{i}][{name!r}] holds a lone surrogate (not valid Unicode)", param="docs")
            if doc_id in self._slot_of or doc_id in seen:
                raise ArgumentError(
                    f"[{i}]: document id {doc_id!r} is already in the index (delete it first)", param="docs"
                )
            seen.add(doc_id)
            given = doc.get("syntax", self._syntax(doc_id))
            syntax = syntax_named(given)
            if syntax is None and given is not None:
                raise ArgumentError(
                    f"[{i}]['syntax'] must be 'markdown', 'rst', 'asciidoc' or None, not {given!r}", param="docs"
                )
            metadata = {k: v for k, v in doc.items() if k not in ("id", "doc_id", "text")}
            metadata_json(doc_id, metadata)  # refused here, not at save
            out.append((doc_id, source, text, syntax, metadata))
        return out

    def _syntax(self, doc_id: str) -> str | None:
        if self.structure != "auto":
            return self.structure
        return syntax_for_path(doc_id)

    def _register(self, trees: list[_Tree], labels: list[np.ndarray], slots: list[int]) -> None:
        """Registers documents now in the native store (in ``slots``), their leaves labelled."""
        top = max([self._next_label, *(int(x.max()) + 1 for x in labels if len(x))])
        if top > len(self._label_slot):
            grow = top - len(self._label_slot)
            self._label_slot = np.concatenate([self._label_slot, np.full(grow, -1, np.int64)])
            self._label_passage = np.concatenate(
                [self._label_passage, np.full(top - len(self._label_passage), -1, np.int64)]
            )
        for slot, tree, doc_labels in zip(slots, trees, labels):
            if slot > len(self._docs) or (slot < len(self._docs) and self._docs[slot] is not None):
                raise CorruptIndexError(f"document {tree.doc_id!r}: the native store is out of step (slot {slot})")
            title = title_of(tree.metadata) if self.search_prefix else None
            texts = passage_texts(tree.text, tree.parents, tree.parent_sections, tree.headings, title)
            ids = np.asarray(self._bm25.add(texts), np.int64)
            doc = _Doc(tree.doc_id, tree.source, tree.text, doc_labels, ids[tree.leaf_parent], tree.metadata)
            if slot == len(self._docs):
                self._docs.append(doc)
            else:
                self._docs[slot] = doc
            self._added += 1
            self._with_metadata |= bool(doc.metadata)
            self._slot_of[doc.doc_id] = slot
            self._leaves += len(doc_labels)
            self._label_slot[doc_labels] = slot
            self._label_passage[doc_labels] = doc.passages
            order = np.argsort(tree.leaf_parent, kind="stable")
            bounds = np.cumsum(np.bincount(tree.leaf_parent, minlength=len(ids)))[:-1]
            for p, members in zip(ids.tolist(), np.split(doc_labels[order], bounds)):
                self._passage_labels[p] = members
        self._next_label = top

    def _doc(self, doc_id: str) -> _Doc:
        slot = self._slot_of.get(doc_id)
        if slot is None:
            raise KeyError(f"no document {doc_id!r} in the index")
        return self._docs[slot]  # type: ignore[return-value]

    def _keep_vectors(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        """Keeps an int8 copy of the leaves' unit vectors, one scale per row (every candidate
        is scored from it; cosines within ~0.005 of float32)."""
        if len(labels) == 0:
            return
        top = int(labels.max()) + 1
        if top > len(self._vectors):
            size = max(top, 2 * len(self._vectors))
            grown = np.zeros((size, vectors.shape[1]), np.int8)
            grown[: len(self._vectors)] = self._vectors.reshape(-1, vectors.shape[1])
            self._vectors = grown
            self._scales = np.concatenate([self._scales, np.zeros(size - len(self._scales), np.float32)])
        for at in range(0, len(labels), 2048):  # in blocks: no float32 copy of all the vectors
            self._vectors[labels[at : at + 2048]], self._scales[labels[at : at + 2048]] = int8_rows(
                vectors[at : at + 2048]
            )

    def _hits(self, labels: Sequence[int], scores: Sequence[float]) -> list[Hit]:
        """Hits of leaves ``labels`` with ``scores`` (made natively: ~1 us a hit)."""
        return self._expander.hits(labels, scores, len(self.parent_tokens) + 1)

    def metadata(self, doc_id: str) -> dict[str, Any]:
        """A document's metadata: its record's fields but ``id`` and ``text``.

        >>> from chunkforge.index import Index
        >>> index = Index.build([{"id": "guide.md", "text": "Run it.", "url": "https://example.org/guide"}])
        >>> index.metadata("guide.md")["url"]
        'https://example.org/guide'
        """
        return self._doc(doc_id).metadata

    def _add_saved(self, docs: dict[str, list[Any]], saved: list[Saved]) -> None:
        """Adds documents read from a saved index: ``docs`` columns, and per document
        its nodes ``(start, end, parent, section, level)``, leaves, labels, sentences
        and headings (each text tokenized once, by the native store)."""
        slots = self._expander.add_docs(
            docs["text"],
            [s[3] for s in saved],
            [s[0][:, :4] for s in saved],
            [s[1].tolist() for s in saved],
            [s[2].tolist() for s in saved],
            docs["doc_id"],
            [s[4] for s in saved],
        )
        trees = [
            _Tree(doc_id, source, text, metadata, None, headings, *passages(nodes, leaves))
            for doc_id, source, text, metadata, (nodes, leaves, _, _, headings) in zip(
                docs["doc_id"], docs["source"], docs["text"], docs["metadata"], saved
            )
        ]
        self._register(trees, [s[2] for s in saved], slots)


def _tree(record: _Record, native: Any) -> _Tree:
    doc_id, source, text, _, metadata = record
    return _Tree(doc_id, source, text, metadata, native, native.headings, *passages(native.nodes, native.leaves))


def _split(ids: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """``ids[bounds[i]:bounds[i + 1]]`` for each ``i``."""
    return [ids[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
