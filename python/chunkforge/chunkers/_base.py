"""What every chunker shares: parameter checks, ``chunk``/``chunk_batch`` and the
columnar ``spans``/``spans_batch`` bulk path."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from .. import _native
from .._checks import check_int
from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError
from ..tokenizer import Tokenizer, _as_list, as_tokenizer, check_threads


class Spans(NamedTuple):
    """Chunks of one document as columns: ``start``, ``end`` (str indices), ``token_count``."""

    start: np.ndarray
    end: np.ndarray
    token_count: np.ndarray

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` of the columns (zero-copy)."""
        return _columns_table(self)


class BatchSpans(NamedTuple):
    """Chunks of many documents as columns; ``doc`` is the input index."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    token_count: np.ndarray

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` of the columns (zero-copy); ``doc`` is the input index."""
        return _columns_table(self)


@runtime_checkable
class Chunker(Protocol):
    """What every chunker of chunkforge offers: ``chunk`` and ``chunk_batch`` give
    :class:`~chunkforge.Chunk` lists, ``spans`` and ``spans_batch`` the same cuts as
    numpy columns. Parameters after ``max_tokens`` are keyword-only.

    >>> from chunkforge import Chunker, RecursiveChunker
    >>> isinstance(RecursiveChunker(max_tokens=64), Chunker)
    True
    """

    def chunk(self, text: str) -> list[Chunk]: ...

    def chunk_batch(self, texts: Iterable[str]) -> list[list[Chunk]]: ...

    def spans(self, text: str) -> Spans: ...

    def spans_batch(self, texts: Iterable[str]) -> BatchSpans: ...


def spans_of(chunks: Sequence[Chunk]) -> Spans:
    """The columns of one document's chunks (for chunkers that make Chunk objects first)."""
    return Spans(
        np.array([c.start for c in chunks], np.int64),
        np.array([c.end for c in chunks], np.int64),
        np.array([c.token_count for c in chunks], np.int64),
    )


def batch_spans_of(docs: Sequence[Sequence[Chunk]]) -> BatchSpans:
    """The columns of many documents' chunks; ``doc`` is the input index."""
    doc = np.repeat(np.arange(len(docs), dtype=np.int64), [len(cs) for cs in docs])
    one = spans_of([c for cs in docs for c in cs])
    return BatchSpans(doc, one.start, one.end, one.token_count)


def _columns_table(columns: NamedTuple) -> Any:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise ImportError('to_arrow() needs pyarrow: pip install "chunkforge[parquet]"') from exc
    return pa.table({name: pa.array(np.asarray(col)) for name, col in zip(columns._fields, columns)})


DEFAULT_MAX_TOKENS = 512


def default_max_tokens(tokenizer: Tokenizer, max_tokens: int | None) -> Any:
    """``max_tokens``, else the window of the encoder the tokenizer belongs to (its
    ``max_length`` minus special tokens, so that its chunks are never truncated), else 512."""
    if max_tokens is not None:
        return max_tokens
    return tokenizer.window or DEFAULT_MAX_TOKENS


def check_min_tokens(min_tokens: Any, max_tokens: int) -> int:
    """``min_tokens`` as an int in ``[0, max_tokens]``; errors name the parameter."""
    value = check_int("min_tokens", min_tokens, 0)
    if value > max_tokens:
        raise ArgumentError(f"({value}) must not exceed max_tokens ({max_tokens})", param="min_tokens")
    return value


class BaseChunker:
    """Common surface of the chunkers. Subclasses set ``_native``."""

    tokenizer: Tokenizer
    max_tokens: int
    _native: _native.Chunker

    def __init__(self, tokenizer: Any, max_tokens: int | None, overlap: int) -> None:
        self.tokenizer = as_tokenizer(tokenizer)
        self.max_tokens = check_int("max_tokens", default_max_tokens(self.tokenizer, max_tokens), 1)
        self.overlap = check_int("overlap", overlap, 0)
        if self.overlap >= self.max_tokens:
            raise ArgumentError(f"({overlap}) must be smaller than max_tokens ({max_tokens})", param="overlap")

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks one document (a list that also has ``to_arrow()``)."""
        start, end, count = self._native.spans(text)
        return Chunks(
            Chunk(text[s:e], s, e, n, i)
            for i, (s, e, n) in enumerate(zip(start.tolist(), end.tolist(), count.tolist()))
        )

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str], threads: int | None = None) -> list[list[Chunk]]:
        """Chunks many documents in parallel (GIL released); output in input order."""
        texts = _as_list(texts)
        doc, start, end, count = self.spans_batch(texts, threads=threads)
        out: list[list[Chunk]] = ChunkBatch(Chunks() for _ in texts)
        for d, s, e, n in zip(doc.tolist(), start.tolist(), end.tolist(), count.tolist()):
            chunks = out[d]
            chunks.append(Chunk(texts[d][s:e], s, e, n, len(chunks)))
        return out

    def spans(self, text: str) -> Spans:
        """Chunk spans of one document as numpy columns (no Python object per chunk)."""
        return Spans(*self._native.spans(text))

    def spans_batch(self, texts: Iterable[str], threads: int | None = None) -> BatchSpans:
        """Chunk spans of many documents as numpy columns: the bulk path."""
        threads = check_threads(threads)
        return BatchSpans(*self._native.spans_batch(_as_list(texts), threads=threads))

    # ---- the bulk job's seam: chunks with the token ids they were sized on

    def chunk_batch_ids(
        self, texts: Iterable[str], *, threads: int | None = None
    ) -> tuple[list[list[Chunk]], list[list[np.ndarray]]] | None:
        """:meth:`chunk_batch` and, per document, each chunk's token ids (uint32, no special
        tokens) from the one tokenization the chunker sized it on: exactly the chunk's text
        encoded alone, without tokenizing it again. None for a chunker without a native
        tokenization to take them from (``CodeChunker``).

        >>> from chunkforge import RecursiveChunker
        >>> chunks, ids = RecursiveChunker(max_tokens=4).chunk_batch_ids(["one two three four five"])
        >>> [len(i) for i in ids[0]] == [c.token_count for c in chunks[0]]
        True
        """
        native = getattr(self, "_native", None)
        if native is None:
            return None
        texts = _as_list(texts)
        doc, start, end, count, ids, bounds = native.spans_batch_ids(texts, threads=check_threads(threads))
        chunks: list[list[Chunk]] = ChunkBatch(Chunks() for _ in texts)
        token_ids: list[list[np.ndarray]] = [[] for _ in texts]
        for d, s, e, n, a, b in zip(
            doc.tolist(), start.tolist(), end.tolist(), count.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()
        ):
            chunks[d].append(Chunk(texts[d][s:e], s, e, n, len(chunks[d])))
            token_ids[d].append(ids[a:b])
        return chunks, token_ids

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as the class and its parameters: unpickling builds it again."""
        return (rebuild, (type(self), self._params()))

    def _params(self) -> dict[str, Any]:
        """The keyword arguments that build an equal chunker."""
        return {"tokenizer": self.tokenizer, "max_tokens": self.max_tokens, "overlap": self.overlap}


def rebuild(cls: type, params: dict[str, Any]) -> Any:
    """``cls(**params)``: how chunkers (and encoders) unpickle, re-created from their
    configuration rather than from their native state."""
    return cls(**params)
