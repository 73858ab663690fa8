"""Filters as an access boundary: one meaning of ``where`` in memory and in the store, every
filter argument narrowing, and no search, expansion or query returning text of a document the
caller's filter excludes, whatever hits or spans it sends. Real encoder, LanceDB and files."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("hnswlib")
pytest.importorskip("lancedb")

from chunkforge import bulk  # noqa: E402
from chunkforge.errors import NotInIndexError  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index.filters import Filter, FilterError  # noqa: E402
from chunkforge.index.store import write_store  # noqa: E402

TOPICS = ["cats purr and sleep", "dogs bark at night", "ferns grow in shade", "bees make honey", "owls hunt mice"]
VALUES = {"n": [1, 1.0, True, "1", None, [1], 2, False]}


def documents() -> list[dict]:
    """Documents with access labels and metadata of every kind a filter meets."""
    docs = []
    for i in range(15):
        topic = TOPICS[i % len(TOPICS)]
        text = f"# {topic.title()}\n\n" + " ".join(f"Note {j}: {topic}, seen in place {i}." for j in range(12))
        doc = {"doc_id": f"d{i:02d}.md", "text": text, "acl": ["public", "staff", "board"][i % 3]}
        doc["source"] = ["pub", "staff"][i % 2]
        value = VALUES["n"][i % len(VALUES["n"])]
        if i % 5 != 4:  # some documents have no field n at all
            doc["n"] = value
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


@pytest.fixture(scope="module")
def both(tmp_path_factory, encoder):
    """The same documents in memory and in a store written from the bulk job's output."""
    root = tmp_path_factory.mktemp("access")
    docs = documents()
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    bulk.run([str(root / "docs.jsonl")], root / "vectors", encoder=encoder, units="tree", shard_docs=4)
    write_store(root / "vectors", root / "store.lancedb")
    return Index.build(docs, encoder), Index.open(root / "store.lancedb", encoder)


def texts_of(payload) -> set[str]:
    return {p.doc_id for p in payload.passages} | {h.doc_id for p in payload.passages for h in p.hits}


def admitted(where: dict, source=None) -> set[str]:
    f = Filter.of(where=where, source=source)
    return {d["doc_id"] for d in documents() if f.admits(d["doc_id"], {k: v for k, v in d.items() if k != "text"})}


def test_source_and_where_on_source_both_narrow(both):
    """``source=`` adds to a ``where`` on the field ``source``; it never replaces it."""
    for index in both:
        assert index.search("cats", k=20, where={"source": "pub"}, source="staff") == []
        assert index.query("cats", where={"source": "pub"}, source="staff").passages == []
        hits = index.search("cats", k=50, where={"source": ["pub", "staff"]}, source="staff")
        assert hits and {h.doc_id for h in hits} <= admitted({}, "staff")
    for index in both:
        assert {h.doc_id for h in index.search("owls", k=30, source="pub")} <= admitted({}, "pub")


@pytest.mark.parametrize("value", [1, 1.0, True, False, "1", None, 2, [1, 2], [None, "1"]], ids=lambda v: json.dumps(v))
def test_where_means_the_same_in_memory_and_in_the_store(both, value):
    """Numbers equal as numbers (1 is 1.0, not true), strings only themselves, null a null or
    missing field, a list any of its values: the same documents in memory and in the store."""
    memory, store = both
    expected = admitted({"n": value})
    found = [{h.doc_id for h in index.search("note", k=200, where={"n": value})} for index in both]
    assert found[0] == found[1] == expected
    assert expected  # every case matches some document
    if value is True:
        assert all(memory.metadata(d)["n"] is True for d in expected)
    if value is None:
        assert any("n" not in memory.metadata(d) for d in expected)


def test_bad_filters_name_the_argument(both):
    for index in both:
        with pytest.raises(FilterError, match=r"where\['n'\]: .*not a finite number"):
            index.search("x", where={"n": float("nan")})
        with pytest.raises(TypeError, match=r"source: must be a str or a list of str"):
            index.search("x", source=3)
        with pytest.raises(TypeError, match=r"where\['n'\]: must be a str, number"):
            index.search("x", where={"n": {"a": 1}})


