"""Chunkers and encoders built from options: the CLI's flags and the bulk job's spec
(``chunkforge.pipeline``) name them the same way, so both build them here.

>>> from types import SimpleNamespace
>>> args = SimpleNamespace(strategy="markdown", tokenizer=None, model=None, max_tokens=64, overlap=0, levels="")
>>> ChunkerSet(args).key("notes.rst")
'rst'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._io import syntax_or_default
from .chunk import Chunk
from .chunkers import (
    CodeChunker,
    HierarchicalChunker,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    language_for_path,
)
from .errors import InputError
from .tokenizer import Tokenizer, as_tokenizer

if TYPE_CHECKING:
    from ._io import Doc
    from .encoder import Encoder

CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".rs", ".go", ".java")

STRATEGIES = ("token", "recursive", "sentence", "markdown", "code", "hierarchical")


class ChunkerSet:
    """The chunker for each document: one per strategy, and for ``markdown`` /
    ``code`` one per syntax or language, picked from the document's name."""

    def __init__(self, args: Any) -> None:
        self.strategy, self.tokenizer = args.strategy, chunk_tokenizer(args)
        self.max_tokens, self.overlap = args.max_tokens, args.overlap  # max_tokens None: the tokenizer's window
        self.levels = parse_levels(args.levels) if args.strategy == "hierarchical" else ()
        self._cache: dict[str, object] = {}
        self.key("x.py" if args.strategy == "code" else "x.md")  # bad parameters fail before any input is read

    def key(self, name: str) -> str:
        """Which chunker handles the document called ``name``."""
        key: str
        if self.strategy == "markdown":
            key = syntax_or_default(name)  # the one rule of chunkforge._io
        elif self.strategy == "code":
            language = language_for_path(name)
            if language is None:
                raise InputError(f"{name}: cannot tell its programming language from the extension")
            key = language
        else:
            key = self.strategy
        if key not in self._cache:
            self._cache[key] = self._make(key)
        return key

    def _make(self, key: str) -> object:
        tok, n, overlap = self.tokenizer, self.max_tokens, self.overlap
        try:
            if self.strategy == "token":
                return TokenChunker(tok, max_tokens=n, overlap=overlap)
            if self.strategy == "sentence":
                return SentenceChunker(tok, max_tokens=n, overlap_sentences=overlap)
            if self.strategy == "markdown":
                return MarkdownChunker(tok, max_tokens=n, overlap=overlap, syntax=key)
            if self.strategy == "code":
                return CodeChunker(tok, language=key, max_tokens=n)
            if self.strategy == "hierarchical":
                return HierarchicalChunker(tok, levels=self.levels)
            return RecursiveChunker(tok, max_tokens=n, overlap=overlap)
        except (OSError, ValueError, TypeError, ImportError) as exc:
            raise InputError(str(exc)) from exc

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
        if self.strategy == "hierarchical":
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
        ids the native chunkers sized the chunks on (``chunk_batch_ids``: one tokenization of
        each document); a chunker without them (``CodeChunker``) has each chunk's text encoded."""
        out: list[tuple[list[Chunk], list[np.ndarray]]] = [([], []) for _ in batch]
        for key, members in self._groups(batch).items():
            chunker: Any = self._cache[key]
            texts = [batch[i].text for i in members]
            done = chunker.chunk_batch_ids(texts, threads=threads)
            if done is None:
                chunks = chunker.chunk_batch(texts, threads=threads)
                done = (chunks, [[self.tokenizer.encode_offsets(c.text).ids for c in cs] for cs in chunks])
            for i, chunks, ids in zip(members, *done):
                out[i] = (chunks, ids)
        return out


def chunk_tokenizer(args: Any) -> Tokenizer:
    """The tokenizer of ``chunk``: ``--tokenizer FILE``, else ``--model``'s (the default
    model's when not given), which knows the model's window (the default ``--max-tokens``)."""
    try:
        if args.tokenizer is not None:
            return as_tokenizer(args.tokenizer)
        if args.model in (None, "default"):
            return Tokenizer.default_model()
        return Tokenizer.from_pretrained(args.model)
    except (OSError, ValueError, TypeError) as exc:
        flag = "--tokenizer" if args.tokenizer is not None else "--model"
        prefix = "" if args.tokenizer is not None else f"{flag} {args.model}: "
        raise InputError(f"{prefix}{exc}") from exc


def parse_levels(spec: str) -> tuple[int, ...]:
    """``"2048,512,128"`` as a tuple of ints."""
    try:
        return tuple(int(x) for x in spec.split(","))
    except ValueError as exc:
        raise InputError(f"--levels must be comma-separated integers, got {spec!r}") from exc


def load_encoder(args: Any) -> Encoder:
    """The encoder named by ``--model``; InputError names the bad argument."""
    for name in ("threads", "max_batch_tokens", "part_rows"):
        value = getattr(args, name, None)  # a command may lack the flag
        if value is not None and value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    options = {
        "on_overflow": getattr(args, "on_overflow", "warn"),
        "max_batch_tokens": getattr(args, "max_batch_tokens", None),
        "intra_op_threads": args.threads,
    }
    try:
        from .encoder import Encoder

        show = False if args.no_progress else None
        if args.model == "default":
            encoder = Encoder.default(args.variant, show_progress=show, **options)
        else:
            encoder = Encoder.from_pretrained(args.model, variant=args.variant, show_progress=show, **options)
    except (ImportError, OSError, ValueError) as exc:
        raise InputError(f"--model {args.model}: {exc}") from exc
    encoder.overflow_option = "--on-overflow {}"  # messages name the flag, not the Python keyword
    return encoder
