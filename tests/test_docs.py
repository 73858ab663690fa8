"""The examples in the docstrings and the README run as written."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import chunkforge

from conftest import corpus, start_server, stop

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
# every python block of the README and of docs/*.md, as (page, number in the page, code, what it
# prints): a block followed by "It prints:" and a text block must print that (doctest's rules:
# "..." stands for any text, runs of whitespace are equal)
BLOCK = re.compile(r"```python\n(.*?)```(?:\n\nIt prints:\n\n```text\n(.*?)```)?", flags=re.S)
EXAMPLES = [
    (page.relative_to(ROOT).as_posix(), n + 1, code, printed or None)
    for page in PAGES
    for n, (code, printed) in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")))
]
MODULES = [
    "chunkforge",
    "chunkforge.chunk",
    "chunkforge.tokenizer",
    "chunkforge.chunkers.token",
    "chunkforge.chunkers.recursive",
    "chunkforge.chunkers.sentence",
    "chunkforge.chunkers.markdown",
    "chunkforge.chunkers.code",
    "chunkforge.chunkers.hierarchy",
    "chunkforge.index.bm25",
    "chunkforge.index.graph",
    "chunkforge.index.payload",
    "chunkforge.index.fusion",
    "chunkforge.index.expansion",
    "chunkforge.index.trees",
    "chunkforge.index.prefix",
    "chunkforge.index",
    "chunkforge.index.index",
    "chunkforge.index.documents",
    "chunkforge.index.ranking",
    "chunkforge.index.persist",
    "chunkforge.index.filters",
    "chunkforge.index.contract",
    "chunkforge.index.options",
    "chunkforge.chunkers.counted",
    "chunkforge.errors",
    "chunkforge._io",
    "chunkforge._search",
    "chunkforge._options",
    "chunkforge.chunkers.registry",
    "chunkforge.chunkers.context_aware",
    "chunkforge.bulk.spec",
    "chunkforge.bulk.readers",
    "chunkforge.bulk.shards",
    "chunkforge.bulk.cache",
    "chunkforge.bulk.progress",
    "chunkforge.bulk.fingerprint",
    "chunkforge.bulk.local",
    "chunkforge.cli._common",
    "chunkforge.cli.embed_docs",
    "chunkforge.cli",
    "chunkforge.cli.chunk",
    "chunkforge.cli.embed",
    "chunkforge.serve.models",
    "chunkforge._config",
    "chunkforge.integrations.langchain",
    "chunkforge.integrations",
    "chunkforge._progress",
    "chunkforge.readers",
    "chunkforge.readers.document",
    "chunkforge._checks",
    "chunkforge._dataset",
    "chunkforge.represent",
    "chunkforge.chunkers._base",
    "chunkforge.chunkers.late",
    "chunkforge.chunkers.semantic",
    "chunkforge.bulk",
    "chunkforge.bulk.builder",
    "chunkforge.bulk.ray",
    "chunkforge.index.store",
    "chunkforge.index.store_tables",
    "chunkforge.index.store_write",
    "chunkforge.index.store_query",
    "chunkforge.index.store_side",
    "chunkforge.serve.source",
    "chunkforge.eval",
    "chunkforge.eval.configs",
    "chunkforge.eval.datasets",
    "chunkforge.eval.metrics",
    "chunkforge.eval.peers",
    "chunkforge.eval.run",
    "chunkforge.eval.retrieval",
    "chunkforge.encoder",
    "chunkforge.encoder.front",
    "chunkforge.encoder.compat",
    "chunkforge.encoder.graph",
    "chunkforge.encoder.onnxruntime",
    "chunkforge.encoder.openvino",
    "chunkforge.encoder.export",
    "chunkforge.encoder.variants",
    "chunkforge.bulk.lance",
    "chunkforge.integrations.haystack",
    "chunkforge.integrations.llamaindex",
    "chunkforge.serve",
    "chunkforge.serve.app",
    "chunkforge.serve.client",
    "chunkforge.serve.protocol",
    "chunkforge.cli.query",
    "chunkforge.index.rerank",
    "chunkforge.encoder.cross",
]


def test_every_module_with_examples_runs_them():
    """A module whose docstrings hold examples is in :data:`MODULES`, so its examples run."""
    root = Path(chunkforge.__file__).parent
    with_examples = {
        ".".join(("chunkforge", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        for path in root.rglob("*.py")
        if ">>> " in path.read_text(encoding="utf-8")
    }
    assert sorted(with_examples - set(MODULES)) == []


SERVICE_URL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def service(model_cache, tmp_path_factory) -> Iterator[str]:
    """``chunkforge serve`` of a small index of the shipped corpus; its URL."""
    pytest.importorskip("uvicorn")
    from chunkforge.encoder import Encoder
    from chunkforge.index import Index

    folder = tmp_path_factory.mktemp("docs-service") / "index"
    Index.build(corpus()[:20], Encoder.default()).save(folder)
    process, url = start_server(folder, "--reload-interval", "0")
    yield url
    stop(process)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, request, monkeypatch):
    """The module's docstring examples, as ``doctest.testmod`` runs them, from the repository's
    root (examples read its ``tests/data``); an example that calls the service at its default
    address runs against a real ``chunkforge serve`` (the one the docs' blocks call, on a free
    loopback port in place of 8000)."""
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module)
    examples = [example for test in tests for example in test.examples]
    if any(SERVICE_URL in example.source for example in examples):
        url = request.getfixturevalue("service")
        for example in examples:
            example.source = example.source.replace(SERVICE_URL, url)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0


def test_readme_has_python_examples():
    assert any(page == "README.md" for page, _, _, _ in EXAMPLES)
    assert any(printed for page, _, _, printed in EXAMPLES if page == "README.md")


@pytest.mark.parametrize(
    ("page", "number", "code", "printed"), EXAMPLES, ids=[f"{p}-block{n}" for p, n, _, _ in EXAMPLES]
)
def test_example_runs_as_a_script(page, number, code, printed, tmp_path, model_cache, request):
    """Each python block of the README and docs/, saved as a script and run as a user runs it:
    a fresh interpreter, ``python example.py`` in an empty folder (``__name__ == "__main__"``,
    spawned process pools importing the script again), with this chunkforge and the shared model cache.
    A block that calls the service at its default address runs against a real ``chunkforge
    serve`` (of an index of the shipped corpus, on a free port in place of 8000). A block whose
    page shows what it prints must print that."""
    if SERVICE_URL in code:
        code = code.replace(SERVICE_URL, request.getfixturevalue("service"))
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    package_root = str(Path(chunkforge.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, f"{page}, python block {number}, failed:\n{run.stderr[-4000:]}"
    if printed is not None:
        checker, flags = doctest.OutputChecker(), doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert checker.check_output(printed, run.stdout, flags), (
            f"{page}, python block {number}, printed other than the page shows:\n{run.stdout[-4000:]}"
        )
