"""What an index hands back: hits (retrieved leaves), passages and payloads
(what the generator receives), and a document's tree as stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..readers.document import PROVENANCE, Citation, cite


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved leaf: its document, ``str`` span and text, its section's
    heading path, its fused (hybrid) or cosine (dense) ``score``, its stable
    ``id`` and its ``leaf`` label in the index."""

    doc_id: str
    start: int
    end: int
    score: float
    text: str
    heading_path: tuple[str, ...]
    id: str
    leaf: int


class Passage(NamedTuple):
    """A span of one document to hand the generator: ``token_count`` is the exact
    size of its ``text``, ``score`` the best of the ``hits`` it covers. A named tuple
    made by native code; ``document`` is the text of the document from code point
    ``document_start`` on (shared, not copied: the whole text, or the passage's
    section where a store read only that), ``text`` is sliced from it when read.

    >>> p = Passage("a.md", 0, 5, 1, 1.0, ("Intro",), (), "Hello, world")
    >>> p.text, p
    ('Hello', Passage(doc_id='a.md', start=0, end=5, token_count=1, score=1.0, heading_path=('Intro',), hits=0, text='Hello'))
    """

    doc_id: str
    start: int
    end: int
    token_count: int
    score: float
    heading_path: tuple[str, ...]
    hits: tuple[Hit, ...]
    document: str
    document_start: int = 0

    @property
    def text(self) -> str:
        """The passage's text: the document's ``[start:end]``."""
        return self.document[self.start - self.document_start : self.end - self.document_start]

    def __repr__(self) -> str:
        text = self.text if self.end - self.start <= 60 else self.text[:57] + "..."
        return (
            f"Passage(doc_id={self.doc_id!r}, start={self.start}, end={self.end}, token_count={self.token_count}, "
            f"score={self.score!r}, heading_path={self.heading_path!r}, hits={len(self.hits)}, text={text!r})"
        )


class DocumentTree(NamedTuple):
    """A document's tree in an index: ``nodes`` ``(m, 5)`` rows ``(start, end, parent
    or -1, section, level)`` (sections at level 0, leaves at the bottom; parents come
    before their children), ``leaves`` the node index of each leaf in text order,
    ``sentences`` ``(n, 3)`` rows ``(start, end, section)``, ``headings`` the heading
    path of each section. Offsets index the document's ``str``."""

    nodes: np.ndarray
    leaves: np.ndarray
    sentences: np.ndarray
    headings: list[list[str]]


class Packed(NamedTuple):
    """What the native expander makes: passages and the hits left out (a :class:`Payload`
    without metadata)."""

    passages: list[Passage]
    dropped: Sequence[Hit]


class Payload(NamedTuple):
    """Passages (no character twice), the hits the budget left out, and the metadata of
    each passage's document (its record's fields but ``id`` and ``text``) by document id;
    ``abstained``: no passage because the question's best match scored under the query's
    ``floor`` (the hits are then all in ``dropped``).

    >>> Payload([], (), {"a.md": {"url": "https://example.org/a"}}).metadata["a.md"]["url"]
    'https://example.org/a'
    """

    passages: list[Passage]
    dropped: Sequence[Hit] = ()
    metadata: Mapping[str, Mapping[str, Any]] = {}
    abstained: bool = False

    @property
    def token_count(self) -> int:
        """Tokens of all passages."""
        return sum(p.token_count for p in self.passages)

    def citation(self, passage: Passage | Hit) -> Citation | None:
        """Where a passage (or hit) of this payload came from in its source file, when a reader
        made its document (PDF pages and box, HTML source range, DOCX items); else None.

        >>> prov = {"format": "pdf", "blocks": [[0, 5, 3, 72, 90, 300, 120]]}
        >>> p = Passage("m.pdf", 0, 5, 1, 1.0, (), (), "Hello")
        >>> Payload([p], (), {"m.pdf": {"provenance": prov}}).citation(p).pages
        (3,)
        """
        return cite((self.metadata.get(passage.doc_id) or {}).get(PROVENANCE), passage.start, passage.end)

    def render(self) -> str:
        """The passages as text, each headed by its citation ``[n] doc_id:start-end``, with the
        pages it covers (``p. 3`` / ``p. 3-4``) where its document was read from a PDF (or
        Docling's JSON) and its metadata carries the reader's provenance
        (:func:`chunkforge.readers.document.cite`).

        >>> Payload([Passage("a.md", 0, 5, 1, 1.0, ("Intro",), (), "Hello, world")]).render()
        '[1] a.md:0-5 (Intro)\\nHello'
        >>> prov = {"format": "pdf", "blocks": [[0, 5, 3, 72, 90, 300, 120], [7, 12, 4, 72, 60, 300, 80]]}
        >>> Payload([Passage("m.pdf", 0, 12, 3, 1.0, ("Install",), (), "Hello, world")], (), {"m.pdf": {"provenance": prov}}).render()
        '[1] m.pdf:0-12 (Install) p. 3-4\\nHello, world'
        """
        blocks = []
        for n, p in enumerate(self.passages, 1):
            where = f" ({' > '.join(p.heading_path)})" if p.heading_path else ""
            citation = self.citation(p)
            pages = f" {citation.label()}" if citation is not None and citation.pages else ""
            blocks.append(f"[{n}] {p.doc_id}:{p.start}-{p.end}{where}{pages}\n{p.text}")
        return "\n\n".join(blocks)
