"""The chunker registry: every chunker kind by name, how it is built, and what it can do. The
CLI's ``--strategy`` choices, the bulk job's strategies, the options' chunker sets and the
evaluation's ``[chunker] type`` all read it, so a new kind is one entry here plus its module.

>>> sorted(name for name, kind in CHUNKERS.items() if kind.syntax_of is not None)
['code', 'markdown']
>>> register("recursive-again", ChunkerKind(RecursiveChunker))
>>> "recursive-again" in cli_strategies() and "recursive-again" in bulk_strategies()
True
>>> del CHUNKERS["recursive-again"]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._io import syntax_or_default
from ..errors import InputError
from .code import CodeChunker, language_for_path
from .hierarchy import HierarchicalChunker
from .markdown import MarkdownChunker
from .recursive import RecursiveChunker
from .semantic import SemanticChunker
from .sentence import SentenceChunker
from .token import TokenChunker


class Limits(NamedTuple):
    """The limits every command and job states the same way: ``max_tokens`` (None: the
    tokenizer's window), ``overlap`` and the tree's ``levels``."""

    max_tokens: int | None = None
    overlap: int = 0
    levels: tuple[int, ...] = ()


def token_limits(limits: Limits) -> dict[str, Any]:
    """The keywords of a chunker sized by ``max_tokens`` and ``overlap`` tokens."""
    return {"max_tokens": limits.max_tokens, "overlap": limits.overlap}


def language_of(name: str) -> str:
    """The programming language of the document called ``name``, by its extension."""
    language = language_for_path(name)
    if language is None:
        raise InputError(f"{name}: cannot tell its programming language from the extension")
    return language


@dataclass(frozen=True)
class ChunkerKind:
    """One kind of chunker. ``factory(counter, **params)`` builds it (``counter``: a
    tokenizer, or an encoder when ``needs_encoder``); ``limits`` turns the common
    :class:`Limits` into the factory's keywords. Capabilities: ``native_token_ids`` (its
    ``chunk_batch_ids`` gives each chunk's ids from the one tokenization it cut on),
    ``syntax_of`` (the syntax or language of a document, by its name, passed to the factory as
    ``syntax_keyword``; ``sample_name`` is a name it can handle), ``tree`` (its chunks form a
    tree of nodes, not one list a document).

    >>> CHUNKERS["sentence"].limits(Limits(128, 1))
    {'max_tokens': 128, 'overlap_sentences': 1}
    """

    factory: Callable[..., Any]
    limits: Callable[[Limits], dict[str, Any]] = token_limits
    native_token_ids: bool = True
    syntax_of: Callable[[str], str] | None = None
    syntax_keyword: str = "syntax"
    sample_name: str = "x.md"
    needs_encoder: bool = False
    tree: bool = False


CHUNKERS: dict[str, ChunkerKind] = {
    "token": ChunkerKind(TokenChunker),
    "recursive": ChunkerKind(RecursiveChunker),
    "sentence": ChunkerKind(
        SentenceChunker, limits=lambda lim: {"max_tokens": lim.max_tokens, "overlap_sentences": lim.overlap}
    ),
    "markdown": ChunkerKind(MarkdownChunker, syntax_of=syntax_or_default),
    "code": ChunkerKind(
        CodeChunker,
        limits=lambda lim: {"max_tokens": lim.max_tokens},
        native_token_ids=False,
        syntax_of=language_of,
        syntax_keyword="language",
        sample_name="x.py",
    ),
    "hierarchical": ChunkerKind(HierarchicalChunker, limits=lambda lim: {"levels": lim.levels}, tree=True),
    "semantic": ChunkerKind(
        SemanticChunker, limits=lambda lim: {"max_tokens": lim.max_tokens}, native_token_ids=False, needs_encoder=True
    ),
}
"""The chunker kinds by name, in the order the CLI lists them."""


def register(name: str, kind: ChunkerKind) -> None:
    """Makes ``kind`` available under ``name`` everywhere: ``chunkforge chunk --strategy``,
    the bulk job's ``strategy`` (``embed-docs --strategy``) unless it is a tree, and the
    evaluation's ``[chunker] type``; kinds that need an encoder are listed but not offered
    where only a tokenizer counts (see :func:`cli_strategies`).

    >>> register("token-again", ChunkerKind(TokenChunker)); del CHUNKERS["token-again"]
    """
    CHUNKERS[name] = kind


def cli_strategies() -> tuple[str, ...]:
    """The kinds ``chunkforge chunk --strategy`` offers: those a tokenizer alone builds.

    >>> cli_strategies()
    ('token', 'recursive', 'sentence', 'markdown', 'code', 'hierarchical')
    """
    return tuple(name for name, kind in CHUNKERS.items() if not kind.needs_encoder)


def bulk_strategies() -> tuple[str, ...]:
    """The kinds the bulk job cuts with: a tokenizer builds them and they give one list of
    chunks a document (a row a chunk).

    >>> bulk_strategies()
    ('token', 'recursive', 'sentence', 'markdown', 'code')
    """
    return tuple(name for name in cli_strategies() if not CHUNKERS[name].tree)


def eval_chunkers() -> dict[str, Callable[..., Any]]:
    """The factories a config's ``[chunker] type`` names (``factory(tokenizer, **params)``):
    the bulk job's kinds.

    >>> list(eval_chunkers())[:2]
    ['token', 'recursive']
    """
    return {name: CHUNKERS[name].factory for name in bulk_strategies()}
