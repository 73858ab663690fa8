"""chunkforge.Index: search, native expansion, persistence, and the index CLI,
with the real ONNX encoder, hnswlib and bm25s."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import FrozenInstanceError, dataclass, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("hnswlib")
pytest.importorskip("bm25s")

from chunkforge import _native  # noqa: E402
from chunkforge.chunkers import node_id  # noqa: E402
from chunkforge.cli import main  # noqa: E402
from chunkforge.index import CorruptIndexError, Hit, Index, Passage, Payload  # noqa: E402

from conftest import DATA, corpus  # noqa: E402

TREE_DOC = "# Alpha\n\nOne cat sat. Two cats ran. Three cats slept.\n\n# Beta\n\nFour dogs barked. Five dogs ate.\n"


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


def small_docs() -> list[dict]:
    """Three short real documents of the corpus and a Markdown README."""
    docs = sorted(corpus(), key=lambda d: len(d["text"]))
    picked = [d for d in docs if 1500 < len(d["text"]) < 4000][:3]
    readme = (DATA / "markdown" / "unicode-ident-README.md").read_text(encoding="utf-8")
    return [*picked, {"id": "unicode-ident.md", "text": readme, "source": "crates"}]


@pytest.fixture(scope="module")
def index(encoder) -> Index:
    return Index.build(small_docs(), encoder, leaf_tokens=48, parent_tokens=(200,))


def all_hits(index: Index) -> list[Hit]:
    return index.leaves()


def test_search_returns_real_spans_and_filters(index):
    hits = index.search("unicode identifier tables", k=8)
    assert len(hits) == 8
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for h in hits:
        assert index.document(h.doc_id)[h.start : h.end] == h.text
    assert any(h.doc_id == "unicode-ident.md" for h in hits[:3])
    only = index.search("unicode identifier tables", k=5, doc_id=small_docs()[0]["id"])
    assert {h.doc_id for h in only} == {small_docs()[0]["id"]}
    assert {h.doc_id for h in index.search("tables", k=5, source="crates")} == {"unicode-ident.md"}
    under = index.search("benchmark", k=4, heading_prefix=("Unicode ident", "Comparison of performance"))
    assert under and all(h.heading_path[:2] == ("Unicode ident", "Comparison of performance") for h in under)
    dense = index.search("unicode identifier tables", k=3, hybrid=False)
    assert all(0 < h.score <= 1.0001 for h in dense)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_payload_properties(index, data):
    """No character twice, within the budget, exact counts, spans in their
    documents, every hit covered or (only under a budget) dropped."""
    pool = all_hits(index)
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=50))
    hits = [replace(pool[i], score=data.draw(st.floats(0, 1))) for i in picks]
    options = dict(
        window=data.draw(st.none() | st.integers(0, 3)),
        parent=data.draw(st.booleans()),
        auto_merge=data.draw(st.none() | st.sampled_from([0.0, 0.3, 0.5, 0.75])),
        budget_tokens=data.draw(st.none() | st.integers(0, 1500)),
        order=data.draw(st.sampled_from(["score", "document"])),
        pack=data.draw(st.sampled_from(["skip", "stop"])),
        trim=data.draw(st.booleans()),
    )
    payload = index.expand(hits, **options)
    seen: dict[str, list[tuple[int, int]]] = {}
    for p in payload.passages:
        text = index.document(p.doc_id)
        assert 0 <= p.start < p.end <= len(text) and p.text == text[p.start : p.end]
        assert p.token_count == index.tokenizer.count(p.text)
        assert p.hits and p.score >= max(h.score for h in p.hits) - 1e-12 or options["auto_merge"] is not None
        for h in p.hits:
            assert p.doc_id == h.doc_id and p.start <= h.start and h.end <= p.end
        seen.setdefault(p.doc_id, []).append((p.start, p.end))
    for spans in seen.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "a character appears twice"
    if options["budget_tokens"] is not None:
        assert payload.token_count <= options["budget_tokens"]
    else:
        assert payload.dropped == []
    key = lambda h: (h.doc_id, h.start, h.end, h.score, h.leaf)  # noqa: E731
    covered = [key(h) for p in payload.passages for h in p.hits] + [key(h) for h in payload.dropped]
    assert sorted(covered) == sorted(key(h) for h in hits)
    if options["order"] == "score":
        scores = [p.score for p in payload.passages]
        assert scores == sorted(scores, reverse=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_budget_covers_the_best_hit(index, data):
    """Packing takes the hits' expansions in score order before merging them:
    the best-scored hit is covered whenever its own expansion (window, parent or
    auto-merged parent) fits the budget; a budget nothing exceeds packs exactly
    what no budget gives."""
    pool = all_hits(index)
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=50, unique=True))
    scores = data.draw(st.lists(st.floats(0, 1), min_size=len(picks), max_size=len(picks), unique=True))
    hits = [replace(pool[i], score=s) for i, s in zip(picks, scores)]
    options = dict(
        window=data.draw(st.none() | st.integers(0, 3)),
        parent=data.draw(st.booleans()),
        auto_merge=data.draw(st.none() | st.sampled_from([0.0, 0.3, 0.5, 0.75])),
        order=data.draw(st.sampled_from(["score", "document"])),
        pack=data.draw(st.sampled_from(["skip", "stop"])),
        trim=data.draw(st.booleans()),
    )
    best = max(hits, key=lambda h: h.score)
    # the best hit's own expansion: its auto-merged parent, else its leaf widened alone
    own = index.expand([best], window=options["window"], parent=options["parent"]).passages[0]
    span = (own.start, own.end)
    if options["auto_merge"] is not None:
        units = auto_merge_nodes(index, hits, options["auto_merge"])
        if (best.doc_id, leaf_node(index, best)) not in units:
            (node,) = [
                n
                for (d, n), tree in units.items()
                if d == best.doc_id and tree.nodes[n, 0] <= best.start and best.end <= tree.nodes[n, 1]
            ]
            nodes = index.tree(best.doc_id).nodes
            span = (int(nodes[node, 0]), int(nodes[node, 1]))
    size = index.tokenizer.count(index.document(best.doc_id)[span[0] : span[1]])
    budget = data.draw(st.integers(0, 3 * size + 50))
    payload = index.expand(hits, budget_tokens=budget, **options)
    assert payload.token_count <= budget
    covering = [p for p in payload.passages if any((h.doc_id, h.start) == (best.doc_id, best.start) for h in p.hits)]
    if size <= budget:
        assert covering and covering[0].start <= span[0] and span[1] <= covering[0].end
    assert index.expand(hits, budget_tokens=10**9, **options) == index.expand(hits, **options)


def test_build_tokenizes_each_document_once(encoder):
    """Sections, parents, leaves and the leaves' embeddings all come from one
    tokenization of each document (the tokenizer counts what it tokenizes); the search
    prefix of each section is tokenized once more, alone."""
    prose = [
        {"id": "notes.txt", "text": " ".join(f"word{i} and more, then" for i in range(400))},
        {
            "id": "a.md",
            "text": "# Cats\n\nCats purr. They sleep a lot.\n\n## Food\n\n| kind | amount |\n|---|---|\n| fish | 2 |",
        },
        {"id": "empty.md", "text": "   "},
    ]
    index = Index(encoder, leaf_tokens=24, parent_tokens=(120, 60))
    before = index.tokenizer.tokenized
    index.add(prose)
    texts, nbytes = (a - b for a, b in zip(index.tokenizer.tokenized, before))
    prefixes = ["Cats\n\n", "Cats > Food\n\n"]  # a.md's sections; the others have no headings, no title
    assert (texts, nbytes) == (
        len(prose) + len(prefixes),
        sum(len(d["text"].encode()) for d in [*prose, *({"text": p} for p in prefixes)]),
    )
    # a run without spaces longer than a leaf (URLs, paths) is cut at the token boundaries of
    # the run encoded alone, and a leaf cut inside a word re-encodes the cut word: pieces only
    # (counted without the prefixes)
    docs = small_docs()
    plain = Index(encoder, leaf_tokens=24, parent_tokens=(120, 60), search_prefix=False)
    before = plain.tokenizer.tokenized
    plain.add(docs)
    texts, nbytes = (a - b for a, b in zip(plain.tokenizer.tokenized, before))
    size = sum(len(d["text"].encode()) for d in docs)
    assert texts >= len(docs) and size <= nbytes < 1.1 * size
    index.add(docs)
    # the leaves' vectors are those of their texts embedded alone, after their heading paths
    leaves = index.leaves("notes.txt")
    assert max(index.tokenizer.count(h.text) for h in leaves) <= 24
    some = leaves[:3] + index.leaves(docs[1]["id"])
    assert any(h.heading_path for h in some) and not any("title" in d for d in docs)
    expected = encoder.embed([" > ".join(h.heading_path) + "\n\n" + h.text if h.heading_path else h.text for h in some])
    got = index._graph.vectors(np.array([h.leaf for h in some]))
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-5)


def test_leaves_and_payload_objects(index):
    """Hand-built hits from the public constructor; passages share the document text."""
    doc_id = index.doc_ids[0]
    leaves = index.leaves(doc_id)
    text = index.document(doc_id)
    assert leaves and all(h.doc_id == doc_id and text[h.start : h.end] == h.text for h in leaves)
    assert [h.start for h in leaves] == sorted(h.start for h in leaves)
    assert len(index.leaves()) == index.leaf_count
    payload = index.expand(leaves[:3], window=1)
    p = payload.passages[0]
    assert p.document is text and p.text == text[p.start : p.end]
    assert set(p.hits) <= set(leaves[:3]) and payload.dropped == []
    assert payload == index.expand(tuple(leaves[:3]), window=1)
    assert f"start={p.start}" in repr(p) and "document" not in repr(p)
    with pytest.raises(TypeError, match=r"hits\[1\] must be a Hit .*not tuple"):
        index.expand([leaves[0], (1, 0.5)])
    # a hit names its leaf by document and span: its label and text are read from the index
    assert index.expand([replace(leaves[0], leaf=10**6, text="forged")]) == index.expand(leaves[:1])
    with pytest.raises(ValueError, match=r"hits\[0\]: .* is not a leaf of this index"):
        index.expand([replace(leaves[0], end=leaves[0].end + 1)])

    # a label and a score alone name no leaf; a subclass of Hit expands alike
    @dataclass(frozen=True)
    class Labelled:
        leaf: int
        score: float

    with pytest.raises(TypeError, match=r"hits\[0\] must be a Hit"):
        index.expand([Labelled(leaves[0].leaf, 1.0)])

    class Scored(Hit):
        __slots__ = ()

    expected = index.expand(leaves[:3], budget_tokens=100)
    others = [Scored(*(getattr(h, f) for f in Hit.__slots__)) for h in leaves[:3]]
    got = index.expand(others, budget_tokens=100)
    assert [(p.start, p.end, p.token_count) for p in got.passages] == [
        (p.start, p.end, p.token_count) for p in expected.passages
    ]
    with pytest.raises(KeyError, match="no document"):
        index.leaves("missing.md")


def test_query_uses_the_recommended_policy(index):
    q = "unicode identifier tables"
    assert index.query(q) == index.expand(index.search(q, k=100), budget_tokens=1000, spread=0.5)
    assert index.query(q, spread=None) == index.expand(index.search(q, k=100), budget_tokens=1000)
    assert index.query(q, spread=None) != index.query(q)  # spread is an option that changes the payload
    assert index.query(q, k=5, auto_merge=0.5) == index.expand(index.search(q, k=5), auto_merge=0.5, budget_tokens=1000)


def test_spread_sends_a_strong_hits_neighbours_before_weak_hits(index):
    doc = "unicode-ident.md"
    tree = index.tree(doc)
    spans = tree.nodes[tree.leaves, :2]
    sections = tree.nodes[tree.leaves, 3]
    # a leaf with neighbours on both sides in its section, and weak hits in another document
    at = next(i for i in range(len(spans) // 2, len(spans) - 1) if sections[i - 1] == sections[i] == sections[i + 1])
    other = index.leaves(next(d for d in index.doc_ids if d != doc))
    strong = index.hits_for([(doc, int(spans[at][0]), int(spans[at][1]), 1.0)])
    weak = [dataclasses.replace(h, score=0.9 - 0.01 * n) for n, h in enumerate(other[:5])]
    hits = [*strong, *weak, dataclasses.replace(other[5], score=0.0)]
    budget = index.tokenizer.count(index.document(doc)[spans[at - 1][0] : spans[at + 1][1]])  # the three leaves
    bare = index.expand(hits, budget_tokens=budget)
    spread = index.expand(hits, budget_tokens=budget, spread=0.95)  # neighbours get 0.95 > 0.9, the best weak hit
    assert [(p.start, p.end) for p in bare.passages if p.doc_id == doc] == [(strong[0].start, strong[0].end)]
    first = spread.passages[0]
    assert first.doc_id == doc and first.start <= strong[0].start and first.end >= strong[0].end
    assert (first.start, first.end) != (strong[0].start, strong[0].end)  # a neighbour came with it
    # decay 0 lends nothing: the hits in their order, as without spread
    assert [(p.doc_id, p.start, p.end) for p in index.expand(hits, budget_tokens=budget, spread=0.0).passages] == [
        (p.doc_id, p.start, p.end) for p in bare.passages
    ]
    for bad in (1.0, -0.1, True, "0.5"):
        with pytest.raises(ValueError, match="spread"):
            index.expand(hits, spread=bad)


def reference_spread(index: Index, hits: list[Hit], decay: float, reach: int = 4) -> list[tuple[int, float]]:
    """Spread as Index.expand documents it, read off the index's public trees."""
    top, low = max(h.score for h in hits), min(h.score for h in hits)
    missing: dict[int, float] = {}
    order: dict[int, int] = {}
    for rank, h in enumerate(hits):
        r = (h.score - low) / (top - low) if top > low else 1.0
        missing[h.leaf] = missing.get(h.leaf, 1.0) * (1.0 - r)
        order.setdefault(h.leaf, rank)
        if r <= 0 or decay <= 0:
            continue
        tree, labels = index.tree(h.doc_id), [x.leaf for x in index.leaves(h.doc_id)]
        starts, sections = tree.nodes[tree.leaves, 0].tolist(), tree.nodes[tree.leaves, 3].tolist()
        at = starts.index(h.start)
        for d in range(1, reach + 1):
            for i in (at - d, at + d):
                if 0 <= i < len(labels) and sections[i] == sections[at]:
                    missing[labels[i]] = missing.get(labels[i], 1.0) * (1.0 - r * decay**d)
                    order.setdefault(labels[i], len(hits) + rank)
    return [(label, 1.0 - missing[label]) for label in sorted(missing, key=lambda x: (missing[x], order[x]))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_spread_matches_the_reference(index, data):
    """The native spread reaches the leaves the documented rule does, in its order, and the
    payload of ``spread`` is that of the leaves it reaches (scored by their utilities)."""
    pool = all_hits(index)
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=30))
    scores = data.draw(st.lists(st.floats(-1, 1), min_size=len(picks), max_size=len(picks)))
    hits = [replace(pool[i], score=s) for i, s in zip(picks, scores)]
    decay = data.draw(st.sampled_from([0.0, 0.3, 0.5, 0.9]))
    expected = reference_spread(index, hits, decay)
    labels, utilities = index._expander.spread([h.leaf for h in hits], [h.score for h in hits], decay)
    assert labels == [label for label, _ in expected]
    assert utilities == pytest.approx([u for _, u in expected], abs=1e-12)
    made = index._expander.hits(labels, utilities, len(index.parent_tokens) + 1)
    assert index.expand(hits, spread=decay, budget_tokens=400) == index.expand(made, budget_tokens=400)


