"""The package's layout: no import cycle between chunkforge's modules (function-level
imports count too), every module imports on its own, and only the modules that own a
native object reach ``_native``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import chunkforge

PACKAGE = Path(__file__).parents[1] / "python" / "chunkforge"
# the index's trees module owns a native object (the store of document trees)
INDEX = "chunkforge.index.trees"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(current: str, is_package: bool, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The chunkforge modules an import statement loads (``from .x import y`` may load ``.x.y``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("chunkforge")]
    if node.level == 0:
        if not (node.module or "").startswith("chunkforge"):
            return []
        base = node.module or ""
    else:
        parts = current.split(".")
        parts = parts if is_package else parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def graph() -> dict[str, set[str]]:
    """Each module's chunkforge imports (at any depth of the file), parents of a submodule included."""
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in resolve(name, path.name == "__init__.py", node):
                    while target and target not in mods:
                        target = target.rpartition(".")[0]
                    # importing a.b.c runs a and a.b first
                    parts = target.split(".")
                    targets.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        targets.discard(name)
        targets.discard("chunkforge")  # the top package only re-exports; its imports are checked on their own
        edges[name] = {t for t in targets if t in mods and not name.startswith(t + ".")}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_import_graph_is_acyclic():
    edges = graph()
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_cycle_finder_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


NATIVE_OWNERS = {
    # tokenizer.py is the contract; these own a native object or call a native function of their own
    "chunkforge",
    "chunkforge.tokenizer",
    "chunkforge.chunkers._base",
    "chunkforge.chunkers.token",
    "chunkforge.chunkers.recursive",
    "chunkforge.chunkers.sentence",
    "chunkforge.chunkers.markdown",
    "chunkforge.chunkers.code",
    "chunkforge.chunkers.hierarchy",
    "chunkforge.chunkers.late",
    "chunkforge.chunkers.semantic",
    "chunkforge.eval.metrics",
    INDEX,
}


def test_only_native_owners_import_native():
    reach = sorted(
        name
        for name, path in modules().items()
        if "_native" in path.read_text(encoding="utf-8")
        and name not in NATIVE_OWNERS
        and ("import _native" in path.read_text(encoding="utf-8") or "._native." in path.read_text(encoding="utf-8"))
    )
    assert reach == []


MAX_LINES = 700
"""The most lines a module of the package holds: past it, it holds more than one concept."""


def test_no_module_is_over_the_line_limit():
    """One module per concept: none over ``MAX_LINES`` (split it as ``index/`` is: the
    ``Index``'s documents, ranking and files; the store's tables, writer and reader)."""
    lines = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert sorted(f"{name}: {n} lines" for name, n in lines.items() if n > MAX_LINES) == []


@pytest.mark.parametrize("name", sorted(set(modules()) - {"chunkforge.__main__"}))
def test_each_module_imports_alone(name):
    """A fresh interpreter imports the module first: no cycle that only a lucky order hides."""
    if name.startswith("chunkforge.index"):
        pytest.importorskip("hnswlib")
    subprocess.run(
        [sys.executable, "-c", f"import {name}"],
        check=True,
        timeout=120,
        # the package this run tests (the installed one, or the source tree with its built extension)
        env={**os.environ, "PYTHONPATH": str(Path(chunkforge.__file__).parents[1])},
    )


