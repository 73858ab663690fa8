"""The context-aware chunker: a chunker whose chunks carry ``embed_text`` (title, heading
path, context, text: :func:`chunkforge.represent.render`) that fits the token limit, prefix
included.

>>> from chunkforge import MarkdownChunker
>>> chunker = ContextAwareChunker(MarkdownChunker(max_tokens=32))
>>> [c.embed_text for c in chunker.chunk("# Install\\n\\nRun the installer.", title="Guide")]
['Guide > Install\\n\\n# Install\\n\\nRun the installer.']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .._checks import check_int
from ..chunk import Chunk, ChunkBatch
from ..errors import ArgumentError, ArgumentTypeError
from ..represent import DEFAULT_TEMPLATE, _parse, with_embed_text
from ..tokenizer import _as_list
from ._base import BatchSpans, Spans, batch_spans_of, rebuild, spans_of


class ContextAwareChunker:
    """Wraps a chunker (one with ``max_tokens``: token, recursive, sentence,
    markdown) so that every chunk carries ``embed_text`` and ``embed_text``, prefix
    included, has at most ``max_tokens`` tokens (default: the chunker's).

    By default the budget is measured: the document is chunked with the chunker's
    limit lowered by the largest prefix that overflows, until every rendered chunk
    fits. ``reserve_tokens=N`` instead sets aside ``N`` tokens for every prefix
    (room for :func:`contextualize`'s generated context too), and a prefix longer
    than that raises ``ValueError``. Offsets still index the source text.

    >>> from chunkforge import MarkdownChunker, Tokenizer
    >>> tok, doc = Tokenizer.default(), "# Install\\n\\n" + "Run the installer and follow the steps. " * 30
    >>> chunker = ContextAwareChunker(MarkdownChunker(max_tokens=64))
    >>> all(tok.count(c.embed_text) <= 64 for c in chunker.chunk(doc, title="Guide"))
    True
    """

    def __init__(
        self,
        chunker: Any,
        max_tokens: int | None = None,
        *,
        reserve_tokens: int | None = None,
        template: str = DEFAULT_TEMPLATE,
    ) -> None:
        params = getattr(chunker, "_params", None)
        if not callable(params) or "max_tokens" not in params():
            raise ArgumentTypeError(
                f"must be a chunkforge chunker with max_tokens, not {type(chunker).__name__}", param="chunker"
            )
        self.chunker = chunker
        self.tokenizer = chunker.tokenizer
        self.max_tokens = chunker.max_tokens if max_tokens is None else check_int("max_tokens", max_tokens, 1)
        self.reserve_tokens = None if reserve_tokens is None else check_int("reserve_tokens", reserve_tokens, 0)
        if self.reserve_tokens is not None and self.reserve_tokens >= self.max_tokens:
            raise ArgumentError(
                f"({reserve_tokens}) must be smaller than max_tokens ({self.max_tokens})", param="reserve_tokens"
            )
        _parse(template)
        self.template = template

    def chunk(self, text: str, title: str | None = None) -> list[Chunk]:
        """Chunks one document; ``title`` goes into each chunk's ``embed_text``."""
        budget = self.max_tokens - (self.reserve_tokens or 0)
        while True:
            chunks = with_embed_text(self._chunker(budget).chunk(text), title, self.template)
            counts = self.tokenizer.count_batch([c.embed_text for c in chunks])
            worst = int(counts.argmax()) if len(chunks) else 0
            excess = int(counts[worst]) - self.max_tokens if len(chunks) else 0
            if excess <= 0:
                return chunks
            prefix = int(counts[worst]) - chunks[worst].token_count
            if self.reserve_tokens is not None:
                raise ArgumentError(
                    f"({self.reserve_tokens}) is less than chunk {worst}'s prefix (about {prefix} tokens)",
                    param="reserve_tokens",
                )
            if budget - excess < 1:
                raise ArgumentError(
                    f"({self.max_tokens}) is less than chunk {worst}'s prefix alone (about {prefix} tokens)",
                    param="max_tokens",
                )
            budget -= excess

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str], titles: Sequence[str | None] | None = None) -> list[list[Chunk]]:
        """:meth:`chunk` for many documents, ``titles[i]`` for ``texts[i]``."""
        texts = _as_list(texts)
        titles = [None] * len(texts) if titles is None else list(titles)
        if len(titles) != len(texts):
            raise ArgumentError(f"must hold one title per text: {len(titles)} for {len(texts)} texts", param="titles")
        return ChunkBatch(self.chunk(t, title) for t, title in zip(texts, titles))

    def spans(self, text: str) -> Spans:
        """The chunks' spans as numpy columns."""
        return spans_of(self.chunk(text))

    def spans_batch(self, texts: Iterable[str]) -> BatchSpans:
        """The chunks' spans of many documents as numpy columns."""
        return batch_spans_of(self.chunk_batch(texts))

    def _chunker(self, budget: int) -> Any:
        params = self.chunker._params()
        if params["max_tokens"] == budget:
            return self.chunker
        params["max_tokens"] = budget
        if params.get("overlap", 0) >= budget:
            params["overlap"] = budget - 1
        if params.get("min_tokens", 0) > budget:
            params["min_tokens"] = budget
        return type(self.chunker)(**params)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its parameters (the wrapped chunker re-created from its own)."""
        params = {
            "chunker": self.chunker,
            "max_tokens": self.max_tokens,
            "reserve_tokens": self.reserve_tokens,
            "template": self.template,
        }
        return (rebuild, (ContextAwareChunker, params))

    def __repr__(self) -> str:
        return (
            f"ContextAwareChunker({self.chunker!r}, max_tokens={self.max_tokens}, "
            f"reserve_tokens={self.reserve_tokens}, template={self.template!r})"
        )
