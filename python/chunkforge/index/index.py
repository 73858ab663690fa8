"""The :class:`Index`: documents cut into trees (native code), leaves embedded into HNSW graphs
(:class:`~chunkforge.index.graph.Graph`), BM25 over their parents, fused search, and expansion
into payloads. Its documents (:mod:`~chunkforge.index.documents`), its search
(:mod:`~chunkforge.index.ranking`) and its files (:mod:`~chunkforge.index.persist`) are modules
of their own; this one holds its settings, expansion and ``query``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._checks import check_int
from .._recommended import RECOMMENDED
from .._rwlock import RWLock, reads
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import Tokenizer
from . import expansion
from .bm25 import BM25
from .expansion import LeafLayout, leaf_labels
from .filters import Filter
from .options import ExpandOptions, SearchOptions, spells_search_keywords
from .payload import Hit, Passage, Payload
from .trees import are_spans, checked_spans, overlapping, scratch_expander

if TYPE_CHECKING:
    from ..encoder import Encoder
    from .store import StoreIndex

INDEX_EXTRA = 'pip install "chunkforge[index]"'
try:
    from . import persist
    from .ranking import Ranking
except ImportError as exc:
    raise ImportError(f"chunkforge.Index needs hnswlib and pyarrow ({INDEX_EXTRA})") from exc


class Index(Ranking):
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

    >>> index = Index(leaf_tokens=48, parent_tokens=(256,))
    >>> index.add(["First document. Two sentences.", {"id": "b", "text": "Another."}])
    >>> len(index), index.doc_ids
    (2, ['doc-0', 'b'])
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
            raise ArgumentTypeError(f"must be a sequence of ints, not {parent_tokens!r}", param="parent_tokens")
        self.parent_tokens = tuple(check_int(f"parent_tokens[{i}]", n, 1) for i, n in enumerate(parent_tokens))
        sizes = (*self.parent_tokens, self.leaf_tokens)
        if any(a <= b for a, b in zip(sizes, sizes[1:])):
            raise ArgumentError(f"must be decreasing and larger than leaf_tokens, got {sizes}", param="parent_tokens")
        if structure not in (None, "auto", "markdown", "rst", "asciidoc"):
            raise ArgumentError(
                f"must be 'auto', 'markdown', 'rst', 'asciidoc' or None, not {structure!r}", param="structure"
            )
        self.structure = structure
        self.hybrid = bool(hybrid)
        if len(weights) != 2 or any(not isinstance(w, (int, float)) or w < 0 for w in weights) or not any(weights):
            raise ArgumentError(
                f"must be two non-negative numbers (dense, bm25), not both 0, not {weights!r}", param="weights"
            )
        self.weights = (float(weights[0]), float(weights[1]))
        if not isinstance(search_prefix, bool):
            raise ArgumentTypeError(f"must be True or False, not {search_prefix!r}", param="search_prefix")
        self.search_prefix = search_prefix
        self.encoder_variant = encoder_variant
        self._encoder = encoder
        # how a saved index's encoder is made again (the manifest's "encoder"); None: the default model
        self._encoder_config = None
        self.tokenizer = encoder.tokenizer if encoder is not None else Tokenizer.default()
        self._dim = encoder.dim if encoder is not None else None
        self._docs = []  # by native slot (a deleted document's is reused)
        self._slot_of = {}  # in insertion order
        self._added = 0  # documents ever added (the next default id's number)
        self._label_slot = np.zeros(0, np.int64)
        self._next_label = 0
        self._graph = None
        # each label's unit vector, int8 with a scale per row (hnswlib's get_items is slow)
        self._vectors = np.zeros((0, 0), np.int8)
        self._scales = np.zeros(0, np.float32)
        self._leaves = 0
        self._bm25 = BM25()
        self._label_passage = np.zeros(0, np.int64)
        self._passage_labels = {}
        self._expander = scratch_expander(self.tokenizer)
        self._with_metadata = False  # payloads carry metadata once a document has some
        self._layouts = {}  # documents' leaves for spread, read on first use
        # readers (search, expand, query, save, ...) see one version: add/delete write alone
        self._lock = RWLock()

    @classmethod
    def build(cls, docs: Iterable[str | Mapping[str, Any]], encoder: Encoder | None = None, **options: Any) -> Index:
        """A new index of ``docs`` (see :meth:`add`); ``options`` as for :class:`Index`.

        >>> Index.build(["One doc. Two sentences."]).search("doc", k=1)[0].text
        'One doc.'
        """
        index = cls(encoder, **options)
        index.add(docs)
        return index

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
        expansion: the native expander's ``spread``).

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

        >>> guide = "# Guide\\n\\nInstall it with pip. Then run it. It prints a report.\\n\\n# Notes\\n\\nNothing else."
        >>> index = Index.build([{"id": "guide.md", "text": guide}])
        >>> payload = index.expand(index.search("install", k=1), window=1, budget_tokens=500)
        >>> print(payload.render())
        [1] guide.md:0-42 (Guide)
        # Guide
        <BLANKLINE>
        Install it with pip. Then run it.
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

        >>> guide = "# Guide\\n\\nInstall it with pip. Then run it. It prints a report.\\n\\n# Notes\\n\\nNothing else."
        >>> index = Index.build([{"id": "guide.md", "text": guide}])
        >>> [h.text for h in index.hits_for([("guide.md", 10, 30, 0.9)])]
        ['Install it with pip.']
        >>> index.expand([("guide.md", 10, 30, 0.9)], window=1).passages[0].text
        '# Guide\\n\\nInstall it with pip. Then run it.'
        """
        best: dict[int, float] = {}
        passes = filter or Filter()
        for i, (doc_id, start, end, score) in enumerate(checked_spans(spans)):
            slot = self._slot_of.get(doc_id)
            doc = self._docs[slot] if slot is not None else None
            if doc is None or not passes.admits(doc_id, doc.metadata):
                raise KeyError(f"spans[{i}]: no document {doc_id!r} in the index")
            if end > len(doc.text):
                raise ArgumentError(
                    f"[{i}]: {start}-{end} is not a span of {doc_id!r} (0-{len(doc.text)})", param="spans"
                )
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

    @spells_search_keywords
    @reads
    def query(
        self,
        question: str,
        k: int = RECOMMENDED["k"],
        *,
        options: ExpandOptions | None = None,
        floor: float | None = RECOMMENDED["floor"],
        **given: Any,
    ) -> Payload:
        """:meth:`search` (its keywords, ``given`` by name) then :meth:`expand` (``options`` and the
        expansion options ``given``),
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

        >>> guide = "# Guide\\n\\nInstall it with pip. Then run it. It prints a report.\\n\\n# Notes\\n\\nNothing else."
        >>> index = Index.build([{"id": "guide.md", "text": guide}])
        >>> print(index.query("how do I install it?", budget_tokens=20).render())
        [1] guide.md:0-62 (Guide)
        # Guide
        <BLANKLINE>
        Install it with pip. Then run it. It prints a report.
        <BLANKLINE>
        [2] guide.md:73-86 (Notes)
        Nothing else.
        """
        checked = expansion.check_floor(floor)
        search, given = SearchOptions.taken(k, given)
        options = ExpandOptions.recommended(options, **given)
        hits, vector = self._search(question, search)
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

        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> Index.build(["One doc. Two sentences."]).save(folder.name)
        >>> Index.load(folder.name).leaf_count
        2
        >>> folder.cleanup()
        """
        persist.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], encoder: Encoder | None = None) -> Index:
        """Reads an index written by :meth:`save`; the encoder is loaded on first
        use unless given. A missing, foreign or corrupt index raises ``ValueError``
        naming the file.

        >>> import tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> Index.build([{"id": "a.md", "text": "Cats purr."}]).save(folder.name)
        >>> Index.load(folder.name).doc_ids
        ['a.md']
        >>> folder.cleanup()
        """
        return cast("Index", persist.load(cls, path, encoder))

    @classmethod
    def open(cls, uri: str | os.PathLike[str], encoder: Encoder | None = None, **options: Any) -> StoreIndex:
        """The index in the LanceDB store at ``uri`` (:func:`chunkforge.index.store.write_store`,
        ``embed-docs --index --lancedb URI``): the same ``search`` / ``expand`` / ``query``, the
        documents read on demand, so a process's memory does not grow with the corpus.

        >>> import tempfile
        >>> from chunkforge import bulk
        >>> folder = tempfile.TemporaryDirectory()
        >>> store = f"{folder.name}/store.lancedb"
        >>> _ = bulk.run(["docs/how-it-works.md"], f"{folder.name}/out", units="tree", lancedb=store, progress=False)
        >>> Index.open(store).query("how are offsets computed?", budget_tokens=60).passages[0].doc_id
        'docs/how-it-works.md'
        >>> folder.cleanup()
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

        >>> import tempfile
        >>> from chunkforge import bulk
        >>> folder = tempfile.TemporaryDirectory()
        >>> _ = bulk.run(["docs/how-it-works.md"], folder.name, units="tree", progress=False)
        >>> index = Index.from_dataset(folder.name)
        >>> index.doc_ids, index.query("how are offsets computed?", budget_tokens=60).passages[0].doc_id
        (['docs/how-it-works.md'], 'docs/how-it-works.md')
        >>> folder.cleanup()
        """
        return cast("Index", persist.from_dataset(cls, path, encoder, threads=threads))

    def __repr__(self) -> str:
        return (
            f"Index({len(self)} documents, {self.leaf_count} leaves, leaf_tokens={self.leaf_tokens}, "
            f"parent_tokens={self.parent_tokens}, hybrid={self.hybrid}, search_prefix={self.search_prefix})"
        )
