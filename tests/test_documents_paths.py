"""Real documents through every path (issue 40): a folder of HTML, PDF and DOCX files through
``embed-docs --index --lancedb``, ``query`` (passages citing their section and, for PDFs, their
pages), ``Index.build`` of the same documents (the same passages), ``chunk`` (each chunk with
its citation) and ``serve`` (citations in the answer). Real files, encoder, LanceDB, server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("hnswlib")
pytest.importorskip("lancedb")
pytest.importorskip("selectolax")
pytest.importorskip("pypdfium2")
pytest.importorskip("docx")

from chunkforge.cli import main  # noqa: E402
from chunkforge.index import Index  # noqa: E402
from chunkforge.readers import read_file  # noqa: E402

DATA = Path(__file__).parent / "data" / "documents"
FILES = ("report.pdf", "outline.pdf", "report.docx", "page.html")
QUESTIONS = ["revenue by region", "how do I create the bond?", "configuration options"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("documents") / "docs"
    root.mkdir()
    for name in FILES:
        shutil.copy(DATA / name, root / name)
    return root


@pytest.fixture(scope="module")
def job(folder, model_cache) -> dict[str, Path]:
    out = folder.parent
    code = main(["embed-docs", str(folder), "--out", str(out / "vectors"), "--index", "--lancedb", str(out / "store")])
    assert code == 0
    return {"vectors": out / "vectors", "store": out / "store"}


def passages_of(capsys, *args: str) -> list[dict]:
    capsys.readouterr()
    assert main(["query", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["passages"]


def test_query_cites_sections_and_pages_and_equals_index_build(job, folder, capsys):
    """The store and the dataset answer with passages that carry their heading path and, from a
    PDF, their pages; the same documents through ``Index.build`` give the same passages."""
    from chunkforge.encoder import Encoder

    records = [
        {"id": str(folder / name), "text": (d := read_file(folder / name)).text, **d.metadata()} for name in FILES
    ]
    built = Index.build(records, Encoder.default())
    for question in QUESTIONS:
        served = [passages_of(capsys, str(job[kind]), question) for kind in ("store", "vectors")]
        expected = built.query(question)
        spans = [(p.doc_id, p.start, p.end) for p in expected.passages]
        for answer in served:
            assert [(p["doc_id"], p["start"], p["end"]) for p in answer] == spans
            assert any(p["heading_path"] for p in answer)  # text before a document's first heading has none
            for p in answer:
                if p["doc_id"].endswith(".pdf"):
                    assert p["citation"]["format"] == "pdf" and p["citation"]["pages"]
                    assert expected.citation(
                        next(e for e in expected.passages if e.start == p["start"] and e.doc_id == p["doc_id"])
                    ).pages
    capsys.readouterr()
    assert main(["query", str(job["store"]), "revenue by region"]) == 0
    rendered = capsys.readouterr().out
    assert "report.pdf:" in rendered and " p. " in rendered and "(Quarterly Report > Revenue by region)" in rendered


def test_chunks_carry_their_citation_not_the_documents_provenance(folder, tmp_path):
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", str(folder), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all("provenance" not in r for r in rows)
    by_format = {r["format"]: r for r in rows}
    assert set(by_format) == {"pdf", "docx", "html"}
    assert by_format["pdf"]["citation"]["pages"] and by_format["html"]["citation"]["source"]
    assert by_format["docx"]["citation"]["items"]
    text = {name: read_file(folder / name).text for name in FILES}
    for r in rows:
        assert text[Path(r["doc_id"]).name][r["start"] : r["end"]] == r["text"]
        if r["format"] == "html":  # the source range holds the chunk's words
            source = (folder / Path(r["doc_id"]).name).read_text(encoding="utf-8")
            s, e = r["citation"]["source"][0]
            assert source[s:e].split()[0].strip("<>") in r["text"] or "<" in source[s:e]


def test_main_content_leaves_navigation_out(folder, tmp_path):
    out, main_only = tmp_path / "all.jsonl", tmp_path / "main.jsonl"
    html = str(folder / "page.html")
    assert main(["chunk", html, "--out", str(out)]) == 0
    assert main(["chunk", html, "--out", str(main_only), "--main-content"]) == 0
    everything = " ".join(json.loads(line)["text"] for line in out.read_text().splitlines())
    content = " ".join(json.loads(line)["text"] for line in main_only.read_text().splitlines())
    assert "Home | Docs" in everything and "Home | Docs" not in content
    assert "Bonding joins two interfaces" in content


def test_served_passages_cite_their_pages(job):
    pytest.importorskip("uvicorn")
    import httpx

    from conftest import start_server, stop

    process, url = start_server(job["store"], "--reload-interval", "0")
    try:
        answer = httpx.post(url + "/query", json={"question": "revenue by region"}, timeout=60).json()
        pdf = [p for p in answer["passages"] if p["doc_id"].endswith("report.pdf")]
        assert pdf and all(p["citation"]["pages"] for p in pdf)
        assert all("provenance" not in m for m in answer["metadata"].values())
    finally:
        stop(process)
