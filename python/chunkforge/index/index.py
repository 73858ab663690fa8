"""The :class:`Index`: documents cut into trees (native code), leaves embedded into
HNSW graphs (:class:`~chunkforge.index.graph.Graph`), BM25 over their parents, fused search, and expansion into payloads."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._checks import check_int
from .._io import is_unicode, syntax_for_path, syntax_named
from .._progress import advancing
from .._recommended import RECOMMENDED
from .._rwlock import RWLock, reads, writes
from .._search import EXACT_MAX, int8_cosines, int8_rows, top_k
from ..tokenizer import Tokenizer
from . import expansion
from .bm25 import BM25
from .expansion import LeafLayout, leaf_labels
from .filters import Filter, filter_of
from .fusion import BM25_POOL, DENSE_POOL, fuse
from .options import ExpandOptions
from .payload import DocumentTree, Hit, Passage, Payload
from .prefix import LeafPrefixer, passage_texts, title_of
from .storage import (
    CorruptIndexError,
)
from .trees import (
    are_spans,
    checked_spans,
    metadata_json,
    overlapping,
    passages,
    scratch_expander,
)

if TYPE_CHECKING:
    from .._native import Syntax
    from ..encoder import Encoder
    from .store import StoreIndex

INDEX_EXTRA = 'pip install "chunkforge[index]"'
try:
    from . import persist
    from .graph import Graph
except ImportError as exc:
    raise ImportError(f"chunkforge.Index needs hnswlib and pyarrow ({INDEX_EXTRA})") from exc

EMBED_ROWS = 32768
"""Leaves embedded per block by :meth:`Index.add`. Each block is freed once it is in the
graph, so a large batch's float32 vectors never sit whole beside the graph (48 MB
blocks: above glibc's largest mmap threshold, so freeing one gives the memory back)."""
_Record = tuple[str, str, str, "Syntax | None", dict[str, Any]]


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


