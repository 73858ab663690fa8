"""chunkforge.Index under hostile conditions (issue 15): concurrent readers and
writers, checked manifests, deterministic builds. Real encoder, hnswlib, bm25s."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("bm25s")

from chunkforge.index import CorruptIndexError, Index
from chunkforge.index.storage import checksum as _checksum  # noqa: E402
from chunkforge.index.storage import manifest_checksum as _manifest_checksum  # noqa: E402

from conftest import corpus  # noqa: E402

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
