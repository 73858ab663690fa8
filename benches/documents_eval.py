"""Issue 40, item 7: does the structure pay? The structure-aware readers
(``chunkforge.readers.read_file``: Markdown with headings, pipe tables, lists and code,
indexed with ``syntax="markdown"``) against the flat text a plain extractor gives, on
real HTML, PDF and DOCX documents of Debian's documentation packages
(``benches/devset-documents``: the documents are fetched by ``benches/documents/fetch.sh``).

Flat text, one plain extractor a format:

- HTML: selectolax's visible text of ``<body>`` (``script``, ``style``, ``noscript`` and
  ``template`` removed; ``body.text(separator="\\n", strip=True)``: one line a text node);
- PDF: pypdfium2's text of each page (``get_text_range``), pages joined by a blank line;
- DOCX: python-docx's body paragraphs and table cells in document order, one a line
  (a table's cells row by row: a plain extractor that drops nothing).

Both sides go through the same chunker and retrieval: ``Index.build(records)`` with the
default encoder and the library's defaults, ``index.query(question, budget_tokens=B)`` for
B in 500 and 1,000. Each question's evidence is an exact quote, found on each side's text
at evaluation time (runs of whitespace and table pipes match any run of them), so no side's
offsets are the labels. Per question: evidence-token recall and IoU
(``chunkforge.eval.score``, tokens of each side's document tokenized once); per format and
per slice (``table``, ``heading``, ``list``, ``prose``) the means and the paired
difference with its 95% bootstrap CI (``retrieval_lab.bootstrap``).

    bash benches/documents/fetch.sh
    python benches/documents_eval.py --out benches/results/documents-structure.md

``--dump DIR`` writes each side's text of every document (for writing questions).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from documents_bench import head  # noqa: E402

HERE = Path(__file__).parent
DEVSET = HERE / "devset-documents"
DATA = HERE / "documents" / "data"
BUDGETS = (500, 1000)
SLICES = ("table", "heading", "list", "prose")
FORMATS = ("html", "pdf", "docx")


# -- the flat side ---------------------------------------------------------


def flat_html(path: Path) -> str:
    """The visible text of ``<body>``: one line a text node (selectolax)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_bytes().decode("utf-8", "replace"))
    tree.strip_tags(["script", "style", "noscript", "template"])
    body = tree.body
    return body.text(separator="\n", strip=True) if body is not None else ""


