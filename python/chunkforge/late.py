"""Late chunking: encode a whole document once, then mean-pool the token vectors
that fall inside each chunk's character span.

Each chunk's vector then sees the whole document (up to the model's window):
"the city" in the third chunk of a page about Lisbon is embedded as Lisbon.
A document longer than the encoder's ``max_length`` is covered by overlapping
macro windows of ``max_length`` tokens; each token's vector comes from the one
window where it sits farthest from an edge, so every token is taken once and
every chunk gets exactly one vector whatever the document's length. Windows of
many documents are batched together under the encoder's ``max_batch_tokens``.

>>> from chunkforge import Encoder, LateChunker, SentenceChunker
>>> late = LateChunker(SentenceChunker(max_tokens=64), Encoder.default())  # doctest: +SKIP
>>> chunks, vectors = late.chunk("Lisbon is the capital of Portugal. The city lies on the Tagus.")  # doctest: +SKIP
>>> vectors.shape  # doctest: +SKIP
(1, 384)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _native
from .chunk import Chunk, Chunks
from .chunkers._base import check_int, rebuild
from .tokenizer import _as_list

if TYPE_CHECKING:
    from .encoder import Encoder

SpanLike = Chunk | tuple[int, int]
_Doc = tuple[np.ndarray, "LateTokens"]  # a document's token ids and its LateTokens being filled


class LateTokens(NamedTuple):
    """A document's content tokens (special tokens excluded) as late chunking sees
    them: ``vectors`` float32 ``(t, d)``, char ``offsets`` int64 ``(t, 2)``,
    ``windows`` int64 ``(w, 2)`` token ranges ``[start, end)`` of the macro windows,
    and ``window`` int64 ``(t,)``: the window each token's vector was taken from."""

    vectors: np.ndarray
    offsets: np.ndarray
    windows: np.ndarray
    window: np.ndarray


class LateChunks(NamedTuple):
    """A document's chunks and their late-chunked vectors, float32 ``(len(chunks), d)``."""

    chunks: list[Chunk]
    vectors: np.ndarray

    def to_arrow(self) -> Any:
        """The chunks as a ``pyarrow.Table`` (see :meth:`Chunks.to_arrow`) with a ``vector`` column."""
        import pyarrow as pa

        table = Chunks(self.chunks).to_arrow()
        dim = self.vectors.shape[1] if self.vectors.ndim == 2 else 0
        vector = pa.FixedSizeListArray.from_arrays(pa.array(self.vectors.reshape(-1), pa.float32()), dim)
        return table.append_column("vector", vector)


