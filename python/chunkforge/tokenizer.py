"""Token counting with the embedding model's own tokenizer (HF ``tokenizer.json``)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import _native
from .errors import ArgumentError, ArgumentTypeError, TokenizerError

DEFAULT_TOKENIZER = "all-MiniLM-L6-v2.tokenizer.json"
DEFAULT_MODEL_MAX_LENGTH = 256
"""Tokens the default model (all-MiniLM-L6-v2, whose tokenizer is shipped) takes, special ones included."""


class Encoding(NamedTuple):
    """Token ids and their ``(n, 2)`` character offsets into the text."""

    ids: np.ndarray
    offsets: np.ndarray


class Tokenizer:
    """A tokenizer that counts tokens exactly as HF ``tokenizers`` encodes them
    (no special tokens; truncation and padding stored in the file are ignored).

    >>> tok = Tokenizer.default()
    >>> tok.count("Hello, world!")
    4
    """

    def __init__(
        self, native: _native.Tokenizer, source: str, json: str | None = None, window: int | None = None
    ) -> None:
        self._native = native
        self.source = source
        # the tokenizer.json text when not read from a file: what a pickle carries
        self._json = json
        #: tokens of text the model using this tokenizer takes (an encoder's
        #: ``max_length`` minus its special tokens); chunkers default to it. None: unknown.
        self.window = window

    def with_window(self, window: int | None) -> Tokenizer:
        """The same tokenizer (sharing its native state) with ``window`` set."""
        return Tokenizer(self._native, self.source, self._json, window)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as the tokenizer's JSON (the default tokenizer by name), so that
        worker processes (multiprocessing, Ray, Spark, Dask) get an equal tokenizer."""
        if self._native is _default_tokenizer()._native:
            return (_unpickle, (None, self.source, self.window))
        json = self._json if self._json is not None else Path(self.source).read_text(encoding="utf-8")
        return (_unpickle, (json, self.source, self.window))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Loads a ``tokenizer.json`` file."""
        path = Path(path)
        if path.is_dir():
            raise ArgumentError(f"{path} is a folder; use Tokenizer.from_pretrained for a model folder", param="path")
        if not path.exists():
            raise FileNotFoundError(f"tokenizer file not found: {path}")
        return cls(_native.Tokenizer.from_file(str(path)), str(path))

    @classmethod
    def from_pretrained(cls, model_dir: str | os.PathLike[str]) -> Tokenizer:
        """Loads ``tokenizer.json`` from a model folder (Hugging Face layout); its
        ``window`` (what chunkers default to) is the model's length (sentence-transformers'
        ``max_seq_length``, else ``max_position_embeddings`` up to 512) minus special tokens."""
        path = Path(model_dir) / "tokenizer.json"
        if not path.exists():
            raise FileNotFoundError(f"no tokenizer.json in model folder {model_dir}")
        tokenizer = cls.from_file(path)
        max_length = model_max_length(Path(model_dir))
        return tokenizer if max_length is None else tokenizer.with_window(max_length - tokenizer.special_token_count)

    @classmethod
    def default_model(cls) -> Tokenizer:
        """The default tokenizer with the default model's window (254 tokens: what
        ``Encoder.default()`` takes besides ``[CLS]``/``[SEP]``), without loading the model."""
        tokenizer = _default_tokenizer()
        return tokenizer.with_window(DEFAULT_MODEL_MAX_LENGTH - tokenizer.special_token_count)

    @property
    def special_tokens(self) -> tuple[list[int], list[int]]:
        """The ids the model adds before and after a text (``[CLS]`` and ``[SEP]``).

        >>> Tokenizer.default().special_tokens
        ([101], [102])
        """
        prefix, suffix = self._native.special_tokens()
        return list(prefix), list(suffix)

    @property
    def special_token_count(self) -> int:
        """How many special tokens the model adds around a text (2 for ``[CLS] ... [SEP]``)."""
        prefix, suffix = self.special_tokens
        return len(prefix) + len(suffix)

    def encode_padded(
        self, texts: Iterable[str], max_length: int, *, return_offsets: bool = False, threads: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """Model inputs of a batch: ``(ids, attention_mask, offsets, lengths)``, the texts with
        special tokens, truncated to ``max_length`` and padded to the longest row (int64
        ``(n, width)``); ``offsets`` ``(n, width, 2)`` with ``return_offsets`` (else None);
        ``lengths`` is each text's full length before truncation (to detect overflow).

        >>> ids, mask, _, lengths = Tokenizer.default().encode_padded(["Hello!", "Hi"], 8)
        >>> ids.shape, mask.sum(1).tolist(), lengths.tolist()
        ((2, 4), [4, 3], [4, 3])
        """
        return self._native.encode_padded(
            _as_list(texts), max_length, return_offsets=return_offsets, threads=check_threads(threads)
        )

    @property
    def pad_id(self) -> int:
        """The id that pads a batch's shorter rows.

        >>> Tokenizer.default().pad_id
        0
        """
        ids, _, _, _ = self._native.encode_padded(["", "a"], 8)
        return int(ids[0, -1])  # the empty text's row is padded to the other's width

    @classmethod
    def from_str(cls, json: str) -> Tokenizer:
        """Loads a tokenizer from the JSON text of a ``tokenizer.json``."""
        return cls(_native.Tokenizer.from_str(json), "<string>", json)

    @classmethod
    def from_tokenizers(cls, tokenizer: Any) -> Tokenizer:
        """Converts a ``tokenizers.Tokenizer`` (through its JSON)."""
        to_str = getattr(tokenizer, "to_str", None)
        if to_str is None:
            raise ArgumentTypeError(
                f"must be a tokenizers.Tokenizer, not {type(tokenizer).__name__}", param="tokenizer"
            )
        json = to_str()
        return cls(_native.Tokenizer.from_str(json), f"<{type(tokenizer).__name__}>", json)

    @classmethod
    def default(cls) -> Tokenizer:
        """The all-MiniLM-L6-v2 WordPiece tokenizer shipped with chunkforge."""
        return _default_tokenizer()

    @property
    def fast_path(self) -> bool:
        """True when this tokenizer runs on chunkforge's exact fast path."""
        return self._native.fast_path

    @property
    def tokenized(self) -> tuple[int, int]:
        """``(texts, bytes)`` this tokenizer has tokenized whole so far (a diagnostic:
        the index and the bulk job tokenize each document once; words recounted
        alone are not counted).

        >>> from chunkforge import RecursiveChunker
        >>> tok = Tokenizer.default(); before = tok.tokenized
        >>> _ = RecursiveChunker(tok, max_tokens=8).chunk("one two three")
        >>> tok.tokenized[0] - before[0]
        1
        """
        return self._native.tokenized

    def count(self, text: str) -> int:
        """Number of tokens of ``text``, without special tokens."""
        return self._native.count(text)

    def count_batch(self, texts: Iterable[str], threads: int | None = None) -> np.ndarray:
        """Token counts of many texts (GIL released, parallel across texts)."""
        return self._native.count_batch(_as_list(texts), threads=check_threads(threads))

    def words(self, texts: Iterable[str], threads: int | None = None) -> list[bytes | None]:
        """Each text's words, saved to keep beside the text: the index's expander then takes it
        without tokenizing it again (the LanceDB store keeps them). 6 bytes a word, little-endian
        uint16 ``(gap since the last word's end, length, 2 * tokens + added)`` (byte lengths of
        its UTF-8; ``added``: an added token such as ``[CLS]`` written in the text). None for a
        text this tokenizer cannot count word by word, or where a value does not fit 16 bits (a
        gap or word of 64 KiB, a word of 32,768 tokens).

        >>> import numpy as np
        >>> (saved,) = Tokenizer.default().words(["Hello, world!"])
        >>> np.frombuffer(saved, "<u2").reshape(-1, 3).tolist()
        [[0, 5, 2], [0, 1, 2], [1, 5, 2], [0, 1, 2]]
        """
        return self._native.words(_as_list(texts), threads=check_threads(threads))

    def span_counter(self, text: str) -> _native.SpanCounter:
        """Tokenizes ``text`` once; ``.count(start, end)`` then gives the exact
        token count of any ``text[start:end]`` encoded alone, in O(log n).

        >>> counter = Tokenizer.default().span_counter("Hello, world! Bye.")
        >>> counter.count(0, 13), counter.count(14, 18)
        (4, 2)
        """
        return _native.SpanCounter(self._native, text)

    def encode_offsets(self, text: str) -> Encoding:
        """Token ids and ``(start, end)`` character offsets of every token."""
        ids, offsets = self._native.encode_offsets(text)
        return Encoding(ids, offsets)

    def __repr__(self) -> str:
        return f"Tokenizer({self.source!r})"


