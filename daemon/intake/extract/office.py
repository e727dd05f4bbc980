"""Word documents (python-docx) and slide decks (python-pptx) as markdown.

Paragraph styles carry the structure: ``Title`` and ``Heading N`` become headings, list
styles become list items, tables become markdown tables. The core properties' title is kept
for the title rule. Slides become ``## Slide N: <title>`` sections with their text, tables
and speaker notes.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ...core.errors import SourceRejected


def _cell_text(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [[_cell_text(c) for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _docx_paragraph(paragraph: Any) -> str:
    text = paragraph.text.strip()
    if not text:
        return ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        return f"# {text}"
    heading = re.match(r"Heading (\d)", style)
    if heading:
        return "#" * min(6, max(1, int(heading.group(1)))) + " " + text
    if "List" in style:
        return ("1. " if "Number" in style else "- ") + text
    return text


def read_docx(data: bytes) -> tuple[str, str]:
    """(markdown, title metadata) of a .docx file."""
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph
    except ImportError:  # pragma: no cover - a default dependency
        raise SourceRejected("unsupported", "Word documents need the python-docx package") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise SourceRejected("unreadable", f"is not a readable Word document ({type(exc).__name__}: {exc})") from None
    blocks: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            line = _docx_paragraph(item)
            if line:
                blocks.append(line)
        elif isinstance(item, Table):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            if rows:
                blocks.append(markdown_table(rows))
    # Consecutive list items form one list (no blank line between them).
    out: list[str] = []
    for block in blocks:
        if out and re.match(r"(- |1\. )", block) and re.match(r"(- |1\. )", out[-1].rsplit("\n", 1)[-1]):
            out[-1] += "\n" + block
        else:
            out.append(block)
    title = (document.core_properties.title or "").strip()
    body = "\n\n".join(out).strip()
    if not body:
        raise SourceRejected("empty", "is a Word document with no text in it")
    return body + "\n", " ".join(title.split())


def read_pptx(data: bytes) -> tuple[str, str]:
    """(markdown, title metadata) of a .pptx slide deck."""
    try:
        from pptx import Presentation
    except ImportError:
        raise SourceRejected(
            "unsupported", "slide decks (.pptx) need the `slides` extra: pip install 'wikiwright[slides]'"
        ) from None
    try:
        deck = Presentation(io.BytesIO(data))
    except Exception as exc:
        raise SourceRejected("unreadable", f"is not a readable slide deck ({type(exc).__name__}: {exc})") from None
    sections: list[str] = []
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        heading = " ".join(title_shape.text.split()) if title_shape is not None and title_shape.has_text_frame else ""
        lines = [f"## Slide {number}" + (f": {heading}" if heading else "")]
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
                lines += ["", markdown_table(rows)]
            elif shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = "".join(run.text for run in paragraph.runs).strip()
                    if text:
                        lines.append("  " * paragraph.level + "- " + text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text.strip() if slide.notes_slide.notes_text_frame else ""
            if notes:
                lines += ["", f"Notes: {' '.join(notes.split())}"]
        sections.append("\n".join(lines))
    body = "\n\n".join(sections).strip()
    if not re.search(r"\w", re.sub(r"## Slide \d+", "", body)):
        raise SourceRejected("no-text-layer", "is a slide deck with no text in it (images only)")
    title = (deck.core_properties.title or "").strip()
    return body + "\n", " ".join(title.split())
