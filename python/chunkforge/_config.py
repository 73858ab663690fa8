"""Chunkers, encoders and tokenizers as plain JSON/YAML values and back: what the framework
adapters' ``to_dict``/``from_dict`` and an index's manifest hold (classes only from ``chunkforge``)."""

from __future__ import annotations

import os
from typing import Any

from .errors import ArgumentError, ArgumentTypeError


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
    from .chunkers._base import rebuild
    from .tokenizer import Tokenizer, _default_tokenizer

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
    raise ArgumentTypeError(
        f"cannot serialize a {type(value).__name__} (chunkforge chunkers, encoders and tokenizers only)", param="value"
    )


def from_config(config: Any) -> Any:
    """The object :func:`to_config` wrote ``config`` for (classes only from ``chunkforge``)."""
    from .tokenizer import Tokenizer

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
            raise ArgumentError(f"unknown encoder factory {factory!r}", param="config")
        from .encoder import Encoder

        make = Encoder if factory == "Encoder" else getattr(Encoder, factory)
        return make(*from_config(config["args"]), **{k: from_config(v) for k, v in config["options"].items()})
    if kind == "chunker":
        cls = _chunkforge_class(config["class"])
        return cls(**{k: from_config(v) for k, v in config["params"].items()})
    raise ValueError(f"not a chunkforge config: {config!r}")


def encoder_label(config: dict[str, Any]) -> str:
    """How an encoder config of :func:`to_config` was made, in a few words.

    >>> encoder_label({"type": "encoder", "factory": "default", "args": ["int8", False], "options": {}})
    'Encoder.default(int8)'
    """
    args = ", ".join(a for a in config["args"] if isinstance(a, str))
    return f"Encoder({args})" if config["factory"] == "Encoder" else f"Encoder.{config['factory']}({args})"


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
