"""``chunkforge serve``: a real server (the CLI, uvicorn) on a free loopback port, real
HTTP requests, answers compared with the same index in process, a reload during
requests, and the OpenAPI contract (checked in, and fuzzed by schemathesis)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from chunkforge.cli import main  # noqa: E402
from chunkforge.index import Index  # noqa: E402

from conftest import corpus, free_port, start_server, stop  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "openapi.json"
QUESTIONS = ["how is the temperature read?", "which chips are supported", "unicode identifier tables", "license"]


def small_docs(n: int = 3) -> list[dict]:
    docs = sorted(corpus(), key=lambda d: len(d["text"]))
    return [d for d in docs if 1500 < len(d["text"]) < 4000][:n]


@pytest.fixture(scope="module")
def encoder(model_cache):
    from chunkforge.encoder import Encoder

    return Encoder.default()


@pytest.fixture(scope="module")
def index(encoder) -> Index:
    return Index.build(small_docs(), encoder, leaf_tokens=48, parent_tokens=(200,))


@pytest.fixture(scope="module")
def saved(index, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("served") / "index"
    index.save(folder)
    return folder


@pytest.fixture(scope="module")
def server(saved) -> Iterator[str]:
    process, url = start_server(saved, "--reload-interval", "0")
    yield url
    stop(process)


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=30) as client:
        yield client


def passages(payload) -> list[dict]:
    """In-process passages in the service's form."""
    return [
        {
            "doc_id": p.doc_id,
            "start": p.start,
            "end": p.end,
            "token_count": p.token_count,
            "text": p.text,
            "heading_path": list(p.heading_path),
            "hit_leaves": [h.leaf for h in p.hits],
        }
        for p in payload.passages
    ]


def served_passages(answer: dict) -> list[dict]:
    return [
        {
            **{k: v for k, v in p.items() if k not in ("hits", "score", "citation")},
            "hit_leaves": [h["leaf"] for h in p["hits"]],
        }
        for p in answer["passages"]
    ]


def test_query_answers_as_the_index_in_process(index, saved, http):
    version = (saved / "CURRENT").read_text().strip()
    for question in QUESTIONS:
        body = {"question": question, "k": 8, "budget_tokens": 300, "window": 1}
        answer = http.post("/query", json=body).json()
        assert answer["version"] == version
        expected = index.query(question, k=8, budget_tokens=300, window=1)
        assert served_passages(answer) == passages(expected)
        assert answer["token_count"] == expected.token_count <= 300
        for p in answer["passages"]:
            assert index.document(p["doc_id"])[p["start"] : p["end"]] == p["text"]
    # the Python defaults (k 100, budget 1,000) when not given
    assert served_passages(http.post("/query", json={"question": "license"}).json()) == passages(index.query("license"))


def test_search_then_expand(index, http):
    found = http.post("/search", json={"query": "temperature sensor", "k": 6, "hybrid": False}).json()
    hits = index.search("temperature sensor", k=6, hybrid=False)
    assert [(h["doc_id"], h["start"], h["end"], h["leaf"]) for h in found["hits"]] == [
        (h.doc_id, h.start, h.end, h.leaf) for h in hits
    ]
    assert [h["score"] for h in found["hits"]] == pytest.approx([h.score for h in hits])
    doc = small_docs()[1]["id"]
    only = http.post("/search", json={"query": "temperature", "k": 5, "doc_id": [doc]}).json()["hits"]
    assert only and {h["doc_id"] for h in only} == {doc}
    expanded = http.post(
        "/expand", json={"hits": found["hits"], "version": found["version"], "parent": True, "order": "document"}
    ).json()
    assert served_passages(expanded) == passages(index.expand(hits, parent=True, order="document"))


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/query", {"question": "x", "k": 0}, "k"),
        ("/query", {"question": "x", "k": 10**6}, "k"),
        ("/query", {"question": "x", "budget_tokens": -1}, "budget_tokens"),
        ("/query", {"question": "x", "budget_tokens": 10**9}, "budget_tokens"),
        ("/query", {"question": "x", "auto_merge": 1.5}, "auto_merge"),
        ("/query", {"question": "x", "order": "random"}, "order"),
        ("/query", {"question": "x", "windw": 2}, "windw"),
        ("/query", {"question": ""}, "question"),
        ("/query", {"k": 3}, "question"),
        ("/query", {"question": "x", "where": "year > 2020"}, "where"),
        ("/search", {"query": "x", "heading_prefix": "Intro"}, "heading_prefix"),
        ("/expand", {"hits": [{"doc_id": "a.md"}]}, "hits"),
        (
            "/expand",
            {
                "hits": [
                    {
                        "doc_id": "a",
                        "start": 0,
                        "end": 1,
                        "score": 1,
                        "text": "",
                        "heading_path": [],
                        "id": "",
                        "leaf": 10**7,
                    }
                ]
            },
            "hits",
        ),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(http, path, body, field):
    response = http.post(path, json=body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert any(field in [str(part) for part in d["loc"]] for d in detail), detail


def test_malformed_bodies_and_limits(http, server):
    assert http.post("/query", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
    assert http.post("/query", content=b"[1, 2]", headers={"content-type": "application/json"}).status_code == 422
    big = json.dumps({"question": "x" * (2 << 20)})
    assert http.post("/query", content=big, headers={"content-type": "application/json"}).status_code == 413
    stale = http.post("/expand", json={"hits": [], "version": "v-999999"})
    assert stale.status_code == 409 and "version" in stale.json()["detail"]
    assert http.get("/query").status_code == 405


def test_concurrent_queries_answer_as_one_at_a_time(http, server):
    bodies = [{"question": q, "k": 10, "budget_tokens": 200} for q in QUESTIONS]
    alone = [http.post("/query", json=b).json()["passages"] for b in bodies]
    with httpx.Client(base_url=server, timeout=60, limits=httpx.Limits(max_connections=16)) as shared:
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda i: shared.post("/query", json=bodies[i % 4]), range(64)))
    assert all(a.status_code == 200 for a in answers)
    assert [a.json()["passages"] for a in answers] == [alone[i % 4] for i in range(64)]
    stats = http.get("/stats").json()
    assert stats["documents"] == 3 and stats["leaves"] > 0 and stats["requests"]["/query"] >= 68
    assert stats["in_flight"] == 0


