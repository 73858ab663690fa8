"""Issue 40, item 6: reading speed beside the peers a user would otherwise pick, on the same
real files: HTML manuals (documents/s, MB/s) and PDFs (pages/s) of Debian's documentation
packages (``benches/documents/files.tsv``, fetched by ``benches/documents/fetch.sh``).

Each side reads every file of its format in a process of its own (imports and one warm-up
file outside the timing), the sides in turn, each round in a rotated order; the host is
noisy, so the table gives the best (min) and median of the rounds' wall times, the
median's CPU seconds, and chunkforge's speed over each peer's from the medians. Each side
also says what structure its output keeps (headings and tables it found). A peer that
cannot install or run here is reported with the error it raised.

HTML: ``chunkforge.readers.read_file`` (Markdown: headings, pipe tables, lists, code), with
and without ``main_content``; Unstructured ``partition_html``; LangChain
``HTMLHeaderTextSplitter`` (h1-h3); trafilatura ``extract`` (Markdown, tables and
formatting kept); Docling's HTML backend (``HTMLDocumentBackend`` to a ``DoclingDocument``
and its Markdown). PDF: ``read_file``; Unstructured ``partition_pdf`` (``strategy="fast"``);
LangChain ``PyPDFLoader``; pdfplumber ``extract_text``; Docling's PDF parser without
models (``docling_parse``: each page's text lines).

    bash benches/documents/fetch.sh
    python benches/documents_bench.py --rounds 3 --out benches/results/documents-speed.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "documents" / "data"
FILES = HERE / "documents" / "files.tsv"

# -- the sides: each returns (headings, tables) its output keeps -------------------


def cf_html(path: Path, main_content: bool = False) -> tuple[int, int]:
    from chunkforge.readers import read_file

    doc = read_file(path, main_content=main_content)
    return sum(b.kind == "heading" for b in doc.blocks), sum(b.kind == "table" for b in doc.blocks)


def cf_html_main(path: Path) -> tuple[int, int]:
    return cf_html(path, main_content=True)


def unstructured_html(path: Path) -> tuple[int, int]:
    from unstructured.partition.html import partition_html

    els = partition_html(filename=str(path))
    return sum(e.category == "Title" for e in els), sum(e.category == "Table" for e in els)


def langchain_html(path: Path) -> tuple[int, int]:
    from langchain_text_splitters import HTMLHeaderTextSplitter

    splitter = HTMLHeaderTextSplitter([("h1", "h1"), ("h2", "h2"), ("h3", "h3")])
    docs = splitter.split_text(path.read_text(encoding="utf-8", errors="replace"))
    headings = {tuple(sorted(d.metadata.items())) for d in docs if d.metadata}
    return len(headings), 0


def trafilatura_html(path: Path) -> tuple[int, int]:
    import trafilatura

    text = trafilatura.extract(
        path.read_text(encoding="utf-8", errors="replace"),
        output_format="markdown",
        include_tables=True,
        include_formatting=True,
    )
    lines = (text or "").splitlines()
    return sum(line.startswith("#") for line in lines), sum(
        line.startswith("|---") or line.startswith("| ---") for line in lines
    )


def docling_html(path: Path) -> tuple[int, int]:
    from docling.backend.html_backend import HTMLDocumentBackend
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    source = InputDocument(path_or_stream=path, format=InputFormat.HTML, backend=HTMLDocumentBackend)
    doc = source._backend.convert()
    doc.export_to_markdown()
    headings = sum(getattr(t.label, "value", "") in ("section_header", "title") for t in doc.texts)
    return headings, len(doc.tables)


def cf_pdf(path: Path) -> tuple[int, int]:
    return cf_html(path)


def unstructured_pdf(path: Path) -> tuple[int, int]:
    from unstructured.partition.pdf import partition_pdf

    els = partition_pdf(filename=str(path), strategy="fast")
    return sum(e.category == "Title" for e in els), sum(e.category == "Table" for e in els)


def langchain_pdf(path: Path) -> tuple[int, int]:
    from langchain_community.document_loaders import PyPDFLoader

    PyPDFLoader(str(path)).load()
    return 0, 0


def pdfplumber_pdf(path: Path) -> tuple[int, int]:
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        for page in pdf.pages:
            page.extract_text()
            page.close()
    return 0, 0


def docling_parse_pdf(path: Path) -> tuple[int, int]:
    from docling_core.types.doc.page import TextCellUnit
    from docling_parse.pdf_parser import DoclingPdfParser

    doc = DoclingPdfParser(loglevel="fatal").load(path_or_stream=str(path))
    for _, page in doc.iterate_pages():
        "\n".join(c.text for c in page.iterate_cells(unit_type=TextCellUnit.LINE))
    doc.unload()
    return 0, 0


SIDES: dict[str, tuple[str, str, Callable[[Path], tuple[int, int]]]] = {
    "chunkforge read_file": ("html", "chunkforge", cf_html),
    "chunkforge read_file, main_content": ("html", "chunkforge", cf_html_main),
    "Unstructured partition_html": ("html", "unstructured", unstructured_html),
    "LangChain HTMLHeaderTextSplitter": ("html", "langchain-text-splitters", langchain_html),
    "trafilatura extract (Markdown)": ("html", "trafilatura", trafilatura_html),
    "Docling HTML backend": ("html", "docling-slim", docling_html),
    "chunkforge read_file (PDF)": ("pdf", "chunkforge", cf_pdf),
    "Unstructured partition_pdf, fast": ("pdf", "unstructured", unstructured_pdf),
    "LangChain PyPDFLoader": ("pdf", "langchain-community", langchain_pdf),
    "pdfplumber extract_text": ("pdf", "pdfplumber", pdfplumber_pdf),
    "Docling's PDF parser (docling-parse, no models)": ("pdf", "docling-parse", docling_parse_pdf),
}
"""name: (format, package, function)."""

WHY = {
    "en_core_web_sm": "Unstructured classifies elements with spaCy's `en_core_web_sm`, which it downloads from "
    "GitHub at first use (no pip package of it is installed with Unstructured); a host without that download "
    "cannot run it.",
    "unstructured_inference": '`partition_pdf` imports `unstructured_inference` even for `strategy="fast"`: '
    "Unstructured's `[pdf]` extra, whose install pulls PyTorch with its CUDA wheels, torchvision, timm and "
    'OpenCV (pip\'s plan, `pip install --dry-run "unstructured[pdf]"`), left out here; and the element '
    "classification would then need the spaCy model above.",
}
"""Why a peer's error means it cannot run here (a substring of the error: the explanation)."""


