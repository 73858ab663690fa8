"""CodeChunker on real tree-sitter grammars: exact offsets, the token limit,
coverage, definitions kept whole when they fit, class signatures and imports
in the context of member chunks, non-ASCII sources, errors."""

from __future__ import annotations

import argparse
import ast
import inspect
import json.decoder

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkforge
from chunkforge import CodeChunker, language_for_path
from chunkforge.chunkers import LANGUAGES, code
from test_chunkers import WHITE_SPACE

from conftest import cf_tokenizer, hf_count

SOURCES = {
    "python": '''"""Shapes, with a café ☕ in the docstring."""
import math
from dataclasses import dataclass

UNIT = "cm"  # the unit of every length


# A decorated class
@dataclass
class Rectangle:
    """A rectangle 📐."""

    width: float
    height: float

    def area(self) -> float:
        """Width times height."""
        return self.width * self.height

    @property
    def diagonal(self) -> float:
        return math.hypot(self.width, self.height)


def describe(shape: Rectangle) -> str:
    # naïve formatting
    return f"{shape.width} × {shape.height} {UNIT}"


if __name__ == "__main__":
    print(describe(Rectangle(2, 3)))
''',
    "javascript": """import { hypot } from "./math.js";
const UNIT = "cm";

// A shape with a name ✏️
export class Shape {
  constructor(name) {
    this.name = name;
  }

  // The area; subclasses override it
  area() {
    return 0;
  }

  static named(name) {
    return new Shape(name);
  }
}

/** Formats a shape — naïvely. */
function describe(shape) {
  return `${shape.name}: ${shape.area()} ${UNIT}²`;
}

const square = (x) => x * x;
export default describe;
""",
    "typescript": """import { Shape } from "./shape";

type Unit = "cm" | "mm";

export interface Sized {
  width: number;
  height: number;
}

@sealed
export class Rectangle implements Sized, Shape {
  constructor(public width: number, public height: number) {}

  area(): number {
    return this.width * this.height;
  }

  scale(factor: number): Rectangle {
    return new Rectangle(this.width * factor, this.height * factor);
  }
}

export function describe(r: Rectangle, unit: Unit = "cm"): string {
  return `${r.width} × ${r.height} ${unit}`;
}

enum Color { Red, Green, Blue }
""",
    "tsx": """import React from "react";

interface Props {
  title: string;
}

export function Card({ title }: Props) {
  return <div className="card">{title} ✨</div>;
}

export const List = ({ items }: { items: string[] }) => (
  <ul>
    {items.map((i) => <li key={i}>{i}</li>)}
  </ul>
);
""",
    "rust": """use std::fmt;
use std::collections::HashMap;

/// A rectangle, in centimetres (naïve).
#[derive(Debug, Clone)]
pub struct Rectangle {
    width: f64,
    height: f64,
}

impl Rectangle {
    /// Makes a rectangle.
    pub fn new(width: f64, height: f64) -> Self {
        Rectangle { width, height }
    }

    /// Width times height.
    pub fn area(&self) -> f64 {
        self.width * self.height
    }
}

impl fmt::Display for Rectangle {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} × {}", self.width, self.height)
    }
}

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> String { "shape".to_string() }
}

fn main() {
    let mut seen: HashMap<String, f64> = HashMap::new();
    seen.insert("r".into(), Rectangle::new(2.0, 3.0).area());
    println!("{:?} 🦀", seen);
}
""",
    "go": """package shapes

import (
	"fmt"
	"math"
)

// Unit of every length (naïve).
const Unit = "cm"

// Rectangle is a rectangle.
type Rectangle struct {
	Width, Height float64
}

// Area returns width times height.
func (r *Rectangle) Area() float64 {
	return r.Width * r.Height
}

// Diagonal returns the length of the diagonal.
func (r Rectangle) Diagonal() float64 {
	return math.Hypot(r.Width, r.Height)
}

func Describe(r Rectangle) string {
	return fmt.Sprintf("%v × %v %s", r.Width, r.Height, Unit)
}
""",
    "java": """package org.example.shapes;

import java.util.List;
import java.util.ArrayList;

/** A rectangle — naïve. */
@SuppressWarnings("unused")
public class Rectangle implements Shape {
    private final double width;
    private final double height;

    /** Makes a rectangle. */
    public Rectangle(double width, double height) {
        this.width = width;
        this.height = height;
    }

    @Override
    public double area() {
        return width * height;
    }

    public List<Rectangle> split() {
        List<Rectangle> halves = new ArrayList<>();
        halves.add(new Rectangle(width / 2, height));
        halves.add(new Rectangle(width / 2, height));
        return halves;
    }

    enum Side { TOP, BOTTOM; Side opposite() { return this == TOP ? BOTTOM : TOP; } }
}
""",
}