def test_hot_reload_during_requests_fails_none(index, encoder, tmp_path):
    """Three saves into the folder while 4 clients query: every request answers 200, from
    the version it names, and after each save the service answers from the new one."""
    folder = tmp_path / "index"
    index.save(folder)
    process, url = start_server(folder, "--reload-interval", "0.1")
    extra = sorted(corpus(), key=lambda d: len(d["text"]))[100]
    grown = Index.build([*small_docs(), extra], encoder, leaf_tokens=48, parent_tokens=(200,))
    stop_flag = threading.Event()
    answers: list[tuple[int, str, set[str]]] = []  # status, version (or the error), documents answered from
    questions = [*QUESTIONS, extra["text"][:200]]

    def client(offset: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            for n in range(100_000):
                if stop_flag.is_set():
                    return
                body = {"question": questions[(n + offset) % len(questions)], "k": 5, "budget_tokens": 200}
                r = http.post("/query", json=body)
                if r.status_code != 200:
                    answers.append((r.status_code, r.text, set()))
                    continue
                answer = r.json()
                answers.append((200, answer["version"], {p["doc_id"] for p in answer["passages"]}))

    workers = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    try:
        for w in workers:
            w.start()
        for saved in (grown, index, grown):
            time.sleep(0.5)
            saved.save(folder)
            version = (folder / "CURRENT").read_text().strip()
            deadline = time.monotonic() + 30
            while httpx.get(url + "/health").json()["version"] != version and time.monotonic() < deadline:
                time.sleep(0.05)
            assert httpx.get(url + "/health").json()["version"] == version
            assert httpx.get(url + "/stats").json()["documents"] == len(saved)
        (folder / "CURRENT").write_text("v-999999\n")  # a version that cannot be read
        time.sleep(0.5)
        assert httpx.get(url + "/health").json()["version"] == "v-000004"
    finally:
        stop_flag.set()
        for w in workers:
            w.join()
        stats = httpx.get(url + "/stats").json()
        stop(process)
    failed = [a for a in answers if a[0] != 200]
    assert answers and not failed, failed[:3]
    by_version: dict[str, set[str]] = {}
    for _, version, docs in answers:
        by_version.setdefault(version, set()).update(docs)
    assert sorted(by_version) == ["v-000001", "v-000002", "v-000003", "v-000004"]
    # each answer came from the version it names: the extra document only from the grown ones
    assert extra["id"] in by_version["v-000002"] and extra["id"] in by_version["v-000004"]
    assert extra["id"] not in by_version["v-000001"] | by_version["v-000003"]
    assert stats["reloads"] == 3


def test_workers_each_load_the_index(index, saved):
    process, url = start_server(saved, "--workers", "2", "--reload-interval", "0")
    try:
        with httpx.Client(base_url=url, timeout=60) as http, ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda q: http.post("/query", json={"question": q, "k": 10}), QUESTIONS * 4))
    finally:
        stop(process)
    assert [served_passages(a.json()) for a in answers] == [passages(index.query(q, k=10)) for q in QUESTIONS * 4]


