"""The examples in the docstrings and the README run as written."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
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
    "chunkforge.errors",
    "chunkforge._io",
    "chunkforge._search",
    "chunkforge._options",
    "chunkforge.cli",
    "chunkforge.cli.chunk",
    "chunkforge.cli.embed",
    "chunkforge.integrations",
    "chunkforge.integrations.langchain",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0


def test_readme_python_examples(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
