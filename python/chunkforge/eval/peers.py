"""Other projects' splitters as ``chunkforge eval`` chunkers: a config compares LangChain,
LlamaIndex, chonkie or semchunk with one line, ``[chunker] type = "langchain"`` (or
``"llamaindex"``, ``"chonkie"``, ``"semchunk"``), sized like chunkforge's own chunkers in the
evaluation's tokenizer (the encoder's): ``max_tokens`` (default: the model's window) and
``overlap`` tokens, the table's other keys passed to the splitter. Install them with
``pip install "chunkforge[bench]"`` (LangChain and LlamaIndex also come with their own extras).

The ``"package.module:Factory"`` hook (:func:`as_chunker`) takes these splitters too: a
LangChain ``TextSplitter``, LlamaIndex ``NodeParser``/``TextSplitter`` or chonkie chunker
class is built by the adapter of its framework, and an instance of one (or a semchunk
chunker) that a factory returns is wrapped.

Every peer's chunks become :class:`~chunkforge.Chunk` spans of the source: the offsets the
splitter reports (chonkie, semchunk), else where its text is found, in order, in the document
(LangChain, LlamaIndex); ``token_count`` is the evaluation tokenizer's count of that slice.

>>> from chunkforge import Tokenizer
>>> chunker = as_chunker(lambda text: text.split("\\n\\n"), Tokenizer.default(), "paragraphs")
>>> [(c.text, c.start, c.end, c.token_count) for c in chunker.chunk("One two.\\n\\nThree.")]
[('One two.', 0, 8, 3), ('Three.', 10, 16, 2)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..chunk import Chunk
from ..errors import DatasetError
from ..tokenizer import Tokenizer

Spans = list[tuple[int, int]]
"""A document's chunks as ``(start, end)`` str offsets."""

PEER_EXTRA = 'pip install "chunkforge[bench]"'


class PeerChunker:
    """A chunker of the evaluation around another project's splitter: ``split(text)`` gives
    a document's ``(start, end)`` offsets; :meth:`chunk_batch` turns them into chunks whose
    ``token_count`` is ``tokenizer``'s count of the slice. Errors name the peer.

    >>> chunker = PeerChunker("halves", lambda t: [(0, len(t) // 2), (len(t) // 2, len(t))], Tokenizer.default())
    >>> [c.text for c in chunker.chunk("abcd")]
    ['ab', 'cd']
    """

    def __init__(self, name: str, split: Callable[[str], Sequence[tuple[int, int]]], tokenizer: Tokenizer) -> None:
        self.name = name
        self.split = split
        self.tokenizer = tokenizer

    def __repr__(self) -> str:
        return f"PeerChunker({self.name})"

    def chunk(self, text: str) -> list[Chunk]:
        return self.chunk_batch([text])[0]

    def chunk_batch(self, texts: Sequence[str]) -> list[list[Chunk]]:
        out = []
        for n, text in enumerate(texts):
            try:
                spans = [(int(s), int(e)) for s, e in self.split(text)]
            except DatasetError:
                raise
            except Exception as exc:  # another project's code: one line naming it, not its traceback
                raise DatasetError(f"{self.name} failed on document {n}: {type(exc).__name__}: {exc}") from exc
            spans = [(s, e) for s, e in spans if e > s]
            bad = next(((s, e) for s, e in spans if not 0 <= s < e <= len(text)), None)
            if bad is not None:
                raise DatasetError(
                    f"{self.name}: chunk offsets {bad} are outside document {n} ({len(text)} characters)"
                )
            pieces = [text[s:e] for s, e in spans]
            counts: list[int] = self.tokenizer.count_batch(pieces).tolist() if pieces else []
            out.append([Chunk(p, s, e, int(c), i) for i, (p, (s, e), c) in enumerate(zip(pieces, spans, counts))])
        return out


