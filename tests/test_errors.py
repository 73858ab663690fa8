"""Errors as data: every argument error is a ChunkforgeError that carries the parameter it is
about (``param``), still a ValueError or TypeError as callers expect; the command line spells
that parameter as its own flag from the attribute, in a one-line error with exit status 2."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import chunkforge
from chunkforge import ChunkforgeError
from chunkforge._checks import check_int
from chunkforge.cli import build_parser, flag_of, main
from chunkforge.errors import ArgumentError, ArgumentTypeError, InputError
from chunkforge.tokenizer import check_threads

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("make", "param", "kind"),
    [
        (lambda: check_int("max_tokens", 0, 1), "max_tokens", ValueError),
        (lambda: check_int("overlap", "2", 0), "overlap", TypeError),
        (lambda: check_threads(0), "threads", ValueError),
        (lambda: check_threads(1.5), "threads", TypeError),
        (lambda: chunkforge.RecursiveChunker(max_tokens=0), "max_tokens", ValueError),
        (lambda: chunkforge.RecursiveChunker(max_tokens=8, overlap=8), "overlap", ValueError),
        (lambda: chunkforge.TokenChunker(max_tokens=True), "max_tokens", TypeError),
        (lambda: chunkforge.MarkdownChunker(syntax="latex"), "syntax", ValueError),
        (lambda: chunkforge.Tokenizer.default().count_batch("one text"), "texts", TypeError),
    ],
)
def test_argument_errors_are_chunkforge_errors_with_their_parameter(make, param, kind):
    with pytest.raises(ChunkforgeError) as caught:
        make()
    error = caught.value
    assert isinstance(error, kind) and isinstance(error, ValueError)  # ValueError callers keep working
    assert isinstance(error, ArgumentTypeError if kind is TypeError else ArgumentError)
    assert error.param == param and str(error).startswith(param)  # the message still names it
    assert error.named("--flag") == "--flag" + str(error).removeprefix(param)


def test_an_error_keeps_its_parameter_when_passed_on_and_pickled():
    inner = ArgumentError("must be >= 1, got 0", param="leaf_tokens")
    outer = InputError.of(inner, where="config a.toml")
    assert (outer.param, str(outer)) == ("leaf_tokens", "config a.toml: leaf_tokens must be >= 1, got 0")
    assert outer.named("--leaf-tokens") == "config a.toml: --leaf-tokens must be >= 1, got 0"
    aside = InputError('record has no "kye"', param="id_column", where="d.jsonl:1", aside=True)
    assert aside.named("--id-column") == 'd.jsonl:1: record has no "kye" (--id-column)'
    plain = InputError.of(ValueError("bad"))
    assert (plain.param, str(plain), plain.named("--x")) == (None, "bad", "bad")
    again = pickle.loads(pickle.dumps(outer))
    assert (type(again), again.param, str(again)) == (InputError, "leaf_tokens", str(outer))


def test_the_command_line_spells_a_parameter_from_its_parser():
    args = build_parser().parse_args(["embed-docs", "d.jsonl", "--out", "ds"])
    assert flag_of("max_batch_tokens", args) == "--max-batch-tokens"
    assert flag_of("paths", args) == "DOCS" and flag_of("max_length", args) is None and flag_of(None, args) is None
    index_args = build_parser().parse_args(["index", "build", "d.jsonl", "--out", "ix"])
    assert flag_of("leaf_tokens", index_args) == "--leaf-tokens"


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkforge: error: ") and err.count("\n") == 1, err
    return err.removeprefix("chunkforge: error: ").rstrip("\n")


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "text": "Cats purr. Dogs bark."}\n', encoding="utf-8")
    return path


def test_chunk_names_its_flags(records, capsys):
    assert one_line_error(["chunk", str(records), "--max-tokens", "0"], capsys) == "--max-tokens must be >= 1, got 0"
    assert one_line_error(["chunk", str(records), "--threads", "0"], capsys).startswith("--threads must be between 1")
    err = one_line_error(["chunk", str(records), "--max-tokens", "4", "--overlap", "4"], capsys)
    assert err == "--overlap (4) must be smaller than max_tokens (4)"


def test_embed_names_its_flags(records, tmp_path, capsys, model_cache):
    out = str(tmp_path / "v.npy")
    err = one_line_error(["embed", str(records), "--out", out, "--max-batch-tokens", "0"], capsys)
    assert err == "--max-batch-tokens must be >= 1, got 0"
    err = one_line_error(["embed", str(records), "--out", out, "--reuse", str(tmp_path / "nowhere")], capsys)
    assert err == f"--reuse {tmp_path / 'nowhere'}: no such file or folder"


def test_embed_docs_names_its_flags(records, tmp_path, capsys, model_cache):
    out = str(tmp_path / "ds")
    err = one_line_error(["embed-docs", str(records), "--out", out, "--max-tokens", "0"], capsys)
    assert err == "--max-tokens must be >= 1 (an integer), not 0"
    err = one_line_error(["embed-docs", str(records), "--out", out, "--id-column", "kye"], capsys)
    assert err == f'{records}:1: record has no "kye" (--id-column)'


def test_index_build_names_its_flags(records, tmp_path, capsys, model_cache):
    err = one_line_error(["index", "build", str(records), "--out", str(tmp_path / "ix"), "--leaf-tokens", "0"], capsys)
    assert err == "--leaf-tokens must be >= 1, got 0"


def test_query_names_its_flags(records, tmp_path, capsys, model_cache):
    folder = tmp_path / "ix"
    assert main(["index", "build", str(records), "--out", str(folder)]) == 0
    assert one_line_error(["query", str(folder), "cats", "--k", "0"], capsys) == "--k must be >= 1, got 0"


def test_eval_names_its_flags(capsys):
    eval_data = DATA / "eval"
    argv = ["eval", "--corpus", str(eval_data / "corpus.jsonl"), "--queries", str(eval_data / "queries.jsonl")]
    argv += ["--config", str(eval_data / "configs" / "token-128.toml"), "--k", "0"]
    assert one_line_error(argv, capsys) == "--k must be >= 1, got 0"


def test_serve_names_its_flags(records, tmp_path, capsys, model_cache):
    folder = tmp_path / "ix"
    assert main(["index", "build", str(records), "--out", str(folder)]) == 0
    capsys.readouterr()
    err = one_line_error(["serve", str(folder), "--workers", "0"], capsys)
    assert err == "--workers must be at least 1, not 0"
