"""Makes the generated test documents of this folder (run from the repository root:
``python3 tests/data/documents/make_documents.py``): PDFs with reportlab (BSD), DOCX
with python-docx (MIT). Output is deterministic (reportlab's invariant mode)."""

from __future__ import annotations

from pathlib import Path

from docx import Document
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas
from reportlab.platypus import Table, TableStyle

HERE = Path(__file__).parent
WIDTH, HEIGHT = A4
MARGIN = 72

LOREM = (
    "Retrieval works best when every passage keeps its context. The reader keeps the headings "
    "of each section and the header row of each table, and it drops what repeats on every page."
)


def wrap(
    c: canvas.Canvas, text: str, x: float, y: float, width: float, font: str = "Helvetica", size: float = 10
) -> float:
    """Draws ``text`` wrapped to ``width`` from baseline ``y`` down; returns the next baseline."""
    c.setFont(font, size)
    line = ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if c.stringWidth(trial, font, size) > width and line:
            c.drawString(x, y, line)
            y -= size * 1.3
            line = word
        else:
            line = trial
    if line:
        c.drawString(x, y, line)
        y -= size * 1.3
    return y - size * 0.8


def page_furniture(c: canvas.Canvas, page: int, pages: int) -> None:
    c.setFont("Helvetica", 8)
    c.drawString(MARGIN, HEIGHT - 40, "ACME Corporation - Quarterly Report 2024")
    c.drawRightString(WIDTH - MARGIN, 30, f"Page {page} of {pages}")


def report_pdf(path: Path) -> None:
    """Three pages: headings by type size, a repeated header and footer with page numbers, a
    two-column page, a ruled table with a header row."""
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    c.setTitle("Quarterly Report")
    width = WIDTH - 2 * MARGIN
    # page 1
    page_furniture(c, 1, 3)
    y = HEIGHT - 90
    y = wrap(c, "Quarterly Report", MARGIN, y, width, "Helvetica-Bold", 20)
    y = wrap(c, "Overview", MARGIN, y, width, "Helvetica-Bold", 14)
    for n in range(3):
        y = wrap(c, f"Paragraph {n + 1} of the overview. {LOREM}", MARGIN, y, width)
    y = wrap(c, "Revenue by region", MARGIN, y, width, "Helvetica-Bold", 14)
    y = wrap(c, "Table 1: Revenue by region, in millions.", MARGIN, y, width, "Helvetica-Oblique", 9)
    rows = [["Region", "Q1", "Q2", "Q3"]] + [
        [r, str(10 + i), str(12 + i), str(15 + i)] for i, r in enumerate(["North", "South", "East", "West", "Central"])
    ]
    table = Table(rows, colWidths=[120, 80, 80, 80])
    table.setStyle(
        TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")])
    )
    _, h = table.wrapOn(c, width, y)
    table.drawOn(c, MARGIN, y - h)
    y = y - h - 24
    y = wrap(c, f"After the table. {LOREM}", MARGIN, y, width)
    c.showPage()
    # page 2: two columns
    page_furniture(c, 2, 3)
    y = HEIGHT - 90
    y = wrap(c, "Two columns", MARGIN, y, width, "Helvetica-Bold", 14)
    col = (width - 24) / 2
    yl = yr = y
    for n in range(4):
        yl = wrap(c, f"Left column paragraph {n + 1}. {LOREM}", MARGIN, yl, col)
        yr = wrap(c, f"Right column paragraph {n + 1}. {LOREM}", MARGIN + col + 24, yr, col)
    c.showPage()
    # page 3
    page_furniture(c, 3, 3)
    y = HEIGHT - 90
    y = wrap(c, "Outlook", MARGIN, y, width, "Helvetica-Bold", 14)
    y = wrap(c, f"The outlook is steady. {LOREM}", MARGIN, y, width)
    y = wrap(c, "Risks", MARGIN, y, width, "Helvetica-Bold", 12)
    y = wrap(c, f"Risks are listed in the annex. {LOREM}", MARGIN, y, width)
    c.showPage()
    c.save()


def outline_pdf(path: Path) -> None:
    """Two pages whose headings are in the PDF outline, in the body's type size."""
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    c.setTitle("Manual")
    width = WIDTH - 2 * MARGIN
    for page, (title, sub) in enumerate((("Installation", "Requirements"), ("Configuration", "Options")), 1):
        y = HEIGHT - 90
        c.bookmarkPage(f"p{page}")
        c.addOutlineEntry(title, f"p{page}", level=0)
        y = wrap(c, title, MARGIN, y, width, "Helvetica", 10)
        y = wrap(c, f"{title} starts here. {LOREM}", MARGIN, y, width)
        c.bookmarkHorizontalAbsolute(f"p{page}s", y)
        c.addOutlineEntry(sub, f"p{page}s", level=1)
        y = wrap(c, sub, MARGIN, y, width, "Helvetica", 10)
        y = wrap(c, f"{sub} are described here. {LOREM}", MARGIN, y, width)
        c.showPage()
    c.save()


