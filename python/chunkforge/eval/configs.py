"""What ``chunkforge eval`` compares: the representation registry (chunkers are those of
:mod:`chunkforge.chunkers.registry`) and the TOML :class:`Config` of one configuration.

>>> Config.load("tests/data/eval/configs/recursive-254.toml").chunker
{'type': 'recursive', 'max_tokens': 254}
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._io import syntax_or_default
from ..chunk import Chunk
from ..chunkers.markdown import sections
from ..chunkers.registry import eval_chunkers
from ..errors import ArgumentError, DatasetError
from ..represent import render
from ..tokenizer import Tokenizer
from .datasets import Document
from .retrieval import Embed

if TYPE_CHECKING:
    from ..encoder import Encoder

Representation = Callable[..., np.ndarray]
"""``fn(docs, chunks, encoder, embed, **params) -> (n, dim) float32``: the vectors of all
chunks (document order, then chunk order); ``embed`` is the cached text embedder."""

REPRESENTATIONS: dict[str, Representation] = {}
HEADING_TEMPLATE = "{title} > {heading_path}\n\n{text}"
"""The ``heading`` representation's text: title and headings, a blank line, the chunk."""


def register_representation(name: str, fn: Representation) -> None:
    """Makes ``[representation] type = name`` available to configs (e.g. ``"late"``); a config
    may also name any function as ``type = "package.module:function"``.

    >>> register_representation("plain-again", REPRESENTATIONS["plain"])
    """
    REPRESENTATIONS[name] = fn


def _lookup(registry: Mapping[str, Any], name: Any, what: str) -> Any:
    """``registry[name]``, or for ``"package.module:attribute"`` that attribute (imported)."""
    if isinstance(name, str) and name in registry:
        return registry[name]
    if isinstance(name, str) and ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ArgumentError(f"{name!r} cannot be imported: {exc}", param=f"[{what}] type") from exc
    raise ArgumentError(
        f"must be one of {', '.join(registry)} or 'module:attribute', not {name!r}", param=f"[{what}] type"
    )


def config_chunkers() -> dict[str, Callable[..., Any]]:
    """The factories a config's ``[chunker] type`` names: the bulk job's kinds
    (:func:`~chunkforge.chunkers.registry.eval_chunkers`) and the peers of
    :mod:`chunkforge.eval.peers` (``langchain``, ``llamaindex``, ``chonkie``, ``semchunk``).

    >>> list(config_chunkers())[-4:]
    ['langchain', 'llamaindex', 'chonkie', 'semchunk']
    """
    from .peers import PEERS

    return {**eval_chunkers(), **PEERS}


def embed_texts(docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]]) -> list[str]:
    """The chunks' texts, flattened in document order."""
    return [c.text for cs in chunks for c in cs]


def plain_representation(
    docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], encoder: Encoder, embed: Embed
) -> np.ndarray:
    """Each chunk embedded as its own text."""
    return embed(embed_texts(docs, chunks))


def heading_texts(
    docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], syntax: str = "auto", template: str = HEADING_TEMPLATE
) -> list[str]:
    """Per chunk ``template`` rendered by :func:`chunkforge.represent.render` with the
    document's ``title`` metadata, the chunk's heading path and its text (a template's
    ``{prefix}`` stands for ``{title} > {heading_path}``); a chunk without either keeps its
    text. The heading path is the chunk's own, else that of the section enclosing its
    start, parsed as ``syntax`` (``auto``: by the document id, :func:`chunkforge._io.syntax_or_default`).

    >>> doc = Document("a.md", "# Setup\\n\\nRun it.", {"title": "Guide"})
    >>> heading_texts([doc], [[Chunk("Run it.", 10, 17, 3, 0)]])
    ['Guide > Setup\\n\\nRun it.']
    """
    template = template.replace("{prefix}", "{title} > {heading_path}")
    out = []
    for doc, cs in zip(docs, chunks):
        outline: tuple[list[int], list[tuple[str, ...]]] | None = None
        title = str(doc.metadata.get("title", ""))
        for c in cs:
            path = c.heading_path
            if not path:
                if outline is None:
                    found = sections(doc.text, syntax_or_default(doc.doc_id) if syntax == "auto" else syntax)
                    outline = [s for s, _, _ in found], [p for _, _, p in found]
                i = bisect_right(outline[0], c.start) - 1
                path = outline[1][i] if i >= 0 else ()
            bare = not (title or path)
            out.append(
                c.text if bare else render(dataclasses.replace(c, heading_path=path, context=None), title, template)
            )
    return out


def heading_representation(
    docs: Sequence[Document], chunks: Sequence[Sequence[Chunk]], encoder: Encoder, embed: Embed, **params: Any
) -> np.ndarray:
    """Each chunk embedded with its heading path before its text (see :func:`heading_texts`)."""
    return embed(heading_texts(docs, chunks, **params))


