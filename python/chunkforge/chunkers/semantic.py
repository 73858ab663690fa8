"""Semantic chunking: cut a document where adjacent sentences change topic, under
a hard token limit.

Sentences come from the core segmenter (:func:`chunkforge.split_sentences`); the
windows of ``window`` sentences on both sides of each sentence boundary are
embedded in batches (all documents of a batch together), and the boundary's
distance is ``1 - cos`` of the two windows. A boundary is cut when its distance
exceeds the threshold. A segment over ``max_tokens`` is split at its most
distant inner boundary until it fits, a single sentence over the limit by the
recursive chunker; segments under ``min_tokens`` merge into the closer
neighbour (the one across the smaller distance) when the union fits.

>>> from chunkforge import Encoder, SemanticChunker
>>> doc = "Cats purr. Cats sleep all day. Cats chase mice at night. Rust has no garbage collector. "
>>> doc += "It checks borrowing at compile time. Rust programs are fast."
>>> chunker = SemanticChunker(Encoder.default(), max_tokens=256, threshold="p90", min_tokens=8)
>>> [c.text for c in chunker.chunk(doc)]
['Cats purr. Cats sleep all day. Cats chase mice at night.',
 'Rust has no garbage collector. It checks borrowing at compile time. Rust programs are fast.']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .._checks import check_int
from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import _as_list
from ._base import (
    BatchSpans,
    Spans,
    batch_spans_of,
    check_min_tokens,
    default_max_tokens,
    rebuild,
    spans_of,
)
from .recursive import RecursiveChunker

if TYPE_CHECKING:
    from ..encoder import Encoder

PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)")


@dataclass(slots=True)
class _Piece:
    """A chunk being formed: its span, tokens, and the distance at the boundary after it."""

    start: int
    end: int
    tokens: int
    after: float


class SemanticChunker:
    """Cuts at sentence boundaries whose embedding distance exceeds ``threshold``.

    ``threshold``: ``"pNN"`` (default ``"p95"``) cuts above the NN-th percentile
    of the document's boundary distances; a float cuts above that absolute
    distance ``1 - cos`` (0 to 2). ``window``: sentences embedded on each side of
    a boundary. ``max_tokens`` is a hard limit on every chunk (tokens of the
    encoder's tokenizer); ``min_tokens`` (default ``max_tokens // 16``) a floor
    kept where a neighbour can absorb the chunk. Sentence windows longer than the
    encoder's ``max_length`` are embedded from their first ``max_length`` tokens.

    >>> from chunkforge import Encoder
    >>> doc = "Cats purr. Cats sleep all day. Rust has no garbage collector. It checks borrowing. " * 20
    >>> chunks = SemanticChunker(Encoder.default(), max_tokens=128).chunk(doc)
    >>> all(doc[c.start:c.end] == c.text and c.token_count <= 128 for c in chunks)
    True
    """

    def __init__(
        self,
        encoder: Encoder,
        max_tokens: int | None = None,
        *,
        min_tokens: int | None = None,
        threshold: float | str = "p95",
        window: int = 1,
    ) -> None:
        if not callable(getattr(encoder, "embed", None)):
            raise ArgumentTypeError(f"must be a chunkforge.Encoder, not {type(encoder).__name__}", param="encoder")
        self.encoder = encoder
        self.tokenizer = encoder.tokenizer
        self.max_tokens = check_int("max_tokens", default_max_tokens(self.tokenizer, max_tokens), 1)
        self.min_tokens = self.max_tokens // 16 if min_tokens is None else check_min_tokens(min_tokens, self.max_tokens)
        self.window = check_int("window", window, 1)
        if isinstance(threshold, str):
            match = PERCENTILE.fullmatch(threshold)
            if not match or float(match[1]) > 100:
                raise ArgumentError(
                    f"must be 'pNN' (a percentile, 0-100) or a float distance, not {threshold!r}", param="threshold"
                )
        elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ArgumentTypeError(f"must be a float or 'pNN', not {type(threshold).__name__}", param="threshold")
        self.threshold = threshold
        self._fallback = RecursiveChunker(self.tokenizer, self.max_tokens)

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks one document."""
        return self.chunk_batch([text])[0]

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str]) -> list[list[Chunk]]:
        """Chunks many documents, their sentence windows embedded in one batched call."""
        texts = _as_list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ArgumentTypeError(f"[{i}] must be a str, not {type(text).__name__}", param="texts")
        sentences = [_native.split_sentences(t) for t in texts]
        distances = self.distances_batch(texts, sentences)
        return ChunkBatch(self._chunks(t, s, d) for t, s, d in zip(texts, sentences, distances))

    def spans(self, text: str) -> Spans:
        """The chunks' spans as numpy columns."""
        return spans_of(self.chunk(text))

    def spans_batch(self, texts: Iterable[str]) -> BatchSpans:
        """The chunks' spans of many documents as numpy columns."""
        return batch_spans_of(self.chunk_batch(texts))

    def distances_batch(self, texts: list[str], sentences: list[list[tuple[int, int]]]) -> list[np.ndarray]:
        """Per document the ``1 - cos`` distance at each of its sentence boundaries
        (``len(sentences[i]) - 1`` values), given its sentence spans."""
        spans: dict[tuple[int, int, int], int] = {}
        pairs = []
        for d, sents in enumerate(sentences):
            n, w = len(sents), self.window
            left = [spans.setdefault((d, sents[max(0, i - w + 1)][0], sents[i][1]), len(spans)) for i in range(n - 1)]
            right = [
                spans.setdefault((d, sents[i + 1][0], sents[min(n - 1, i + w)][1]), len(spans)) for i in range(n - 1)
            ]
            pairs.append((left, right))
        clipped = self._clip(texts, list(spans))
        vectors = self.encoder.embed(clipped) if clipped else np.empty((0, self.encoder.dim), np.float32)
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return [1.0 - np.einsum("ij,ij->i", vectors[left], vectors[right]) for left, right in pairs]

    def _clip(self, texts: list[str], spans: list[tuple[int, int, int]]) -> list[str]:
        """The window texts, each cut after the encoder's ``max_length`` tokens (less a margin)."""
        limit = self.encoder.max_length - 4
        offsets = {}
        out = []
        for d, s, e in spans:
            text = texts[d]
            if d not in offsets:
                offsets[d] = self.tokenizer.encode_offsets(text).offsets
            tok = offsets[d]
            first = int(np.searchsorted(tok[:, 0], s))
            if first + limit < len(tok) and tok[first + limit - 1, 1] < e:
                e = int(tok[first + limit - 1, 1])
            out.append(text[s:e])
        return out

    def _chunks(self, text: str, sents: list[tuple[int, int]], dist: np.ndarray) -> list[Chunk]:
        if not sents:
            return Chunks()
        counter = self.tokenizer.span_counter(text)
        if isinstance(self.threshold, str):
            cut = float(np.percentile(dist, float(self.threshold[1:]))) if len(dist) else 0.0
        else:
            cut = float(self.threshold)
        cuts = [i + 1 for i in np.flatnonzero(dist > cut).tolist()]
        pieces: list[_Piece] = []
        for a, b in zip([0, *cuts], [*cuts, len(sents)]):
            self._fit(text, sents, dist, a, b, counter, pieces)
        self._merge_small(pieces, counter)
        return Chunks(Chunk(text[p.start : p.end], p.start, p.end, p.tokens, i) for i, p in enumerate(pieces))

    def _fit(
        self,
        text: str,
        sents: list[tuple[int, int]],
        dist: np.ndarray,
        a: int,
        b: int,
        counter: _native.SpanCounter,
        out: list[_Piece],
    ) -> None:
        """Appends sentences ``a..b`` as pieces of at most ``max_tokens``: split at the
        most distant inner boundary; one sentence by the recursive chunker."""
        start, end = sents[a][0], sents[b - 1][1]
        after = float(dist[b - 1]) if b - 1 < len(dist) else 0.0
        tokens = counter.count(start, end)
        if tokens <= self.max_tokens:
            out.append(_Piece(start, end, tokens, after))
        elif b - a > 1:
            k = a + 1 + int(np.argmax(dist[a : b - 1]))
            self._fit(text, sents, dist, a, k, counter, out)
            self._fit(text, sents, dist, k, b, counter, out)
        else:
            s, e, n = self._fallback.spans(text[start:end])
            out += [_Piece(start + x, start + y, c, 0.0) for x, y, c in zip(s.tolist(), e.tolist(), n.tolist())]
            out[-1].after = after

    def _merge_small(self, pieces: list[_Piece], counter: _native.SpanCounter) -> None:
        """Merges pieces under ``min_tokens`` into the neighbour across the smaller
        distance, smallest first, while the union fits ``max_tokens``."""
        while True:
            best = None
            for i in sorted(range(len(pieces)), key=lambda i: pieces[i].tokens):
                if pieces[i].tokens >= self.min_tokens:
                    break
                options = []
                for j in (i - 1, i + 1):
                    if 0 <= j < len(pieces):
                        lo, hi = min(i, j), max(i, j)
                        n = counter.count(pieces[lo].start, pieces[hi].end)
                        if n <= self.max_tokens:
                            options.append((pieces[lo].after, lo, n))
                if options:
                    best = min(options)
                    break
            if best is None:
                return
            _, lo, n = best
            pieces[lo : lo + 2] = [_Piece(pieces[lo].start, pieces[lo + 1].end, n, pieces[lo + 1].after)]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its parameters (the encoder re-created from its configuration)."""
        params = {
            "encoder": self.encoder,
            "max_tokens": self.max_tokens,
            "min_tokens": self.min_tokens,
            "threshold": self.threshold,
            "window": self.window,
        }
        return (rebuild, (SemanticChunker, params))

    def __repr__(self) -> str:
        return (
            f"SemanticChunker({self.encoder!r}, max_tokens={self.max_tokens}, min_tokens={self.min_tokens}, "
            f"threshold={self.threshold!r}, window={self.window})"
        )