def flat_pdf(path: Path) -> str:
    """Each page's text (pypdfium2), pages joined by a blank line."""
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        pages = [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()
    return "\n\n".join(p.replace("\r\n", "\n").replace("\r", "\n") for p in pages)


def flat_docx(path: Path) -> str:
    """Body paragraphs and table cells in document order, one a line (python-docx)."""
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(str(path))
    lines: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            lines.append(item.text)
        elif isinstance(item, Table):
            for row in item.rows:
                seen: list[object] = []
                for cell in row.cells:
                    if any(cell._tc is s for s in seen):  # a merged cell repeats
                        continue
                    seen.append(cell._tc)
                    lines.append(cell.text)
    return "\n".join(lines)


FLAT = {"html": flat_html, "pdf": flat_pdf, "docx": flat_docx}


# -- the dev set -----------------------------------------------------------


def load_documents(data: Path) -> list[dict]:
    """``documents.jsonl``'s records, each with its file under ``data``."""
    rows = [json.loads(line) for line in (DEVSET / "documents.jsonl").read_text(encoding="utf-8").splitlines() if line]
    for r in rows:
        r["file"] = data / r["package"] / r["path"]
        if not r["file"].exists():
            raise SystemExit(f"{r['file']} is missing: run bash benches/documents/fetch.sh")
    return rows


def load_questions() -> list[dict]:
    return [json.loads(line) for line in (DEVSET / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line]


def locate(text: str, quote: str) -> list[tuple[int, int]]:
    """Every place ``quote`` occurs in ``text``, its words and punctuation in order with any
    run of whitespace and table pipes between them (none needed between a word and the
    punctuation or underscore beside it): a table row quoted as its cells matches a pipe-table row and
    cells one a line alike, and a sentence matches a flat text that broke it at inline
    markup (``UTC`` then ``.`` on the next line)."""
    tokens = re.findall(r"[^\W_]+|[^\s|]", quote)
    pattern = r"[\s|]*".join(map(re.escape, tokens))
    return [m.span() for m in re.finditer(pattern, text)]


def side_texts(docs: list[dict]) -> dict[str, dict[str, str]]:
    """``{"structure": {name: text}, "flat": {name: text}}`` and each side's read time."""
    from chunkforge.readers import read_file

    out: dict[str, dict[str, str]] = {"structure": {}, "flat": {}}
    for d in docs:
        out["structure"][d["name"]] = read_file(d["file"]).text
        out["flat"][d["name"]] = FLAT[d["format"]](d["file"])
    return out


def dump(docs: list[dict], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for side, texts in side_texts(docs).items():
        for name, text in texts.items():
            (folder / f"{name}.{side}.txt").write_text(text, encoding="utf-8")


def check(docs: list[dict], questions: list[dict]) -> int:
    """Every quote once on each side; prints the ones that are not."""
    texts = side_texts(docs)
    bad = 0
    for q in questions:
        for ev in q["evidence"]:
            for side, by in texts.items():
                n = len(locate(by[ev["doc"]], ev["quote"]))
                if n != 1:
                    bad += 1
                    print(f"{q['id']} {side} {ev['doc']}: found {n} times: {ev['quote']!r}")
    return bad


# -- the evaluation --------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="where fetch.sh put the documents")
    parser.add_argument("--out", help="write the Markdown report here")
    parser.add_argument("--dump", type=Path, help="write each side's text of every document here, then stop")
    parser.add_argument("--check", action="store_true", help="check every quote resolves once on each side, then stop")
    parser.add_argument(
        "--save-recalls", help="write each side's per-question recall here (npz; retrieval_ab.py reads it)"
    )
    args = parser.parse_args()
    docs = load_documents(args.data)
    questions = load_questions()
    if args.dump:
        dump(docs, args.dump)
        return
    if args.check:
        bad = check(docs, questions)
        print(f"{len(questions)} questions, {bad} quotes not found exactly once")
        sys.exit(1 if bad else 0)
    evaluate(docs, questions, args)


def records_of(docs: list[dict]) -> tuple[dict[str, list[dict]], dict[str, float]]:
    """Each side's ``Index.build`` records and the seconds its reading took. Structure: the
    reader's text and metadata (``syntax="markdown"``, format, title, provenance), as
    ``chunkforge index build`` reads a file; flat: the extractor's text, its format, no title."""
    from chunkforge.readers import read_file

    records: dict[str, list[dict]] = {"structure": [], "flat": []}
    seconds = {"structure": 0.0, "flat": 0.0}
    for d in docs:
        t0 = time.perf_counter()
        read = read_file(d["file"])
        rec = {"id": d["name"], "text": read.text, **read.metadata()}
        seconds["structure"] += time.perf_counter() - t0
        records["structure"].append(rec)
        t0 = time.perf_counter()
        flat = FLAT[d["format"]](d["file"])
        seconds["flat"] += time.perf_counter() - t0
        records["flat"].append({"id": d["name"], "text": flat, "format": d["format"]})
    return records, seconds


def evaluate(docs: list[dict], questions: list[dict], args: argparse.Namespace) -> None:
    from chunkforge.encoder import Encoder
    from chunkforge.eval import Document, Query, Span, SpanMeasure, score
    from chunkforge.index import Index

    encoder = Encoder.default()
    records, read_s = records_of(docs)
    results: dict[str, dict[str, dict[int, np.ndarray]]] = {}
    info: dict[str, str] = {}
    for side, recs in records.items():
        texts = {r["id"]: r["text"] for r in recs}
        queries = []
        for q in questions:
            refs = []
            for ev in q["evidence"]:
                found = locate(texts[ev["doc"]], ev["quote"])
                if len(found) != 1:
                    raise SystemExit(f"{q['id']}: {side} text of {ev['doc']}: quote found {len(found)} times")
                refs.append(Span(ev["doc"], *found[0]))
            queries.append(Query(q["id"], q["query"], tuple(refs)))
        t0 = time.perf_counter()
        index = Index.build(recs, encoder)
        info[side] = f"`{index!r}`, built in {time.perf_counter() - t0:.0f} s"
        measure = SpanMeasure([Document(r["id"], r["text"]) for r in recs], tokenizer=encoder.tokenizer)
        results[side] = {"recall": {}, "iou": {}}
        for b in BUDGETS:
            payloads = [index.query(q["query"], budget_tokens=b) for q in questions]
            s = score(queries, [[Span(p.doc_id, p.start, p.end) for p in pl.passages] for pl in payloads], measure)
            results[side]["recall"][b], results[side]["iou"][b] = s.recall, s.iou
    if args.save_recalls:
        np.savez(args.save_recalls, **{f"{side} @{b}": r["recall"][b] for side, r in results.items() for b in BUDGETS})
    fmt = np.array([q["format"] for q in questions])
    has = {s: np.array([s in q["slices"] for q in questions]) for s in SLICES}
    slices = [("all", np.ones(len(questions), bool))] + [(f, fmt == f) for f in FORMATS]
    slices += [(s, has[s]) for s in SLICES] + [(f"{f} {s}", (fmt == f) & has[s]) for f in FORMATS for s in SLICES]
    report(docs, questions, results, slices, info, read_s, args.out)


def report(
    docs: list[dict],
    questions: list[dict],
    results: dict[str, dict[str, dict[int, np.ndarray]]],
    slices: list[tuple[str, np.ndarray]],
    info: dict[str, str],
    read_s: dict[str, float],
    out: str | None,
) -> None:
    from retrieval_lab import bootstrap

    def ci(a: np.ndarray, b: np.ndarray) -> str:
        if len(a) < 2:
            return "-"
        d, lo, hi = bootstrap(a, b)
        return f"{d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]"

    lines = []
    for metric, label in (("recall", "Evidence-token recall"), ("iou", "IoU")):
        lines += [
            f"## {label} (%)",
            "",
            "| slice | n | "
            + " | ".join(f"structure @{b} | flat @{b} | structure minus flat [95% CI] @{b}" for b in BUDGETS)
            + " |",
            "|---|---:" + "|---:|---:|---" * len(BUDGETS) + "|",
        ]
        for name, m in slices:
            if m.sum() == 0:
                continue
            cells = []
            for b in BUDGETS:
                a, c = results["structure"][metric][b][m], results["flat"][metric][b][m]
                cells += [f"{np.nanmean(a) * 100:.1f}", f"{np.nanmean(c) * 100:.1f}", ci(a, c)]
            lines.append(f"| {name} | {int(m.sum())} | " + " | ".join(cells) + " |")
        lines.append("")
    rec = results["structure"]["recall"], results["flat"]["recall"]
    differ = [i for i in range(len(questions)) if any(abs(rec[0][b][i] - rec[1][b][i]) > 1e-9 for b in BUDGETS)]
    lines += [
        "## The questions where the sides differ (recall %, structure / flat)",
        "",
        "| question | slices | " + " | ".join(f"@{b}" for b in BUDGETS) + " | query |",
        "|---|---|" + "---:|" * len(BUDGETS) + "---|",
    ]
    for i in differ:
        q = questions[i]
        cells = [f"{rec[0][b][i] * 100:.0f} / {rec[1][b][i] * 100:.0f}" for b in BUDGETS]
        lines.append(f"| {q['id']} | {', '.join(q['slices'])} | " + " | ".join(cells) + f" | {q['query']} |")
    labelled = [d for d in docs if not d.get("distractor")]
    text = "\n".join(
        [
            "<!-- Written by benches/documents_eval.py (issue 40, item 7). -->",
            "# Does the structure pay? Structure-aware readers against flat text",
            "",
            f"`benches/devset-documents`: {len(questions)} questions on {len(labelled)} labelled documents, in one "
            f"index with {len(docs) - len(labelled)} unlabelled ones from the same manuals ({len(docs)} in all: "
            + ", ".join(f"{sum(d['format'] == f for d in docs)} {f.upper()}" for f in FORMATS)
            + "). Each side: `Index.build(records)` with the default encoder and the library's defaults, "
            "`index.query(question, budget_tokens=B)`; the metrics are `chunkforge.eval.score`'s, in tokens of "
            "each side's own text; the CI is the paired bootstrap of `benches/retrieval_lab.py`.",
            "",
            f"chunkforge at {head('python')}.",
            "",
            "    bash benches/documents/fetch.sh",
            "    " + ("python benches/documents_eval.py " + " ".join(sys.argv[1:])).rstrip(),
            "",
            f"- structure (the readers' Markdown, `syntax=\"markdown\"`, the reader's title): {info['structure']}",
            f"- flat (selectolax body text, pypdfium2 page text, python-docx paragraphs and cells; no title): "
            f"{info['flat']}",
            f"- reading all {len(docs)} documents: the readers {read_s['structure']:.1f} s, the flat extractors "
            f"{read_s['flat']:.1f} s",
            "",
            *lines,
        ]
    )
    print(text)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
