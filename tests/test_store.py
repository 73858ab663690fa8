"""The index on LanceDB (``write_store``, ``Index.open``): the same answers as the in-memory
index from the same job output, incremental updates, readers that see one version, a writer
killed with SIGKILL mid-update. Real LanceDB, encoder, files and processes."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("lancedb")

import chunkforge  # noqa: E402
from chunkforge import bulk  # noqa: E402
from chunkforge.errors import ArgumentError  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index import store_query as store_module  # noqa: E402
from chunkforge.index.fusion import BM25_POOL  # noqa: E402
from chunkforge.index.store import StoreError, StoreIndex, write_store  # noqa: E402
from chunkforge.index.store_cache import DocumentCache  # noqa: E402
from chunkforge.index.store_tables import LEAVES  # noqa: E402

from conftest import corpus  # noqa: E402

QUESTIONS = ["how do I install it?", "what does the license allow?", "configure the driver", "error handling"]


def records(n: int = 12) -> list[dict]:
    docs = sorted(corpus(), key=lambda d: len(d["text"]))
    picked = [d for d in docs if 1500 < len(d["text"]) < 5000][:n]
    return [
        {**d, "url": f"https://example.org/{i}", "acl": "staff" if i % 3 == 0 else "public"}
        for i, d in enumerate(picked)
    ]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def spans(payload) -> list[tuple[str, int, int]]:
    return [(p.doc_id, p.start, p.end) for p in payload.passages]


def changed(docs: list[dict]) -> list[dict]:
    out = [dict(d) for d in docs]
    out[4]["text"] += "\n\nA closing paragraph on installing the package with pip."
    out[9]["acl"] = "staff"
    return out


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


@pytest.fixture(scope="module")
def job(tmp_path_factory, encoder) -> Path:
    """A tree dataset of the records (vectors), its store, and a dataset of the changed records."""
    root = tmp_path_factory.mktemp("store")
    bulk.run(
        [write_jsonl(root / "docs.jsonl", records())], root / "vectors", encoder=encoder, units="tree", shard_docs=4
    )
    bulk.run(
        [write_jsonl(root / "new.jsonl", changed(records()))], root / "new", encoder=encoder, units="tree", shard_docs=4
    )
    write_store(root / "vectors", root / "store.lancedb")
    return root


def test_store_answers_as_the_in_memory_index(job, encoder):
    store, memory = Index.open(job / "store.lancedb", encoder), Index.from_dataset(job / "vectors", encoder)
    assert isinstance(store, StoreIndex) and store.version == 1
    assert len(store) == len(memory) and store.leaf_count == memory.leaf_count
    shared = 0
    for question in QUESTIONS:
        # dense: the same nearest leaves (an exact scan below the ANN threshold; equal cosines
        # of leaves with the same text may come in either order)
        a, b = store.search(question, k=10, hybrid=False), memory.search(question, k=10, hybrid=False)
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)
        assert len({h.text for h in a} ^ {h.text for h in b}) <= 2
        a, b = store.query(question), memory.query(question)
        assert all(p.text == memory.document(p.doc_id)[p.start : p.end] for p in a.passages)
        assert a.token_count <= 1000
        shared += len(set(spans(a)) & set(spans(b))) / max(len(spans(b)), 1)
    assert shared / len(QUESTIONS) > 0.8  # equal scores of leaves with the same text: either order
    doc_id = memory.doc_ids[3]
    assert store.document(doc_id) == memory.document(doc_id)
    assert store.metadata(doc_id) == memory.metadata(doc_id)
    a, b = store.tree(doc_id), memory.tree(doc_id)
    assert (a.nodes == b.nodes).all() and a.headings == b.headings


@pytest.mark.parametrize("fts_limit", [None, BM25_POOL])
def test_store_ranks_as_the_in_memory_index(job, encoder, monkeypatch, fts_limit):
    """The hybrid scores agree: LanceDB's full-text index scores as the in-memory BM25 (same
    terms, Lucene's k1 and b), and where its query stops at the limit, the parents of the
    nearest leaves are scored by a second query."""
    if fts_limit is not None:
        monkeypatch.setattr(store_module, "_FTS_LIMIT", fts_limit)
    store, memory = Index.open(job / "store.lancedb", encoder), Index.from_dataset(job / "vectors", encoder)
    for question in QUESTIONS:
        a, b = store.search(question, k=10), memory.search(question, k=10)
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4), question


def test_store_filters_by_metadata_and_returns_it(job, encoder):
    store = Index.open(job / "store.lancedb", encoder)
    acl = {d["id"]: d["acl"] for d in records()}
    payload = store.query("how do I install it?", where={"acl": "staff"})
    assert payload.passages and {acl[p.doc_id] for p in payload.passages} == {"staff"}
    assert all(payload.metadata[p.doc_id]["acl"] == "staff" for p in payload.passages)
    assert {acl[h.doc_id] for h in store.search("install", k=40, where={"acl": ["staff", "public"]})} == {
        "staff",
        "public",
    }
    assert store.search("install", where={"acl": "nobody"}) == []
    with pytest.raises(TypeError, match="where"):
        store.search("install", where={"acl": {"x": 1}})


def test_store_expands_spans_and_refuses_foreign_hits(job, encoder):
    store, memory = Index.open(job / "store.lancedb", encoder), Index.from_dataset(job / "vectors", encoder)
    doc_id = memory.doc_ids[2]
    leaf = memory.leaves(doc_id)[4]
    span = [(doc_id, leaf.start, leaf.end, 0.8)]
    assert spans(store.expand(span, window=1)) == spans(memory.expand(span, window=1))
    # a hit of the in-memory index names its leaf by span: relabelled onto the store's leaf
    assert spans(store.expand([leaf], window=1)) == spans(memory.expand([leaf], window=1))
    with pytest.raises(ValueError, match="not a leaf"):
        store.expand([replace(leaf, start=leaf.start + 1)])
    with pytest.raises(KeyError, match="nowhere"):
        store.expand([("nowhere", 0, 5, 1.0)])


def test_update_rewrites_only_changed_shards_and_equals_a_clean_store(job, encoder, tmp_path):
    shutil.copytree(job / "store.lancedb", tmp_path / "store")
    reader = Index.open(tmp_path / "store", encoder)
    before = spans(reader.query("installing the package with pip"))
    assert write_store(job / "new", tmp_path / "store") == 2
    assert write_store(job / "new", tmp_path / "store") == 2  # up to date: no new commit
    # a reader stays on its version until it reloads
    assert reader.version == 1 and spans(reader.query("installing the package with pip")) == before
    assert reader.reload() and reader.version == 2
    write_store(job / "new", tmp_path / "clean")
    assert rows_of(tmp_path / "store") == rows_of(tmp_path / "clean")
    clean = Index.open(tmp_path / "clean", encoder)
    same = 0
    for question in [*QUESTIONS, "installing the package with pip"]:
        assert [h.score for h in reader.search(question, hybrid=False)] == pytest.approx(
            [h.score for h in clean.search(question, hybrid=False)], abs=1e-6
        )
        same += spans(reader.query(question)) == spans(clean.query(question))
    assert same >= 3  # the full-text index's own ties may order equal passages otherwise
    moved = changed(records())[9]
    assert reader.metadata(moved["id"])["acl"] == "staff"
    import lancedb

    db = lancedb.connect(tmp_path / "store")
    leaves = db.open_table("leaves").to_arrow()
    manifest = json.loads((job / "new" / "manifest.json").read_text())
    assert leaves.num_rows == manifest["rows"]
    assert set(leaves.column("shard").to_pylist()) == {Path(e["file"]).name.split(".")[0] for e in manifest["shards"]}


WRITER = """
import sys
from chunkforge.index.store import write_store
write_store(sys.argv[1], sys.argv[2], ann_min_rows=256, ann_partitions=2)
"""

READER = """
import json, sys, time
from chunkforge.index import Index
from chunkforge.encoder import Encoder
index = Index.open(sys.argv[1], Encoder.default())
seen = []
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    index.reload()
    hits = index.search("how do I install it?", k=5, hybrid=False)
    payload = index.query("how do I install it?", k=20)  # full text, trees and texts of that one version
    ok = all(index.document(p.doc_id)[p.start : p.end] == p.text for p in payload.passages)
    seen.append([index.version, index.leaf_count, len(hits), bool(payload.passages) and ok, index._now.side is not None])
