"""A tree of chunks: big parents to return, small leaves to embed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import _native
from .._checks import check_int
from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import _as_list, as_tokenizer
from ._base import BatchSpans, Spans, batch_spans_of, rebuild, spans_of
from .recursive import RecursiveChunker


def node_id(doc_id: str, start: int, end: int, level: int) -> str:
    """The stable id of a tree node: a 16-hex-digit digest of document id, span and level
    (8-byte BLAKE2b of ``f"{doc_id}\\0{start}\\0{end}\\0{level}"`` in UTF-8, computed natively,
    where the index makes its hits' ids too).

    >>> node_id("guide.md", 0, 120, 1)
    '3e4ee5fb70e478c2'
    """
    return _native.node_id(doc_id, start, end, level)


class HierarchicalChunker:
    """Chunks a document into a tree: level 0 with the ``base`` chunker at
    ``levels[0]`` tokens, then each chunk of level ``k`` again (its own text) at
    ``levels[k + 1]``. Children lie inside their parent and tile it (no
    overlap, every non-whitespace character covered); a parent that already fits
    the next level gets one child with its span, so every leaf is at the last
    level. Ids are :func:`node_id` digests of ``doc_id``, span and level.

    ``base`` is a chunker class or a factory ``(tokenizer, max_tokens) -> chunker``
    (default :class:`RecursiveChunker`); its chunks must not overlap.

    >>> text = "One sentence here. Another one follows it.\\n\\nA second paragraph."
    >>> tree = HierarchicalChunker(levels=(16, 6)).chunk(text, doc_id="notes.txt")
    >>> [(c.level, c.index, c.text) for c in tree]  # doctest: +NORMALIZE_WHITESPACE
    [(0, 0, 'One sentence here. Another one follows it.\\n\\nA second paragraph.'),
     (1, 0, 'One sentence here.'), (1, 1, 'Another one follows it.'), (1, 2, 'A second paragraph.')]
    >>> tree[1].parent_id == tree[0].id and tree[0].children == tuple(c.id for c in tree[1:])
    True
    """

    def __init__(
        self,
        tokenizer: Any = None,
        levels: Sequence[int] = (2048, 512, 128),
        *,
        base: Callable[..., Any] | None = None,
    ) -> None:
        self.tokenizer = as_tokenizer(tokenizer)
        if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
            raise ArgumentTypeError(f"must be a non-empty sequence of ints, not {levels!r}", param="levels")
        self.levels = tuple(check_int(f"levels[{i}]", n, 1) for i, n in enumerate(levels))
        if any(a <= b for a, b in zip(self.levels, self.levels[1:])):
            raise ArgumentError(f"must be strictly decreasing, got {self.levels}", param="levels")
        if base is not None and not callable(base):
            raise ArgumentTypeError(
                f"must be a chunker class or a factory (tokenizer, max_tokens), not {base!r}", param="base"
            )
        self.base = base
        factory = base or RecursiveChunker
        self._chunkers = [
            factory(self.tokenizer, max_tokens=n) if isinstance(factory, type) else factory(self.tokenizer, n)
            for n in self.levels
        ]
        for chunker in self._chunkers:
            if not callable(getattr(chunker, "chunk", None)):
                raise ArgumentTypeError(f"must make chunkers (with a chunk method), got {chunker!r}", param="base")

    def chunk_batch(
        self, texts: Iterable[str], threads: int | None = None, doc_ids: Sequence[str] | None = None
    ) -> list[list[Chunk]]:
        """:meth:`chunk` for many documents (``doc_ids[i]`` for ``texts[i]``)."""
        texts = _as_list(texts)
        ids = [""] * len(texts) if doc_ids is None else list(doc_ids)
        if len(ids) != len(texts):
            raise ArgumentError(f"must hold one id per text: {len(ids)} for {len(texts)} texts", param="doc_ids")
        return ChunkBatch(self.chunk(t, i) for t, i in zip(texts, ids))

    def spans(self, text: str) -> Spans:
        """Every node's span as numpy columns (the order of :meth:`chunk`)."""
        return spans_of(self.chunk(text))

    def spans_batch(self, texts: Iterable[str], threads: int | None = None) -> BatchSpans:
        """Every node's span of many documents as numpy columns."""
        return batch_spans_of(self.chunk_batch(texts))

    def chunk(self, text: str, doc_id: str = "") -> list[Chunk]:
        """All nodes of the tree, each parent before its children, in document
        order; ``index`` is a node's position among the nodes of its level."""
        if not isinstance(doc_id, str):
            raise ArgumentTypeError(f"must be a str, not {type(doc_id).__name__}", param="doc_id")
        nodes: list[Chunk] = []
        counts = [0] * len(self.levels)

        def visit(chunk: Chunk, level: int, parent_id: str | None) -> str:
            id = node_id(doc_id, chunk.start, chunk.end, level)
            index, counts[level] = counts[level], counts[level] + 1
            at = len(nodes)
            nodes.append(chunk)  # its place, filled once its children's ids are known
            children = tuple(visit(c, level + 1, id) for c in self._children(chunk, level + 1))
            nodes[at] = dataclasses.replace(
                chunk, index=index, id=id, parent_id=parent_id, level=level, children=children
            )
            return id

        for chunk in self._chunkers[0].chunk(text):
            visit(chunk, 0, None)
        return Chunks(nodes)

    __call__ = chunk

    def leaves(self, text: str, doc_id: str = "") -> list[Chunk]:
        """The nodes of the last level (what gets embedded), in document order."""
        return [c for c in self.chunk(text, doc_id) if c.level == len(self.levels) - 1]

    def parents(self, text: str, doc_id: str = "") -> list[Chunk]:
        """The nodes above the last level (what can be returned), parents first."""
        return [c for c in self.chunk(text, doc_id) if c.level != len(self.levels) - 1]

    def _children(self, parent: Chunk, level: int) -> list[Chunk]:
        """The chunks of ``parent`` at ``level`` (none below the last level)."""
        if level == len(self.levels):
            return []
        if parent.token_count <= self.levels[level]:
            return [parent]
        children = [
            dataclasses.replace(c, start=parent.start + c.start, end=parent.start + c.end)
            for c in self._chunkers[level].chunk(parent.text)
        ]
        for a, b in zip(children, children[1:]):
            if b.start < a.end:
                raise ArgumentError(
                    f"chunker {self._chunkers[level]!r} made overlapping chunks; use overlap=0", param="base"
                )
        return children

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its parameters (``base`` must be picklable: a class or a module-level function)."""
        return (rebuild, (HierarchicalChunker, {"tokenizer": self.tokenizer, "levels": self.levels, "base": self.base}))

    def __repr__(self) -> str:
        return f"HierarchicalChunker(tokenizer={self.tokenizer!r}, levels={self.levels!r}, base={self.base!r})"