def reference_auto_merge(index: Index, hits: list[Hit], ratio: float) -> set[tuple[str, int, int]]:
    """LlamaIndex's AutoMergingRetriever merge loop over the index's tree, in Python."""
    units = auto_merge_nodes(index, hits, ratio)
    return {(doc_id, int(doc.nodes[n, 0]), int(doc.nodes[n, 1])) for (doc_id, n), doc in units.items()}


def leaf_node(index: Index, hit: Hit) -> int:
    """The node of a hit's leaf in its document's tree."""
    tree = index.tree(hit.doc_id)
    spans = tree.nodes[tree.leaves, :2]
    (at,) = np.flatnonzero((spans[:, 0] == hit.start) & (spans[:, 1] == hit.end))
    return int(tree.leaves[at])


def auto_merge_nodes(index: Index, hits: list[Hit], ratio: float) -> dict:
    """The merged units of :func:`reference_auto_merge`: ``{(doc_id, node): tree}``."""
    units = {}
    trees = {doc_id: index.tree(doc_id) for doc_id in {h.doc_id for h in hits}}
    for h in hits:
        units[(h.doc_id, leaf_node(index, h))] = trees[h.doc_id]
    while True:
        groups: dict[tuple[str, int], list] = {}
        for (doc_id, node), doc in units.items():
            parent = int(doc.nodes[node, 2])
            if parent >= 0:
                groups.setdefault((doc_id, parent), []).append((doc_id, node))
        changed = False
        for (doc_id, parent), members in groups.items():
            doc = units[members[0]]
            children = int((doc.nodes[:, 2] == parent).sum())
            if len(members) / children > ratio:
                for m in members:
                    del units[m]
                units[(doc_id, parent)] = doc
                changed = True
        if not changed:
            break
    return units


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_auto_merge_matches_the_reference(index, data):
    pool = all_hits(index)
    hits = [pool[i] for i in data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=40))]
    ratio = data.draw(st.sampled_from([0.0, 0.25, 0.5, 0.8]))
    units = reference_auto_merge(index, hits, ratio)
    payload = index.expand(hits, auto_merge=ratio)
    # passages are the merged units, joined where they overlap or touch
    for p in payload.passages:
        inside = [u for u in units if u[0] == p.doc_id and p.start <= u[1] and u[2] <= p.end]
        assert inside and min(u[1] for u in inside) == p.start and max(u[2] for u in inside) == p.end
    assert sum(
        1 for u in units for p in payload.passages if u[0] == p.doc_id and p.start <= u[1] and u[2] <= p.end
    ) == len(units)