REPRESENTATIONS.update(plain=plain_representation, heading=heading_representation)


@dataclass
class Config:
    """One configuration to compare: ``[chunker]`` (``type`` and its parameters),
    ``[representation]`` (``type`` and parameters) and ``[encoder]`` (``model``:
    ``default`` or a model folder; ``variant``; other Encoder options). Or, instead of
    ``[chunker]`` and ``[representation]``, a retrieval policy: ``[index]`` (options of
    :class:`~chunkforge.Index`) and ``[query]`` (options of ``Index.query``), scored by
    :func:`~chunkforge.eval.evaluate_index` on the same questions.

    >>> Config.load("tests/data/eval/configs/recursive-254.toml").chunker
    {'type': 'recursive', 'max_tokens': 254}
    """

    name: str
    chunker: dict[str, Any]
    representation: dict[str, Any] = field(default_factory=lambda: {"type": "plain"})
    encoder: dict[str, Any] = field(default_factory=lambda: {"model": "default"})
    index: dict[str, Any] | None = None
    query: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Config:
        """Reads a TOML config; errors name the file and the bad key (a ``"module:attribute"``
        type is imported here, so a missing module is named before any work)."""
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # Python 3.10
            import tomli as tomllib
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as exc:
            raise DatasetError(f"cannot read config {path}: {exc.strerror or exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise DatasetError(f"not valid TOML ({exc})", where=f"config {path}") from exc
        keys = ("chunker", "representation", "encoder", "index", "query")
        unknown = set(data) - {"name", *keys}
        if unknown:
            raise DatasetError(
                f"unknown key {min(unknown)!r} (expected name, {', '.join(keys)})", where=f"config {path}"
            )
        policy = "index" in data or "query" in data
        if policy and ("chunker" in data or "representation" in data):
            raise DatasetError("[index]/[query] (a retrieval policy) or [chunker], not both", where=f"config {path}")
        tables: dict[str, Any] = {"representation": {"type": "plain"}, "encoder": {"model": "default"}}
        optional = {"representation", "encoder", "index", "query"} | ({"chunker"} if policy else set())
        for key in keys:
            if key not in data and key in optional:
                continue
            if not isinstance(data.get(key), dict):
                raise DatasetError(f"[{key}] is missing or not a table", where=f"config {path}")
            tables[key] = dict(data[key])
        tables["representation"].setdefault("type", "plain")
        if policy:
            tables.update(chunker={}, index=tables.get("index", {}))
        for key, registry in (("chunker", config_chunkers()), ("representation", REPRESENTATIONS)):
            try:
                if not policy:
                    _lookup(registry, tables[key].get("type"), key)
            except ValueError as exc:
                raise DatasetError.of(exc, where=f"config {path}") from exc
        name = data.get("name", Path(path).name.removesuffix(".toml"))
        return cls(str(name), **tables)

    def describe(self) -> str:
        """The config in one line, for the report's header."""
        if self.index is not None:
            return f"Index.query: index {self.index}, query {self.query}, {self.encoder}"
        return f"{self.chunker}, {self.representation}, {self.encoder}"

    def make_chunker(self, tokenizer: Tokenizer) -> Any:
        """The configured chunker, counting with ``tokenizer``: ``factory(tokenizer, **params)``
        of the ``[chunker]`` table (``type``: a registered kind, a peer, or the hook
        ``"package.module:Factory"``), made runnable by :func:`~chunkforge.eval.peers.as_chunker`;
        a LangChain, LlamaIndex or chonkie splitter class named by the hook is built by its peer
        adapter, sized in ``tokenizer``'s tokens."""
        from .peers import as_chunker, framework_factory

        params = {k: v for k, v in self.chunker.items() if k != "type"}
        kind = self.chunker["type"]
        factory = _lookup(config_chunkers(), kind, "chunker")
        try:
            made = (framework_factory(factory) or factory)(tokenizer, **params)
            return as_chunker(made, tokenizer, str(kind))
        except (TypeError, DatasetError) as exc:
            raise DatasetError(f"[chunker] {exc}", where=f"config {self.name}") from exc

    def make_encoder(self) -> Encoder:
        """The configured encoder (texts over its ``max_length`` are truncated quietly)."""
        from ..encoder import Encoder

        options = {k: v for k, v in self.encoder.items() if k not in ("model", "variant")}
        options.setdefault("on_overflow", "truncate")
        model = self.encoder.get("model", "default")
        if model == "default":
            return Encoder.default(self.encoder.get("variant", "optimized"), **options)
        return Encoder.from_pretrained(model, self.encoder.get("variant", "optimized"), **options)
