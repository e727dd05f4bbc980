"""PDF: the text layer with pypdf, split at the document's own outline (bookmarks).

A PDF whose pages carry no text (a scan, an image-only export) is quarantined with a reason
that says so; an encrypted or broken one likewise. The document's title metadata is kept for
the title rule; chapters from the outline become ``##`` headings at the page they start on.
"""

from __future__ import annotations

import io
import logging
import re
from typing import Any

from ...core.errors import SourceRejected

log = logging.getLogger(__name__)
MAX_OUTLINE = 400


def _outline(reader: Any) -> dict[int, list[tuple[int, str]]]:
    """page index -> [(level, title)] from the bookmarks, first two levels."""
    starts: dict[int, list[tuple[int, str]]] = {}
    count = 0

    def walk(items: list[Any], level: int) -> None:
        nonlocal count
        for item in items:
            if count >= MAX_OUTLINE:
                return
            if isinstance(item, list):
                if level < 2:
                    walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
                title = " ".join(str(item.title).split())
            except Exception:
                continue
            if page is not None and title:
                starts.setdefault(page, []).append((level, title))
                count += 1

    try:
        walk(list(reader.outline), 0)
    except Exception as exc:  # a broken outline only costs the headings
        log.info("PDF outline unreadable: %s", exc)
    return starts


_DOT_LEADER_RE = re.compile(r"(\s?\.){4,}\s*[ivxlc\d]+\s*$", re.IGNORECASE)


def _paragraphs(text: str) -> str:
    """A PDF's text layer has lines, not paragraphs: a blank line goes where a sentence ends at
    a line end and the next line starts anew, and around short lines without a full stop
    (titles, names, headers). Table-of-contents lines (dot leaders) are dropped."""
    lines = [line for line in text.split("\n") if not _DOT_LEADER_RE.search(line)]
    out: list[str] = []
    for line in lines:
        line = re.sub(r"^\s*[•◦▪‣]\s*", "- ", line)  # PDF bullets as markdown list items
        stripped = line.strip()
        short = len(stripped) < 45 and not stripped.endswith((".", ",", ";", "-"))
        previous = out[-1].strip() if out else ""
        if previous and (short or (previous.endswith((".", "!", "?", ":")) and stripped[:1].isupper())
                         or (len(previous) < 45 and not previous.endswith((".", ",", ";", "-")))):
            out.append("")
        out.append(line)
    return "\n".join(out)


def _place_headings(text: str, headings: list[tuple[int, str]]) -> str:
    """Mark each outline entry as a heading at the line of the page that carries its text
    (else at the top of the page), so a chapter's text follows its heading."""
    if not headings:
        return text
    lines = text.split("\n")
    squashed = [" ".join(line.split()).casefold() for line in lines]
    top: list[str] = []
    start = 0
    for level, heading in headings:
        mark = "#" * (level + 2) + " " + heading
        key = " ".join(heading.split()).casefold()
        found = next((i for i in range(start, len(lines)) if squashed[i] == key), None)
        if found is None:
            top.append(mark)
            continue
        lines[found] = "\n" + mark + "\n"
        start = found + 1
    return "\n".join([*[f"{m}\n" for m in top], *lines])


def read_pdf(data: bytes) -> tuple[str, str]:
    """(markdown text, title metadata)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:  # pragma: no cover - a default dependency
        raise SourceRejected("unsupported", "PDF needs the pypdf package (pip install pypdf)") from None
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                raise SourceRejected("encrypted", "is a password-protected PDF; save an unprotected copy") from None
        pages = list(reader.pages)
    except SourceRejected:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise SourceRejected("unreadable", f"is not a readable PDF ({exc})") from None
    if not pages:
        raise SourceRejected("empty", "is a PDF with no pages")
    title = ""
    try:
        meta = reader.metadata
        if meta is not None and meta.title:
            title = " ".join(str(meta.title).split())
    except Exception:
        title = ""
    starts = _outline(reader)
    parts: list[str] = []
    text_chars = 0
    for index, page in enumerate(pages):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # one bad page must not lose the others
            log.info("PDF page %d unreadable: %s", index + 1, exc)
            text = ""
        text = re.sub(r"[ \t]+\n", "\n", text).strip()
        text_chars += len(re.sub(r"\s", "", text))
        text = _paragraphs(text)
        text = _place_headings(text, starts.get(index, []))
        if text:
            parts.append(text)
    if text_chars < 20:
        raise SourceRejected(
            "no-text-layer",
            f"is a PDF of {len(pages)} page(s) with no text layer (a scan or image-only PDF); "
            "run OCR on it (e.g. ocrmypdf) and drop the result",
        )
    body = "\n\n".join(parts)
    body = re.sub(r"\n{3,}", "\n\n", body).strip() + "\n"
    return body, title