class LateChunker:
    """Chunks with ``chunker`` and embeds the chunks by late chunking with ``encoder``.

    ``window_overlap``: tokens shared by neighbouring macro windows of a document
    longer than the encoder's window (``max_length`` minus ``[CLS]``/``[SEP]``);
    each token then has at least ``window_overlap / 2`` tokens of context on both
    sides. Vectors are the mean of the chunk's token vectors (special tokens
    excluded), L2-normalized when the encoder normalizes. ``chunker`` may be
    ``None`` when only :meth:`embed_chunks` is used.

    >>> late = LateChunker(RecursiveChunker(max_tokens=128), Encoder.default())  # doctest: +SKIP
    >>> [(c.start, c.end) for c in late.chunk(doc).chunks]  # doctest: +SKIP
    [(0, 612), (614, 1180)]
    >>> late.embed_chunks(doc, [(0, 40), (41, 95)]).shape  # doctest: +SKIP
    (2, 384)
    """

    def __init__(self, chunker: Any, encoder: Encoder, window_overlap: int = 32) -> None:
        if chunker is not None and not callable(getattr(chunker, "chunk", None)):
            raise TypeError(f"chunker must have a chunk(text) method (or be None), not {type(chunker).__name__}")
        if not callable(getattr(encoder, "token_embeddings", None)):
            raise TypeError(f"encoder must be a chunkforge.Encoder, not {type(encoder).__name__}")
        self.chunker = chunker
        self.encoder = encoder
        head, tail = encoder.special_token_counts
        self.window = encoder.max_length - head - tail
        self.window_overlap = check_int("window_overlap", window_overlap, 0)
        if self.window_overlap >= self.window:
            raise ValueError(f"window_overlap ({window_overlap}) must be smaller than the encoder's window "
                             f"({self.window} tokens: max_length {encoder.max_length} minus special tokens)")
        prefix, suffix = encoder.tokenizer.special_tokens
        self._prefix = np.array(prefix, np.int64)
        self._suffix = np.array(suffix, np.int64)

    def chunk(self, text: str) -> LateChunks:
        """Chunks one document and embeds its chunks by late chunking."""
        return self.chunk_batch([text])[0]

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str]) -> list[LateChunks]:
        """Chunks and late-embeds many documents, their windows batched together."""
        if self.chunker is None:
            raise ValueError("this LateChunker has no chunker (chunker=None): use embed_chunks")
        texts = _as_list(texts)
        batch = getattr(self.chunker, "chunk_batch", None)
        chunks = batch(texts) if callable(batch) else [self.chunker.chunk(t) for t in texts]
        vectors = self.embed_chunks_batch(texts, chunks)
        return [LateChunks(c, v) for c, v in zip(chunks, vectors)]

    def embed_chunks(self, text: str, chunks: Sequence[SpanLike]) -> np.ndarray:
        """Late-chunked vectors of ``chunks`` of ``text``: :class:`Chunk` objects from
        any chunker or ``(start, end)`` str-index spans; float32 ``(len(chunks), d)``.

        >>> late.embed_chunks("One. Two.", [(0, 4), (5, 9)]).shape  # doctest: +SKIP
        (2, 384)
        """
        return self.embed_chunks_batch([text], [chunks])[0]

    def embed_chunks_batch(self, texts: Iterable[str], chunks: Sequence[Sequence[SpanLike]]) -> list[np.ndarray]:
        """:meth:`embed_chunks` for many documents (``chunks[i]`` belongs to ``texts[i]``)."""
        texts = _as_list(texts)
        if len(chunks) != len(texts):
            raise ValueError(f"chunks must hold one list per text: {len(chunks)} lists for {len(texts)} texts")
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
                raise ValueError(f"chunks[{i}]: {exc}") from None
        return out

    def token_vectors(self, texts: Iterable[str]) -> list[LateTokens]:
        """Each document's content-token vectors in context, from its macro windows.

        >>> tokens = late.token_vectors([long_text])[0]  # doctest: +SKIP
        >>> len(tokens.windows), bool((tokens.window[1:] >= tokens.window[:-1]).all())  # doctest: +SKIP
        (3, True)
        """
        texts = _as_list(texts)
        docs: list[_Doc] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be a str, not {type(text).__name__}")
            ids, offsets = self.encoder.tokenizer.encode_offsets(text)
            starts, owner = _native.late_windows(len(ids), self.window, self.window_overlap)
            ends = np.minimum(starts + self.window, len(ids))
            vectors = np.empty((len(ids), self.encoder.dim), np.float32)
            docs.append((ids.astype(np.int64), LateTokens(vectors, offsets, np.stack([starts, ends], 1), owner)))
        windows = [(d, w) for d, (ids, tok) in enumerate(docs) if len(ids) for w in range(len(tok.windows))]
        for batch in self._batches(windows, docs):
            self._run_windows(batch, docs)
        return [tok for _, tok in docs]

    def _batches(self, windows: list[tuple[int, int]], docs: list[_Doc]) -> list[list[tuple[int, int]]]:
        """Windows longest first, at most ``max_batch_tokens`` padded tokens a batch."""
        extra = len(self._prefix) + len(self._suffix)
        length = [int(np.diff(docs[d][1].windows[w])[0]) + extra for d, w in windows]
        order = np.argsort(-np.array(length, np.int64), kind="stable")
        batches, start = [], 0
        while start < len(order):
            size = max(1, self.encoder.max_batch_tokens // length[order[start]])
            batches.append([windows[k] for k in order[start:start + size]])
            start += size
        return batches

    def _run_windows(self, batch: list[tuple[int, int]], docs: list[_Doc]) -> None:
        """Encodes a batch of windows and keeps each token's vector from its own window."""
        head = len(self._prefix)
        rows = [np.concatenate([self._prefix, docs[d][0][slice(*docs[d][1].windows[w])], self._suffix])
                for d, w in batch]
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), np.int64)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        states = self.encoder.token_states(ids, mask)
        for r, (d, w) in enumerate(batch):
            tok = docs[d][1]
            lo, hi = np.searchsorted(tok.window, [w, w + 1])
            start = tok.windows[w, 0]
            tok.vectors[lo:hi] = states[r, head + lo - start:head + hi - start]

    def __reduce__(self) -> tuple:
        """Pickles as its parameters (chunker and encoder re-created from their configuration)."""
        params = {"chunker": self.chunker, "encoder": self.encoder, "window_overlap": self.window_overlap}
        return (rebuild, (LateChunker, params))

    def __repr__(self) -> str:
        return f"LateChunker({self.chunker!r}, {self.encoder!r}, window_overlap={self.window_overlap})"


def _spans(text: str, chunks: Sequence[SpanLike], doc: int) -> np.ndarray:
    """``(k, 2)`` int64 spans of ``chunks``, checked against ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"texts[{doc}] must be a str, not {type(text).__name__}")
    if isinstance(chunks, (str, Chunk)):
        raise TypeError(f"chunks[{doc}] must be a list of Chunk or (start, end), not a single {type(chunks).__name__}")
    out = np.empty((len(chunks), 2), np.int64)
    for k, c in enumerate(chunks):
        start, end = (c.start, c.end) if isinstance(c, Chunk) else c
        if not 0 <= start < end <= len(text):
            raise ValueError(f"chunks[{doc}][{k}] = ({start}, {end}) is not a non-empty span of the text "
                             f"(0..{len(text)})")
        out[k] = start, end
    return out
