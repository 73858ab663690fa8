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

import os
from typing import Any

from ..chunk import Chunk


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
        raise TypeError(f"chunker must be a chunkforge chunker, not {type(chunker).__name__}")
    return chunker


def check_encoder(encoder: Any) -> Any:
    """``encoder``, or ``Encoder.default()`` for None; anything without ``embed`` is refused."""
    if encoder is None:
        from ..encoder import Encoder

        return Encoder.default()
    if not callable(getattr(encoder, "embed", None)):
        raise TypeError(f"encoder must be a chunkforge.Encoder, not {type(encoder).__name__}")
    return encoder


def to_config(value: Any) -> Any:
    """A chunker, encoder or tokenizer (and their parameters) as plain JSON/YAML values that
    :func:`from_config` builds an equal object from: what the adapters' ``to_dict`` write.

    >>> from chunkforge import RecursiveChunker
    >>> config = to_config(RecursiveChunker(max_tokens=64, overlap=8))
    >>> config["class"], config["params"]["max_tokens"], config["params"]["overlap"]
    ('RecursiveChunker', 64, 8)
    >>> from_config(config)  # doctest: +ELLIPSIS
    RecursiveChunker(tokenizer=..., max_tokens=64, overlap=8, separators=None, min_tokens=0)
    """
    from ..chunkers._base import rebuild
    from ..tokenizer import Tokenizer, _default_tokenizer

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_config(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, type):
        return {"type": "class", "class": _chunkforge_name(value)}
    if isinstance(value, Tokenizer):
        if value._native is _default_tokenizer()._native:
            return {"type": "tokenizer", "default": True, "window": value.window}
        if value._json is None:
            return {"type": "tokenizer", "path": value.source, "window": value.window}
        return {"type": "tokenizer", "json": value._json, "window": value.window}
    recipe = getattr(value, "_recipe", None)
    if recipe is not None:  # an Encoder: the factory that made it, its arguments and options
        factory, args, options = recipe
        return {
            "type": "encoder",
            "factory": getattr(factory, "__name__", "Encoder"),
            "args": to_config(args),
            "options": {k: to_config(v) for k, v in options.items()},
        }
    reduced = value.__reduce__()
    if callable(getattr(value, "chunk", None)) and reduced[0] is rebuild:
        cls, params = reduced[1]
        return {
            "type": "chunker",
            "class": _chunkforge_name(cls),
            "params": {k: to_config(v) for k, v in params.items()},
        }
    raise TypeError(f"cannot serialize a {type(value).__name__} (chunkforge chunkers, encoders and tokenizers only)")


def from_config(config: Any) -> Any:
    """The object :func:`to_config` wrote ``config`` for (classes only from ``chunkforge``)."""
    from ..tokenizer import Tokenizer

    if isinstance(config, list):
        return [from_config(v) for v in config]
    if not isinstance(config, dict):
        return config
    kind = config.get("type")
    if kind == "class":
        return _chunkforge_class(config["class"])
    if kind == "tokenizer":
        if config.get("default"):
            tokenizer = Tokenizer.default()
        elif "path" in config:
            tokenizer = Tokenizer.from_file(config["path"])
        else:
            tokenizer = Tokenizer.from_str(config["json"])
        return tokenizer.with_window(config.get("window"))
    if kind == "encoder":
        factory = config["factory"]
        if factory not in ("Encoder", "default", "from_dir", "from_pretrained"):
            raise ValueError(f"unknown encoder factory {factory!r}")
        from ..encoder import Encoder

        make = Encoder if factory == "Encoder" else getattr(Encoder, factory)
        return make(*from_config(config["args"]), **{k: from_config(v) for k, v in config["options"].items()})
    if kind == "chunker":
        cls = _chunkforge_class(config["class"])
        return cls(**{k: from_config(v) for k, v in config["params"].items()})
    raise ValueError(f"not a chunkforge config: {config!r}")


def _chunkforge_name(cls: type) -> str:
    import chunkforge

    name: str = cls.__name__
    if getattr(chunkforge, name, None) is not cls:
        raise TypeError(f"cannot serialize {cls.__module__}.{cls.__qualname__}: not a class of chunkforge")
    return name


def _chunkforge_class(name: Any) -> Any:
    import chunkforge

    cls = getattr(chunkforge, name, None) if isinstance(name, str) and name in chunkforge.__all__ else None
    if not isinstance(cls, type):
        raise ValueError(f"{name!r} is not a class of chunkforge")
    return cls
