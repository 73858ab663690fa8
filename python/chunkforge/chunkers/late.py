"""Late chunking: encode a whole document once, then mean-pool the token vectors
that fall inside each chunk's character span.

Each chunk's vector then sees the whole document (up to the model's window):
"the city" in the third chunk of a page about Lisbon is embedded as Lisbon.
A document longer than the encoder's ``max_length`` is covered by overlapping
segments of ``max_length`` tokens; each token's vector comes from the one
segment where it sits farthest from an edge, so every token is taken once and
every chunk gets exactly one vector whatever the document's length. Segments of
many documents are batched together under the encoder's ``max_batch_tokens``.
(In chunkforge ``window`` means the sentences around a hit; these are segments.)

>>> from chunkforge import Encoder, LateChunker, SentenceChunker
>>> late = LateChunker(SentenceChunker(max_tokens=64), Encoder.default())
>>> chunks, vectors = late.chunk("Lisbon is the capital of Portugal. The city lies on the Tagus.")
>>> vectors.shape
(1, 384)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _native
from .._checks import check_int
from ..chunk import Chunk, Chunks
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import _as_list
from ._base import rebuild

if TYPE_CHECKING:
    import pyarrow as pa

    from ..encoder import Encoder

SpanLike = Chunk | tuple[int, int]
_Doc = tuple[np.ndarray, "LateTokens"]  # a document's token ids and its LateTokens being filled


class LateTokens(NamedTuple):
    """A document's content tokens (special tokens excluded) as late chunking sees
    them: ``vectors`` float32 ``(t, d)``, char ``offsets`` int64 ``(t, 2)``,
    ``segments`` int64 ``(w, 2)`` token ranges ``[start, end)`` of the segments the
    document was encoded in, and ``segment`` int64 ``(t,)``: the segment each token's
    vector was taken from."""

    vectors: np.ndarray
    offsets: np.ndarray
    segments: np.ndarray
    segment: np.ndarray


class LateChunks(NamedTuple):
    """A document's chunks and their late-chunked vectors, float32 ``(len(chunks), d)``."""

    chunks: list[Chunk]
    vectors: np.ndarray

    def to_arrow(self) -> pa.Table:
        """The chunks as a ``pyarrow.Table`` (see :meth:`Chunks.to_arrow`) with a ``vector`` column."""
        import pyarrow as pa

        table = Chunks(self.chunks).to_arrow()
        dim = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        vector = pa.FixedSizeListArray.from_arrays(pa.array(self.vectors.reshape(-1), pa.float32()), dim)
        return table.append_column("vector", vector)