def model_max_length(folder: Path) -> int | None:
    """Tokens a model folder's model takes, special ones included: sentence-transformers'
    ``max_seq_length``, else ``max_position_embeddings`` (at most 512), else None."""
    import json

    def read(name: str) -> dict[str, Any]:
        path = folder / name
        try:
            value = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise TokenizerError(f"cannot read it: {exc}", where=str(path)) from exc
        if not isinstance(value, dict):
            raise TokenizerError(f"must hold a JSON object, not a {type(value).__name__}", where=str(path))
        return value

    sbert = read("sentence_bert_config.json")
    if "max_seq_length" in sbert:
        return int(sbert["max_seq_length"])
    limit = read("config.json").get("max_position_embeddings")
    return min(limit, 512) if isinstance(limit, int) else None


@functools.cache
def _default_tokenizer() -> Tokenizer:
    data = resources.files("chunkforge") / "data" / DEFAULT_TOKENIZER
    return Tokenizer(_native.Tokenizer.from_str(data.read_text(encoding="utf-8")), DEFAULT_TOKENIZER)


def _unpickle(json: str | None, source: str, window: int | None) -> Tokenizer:
    """A pickled :class:`Tokenizer` again (``json`` None: the default tokenizer)."""
    if json is None:
        default = _default_tokenizer()
        return default if window is None else default.with_window(window)
    return Tokenizer(_native.Tokenizer.from_str(json), source, json, window)