def test_the_native_stubs_state_what_the_binding_does():
    """``_native.pyi`` lists exactly the binding's names, and the units its docstrings state are
    the binding's: ``len(SpanCounter)`` is code points, not tokens; ``max_threads`` is 4 x the
    cores (the most accepted), not the default."""
    from chunkforge import _native

    stub = ast.parse((PACKAGE / "_native.pyi").read_text(encoding="utf-8"))
    listed = next(
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    assert sorted(listed) == sorted(n for n in dir(_native) if not n.startswith("_"))
    docs = {
        f"{c.name}.{f.name}" if isinstance(c, ast.ClassDef) else c.name: ast.get_docstring(f)
        for c in stub.body
        if isinstance(c, (ast.ClassDef, ast.FunctionDef))
        for f in (c.body if isinstance(c, ast.ClassDef) else [c])
        if isinstance(f, ast.FunctionDef)
    }
    text = "naïve café, 東京 🙂"
    counter = _native.SpanCounter(chunkforge.Tokenizer.default()._native, text)
    assert "code points" in docs["SpanCounter.__len__"] and len(counter) == len(text)
    assert len(counter) != counter.count(0, len(text))
    assert "4 x the cores" in docs["max_threads"] and _native.max_threads() % 4 == 0
    with pytest.raises(ValueError, match="threads"):
        chunkforge.Tokenizer.default().count_batch(["a"], threads=_native.max_threads() + 1)


DIRECTIONS = [
    # (importer prefix, imported prefix, why it must not)
    ("chunkforge.chunkers", "chunkforge.index", "chunkers cut text; the index is built on them"),
    ("chunkforge.chunkers", "chunkforge.bulk", "chunkers cut text; the bulk job runs them"),
    ("chunkforge.chunkers", "chunkforge.serve", "chunkers know nothing of the service"),
    ("chunkforge.readers", "chunkforge.index", "readers make documents; the index takes them"),
    ("chunkforge.readers", "chunkforge.bulk", "readers make documents; the bulk job takes them"),
    ("chunkforge.encoder", "chunkforge.index", "the encoder embeds; the index calls it"),
    ("chunkforge.index", "chunkforge.serve", "the service serves an index, not the other way"),
    ("chunkforge.index", "chunkforge.cli", "the command line drives the library"),
    ("chunkforge.bulk", "chunkforge.cli", "the command line drives the library"),
]


@pytest.mark.parametrize(("importer", "imported", "why"), DIRECTIONS, ids=[f"{a}-{b}" for a, b, _ in DIRECTIONS])
def test_imports_go_one_way(importer, imported, why):
    edges = graph()
    wrong = sorted(
        f"{name} -> {target}"
        for name, targets in edges.items()
        if name == importer or name.startswith(importer + ".")
        for target in targets
        if target == imported or target.startswith(imported + ".")
    )
    assert wrong == [], why


def test_only_the_index_the_service_and_the_bulk_job_reach_the_store():
    """The LanceDB store is the index's (``index.store`` and its ``store_*`` modules); the service
    opens it, the bulk job writes it (``--lancedb``), the query command opens it through the
    service's opener."""
    allowed = ("chunkforge.index", "chunkforge.serve", "chunkforge.bulk")
    reach = sorted(
        name
        for name, targets in graph().items()
        if any(t.startswith("chunkforge.index.store") for t in targets) and not name.startswith(allowed)
    )
    assert reach == []


def test_every_index_keeps_the_contract():
    """``Index``, the store and the service's client answer ``search``, ``expand`` and ``query``
    with the contract's parameters (``chunkforge.index.contract``)."""
    import inspect

    pytest.importorskip("hnswlib")
    pytest.importorskip("lancedb")
    pytest.importorskip("httpx")
    from chunkforge.index import Index
    from chunkforge.index.contract import EXPAND_PARAMETERS, QUERY_PARAMETERS, SEARCH_PARAMETERS, Retriever
    from chunkforge.index.store import StoreIndex
    from chunkforge.serve.client import ServiceClient

    wanted = {"search": SEARCH_PARAMETERS, "expand": EXPAND_PARAMETERS, "query": QUERY_PARAMETERS}
    for kind in (Index, StoreIndex, ServiceClient):
        for method, names in wanted.items():
            found = set(inspect.signature(getattr(kind, method)).parameters) - {"self"}
            assert found == names, f"{kind.__name__}.{method}: {sorted(found ^ names)}"
        assert issubclass(kind, Retriever)


def test_the_service_takes_the_search_keywords_that_json_can_carry():
    """A request's search fields are ``k`` and the search keywords (``chunkforge.index.options``)
    but the ``Filter`` object, which is the server's to make."""
    pytest.importorskip("pydantic")
    from chunkforge.index.options import SEARCH_NAMES
    from chunkforge.serve.models import Filters

    assert set(Filters.model_fields) == {"k", *SEARCH_NAMES} - {"filter"}