def test_timeout_is_a_504(saved):
    process, url = start_server(saved, "--timeout", "0.0001", "--reload-interval", "0")
    try:
        response = httpx.post(url + "/query", json={"question": "how is the temperature read?"}, timeout=30)
    finally:
        stop(process)
    assert response.status_code == 504 and "longer than" in response.json()["detail"]


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nothing"), "--port", str(free_port())]) == 2
    assert main(["serve", str(tmp_path), "--port", "70000"]) == 2
    assert main(["serve", str(tmp_path), "--workers", "0"]) == 2
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["serve", str(tmp_path), "--port", str(busy.getsockname()[1])]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 4 and all(e.startswith("chunkforge: error: ") for e in errors)
    assert "CURRENT" in errors[0] and "--port" in errors[1] and "--workers" in errors[2]
    assert "cannot listen" in errors[3]


def test_openapi_spec_is_the_checked_in_one(http):
    served = http.get("/openapi.json").json()
    assert SPEC.is_file(), "write it: curl -s http://127.0.0.1:8000/openapi.json > docs/openapi.json"
    assert served == json.loads(SPEC.read_text(encoding="utf-8")), (
        "the served OpenAPI spec differs from docs/openapi.json: review the change, then "
        "`chunkforge serve INDEX` and `curl -s http://127.0.0.1:8000/openapi.json > docs/openapi.json`"
    )
    assert set(served["paths"]) == {"/query", "/search", "/expand", "/health", "/stats"}


@pytest.fixture(scope="module")
def api_schema(server):
    return schemathesis.openapi.from_url(server + "/openapi.json")


# each operation with valid requests, and those that take a body with invalid ones too
OPERATIONS = [
    (path, method, mode)
    for path, methods in json.loads(SPEC.read_text(encoding="utf-8"))["paths"].items()
    for method, spec in methods.items()
    for mode in schemathesis.GenerationMode
    if mode is schemathesis.GenerationMode.POSITIVE or "requestBody" in spec
]


@pytest.mark.parametrize(("path", "method", "mode"), OPERATIONS, ids=lambda v: getattr(v, "value", v))
def test_api_contract(api_schema, server, path, method, mode):
    """Generated requests of each operation, valid and not: never a 5xx, and the status
    codes, content types and bodies the spec declares. Schema-valid requests the index
    rejects (a leaf not in it, a filter it does not take) are 422s the spec cannot tell
    in advance, so that one check is left out."""
    from schemathesis.checks import positive_data_acceptance

    @given(case=api_schema[path][method].as_strategy(mode))
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def check(case):
        case.call_and_validate(base_url=server, excluded_checks=[positive_data_acceptance])

    check()


# the framework retrievers, served and in process ----------------------------------------------

RETRIEVED = {"k": 8, "expansion": {"budget_tokens": 300, "window": 1}}


def expected_passages(index: Index, question: str) -> list[tuple[str, dict]]:
    payload = index.query(question, k=RETRIEVED["k"], **RETRIEVED["expansion"])
    return [
        (p.text, {"doc_id": p.doc_id, "start": p.start, "end": p.end, "token_count": p.token_count})
        for p in payload.passages
    ]


def spans(texts_and_meta) -> list[tuple[str, dict]]:
    keys = ("doc_id", "start", "end", "token_count")
    return [(text, {k: meta[k] for k in keys}) for text, meta in texts_and_meta]


@pytest.mark.parametrize("where", ["served", "in process"])
def test_langchain_retriever(index, server, saved, where):
    pytest.importorskip("langchain_core")
    from langchain_core.retrievers import BaseRetriever

    from chunkforge.integrations.langchain import ChunkforgeRetriever

    retriever = ChunkforgeRetriever(index=server if where == "served" else index, **RETRIEVED)
    assert isinstance(retriever, BaseRetriever)
    for question in QUESTIONS[:2]:
        docs = retriever.invoke(question)
        assert spans((d.page_content, d.metadata) for d in docs) == expected_passages(index, question)
        for d in docs:
            assert index.document(d.metadata["doc_id"])[d.metadata["start"] : d.metadata["end"]] == d.page_content
            assert d.metadata["hit_ids"] and d.metadata["heading_path"] is not None
            assert d.metadata.get("version") == ((saved / "CURRENT").read_text().strip() if where == "served" else None)


