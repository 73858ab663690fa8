"""Parse speed of the HTML parsers and PDF libraries considered for chunkforge.readers, beside
chunkforge's own readers (the table in docs/readers.md).

Inputs: Debian documentation packages, extracted into one folder:

    apt-get download debian-faq camlidl-doc
    for f in *.deb; do dpkg-deb -x "$f" x; done
    python3 benches/readers_speed.py x

Needs ``pip install 'chunkforge[documents]' lxml html5lib pypdf pdfplumber``. Best of 5 runs
(HTML) or of 1-3 (PDF), wall time.
"""

from __future__ import annotations

import gzip
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chunkforge.readers import read_bytes


def best(run: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times) * 1e3


def main(root: Path) -> None:
    import html5lib
    import lxml.html
    import pdfplumber
    import pypdf
    import pypdfium2
    from selectolax.lexbor import LexborHTMLParser

    doc = root / "usr" / "share" / "doc"
    pages = sorted([*(doc / "debian" / "FAQ").glob("*.html"), *(doc / "camlidl" / "html").glob("*.html")])
    htmls = [p.read_bytes() for p in pages]
    print(f"HTML: {len(htmls)} files, {sum(map(len, htmls)) / 1e3:.0f} kB")
    print(f"  selectolax (Lexbor) parse  {best(lambda: [LexborHTMLParser(h) for h in htmls]):8.1f} ms")
    print(f"  lxml.html parse            {best(lambda: [lxml.html.document_fromstring(h) for h in htmls]):8.1f} ms")
    print(f"  html5lib parse             {best(lambda: [html5lib.parse(h) for h in htmls], 2):8.1f} ms")
    print(f"  chunkforge HTML reader     {best(lambda: [read_bytes(h, 'x.html') for h in htmls]):8.1f} ms")
    pdfs = {
        "debian-faq.en.pdf": gzip.decompress((doc / "debian" / "FAQ" / "debian-faq.en.pdf.gz").read_bytes()),
        "camlidl-1.04.doc.pdf": (doc / "camlidl" / "camlidl-1.04.doc.pdf").read_bytes(),
    }
    for name, data in pdfs.items():
        print(f"PDF {name}: {len(pypdfium2.PdfDocument(data))} pages, {len(data) / 1e3:.0f} kB")
        for label, run, repeat in _pdf_runs(name, data, pypdfium2, pypdf, pdfplumber):
            print(f"  {label:<26} {best(run, repeat):8.0f} ms")


def _pdf_runs(
    name: str, data: bytes, pypdfium2: Any, pypdf: Any, pdfplumber: Any
) -> list[tuple[str, Callable[[], object], int]]:
    def pdfium_text() -> None:
        for page in pypdfium2.PdfDocument(data):
            page.get_textpage().get_text_range()

    return [
        ("pypdfium2 text only", pdfium_text, 3),
        ("pypdf extract_text", lambda: [p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages], 1),
        ("pdfplumber extract_words", lambda: [p.extract_words() for p in pdfplumber.open(io.BytesIO(data)).pages], 1),
        ("chunkforge PDF reader", lambda: read_bytes(data, name), 1),
    ]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