def scan_pdf(path: Path) -> None:
    """A page with no text layer: only drawn shapes, as a scan's image would be."""
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    for i in range(20):
        c.rect(MARGIN, HEIGHT - 100 - i * 30, 300, 12, fill=1)
    c.showPage()
    c.save()


def encrypted_pdf(path: Path) -> None:
    c = canvas.Canvas(str(path), pagesize=A4, invariant=1, encrypt="secret")
    c.drawString(MARGIN, HEIGHT - 90, "Secret text.")
    c.showPage()
    c.save()


def report_docx(path: Path) -> None:
    doc = Document()
    doc.core_properties.title = "Quarterly Report"
    doc.add_paragraph("Quarterly Report", style="Title")
    doc.add_heading("Overview", level=1)
    doc.add_paragraph(f"The overview. {LOREM}")
    doc.add_heading("Regions", level=2)
    doc.add_paragraph("North grew fastest.", style="List Bullet")
    doc.add_paragraph("South held steady.", style="List Bullet")
    doc.add_paragraph("First step.", style="List Number")
    doc.add_paragraph("Second step.", style="List Number")
    table = doc.add_table(rows=3, cols=3)
    for r, row in enumerate([["Region", "Q1", "Q2"], ["North", "10", "12"], ["South", "11", "13"]]):
        for k, value in enumerate(row):
            table.cell(r, k).text = value
    doc.add_heading("Outlook", level=1)
    doc.add_paragraph(f"The outlook is steady. {LOREM}")
    doc.save(str(path))


def report_docling(path: Path) -> None:
    """A DoclingDocument built with docling-core's own API (no model), as Docling's PDF
    pipeline would save it: page furniture in the furniture layer, provenance boxes with a
    bottom-left origin."""
    from docling_core.types.doc import (
        BoundingBox,
        CoordOrigin,
        DocItemLabel,
        DoclingDocument,
        ProvenanceItem,
        Size,
        TableCell,
        TableData,
    )
    from docling_core.types.doc.document import ContentLayer

    def prov(page: int, x0: float, t: float, r: float, b: float) -> ProvenanceItem:
        box = BoundingBox(l=x0, t=HEIGHT - t, r=r, b=HEIGHT - b, coord_origin=CoordOrigin.BOTTOMLEFT)
        return ProvenanceItem(page_no=page, bbox=box, charspan=(0, 0))

    doc = DoclingDocument(name="report")
    for page in (1, 2):
        doc.add_page(page_no=page, size=Size(width=WIDTH, height=HEIGHT))
        doc.add_text(
            DocItemLabel.PAGE_HEADER,
            "ACME Corporation - Quarterly Report 2024",
            prov=prov(page, 72, 30, 300, 40),
            content_layer=ContentLayer.FURNITURE,
        )
    doc.add_title("Quarterly Report", prov=prov(1, 72, 75, 230, 94))
    doc.add_heading("Overview", level=1, prov=prov(1, 72, 120, 134, 132))
    doc.add_text(DocItemLabel.PARAGRAPH, f"The overview. {LOREM}", prov=prov(1, 72, 150, 520, 190))
    group = doc.add_list_group()
    doc.add_list_item("North grew fastest.", parent=group, prov=prov(1, 80, 200, 300, 210))
    doc.add_list_item("South held steady.", parent=group, prov=prov(1, 80, 212, 300, 222))
    cells = []
    rows = [["Region", "Q1", "Q2"], ["North", "10", "12"], ["South", "11", "13"]]
    for r, row in enumerate(rows):
        for k, text in enumerate(row):
            cells.append(
                TableCell(
                    text=text,
                    start_row_offset_idx=r,
                    end_row_offset_idx=r + 1,
                    start_col_offset_idx=k,
                    end_col_offset_idx=k + 1,
                    column_header=r == 0,
                )
            )
    caption = doc.add_text(DocItemLabel.CAPTION, "Table 1: Revenue by region.", prov=prov(1, 72, 240, 300, 250))
    doc.add_table(
        TableData(num_rows=3, num_cols=3, table_cells=cells), caption=caption, prov=prov(1, 72, 255, 400, 320)
    )
    doc.add_heading("Outlook", level=1, prov=prov(2, 72, 80, 160, 92))
    doc.add_text(DocItemLabel.PARAGRAPH, f"The outlook is steady. {LOREM}", prov=prov(2, 72, 100, 520, 140))
    doc.add_code("pip install chunkforge[documents]", prov=prov(2, 72, 150, 400, 160))
    doc.save_as_json(path)


if __name__ == "__main__":
    report_pdf(HERE / "report.pdf")
    outline_pdf(HERE / "outline.pdf")
    scan_pdf(HERE / "scan.pdf")
    encrypted_pdf(HERE / "encrypted.pdf")
    report_docx(HERE / "report.docx")
    report_docling(HERE / "report.docling.json")
