"""chunkforge.Index under hostile conditions (issue 15): concurrent readers and
writers, checked manifests, deterministic builds. Real encoder, hnswlib, bm25s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("bm25s")

import chunkforge  # noqa: E402
from chunkforge.index import CorruptIndexError, Index
from chunkforge.index.storage import checksum as _checksum  # noqa: E402
from chunkforge.index.storage import manifest_checksum as _manifest_checksum  # noqa: E402

from conftest import corpus  # noqa: E402

pa = pytest.importorskip("pyarrow")
ENV = {**os.environ, "PYTHONPATH": str(Path(chunkforge.__file__).resolve().parents[1])}

BASE = [
    {"id": "cats.md", "text": "# Cats\n\nCats purr when content. They sleep most of the day. Kittens play."},
    {"id": "dogs.md", "text": "# Dogs\n\nDogs bark at strangers. They need daily walks. Puppies chew shoes."},
    {"id": "plants.txt", "text": "Ferns like shade. Cacti need little water. Roses need sun and care."},
]
EXTRA = {"id": "birds.md", "text": "# Birds\n\nParrots can talk. Crows use tools. Owls hunt at night and sleep."}
QUESTIONS = ["how much do cats sleep?", "which animals hunt at night?", "what do plants need?", "dogs walks"]


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


def answer(index: Index, question: str) -> tuple:
    """Every leaf in rank order with its fused score, and the expanded payload."""
    hits = index.search(question, k=100)
    payload = index.expand(hits[:4], window=1, budget_tokens=60)
    return (
        tuple((h.doc_id, h.start, h.end, round(h.score, 9)) for h in hits),
        tuple((p.doc_id, p.start, p.end, p.token_count) for p in payload.passages),
    )


def while_writing(index: Index, work: Callable[[], None], stop: threading.Event) -> None:
    """Runs ``work`` in four threads while this one adds and deletes ``EXTRA`` 30 times,
    then sets ``stop`` (which ``work`` watches) and joins them."""
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(30):
            index.add([EXTRA])
            index.delete(EXTRA["id"])
    finally:
        stop.set()
        for t in threads:
            t.join(120)


def test_readers_see_one_version_while_writers_add_and_delete(encoder):
    """Queries from four threads while a fifth adds and deletes a document 30 times:
    every answer (hits and payload) is the answer of the index without it or with it."""
    index = Index.build(BASE, encoder)
    without = {q: answer(index, q) for q in QUESTIONS}
    index.add([EXTRA])
    with_extra = {q: answer(index, q) for q in QUESTIONS}
    index.delete(EXTRA["id"])
    assert {q: answer(index, q) for q in QUESTIONS} == without
    assert all(with_extra[q] != without[q] for q in QUESTIONS)
    errors: list[str] = []
    seen = {"without": 0, "with": 0}
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            for q in QUESTIONS:
                try:
                    got = answer(index, q)
                except Exception as exc:  # noqa: BLE001 - any crash is a failure
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return
                if got == without[q]:
                    seen["without"] += 1
                elif got == with_extra[q]:
                    seen["with"] += 1
                else:
                    errors.append(f"{q!r}: an answer of no version of the index: {got}")

    while_writing(index, reader, stop)
    assert not errors, errors[:3]
    assert seen["without"] and sum(seen.values()) > 30


def test_expansion_takes_no_index_lock_and_stays_whole_while_writers_change_the_store(encoder):
    """``Index.expand`` takes no lock of the index, only the expander's own: four threads
    expand the same hits while a fifth adds and deletes a document 30 times (the store
    changing under them); every payload is the one expanded alone."""
    index = Index.build(BASE, encoder)
    hits = [h for q in QUESTIONS for h in index.search(q, k=6)]
    expected = index.expand(hits, window=1, budget_tokens=80)
    errors: list[str] = []
    expanded = [0]
    stop = threading.Event()

    def expander() -> None:
        while not stop.is_set():
            try:
                got = index.expand(hits, window=1, budget_tokens=80)
            except Exception as exc:  # noqa: BLE001 - any crash is a failure
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            if got != expected:
                errors.append(f"a payload that differs: {got}")
            expanded[0] += 1

    while_writing(index, expander, stop)
    assert not errors, errors[:3]
    assert expanded[0] > 30


def test_two_builds_are_identical(encoder, tmp_path: Path):
    """Each HNSW graph filled by one thread in label order (the graphs in parallel):
    the same documents give the same graphs (byte for byte) and the same hits."""
    docs = [{"id": d["id"], "text": d["text"][:3000]} for d in corpus()[:20]]
    first, second = Index.build(docs, encoder), Index.build(docs, encoder)
    for q in ["how do I reset a git branch?", "memory overcommit", "install the package"]:
        assert answer(first, q) == answer(second, q)
    first.save(tmp_path / "a")
    second.save(tmp_path / "b")
    graphs = sorted(p.name for p in (tmp_path / "a" / "v-000001").glob("*.hnsw"))
    assert graphs == ["graph-0.hnsw", "graph-1.hnsw"]
    for name in graphs:
        assert (tmp_path / "a" / "v-000001" / name).read_bytes() == (tmp_path / "b" / "v-000001" / name).read_bytes()


@pytest.fixture
def saved(encoder, tmp_path: Path) -> Path:
    Index.build(BASE, encoder).save(tmp_path / "idx")
    return tmp_path / "idx" / "v-000001" / "manifest.json"


def test_manifest_bit_flip_is_corrupt(saved: Path, encoder):
    data = bytearray(saved.read_bytes())
    at = data.index(b'"next_label": ') + len(b'"next_label": ')
    while data[at + 1 : at + 2].isdigit():
        at += 1
    data[at] ^= 0x01  # one bit of the last digit: another valid number
    saved.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="checksum"):
        Index.load(saved.parent.parent, encoder)


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.pop("files"),
        lambda m: m.update(next_label="7"),
        lambda m: m.update(settings=[1, 2]),
        lambda m: m.update(settings={**m["settings"], "leaf_tokens": -3}),
        lambda m: m.update(files={"docs.parquet": "x"}),
        lambda m: m.pop("checksum"),
        lambda m: m.update(graphs=["elsewhere.hnsw"]),
        lambda m: m.update(graphs=[]),
    ],
)
def test_manifest_edits_are_corrupt(saved: Path, encoder, edit):
    """Valid JSON of the wrong shape, with its checksum recomputed: CorruptIndexError."""
    manifest = json.loads(saved.read_text())
    edit(manifest)
    if "checksum" in manifest:
        manifest["checksum"] = _manifest_checksum(manifest)
    saved.write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError):
        Index.load(saved.parent.parent, encoder)


def test_next_label_behind_the_labels_in_use(saved: Path, encoder):
    """A consistent-looking manifest whose next_label would reuse live labels: the
    load refuses it, so no add() can overwrite a leaf's vector in the graph."""
    manifest = json.loads(saved.read_text())
    manifest["next_label"] = 1
    manifest["checksum"] = _manifest_checksum(manifest)
    saved.write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="next_label"):
        Index.load(saved.parent.parent, encoder)


