"""Small documents of every kind, written by the libraries that read them (python-docx,
python-pptx, openpyxl) or built by hand to their published formats (PDF, EPUB, PNG)."""

from __future__ import annotations

import io
import zipfile


def docx_bytes(title: str, heading: str, paragraphs: list[str], bullets: list[str],
               table: list[list[str]], meta_title: str = "") -> bytes:
    import docx

    document = docx.Document()
    if title:
        document.add_paragraph(title, style="Title")
    document.add_paragraph(heading, style="Heading 1")
    for text in paragraphs:
        document.add_paragraph(text)
    for item in bullets:
        document.add_paragraph(item, style="List Bullet")
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    document.core_properties.title = meta_title
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(slides: list[tuple[str, list[str]]], meta_title: str = "") -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, bullets in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
    deck.core_properties.title = meta_title
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes(sheet: str, header: list[str], rows: list[list[object]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    ws = book.active
    assert ws is not None
    ws.title = sheet
    ws.append(header)
    for row in rows:
        ws.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF file from numbered object bodies (1-based), with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, len(objects), xref)
    return bytes(out)


def pdf_bytes(lines: list[str], meta_title: str = "") -> bytes:
    """A one-page PDF with a real text layer (Helvetica), and title metadata."""
    text = b"BT /F1 12 Tf 72 720 Td 16 TL " + b" ".join(
        b"(" + line.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b") '"
        for line in lines) + b" ET"
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (" + meta_title.encode("latin-1") + b") >>",
    ])


def scanned_pdf_bytes() -> bytes:
    """A page that only paints (a scan has an image and no text operators)."""
    paint = b"0.5 g 72 72 468 648 re f"
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(paint) + paint + b"\nendstream",
        b"<< /Producer (scanner) >>",
    ])


def epub_bytes(title: str, chapters: list[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml",
                      '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                      '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                      "</rootfiles></container>")
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i in range(len(chapters)))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        book.writestr("OEBPS/content.opf",
                      '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                      f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
                      f"<manifest>{items}</manifest><spine>{spine}</spine></package>")
        for i, chapter in enumerate(chapters):
            book.writestr(f"OEBPS/c{i}.xhtml", f'<html xmlns="http://www.w3.org/1999/xhtml"><body>{chapter}</body></html>')
    return out.getvalue()


PNG_BYTES = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
             b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
