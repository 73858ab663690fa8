"""``chunkforge serve`` as an access boundary and under hostile clients: a real server (the
CLI, uvicorn) on loopback, real sockets. Pinned and per-user (proxy header) filters hold on
every endpoint, ``/expand`` included; bad values are 4xx; answers are bounded in characters;
a FIFO or ``/dev/zero`` as ``CURRENT`` stalls nothing; stalled clients are closed; a deleted
store is reported by ``/health``; the bulk job's dataset folder is served as ``query`` reads it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("lancedb")
httpx = pytest.importorskip("httpx")

from chunkforge import bulk  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.index.store import write_store  # noqa: E402

from conftest import start_server, stop  # noqa: E402

TOPICS = ["cats purr and sleep", "dogs bark at night", "ferns grow in shade", "bees make honey"]


def documents() -> list[dict]:
    docs = []
    for i in range(8):
        topic = TOPICS[i % len(TOPICS)]
        text = f"# {topic.title()}\n\n" + " ".join(f"Note {j}: {topic}, in room {i}." for j in range(10))
        docs.append({"doc_id": f"d{i}.md", "text": text, "acl": "public" if i % 2 else "staff", "source": "wiki"})
    return docs


PUBLIC = {d["doc_id"] for d in documents() if d["acl"] == "public"}


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


@pytest.fixture(scope="module")
def folders(tmp_path_factory, encoder) -> dict[str, Path]:
    """The documents as a saved index, as the bulk job's dataset and as a store."""
    root = tmp_path_factory.mktemp("serve-hardening")
    Index.build(documents(), encoder).save(root / "index")
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents()), encoding="utf-8")
    bulk.run([str(root / "docs.jsonl")], root / "vectors", encoder=encoder, units="tree")
    write_store(root / "vectors", root / "store.lancedb")
    return {"index": root / "index", "dataset": root / "vectors", "store": root / "store.lancedb"}


@pytest.fixture(scope="module", params=["index", "store"])
def pinned(request, folders) -> Iterator[httpx.Client]:
    """A service pinned to public documents, per-user filters from the header ``X-Filter``."""
    process, url = start_server(
        folders[request.param],
        "--reload-interval",
        "0",
        "--pin-where",
        "acl=public",
        "--filter-header",
        "X-Filter",
        "--max-answer-chars",
        "20000",
    )
    with httpx.Client(base_url=url, timeout=60, headers={"X-Filter": "{}"}) as client:
        yield client
    stop(process)


def doc_ids(answer: dict) -> set[str]:
    return {p["doc_id"] for p in answer.get("passages", [])} | {h["doc_id"] for h in answer.get("hits", [])}


def test_a_pinned_filter_holds_on_every_endpoint(pinned, folders, encoder):
    """Whatever a request asks for, /search, /query and /expand answer from public documents
    only; hits of a staff document (found in process, or forged) are 422 on /expand, with or
    without window_tokens, as a hit of no document is."""
    for question in TOPICS:
        assert doc_ids(pinned.post("/search", json={"query": question, "k": 50}).json()) <= PUBLIC
        for options in ({}, {"window_tokens": 5000}, {"spread": 0.5}, {"parent": True}):
            body = {"question": question, "budget_tokens": 4000, **options}
            assert doc_ids(pinned.post("/query", json=body).json()) <= PUBLIC
        asked_for_staff = pinned.post("/query", json={"question": question, "where": {"acl": "staff"}}).json()
        assert asked_for_staff["passages"] == []
    staff = [h for h in Index.load(folders["index"], encoder).search("cats purr", k=20) if h.doc_id not in PUBLIC]
    hit = {f: getattr(staff[0], f) for f in ("doc_id", "start", "end", "score", "text", "id", "leaf")}
    hit["heading_path"] = list(staff[0].heading_path)
    for options in ({}, {"window_tokens": 100000}):
        answer = pinned.post("/expand", json={"hits": [hit], **options})
        assert answer.status_code == 422 and "is not a leaf" in answer.text
        nowhere = pinned.post("/expand", json={"hits": [{**hit, "doc_id": "nowhere.md"}], **options})
        assert nowhere.status_code == 422 and answer.json()["detail"][0]["loc"] == nowhere.json()["detail"][0]["loc"]