def test_format_1_index_with_one_graph_loads(saved: Path, encoder):
    """An index saved by format 1 (one graph, ``vectors.hnsw``) loads, answers as it was
    saved, and takes new documents into that one graph."""
    import hnswlib
    import numpy as np

    folder = saved.parent
    index = Index.load(folder.parent, encoder)
    labels = np.array([h.leaf for h in index.leaves()])
    one = hnswlib.Index(space="cosine", dim=index._dim)
    one.init_index(max_elements=1024, ef_construction=100, M=16)
    one.add_items(index._graph.vectors(labels), labels, num_threads=1)
    one.save_index(str(folder / "vectors.hnsw"))
    manifest = json.loads(saved.read_text())
    for name in manifest.pop("graphs"):
        (folder / name).unlink()
        del manifest["files"][name]
    manifest["format"] = "chunkforge-index/1"
    manifest["files"]["vectors.hnsw"] = _checksum(folder / "vectors.hnsw")
    manifest["checksum"] = _manifest_checksum(manifest)
    saved.write_text(json.dumps(manifest))
    old = Index.load(folder.parent, encoder)
    for q in QUESTIONS:  # the vectors were normalized again: scores agree to float32 rounding
        (got, got_passages), (want, want_passages) = answer(old, q), answer(index, q)
        assert [h[:3] for h in got] == [h[:3] for h in want] and got_passages == want_passages
        assert [h[3] for h in got] == pytest.approx([h[3] for h in want], abs=1e-6)
    old.add([EXTRA])
    assert old.search("parrots talk", k=1)[0].doc_id == "birds.md"


# issue 28: what a hostile-input sweep of the saved index found