def test_auto_merge_on_a_hand_built_tree(encoder):
    index = Index.build([{"id": "t.md", "text": TREE_DOC}], encoder, parent_tokens=())
    leaves = {h.text: h for h in all_hits(index)}
    assert list(leaves) == [
        "# Alpha",
        "One cat sat.",
        "Two cats ran.",
        "Three cats slept.",
        "# Beta",
        "Four dogs barked.",
        "Five dogs ate.",
    ]

    def hit(text: str, score: float) -> Hit:
        return replace(leaves[text], score=score)

    alpha = TREE_DOC[: TREE_DOC.index("\n\n# Beta")]
    # 2 of 4 children: 0.5 is not above 0.5
    two = index.expand([hit("One cat sat.", 0.9), hit("Three cats slept.", 0.7)], auto_merge=0.5)
    assert [p.text for p in two.passages] == ["One cat sat.", "Three cats slept."]
    # 3 of 4: the section, scored with the mean of its hit children
    three = index.expand(
        [hit("One cat sat.", 0.9), hit("Two cats ran.", 0.6), hit("Three cats slept.", 0.3)], auto_merge=0.5
    )
    assert [(p.text, round(p.score, 6), p.heading_path) for p in three.passages] == [(alpha, 0.6, ("Alpha",))]
    # windows stop at the section boundary; touching windows become one passage
    window = index.expand([hit("Three cats slept.", 0.5)], window=3)
    assert window.passages[0].text == alpha
    both = index.expand([hit("Two cats ran.", 0.9), hit("Four dogs barked.", 0.5)], window=0, order="document")
    assert [p.text for p in both.passages] == ["Two cats ran.", "Four dogs barked."]
    assert (
        index.expand([hit("Five dogs ate.", 0.5)], parent=True).passages[0].text
        == TREE_DOC[TREE_DOC.index("# Beta") :].strip()
    )
    # budget: the best passage does not fit, the smaller one does (skip) or packing stops;
    # trim grows whole sentences from the best hit, the next one first
    hits = [hit("Two cats ran.", 0.9), hit("Five dogs ate.", 0.5)]
    dogs = "Four dogs barked. Five dogs ate."
    budget = index.tokenizer.count(dogs)
    wide = index.expand(hits, window=1, budget_tokens=budget)
    assert [p.text for p in wide.passages] == [dogs] and wide.dropped == [hits[0]]
    assert index.expand(hits, window=1, budget_tokens=budget, pack="stop").passages == []
    trimmed = index.expand(hits[:1], window=1, budget_tokens=budget, trim=True)
    assert [p.text for p in trimmed.passages] == ["Two cats ran. Three cats slept."] and trimmed.dropped == []