class LateChunker:
    """Chunks with ``chunker`` and embeds the chunks by late chunking with ``encoder``.

    ``segment_overlap``: tokens shared by neighbouring
    segments of a document longer than ``segment_tokens`` (the encoder's ``max_length``
    minus ``[CLS]``/``[SEP]``); each token then has at least ``segment_overlap / 2`` tokens of context on both
    sides. Vectors are the mean of the chunk's token vectors (special tokens
    excluded), L2-normalized when the encoder normalizes. ``chunker`` may be
    ``None`` when only :meth:`embed_chunks` is used.

    >>> from chunkforge import Encoder, RecursiveChunker
    >>> doc = "Lisbon is the capital of Portugal. " * 20 + "\\n\\n" + "The city lies on the Tagus. " * 20
    >>> late = LateChunker(RecursiveChunker(max_tokens=128), Encoder.default())
    >>> [(c.start, c.end) for c in late.chunk(doc).chunks]
    [(0, 629), (630, 699), (702, 1149), (1150, 1261)]
    >>> late.embed_chunks(doc, [(0, 40), (41, 95)]).shape
    (2, 384)
    """

    def __init__(self, chunker: Any, encoder: Encoder, segment_overlap: int = 32) -> None:
        if chunker is not None and not callable(getattr(chunker, "chunk", None)):
            raise ArgumentTypeError(
                f"must have a chunk(text) method (or be None), not {type(chunker).__name__}", param="chunker"
            )
        if not callable(getattr(encoder, "token_embeddings", None)):
            raise ArgumentTypeError(f"must be a chunkforge.Encoder, not {type(encoder).__name__}", param="encoder")
        self.chunker = chunker
        self.encoder = encoder
        head, tail = encoder.special_token_counts
        self.segment_tokens = encoder.max_length - head - tail
        self.segment_overlap = check_int("segment_overlap", segment_overlap, 0)
        if self.segment_overlap >= self.segment_tokens:
            raise ArgumentError(
                f"({segment_overlap}) must be smaller than the encoder's window "
                f"({self.segment_tokens} tokens: max_length {encoder.max_length} minus special tokens)",
                param="segment_overlap",
            )
        prefix, suffix = encoder.tokenizer.special_tokens
        self._prefix = np.array(prefix, np.int64)
        self._suffix = np.array(suffix, np.int64)

    def segments(self, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, owner)`` of a document of ``n_tokens`` content tokens: each segment's
        first token, and for each token the segment its vector is taken from.

        >>> from chunkforge import Encoder
        >>> late = LateChunker(None, Encoder.default())  # segments of 254 tokens, 32 shared
        >>> late.segments(600)[0].tolist()
        [0, 173, 346]
        """
        return _native.late_windows(n_tokens, self.segment_tokens, self.segment_overlap)

    def chunk(self, text: str) -> LateChunks:
        """Chunks one document and embeds its chunks by late chunking."""
        return self.chunk_batch([text])[0]

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str]) -> list[LateChunks]:
        """Chunks and late-embeds many documents, their segments batched together."""
        if self.chunker is None:
            raise ArgumentError("is None: this LateChunker has no chunker (use embed_chunks)", param="chunker")
        texts = _as_list(texts)
        batch = getattr(self.chunker, "chunk_batch", None)
        chunks = batch(texts) if callable(batch) else [self.chunker.chunk(t) for t in texts]
        vectors = self.embed_chunks_batch(texts, chunks)
        return [LateChunks(c, v) for c, v in zip(chunks, vectors)]

    def embed_chunks(self, text: str, chunks: Sequence[SpanLike]) -> np.ndarray:
        """Late-chunked vectors of ``chunks`` of ``text``: :class:`Chunk` objects from
        any chunker or ``(start, end)`` str-index spans; float32 ``(len(chunks), d)``.

        >>> from chunkforge import Encoder
        >>> late = LateChunker(None, Encoder.default())
        >>> late.embed_chunks("One. Two.", [(0, 4), (5, 9)]).shape
        (2, 384)
        """
        return self.embed_chunks_batch([text], [chunks])[0]

    def embed_chunks_batch(self, texts: Iterable[str], chunks: Sequence[Sequence[SpanLike]]) -> list[np.ndarray]:
        """:meth:`embed_chunks` for many documents (``chunks[i]`` belongs to ``texts[i]``)."""
        texts = _as_list(texts)
        if len(chunks) != len(texts):
            raise ArgumentError(
                f"must hold one list per text: {len(chunks)} lists for {len(texts)} texts", param="chunks"
            )
        spans = [_spans(t, c, i) for i, (t, c) in enumerate(zip(texts, chunks))]
        todo = [i for i, s in enumerate(spans) if len(s)]
        tokens = dict(zip(todo, self.token_vectors([texts[i] for i in todo])))
        out = []
        for i, s in enumerate(spans):
            if not len(s):
                out.append(np.empty((0, self.encoder.dim), np.float32))
                continue
            tok = tokens[i]
            try:
                out.append(_native.late_pool(tok.vectors, tok.offsets, s, self.encoder.normalize))
            except ValueError as exc:
                raise ArgumentError(f"[{i}]: {exc}", param="chunks") from None
        return out

    def token_vectors(self, texts: Iterable[str]) -> list[LateTokens]:
        """Each document's content-token vectors in context, from its segments.

        >>> from chunkforge import Encoder
        >>> late = LateChunker(None, Encoder.default())
        >>> tokens = late.token_vectors(["word " * 600])[0]  # 600 tokens: three segments
        >>> len(tokens.segments), bool((tokens.segment[1:] >= tokens.segment[:-1]).all())
        (3, True)
        """
        texts = _as_list(texts)
        docs: list[_Doc] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ArgumentTypeError(f"[{i}] must be a str, not {type(text).__name__}", param="texts")
            ids, offsets = self.encoder.tokenizer.encode_offsets(text)
            starts, owner = self.segments(len(ids))
            ends = np.minimum(starts + self.segment_tokens, len(ids))
            vectors = np.empty((len(ids), self.encoder.dim), np.float32)
            docs.append((ids.astype(np.int64), LateTokens(vectors, offsets, np.stack([starts, ends], 1), owner)))
        segments = [(d, w) for d, (ids, tok) in enumerate(docs) if len(ids) for w in range(len(tok.segments))]
        for batch in self._batches(segments, docs):
            self._run_segments(batch, docs)
        return [tok for _, tok in docs]

    def _batches(self, segments: list[tuple[int, int]], docs: list[_Doc]) -> list[list[tuple[int, int]]]:
        """Segments longest first, at most ``max_batch_tokens`` padded tokens a batch."""
        extra = len(self._prefix) + len(self._suffix)
        length = np.array([int(np.diff(docs[d][1].segments[w])[0]) + extra for d, w in segments], np.int64)
        return [[segments[k] for k in idx] for idx in self.encoder.length_batches(length)]

    def _run_segments(self, batch: list[tuple[int, int]], docs: list[_Doc]) -> None:
        """Encodes a batch of segments and keeps each token's vector from its own segment."""
        head = len(self._prefix)
        ids, mask = self.encoder.pad_token_ids([docs[d][0][slice(*docs[d][1].segments[w])] for d, w in batch])
        states = self.encoder.token_states(ids, mask)
        for r, (d, w) in enumerate(batch):
            tok = docs[d][1]
            lo, hi = np.searchsorted(tok.segment, [w, w + 1])
            start = tok.segments[w, 0]
            tok.vectors[lo:hi] = states[r, head + lo - start : head + hi - start]

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its parameters (chunker and encoder re-created from their configuration)."""
        params = {"chunker": self.chunker, "encoder": self.encoder, "segment_overlap": self.segment_overlap}
        return (rebuild, (LateChunker, params))

    def __repr__(self) -> str:
        return f"LateChunker({self.chunker!r}, {self.encoder!r}, segment_overlap={self.segment_overlap})"


def _spans(text: str, chunks: Sequence[SpanLike], doc: int) -> np.ndarray:
    """``(k, 2)`` int64 spans of ``chunks``, checked against ``text``."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"[{doc}] must be a str, not {type(text).__name__}", param="texts")
    if isinstance(chunks, (str, Chunk)):
        raise ArgumentTypeError(
            f"[{doc}] must be a list of Chunk or (start, end), not a single {type(chunks).__name__}", param="chunks"
        )
    out = np.empty((len(chunks), 2), np.int64)
    for k, c in enumerate(chunks):
        start, end = (c.start, c.end) if isinstance(c, Chunk) else c
        if not 0 <= start < end <= len(text):
            raise ArgumentError(
                f"[{doc}][{k}] = ({start}, {end}) is not a non-empty span of the text (0..{len(text)})", param="chunks"
            )
        out[k] = start, end
    return out
