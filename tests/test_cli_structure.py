"""``chunkforge chunk`` with the structure-aware strategies and Parquet output."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from chunkforge import Tokenizer
from chunkforge.cli import main

from conftest import DATA

PY = '''import os


class Greeter:
    """Says hello."""

    def hello(self, name):
        return f"hello {name}"

    def bye(self):
        return "bye"


def main():
    print(Greeter().hello(os.name))
'''


def run(capsys, *argv: str) -> list[dict]:
    assert main(["chunk", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_markdown_strategy_carries_structure(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nIntro.\n\n## Install\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    (docs / "page.rst").write_text("Title\n=====\n\nBody text.\n\nPart\n----\n\nMore text.\n")
    records = run(capsys, str(docs), "--strategy", "markdown", "--max-tokens", "64")
    by_doc = {}
    for r in records:
        by_doc.setdefault(r["doc_id"].rsplit("/", 1)[-1], []).append(r)
        assert {"heading_path", "kind", "id", "parent_id", "level"} <= set(r)
    assert [r["heading_path"] for r in by_doc["guide.md"]] == [["Guide"], ["Guide", "Install"]]
    assert by_doc["guide.md"][1]["kind"] == "table"
    assert [r["heading_path"] for r in by_doc["page.rst"]] == [["Title"], ["Title", "Part"]]
    texts = {"guide.md": (docs / "guide.md").read_text(), "page.rst": (docs / "page.rst").read_text()}
    for name, rs in by_doc.items():
        assert all(texts[name][r["start"] : r["end"]] == r["text"] for r in rs)


def test_code_strategy_picks_the_language(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "greeter.py").write_text(PY)
    (src / "notes.md").write_text("not code")
    records = run(capsys, str(src), "--strategy", "code", "--max-tokens", "24")
    assert {r["doc_id"] for r in records} == {str(src / "greeter.py")}
    assert all(r["kind"] == "code" for r in records)
    assert any(r["heading_path"] == ["Greeter", "hello"] for r in records)
    tok = Tokenizer.default()
    assert all(tok.count(r["text"]) == r["token_count"] <= 24 for r in records)


def test_code_strategy_rejects_unknown_extensions(tmp_path, capsys):
    (tmp_path / "data.csv").write_text("a,b\n")
    assert main(["chunk", str(tmp_path / "data.csv"), "--strategy", "code"]) == 2
    assert "data.csv" in capsys.readouterr().err


def test_hierarchical_strategy_writes_the_tree(tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text(("A sentence with some words in it. " * 12 + "\n\n") * 6)
    records = run(capsys, str(doc), "--strategy", "hierarchical", "--levels", "256,64,16")
    ids = {r["id"]: r for r in records}
    assert len(ids) == len(records)
    assert {r["level"] for r in records} == {0, 1, 2}
    for r in records:
        if r["level"] == 0:
            assert r["parent_id"] is None
        else:
            parent = ids[r["parent_id"]]
            assert parent["level"] == r["level"] - 1
            assert parent["start"] <= r["start"] < r["end"] <= parent["end"]
    again = run(capsys, str(doc), "--strategy", "hierarchical", "--levels", "256,64,16")
    assert [r["id"] for r in again] == [r["id"] for r in records], "ids are stable"


def test_bad_levels(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("x")
    assert main(["chunk", str(tmp_path / "a.txt"), "--strategy", "hierarchical", "--levels", "64,x"]) == 2
    assert "--levels" in capsys.readouterr().err
    assert main(["chunk", str(tmp_path / "a.txt"), "--strategy", "hierarchical", "--levels", "16,64"]) == 2
    assert "levels" in capsys.readouterr().err


def test_parquet_output(tmp_path, capsys):
    out = tmp_path / "chunks.parquet"
    corpus = DATA / "docs-corpus-small.jsonl.gz"
    assert main(["chunk", str(corpus), "--strategy", "markdown", "--max-tokens", "256", "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.num_rows > 500
    assert table.column_names[:6] == ["doc_id", "index", "start", "end", "token_count", "text"]
    rows = table.slice(0, 50).to_pylist()
    assert all(r["token_count"] <= 256 and r["id"] for r in rows)
    jsonl = run(capsys, str(corpus), "--strategy", "markdown", "--max-tokens", "256")
    assert [r["text"] for r in jsonl] == table.column("text").to_pylist()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temp file left"


@pytest.mark.parametrize("strategy", ["token", "recursive", "sentence"])
def test_plain_strategies_get_stable_ids(tmp_path, capsys, strategy):
    doc = tmp_path / "a.md"
    doc.write_text("Some text. " * 50)
    first = run(capsys, str(doc), "--strategy", strategy, "--max-tokens", "32")
    second = run(capsys, str(doc), "--strategy", strategy, "--max-tokens", "32")
    assert [r["id"] for r in first] == [r["id"] for r in second]
    assert len({r["id"] for r in first}) == len(first)
    assert all(r["level"] == 0 and r["parent_id"] is None for r in first)
