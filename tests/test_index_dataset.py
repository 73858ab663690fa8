"""The bulk job builds the index (``units="tree"``, ``embed-docs --index``) and an
``Index`` loads it without cutting or embedding again; documents' metadata kept,
returned and filterable. Real encoder, hnswlib, bm25s, Parquet files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("pyarrow")

from chunkforge import bulk  # noqa: E402
from chunkforge._io import text_hash  # noqa: E402
from chunkforge.cli import main  # noqa: E402
from chunkforge.index import Index  # noqa: E402

from conftest import corpus  # noqa: E402

QUESTIONS = ["how do I install it?", "what does the license allow?", "configure the driver", "error handling"]


def records() -> list[dict]:
    """Twelve short real documents, each with a url and an acl, every other one a title."""
    docs = sorted(corpus(), key=lambda d: len(d["text"]))
    picked = [d for d in docs if 1500 < len(d["text"]) < 5000][:12]
    return [
        {
            **d,
            "url": f"https://example.org/{i}",
            "acl": "staff" if i % 3 == 0 else "public",
            **({"title": f"Handbook part {i}"} if i % 2 else {}),
        }
        for i, d in enumerate(picked)
    ]


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def spans(payload) -> list[tuple[str, int, int]]:
    return [(p.doc_id, p.start, p.end) for p in payload.passages]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, encoder) -> Path:
    root = tmp_path_factory.mktemp("tree-dataset")
    docs = write_jsonl(root / "docs.jsonl", records())
    bulk.run([docs], root / "out", encoder=encoder, units="tree", shard_docs=4)
    return root / "out"


@pytest.fixture(scope="module")
def built(encoder) -> Index:
    return Index.build(records(), encoder)


def test_index_from_the_job_answers_as_index_build(dataset, built, encoder):
    loaded = Index.from_dataset(dataset, encoder)
    assert loaded.doc_ids == built.doc_ids and loaded.leaf_count == built.leaf_count
    for doc_id in built.doc_ids:
        a, b = loaded.tree(doc_id), built.tree(doc_id)
        assert (a.nodes == b.nodes).all() and (a.leaves == b.leaves).all() and a.headings == b.headings
    for question in QUESTIONS:
        assert spans(loaded.query(question)) == spans(built.query(question))
        assert [h.id for h in loaded.search(question)] == [h.id for h in built.search(question)]


def test_the_job_writes_each_leaf_with_its_exact_span_and_tree(dataset):
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert manifest["units"] == "tree" and manifest["chunker"]["leaf_tokens"] == 48
    texts = {d["id"]: d["text"] for d in records()}
    titles = {d["id"]: d.get("title", "") for d in records()}
    rows = bulk.read_dataset(dataset).to_pylist()
    assert len(rows) == manifest["rows"] and all(set(e) >= {"file", "trees"} for e in manifest["shards"])
    index = Index.build(records())
    for row in rows[:: max(len(rows) // 50, 1)]:
        text = texts[row["doc_id"]][row["start"] : row["end"]]
        assert row["token_count"] == index.tokenizer.count(text)
        # the hash of what the vector embeds: the leaf after its title and heading path
        prefix = " > ".join(p for p in [titles[row["doc_id"]], *row["heading_path"]] if p)
        assert row["text_hash"] == text_hash(f"{prefix}\n\n{text}" if prefix else text)
    assert any(titles.values()) and any(row["heading_path"] for row in rows)


def test_metadata_is_kept_returned_and_filters_both_indexes(dataset, built, encoder, tmp_path):
    loaded = Index.from_dataset(dataset, encoder)
    saved = tmp_path / "saved"
    built.save(saved)
    reloaded = Index.load(saved, encoder)
    acl = {d["id"]: d["acl"] for d in records()}
    for index in (built, loaded, reloaded):
        payload = index.query("how do I install it?", where={"acl": "public"})
        assert payload.passages
        assert {acl[p.doc_id] for p in payload.passages} == {"public"}
        assert all(payload.metadata[p.doc_id]["url"].startswith("https://example.org/") for p in payload.passages)
        every = index.search("install", k=50, where={"acl": ["public", "staff"]})
        assert {acl[h.doc_id] for h in every} == {"public", "staff"}
        assert index.search("install", where={"acl": "nobody"}) == []
        first = records()[0]
        assert index.metadata(first["id"]) == {"source": first["source"], "url": first["url"], "acl": first["acl"]}
    with pytest.raises(TypeError, match="where"):
        built.search("install", where={"acl": {"nested": 1}})
    with pytest.raises(TypeError, match="where"):
        built.search("install", where=["acl"])


def test_index_without_metadata_sends_none():
    index = Index.build(["One cat sat. Two cats ran.", "Dogs bark."])
    assert index.query("cat").metadata == {}


def test_changed_document_rebuilds_its_shard_and_answers_as_a_clean_build(tmp_path, encoder):
    docs = records()
    path = write_jsonl(tmp_path / "docs.jsonl", docs)
    bulk.run([path], tmp_path / "out", encoder=encoder, units="tree", shard_docs=4)
    changed = [dict(d) for d in docs]
    changed[5]["text"] = changed[5]["text"].replace(".", ";", 3) + "\n\nA new closing paragraph about installing."
    changed[7]["url"] = "https://example.org/moved"
    write_jsonl(path, changed)
    summary = bulk.run([path], tmp_path / "out", encoder=encoder, units="tree", shard_docs=4)
    assert summary.shards_kept >= 1 and 1 <= summary.shards_built < summary.shards_built + summary.shards_kept
    assert summary.embedded < summary.rows / 2  # unchanged leaves come from the vector cache
    fresh = tmp_path / "fresh.jsonl"
    write_jsonl(fresh, changed)
    bulk.run([fresh], tmp_path / "clean", encoder=encoder, units="tree", shard_docs=4)
    updated, clean = Index.from_dataset(tmp_path / "out", encoder), Index.from_dataset(tmp_path / "clean", encoder)
    assert updated.metadata(changed[7]["id"])["url"] == "https://example.org/moved"
    for question in [*QUESTIONS, "installing"]:
        assert spans(updated.query(question)) == spans(clean.query(question))
    shard_files = sorted(p.name for p in (tmp_path / "out" / "shards").iterdir())
    listed = json.loads((tmp_path / "out" / "manifest.json").read_text())["shards"]
    assert shard_files == sorted(Path(e[k]).name for e in listed for k in ("file", "trees"))


def test_a_batch_missing_its_trees_is_rebuilt(tmp_path, encoder):
    path = write_jsonl(tmp_path / "docs.jsonl", records()[:6])
    bulk.run([path], tmp_path / "out", encoder=encoder, units="tree", shard_docs=2)
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["shards"][0]
    (tmp_path / "out" / entry["trees"]).unlink()
    summary = bulk.run([path], tmp_path / "out", encoder=encoder, units="tree", shard_docs=2)
    assert summary.shards_built == 1
    assert (tmp_path / "out" / entry["trees"]).is_file()
    assert Index.from_dataset(tmp_path / "out", encoder).leaf_count == summary.rows


def test_plain_chunks_are_refused_by_from_dataset(tmp_path, encoder):
    path = write_jsonl(tmp_path / "docs.jsonl", records()[:2])
    bulk.run([path], tmp_path / "out", encoder=encoder)
    with pytest.raises(ValueError, match="--index"):
        Index.from_dataset(tmp_path / "out", encoder)


def test_more_insert_threads_still_find_each_leaf(dataset, encoder):
    index = Index.from_dataset(dataset, encoder, threads=4)
    for hit in index.leaves()[::97]:
        assert hit.id in [h.id for h in index.search(hit.text, k=10, hybrid=False)]


def test_cli_embed_docs_index_then_query(tmp_path, capsys, model_cache):
    path = write_jsonl(tmp_path / "docs.jsonl", records()[:3])
    assert main(["embed-docs", str(path), "--out", str(tmp_path / "out"), "--index", "--leaf-tokens", "32"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["chunker"]["leaf_tokens"] == 32 and manifest["chunker"]["parent_tokens"] == [256]
    assert main(["embed-docs", str(path), "--out", str(tmp_path / "bad"), "--index", "--parent-tokens", "x"]) == 2
    assert "--parent-tokens" in capsys.readouterr().err
    assert main(["embed-docs", str(path), "--out", str(tmp_path / "bad"), "--index", "--leaf-tokens", "300"]) == 2
    assert "--parent-tokens must be integers, decreasing and larger than leaf_tokens" in capsys.readouterr().err


def test_cli_queries_the_job_output_with_a_metadata_filter(dataset, capsys, model_cache):
    assert main(["query", str(dataset), "how do I install it?", "--where", "acl=staff", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    staff = {d["id"] for d in records() if d["acl"] == "staff"}
    assert payload["passages"] and {p["doc_id"] for p in payload["passages"]} <= staff
    assert all(payload["metadata"][p["doc_id"]]["acl"] == "staff" for p in payload["passages"])
    assert main(["query", str(dataset), "install", "--where", "acl"]) == 2
    assert "--where" in capsys.readouterr().err


def test_spans_from_another_store_expand_onto_the_trees(built):
    doc_id = built.doc_ids[2]
    leaves = built.leaves(doc_id)
    a, b = leaves[3], leaves[6]
    spans = [
        (doc_id, a.start + 1, a.end - 1, 0.5),
        (doc_id, b.start, leaves[7].start + 1, 0.9),
        (doc_id, a.start, a.end, 0.7),
    ]
    hits = built.hits_for(spans)
    # the second span runs one character into the leaf after b; whitespace between leaves is in none
    assert [h.leaf for h in hits] == [b.leaf, leaves[7].leaf, a.leaf] and [h.score for h in hits] == [0.9, 0.9, 0.7]
    assert built.expand(spans, window=1) == built.expand(hits, window=1)
    passages = built.expand(spans, budget_tokens=1000).passages
    assert any(p.start <= a.start and a.end <= p.end for p in passages)
    with pytest.raises(KeyError, match="nowhere"):
        built.hits_for([("nowhere", 0, 1, 1.0)])
    with pytest.raises(ValueError, match=r"spans\[0\]"):
        built.hits_for([(doc_id, 5, 5, 1.0)])
    with pytest.raises(TypeError, match=r"spans\[0\]"):
        built.expand([(doc_id, 0, 5)])


def damaged_copy(dataset: Path, tmp_path: Path, edit) -> Path:
    """A copy of the dataset with ``edit(root, manifest)`` applied (the manifest rewritten)."""
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(dataset, root)
    manifest = json.loads((root / "manifest.json").read_text())
    edit(root, manifest)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def flip_a_byte(root: Path, manifest: dict) -> None:
    path = root / manifest["shards"][0]["trees"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (flip_a_byte, r"\.trees\.parquet does not match the SHA-256 its manifest records"),
        (lambda root, m: m["shards"].pop(), r"its shards hold \d+ docs, its total says \d+ \(an entry missing\?\)"),
        (
            lambda root, m: m["shards"][0].update(file="../x.parquet"),
            r"shard file '\.\./x\.parquet' is not a path inside",
        ),
        (lambda root, m: m["shards"][0].update(trees="/etc/passwd"), r"shard file '/etc/passwd' is not a path inside"),
        (lambda root, m: m.update(shards=None), r"'shards' must be a list of shards, not None"),
        (lambda root, m: m.pop("model"), r"'model' must be an object, not None"),
        (lambda root, m: m["model"].update(dim="384"), r"'dim' must be a count"),
        (lambda root, m: m["shards"][1].pop("trees_sha256"), r"'trees_sha256' must be a SHA-256, not None"),
    ],
    ids=["flipped-byte", "dropped-entry", "dotdot", "absolute", "null-shards", "no-model", "dim-str", "no-sha"],
)
def test_a_damaged_or_edited_dataset_is_refused_naming_the_file(dataset, encoder, tmp_path, edit, message):
    """``Index.from_dataset`` and ``write_store`` trusted the dataset: a flipped byte served
    corrupted text, a dropped entry loaded fewer documents, a path outside the dataset was read,
    a null or missing field was a TypeError/KeyError. Each is an InputError naming the file."""
    from chunkforge.errors import InputError

    root = damaged_copy(dataset, tmp_path, edit)
    with pytest.raises(InputError, match=message):
        Index.from_dataset(root, encoder)
    if pytest.importorskip("lancedb"):
        from chunkforge.index.store import write_store

        with pytest.raises(InputError, match=message):
            write_store(root, tmp_path / "store.lancedb")
