"""The chunker registry is the one list of chunker kinds: an entry added there (and only
there) is a ``--strategy`` of ``chunkforge chunk`` and ``embed-docs``, a strategy of the bulk
job, and a ``[chunker] type`` of the evaluation's configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunkforge import TokenChunker, Tokenizer
from chunkforge.chunkers.registry import CHUNKERS, ChunkerKind
from chunkforge.cli import build_parser, main
from chunkforge.errors import DatasetError, InputError
from chunkforge.eval.configs import Config

TINY_TOKENS = 6
TEXT = "Cats purr when they are content. " * 12


def tiny(tokenizer: Any, max_tokens: int | None = None, overlap: int = 0) -> TokenChunker:
    """A test-local kind: token windows of at most TINY_TOKENS tokens, whatever is asked."""
    return TokenChunker(tokenizer, max_tokens=min(max_tokens or TINY_TOKENS, TINY_TOKENS), overlap=overlap)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(CHUNKERS, "tiny", ChunkerKind(tiny))
    return "tiny"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.md"
    path.write_text(TEXT, encoding="utf-8")
    return path


def config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text('[chunker]\ntype = "tiny"\nmax_tokens = 64\n', encoding="utf-8")
    return path


def test_an_unregistered_kind_is_refused_everywhere(tmp_path: Path, notes: Path) -> None:
    assert main(["chunk", str(notes), "--strategy", "tiny"]) == 2
    from chunkforge.bulk import JobSpec

    with pytest.raises(InputError, match="strategy must be one of"):
        JobSpec(strategy="tiny").check()
    with pytest.raises(DatasetError, match="type must be one of"):
        Config.load(config(tmp_path))


def test_a_registered_kind_is_a_cli_strategy(registered: str, notes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["chunk", str(notes)], ["embed-docs", str(notes), "--out", "ds"]):
        assert build_parser().parse_args([*command, "--strategy", registered]).strategy == registered
    assert main(["chunk", str(notes), "--strategy", registered, "--max-tokens", "64"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) > 1 and max(r["token_count"] for r in rows) == TINY_TOKENS
    assert all(TEXT[r["start"] : r["end"]] == r["text"] for r in rows)


def test_a_registered_kind_cuts_the_bulk_job(registered: str, notes: Path, tmp_path: Path, model_cache: Path) -> None:
    pytest.importorskip("onnxruntime", reason="the bulk job needs onnxruntime (chunkforge[embed])")
    pytest.importorskip("pyarrow")
    from chunkforge import Encoder, bulk

    summary = bulk.run([notes], tmp_path / "ds", encoder=Encoder.default(), strategy=registered, with_text=True)
    table = bulk.read_dataset(tmp_path / "ds")
    assert summary.rows == table.num_rows > 1
    assert max(table.column("token_count").to_pylist()) == TINY_TOKENS
    assert bulk.read_manifest(tmp_path / "ds")["chunker"]["strategy"] == registered


def test_a_registered_kind_is_an_eval_chunker_type(registered: str, tmp_path: Path) -> None:
    chunker = Config.load(config(tmp_path)).make_chunker(Tokenizer.default())
    chunks = chunker.chunk_batch([TEXT])[0]
    assert len(chunks) > 1 and max(c.token_count for c in chunks) == TINY_TOKENS