@pytest.mark.parametrize("where", ["served", "in process"])
def test_llamaindex_retriever(index, server, where):
    pytest.importorskip("llama_index.core")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode

    from chunkforge.integrations.llamaindex import ChunkforgeRetriever

    retriever = ChunkforgeRetriever(server if where == "served" else index, **RETRIEVED)
    assert isinstance(retriever, BaseRetriever)
    question = QUESTIONS[0]
    found = retriever.retrieve(question)
    nodes = [n.node for n in found]
    assert spans((n.get_content(), n.metadata) for n in nodes) == expected_passages(index, question)
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [
        (n.metadata["start"], n.metadata["end"]) for n in nodes
    ]
    assert [n.score for n in found] == [n.metadata["score"] for n in nodes]
    assert nodes[0].get_content(metadata_mode=MetadataMode.LLM) == nodes[0].get_content()


@pytest.mark.parametrize("where", ["served", "in process"])
def test_haystack_retriever_in_a_pipeline(index, server, where):
    pytest.importorskip("haystack")
    from haystack import Pipeline

    from chunkforge.integrations.haystack import ChunkforgeRetriever

    pipeline = Pipeline()
    pipeline.add_component("retriever", ChunkforgeRetriever(server if where == "served" else index, **RETRIEVED))
    question = QUESTIONS[1]
    docs = pipeline.run({"retriever": {"query": question}})["retriever"]["documents"]
    assert spans((d.content, d.meta) for d in docs) == expected_passages(index, question)
    assert [d.score for d in docs] == [d.meta["score"] for d in docs]
    fewer = pipeline.run({"retriever": {"query": question, "k": 1}})["retriever"]["documents"]
    one = index.query(question, k=1, **RETRIEVED["expansion"]).passages
    assert [(d.meta["doc_id"], d.meta["start"], d.meta["end"]) for d in fewer] == [
        (p.doc_id, p.start, p.end) for p in one
    ]


def test_client_errors_name_the_status_and_field(server):
    from chunkforge.serve import ServiceClient, ServiceError

    client = ServiceClient(server)
    with pytest.raises(ServiceError) as caught:
        client.query("x", k=0)
    assert caught.value.status == 422 and "'k'" in str(caught.value)
    assert [h.leaf for h in client.search("license", k=3)] and client.query("license").version.startswith("v-")
    client.close()


def test_a_store_is_served_with_where_and_switches_at_each_commit(encoder, tmp_path):
    """``chunkforge serve STORE``: answers as the StoreIndex in process, ``where`` pushed down,
    and a new commit of the store (an update by the bulk job) is the next version served."""
    pytest.importorskip("lancedb")
    from chunkforge import bulk
    from chunkforge.index.store import write_store

    docs = [{**d, "acl": "staff" if i % 2 else "public"} for i, d in enumerate(small_docs(4))]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in docs[:3]), encoding="utf-8")
    bulk.run([source], tmp_path / "vectors", encoder=encoder, units="tree")
    write_store(tmp_path / "vectors", tmp_path / "store")
    process, url = start_server(tmp_path / "store", "--reload-interval", "0.2")
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            store = Index.open(tmp_path / "store", encoder)
            for question in QUESTIONS[:2]:
                answer = client.post("/query", json={"question": question, "budget_tokens": 400}).json()
                assert answer["version"] == "commit-000001"
                expected = store.query(question, budget_tokens=400)
                # leaf labels are each process's own (documents are read on demand): compared by span
                assert [
                    (p["doc_id"], p["start"], p["end"], p["text"], [(h["start"], h["end"]) for h in p["hits"]])
                    for p in answer["passages"]
                ] == [(p.doc_id, p.start, p.end, p.text, [(h.start, h.end) for h in p.hits]) for p in expected.passages]
                assert answer["metadata"] == {d: dict(m) for d, m in expected.metadata.items()}
            staff = client.post("/query", json={"question": "license", "where": {"acl": "staff"}}).json()
            assert staff["passages"] and {p["doc_id"] for p in staff["passages"]} <= {docs[1]["id"]}
            assert staff["metadata"][docs[1]["id"]]["acl"] == "staff"
            source.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
            bulk.run([source], tmp_path / "vectors", encoder=encoder, units="tree")
            write_store(tmp_path / "vectors", tmp_path / "store")
            deadline = time.monotonic() + 60
            while client.get("/health").json()["version"] != "commit-000002" and time.monotonic() < deadline:
                time.sleep(0.2)
            stats = client.get("/stats").json()
            assert stats["version"] == "commit-000002" and stats["documents"] == 4 and stats["reloads"] == 1
            staff = client.post("/query", json={"question": "license", "where": {"acl": "staff"}}).json()
            assert staff["passages"] and {p["doc_id"] for p in staff["passages"]} <= {docs[1]["id"], docs[3]["id"]}
    finally:
        stop(process)
