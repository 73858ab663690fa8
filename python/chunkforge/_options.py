"""Chunkers and encoders built from options: the CLI's flags and the bulk job's spec
(:mod:`chunkforge.bulk`) name them the same way, so both build them here. Errors name the
options (``model``, ``tokenizer``); the CLI spells them as its flags.

>>> ChunkerSet(ChunkerOptions("markdown", max_tokens=64)).key("notes.rst")
'rst'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .chunk import Chunk
from .chunkers.registry import CHUNKERS, Limits, cli_strategies
from .errors import InputError
from .tokenizer import Tokenizer, as_tokenizer

if TYPE_CHECKING:
    from ._io import Doc
    from .encoder import Encoder

CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rs", ".go", ".java")


@dataclass(frozen=True)
class ChunkerOptions:
    """The chunkers to build: ``strategy`` and its limits (``max_tokens=None``: the tokenizer's
    window; ``levels``: the tree's limits for ``hierarchical``), counting with ``tokenizer``
    (a :class:`Tokenizer` or a ``tokenizer.json`` path), else ``model``'s tokenizer (None or
    ``"default"``: the default model's).

    >>> ChunkerOptions("hierarchical", levels=(512, 128)).levels
    (512, 128)
    """

    strategy: str = "recursive"
    max_tokens: int | None = None
    overlap: int = 0
    levels: tuple[int, ...] = ()
    tokenizer: Tokenizer | str | None = None
    model: str | None = None


@dataclass(frozen=True)
class EncoderOptions:
    """The encoder to load: ``model`` (a model folder, or ``"default"``), its ``variant``, and
    the :class:`~chunkforge.Encoder` options of the same names (``threads``: ONNX Runtime's
    intra-op threads).

    >>> EncoderOptions(variant="fp32", threads=2).model
    'default'
    """

    model: str = "default"
    variant: str = "auto"
    on_overflow: str = "warn"
    max_batch_tokens: int | None = None
    threads: int | None = None
    show_progress: bool | None = None


class ChunkerSet:
    """The chunker for each document: one per strategy (a kind of
    :data:`~chunkforge.chunkers.registry.CHUNKERS`), and for a kind with syntaxes
    (``markdown``, ``code``) one per syntax or language, picked from the document's name."""

    def __init__(self, options: ChunkerOptions) -> None:
        if options.strategy not in cli_strategies():
            raise InputError(
                f"must be one of {', '.join(cli_strategies())}, not {options.strategy!r}", param="strategy"
            )
        self.strategy, self.kind = options.strategy, CHUNKERS[options.strategy]
        self.tokenizer = chunk_tokenizer(options)
        self.limits = Limits(options.max_tokens, options.overlap, options.levels)
        self._cache: dict[str, object] = {}
        self.key(self.kind.sample_name)  # bad parameters fail before any input is read

    def key(self, name: str) -> str:
        """Which chunker handles the document called ``name``."""
        key = self.strategy if self.kind.syntax_of is None else self.kind.syntax_of(name)
        if key not in self._cache:
            self._cache[key] = self._make(key)
        return key

    def _make(self, key: str) -> object:
        params = self.kind.limits(self.limits)
        if self.kind.syntax_of is not None:
            params[self.kind.syntax_keyword] = key
        try:
            return self.kind.factory(self.tokenizer, **params)
        except (OSError, ValueError, TypeError, ImportError) as exc:
            raise InputError.of(exc) from exc

    def chunker(self, name: str) -> Any:
        """The chunker of the document called ``name``."""
        return self._cache[self.key(name)]

    def _groups(self, batch: list[Doc]) -> dict[str, list[int]]:
        """The documents of the batch (their indices) by the chunker that handles them."""
        groups: dict[str, list[int]] = {}
        for i, doc in enumerate(batch):
            groups.setdefault(self.key(str(doc.doc_id)), []).append(i)
        return groups

    def chunks(self, batch: list[Doc], threads: int | None) -> list[list[Chunk]]:
        """The chunks of every document of the batch, in order."""
        if self.kind.tree:
            tree = self.chunker("")
            return [tree.chunk(doc.text, doc_id=str(doc.doc_id)) for doc in batch]
        out: list[list[Chunk]] = [[] for _ in batch]
        for key, members in self._groups(batch).items():
            done = self._cache[key].chunk_batch([batch[i].text for i in members], threads=threads)  # type: ignore[attr-defined]
            for i, chunks in zip(members, done):
                out[i] = chunks
        return out

    def chunks_with_ids(self, batch: list[Doc], threads: int | None) -> list[tuple[list[Chunk], list[np.ndarray]]]:
        """Each document's chunks and each chunk's token ids (no special tokens), in order: the
        ids a kind with ``native_token_ids`` sized the chunks on (``chunk_batch_ids``: one
        tokenization of each document); any other kind (``code``) has each chunk's text encoded."""
        out: list[tuple[list[Chunk], list[np.ndarray]]] = [([], []) for _ in batch]
        for key, members in self._groups(batch).items():
            chunker: Any = self._cache[key]
            texts = [batch[i].text for i in members]
            done = chunker.chunk_batch_ids(texts, threads=threads) if self.kind.native_token_ids else None
            if done is None:
                chunks = chunker.chunk_batch(texts, threads=threads)
                done = (chunks, [[self.tokenizer.encode_offsets(c.text).ids for c in cs] for cs in chunks])
            for i, chunks, ids in zip(members, *done):
                out[i] = (chunks, ids)
        return out


def chunk_tokenizer(options: ChunkerOptions) -> Tokenizer:
    """The tokenizer that counts: ``options.tokenizer``, else ``options.model``'s (the default
    model's when not given), which knows the model's window (the default ``max_tokens``)."""
    try:
        if options.tokenizer is not None:
            return as_tokenizer(options.tokenizer)
        if options.model in (None, "default"):
            return Tokenizer.default_model()
        return Tokenizer.from_pretrained(options.model)
    except (OSError, ValueError, TypeError) as exc:
        if options.tokenizer is not None:
            raise InputError.of(exc) from exc
        raise InputError(f"{options.model}: {exc}", param="model") from exc


def load_encoder(options: EncoderOptions) -> Encoder:
    """The encoder named by ``options.model``; InputError names the model."""
    settings = {
        "on_overflow": options.on_overflow,
        "max_batch_tokens": options.max_batch_tokens,
        "intra_op_threads": options.threads,
    }
    try:
        from .encoder import Encoder

        if options.model == "default":
            return Encoder.default(options.variant, show_progress=options.show_progress, **settings)
        return Encoder.from_pretrained(
            options.model, variant=options.variant, show_progress=options.show_progress, **settings
        )
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"{options.model}: {exc}", param="model") from exc