def version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v

    try:
        return v(package)
    except PackageNotFoundError:
        return "not installed"


# -- the worker: one side over its files, in its own process -----------------------


def worker(side: str, files: list[str]) -> None:
    fn = SIDES[side][2]
    paths = [Path(f) for f in files]
    out: dict = {}
    try:
        fn(min(paths, key=lambda p: p.stat().st_size))  # imports and lazy set-up
        headings = tables = 0
        c0, t0 = time.process_time(), time.perf_counter()
        for p in paths:
            h, t = fn(p)
            headings, tables = headings + h, tables + t
        out = {
            "wall": time.perf_counter() - t0,
            "cpu": time.process_time() - c0,
            "headings": headings,
            "tables": tables,
        }
    except Exception as exc:  # a peer that cannot run here: its reason
        out = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
    print(json.dumps(out))


def run_side(side: str, files: list[str], timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--worker", side, *files]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"took over {timeout:.0f} s for the set"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:300]}"}
    result: dict = json.loads(lines[-1])
    return result


# -- the inputs --------------------------------------------------------------------


def inputs(data: Path, limit: int | None) -> dict[str, list[Path]]:
    sets: dict[str, list[Path]] = {"html": [], "pdf": []}
    for line in FILES.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        kind, package, path, _ = line.split("\t")
        if kind.startswith("speed-"):
            f = data / package / path.removeprefix("/usr/share/")
            if not f.exists():
                raise SystemExit(f"{f} is missing: run bash benches/documents/fetch.sh")
            sets[kind.removeprefix("speed-")].append(f)
    return {k: v[:limit] if limit else v for k, v in sets.items()}


def pdf_pages(paths: list[Path]) -> int:
    import pypdfium2

    total = 0
    for p in paths:
        pdf = pypdfium2.PdfDocument(str(p))
        total += len(pdf)
        pdf.close()
    return total


