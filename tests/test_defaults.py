"""Issue 41's query options on real indexes (the default encoder, small corpora): the
abstention ``floor`` in ``Index.query``, the store, ``chunkforge query`` and ``/query``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")

from chunkforge.index import Index  # noqa: E402

TOPICS = ["cats purr and sleep", "dogs bark at night", "ferns grow in shade", "bees make honey"]
ON_TOPIC, OFF_TOPIC = "how much do cats sleep?", "quarterly revenue of a semiconductor foundry"


def documents() -> list[dict]:
    return [
        {
            "doc_id": f"d{i}.md",
            "text": f"# {t.title()}\n\n" + " ".join(f"Note {j}: {t}, in room {i}." for j in range(10)),
        }
        for i, t in enumerate(TOPICS)
    ]


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


@pytest.fixture(scope="module")
def index(encoder) -> Index:
    return Index.build(documents(), encoder)


def test_floor_leaves_the_payload_empty_and_says_so(index):
    plain = index.query(ON_TOPIC)
    assert not plain.abstained and plain.passages
    assert index.query(ON_TOPIC, floor=-1.0) == plain  # a floor under every cosine changes nothing
    hits = index.search(ON_TOPIC, k=100)
    empty = index.query(ON_TOPIC, floor=1.0)  # no cosine reaches 1: nothing is sent
    assert empty.abstained and empty.passages == [] and list(empty.dropped) == hits
    # the floor reads the question's closeness: an on-topic question passes where an off-topic one does not
    floor = 0.3
    assert not index.query(ON_TOPIC, floor=floor).abstained
    assert index.query(OFF_TOPIC, floor=floor).abstained
    # filtered to nothing: no hit, so nothing reaches the floor
    assert index.query(ON_TOPIC, floor=-1.0, doc_id="missing.md").abstained


@pytest.mark.parametrize("bad", [1.5, -2, math.nan, math.inf])
def test_floor_out_of_range_is_a_value_error(index, bad):
    with pytest.raises(ValueError, match="floor"):
        index.query(ON_TOPIC, floor=bad)


@pytest.mark.parametrize("bad", ["0.3", True])
def test_floor_of_the_wrong_type_is_a_type_error(index, bad):
    with pytest.raises(TypeError, match="floor"):
        index.query(ON_TOPIC, floor=bad)


@pytest.fixture(scope="module")
def store(tmp_path_factory, encoder):
    pytest.importorskip("lancedb")
    from chunkforge import bulk
    from chunkforge.index.store import write_store

    root = tmp_path_factory.mktemp("floor-store")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents()), encoding="utf-8")
    bulk.run([str(root / "docs.jsonl")], root / "vectors", encoder=encoder, units="tree")
    write_store(root / "vectors", root / "store.lancedb")
    return Index.open(root / "store.lancedb", encoder)


def test_store_honours_the_floor(store, index):
    assert not store.query(ON_TOPIC).abstained
    assert store.query(ON_TOPIC, floor=0.3).passages and not store.query(ON_TOPIC, floor=0.3).abstained
    assert store.query(OFF_TOPIC, floor=0.3).abstained == index.query(OFF_TOPIC, floor=0.3).abstained is True
    empty = store.query(ON_TOPIC, floor=1.0)
    assert empty.abstained and empty.passages == [] and empty.dropped
    with pytest.raises(ValueError, match="floor"):
        store.query(ON_TOPIC, floor=2.0)


@pytest.fixture(scope="module")
def served(index, tmp_path_factory) -> Iterator[str]:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from conftest import start_server, stop

    folder = tmp_path_factory.mktemp("floor-served") / "index"
    index.save(folder)
    process, url = start_server(folder, "--reload-interval", "0")
    yield url
    stop(process)


def test_service_and_cli_honour_the_floor(served, index, tmp_path, capsys):
    httpx = pytest.importorskip("httpx")
    with httpx.Client(base_url=served, timeout=30) as http:
        answer = http.post("/query", json={"question": OFF_TOPIC, "floor": 0.3}).json()
        assert answer["abstained"] is True and answer["passages"] == []
        answer = http.post("/query", json={"question": ON_TOPIC, "floor": 0.3}).json()
        assert answer["abstained"] is False and answer["passages"]
        assert http.post("/query", json={"question": ON_TOPIC}).json()["abstained"] is False
        assert http.post("/query", json={"question": ON_TOPIC, "floor": 1.5}).status_code == 422
    from chunkforge.serve.client import ServiceClient

    client = ServiceClient(served)
    assert client.query(OFF_TOPIC, floor=0.3).abstained and not client.query(ON_TOPIC, floor=0.3).abstained
    client.close()

    from chunkforge.cli import main

    folder = Path(tmp_path) / "index"
    index.save(folder)
    assert main(["query", str(folder), OFF_TOPIC, "--floor", "0.3", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["abstained"] is True and "under --floor 0.3" in out.err
    assert main(["query", str(folder), ON_TOPIC, "--floor", "0.3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passages"]