print(json.dumps(seen))
"""


def test_writer_killed_mid_update_leaves_the_last_commit_and_readers_one_version(job, encoder, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(job / "store.lancedb", store)
    rows = {1: Index.open(store, encoder).leaf_count}
    rows[2] = json.loads((job / "new" / "manifest.json").read_text())["rows"]
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(chunkforge.__file__).parents[1]) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    readers = [
        subprocess.Popen([sys.executable, "-c", READER, str(store), "25"], stdout=subprocess.PIPE, env=env)
        for _ in range(4)
    ]
    rng = random.Random(7)
    for _ in range(4):  # killed at random moments of the update
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(job / "new"), str(store)], env=env)
        time.sleep(rng.uniform(1.0, 4.0))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        index = Index.open(store, encoder)
        assert index.version in rows and index.leaf_count == rows[index.version]
    subprocess.run([sys.executable, "-c", WRITER, str(job / "new"), str(store)], env=env, check=True, timeout=600)
    for reader in readers:
        out, _ = reader.communicate(timeout=120)
        seen = json.loads(out)
        assert seen and all(  # a commit a reader sees has its side (built before the commit)
            version in rows and count == rows[version] and n == 5 and ok and side
            for version, count, n, ok, side in seen
        )
    index = Index.open(store, encoder)
    assert index.version >= 2 and index.leaf_count == rows[2]
    clean = tmp_path / "clean"
    write_store(job / "new", clean, ann_min_rows=256, ann_partitions=2)
    assert rows_of(store) == rows_of(clean)
    other = Index.open(clean, encoder)
    for question in QUESTIONS:  # an ANN index trained on other rows may rank near-ties otherwise
        assert [h.score for h in index.search(question, hybrid=False)] == pytest.approx(
            [h.score for h in other.search(question, hybrid=False)], abs=0.02
        )


def rows_of(uri: Path) -> dict[str, list]:
    """Each table's rows at the latest commit, sorted (vectors left out)."""
    import lancedb

    from chunkforge.index.store import last_commit

    db = lancedb.connect(uri)
    commit = last_commit(db)
    out = {}
    for name in ("leaves", "parents", "docs"):
        table = db.open_table(name)
        table.checkout(commit[name])
        columns = [c for c in table.schema.names if c != "vector"]
        out[name] = sorted(map(str, table.to_arrow().select(columns).to_pylist()))
    return out