def test_expand_does_not_open_documents_the_filter_excludes(both):
    """Hits and spans name leaves; those of a document the filter excludes (or of none) are
    refused alike, whatever expansion is asked for, in memory and in the store."""
    public = Filter.of(where={"acl": "public"})
    for index in both:
        staff_hits = index.search("bees honey", k=5, where={"acl": "staff"})
        assert staff_hits
        forged = replace(staff_hits[0], doc_id="d00.md")  # a public document, a span of another
        for hits in (staff_hits, [forged]):
            for options in ({}, {"window_tokens": 10_000}, {"parent": True}, {"spread": 0.5}):
                with pytest.raises(NotInIndexError, match=r"hits\[0\]: .* is not a leaf of"):
                    index.expand(hits, filter=public, **options)
        spans = [(h.doc_id, h.start, h.end, h.score) for h in staff_hits]
        with pytest.raises(KeyError, match=r"spans\[0\]: no document"):
            index.expand(spans, filter=public)
        allowed = index.search("bees honey", k=5, filter=public)
        assert allowed and texts_of(index.expand(allowed, filter=public, window_tokens=10_000)) <= admitted(
            {"acl": "public"}
        )


def test_filters_hold_for_random_filters_and_expansions(both):
    """For random filters and every expansion option, no search, expansion or query of either
    index returns text of a document the filter excludes (hits of other documents refused)."""
    rng = random.Random(7)
    docs = documents()
    for _ in range(25):
        where = {"acl": rng.sample(["public", "staff", "board"], rng.randint(1, 2))}
        if rng.random() < 0.4:
            where["n"] = rng.choice(VALUES["n"])
        source = rng.choice([None, "pub", "staff", ["pub", "staff"]])
        passes = Filter.of(where=where, source=source)
        allowed = {d["doc_id"] for d in docs if passes.admits(d["doc_id"], d)}
        options = rng.choice(
            [{}, {"window": 2}, {"window_tokens": 5000}, {"parent": True}, {"auto_merge": 0.3}, {"spread": 0.5}]
        )
        question = rng.choice(TOPICS)
        for index in both:
            hits = index.search(question, k=30, filter=passes)
            assert {h.doc_id for h in hits} <= allowed
            assert texts_of(index.query(question, filter=passes, budget_tokens=3000, **options)) <= allowed
            everything = index.search(question, k=30)
            for h in everything:
                if h.doc_id in allowed:
                    continue
                with pytest.raises(NotInIndexError):
                    index.expand([h], filter=passes, **options)
                break


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    a=st.dictionaries(
        st.sampled_from(["acl", "n", "source"]), st.lists(st.sampled_from(["public", "staff", 1, None])), max_size=2
    ),
    b=st.dictionaries(
        st.sampled_from(["acl", "n", "source"]), st.lists(st.sampled_from(["public", "staff", 1, None])), max_size=2
    ),
)
def test_narrowing_passes_what_both_pass(a, b):
    both = Filter.of(where=a).narrow(Filter.of(where=b))
    for d in documents():
        assert both.admits(d["doc_id"], d) == (
            Filter.of(where=a).admits(d["doc_id"], d) and Filter.of(where=b).admits(d["doc_id"], d)
        )


def test_store_tags_of_an_older_store_are_not_trusted(both, tmp_path):
    """A store written before this version of the tags cannot be filtered (its tags meant
    something else): a clear error, not an answer from the wrong documents."""
    _, store = both
    store._now.tags = 1
    try:
        with pytest.raises(ValueError, match="written by an earlier chunkforge"):
            store.search("cats", where={"acl": "public"})
        assert store.search("cats", k=3)
    finally:
        store._now.tags = 2


def test_paths_are_not_created_by_opening(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no chunkforge store"):
        Index.open(tmp_path / "typo.lancedb")
    assert not (tmp_path / "typo.lancedb").exists()