def test_persistence_round_trip_add_delete(index, encoder, tmp_path):
    path = tmp_path / "idx"
    index.save(path)
    loaded = Index.load(path, encoder)
    assert loaded.doc_ids == index.doc_ids and loaded.leaf_count == index.leaf_count
    question = "identifier characters"
    hits = index.search(question, k=10)
    again = loaded.search(question, k=10)
    assert [(h.doc_id, h.start, h.end, h.id) for h in again] == [(h.doc_id, h.start, h.end, h.id) for h in hits]
    assert loaded.expand(again, window=2, budget_tokens=600) == index.expand(hits, window=2, budget_tokens=600)
    # delete and add on the loaded copy, then save over the old version
    gone = "unicode-ident.md"
    loaded.delete(gone)
    assert gone not in loaded and all(h.doc_id != gone for h in loaded.search(question, k=20))
    with pytest.raises(ValueError, match="is not a leaf of this index"):
        loaded.expand([h for h in hits if h.doc_id == gone][:1])
    with pytest.raises(KeyError, match="no document"):
        loaded.delete(gone)
    loaded.add([{"id": "t.md", "text": TREE_DOC}])
    with pytest.raises(ValueError, match="already in the index"):
        loaded.add([{"id": "t.md", "text": "again"}])
    assert loaded.search("dogs barked", k=1)[0].doc_id == "t.md"
    loaded.save(path)
    reloaded = Index.load(path, encoder)
    assert sorted(reloaded.doc_ids) == sorted([*index.doc_ids[:-1], "t.md"])
    assert reloaded.search("dogs barked", k=1)[0].text == "Four dogs barked."
    assert sorted(p.name for p in path.iterdir()) == ["CURRENT", (path / "CURRENT").read_text().strip()]