# A definition of each source that fits in 64 tokens, with its leading comment
WHOLE = {
    "python": 'def area(self) -> float:\n        """Width times height."""\n        return self.width * self.height',
    "javascript": "/** Formats a shape — naïvely. */\nfunction describe(shape) {\n  return `${shape.name}: ${shape.area()} ${UNIT}²`;\n}",
    "typescript": "area(): number {\n    return this.width * this.height;\n  }",
    "tsx": 'export function Card({ title }: Props) {\n  return <div className="card">{title} ✨</div>;\n}',
    "rust": "/// Width times height.\n    pub fn area(&self) -> f64 {\n        self.width * self.height\n    }",
    "go": "// Area returns width times height.\nfunc (r *Rectangle) Area() float64 {\n\treturn r.Width * r.Height\n}",
    "java": "@Override\n    public double area() {\n        return width * height;\n    }",
}

# The context a member chunk of the too-big class or impl carries, and its heading path
MEMBER = {
    "python": ("@dataclass\nclass Rectangle:", ("Rectangle", "area")),
    "javascript": ("export class Shape {", ("Shape", "area")),
    "typescript": ("@sealed\nexport class Rectangle implements Sized, Shape {", ("Rectangle", "scale")),
    "rust": ("impl Rectangle {", ("Rectangle", "area")),
    "java": ('@SuppressWarnings("unused")\npublic class Rectangle implements Shape {', ("Rectangle", "split")),
}

IMPORTS = {
    "python": "import math\nfrom dataclasses import dataclass",
    "javascript": 'import { hypot } from "./math.js";',
    "typescript": 'import { Shape } from "./shape";',
    "tsx": 'import React from "react";',
    "rust": "use std::fmt;\nuse std::collections::HashMap;",
    "go": 'import (\n\t"fmt"\n\t"math"\n)',
    "java": "import java.util.List;\nimport java.util.ArrayList;",
}

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_chunks(kind: str, text: str, chunks: list[chunkforge.Chunk], max_tokens: int) -> None:
    """Offsets, the limit re-encoded alone, order, and coverage of every non-whitespace character."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    covered = bytearray(len(text))
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.text == c.text.strip(WHITE_SPACE) and c.kind == "code"
        assert c.token_count == hf_count(kind, c.text) <= max_tokens
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    for a, b in zip(chunks, chunks[1:]):
        assert a.end <= b.start
    missing = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
    assert not missing, f"uncovered characters at {missing[:5]}"


@pytest.mark.parametrize("language", sorted(SOURCES))
@pytest.mark.parametrize("max_tokens", [8, 24, 64, 4096])
def test_snippet_properties(kind, language, max_tokens):
    text = SOURCES[language]
    chunks = CodeChunker(cf_tokenizer(kind), language=language, max_tokens=max_tokens).chunk(text)
    check_chunks(kind, text, chunks, max_tokens)


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_definitions_that_fit_stay_whole(language):
    text = SOURCES[language]
    chunks = CodeChunker(language=language, max_tokens=64).chunk(text)
    assert any(WHOLE[language] in c.text for c in chunks)


@pytest.mark.parametrize("language", sorted(MEMBER))
def test_members_carry_the_class_signature(language):
    text = SOURCES[language]
    signature, path = MEMBER[language]
    chunks = CodeChunker(language=language, max_tokens=40).chunk(text)
    member = next(c for c in chunks if c.heading_path == path)
    assert member.context == signature
    assert all(c.heading_path[0] == path[0] for c in chunks if c.context == signature)


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_include_imports(language):
    text = SOURCES[language]
    chunks = CodeChunker(language=language, max_tokens=40, include_imports=True).chunk(text)
    imports = IMPORTS[language]
    for c in chunks:
        if imports.splitlines()[0] in c.text:
            assert c.context is None or not c.context.startswith(imports)
        else:
            assert c.context is not None and c.context.startswith(imports)


def test_whole_file_in_one_chunk_when_units_fit():
    chunks = CodeChunker(language="go", max_tokens=4096).chunk(SOURCES["go"])
    assert [c.heading_path for c in chunks] == [
        (),
        ("Rectangle",),
        ("Rectangle", "Area"),
        ("Rectangle", "Diagonal"),
        ("Describe",),
    ]
    assert chunks[0].text.startswith("package shapes") and chunks[0].text.endswith('const Unit = "cm"')
    assert chunks[1].text.startswith("// Rectangle is a rectangle.")


def test_non_ascii_offsets():
    """Byte offsets of tree-sitter become str indices: cuts fall on definitions."""
    text = "# ünïcödé 😀😀😀\nX = '日本語'\n\n\n" + "\n\n".join(
        f"def f{i}():\n    return '{'é' * i}👍🏽'" for i in range(6)
    )
    chunks = CodeChunker(language="python", max_tokens=30).chunk(text)
    check_chunks("wordpiece", text, chunks, 30)
    assert [c.text.split("(")[0] for c in chunks[1:]] == [f"def f{i}" for i in range(6)]
    assert chunks[0].text == "# ünïcödé 😀😀😀\nX = '日本語'"


def stdlib_definitions(source: str) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """``(start, end, class line, path)`` of top-level definitions and of the
    members of (nested) classes, decorators included, by Python's own parser."""
    lines = source.splitlines(keepends=True)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))

    def index(lineno: int, col: int) -> int:
        return line_starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    out = []

    def visit(body: list[ast.stmt], path: tuple[str, ...], signature: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node, *node.decorator_list], key=lambda n: (n.lineno, n.col_offset))
                start, end = index(first.lineno, first.col_offset), index(node.end_lineno, node.end_col_offset)
                out.append((start, end, signature, path + (node.name,)))
                if isinstance(node, ast.ClassDef):
                    header = source[index(node.lineno, node.col_offset) : index(node.body[0].lineno, 0)]
                    visit(node.body, path + (node.name,), header.split(":\n")[0] + ":")

    visit(ast.parse(source).body, (), "")
    return out