def as_tokenizer(tokenizer: Any) -> Tokenizer:
    """Accepts a Tokenizer, a path to a tokenizer.json or model folder, a
    ``tokenizers.Tokenizer``, an encoder (its tokenizer, which knows the encoder's
    window), or None for the default tokenizer."""
    if tokenizer is None:
        return Tokenizer.default()
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    inner = getattr(tokenizer, "tokenizer", None)
    if isinstance(inner, Tokenizer) and hasattr(tokenizer, "max_length"):
        return inner
    if isinstance(tokenizer, (str, os.PathLike)):
        path = Path(tokenizer)
        return Tokenizer.from_pretrained(path) if path.is_dir() else Tokenizer.from_file(path)
    if hasattr(tokenizer, "to_str"):
        return Tokenizer.from_tokenizers(tokenizer)
    raise ArgumentTypeError(
        "must be a chunkforge.Tokenizer, a path to tokenizer.json, "
        f"a tokenizers.Tokenizer, an Encoder or None, not {type(tokenizer).__name__}",
        param="tokenizer",
    )


def check_threads(threads: Any) -> int | None:
    """``threads``: None (all cores) or an int from 1 to 4 x the cores (``_native.max_threads()``);
    errors name the parameter."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ArgumentTypeError(f"must be an int or None, not {type(threads).__name__}", param="threads")
    cap = _native.max_threads()
    if not 1 <= threads <= cap:
        raise ArgumentError(f"must be between 1 and {cap} (4 x the {cap // 4} cores), got {threads}", param="threads")
    return int(threads)


def _as_list(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        raise ArgumentTypeError("must be a list of str, not a single str", param="texts")
    return texts if isinstance(texts, list) else list(texts)