def test_random_header_filters_hold_on_every_endpoint(pinned, folders, encoder):
    """For random per-user filters and expansion options, no endpoint returns text of a document
    the filters exclude; /expand refuses the hits of excluded documents."""
    import random

    rng = random.Random(11)
    docs = {d["doc_id"]: d for d in documents()}
    everything = Index.load(folders["index"], encoder)
    for _ in range(12):
        ids = rng.sample(sorted(docs), rng.randint(1, 5))
        given = rng.choice([{"doc_id": ids}, {"where": {"acl": rng.choice(["public", "staff"])}}, {"source": "wiki"}])
        allowed = {i for i in docs if docs[i]["acl"] == "public"}  # the pin
        allowed &= set(given.get("doc_id", docs))
        if "where" in given:
            allowed &= {i for i in docs if docs[i]["acl"] == given["where"]["acl"]}
        headers = {"X-Filter": json.dumps(given)}
        options = rng.choice([{}, {"window_tokens": 5000}, {"spread": 0.5}, {"parent": True}, {"window": 3}])
        question = rng.choice(TOPICS)
        assert doc_ids(pinned.post("/search", json={"query": question, "k": 50}, headers=headers).json()) <= allowed
        body = {"question": question, "budget_tokens": 4000, **options}
        assert doc_ids(pinned.post("/query", json=body, headers=headers).json()) <= allowed
        for h in everything.search(question, k=20):
            hit = {f: getattr(h, f) for f in ("doc_id", "start", "end", "score", "text", "id", "leaf")}
            answer = pinned.post(
                "/expand", json={"hits": [{**hit, "heading_path": list(h.heading_path)}], **options}, headers=headers
            )
            assert answer.status_code == (200 if h.doc_id in allowed else 422)
            assert doc_ids(answer.json()) <= allowed


