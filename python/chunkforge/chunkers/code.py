"""Source code split at function, class and impl boundaries (tree-sitter grammars)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ..chunk import Chunk, ChunkBatch, Chunks
from ..errors import ArgumentError, ArgumentTypeError
from ..tokenizer import _as_list, check_threads
from ._base import BaseChunker, BatchSpans, Spans
from .recursive import RecursiveChunker

if TYPE_CHECKING:
    from .. import _native

# Unicode White_Space: what chunks are trimmed of, as by the other chunkers
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)

# Roles of node kinds: F (function-like) and C (container: split into members
# when too big) are definitions only when they have a body; T always is.
_F, _C, _T = "function", "container", "type"
_JS_ROLES = {
    "function_declaration": _F,
    "generator_function_declaration": _F,
    "method_definition": _F,
    "class_declaration": _C,
    "class": _C,
}
_TS_ROLES = {
    **_JS_ROLES,
    "function_signature": _F,
    "abstract_class_declaration": _C,
    "interface_declaration": _C,
    "internal_module": _C,
    "module": _C,
    "enum_declaration": _T,
}
_C_COMMENTS = frozenset({"comment"})
_JS_IMPORTS = frozenset({"import_statement"})


@dataclass(frozen=True)
class _Grammar:
    module: str
    function: str
    roles: dict[str, str]
    imports: frozenset[str]
    comments: frozenset[str]
    attributes: frozenset[str] = frozenset()


_GRAMMARS = {
    "python": _Grammar(
        "tree_sitter_python",
        "language",
        {"function_definition": _F, "class_definition": _C},
        frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
        _C_COMMENTS,
    ),
    "javascript": _Grammar("tree_sitter_javascript", "language", _JS_ROLES, _JS_IMPORTS, _C_COMMENTS),
    "typescript": _Grammar("tree_sitter_typescript", "language_typescript", _TS_ROLES, _JS_IMPORTS, _C_COMMENTS),
    "tsx": _Grammar("tree_sitter_typescript", "language_tsx", _TS_ROLES, _JS_IMPORTS, _C_COMMENTS),
    "rust": _Grammar(
        "tree_sitter_rust",
        "language",
        {
            "function_item": _F,
            "impl_item": _C,
            "trait_item": _C,
            "mod_item": _C,
            "struct_item": _T,
            "enum_item": _T,
            "union_item": _T,
            "macro_definition": _T,
        },
        frozenset({"use_declaration", "extern_crate_declaration"}),
        frozenset({"line_comment", "block_comment"}),
        frozenset({"attribute_item"}),
    ),
    "go": _Grammar(
        "tree_sitter_go",
        "language",
        {"function_declaration": _F, "method_declaration": _F, "type_declaration": _T},
        frozenset({"import_declaration"}),
        _C_COMMENTS,
    ),
    "java": _Grammar(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": _C,
            "interface_declaration": _C,
            "enum_declaration": _C,
            "record_declaration": _C,
            "annotation_type_declaration": _C,
            "method_declaration": _F,
            "constructor_declaration": _F,
            "compact_constructor_declaration": _F,
        },
        frozenset({"import_declaration"}),
        frozenset({"line_comment", "block_comment"}),
    ),
}

LANGUAGES: tuple[str, ...] = tuple(_GRAMMARS)

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
}

# Nodes that wrap a definition (decorators, `export`, `declare`), and member
# groups whose children are members themselves (a Java enum's methods).
_WRAPPERS = frozenset({"decorated_definition", "export_statement", "ambient_declaration", "expression_statement"})
_FLATTEN = frozenset({"enum_body_declarations"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def language_for_path(path: str | os.PathLike[str]) -> str | None:
    """The language of a source file from its extension, or None if unknown.

    >>> language_for_path("src/lib.rs"), language_for_path("App.tsx"), language_for_path("notes.txt")
    ('rust', 'tsx', None)
    """
    return _EXTENSIONS.get(os.path.splitext(os.fspath(path))[1].lower())


@cache
def _parser(language: str) -> Any:
    grammar = _GRAMMARS[language]
    try:
        import tree_sitter

        module = importlib.import_module(grammar.module)
    except ImportError as e:
        raise ImportError(
            f"CodeChunker(language={language!r}) needs the packages tree-sitter and "
            f"{grammar.module.replace('_', '-')}: pip install 'chunkforge[code]'"
        ) from e
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, grammar.function)()))


@dataclass(frozen=True, slots=True)
class _Piece:
    """A span (str indices, trimmed) on its way to becoming a chunk.

    ``kind``: ``def`` (atomic), ``small`` (merges with small neighbours),
    ``head``/``tail`` (a container's opening/closing text: joins its neighbour).
    """

    start: int
    end: int
    tokens: int
    kind: str
    path: tuple[str, ...]
    context: tuple[str, ...]


class CodeChunker(BaseChunker):
    """Splits source code at top-level units (functions, classes, impl blocks,
    with their leading comments, decorators and attributes) parsed by tree-sitter.

    Neighbouring small units (imports, constants, statements) merge greedily up
    to ``max_tokens``; a definition that fits is never cut. A class, impl, trait
    or interface too big is split into its members, whose chunks carry the
    signature line(s) in ``context`` and the qualified name in ``heading_path``;
    a body still too big is split at blank lines, then lines, then spaces. With
    ``include_imports``, the file's imports join the ``context`` of every chunk
    that does not contain them. ``language`` is one of :data:`LANGUAGES`
    (see :func:`language_for_path`).

    >>> source = ("import os\\n\\nclass Greeter:\\n    def hello(self):\\n        return 'hi'\\n\\n"
    ...           "    def bye(self):\\n        return 'bye'\\n")
    >>> for c in CodeChunker(language="python", max_tokens=20).chunk(source):
    ...     print(c.heading_path, repr(c.context), repr(c.text))
    () None 'import os'
    ('Greeter',) None "class Greeter:\\n    def hello(self):\\n        return 'hi'"
    ('Greeter', 'bye') 'class Greeter:' "def bye(self):\\n        return 'bye'"
    """

    def __init__(
        self,
        tokenizer: Any = None,
        language: str | None = None,
        max_tokens: int | None = None,
        *,
        include_imports: bool = False,
    ) -> None:
        super().__init__(tokenizer, max_tokens, 0)
        if not isinstance(language, str) or language.lower() not in _GRAMMARS:
            raise ArgumentError(f"must be one of {', '.join(LANGUAGES)}; got {language!r}", param="language")
        if not isinstance(include_imports, bool):
            raise ArgumentTypeError(f"must be a bool, not {type(include_imports).__name__}", param="include_imports")
        self.language = language.lower()
        self.include_imports = include_imports
        self._grammar = _GRAMMARS[self.language]
        self._parser = _parser(self.language)
        self._lines = RecursiveChunker(self.tokenizer, self.max_tokens, separators=["\n\n", "\n", " "])

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks one source file."""
        if not isinstance(text, str):
            raise ArgumentTypeError(f"must be a str, not {type(text).__name__}", param="text")
        layout = _Layout(self, text)
        pieces = layout.pieces()
        imports = layout.imports() if self.include_imports else []
        import_text = "\n".join(text[s:e] for s, e in imports)
        chunks = Chunks()
        for i, p in enumerate(pieces):
            context = list(p.context)
            if import_text and not any(s < p.end and p.start < e for s, e in imports):
                context.insert(0, import_text)
            chunks.append(
                Chunk(text[p.start : p.end], p.start, p.end, p.tokens, i, p.path, "code", "\n".join(context) or None)
            )
        return chunks

    __call__ = chunk

    def chunk_batch(self, texts: Iterable[str], threads: int | None = None) -> list[list[Chunk]]:
        """Chunks many files, in input order. tree-sitter holds the GIL, so
        ``threads`` is only checked: files are chunked one after another."""
        check_threads(threads)
        return ChunkBatch(self.chunk(t) for t in _as_list(texts))

    def spans(self, text: str) -> Spans:
        """Chunk spans of one file as numpy columns."""
        rows = [(c.start, c.end, c.token_count) for c in self.chunk(text)]
        return Spans(*_columns(rows, len(Spans._fields)))

    def spans_batch(self, texts: Iterable[str], threads: int | None = None) -> BatchSpans:
        """Chunk spans of many files as numpy columns; ``doc`` is the input index."""
        chunks = self.chunk_batch(texts, threads)
        rows = [(d, c.start, c.end, c.token_count) for d, cs in enumerate(chunks) for c in cs]
        return BatchSpans(*_columns(rows, len(BatchSpans._fields)))

    def _params(self) -> dict[str, Any]:
        return {
            "tokenizer": self.tokenizer,
            "language": self.language,
            "max_tokens": self.max_tokens,
            "include_imports": self.include_imports,
        }


def _columns(rows: Sequence[tuple[int, ...]], width: int) -> list[np.ndarray]:
    table = np.array(rows, dtype=np.int64).reshape(-1, width)
    return [np.ascontiguousarray(table[:, i]) for i in range(width)]


class _Layout:
    """One file being chunked: its syntax tree, byte-to-str offsets and token counter."""

    def __init__(self, chunker: CodeChunker, text: str) -> None:
        self.chunker = chunker
        self.grammar = chunker._grammar
        self.max_tokens = chunker.max_tokens
        self.text = text
        data = text.encode("utf-8", "surrogatepass")
        self.root = chunker._parser.parse(data).root_node
        self._offsets: np.ndarray | None = None
        if len(data) != len(text):
            # str index of a byte offset = number of UTF-8 lead bytes before it
            lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
            self._offsets = np.concatenate(([0], np.cumsum(lead)))
        self._counter: _native.SpanCounter | None = None

    def index(self, byte: int) -> int:
        """The str index of a byte offset of the UTF-8 source."""
        return byte if self._offsets is None else int(self._offsets[byte])

    def count(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]`` encoded alone (the text is tokenized once, on first use)."""
        if self._counter is None:
            self._counter = self.chunker.tokenizer.span_counter(self.text)
        return self._counter.count(start, end)

    def pieces(self) -> list[_Piece]:
        """The file's pieces, each within ``max_tokens``, in document order."""
        return self._region(self.root.named_children, 0, len(self.text), (), ())

    def imports(self) -> list[tuple[int, int]]:
        """Spans of the file's top-level import statements."""
        return [
            (self.index(n.start_byte), self.index(n.end_byte))
            for n in self.root.named_children
            if n.type in self.grammar.imports
        ]

    def _region(
        self, nodes: Sequence[Any], lo: int, hi: int, path: tuple[str, ...], context: tuple[str, ...]
    ) -> list[_Piece]:
        """Merged pieces of the str span ``[lo, hi)`` holding the sibling ``nodes``."""
        units = list(self._units(nodes, lo))
        ends = [start for start, _ in units[1:]] + [hi]
        pieces = [p for (start, node), end in zip(units, ends) for p in self._unit(start, end, node, path, context)]
        return _merge(pieces, self.count, self.max_tokens)

    def _units(self, nodes: Sequence[Any], lo: int) -> Iterator[tuple[int, Any]]:
        """``(start, node)`` of each unit: a node with its leading comments and
        attributes (``node`` None for trailing comments). A unit runs up to the
        next unit's start (a comment on the line where a node ends stays with
        it), so the units tile the region from ``lo`` on."""
        comments, attributes = self.grammar.comments, self.grammar.attributes
        pending: int | None = None
        previous = None
        for node in _members(nodes):
            if node.type in comments or node.type in attributes:
                trailing = (
                    node.type in comments and previous is not None and node.start_point[0] == previous.end_point[0]
                )
                if pending is None and not trailing:
                    pending = node.start_byte
                continue
            yield (lo if previous is None else self.index(node.start_byte if pending is None else pending)), node
            pending, previous = None, node
        if previous is None:
            yield lo, None
        elif pending is not None:
            yield self.index(pending), None

    def _unit(self, start: int, end: int, node: Any, path: tuple[str, ...], context: tuple[str, ...]) -> list[_Piece]:
        """Pieces of one unit spanning ``[start, end)``: itself when it fits,
        else its members (containers) or its lines."""
        start, end = _trim(self.text, start, end)
        if start >= end:
            return []
        core = _core(node) if node is not None else None
        role = self.grammar.roles.get(core.type) if core is not None else None
        body = core.child_by_field_name("body") if core is not None else None
        is_def = role == _T or (role is not None and body is not None) or _is_function_value(core)
        unit_path = path + _name(core) if is_def else path
        tokens = self.count(start, end)
        if tokens <= self.max_tokens:
            return [_Piece(start, end, tokens, "def" if is_def else "small", unit_path, context)]
        if role == _C and body is not None:
            return self._container(start, end, node, core, body, unit_path, context)
        node_start = self.index(node.start_byte) if node is not None else start
        if start < node_start:  # leading comments and attributes apart, so the definition may fit
            comments = _atomic(self._fit(start, node_start, "def", unit_path, context))
            return comments + self._unit(node_start, end, node, path, context)
        signature = self._signature(node, core, body) if is_def and body is not None else None
        return self._lines(start, end, unit_path, context, signature)

    def _container(
        self, start: int, end: int, node: Any, core: Any, body: Any, path: tuple[str, ...], context: tuple[str, ...]
    ) -> list[_Piece]:
        """A too-big class, impl, trait or interface: its head (up to the body's
        opening), its members (with the signature in their context), its closing."""
        signature = self._signature(node, core, body)[1]
        inner_lo, inner_hi = self._inside(body)
        members = self._region(body.named_children, inner_lo, inner_hi, path, context + (signature,))
        head = self._fit(start, inner_lo, "head", path, context)
        tail = self._fit(inner_hi, end, "tail", path, context)
        return _atomic(_merge(head + _atomic(members) + tail, self.count, self.max_tokens))

    def _fit(self, start: int, end: int, kind: str, path: tuple[str, ...], context: tuple[str, ...]) -> list[_Piece]:
        """The trimmed span as one piece (none if blank), split into lines if too big."""
        start, end = _trim(self.text, start, end)
        if start >= end:
            return []
        tokens = self.count(start, end)
        if tokens > self.max_tokens:
            return self._lines(start, end, path, context, None)
        return [_Piece(start, end, tokens, kind, path, context)]

    def _lines(
        self,
        start: int,
        end: int,
        path: tuple[str, ...],
        context: tuple[str, ...],
        signature: tuple[int, str] | None,
    ) -> list[_Piece]:
        """A too-big span split at blank lines, lines, then spaces; pieces that start
        after the definition carry its ``signature`` (start, text) in their context."""
        pieces = []
        for c in self.chunker._lines.chunk(self.text[start:end]):
            extra = (signature[1],) if signature and start + c.start > signature[0] else ()
            pieces.append(_Piece(start + c.start, start + c.end, c.token_count, "def", path, context + extra))
        return pieces

    def _signature(self, node: Any, core: Any, body: Any) -> tuple[int, str]:
        """Where the definition starts, and its text up to its body (decorators
        and `export` included, from the start of its line when only indentation
        precedes)."""
        definition = start = self.index(node.start_byte)
        line = self.text.rfind("\n", 0, start) + 1
        if not self.text[line:start].strip(" \t"):
            start = line
        colon = [c for c in core.children if c.type == ":" and c.end_byte <= body.start_byte]
        if colon:
            end = self.index(colon[-1].end_byte)
        else:
            end = self.index(body.start_byte)
            end += self.text.startswith("{", end)
        return definition, self.text[start:end].rstrip(_WHITE_SPACE)

    def _inside(self, body: Any) -> tuple[int, int]:
        """The str span of a body without its braces."""
        lo, hi = self.index(body.start_byte), self.index(body.end_byte)
        if hi - lo >= 2 and self.text.startswith("{", lo) and self.text.endswith("}", lo, hi):
            return lo + 1, hi - 1
        return lo, hi


def _members(nodes: Sequence[Any]) -> Iterator[Any]:
    for node in nodes:
        if node.type in _FLATTEN:
            yield from node.named_children
        else:
            yield node


def _core(node: Any) -> Any:
    """The definition inside decorator, `export` and `declare` wrappers."""
    while node.type in _WRAPPERS:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("decorator", "comment")]
            if len(named) != 1:
                return node
            inner = named[0]
        node = inner
    return node