@pytest.mark.parametrize("kind", ["IVF_PQ", "IVF_HNSW_SQ"])
def test_ann_index_finds_each_leaf(job, encoder, tmp_path, kind):
    write_store(job / "vectors", tmp_path / "ann", ann_min_rows=256, ann_partitions=2, ann_index=kind, side=False)
    import lancedb

    indices = lancedb.connect(tmp_path / "ann").open_table("leaves").list_indices()
    assert [i.index_type.lower() for i in indices if "vector" in i.name] == [kind.replace("_", "").lower()]
    store, memory = Index.open(tmp_path / "ann", encoder), Index.from_dataset(job / "vectors", encoder)
    leaves = memory.leaves()
    found = sum(leaf.id in [h.id for h in store.search(leaf.text, k=10, hybrid=False)] for leaf in leaves[::53])
    assert found >= 0.9 * len(leaves[::53])


def test_document_cache_stays_within_cache_bytes(job, encoder):
    """Documents (with a side, their sections) read for a search are evicted, least recently
    used first, down to ``cache_bytes`` (their resident size: text, tokens and trees; a
    search's own stay while it runs); answers do not change."""
    from chunkforge.index.store_cache import RESIDENT_PER_TEXT_BYTE

    for side in (True, False):
        roomy = Index.open(job / "store.lancedb", encoder, side=side)
        text = max(len(d["text"].encode("utf-8")) for d in records())
        tight = Index.open(job / "store.lancedb", encoder, cache_bytes=3 * RESIDENT_PER_TEXT_BYTE * text, side=side)
        held = 0
        for question in QUESTIONS + [d["text"][:200] for d in records()]:
            hits = tight.search(question, k=2)
            assert [h.id for h in hits] == [h.id for h in roomy.search(question, k=2)]
            wide = roomy.expand(roomy.search(question, k=2), parent=True)
            assert spans(tight.expand(hits, parent=True)) == spans(wide)
            docs = tight._now.docs
            assert docs.cached_bytes <= tight.cache_bytes
            # the expander's slots are reused: as many as held at once (and a search's 2 new ones,
            # with a side 2 more: the best BM25 parents' leaves read while the graph is searched)
            assert max(entry.slot for entry in docs.cache.values()) < held + (4 if side else 2)
            held = max(held, len(docs.cache))
        assert len(tight._now.docs.cache) < len(roomy._now.docs.cache)
        assert roomy._now.docs.cached_bytes > tight.cache_bytes  # it did evict


@pytest.mark.parametrize("hybrid", [False, True])
def test_a_side_reader_reads_no_vector_and_its_hits_sections_at_most_twice(job, encoder, monkeypatch, hybrid):
    """With a side, an unfiltered search never reads the leaves table: every leaf is scored
    from its int8 copy, as in memory. Its hits' sections are read in at most two insertions
    (the best BM25 parents' leaves while the graph is searched, then the hits missing), and the
    answers are a plain reader's (LanceDB's searches, its vectors scored in int8 too)."""

    class Unread:
        def __getattr__(self, name):
            raise AssertionError(f"the leaves table was used ({name})")

    inserted: list[list[str]] = []
    insert = DocumentCache._insert

    def recording(self, rows, *args):
        inserted.append(rows.column("doc_id").to_pylist())
        return insert(self, rows, *args)

    monkeypatch.setattr(DocumentCache, "_insert", recording)
    plain = Index.open(job / "store.lancedb", encoder, side=False)
    compared = 0
    for question in QUESTIONS:
        index = Index.open(job / "store.lancedb", encoder)
        monkeypatch.setitem(index._now.tables, LEAVES, Unread())
        inserted.clear()
        hits = index.search(question, k=12, hybrid=hybrid)
        assert 1 <= len(inserted) <= 2, question
        assert {h.doc_id for h in hits} <= {d for ids in inserted for d in ids}
        # LanceDB's nearest leaves are its float top 64, the side's its int8 top 64: a leaf at
        # the edge may be in one pool only, so the hits above the last one's score are compared
        above = hits[-1].score + 1e-6
        mine = [(h.id, h.score) for h in hits if h.score > above]
        theirs = [(h.id, h.score) for h in plain.search(question, k=12, hybrid=hybrid) if h.score > above]
        assert [i for i, _ in mine] == [i for i, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-6)  # BM25's sums: last bits
        compared += len(mine)
    assert compared > len(QUESTIONS)


