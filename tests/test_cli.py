"""The ``chunkforge chunk`` command line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import chunkforge
from chunkforge.cli import main

TEXT_A = "# Title\n\nFirst paragraph of the doc. It has two sentences.\n\nSecond paragraph, ünïcode — ok.\r\nLast line."
TEXT_B = "Dr. Smith arrived. He sat down. Then he left the room without a word."
TEXT_C = "A reStructuredText file.\n=====\n\nWith a body that goes on for a while, longer than the limit."


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict], str]:
    """Runs ``main`` in-process; returns the exit code, the parsed JSON lines and stderr."""
    code = main(["chunk", *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def check_chunks(records: list[dict], sources: dict[str, str], max_tokens: int) -> None:
    """Every chunk is its source's slice, within the limit, indexed 0.. per document."""
    tok = chunkforge.Tokenizer.default()
    seen: dict[str, int] = {}
    for r in records:
        source = sources[r["doc_id"]]
        assert r["text"] == source[r["start"] : r["end"]]
        assert r["token_count"] == tok.count(r["text"]) <= max_tokens
        assert r["index"] == seen.get(r["doc_id"], 0)
        seen[r["doc_id"]] = r["index"] + 1
    assert set(seen) == set(sources)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with text files at two depths plus files the command must skip."""
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "b.md").write_bytes(TEXT_A.encode())
    (root / "sub" / "a.txt").write_text(TEXT_B, encoding="utf-8")
    (root / "sub" / "deeper" / "c.rst").write_text(TEXT_C, encoding="utf-8")
    (root / "skip.py").write_text("print('not a doc')\n")
    (root / "sub" / "skip.json").write_text('{"text": "no"}\n')
    (root / "notes.md.bak").write_text("backup\n")
    return root


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Writes ``records`` as JSON lines."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_folder_recursion_skips_other_extensions(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, records, err = run_cli(capsys, str(tree), "--max-tokens", "8")
    assert code == 0 and err == ""
    sources = {
        f"{tree}/b.md": TEXT_A,
        f"{tree}/sub/a.txt": TEXT_B,
        f"{tree}/sub/deeper/c.rst": TEXT_C,
    }
    check_chunks(records, sources, 8)
    order = list(dict.fromkeys(r["doc_id"] for r in records))
    assert order == sorted(sources)


def test_plain_file_keeps_path_as_given(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    code, records, _ = run_cli(capsys, "./b.md", "--max-tokens", "16")
    assert code == 0
    check_chunks(records, {"./b.md": TEXT_A}, 16)


def test_jsonl_with_and_without_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "text": TEXT_A}, {"text": TEXT_B}, {"id": 7, "text": ""}])
    code, records, _ = run_cli(capsys, str(path), "--max-tokens", "6")
    assert code == 0
    check_chunks(records, {"a": TEXT_A, f"{path}:2": TEXT_B}, 6)


def test_jsonl_gz_and_blank_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.jsonl.gz"
    lines = f"{json.dumps({'id': 'x', 'text': TEXT_C})}\n\n{json.dumps({'text': TEXT_B})}\n"
    path.write_bytes(gzip.compress(lines.encode()))
    code, records, _ = run_cli(capsys, str(path), "--max-tokens", "10")
    assert code == 0
    check_chunks(records, {"x": TEXT_C, f"{path}:3": TEXT_B}, 10)


@pytest.mark.parametrize("strategy", ["token", "recursive", "sentence"])
def test_strategies(strategy: str, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--strategy", strategy, "--max-tokens", "12", "--overlap", "1", "--threads", "2"]
    code, records, _ = run_cli(capsys, str(tree), *args)
    assert code == 0
    sources = {f"{tree}/b.md": TEXT_A, f"{tree}/sub/a.txt": TEXT_B, f"{tree}/sub/deeper/c.rst": TEXT_C}
    check_chunks(records, sources, 12)


def test_custom_tokenizer(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok_path = Path(__file__).parent / "data" / "bytelevel-bpe-8k.tokenizer.json"
    code, records, _ = run_cli(capsys, str(tree / "b.md"), "--tokenizer", str(tok_path), "--max-tokens", "5")
    assert code == 0
    tok = chunkforge.Tokenizer.from_file(tok_path)
    assert records and all(r["token_count"] == tok.count(r["text"]) <= 5 for r in records)


def test_out_file_and_verbose_summary(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    code = main(["chunk", str(tree), "--out", str(out), "--max-tokens", "8", "-v"])
    stdout, err = capsys.readouterr()
    assert code == 0 and stdout == ""
    assert err.startswith("chunkforge: 3 docs, ") and " chunks, " in err
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    check_chunks(records, {f"{tree}/b.md": TEXT_A, f"{tree}/sub/a.txt": TEXT_B, f"{tree}/sub/deeper/c.rst": TEXT_C}, 8)
    assert "ünïcode" in out.read_text(encoding="utf-8")  # ensure_ascii=False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "out.jsonl"]


def test_out_is_atomic_on_bad_input(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("previous content\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine"}) + "\n{not json\n")
    code = main(["chunk", str(tree), str(bad), "--out", str(out)])
    assert code == 2
    assert f"{bad}:2" in capsys.readouterr().err
    assert out.read_text() == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "docs", "out.jsonl"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('{"text": "ok"}\n{not json\n', "bad.jsonl:2: not valid JSON"),
        ('{"id": "a"}\n', 'bad.jsonl:1: record has no "text"'),
        ('{"text": 3}\n', 'bad.jsonl:1: "text" must be a string, not int'),
        ('["text"]\n', "bad.jsonl:1: expected a JSON object, got list"),
        ('{"text": "a\\ud800b"}\n', 'bad.jsonl:1: "text" holds a lone surrogate'),
    ],
)
def test_bad_jsonl_lines(lines: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines)
    assert main(["chunk", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkforge: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-tokens", "4", "--overlap", "4"], "overlap (4) must be smaller than max_tokens (4)"),
        (["--max-tokens", "0"], "--max-tokens must be >= 1, got 0"),
        (["--overlap", "-1"], "overlap must be >= 0"),
        (["--threads", "0"], "--threads must be between 1 and"),
        (["--tokenizer", "missing.json"], "tokenizer file not found: missing.json"),
    ],
)
def test_bad_options(args: list[str], message: str, tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(tree), *args]) == 2
    assert message in capsys.readouterr().err


def test_corrupt_tokenizer(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = tmp_path / "tok.json"
    corrupt.write_text("{broken")
    assert main(["chunk", str(tree), "--tokenizer", str(corrupt)]) == 2
    assert f"{corrupt} is not a valid tokenizer.json" in capsys.readouterr().err


def test_missing_path_and_bad_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(tmp_path / "nope.md")]) == 2
    assert f"no such file or folder: {tmp_path / 'nope.md'}" in capsys.readouterr().err
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    assert main(["chunk", str(latin)]) == 2
    assert f"{latin} is not valid UTF-8" in capsys.readouterr().err


def test_argparse_errors_return_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", "x", "--max-tokens", "many"]) == 2
    assert "--max-tokens" in capsys.readouterr().err


def test_python_dash_m(tree: Path, tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "in.jsonl", [{"id": "j", "text": TEXT_B}])
    ok = subprocess.run(
        [sys.executable, "-m", "chunkforge", "chunk", str(tree), str(jsonl), "--max-tokens", "8", "--out", "-"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert ok.returncode == 0 and ok.stderr == ""  # not a terminal: no bar, no summary
    records = [json.loads(line) for line in ok.stdout.splitlines()]
    sources = {f"{tree}/b.md": TEXT_A, f"{tree}/sub/a.txt": TEXT_B, f"{tree}/sub/deeper/c.rst": TEXT_C, "j": TEXT_B}
    check_chunks(records, sources, 8)
    bad = subprocess.run(
        [sys.executable, "-m", "chunkforge", "chunk", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == f"chunkforge: error: no such file or folder: {tmp_path / 'missing'}\n"