def _is_function_value(node: Any) -> bool:
    """`const f = () => ...` and the like (JavaScript, TypeScript)."""
    if node is None or node.type not in ("lexical_declaration", "variable_declaration"):
        return False
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
    return value is not None and value.type in _FUNCTION_VALUES | {"class"}


def _name(node: Any) -> tuple[str, ...]:
    """The qualified name a definition adds to ``heading_path`` (Go methods and
    Rust impls name their type)."""
    if node.type == "impl_item":
        kind, trait = node.child_by_field_name("type"), node.child_by_field_name("trait")
        text = _text(kind) if trait is None else f"{_text(trait)} for {_text(kind)}"
        return (text,) if text else ()
    if node.type in ("lexical_declaration", "variable_declaration"):
        node = next(c for c in node.named_children if c.type == "variable_declarator")
    elif node.type == "type_declaration":
        node = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), node)
    name = _text(node.child_by_field_name("name"))
    if node.type == "method_declaration" and node.child_by_field_name("receiver") is not None:
        receiver = _find(node.child_by_field_name("receiver"), "type_identifier")
        return tuple(n for n in (_text(receiver), name) if n)
    return (name,) if name else ()


def _find(node: Any, kind: str) -> Any:
    """The first descendant of ``node`` of the given kind (depth first), or None."""
    for child in node.named_children:
        found = child if child.type == kind else _find(child, kind)
        if found is not None:
            return found
    return None


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _WHITE_SPACE:
        start += 1
    while end > start and text[end - 1] in _WHITE_SPACE:
        end -= 1
    return start, end


def _atomic(pieces: list[_Piece]) -> list[_Piece]:
    return [p if p.kind == "def" else _Piece(p.start, p.end, p.tokens, "def", p.path, p.context) for p in pieces]


def _merge(pieces: list[_Piece], count: Any, max_tokens: int) -> list[_Piece]:
    """Greedy left-to-right merge: small pieces with small pieces, a head with
    the piece after it, a tail with the piece before it, while the union fits."""
    out: list[_Piece] = []
    for p in pieces:
        if out:
            last = out[-1]
            joins = last.kind == "head" or p.kind == "tail" or last.kind == p.kind == "small"
            tokens = count(last.start, p.end) if joins else max_tokens + 1
            if tokens <= max_tokens:
                kind = "def" if "def" in (last.kind, p.kind) else "small"
                path = last.path if p.kind == "tail" else _common(last.path, p.path)
                out[-1] = _Piece(last.start, p.end, tokens, kind, path, last.context)
                continue
        out.append(p)
    return out


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