def rewrite(folder: Path, name: str, table) -> None:
    """Replaces ``folder/name`` by ``table`` and makes the manifest agree (its checksums
    recomputed): a consistent-looking index whose content is hostile."""
    import pyarrow.parquet as pq

    pq.write_table(table, folder / name)
    manifest_file = folder / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["files"][name] = _checksum(folder / name)
    manifest["checksum"] = _manifest_checksum(manifest)
    manifest_file.write_text(json.dumps(manifest))


def load_in_a_process(root: Path) -> subprocess.CompletedProcess:
    """``Index.load(root)`` in a new process: prints the CorruptIndexError, if any."""
    code = (
        "import sys\nfrom chunkforge.index import CorruptIndexError, Index\n"
        f"try:\n    Index.load({str(root)!r})\nexcept CorruptIndexError as exc:\n    print('corrupt:', exc)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)


def test_a_huge_label_in_nodes_parquet_is_corrupt_not_an_abort(saved: Path):
    """A label of 2**40 in a checksum-valid nodes.parquet aborted the process (a native
    allocation of 64 bytes a label); labels are checked before native code sees them."""
    import pyarrow.parquet as pq

    folder = saved.parent
    nodes = pq.read_table(folder / "nodes.parquet")
    labels = nodes.column("label").to_numpy().copy()
    labels[labels.argmax()] = 2**40
    rewrite(folder, "nodes.parquet", nodes.set_column(6, "label", pa.array(labels)))
    result = load_in_a_process(folder.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("corrupt:") and "label" in result.stdout, result.stdout
    # next_label raised to match (checksum recomputed): the graphs cannot hold that many
    manifest = json.loads(saved.read_text())
    manifest["next_label"] = 2**40 + 1
    manifest["checksum"] = _manifest_checksum(manifest)
    saved.write_text(json.dumps(manifest))
    result = load_in_a_process(folder.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("corrupt:") and "next_label" in result.stdout, result.stdout


@pytest.mark.parametrize("headings", ["not json", "[1, 2]", '{"a": 1}', "[[1]]", "[null]"])
def test_headings_that_are_not_lists_of_strings_are_corrupt(saved: Path, encoder, headings: str):
    import pyarrow.parquet as pq

    folder = saved.parent
    docs = pq.read_table(folder / "docs.parquet")
    column = pa.array([headings] * docs.num_rows, pa.string())
    rewrite(folder, "docs.parquet", docs.set_column(docs.schema.get_field_index("headings"), "headings", column))
    with pytest.raises(CorruptIndexError, match="headings"):
        Index.load(folder.parent, encoder)


@pytest.mark.parametrize("pointer", ["../elsewhere", "ABSOLUTE", "v-000001/../../elsewhere", ""])
def test_current_must_name_a_version_folder_inside_the_index(saved: Path, encoder, pointer: str):
    """CURRENT naming ../elsewhere or an absolute path was followed out of the index folder."""
    import shutil

    root = saved.parent.parent
    elsewhere = root.parent / "elsewhere"
    shutil.copytree(saved.parent, elsewhere)
    (root / "CURRENT").write_text((str(elsewhere) if pointer == "ABSOLUTE" else pointer) + "\n")
    with pytest.raises(CorruptIndexError, match="CURRENT"):
        Index.load(root, encoder)


def test_loads_while_another_thread_saves_and_two_savers(encoder, tmp_path: Path):
    """Loading while another thread saves used to raise CorruptIndexError (the old version
    removed under the reader); two savers raised FileNotFoundError / FileExistsError."""
    index = Index.build(BASE, encoder)
    root = tmp_path / "idx"
    index.save(root)
    expected = answer(index, QUESTIONS[0])
    errors: list[BaseException] = []
    stop = threading.Event()

    def save() -> None:
        try:
            while not stop.is_set():
                index.save(root)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    savers = [threading.Thread(target=save) for _ in range(2)]
    for t in savers:
        t.start()
    try:
        for _ in range(40):
            assert answer(Index.load(root, encoder), QUESTIONS[0]) == expected
    finally:
        stop.set()
        for t in savers:
            t.join(120)
    assert not errors, errors[:3]
    assert [p.name for p in root.iterdir() if p.name.startswith("v-")] == [(root / "CURRENT").read_text().strip()]


def test_lone_surrogates_are_refused_by_add_and_a_failed_save_leaves_no_version(encoder, tmp_path: Path):
    """A lone-surrogate id was accepted by add(), then save() failed and left a stray
    version folder. add() refuses it now; a save that fails (a file over the size limit,
    as on a full disk) removes its half-written version and keeps the old one."""
    index = Index.build(BASE, encoder)
    for doc in ({"id": "\ud800", "text": "x"}, {"id": "a", "source": "\udfff", "text": "x"}, {"text": "a \ud800 b"}):
        with pytest.raises(ValueError, match="lone surrogate"):
            index.add([doc])
    assert len(index) == 3
    root = tmp_path / "idx"
    index.save(root)
    code = (
        "import resource, signal\nfrom chunkforge.index import Index\n"
        f"index = Index.load({str(root)!r})\n"
        f"index.add([{{'id': 'big', 'text': 'Many words in a sentence. ' * 4000}}])\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\n"
        f"index.save({str(root)!r})\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    assert result.returncode != 0 and "File too large" in result.stderr, result.stderr[-2000:]
    assert sorted(p.name for p in root.iterdir()) == ["CURRENT", "v-000001"]
    assert Index.load(root, encoder).doc_ids == [d["id"] for d in BASE]


def test_hits_from_another_index_or_edited_are_refused(encoder):
    """A hit names its leaf by document and span; its label is the index's own business. A hit
    of another index holding the same document expands as it would there; an edited one (a
    span that is no leaf) or a deleted document's raises NotInIndexError naming it, whatever
    its label points at."""
    import dataclasses

    from chunkforge.errors import NotInIndexError

    a = Index.build(BASE, encoder)
    b = Index.build([BASE[2], BASE[0], BASE[1]], encoder)  # the same documents, other labels
    hits = a.search("how much do cats sleep?", k=5)
    sent = [(p.doc_id, p.start, p.end) for p in a.expand(hits).passages]
    assert hits[0].doc_id == "cats.md" and sent
    assert [(p.doc_id, p.start, p.end) for p in b.expand(hits).passages] == sent
    moved = dataclasses.replace(hits[1], end=hits[1].end - 1)
    with pytest.raises(NotInIndexError, match=r"hits\[1\]: .* is not a leaf of this index"):
        a.expand([hits[0], moved])
    a.delete("cats.md")
    with pytest.raises(NotInIndexError, match=r"hits\[0\]: 'cats.md' .* is not a leaf of this index"):
        a.expand(hits[:1])
    # the same spans, found again by document and offsets, expand in the other index as they did here
    again = b.hits_for([(h.doc_id, h.start, h.end, h.score) for h in hits])
    assert [(p.doc_id, p.start, p.end) for p in b.expand(again).passages] == sent


def test_an_index_loaded_from_a_folder_saves_every_time(encoder, tmp_path: Path):
    """A loaded index kept its tokenizer as a file of the version it came from; the second
    save after a load removed that version, so every later save failed and additions lived
    in memory only. The tokenizer is kept as text now: every save works."""
    root = tmp_path / "two"
    Index.build(BASE[:1], encoder).save(root)
    index = Index.load(root, encoder)
    for i, doc in enumerate(BASE[1:] + [{"id": "more.md", "text": "Owls hunt at night."}]):
        index.add([doc])
        index.save(root)
        assert sorted(p.name for p in root.iterdir()) == ["CURRENT", f"v-{i + 2:06d}"]
    assert Index.load(root, encoder).doc_ids == [d["id"] for d in BASE] + ["more.md"]


def test_metadata_with_a_lone_surrogate_is_refused_at_add(encoder, tmp_path: Path):
    """A lone surrogate in a metadata value made every later save fail with a raw
    UnicodeEncodeError: add() refuses it, naming the document and the field."""
    index = Index.build(BASE, encoder)
    with pytest.raises(ValueError, match=r"document 'x.md': metadata field 'note' holds a lone surrogate"):
        index.add([{"id": "x.md", "text": "Fine text.", "note": "bad \udc80 value"}])
    assert "x.md" not in index
    index.save(tmp_path / "idx")


def test_doc_id_names_a_record_as_id_does(encoder):
    """The bulk job's and eval's records name a document ``doc_id``: ``Index.add`` takes it as
    it takes ``id`` (a record with both that disagree is refused)."""
    index = Index.build(
        [{"doc_id": "guide.md", "text": "# Guide\n\nRun it."}, {"id": "b.md", "text": "Other."}], encoder
    )
    assert index.doc_ids == ["guide.md", "b.md"] and "doc_id" not in index.metadata("guide.md")
    with pytest.raises(ValueError, match=r"docs\[0\] has both 'id' \('a'\) and 'doc_id' \('b'\)"):
        index.add([{"id": "a", "doc_id": "b", "text": "x"}])
    index.add([{"id": "c", "doc_id": "c", "text": "Same id twice."}])
    assert "c" in index