def test_a_store_removed_under_a_reader_is_a_store_error(job, encoder, tmp_path):
    """A reader's side (mapped arrays, an open file) would still answer once its store is removed;
    the reader says the store is gone instead, for questions asked before as for new ones."""
    store = tmp_path / "store.lancedb"
    shutil.copytree(job / "store.lancedb", store)
    index = Index.open(store, encoder)
    assert index.query(QUESTIONS[0]).passages
    hits = index.search(QUESTIONS[0], k=3)
    shutil.rmtree(store)
    for question in (QUESTIONS[0], "a question never asked before"):
        with pytest.raises(StoreError, match="removed under this reader"):
            index.query(question)
    with pytest.raises(StoreError, match="removed under this reader"):
        index.expand(hits)


def test_index_cache_holds_what_it_is_given(job, encoder, tmp_path):
    """``index_cache_bytes`` bounds a query process's LanceDB index cache (IVF partitions,
    posting lists); a cap too small to hold them costs reads, not answers."""
    write_store(job / "vectors", tmp_path / "ann", ann_min_rows=256, ann_partitions=2, side=False)
    roomy = Index.open(tmp_path / "ann", encoder)
    tight = Index.open(tmp_path / "ann", encoder, index_cache_bytes=64 << 10)
    for question in QUESTIONS:
        assert spans(tight.query(question)) == spans(roomy.query(question))
    # the sizes count the file metadata cache too (a few hundred KB here)
    assert 2 * tight._session.size_bytes < roomy._session.size_bytes
    with pytest.raises(ValueError, match="index_cache_bytes"):
        Index.open(tmp_path / "ann", encoder, index_cache_bytes=-1)
    for name in ("nprobes", "refine_factor"):
        with pytest.raises(ArgumentError, match=f"{name} must be >= 1") as caught:
            Index.open(tmp_path / "ann", encoder, **{name: 0})
        assert caught.value.param == name


def test_ann_index_keeps_the_partitions_it_was_built_with(encoder, tmp_path):
    """The store's own ``optimize`` comes before the ANN index: LanceDB's optimize joins small
    IVF partitions (here 6 of about 300 leaves into 1), so an index built first would be left
    with fewer than it was asked for. (LanceDB trains no more than one partition a 256 rows,
    hence a corpus bigger than the other tests'.)"""
    import lancedb

    docs = write_jsonl(tmp_path / "docs.jsonl", records(80))
    bulk.run([docs], tmp_path / "vectors", encoder=encoder, units="tree")
    write_store(tmp_path / "vectors", tmp_path / "ann", ann_min_rows=256, ann_partitions=6, side=False)
    leaves = lancedb.connect(tmp_path / "ann").open_table("leaves")
    assert leaves.count_rows() >= 6 * 256
    plan = leaves.search(np.ones(384, np.float32)).distance_type("cosine").nprobes(1).limit(1).analyze_plan()
    assert re.search(r"partitions_ranked=(\d+)", plan).group(1) == "6", plan


def test_store_refuses_plain_chunks_and_other_settings(job, encoder, tmp_path):
    from chunkforge.errors import InputError

    bulk.run([write_jsonl(tmp_path / "d.jsonl", records(2))], tmp_path / "plain", encoder=encoder)
    with pytest.raises(InputError, match="--index"):
        write_store(tmp_path / "plain", tmp_path / "s")
    bulk.run([tmp_path / "d.jsonl"], tmp_path / "other", encoder=encoder, units="tree", leaf_tokens=32)
    shutil.copytree(job / "store.lancedb", tmp_path / "store")
    with pytest.raises(InputError, match="other settings"):
        write_store(tmp_path / "other", tmp_path / "store")
    with pytest.raises(FileNotFoundError, match="no chunkforge store"):
        Index.open(tmp_path / "empty", encoder)
    with pytest.raises(ValueError, match="ann_index must be one of IVF_PQ, IVF_HNSW_SQ"):
        write_store(job / "vectors", tmp_path / "s", ann_index="HNSW")  # type: ignore[arg-type]


def test_one_lancedb_writer_for_both_kinds_of_dataset(job, encoder, tmp_path):
    """``write_lancedb`` (what ``--lancedb`` runs): a tree dataset becomes the store, plain
    chunks the table ``chunks``; an empty dataset of plain chunks gets the job's columns."""
    import lancedb

    from chunkforge.bulk.lance import write_lancedb

    assert write_lancedb(job / "vectors", tmp_path / "store") == StoreIndex(tmp_path / "store", encoder).leaf_count
    bulk.run([write_jsonl(tmp_path / "d.jsonl", records(2))], tmp_path / "plain", encoder=encoder)
    rows = write_lancedb(tmp_path / "plain", tmp_path / "plain.lancedb")
    assert rows == lancedb.connect(tmp_path / "plain.lancedb").open_table("chunks").count_rows() > 0
    for dtype in ("float32", "float16"):  # an empty dataset's table has the columns a full one's has
        tables = []
        for name, docs in (("empty", []), ("full", records(1))):
            out, uri = tmp_path / f"{name}-{dtype}", tmp_path / f"{name}-{dtype}.lancedb"
            bulk.run([write_jsonl(tmp_path / f"{name}.jsonl", docs)], out, encoder=encoder, dtype=dtype, with_text=True)
            assert (write_lancedb(out, uri) == 0) == (name == "empty")
            tables.append(lancedb.connect(uri).open_table("chunks").schema)
        assert tables[0] == tables[1] and "text" in tables[0].names