def locate(text: str, pieces: Sequence[str], name: str = "the splitter") -> Spans:
    """Where each of ``pieces`` (a splitter's chunk texts, in document order) lies in
    ``text``: the first match at or after the previous chunk's start plus one (chunks may
    overlap), verbatim, else with any run of whitespace standing for any other.

    >>> locate("a b. a b. c", ["a b.", "a b.", "c"])
    [(0, 4), (5, 9), (10, 11)]
    >>> locate("one\\n\\ntwo", ["one two"])
    [(0, 8)]
    """
    spans: Spans = []
    cursor = 0
    for i, piece in enumerate(pieces):
        if not piece.strip():
            continue
        span = find(text, piece, cursor)
        if span is None:
            raise DatasetError(f"{name}: chunk {i} is not a slice of its document: {piece[:60]!r}")
        spans.append(span)
        cursor = span[0] + 1
    return spans


def find(text: str, piece: str, cursor: int) -> tuple[int, int] | None:
    """The first place at or after ``cursor`` where ``piece`` lies in ``text``: verbatim, else
    with any run of whitespace standing for any other; None when it is not there."""
    start = text.find(piece, cursor)
    if start >= 0:
        return start, start + len(piece)
    found = re.compile(r"\s+".join(map(re.escape, piece.split()))).search(text, cursor)
    return None if found is None else found.span()


def offsets_or_found(text: str, chunks: Sequence[tuple[str, int, int]], name: str) -> Spans:
    """Spans of chunks that report their own offsets (``(text, start, end)``): those offsets
    where they slice the chunk's text out of the document, else where its text is found
    after the previous chunk's start; a chunk in neither (text decoded from tokens, offsets
    of that decoded text) is an error."""
    spans: Spans = []
    cursor = 0
    for i, (piece, start, end) in enumerate(chunks):
        span: tuple[int, int] | None = (start, end)
        if not (0 <= start <= end <= len(text) and text[start:end] == piece):
            span = find(text, piece, cursor) if piece.strip() else None
        if span is None:
            raise DatasetError(
                f"{name}: chunk {i} reports offsets ({start}, {end}) that do not hold its text, and its text "
                f"({piece[:40]!r}) is not in the document: its spans cannot be scored"
            )
        spans.append(span)
        cursor = span[0] + 1
    return spans