class Index:
    """Leaves of documents in HNSW graphs (and BM25), with the documents'
    structure for expansion. Build with :meth:`build` (or ``Index(encoder)`` then
    :meth:`add`), persist with :meth:`save` / :meth:`load`.

    ``leaf_tokens`` caps a leaf (a sentence); ``parent_tokens`` are the sizes of
    the levels between sections and leaves, largest first (``()``: leaves sit
    right under their section); ``structure`` picks the heading syntax
    (``"auto"``: by the document id's suffix, see :func:`~chunkforge.chunkers.markdown.syntax_for_path`; or
    ``"markdown"``, ``"rst"``, ``"asciidoc"``, ``None``); ``hybrid`` adds BM25
    over the leaves' parents, fused with the leaves' cosines with ``weights``
    ``(dense, bm25)`` (see :meth:`search`); ``search_prefix`` puts each document's title
    (its ``title`` field) and each leaf's heading path before what search sees of the leaf
    (its vector, its parent's BM25 words; :mod:`chunkforge.index.prefix`), its span unchanged.
    The defaults (48-token leaves, 256-token parents, equal weights) are the ones
    ``benches/retrieval_eval.py`` chose on the dev set (``benches/results/retrieval-eval.md``);
    the prefix is ``benches/retrieval_buckets.py``'s (``benches/results/retrieval-buckets.md``).

    >>> index = Index(leaf_tokens=48, parent_tokens=(256,))  # doctest: +SKIP
    >>> index.add(["First document. Two sentences.", {"id": "b", "text": "Another."}])  # doctest: +SKIP
    >>> len(index)  # doctest: +SKIP
    2
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        *,
        leaf_tokens: int = 48,
        parent_tokens: Sequence[int] = (256,),
        structure: str | None = "auto",
        hybrid: bool = True,
        weights: tuple[float, float] = (1.0, 1.0),
        search_prefix: bool = True,
        encoder_variant: str = "optimized",
    ) -> None:
        self.leaf_tokens = check_int("leaf_tokens", leaf_tokens, 1)
        if isinstance(parent_tokens, (str, bytes)) or not isinstance(parent_tokens, Sequence):
            raise TypeError(f"parent_tokens must be a sequence of ints, not {parent_tokens!r}")
        self.parent_tokens = tuple(check_int(f"parent_tokens[{i}]", n, 1) for i, n in enumerate(parent_tokens))
        sizes = (*self.parent_tokens, self.leaf_tokens)
        if any(a <= b for a, b in zip(sizes, sizes[1:])):
            raise ValueError(f"parent_tokens must be decreasing and larger than leaf_tokens, got {sizes}")
        if structure not in (None, "auto", "markdown", "rst", "asciidoc"):
            raise ValueError(f"structure must be 'auto', 'markdown', 'rst', 'asciidoc' or None, not {structure!r}")
        self.structure = structure
        self.hybrid = bool(hybrid)
        if len(weights) != 2 or any(not isinstance(w, (int, float)) or w < 0 for w in weights) or not any(weights):
            raise ValueError(f"weights must be two non-negative numbers (dense, bm25), not both 0, not {weights!r}")
        self.weights = (float(weights[0]), float(weights[1]))
        if not isinstance(search_prefix, bool):
            raise TypeError(f"search_prefix must be True or False, not {search_prefix!r}")
        self.search_prefix = search_prefix
        self.encoder_variant = encoder_variant
        self._encoder = encoder
        # how a saved index's encoder is made again (the manifest's "encoder"); None: the default model
        self._encoder_config: dict[str, Any] | None = None
        self.tokenizer = encoder.tokenizer if encoder is not None else Tokenizer.default()
        self._dim = encoder.dim if encoder is not None else None
        self._docs: list[_Doc | None] = []  # by native slot (a deleted document's is reused)
        self._slot_of: dict[str, int] = {}  # in insertion order
        self._added = 0  # documents ever added (the next default id's number)
        self._label_slot = np.zeros(0, np.int64)
        self._next_label = 0
        self._graph: Graph | None = None
        # each label's unit vector, int8 with a scale per row (hnswlib's get_items is slow)
        self._vectors = np.zeros((0, 0), np.int8)
        self._scales = np.zeros(0, np.float32)
        self._leaves = 0
        self._bm25 = BM25()
        self._label_passage = np.zeros(0, np.int64)
        self._passage_labels: dict[int, np.ndarray] = {}
        self._expander = scratch_expander(self.tokenizer)
        self._with_metadata = False  # payloads carry metadata once a document has some
        self._layouts: dict[str, LeafLayout] = {}  # documents' leaves for spread, read on first use
        # readers (search, expand, query, save, ...) see one version: add/delete write alone
        self._lock = RWLock()

    @classmethod
    def build(cls, docs: Iterable[str | Mapping[str, Any]], encoder: Encoder | None = None, **options: Any) -> Index:
        """A new index of ``docs`` (see :meth:`add`); ``options`` as for :class:`Index`.

        >>> Index.build(["One doc. Two sentences."]).search("doc", k=1)[0].text  # doctest: +SKIP
        'One doc.'
        """
        index = cls(encoder, **options)
        index.add(docs)
        return index

    # -- documents ---------------------------------------------------------

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
                raise ValueError(f"the default encoder has dim {self._encoder.dim}, the index {self._dim}")
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

        >>> index.tree("a.md").headings  # doctest: +SKIP
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

        >>> [h.text for h in index.leaves("a.md")]  # doctest: +SKIP
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

        >>> index.add([{"id": "guide.md", "text": "# Guide\\n\\nRun it.", "source": "docs"}])  # doctest: +SKIP
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
                raise ValueError(f"document id {taken[0]!r} is already in the index (added meanwhile)")
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

        >>> index.delete("guide.md")  # doctest: +SKIP
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
            raise TypeError("docs must be an iterable of documents, not a single document")
        out, seen = [], set()
        for i, doc in enumerate(docs):
            if isinstance(doc, str):
                doc = {"text": doc}
            if not isinstance(doc, Mapping):
                raise TypeError(f"docs[{i}] must be a str or a mapping with 'text', not {type(doc).__name__}")
            text = doc.get("text")
            if not isinstance(text, str):
                raise TypeError(f"docs[{i}]['text'] must be a str, not {type(text).__name__}")
            if "id" in doc and "doc_id" in doc and doc["id"] != doc["doc_id"]:
                raise ValueError(f"docs[{i}] has both 'id' ({doc['id']!r}) and 'doc_id' ({doc['doc_id']!r}): give one")
            doc_id = doc.get("doc_id", doc.get("id", f"doc-{self._added + i}"))
            source = doc.get("source", "")
            if not isinstance(doc_id, str) or not isinstance(source, str):
                raise TypeError(f"docs[{i}]: 'id' (or 'doc_id') and 'source' must be str")
            for name, value in (("id", doc_id), ("source", source), ("text", text)):
                if not is_unicode(value):
                    raise ValueError(f"docs[{i}][{name!r}] holds a lone surrogate (not valid Unicode)")
            if doc_id in self._slot_of or doc_id in seen:
                raise ValueError(f"docs[{i}]: document id {doc_id!r} is already in the index (delete it first)")
            seen.add(doc_id)
            given = doc.get("syntax", self._syntax(doc_id))
            syntax = syntax_named(given)
            if syntax is None and given is not None:
                raise ValueError(f"docs[{i}]['syntax'] must be 'markdown', 'rst', 'asciidoc' or None, not {given!r}")
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
        """Keeps an int8 copy of the leaves' unit vectors, one scale per row (rescoring
        candidates reads them; cosines within ~0.005 of float32)."""
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

    def _cosines(self, labels: np.ndarray | list[int], vector: np.ndarray) -> np.ndarray:
        """Cosines of the leaves ``labels`` with the unit ``vector``, from the int8 copy."""
        return int8_cosines(self._vectors[labels], self._scales[labels], vector)

    # -- search ------------------------------------------------------------

    @reads
    def search(
        self,
        query: str,
        k: int = 12,
        *,
        doc_id: str | Collection[str] | None = None,
        source: str | Collection[str] | None = None,
        heading_prefix: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        hybrid: bool | None = None,
        filter: Filter | None = None,
    ) -> list[Hit]:
        """The ``k`` best leaves for ``query``, best first; optionally only of the
        given documents or sources, or of sections whose heading path starts with
        ``heading_prefix``, or of documents whose metadata ``where`` accepts (``{field:
        value}``, or ``{field: [values]}`` for any of them; every field must match), and
        of those ``filter`` passes: every filter narrows (:mod:`chunkforge.index.filters`).
        ``hybrid`` overrides the index's setting.

        Dense only, a hit's ``score`` is its cosine. Hybrid, the candidates are the
        nearest leaves and the leaves of the parents BM25 ranks best, and a leaf scores
        ``w_dense * cos / best_cos + w_bm25 * bm25(its parent) / best_bm25``, so a leaf
        close to the question in a passage that shares its rare words comes first.

        >>> [h.doc_id for h in index.search("install", k=3, heading_prefix=("Guide",))]  # doctest: +SKIP
        ['guide.md', 'guide.md', 'guide.md']
        """
        return self._search(query, k, filter_of(filter, doc_id, source, where, heading_prefix), hybrid)[0]

    def _search(self, query: str, k: int, passes: Filter, hybrid: bool | None) -> tuple[list[Hit], np.ndarray | None]:
        """:meth:`search`'s hits, and the question's vector (None when nothing was searched)."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, not {type(query).__name__}")
        k = check_int("k", k, 1)
        if self.leaf_count == 0 or passes.nothing:
            return [], None
        allowed = self._allowed(passes)
        vector = self.encoder.embed_query(query)
        if not (self.hybrid if hybrid is None else hybrid):
            best = self._dense(vector, k, allowed)
        else:
            best = self._fused(query, vector, max(k, DENSE_POOL), allowed)[:k]
        return self._hits([label for label, _ in best], [score for _, score in best]), vector

    def _fused(self, query: str, vector: np.ndarray, pool: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """``(label, score)`` of the candidate leaves, best first: the ``pool`` nearest leaves
        and the leaves of the ``BM25_POOL`` best parents, each scored
        ``w_dense * cos / best cos + w_bm25 * bm25(parent) / best bm25``."""
        finish_dense = self._dense_started(vector, pool, allowed)  # helpers search while BM25 scores here
        try:
            bm25 = self._bm25.scores(query)
        finally:  # the helpers are done before the read lock is let go, even when BM25 raised
            dense = dict(finish_dense())
        if allowed is not None:  # parents of allowed leaves only (a parent lies in one section)
            bm25 = np.where(self._passage_mask(allowed), bm25, 0.0)
        top = np.argpartition(-bm25, BM25_POOL)[:BM25_POOL] if len(bm25) > BM25_POOL else np.arange(len(bm25))
        extra = [
            label
            for p in top[bm25[top] > 0].tolist()
            for label in self._passage_labels[p].tolist()
            if label not in dense and (allowed is None or allowed[label])
        ]
        if extra:
            dense.update(zip(extra, self._cosines(extra, vector).astype(np.float64).tolist()))
        if not dense:
            return []
        labels = np.fromiter(dense, np.int64, len(dense))
        cos = np.fromiter(dense.values(), np.float64, len(dense))
        order, fused = fuse(cos, bm25[self._label_passage[labels]], self.weights, labels)
        return list(zip(labels[order].tolist(), fused[order].tolist()))

    def _passage_mask(self, allowed: np.ndarray) -> np.ndarray:
        mask = np.zeros(self._bm25.size, bool)
        mask[self._label_passage[np.flatnonzero(allowed)]] = True
        return mask

    def _hits(self, labels: Sequence[int], scores: Sequence[float]) -> list[Hit]:
        """Hits of leaves ``labels`` with ``scores`` (made natively: ~1 us a hit)."""
        return self._expander.hits(labels, scores, len(self.parent_tokens) + 1)

    def _allowed(self, passes: Filter) -> np.ndarray | None:
        """A boolean mask over labels, or None for no filter."""
        if passes.everything:
            return None
        mask = np.zeros(len(self._label_slot), bool)
        ids = passes.doc_ids
        docs = (self._docs[self._slot_of[i]] for i in ids if i in self._slot_of) if ids is not None else self._docs
        prefix = passes.heading_prefix
        for doc in docs:
            if doc is None or not passes.admits(doc.doc_id, doc.metadata):
                continue
            if prefix is None:
                mask[doc.labels] = True
                continue
            mask[doc.labels[self._expander.leaves_under(self._slot_of[doc.doc_id], list(prefix))]] = True
        return mask

    def _dense(self, vector: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """``(label, cosine)`` of the ``k`` nearest leaves (exact, from the int8 copy of the vectors, when filtered to a few)."""
        return self._dense_started(vector, k, allowed)()

    def _dense_started(
        self, vector: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`_dense` as a function that finishes it: unfiltered, the graphs other than the
        first are searched on helper threads meanwhile (:meth:`Graph.start`)."""
        graph = self._graph
        if allowed is None:
            return list if graph is None else graph.start(vector, k)
        labels = np.flatnonzero(allowed)
        if len(labels) == 0:
            return list
        if len(labels) <= EXACT_MAX:
            ids, sims = top_k(self._cosines(labels, vector).astype(np.float64), k)
            best = [(int(labels[i]), float(s)) for i, s in zip(ids, sims)]
            return lambda: best
        if graph is None:
            return list
        return lambda: graph.search(vector, k, lambda label: bool(allowed[label]))

    # -- expansion ---------------------------------------------------------

    def expand(
        self,
        hits: Iterable[Hit] | Sequence[tuple[str, int, int, float]],
        options: ExpandOptions | None = None,
        /,
        *,
        filter: Filter | None = None,
        **given: Any,
    ) -> Payload:
        """Hits -> passages (native code, microseconds), as ``options`` say, with the options
        ``given`` by name (:class:`~chunkforge.index.options.ExpandOptions`: ``window``,
        ``window_tokens``, ``parent``, ``auto_merge``, ``spread``, ``budget_tokens``, ``order``,
        ``pack``, ``trim``, ``max_chars``). ``hits`` may also be a list of spans
        ``(doc_id, start, end, score)`` found elsewhere (see :meth:`hits_for`). A hit names a
        leaf by its document and span, which must be a leaf of a document ``filter`` passes
        (ValueError naming the hit, whether the document is missing or filtered out): the
        rest of the hit (its label, text) is read from the index, not trusted.

        ``spread=decay`` first decides from the hits alone what deserves the budget: each
        hit lends the leaves up to 4 away in its section ``decay**d`` of its relevance (its
        score rescaled between the weakest and the best hit), a leaf's utility is the
        noisy-or of what it has, and the leaves go on in utility order (a passage's score
        is then its best utility). A lone strong hit goes bare, the leaves around a cluster
        of hits beat the weaker hits, a run of hits fills its parent (native code, as the
        expansion: :meth:`chunkforge._native.Expander.spread`).

        ``auto_merge=ratio`` replaces the hit leaves of a parent by the parent when
        more than ``ratio`` of its children are hit, recursively up to sections
        (LlamaIndex's AutoMergingRetriever; the parent scores the mean of its
        children); ``parent=True`` replaces each remaining leaf by its parent;
        ``window=w`` widens each remaining leaf by ``w`` sentences either side,
        within its section; ``window_tokens=n`` then grows it by whole sentences,
        alternately before and after, within its section, while it stays within
        ``n`` tokens (a leaf already over ``n`` stays as it is). Spans of one document that overlap or touch become one
        passage (best score). With ``budget_tokens`` each hit's expansion is taken
        in score order (exact token counts): merged with the passages already taken
        that it overlaps or touches when the merged passage still fits, else alone,
        clipped to what they do not cover, when that fits; else ``pack="skip"``
        skips it, ``"stop"`` stops there, ``trim=True`` cuts it to whole sentences
        around its best hit and stops. So the best hit is sent whenever its own
        expansion fits the budget. Hits left out are in ``dropped``. ``order="document"`` groups passages by document (documents by
        their best passage) in text order. The payload holds at most ``max_chars`` characters,
        and 32 per token of ``budget_tokens`` (a word the tokenizer cannot split is one token
        however long). It takes no lock of the index: the
        expander's own keeps its documents whole while it reads them, so expanding
        waits for a writer's part in the expander only, not for its graph updates.

        >>> payload = index.expand(index.search("install"), window=2, budget_tokens=500)  # doctest: +SKIP
        >>> print(payload.render())  # doctest: +SKIP
        """
        chosen = ExpandOptions.of(options, **given)
        if are_spans(hits):
            found = self.hits_for(cast("Sequence[tuple[str, int, int, float]]", hits), filter=filter)
        else:
            passes = filter or Filter()

            def layout_of(doc_id: str) -> LeafLayout | None:
                slot = self._slot_of.get(doc_id)
                doc = self._docs[slot] if slot is not None else None
                return None if doc is None or not passes.admits(doc_id, doc.metadata) else self._layout(doc_id)

            found = self._hits(*leaf_labels(cast("Iterable[Hit]", hits), layout_of))
        return self._expand(found, chosen)

    def _expand(self, hits: list[Hit], options: ExpandOptions) -> Payload:
        """:meth:`expand` of hits this index made (checked)."""
        return expansion.expand(
            self._expander,
            hits,
            self._metadata_of if self._with_metadata else None,
            len(self.parent_tokens) + 1,
            options,
        )

    @reads
    def hits_for(self, spans: Iterable[tuple[str, int, int, float]], *, filter: Filter | None = None) -> list[Hit]:
        """Hits of the leaves that spans found elsewhere overlap (``(doc_id, start, end, score)``,
        ``str`` offsets of this index's documents: a team's own vector store, a re-ranker), each
        leaf once with the best score of its spans, best first: "index small, send big" beside
        another store. :meth:`expand` takes such spans directly too. A span of a document that
        is not there, or that ``filter`` excludes, is a KeyError naming it.

        >>> index.expand([("guide.md", 120, 180, 0.9)], window=1)  # doctest: +SKIP
        """
        best: dict[int, float] = {}
        passes = filter or Filter()
        for i, (doc_id, start, end, score) in enumerate(checked_spans(spans)):
            slot = self._slot_of.get(doc_id)
            doc = self._docs[slot] if slot is not None else None
            if doc is None or not passes.admits(doc_id, doc.metadata):
                raise KeyError(f"spans[{i}]: no document {doc_id!r} in the index")
            if end > len(doc.text):
                raise ValueError(f"spans[{i}]: {start}-{end} is not a span of {doc_id!r} (0-{len(doc.text)})")
            nodes, leaves, _, _ = self._expander.tree(self._slot_of[doc_id])
            for label in doc.labels[overlapping(nodes[leaves, 0], nodes[leaves, 1], start, end)].tolist():
                best[label] = max(best.get(label, float("-inf")), score)
        ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
        return self._hits([label for label, _ in ranked], [score for _, score in ranked])

    def _layout(self, doc_id: str) -> LeafLayout:
        """A document's leaves (labels, starts, sections), kept after first use."""
        layout = self._layouts.get(doc_id)
        if layout is None:
            nodes, leaves, _, _ = self._expander.tree(self._slot_of[doc_id])
            layout = LeafLayout(self._doc(doc_id).labels, nodes[leaves, 0], nodes[leaves, 3], nodes[leaves, 1])
            self._layouts[doc_id] = layout
        return layout

    def _metadata_of(self, passages: list[Passage]) -> dict[str, dict[str, Any]]:
        """The metadata of the passages' documents, by id (read without the index's lock: a
        document deleted meanwhile has none)."""
        out = {}
        for p in passages:
            slot = self._slot_of.get(p.doc_id)
            doc = self._docs[slot] if slot is not None and slot < len(self._docs) else None
            out[p.doc_id] = doc.metadata if doc is not None else {}
        return out

    def metadata(self, doc_id: str) -> dict[str, Any]:
        """A document's metadata: its record's fields but ``id`` and ``text``.

        >>> index.metadata("guide.md")["url"]  # doctest: +SKIP
        'https://example.org/guide'
        """
        return self._doc(doc_id).metadata

    @reads
    def query(
        self,
        question: str,
        k: int = RECOMMENDED["k"],
        *,
        doc_id: str | Collection[str] | None = None,
        source: str | Collection[str] | None = None,
        heading_prefix: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        hybrid: bool | None = None,
        filter: Filter | None = None,
        options: ExpandOptions | None = None,
        floor: float | None = RECOMMENDED["floor"],
        **given: Any,
    ) -> Payload:
        """:meth:`search` (its filters) then :meth:`expand` (``options`` and the options ``given``),
        ``budget_tokens`` 1,000 and ``spread`` 0.5 unless given (or another way of widening the
        hits is): each hit lends the leaves near it in its section ``0.5**distance`` of its
        relevance, leaves in that order while the budget lasts (touching leaves become one
        passage). On the held-back half of the dev set, with the search prefix, that beat plain
        chunks ranked by BM25, dense or both at 500 and 1,000 tokens, and the bare hits by the
        defaults rule (ahead on evidence over 60 tokens and on rules at 500, behind nowhere:
        ``benches/results/retrieval-buckets.md``); ``spread=None`` sends the bare hits.

        ``floor``: when the best cosine of the question with a hit leaf is under it, the payload
        is empty and says so (``abstained``; the hits in ``dropped``): the question is taken to
        have no answer here (:func:`~chunkforge.index.expansion.abstains`). Off by default; the
        curve to choose one is in ``benches/results/retrieval-defaults.md``.

        >>> index.query("how do I install it?").render()  # doctest: +SKIP
        """
        checked = expansion.check_floor(floor)
        options = ExpandOptions.recommended(options, **given)
        passes = filter_of(filter, doc_id, source, where, heading_prefix)
        hits, vector = self._search(question, k, passes, hybrid)
        if checked is not None:
            best = None if vector is None or not hits else float(self._cosines([h.leaf for h in hits], vector).max())
            if expansion.abstains(best, checked):
                return Payload([], hits, {}, abstained=True)
        return self._expand(hits, options)

    # -- persistence -------------------------------------------------------

    @reads
    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the index to the folder ``path`` atomically: the new version goes
        to a subfolder, then the ``CURRENT`` pointer is replaced in one rename, so a
        process killed while saving leaves the old index or the new one.

        >>> index.save("my-index")  # doctest: +SKIP
        """
        persist.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], encoder: Encoder | None = None) -> Index:
        """Reads an index written by :meth:`save`; the encoder is loaded on first
        use unless given. A missing, foreign or corrupt index raises ``ValueError``
        naming the file.

        >>> index = Index.load("my-index")  # doctest: +SKIP
        """
        return cast("Index", persist.load(cls, path, encoder))

    @classmethod
    def open(cls, uri: str | os.PathLike[str], encoder: Encoder | None = None, **options: Any) -> StoreIndex:
        """The index in the LanceDB store at ``uri`` (:func:`chunkforge.index.store.write_store`,
        ``embed-docs --index --lancedb URI``): the same ``search`` / ``expand`` / ``query``, the
        documents read on demand, so a process's memory does not grow with the corpus.

        >>> Index.open("store.lancedb").query("how do I install it?").render()  # doctest: +SKIP
        """
        from .store import StoreIndex

        return StoreIndex(uri, encoder, **options)

    @classmethod
    def from_dataset(
        cls, path: str | os.PathLike[str], encoder: Encoder | None = None, *, threads: int | None = None
    ) -> Index:
        """An index of the bulk job's output (``chunkforge embed-docs --index``, ``units="tree"``):
        the documents' trees and the leaves' vectors as the job wrote them, nothing cut or embedded
        again. ``encoder`` embeds the questions (default: the job's model, when it was the default
        one). ``threads`` above the number of graphs (2) lets hnswlib insert with that many threads
        in all, faster on a large machine but no longer the same graph on every build.

        >>> index = Index.from_dataset("vectors")  # doctest: +SKIP
        >>> index.query("how do I install it?").render()  # doctest: +SKIP
        """
        return cast("Index", persist.from_dataset(cls, path, encoder, threads=threads))

    def _add_saved(self, docs: dict[str, list[Any]], saved: list[persist.Saved]) -> None:
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

    def __repr__(self) -> str:
        return (
            f"Index({len(self)} documents, {self.leaf_count} leaves, leaf_tokens={self.leaf_tokens}, "
            f"parent_tokens={self.parent_tokens}, hybrid={self.hybrid}, search_prefix={self.search_prefix})"
        )


def _tree(record: _Record, native: Any) -> _Tree:
    doc_id, source, text, _, metadata = record
    return _Tree(doc_id, source, text, metadata, native, native.headings, *passages(native.nodes, native.leaves))


def _split(ids: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """``ids[bounds[i]:bounds[i + 1]]`` for each ``i``."""
    return [ids[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