def test_a_new_question_reads_its_documents_without_tokenizing_them(job, encoder):
    """The store keeps each document's words (``docs.words``): reading a document into the
    expander tokenizes nothing, and answers as the in-memory index."""
    import lancedb

    docs = lancedb.connect(job / "store.lancedb").open_table("docs").to_arrow()
    assert docs.column("words").null_count == 0
    index = StoreIndex(job / "store.lancedb", encoder)
    question = "how do I install the package?"
    before = encoder.tokenizer._native.tokenized
    payload = index.query(question)
    after = encoder.tokenizer._native.tokenized
    assert payload.passages  # and only the question was tokenized, no document
    assert (after[0] - before[0], after[1] - before[1]) == (1, len(question.encode()))
    memory = Index.from_dataset(job / "vectors", encoder)
    assert spans(payload) == spans(memory.query(question))


def test_a_store_without_words_tokenizes_its_documents_and_answers_the_same(job, encoder, tmp_path):
    """A store written before documents kept their words (no ``words`` column), and one whose
    documents have none (null): the reader tokenizes them, and answers as with the words."""
    import lancedb

    question = "how do I install the package?"
    wanted = spans(StoreIndex(job / "store.lancedb", encoder).query(question))
    for change in ("drop", "null"):
        store = tmp_path / f"{change}.lancedb"
        shutil.copytree(job / "store.lancedb", store)
        db = lancedb.connect(store)
        docs = db.open_table("docs")
        if change == "drop":
            docs.drop_columns(["words"])
        else:
            docs.update(values_sql={"words": "NULL"})
        commits = db.open_table("commits")  # the last commit names the changed docs table
        last = max(commits.to_arrow().column("version").to_pylist())
        commits.update(where=f"version = {last}", values={"docs": docs.version})
        index = StoreIndex(store, encoder)
        before = encoder.tokenizer._native.tokenized[0]
        assert spans(index.query(question)) == wanted
        assert encoder.tokenizer._native.tokenized[0] - before > 1  # the documents were tokenized