def test_the_proxy_header_narrows_and_is_required(pinned):
    """The proxy's per-user filter narrows the pin (it cannot widen it); without it, 403; a
    header that is not a filter, 400."""
    narrowed = {"X-Filter": json.dumps({"doc_id": ["d1.md", "d2.md"]})}
    answer = pinned.post("/query", json={"question": "dogs bark", "budget_tokens": 4000}, headers=narrowed).json()
    assert doc_ids(answer) <= {"d1.md"}
    wider = {"X-Filter": json.dumps({"where": {"acl": ["public", "staff"]}})}
    assert doc_ids(pinned.post("/search", json={"query": "bees", "k": 50}, headers=wider).json()) <= PUBLIC
    with httpx.Client(base_url=str(pinned.base_url), timeout=30) as bare:
        assert bare.post("/search", json={"query": "bees"}).status_code == 403
        bad = bare.post("/search", json={"query": "bees"}, headers={"X-Filter": "[1]"})
        assert bad.status_code == 400 and "X-Filter header is not a filter" in bad.text


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/query", b'{"question": "\\ud800 cats"}', "question"),
        ("/search", b'{"query": "cats", "where": {"acl": "\\udfff"}}', "where"),
        ("/query", b'{"question": "cats", "auto_merge": NaN}', "auto_merge"),
        ("/query", b'{"question": "cats", "spread": Infinity}', "spread"),
        ("/query", b'{"question": "cats", "spread": -Infinity}', "spread"),
    ],
    ids=["surrogate-question", "surrogate-where", "nan", "infinity", "minus-infinity"],
)
def test_values_json_cannot_answer_are_422_not_500(pinned, path, body, field):
    """422 at the field of the value, whether the model or the index rejected it."""
    answer = pinned.post(path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert [d["loc"][:2] for d in answer.json()["detail"]] == [["body", field]], answer.text


def test_a_filter_the_index_refuses_is_a_422_at_its_field(pinned, request):
    """A request the model takes but the index refuses (the store filters by metadata, not by
    heading): 422 at the field the index's error names, as the model's own errors are."""
    answer = pinned.post("/search", json={"query": "cats", "heading_prefix": ["Cats"]})
    if request.node.callspec.params["pinned"] == "index":
        assert answer.status_code == 200, answer.text
    else:
        assert answer.status_code == 422, answer.text
        assert [d["loc"] for d in answer.json()["detail"]] == [["body", "heading_prefix"]]


def test_expand_of_a_span_that_is_no_leaf_is_422(pinned):
    """A start past the last leaf, an unknown document with ``spread``: 422, not 500."""
    base = {"score": 1.0, "text": "x", "heading_path": [], "id": "x", "leaf": 0}
    for hit in ({"doc_id": "d1.md", "start": 10**6, "end": 10**6 + 5}, {"doc_id": "zz.md", "start": 0, "end": 4}):
        answer = pinned.post("/expand", json={"hits": [{**base, **hit}], "spread": 0.5})
        assert answer.status_code == 422, answer.text


def test_an_answer_is_bounded_in_characters(encoder, tmp_path):
    """A run of characters without a space is one [UNK] token: a budget of 1 token returned the
    whole run. Answers are bounded by 32 characters a budget token and by --max-answer-chars."""
    run = "x" * 3_000_000
    Index.build([{"id": "run.md", "text": run}, {"id": "b.md", "text": "Cats purr. Dogs bark."}], encoder).save(
        tmp_path / "index"
    )
    process, url = start_server(tmp_path / "index", "--reload-interval", "0", "--max-answer-chars", "100000")
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            for budget in (1, 1000):
                answer = client.post("/query", json={"question": "xxxx", "budget_tokens": budget})
                assert answer.status_code == 200 and len(answer.content) < 100_000
            unbounded = client.post("/query", json={"question": "xxxx", "budget_tokens": None})
            assert unbounded.status_code == 200 and len(unbounded.content) < 300_000
            hits = client.post("/search", json={"query": "xxxx", "k": 2})
            assert hits.status_code == 200 and len(hits.content) < 300_000 and hits.json()["omitted"] >= 1
    finally:
        stop(process)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_current_as_a_fifo_or_dev_zero_stalls_no_reload(encoder, tmp_path):
    """The reload watcher read CURRENT without a limit or a file check: /dev/zero took 3 GB in
    4 s, a FIFO stopped reloads for good. Both are now a logged error, and the next real save is
    served."""
    root = tmp_path / "index"
    Index.build(documents()[:2], encoder).save(root)
    process, url = start_server(root, "--reload-interval", "0.2")
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            before = rss_kb(process.pid)
            current = root / "CURRENT"
            name = current.read_text().strip()
            for swap in ("fifo", "zero"):
                current.unlink()
                os.mkfifo(current) if swap == "fifo" else os.symlink("/dev/zero", current)
                time.sleep(1.5)
                assert client.get("/health").status_code == 503
                current.unlink()
                current.write_text(name + "\n")
            assert rss_kb(process.pid) - before < 200_000
            index = Index.load(root, encoder)
            index.add([{"id": "new.md", "text": "Owls hunt at night."}])
            index.save(root)
            deadline = time.monotonic() + 30
            while client.get("/health").json()["version"] != "v-000002" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert client.get("/health").json() == {"status": "ok", "version": "v-000002", "detail": None}
    finally:
        stop(process)


def test_stalled_clients_are_closed_and_connections_capped(folders):
    """A request that does not arrive whole within --request-timeout is closed; past
    --max-connections a new connection is answered 503 and closed."""
    process, url = start_server(
        folders["index"], "--reload-interval", "0", "--request-timeout", "1", "--max-connections", "20"
    )
    port = int(url.rsplit(":", 1)[1])
    try:
        stalled = []
        for i in range(15):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"")
            stalled.append(s)
        extra = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
        refused = 0
        for s in extra:
            s.settimeout(5)
            try:
                refused += s.recv(200).startswith(b"HTTP/1.1 503")
            except TimeoutError:
                pass
        assert refused >= 3
        time.sleep(2.5)
        for s in stalled:
            s.settimeout(5)
            assert s.recv(100) == b""  # closed by the server
        for s in stalled + extra:
            s.close()
        assert httpx.post(url + "/search", json={"query": "cats"}, timeout=30).status_code == 200
    finally:
        stop(process)


def test_a_deleted_store_is_reported_by_health_and_queries_are_503(folders, tmp_path):
    store = tmp_path / "store.lancedb"
    shutil.copytree(folders["store"], store)
    process, url = start_server(store, "--reload-interval", "0")
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/health").json()["status"] == "ok"
            shutil.rmtree(store)
            health = client.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "unavailable"
            answer = client.post("/query", json={"question": "a question never asked before"})
            assert answer.status_code == 503 and "cannot answer" in answer.text
            assert not store.exists()  # the probe created nothing
    finally:
        stop(process)


def test_the_bulk_jobs_dataset_is_served_as_query_reads_it(folders, encoder):
    """``serve`` refused the ``embed-docs --index`` folder that ``query`` reads; it serves it now,
    answering as the index read from it in process."""
    process, url = start_server(folders["dataset"], "--reload-interval", "0")
    try:
        expected = Index.from_dataset(folders["dataset"], encoder).query("bees make honey", budget_tokens=300)
        answer = httpx.post(url + "/query", json={"question": "bees make honey", "budget_tokens": 300}, timeout=60)
        assert answer.status_code == 200 and answer.json()["version"].startswith("dataset-")
        assert [(p["doc_id"], p["start"], p["end"]) for p in answer.json()["passages"]] == [
            (p.doc_id, p.start, p.end) for p in expected.passages
        ]
    finally:
        stop(process)