def test_a_deleted_documents_slot_is_reused_in_insertion_order(encoder, tmp_path):
    """The native store gives a deleted document's slot to the next one added (its size stays
    that of the documents held); ids, order and answers are those of the documents as added."""
    texts = ["Cats purr when they are happy.", "Dogs bark at the postman.", "Owls hunt at night."]
    index = Index.build(texts, encoder)
    index.delete("doc-0")
    index.add(["Bees make honey in the hive.", "Frogs sing after the rain."])
    assert index.doc_ids == ["doc-1", "doc-2", "doc-3", "doc-4"]
    assert sorted(index._slot_of.values()) == [0, 1, 2, 3]  # doc-3 took doc-0's slot
    for question, doc_id, text in [
        ("honey bees", "doc-3", "Bees make honey in the hive."),
        ("postman", "doc-1", texts[1]),
    ]:
        (hit,) = index.search(question, k=1)
        assert (hit.doc_id, hit.text, index.document(doc_id)) == (doc_id, text, text)
        assert index.expand([hit]).passages[0].text == text
    index.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx", encoder)
    assert loaded.doc_ids == index.doc_ids
    assert [h.id for h in loaded.search("frogs", k=5)] == [h.id for h in index.search("frogs", k=5)]


def test_bad_and_corrupt_stores(index, tmp_path):
    with pytest.raises(FileNotFoundError, match="no index folder"):
        Index.load(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(CorruptIndexError, match="not a chunkforge index"):
        Index.load(tmp_path / "plain")
    path = tmp_path / "idx"
    index.save(path)
    version = path / (path / "CURRENT").read_text().strip()
    nodes = version / "nodes.parquet"
    nodes.write_bytes(nodes.read_bytes()[:100])
    with pytest.raises(CorruptIndexError, match="nodes.parquet"):
        Index.load(path)
    (version / "manifest.json").write_text("{not json")
    with pytest.raises(CorruptIndexError, match="manifest.json"):
        Index.load(path)
    (tmp_path / "plain" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a chunkforge index"):
        index.save(tmp_path / "plain")


SAVER = textwrap.dedent("""
    import sys
    from chunkforge.index import Index
    a, b = Index.load(sys.argv[1]), Index.load(sys.argv[2])
    print("ready", flush=True)
    while True:
        a.save(sys.argv[3])
        b.save(sys.argv[3])
""")


def test_killed_save_leaves_old_or_new(index, encoder, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    index.save(old)
    bigger = Index.load(old, encoder)
    bigger.add([{"id": "t.md", "text": TREE_DOC}])
    bigger.save(new)
    target = tmp_path / "target"
    index.save(target)
    rng = random.Random(7)
    outcomes = set()
    for _ in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(old), str(new), str(target)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        child.send_signal(signal.SIGKILL)
        child.wait()
        loaded = Index.load(target, encoder)
        assert sorted(loaded.doc_ids) in (sorted(index.doc_ids), sorted(bigger.doc_ids))
        outcomes.add(len(loaded))
        hits = loaded.search("dogs barked", k=3)
        assert loaded.expand(hits, window=1).passages
    assert outcomes  # both versions usually show up; either is correct


def test_cli_build_and_query(tmp_path, model_cache, capsys):
    doc = tmp_path / "docs" / "pets.md"
    doc.parent.mkdir()
    doc.write_text(TREE_DOC, encoding="utf-8")
    out = tmp_path / "idx"
    assert main(["index", "build", str(doc.parent), "--out", str(out), "--parent-tokens"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "which dogs barked?", "--k", "2", "--window", "1", "--budget-tokens", "50"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"[1] {doc}:") and "Four dogs barked." in printed
    # the defaults: the recommended policy (100 hits as they are, within 1,000 tokens)
    assert main(["query", str(out), "which dogs barked?", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    index = Index.load(out)
    expected = index.expand(index.search("which dogs barked?", k=100), budget_tokens=1000)
    assert [(p["doc_id"], p["start"], p["end"]) for p in payload["passages"]] == [
        (p.doc_id, p.start, p.end) for p in expected.passages
    ]
    assert main(["query", str(tmp_path / "nope"), "x"]) == 2
    assert "no index folder" in capsys.readouterr().err


def test_token_windows_are_whole_sentences_within_the_section_and_the_limit(encoder):
    """``window_tokens=n``: the hit plus whole neighbouring sentences of its section, at
    most ``n`` tokens, and no neighbour of the section left out that would still fit."""
    text = "# A\n\n" + " ".join(f"Sentence number {i} talks about item {i}." for i in range(12)) + "\n\n# B\n\nOther."
    index = Index.build([{"id": "w.md", "text": text}], encoder, parent_tokens=())
    tok = encoder.tokenizer
    sentences = [h for h in index.leaves("w.md") if h.heading_path == ("A",)]  # "# A" is the section's first
    assert len(sentences) == 13
    for n in (5, 12, 30, 60, 400):
        for hit in sentences[1::3]:
            p = index.expand([hit], window_tokens=n).passages[0]
            assert p.start <= hit.start and hit.end <= p.end and p.text == text[p.start : p.end]
            assert p.token_count == tok.count(p.text)
            assert p.token_count <= max(n, tok.count(hit.text))
            inside = [s for s in sentences if p.start <= s.start and s.end <= p.end]
            assert inside and p.start == inside[0].start and p.end == inside[-1].end
            for s in sentences:  # a neighbour that would still fit was taken
                if s.end == inside[0].start - 1 or s.start == inside[-1].end + 1:
                    assert tok.count(text[min(s.start, p.start) : max(s.end, p.end)]) > n
    with pytest.raises(ValueError, match="window_tokens"):
        index.expand(sentences[:1], window_tokens=0)


def test_bm25_updates_in_place_like_a_fresh_build():
    """Scores after removing and adding passages equal those of the remaining texts indexed anew."""
    from chunkforge.index.bm25 import BM25 as _BM25

    texts = [
        "the cat sat on the mat",
        "dogs bark at the mailman",
        "a cat and a dog",
        "ferns like shade",
        "mailman delivers letters to the cat",
    ]
    live = _BM25()
    ids = live.add(texts[:3])
    live.remove(ids[1])
    more = live.add(texts[3:])
    fresh = _BM25()
    fresh.add([texts[0], texts[2], *texts[3:]])
    for q in ("cat", "mailman letters", "dog shade", "unknown words"):
        got = live.scores(q)
        assert got[ids[1]] == 0
        np.testing.assert_allclose(got[[ids[0], ids[2], *more]], fresh.scores(q), rtol=1e-12)


def test_hits_are_the_dataclass_hit_makes(index):
    """Hits are made natively: each equals the ``Hit(...)`` of its leaf, with the span's
    text and the leaf level's node id, and is hashable and frozen like one."""
    level = len(index.parent_tokens) + 1
    hits = index.search("unicode identifier tables", k=20)
    for h in hits:
        text = index.document(h.doc_id)[h.start : h.end]
        made = Hit(
            h.doc_id, h.start, h.end, h.score, text, h.heading_path, node_id(h.doc_id, h.start, h.end, level), h.leaf
        )
        assert h == made and hash(h) == hash(made)
        assert type(h.start) is int and type(h.score) is float and type(h.leaf) is int
    with pytest.raises(FrozenInstanceError):
        hits[0].score = 2.0  # type: ignore[misc]
    assert len({h.id for h in index.leaves()}) == index.leaf_count

    @dataclass(frozen=True, slots=True)
    class Short:
        doc_id: str
        start: int

    with pytest.raises(TypeError, match="Short must have the 8 fields of a hit, not 2"):
        _native.Expander(index.tokenizer._native, Short, Passage, Payload)


def test_passages_are_the_named_tuples_passage_makes(index):
    """Passages and the payload are made natively through tuple's own constructor: each
    equals, hashes and prints as the ``Passage(...)`` of its fields; hits may come in any
    iterable; a type that is not a tuple is refused."""
    hits = index.search("unicode identifier tables", k=20)
    payload = index.expand(hits, budget_tokens=300)
    assert type(payload) is Payload and payload.passages and payload == Payload(*tuple(payload))
    assert index.expand(iter(hits), budget_tokens=300) == index.expand(tuple(hits), budget_tokens=300) == payload
    for p in payload.passages:
        made = Passage(*tuple(p))
        assert type(p) is Passage and p == made and hash(p) == hash(made) and repr(p) == repr(made)
        assert p.text == index.document(p.doc_id)[p.start : p.end] and all(h in hits for h in p.hits)

    class NotATuple:
        pass

    with pytest.raises(TypeError, match="NotATuple is not a subclass of tuple"):
        _native.Expander(index.tokenizer._native, Hit, NotATuple, Payload)
    with pytest.raises(TypeError, match="NotATuple is not a subclass of tuple"):
        _native.Expander(index.tokenizer._native, Hit, Passage, NotATuple)
    with pytest.raises(TypeError, match=r"tuple.__new__\(os.stat_result\) is not safe"):
        _native.Expander(index.tokenizer._native, Hit, os.stat_result, Payload)


def test_hybrid_scores_zero_when_no_candidate_scores_positive(index, monkeypatch):
    """Nearest leaves all at a negative cosine and no BM25 match: zero scores in label order
    (both terms drop out; the fused scores stay one per leaf, no shape error)."""
    monkeypatch.setattr(index, "_dense_started", lambda vector, k, allowed: lambda: [(1, -0.3), (0, -0.1)])
    hits = index.search("qqqxyzzy", k=2, hybrid=True)
    assert [(h.leaf, h.score) for h in hits] == [(0, 0.0), (1, 0.0)]


def test_hybrid_ranks_a_leaf_by_its_parents_words(encoder):
    """A sentence without the question's rare word is found through its parent's BM25 score."""
    docs = [
        {"id": f"d{i}.txt", "text": f"Report {i}. The committee met on a Tuesday. Nothing was decided."}
        for i in range(6)
    ]
    docs.append(
        {"id": "z.txt", "text": "Report on the zorblax grant. The committee met on a Tuesday. It approved the budget."}
    )
    index = Index.build(docs, encoder, parent_tokens=(64,))
    hybrid = index.search("what did the committee decide about zorblax?", k=3)
    assert hybrid[0].doc_id == "z.txt"
    assert any(h.doc_id == "z.txt" and "approved" in h.text for h in hybrid)


def test_passages_do_not_cross_a_section_boundary(encoder):
    """Touching hits of two sections were merged into one passage under one heading path (the
    README's example printed pets.md:0-96 (Cats)); passages that only touch merge within one
    section, with a budget and without."""
    text = "# Cats\n\nCats purr when content. They sleep most of the day.\n\n# Dogs\n\nDogs bark. They need walks."
    index = Index.build([{"id": "pets.md", "text": text}], encoder)
    leaves = index.leaves("pets.md")
    for budget in (None, 40, 1000):
        payload = index.expand(leaves, budget_tokens=budget)
        assert [(p.start, p.end, p.heading_path) for p in payload.passages] == [
            (0, 59, ("Cats",)),
            (61, 96, ("Dogs",)),
        ]
    # within one section, touching leaves still make one passage
    cats = [h for h in leaves if h.heading_path == ("Cats",)]
    assert [(p.start, p.end) for p in index.expand(cats).passages] == [(0, 59)]


def test_every_leaf_is_scored_from_its_int8_copy(encoder):
    """One rule whichever search found a leaf: a dense hit's score is the question's cosine
    with its leaf's vector in int8, to 6 decimals (as the best BM25 parents' leaves are scored,
    and as a store scores every leaf from its side without reading a vector), best first; not
    the graph's float cosine, which differs in the fifth decimal."""
    from chunkforge._search import int8_cosines, int8_rows, normalized

    index = Index.build(small_docs(), encoder, search_prefix=False)
    differs = 0
    for question in ("how do I install it?", "unicode identifiers in Rust", "what does the licence allow?"):
        hits = index.search(question, k=20, hybrid=False)
        unit = normalized(encoder.embed_query(question)[None, :])[0]
        scores = np.array([h.score for h in hits])
        labels = [h.leaf for h in hits]
        assert scores.tolist() == int8_cosines(index._vectors[labels], index._scales[labels], unit).tolist()
        assert scores.tolist() == sorted(scores.tolist(), reverse=True)
        vectors = encoder.embed([h.text for h in hits])  # the leaves' own vectors, embedded again
        assert np.abs(int8_cosines(*int8_rows(vectors), unit) - scores).max() < 1e-3
        differs += int(np.abs(normalized(vectors) @ unit - scores).max() > 1e-5)
    assert differs  # the float cosines would have been seen
