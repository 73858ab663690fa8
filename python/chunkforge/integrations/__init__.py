"""Adapters for the frameworks users already work in; each module imports its
framework only when imported itself (``pip install "chunkforge[langchain]"``,
``"chunkforge[llamaindex]"``, ``"chunkforge[haystack]"``):

- :mod:`chunkforge.integrations.langchain`: ``ChunkforgeTextSplitter`` (a LangChain
  ``TextSplitter`` whose ``start_index`` comes from exact offsets) and
  ``ChunkforgeEmbeddings`` (LangChain ``Embeddings``);
- :mod:`chunkforge.integrations.llamaindex`: ``ChunkforgeNodeParser`` (nodes with exact
  ``start_char_idx``/``end_char_idx``; parent/child relationships from a
  :class:`~chunkforge.HierarchicalChunker`) and ``ChunkforgeEmbedding`` (``BaseEmbedding``);
- :mod:`chunkforge.integrations.haystack`: ``ChunkforgeDocumentSplitter``,
  ``ChunkforgeDocumentEmbedder`` and ``ChunkforgeTextEmbedder`` (Haystack components).
"""

from __future__ import annotations

from typing import Any

from .._config import from_config, to_config
from ..chunk import Chunk
from ..errors import ArgumentError, ArgumentTypeError


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """What a chunk adds to its document's metadata: ``token_count``, and where set
    ``heading_path`` (a list), ``kind``, ``context``, and the tree's ``id``/``parent_id``/``level``."""
    meta: dict[str, Any] = {"token_count": chunk.token_count}
    if chunk.heading_path:
        meta["heading_path"] = list(chunk.heading_path)
        meta["kind"] = chunk.kind
    if chunk.context is not None:
        meta["context"] = chunk.context
    if chunk.id is not None:
        meta.update(chunk_id=chunk.id, parent_id=chunk.parent_id, level=chunk.level)
    return meta


def import_or_explain(module: str, extra: str) -> Any:
    """Imports ``module``, or raises ImportError saying which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f'this adapter needs {module.split(".")[0]}: pip install "chunkforge[{extra}]"') from exc


def default_chunker() -> Any:
    """``RecursiveChunker`` on the default model's tokenizer, sized to its window (254 tokens):
    what every adapter splits with by default, so that the default embedder never truncates."""
    from ..chunkers import RecursiveChunker
    from ..tokenizer import Tokenizer

    return RecursiveChunker(Tokenizer.default_model())


def check_chunker(chunker: Any) -> Any:
    """``chunker``, or :func:`default_chunker` for None; anything without ``chunk`` is refused."""
    if chunker is None:
        return default_chunker()
    if not callable(getattr(chunker, "chunk", None)):
        raise ArgumentTypeError(f"must be a chunkforge chunker, not {type(chunker).__name__}", param="chunker")
    return chunker


def resize_chunker(chunker: Any, chunk_size: int | None, chunk_overlap: int | None) -> Any:
    """``chunker`` built again with the framework's ``chunk_size``/``chunk_overlap`` as its
    ``max_tokens``/``overlap`` where given (in its tokenizer's tokens); errors name the
    framework's parameter.

    >>> from chunkforge import RecursiveChunker
    >>> small = resize_chunker(RecursiveChunker(max_tokens=100), 50, 5)
    >>> small.max_tokens, small.overlap
    (50, 5)
    """
    if chunk_size is None and chunk_overlap is None:
        return chunker
    from ..chunkers._base import rebuild

    reduced = chunker.__reduce__()
    params = dict(reduced[1][1]) if reduced[0] is rebuild else {}
    for option, name, value in (("chunk_size", "max_tokens", chunk_size), ("chunk_overlap", "overlap", chunk_overlap)):
        if value is None:
            continue
        if name not in params:
            raise ArgumentError(
                f": {type(chunker).__name__} has no {name} to set; configure the chunker itself", param=option
            )
        params[name] = value
    return type(chunker)(**params)


def warn_past_window(chunker: Any, chunk_size: int | None, hint: str = "") -> None:
    """Warns (once per call site) when ``chunk_size`` tokens exceed the window of the model the
    chunker's tokenizer belongs to: such chunks are cut off when embedded. ``hint``: how else
    to size them in the framework at hand.

    >>> import warnings
    >>> from chunkforge import RecursiveChunker, Tokenizer
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_past_window(RecursiveChunker(Tokenizer.default_model(), max_tokens=1000), 1000)
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    chunk_size=1000 counts tokens (of the chunker's tokenizer), not characters, and the model's window is 254 tokens: ...
    """
    window = getattr(getattr(chunker, "tokenizer", None), "window", None)
    if chunk_size is None or window is None or chunk_size <= window:
        return
    import warnings

    warnings.warn(
        f"chunk_size={chunk_size} counts tokens (of the chunker's tokenizer), not characters, and the model's "
        f"window is {window} tokens: chunks longer than that are truncated when embedded; "
        f"use chunk_size={window} or less{hint}",
        UserWarning,
        stacklevel=3,
    )


def refuse_unknown(cls: type, kwargs: dict[str, Any], fields: Any, own: tuple[str, ...]) -> None:
    """TypeError naming the first keyword of ``kwargs`` that is neither one of ``fields``
    (the framework base class's) nor of ``own`` (the adapter's), as a plain class refuses it:
    a misspelt option must not be dropped silently.

    >>> refuse_unknown(dict, {"bogus_option": 3}, ["include_metadata"], ("chunker",))
    Traceback (most recent call last):
    ...
    chunkforge.errors.ArgumentTypeError: bogus_option: an unexpected keyword argument of dict() (it takes chunker, include_metadata)
    """
    unknown = sorted(set(kwargs) - set(fields))
    if unknown:
        takes = ", ".join([*own, *fields])
        raise ArgumentTypeError(
            f": an unexpected keyword argument of {cls.__name__}() (it takes {takes})", param=unknown[0]
        )


def check_encoder(encoder: Any) -> Any:
    """``encoder``, or ``Encoder.default()`` for None; anything without ``embed`` is refused."""
    if encoder is None:
        from ..encoder import Encoder

        return Encoder.default()
    if not callable(getattr(encoder, "embed", None)):
        raise ArgumentTypeError(f"must be a chunkforge.Encoder, not {type(encoder).__name__}", param="encoder")
    return encoder


__all__ = [
    "check_chunker",
    "check_encoder",
    "chunk_metadata",
    "default_chunker",
    "from_config",
    "import_or_explain",
    "refuse_unknown",
    "resize_chunker",
    "to_config",
    "warn_past_window",
]