@pytest.mark.parametrize("module", [argparse, json.decoder], ids=["argparse", "json.decoder"])
@pytest.mark.parametrize("max_tokens", [48, 256])
def test_standard_library_module(kind, module, max_tokens):
    text = inspect.getsource(module)
    tokenizer = cf_tokenizer(kind)
    chunks = CodeChunker(tokenizer, language="python", max_tokens=max_tokens).chunk(text)
    check_chunks(kind, text, chunks, max_tokens)
    counter = tokenizer.span_counter(text)
    for start, end, signature, path in stdlib_definitions(text):
        holder = [c for c in chunks if c.start <= start and end <= c.end]
        if counter.count(start, end) <= max_tokens:
            assert holder, f"{path} fits but was cut"
        if signature and not holder:
            pieces = [c for c in chunks if start <= c.start < end and c.heading_path[: len(path)] == path]
            assert pieces, f"no chunk of {path}"
            assert all(signature in c.context for c in pieces), path


def test_methods_of_a_big_class_name_it():
    text = inspect.getsource(argparse)
    chunks = CodeChunker(language="python", max_tokens=128).chunk(text)
    methods = [c for c in chunks if c.heading_path[:2] == ("ArgumentParser", "parse_known_args")]
    assert methods and all(
        c.context.startswith("class ArgumentParser(_AttributeHolder, _ActionsContainer):") for c in methods
    )
    assert methods[0].text.startswith("def parse_known_args(self, args=None, namespace=None):")
    # pieces of a method split into lines carry its signature too
    assert all("def parse_known_args" in c.context for c in methods[1:])


garbage = st.lists(
    st.one_of(st.sampled_from(list(SOURCES.values())).map(lambda s: s[: len(s) // 2]), st.text(max_size=40)),
    max_size=6,
).map("".join)


@PROPERTY
@given(text=garbage, language=st.sampled_from(LANGUAGES), max_tokens=st.integers(4, 48))
def test_any_input_any_language(text, language, max_tokens):
    """Broken code, random text, the wrong language: the invariants still hold."""
    chunks = CodeChunker(cf_tokenizer("bpe"), language=language, max_tokens=max_tokens).chunk(text)
    check_chunks("bpe", text, chunks, max_tokens)


def test_batch_and_spans_match_chunk():
    chunker = CodeChunker(language="rust", max_tokens=32)
    texts = [SOURCES["rust"], "", "fn x() {}"]
    batch = chunker.chunk_batch(texts)
    assert batch == [chunker.chunk(t) for t in texts] and batch[1] == []
    spans = chunker.spans_batch(texts)
    assert spans.doc.tolist() == [d for d, cs in enumerate(batch) for _ in cs]
    assert spans.start.tolist() == [c.start for cs in batch for c in cs]
    assert chunker.spans(texts[0]).token_count.tolist() == [c.token_count for c in batch[0]]
    assert chunker.spans("").start.tolist() == []


def test_language_for_path():
    assert [
        language_for_path(p)
        for p in ("a.py", "b.js", "c.mjs", "d.cjs", "e.jsx", "f.ts", "g.tsx", "h.rs", "i.go", "J.JAVA")
    ] == ["python", "javascript", "javascript", "javascript", "javascript", "typescript", "tsx", "rust", "go", "java"]
    assert language_for_path("README.md") is None and language_for_path("Makefile") is None


def test_bad_parameters():
    with pytest.raises(
        ValueError, match="language must be one of python, javascript, typescript, tsx, rust, go, java; got 'cobol'"
    ):
        CodeChunker(language="cobol")
    with pytest.raises(ValueError, match="language must be one of"):
        CodeChunker()
    with pytest.raises(ValueError, match="max_tokens"):
        CodeChunker(language="go", max_tokens=0)
    with pytest.raises(TypeError, match="include_imports"):
        CodeChunker(language="go", include_imports="yes")
    with pytest.raises(TypeError, match="text must be a str"):
        CodeChunker(language="go").chunk(b"package main")
    with pytest.raises(ValueError, match="threads"):
        CodeChunker(language="go").chunk_batch(["package main"], threads=0)
    assert repr(CodeChunker(language="Go", max_tokens=9)).endswith(
        "language='go', max_tokens=9, include_imports=False)"
    )


def test_missing_grammar_names_the_extra(monkeypatch):
    code._parser.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "tree_sitter_java", None)  # as if not installed
    try:
        with pytest.raises(ImportError, match=r"tree-sitter-java: pip install 'chunkforge\[code\]'"):
            CodeChunker(language="java")
    finally:
        code._parser.cache_clear()