def sizes(tokenizer: Tokenizer, params: dict[str, Any]) -> tuple[int, int, dict[str, Any]]:
    """``(max_tokens, overlap, other params)`` of a peer's table; the framework's own
    ``chunk_size``/``chunk_overlap`` are taken for them."""
    params = dict(params)
    max_tokens = params.pop("max_tokens", None)
    overlap = params.pop("overlap", None)
    if "chunk_size" in params:
        if max_tokens is not None:
            raise DatasetError("give max_tokens or chunk_size, not both")
        max_tokens = params.pop("chunk_size")
    if "chunk_overlap" in params:
        if overlap is not None:
            raise DatasetError("give overlap or chunk_overlap, not both")
        overlap = params.pop("chunk_overlap")
    max_tokens = (tokenizer.window or 254) if max_tokens is None else max_tokens
    overlap = 0 if overlap is None else overlap
    for key, value, low in (("max_tokens", max_tokens, 1), ("overlap", overlap, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise DatasetError(f"{key} must be an integer >= {low}, not {value!r}")
    return max_tokens, overlap, params


def _import(module: str, peer: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"[chunker] type {peer!r} needs {module.split('.')[0]}: {PEER_EXTRA}") from exc


def _member(module: Any, name: Any, peer: str) -> Any:
    if not isinstance(name, str):
        return name  # a class given directly (the hook)
    found = getattr(module, name, None)
    if found is None:
        raise DatasetError(f"{peer}: {module.__name__} has no {name!r}")
    return found


def langchain(tokenizer: Tokenizer, splitter: Any = "RecursiveCharacterTextSplitter", **params: Any) -> PeerChunker:
    """A LangChain text splitter (``splitter``: a class of ``langchain_text_splitters``, default
    ``RecursiveCharacterTextSplitter``) counting ``tokenizer``'s tokens (its ``length_function``),
    ``chunk_size=max_tokens``, ``chunk_overlap=overlap``; chunks found in the document."""
    max_tokens, overlap, params = sizes(tokenizer, params)
    cls = _member(_import("langchain_text_splitters", "langchain"), splitter, "langchain")
    params.setdefault("length_function", tokenizer.count)
    made = cls(chunk_size=max_tokens, chunk_overlap=overlap, **params)
    return wrap(made, tokenizer, f"langchain {cls.__name__}")


def llamaindex(tokenizer: Tokenizer, parser: Any = "SentenceSplitter", **params: Any) -> PeerChunker:
    """A LlamaIndex text splitter (``parser``: a class of ``llama_index.core.node_parser``, default
    ``SentenceSplitter``; ``TokenTextSplitter`` too) counting ``tokenizer``'s tokens (its
    ``tokenizer`` callable), ``chunk_size=max_tokens``, ``chunk_overlap=overlap``; chunks found
    in the document."""
    max_tokens, overlap, params = sizes(tokenizer, params)
    cls = _member(_import("llama_index.core.node_parser", "llamaindex"), parser, "llamaindex")

    def tokens(text: str) -> list[int]:  # LlamaIndex counts len() of what its tokenizer returns
        return [0] * tokenizer.count(text)

    params.setdefault("tokenizer", tokens)
    made = cls(chunk_size=max_tokens, chunk_overlap=overlap, **params)
    return wrap(made, tokenizer, f"llamaindex {cls.__name__}")


def chonkie(tokenizer: Tokenizer, chunker: Any = "RecursiveChunker", **params: Any) -> PeerChunker:
    """A chonkie chunker (``chunker``: a class of ``chonkie``, default ``RecursiveChunker``;
    ``TokenChunker``, ``SentenceChunker`` too) on ``tokenizer``'s model as a ``tokenizers``
    tokenizer (padding and truncation off), ``chunk_size=max_tokens`` and, where it has
    one, ``chunk_overlap=overlap``; chonkie's own offsets."""
    max_tokens, overlap, params = sizes(tokenizer, params)
    cls = _member(_import("chonkie", "chonkie"), chunker, "chonkie")
    if overlap:
        import inspect

        if "chunk_overlap" not in inspect.signature(cls).parameters:
            raise DatasetError(f"overlap: chonkie {cls.__name__} has no chunk_overlap; leave overlap out")
        params["chunk_overlap"] = overlap
    made = cls(tokenizer=hf_tokenizer(tokenizer), chunk_size=max_tokens, **params)
    return wrap(made, tokenizer, f"chonkie {cls.__name__}")


def semchunk(tokenizer: Tokenizer, **params: Any) -> PeerChunker:
    """semchunk's chunker (``semchunk.chunkerify``) counting ``tokenizer``'s tokens, ``chunk_size=
    max_tokens``, ``overlap`` tokens; semchunk's own offsets. Other keys go to ``chunkerify``."""
    max_tokens, overlap, params = sizes(tokenizer, params)
    module = _import("semchunk", "semchunk")
    made = module.chunkerify(tokenizer.count, max_tokens, **params)
    return PeerChunker(
        "semchunk", lambda text: made(text, offsets=True, overlap=overlap or None)[1] if text else [], tokenizer
    )


PEERS: dict[str, Callable[..., Any]] = {
    "langchain": langchain,
    "llamaindex": llamaindex,
    "chonkie": chonkie,
    "semchunk": semchunk,
}
"""The peers a config's ``[chunker] type`` names, each ``factory(tokenizer, **params)``."""


def hf_tokenizer(tokenizer: Tokenizer) -> Any:
    """``tokenizer`` as a ``tokenizers.Tokenizer`` (from its JSON), padding and truncation off."""
    from importlib import resources

    tokenizers = _import("tokenizers", "chonkie")
    json = tokenizer.__reduce__()[1][0]  # the tokenizer.json text; None for the shipped default
    if json is None:
        from ..tokenizer import DEFAULT_TOKENIZER

        json = (resources.files("chunkforge") / "data" / DEFAULT_TOKENIZER).read_text(encoding="utf-8")
    hf = tokenizers.Tokenizer.from_str(json)
    hf.no_padding()
    hf.no_truncation()
    return hf


def _framework(obj: Any) -> str | None:
    """Which framework's splitter ``obj`` (a class or an instance) is, by its classes' modules."""
    cls = obj if isinstance(obj, type) else type(obj)
    for base in cls.__mro__:
        root = base.__module__.split(".")[0]
        if root == "langchain_text_splitters" and base.__name__ == "TextSplitter":
            return "langchain"
        if root == "llama_index" and base.__name__ in ("TextSplitter", "NodeParser"):
            return "llamaindex"
        if root == "chonkie" and base.__name__ == "BaseChunker":
            return "chonkie"
        if root == "semchunk" and base.__name__ == "Chunker":
            return "semchunk"
    return None


def wrap(made: Any, tokenizer: Tokenizer, name: str) -> PeerChunker:
    """A :class:`PeerChunker` around an instance of a framework's splitter (see :func:`as_chunker`)."""
    framework = _framework(made)
    if framework == "langchain" or (framework == "llamaindex" and callable(getattr(made, "split_text", None))):
        return PeerChunker(name, lambda text: locate(text, made.split_text(text), name), tokenizer)
    if framework == "llamaindex":
        from llama_index.core.schema import Document

        def nodes(text: str) -> Spans:
            return locate(text, [n.get_content() for n in made.get_nodes_from_documents([Document(text=text)])], name)

        return PeerChunker(name, nodes, tokenizer)
    if framework == "chonkie":
        return PeerChunker(
            name,
            lambda text: offsets_or_found(text, [(c.text, c.start_index, c.end_index) for c in made.chunk(text)], name),
            tokenizer,
        )
    if framework == "semchunk":
        return PeerChunker(name, lambda text: made(text, offsets=True)[1] if text else [], tokenizer)
    raise DatasetError(f"{name}: not a LangChain, LlamaIndex, chonkie or semchunk splitter")


def as_chunker(made: Any, tokenizer: Tokenizer, name: str) -> Any:
    """What a config's chunker factory returned, as a chunker the evaluation runs: itself when it
    has ``chunk_batch`` (chunkforge's contract: ``chunk_batch(texts)`` gives each text's chunks,
    each with ``start``, ``end`` and ``token_count``); a LangChain ``TextSplitter``, LlamaIndex
    ``NodeParser``, chonkie or semchunk chunker wrapped (:func:`wrap`); a plain function
    ``str -> list[str]`` wrapped, its pieces found in the text. Anything else is a
    :class:`~chunkforge.errors.DatasetError` stating the contract."""
    if callable(getattr(made, "chunk_batch", None)) and _framework(made) is None:
        return made
    if _framework(made) is not None:
        return wrap(made, tokenizer, name)
    if callable(made) and not isinstance(made, type):
        return PeerChunker(name, lambda text: locate(text, made(text), name), tokenizer)
    raise DatasetError(
        f"type {name!r} gave a {type(made).__name__}, not a chunker: the factory is called as "
        "factory(tokenizer, **params) and must return an object with chunk_batch(texts) -> list of chunks "
        "(start, end, token_count), a LangChain/LlamaIndex/chonkie/semchunk splitter, or a function str -> list[str]"
    )


def framework_factory(obj: Any) -> Callable[..., Any] | None:
    """For a framework's splitter class named by the hook (``langchain_text_splitters:
    RecursiveCharacterTextSplitter``), the factory that builds it sized in the evaluation's
    tokens; None for anything else (a factory called as it is)."""
    if not isinstance(obj, type):
        return None
    framework = _framework(obj)
    if framework == "langchain":
        return lambda tokenizer, **params: langchain(tokenizer, obj, **params)
    if framework == "llamaindex":
        return lambda tokenizer, **params: llamaindex(tokenizer, obj, **params)
    if framework == "chonkie":
        return lambda tokenizer, **params: chonkie(tokenizer, obj, **params)
    return None