def head(scope: str = "python/chunkforge/readers") -> str:
    """The repository's commit, and whether the working tree differs from it under ``scope``."""
    root = HERE.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", scope], capture_output=True, text=True, cwd=root)
    except OSError:
        return "an unknown commit"
    return sha.stdout.strip() + (f" (with uncommitted changes under {scope}/)" if dirty.stdout.strip() else "")


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    name = fields.get("Model name", "unknown").strip()
    flags = fields.get("Flags", "")
    extra = ", AVX512_BF16" if "avx512_bf16" in flags else (", AVX2" if "avx2" in flags else "")
    return f"{name} ({os.cpu_count()} cores{extra})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, default=DATA, help="where fetch.sh put the documents")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, help="only the first N files of each format (a quick look)")
    parser.add_argument("--only", action="append", help="only sides whose name holds this (repeatable)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one side may take for its set")
    parser.add_argument("--out", help="write the Markdown report here")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.files)
        return
    sets = inputs(args.data, args.limit)
    sides = [s for s in SIDES if not args.only or any(o in s for o in args.only)]
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    load = []
    args.head = head()
    for r in range(args.rounds):
        order = sides[r % len(sides) :] + sides[: r % len(sides)]
        for side in order:
            if runs[side] and "error" in runs[side][-1]:
                continue
            load.append(os.getloadavg()[0])
            res = run_side(side, [str(p) for p in sets[SIDES[side][0]]], args.timeout)
            runs[side].append(res)
            print(f"round {r + 1} {side}: {res}", file=sys.stderr)
    report(args, sets, sides, runs, load)


def report(args: argparse.Namespace, sets: dict[str, list[Path]], sides: list[str], runs: dict, load: list) -> None:
    size = {k: sum(p.stat().st_size for p in v) for k, v in sets.items()}
    pages = pdf_pages(sets["pdf"])
    lines = [
        "<!-- Written by benches/documents_bench.py (issue 40, item 6). -->",
        "# Reading documents: chunkforge's readers beside the peers",
        "",
        f"{cpu_name()}, other jobs running (1-minute load {min(load):.1f} to {max(load):.1f} during the run); "
        f"{args.rounds} rounds, each side in its own process, the sides in rotated order; read the ratios. "
        f"chunkforge at {args.head}"
        + ("" if head() == args.head else f" (at {head()} by the end)")
        + ". Throughput counts the files read; imports and one warm-up file per process "
        "are outside the timing.",
        "",
        "    bash benches/documents/fetch.sh",
        "    " + ("python benches/documents_bench.py " + " ".join(sys.argv[1:])).rstrip(),
        "",
    ]
    for fmt in ("html", "pdf"):
        n, mb = len(sets[fmt]), size[fmt] / 1e6
        unit = "documents" if fmt == "html" else "pages"
        count = n if fmt == "html" else pages
        what = f"{n} HTML files, {mb:.1f} MB" if fmt == "html" else f"{n} PDFs, {pages} pages, {mb:.1f} MB"
        lines += [f"## {fmt.upper()}: {what}", ""]
        header = f"| reader | version | {unit}/s best | {unit}/s median | MB/s median | CPU s (median round) "
        header += "| chunkforge's speed over it (medians) | headings, tables kept |"
        lines += [header, "|---|---|---:|---:|---:|---:|---:|---|"]
        ours = next((s for s in sides if SIDES[s][0] == fmt and SIDES[s][1] == "chunkforge"), None)
        ours_t = None
        if ours and runs[ours] and "error" not in runs[ours][0]:
            ours_t = statistics.median(r["wall"] for r in runs[ours])
        notes = []
        for side in sides:
            f, package, _ = SIDES[side]
            if f != fmt:
                continue
            rs = runs[side]
            if not rs or "error" in rs[-1]:
                why = next((w for key, w in WHY.items() if key in rs[-1]["error"]), "")
                notes.append(
                    f"- **{side}** ({package} {version(package)}) could not run here: `{rs[-1]['error']}` {why}".rstrip()
                )
                lines.append(f"| {side} | {version(package)} | - | - | - | - | - | could not run (below) |")
                continue
            walls = sorted(r["wall"] for r in rs)
            med = statistics.median(walls)
            cpu = statistics.median(r["cpu"] for r in rs)
            ratio = (
                "1.00x" if side == ours else ("-" if package == "chunkforge" or not ours_t else f"{med / ours_t:.2f}x")
            )
            kept = f"{rs[0]['headings']}, {rs[0]['tables']}"
            lines.append(
                f"| {side} | {version(package)} | {count / walls[0]:.1f} | {count / med:.1f} | {mb / med:.2f} "
                f"| {cpu:.1f} | {ratio} | {kept} |"
            )
        lines += ["", *notes, ""] if notes else [""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