def test_cli_embed_docs_index_lancedb_then_query(tmp_path, capsys, model_cache):
    from chunkforge.cli import main

    docs = write_jsonl(tmp_path / "docs.jsonl", records(3))
    assert (
        main(["embed-docs", str(docs), "--out", str(tmp_path / "v"), "--index", "--lancedb", str(tmp_path / "s")]) == 0
    )
    assert main(["query", str(tmp_path / "s"), "how do I install it?", "--where", "acl=staff", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["passages"] and all(payload["metadata"][p["doc_id"]]["acl"] == "staff" for p in payload["passages"])


def test_a_damaged_full_text_index_is_an_error_not_dense_only_search(job, encoder, tmp_path):
    """The store's BM25 half swallowed every error, so a damaged full-text index silently
    turned the store into dense-only search. Now it is a StoreError naming the store and table."""
    store = tmp_path / "store.lancedb"
    shutil.copytree(job / "store.lancedb", store)
    for part in (store / "parents.lance" / "_indices").rglob("*invert*"):
        part.write_bytes(b"garbage!" * 8)
    index = Index.open(store, encoder, side=False)
    with pytest.raises(StoreError, match=r"cannot be read \(parents table: "):
        index.search("how do I install it?")
    assert index.search("how do I install it?", hybrid=False)  # the leaves are whole


def test_reload_while_threads_query_fails_no_query(job, encoder, tmp_path):
    """``reload()`` while other threads query: each query runs on the commit it started on
    (its tables and the documents read from them), so none fails as the documents change."""
    import threading

    store = tmp_path / "store.lancedb"
    shutil.copytree(job / "store.lancedb", store)
    index = Index.open(store, encoder)
    stop, errors, answered = threading.Event(), [], [0]

    def ask() -> None:
        questions = QUESTIONS + ["closing paragraph on installing the package with pip"]
        while not stop.is_set():
            try:
                index.query(random.choice(questions), budget_tokens=300, spread=0.5)
                answered[0] += 1
            except Exception as exc:  # noqa: BLE001 - any failure is one
                errors.append(repr(exc))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for dataset in ("new", "vectors", "new", "vectors"):
            write_store(job / dataset, store)
            assert index.reload()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    assert answered[0] > 0


def test_one_writer_at_a_time_per_store(job, tmp_path):
    """Two jobs writing one store raced to a raw 'Incompatible transaction' or two commits
    numbered alike; a second writer now stops at once, naming the store."""
    from chunkforge.errors import InputError

    store = tmp_path / "store.lancedb"
    shutil.copytree(job / "store.lancedb", store)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom chunkforge.index.store_write import _writing\n"
            f"with _writing({str(store)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match="another job is writing this store"):
            write_store(job / "new", store)
    finally:
        holder.kill()
        holder.wait()
    assert write_store(job / "new", store) == 2


def test_each_commit_gets_a_side_that_answers_as_lancedb(job, encoder, tmp_path):
    """``write_store`` builds each commit's side indexes after it (and for a commit that has
    none, when called again); a reader searches them in place of LanceDB's indexes, with the
    same scores, and falls back to LanceDB's where its commit has no side. A killed build's
    work folder is never read and is removed by the next build; two sides are kept; a side of
    format 4 is read (without the sections' places) and rebuilt, one of an older layout is
    not read, and is rebuilt, nor is a side whose documents' copy or sections' places are
    damaged."""
    from chunkforge.index.store_side import FORMAT, side_folder

    store = tmp_path / "store"
    assert write_store(job / "vectors", store, side=False) == 1 and not (store / "side").exists()
    assert Index.open(store, encoder)._now.side is None
    assert write_store(job / "vectors", store) == 1  # up to date: no new commit, but its side
    assert (side_folder(store, 1) / "side.json").is_file()
    sided, plain = Index.open(store, encoder), Index.open(store, encoder, side=False)
    assert sided._now.side is not None and plain._now.side is None
    same = 0
    for question in QUESTIONS:
        for hybrid in (True, False):
            a, b = sided.search(question, k=10, hybrid=hybrid), plain.search(question, k=10, hybrid=hybrid)
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4), question
        payload = sided.query(question)
        assert payload.passages and all(p.text == sided.document(p.doc_id)[p.start : p.end] for p in payload.passages)
        same += spans(payload) == spans(plain.query(question))
    assert same >= 3  # equal scores of leaves with the same text: either order
    (store / "side" / ".2.999").mkdir()  # a killed build's work folder
    assert write_store(job / "new", store) == 2
    assert sorted(p.name for p in (store / "side").iterdir()) == ["1", "2"]
    assert sided.reload() and sided._now.side.version == 2
    assert sided.metadata(changed(records())[9]["id"])["acl"] == "staff"
    assert spans(sided.query("installing the package with pip")) == spans(
        Index.open(store, encoder, side=False).query("installing the package with pip")
    )
    assert write_store(job / "vectors", store) == 3
    assert sorted(p.name for p in (store / "side").iterdir()) == ["2", "3"]
    meta = side_folder(store, 3) / "side.json"  # a side of other tables (a killed update's): not read
    meta.write_text(meta.read_text().replace('"leaves": ', '"leaves": 1000'))
    assert Index.open(store, encoder)._now.side is None
    assert write_store(job / "vectors", store) == 3 and Index.open(store, encoder)._now.side is not None
    expected = spans(Index.open(store, encoder).query(QUESTIONS[0]))
    (side_folder(store, 3) / "part_offset.npy").unlink()  # format 4: read, its sections without the prefetch
    meta.write_text(meta.read_text().replace(f'"format": {FORMAT}', '"format": 4'))
    older = Index.open(store, encoder)
    assert older._now.side is not None and older._now.side.part_offset is None
    assert spans(older.query(QUESTIONS[0])) == expected
    assert write_store(job / "vectors", store) == 3 and Index.open(store, encoder)._now.side.part_offset is not None
    offsets = side_folder(store, 3) / "part_offset.npy"  # the sections' places out of order: not read
    kept = offsets.read_bytes()
    np.save(offsets, np.load(offsets)[::-1].copy())
    with pytest.warns(UserWarning, match="part_offset.npy does not place"):
        assert Index.open(store, encoder)._now.side is None
    offsets.write_bytes(kept)
    meta.write_text(meta.read_text().replace(f'"format": {FORMAT}', '"format": 1'))  # an older layout
    with pytest.warns(UserWarning, match="side format 1"):
        assert Index.open(store, encoder)._now.side is None
    assert write_store(job / "vectors", store) == 3 and Index.open(store, encoder)._now.side is not None
    docs = side_folder(store, 3) / "parts.arrow"  # a damaged copy of the documents: not read
    docs.write_bytes(docs.read_bytes()[: docs.stat().st_size // 2])
    with pytest.warns(UserWarning, match="cannot be read"):
        damaged = Index.open(store, encoder)
    lancedb = Index.open(store, encoder, side=False)
    assert damaged._now.side is None and spans(damaged.query(QUESTIONS[0])) == spans(lancedb.query(QUESTIONS[0]))


def payload_view(payload) -> tuple[list[tuple], list[str]]:
    """What a payload says: its passages (span, size, score, headings, text, hits) and its dropped hits."""
    passages = [
        (p.doc_id, p.start, p.end, p.token_count, p.score, p.heading_path, p.text, sorted(h.id for h in p.hits))
        for p in payload.passages
    ]
    return passages, sorted(h.id for h in payload.dropped)


EXPANSIONS = [
    {},
    {"parent": True},
    {"window": 2},
    {"window_tokens": 120},
    {"auto_merge": 0.2},
    {"spread": 0.5},
    {"spread": 0.5, "budget_tokens": 300, "order": "document"},
    {"window": 1, "budget_tokens": 200, "pack": "stop", "trim": True},
    {"parent": True, "budget_tokens": 400, "order": "document"},
]


@pytest.mark.parametrize("options", EXPANSIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "none")
def test_a_side_reads_sections_and_answers_as_whole_documents(job, encoder, options):
    """With a side, a reader reads the sections of the hits' leaves (each alone, from the side's
    copy), not their documents: a hit's expansion never leaves its section. Its payloads are
    those of a reader of whole documents (LanceDB's docs table) and of the in-memory index,
    under every way of expanding, packing and ordering, spans across sections included (and
    hits whose offsets are numpy integers)."""
    import dataclasses

    from chunkforge.index.options import ExpandOptions

    sided, plain = Index.open(job / "store.lancedb", encoder), Index.open(job / "store.lancedb", encoder, side=False)
    memory = Index.from_dataset(job / "vectors", encoder)
    side = sided._now.side
    assert side.part_ptr[-1] > 2 * len(side.doc_ids)  # documents of several sections
    for question in QUESTIONS:
        hits = sided.search(question, k=12)
        a = sided.expand(hits, **options)
        assert a.passages and payload_view(a) == payload_view(plain.expand(hits, **options))
        assert payload_view(a) == payload_view(memory.expand(hits, **options))
        numpy_spans = [dataclasses.replace(h, start=np.int64(h.start), end=np.int64(h.end)) for h in hits]
        assert payload_view(sided.expand(numpy_spans, **options)) == payload_view(a)
        with pytest.raises(ValueError, match="is not a leaf of this store"):  # NotInIndexError
            sided.expand([dataclasses.replace(hits[0], start=-1)], **options)
        asked = sided.query(question, k=12, floor=None, **options)
        assert payload_view(asked) == payload_view(plain.expand(hits, ExpandOptions.recommended(None, **options)))
    for d in records()[:4]:
        spans = [(d["id"], 0, len(d["text"]), 1.0), (d["id"], len(d["text"]) // 3, len(d["text"]) // 2, 2.0)]
        assert payload_view(sided.expand(spans, **options)) == payload_view(plain.expand(spans, **options))
    held = sided._now.docs.cache.values()
    assert all(isinstance(key, int) for key in sided._now.docs.cache)
    read = sum(len(e.starts) for e in held)
    whole = sum(len(plain._now.docs.cache[e.doc_id].starts) for e in held if e.doc_id in plain._now.docs.cache)
    assert 0 < read < whole  # fewer leaves read than the documents hold


def test_a_side_knows_where_each_section_lies_in_its_file(job, encoder, monkeypatch):
    """The side records where each section's record batch lies in ``parts.arrow``: the bytes
    there are that batch, no more (the first one's with the file's schema before it, the last
    one's followed by the end of the stream), and a reader asks the disk for exactly those of
    the sections it reads (``Side.prefetch``), which reads the same sections as without."""
    import os

    import pyarrow as pa

    from chunkforge.index.store_side import Side

    side = Index.open(job / "store.lancedb", encoder)._now.side
    data = (side.folder / "parts.arrow").read_bytes()
    offsets, schema = side.part_offset, side._parts.schema
    assert len(offsets) == side.part_ptr[-1] + 1 and offsets[0] == 0 and np.all(np.diff(offsets) > 0)
    assert data[offsets[-1] : offsets[-1] + 8] == b"\xff\xff\xff\xff\x00\x00\x00\x00"  # end of stream, then the footer
    first = pa.ipc.open_stream(data[8 : offsets[1]])  # past the file's magic: its schema, then a batch
    assert first.schema.equals(schema) and first.read_next_batch().equals(side._parts.get_batch(0))
    for i in range(1, len(offsets) - 1):
        batch = pa.ipc.read_record_batch(pa.ipc.read_message(pa.py_buffer(data[offsets[i] : offsets[i + 1]])), schema)
        assert batch.equals(side._parts.get_batch(i)), i
    asked, advise = [], os.posix_fadvise
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: asked.append(a) or advise(*a))
    rows = [len(offsets) - 2, 0, 3]
    monkeypatch.setattr(Side, "prefetch", True)
    read = side.parts(rows)
    assert asked == [
        (side._file.fileno(), offsets[r], offsets[r + 1] - offsets[r], os.POSIX_FADV_WILLNEED) for r in rows
    ]
    monkeypatch.setattr(Side, "prefetch", False)
    assert side.parts(rows).equals(read) and len(asked) == len(rows)


@pytest.mark.parametrize("headings", ["[[", '{"a": 1}', None])
def test_a_document_whose_headings_are_damaged_is_a_store_error(job, encoder, tmp_path, headings):
    """A hit section's headings are read natively from the side's copy of the docs table: a
    cell that is not a JSON array of heading paths, or a null one, is a StoreError naming the
    store and the document (the service's 503), not a Python TypeError."""
    import shutil

    import pyarrow as pa

    from chunkforge.index.store_side import side_folder

    store = tmp_path / "store"
    shutil.copytree(job / "store.lancedb", store)
    path = side_folder(store, Index.open(store, encoder).version) / "parts.arrow"
    with pa.OSFile(str(path)) as f:
        reader = pa.ipc.open_file(f)
        schema, batches = reader.schema, [reader.get_batch(i) for i in range(reader.num_record_batches)]
    at = schema.get_field_index("headings")
    damaged = [b.set_column(at, schema.field(at), pa.array([headings] * b.num_rows, pa.string())) for b in batches]
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, schema) as writer:
        for batch in damaged:
            writer.write_batch(batch)
    index = Index.open(store, encoder)
    assert index._now.side is not None
    with pytest.raises(StoreError, match=rf"{re.escape(str(store))}.*docs table: .*document .*headings"):
        index.query("how do I install it?")


@pytest.mark.parametrize(
    ("head", "round_postings", "every_parent"),
    [(1, 1024, 32), (3, 1024, 32), (64, 1024, 32), (1, 8, 32), (1, 8, 0), (64, 0, 32), (8, 40, 32), (8, 40, 0)],
)
def test_side_scores_as_bm25(tmp_path, monkeypatch, head, round_postings, every_parent):
    """The side's postings give the in-memory BM25's scores, passages without a word (all
    stop words) included (splitting an empty string gives one empty word), and its search of
    the best parents, which reads each term's highest shares first, finds the same ones as
    scoring every parent, however few it reads first (``head``: then four times as many a round)
    and however soon it sums all the postings (a round over ``round_postings``), into a score
    for every parent or for those they name (``every_parent``)."""
    import lancedb
    import pyarrow as pa

    from chunkforge.index import store_side
    from chunkforge.index.bm25 import BM25
    from chunkforge.index.store_side import Side, _write_parents

    monkeypatch.setattr(store_side, "HEAD_POSTINGS", head)
    monkeypatch.setattr(store_side, "ROUND_POSTINGS", round_postings)
    monkeypatch.setattr(store_side, "SUM_EVERY_PARENT", every_parent)

    rng = random.Random(3)
    words = ["cats", "purr", "dogs", "bark", "ferns", "grow", "slowly", "install", "pip"]
    texts = ["", "the of and", *(" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(300))]
    texts += texts[2:80]  # copies: parents that tie exactly, at the pool's edge too
    ids = [f"d{i}" for i in range(len(texts))]
    parents = lancedb.connect(tmp_path / "db").create_table(
        "parents",
        pa.table({"doc_id": ids, "passage": [0] * len(texts), "terms": [" ".join(BM25.words(t)) for t in texts]}),
    )
    (tmp_path / "side").mkdir()
    rows, counts = _write_parents(tmp_path / "side", parents, {d: i for i, d in enumerate(ids)})
    assert rows == {(i, 0): i for i in range(len(texts))}
    assert counts == {"parents": len(texts), "words": sum(len(BM25.words(t)) for t in texts)}
    memory = BM25()
    memory.add(texts)
    side = Side.__new__(Side)  # its postings alone
    side.parents, side.doc_ids = len(texts), ids
    side.parent_doc, side.parent_passage = np.arange(len(texts)), np.zeros(len(texts), np.int64)
    side.vocab = {w: i for i, w in enumerate(json.loads((tmp_path / "side" / "vocab.json").read_text()))}
    for name in ("post_ptr", "post_parent", "post_rank", "post_impact"):
        setattr(side, name, np.load(tmp_path / "side" / f"{name}.npy"))
    floors: list[float] = []
    best_of_all = Side._best_of_all
    monkeypatch.setattr(
        Side,
        "_best_of_all",
        lambda self, spans, pool, floor: floors.append(floor) or best_of_all(self, spans, pool, floor),
    )
    for query in ["cats", "dogs bark", "ferns grow slowly", "install pip cats dogs", "the", "unknown words"]:
        full = memory.scores(query)
        among = np.array([5, 17, 1], np.int32)
        best = side.lexical(query, 16)
        matched = np.flatnonzero(full)
        assert best == matched[np.argsort(-full[matched], kind="stable")[:16]].tolist(), query
        scores = side.bm25(query, np.concatenate([among, best]))
        assert set(scores) == {(ids[p], 0) for p in [*among, *best] if full[p] > 0}, query
        assert all(scores[ids[p], 0] == pytest.approx(full[p], abs=1e-9) for p in [*among, *best] if full[p] > 0)
    if round_postings == 40:  # summed whole after a round that knew a floor: only scores from it up are ranked
        assert any(f > 0 for f in floors)


def test_side_graph_finds_each_leaf(job, encoder, tmp_path, monkeypatch):
    """Above ``EXACT_MAX`` leaves the side searches its HNSW graph (int8, read in place)."""
    from chunkforge.index import store_side

    monkeypatch.setattr(store_side, "EXACT_MAX", 16)
    write_store(job / "vectors", tmp_path / "graph")
    store, memory = Index.open(tmp_path / "graph", encoder), Index.from_dataset(job / "vectors", encoder)
    assert store._now.side is not None and not store._now.side.exact
    leaves = memory.leaves()
    found = sum(leaf.id in [h.id for h in store.search(leaf.text, k=10, hybrid=False)] for leaf in leaves[::53])
    assert found >= 0.9 * len(leaves[::53])
