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
from .bounds import MAX_OUTLINE_ENTRIES, MAX_PAGE_CONTENT, MAX_PAGES, Budget, Limits, size_words, too_expanded
from .dekern import dekern

log = logging.getLogger(__name__)
MAX_OUTLINE = 400  # headings taken from the outline


def _outline(reader: Any) -> dict[int, list[tuple[int, str]]]:
    """page index -> [(level, title)] from the bookmarks, first two levels.

    Walked here rather than through ``reader.outline`` (which builds the whole tree first):
    every entry is visited once at most, so an outline that loops or folds back on itself
    (entries sharing children: few objects, 2^n paths) is refused at once, and no more than
    MAX_OUTLINE_ENTRIES entries are looked at.
    """
    from pypdf.generic import DictionaryObject, IndirectObject

    starts: dict[int, list[tuple[int, str]]] = {}
    try:
        root = reader.trailer["/Root"].get_object()
        top = root.get("/Outlines")
        top = top.get_object() if top is not None else None
    except Exception as exc:  # a broken outline only costs the headings
        log.info("PDF outline unreadable: %s", exc)
        return starts
    if not isinstance(top, DictionaryObject):
        return starts
    seen: set[tuple[int, int]] = set()
    count = 0
    # (reference to an entry, level); siblings are followed through /Next, children through /First.
    stack: list[tuple[Any, int]] = [(top.get("/First"), 0)]
    steps = 0
    while stack:
        ref, level = stack.pop()
        while ref is not None:
            steps += 1
            if steps > MAX_OUTLINE_ENTRIES:
                log.info("PDF outline longer than %d entries: the rest is not read", MAX_OUTLINE_ENTRIES)
                return starts
            if isinstance(ref, IndirectObject):
                key = (ref.idnum, ref.generation)
                if key in seen:
                    raise SourceRejected(
                        "outline-loop", "its outline (bookmarks) loops back on itself (an entry is reached "
                        "twice): a parser bomb, or a broken file",
                    )
                seen.add(key)
            try:
                node = ref.get_object()
            except Exception:
                break
            if not isinstance(node, DictionaryObject):
                break
            if count < MAX_OUTLINE:
                try:
                    item = reader._build_outline_item(node)
                    page = reader.get_destination_page_number(item) if item is not None else None
                    title = " ".join(str(node.get("/Title", "")).split())
                except Exception:
                    page, title = None, ""
                if page is not None and page >= 0 and title:
                    starts.setdefault(page, []).append((level, title))
                    count += 1
            child = node.get("/First")
            if child is not None and level < 2:
                stack.append((child, level + 1))
            ref = node.get("/Next")
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


def _declared_pages(reader: Any) -> int:
    try:
        return int(reader.trailer["/Root"].get_object()["/Pages"].get_object().get("/Count", 0))
    except Exception:
        return 0


def _too_many_pages(count: int) -> SourceRejected:
    return SourceRejected("too-many-pages", f"is a PDF of more than {MAX_PAGES:,} pages ({count:,}); "
                          "split it into parts to ingest it")


def _check_streams(reader: Any, limits: Limits) -> dict[tuple[int, int], int]:
    """Every Flate stream inflated with a cap before any page is read: one stream may not pass
    ``limits.member_bytes``, all of them together not ``limits.expanded_bytes``. Returns each
    stream's inflated size by (object number, generation)."""
    import zlib

    from pypdf.generic import IndirectObject, StreamObject

    budget = Budget(limits)
    sizes: dict[tuple[int, int], int] = {}
    for generation, objects in list(reader.xref.items()):
        for idnum in list(objects):
            try:
                obj = IndirectObject(idnum, generation, reader).get_object()
            except Exception:
                continue
            if not isinstance(obj, StreamObject) or obj.get("/Subtype") == "/Image":
                continue  # images are never inflated to read text
            filters = obj.get("/Filter")
            first = filters[0] if isinstance(filters, list) and filters else filters
            if first not in ("/FlateDecode", "/Fl"):
                continue
            raw = getattr(obj, "_data", b"") or b""
            inflater = zlib.decompressobj()
            size = 0
            pending = raw
            try:
                while True:
                    out = inflater.decompress(pending, 1 << 20)
                    size += len(out)
                    if size > limits.member_bytes:
                        raise too_expanded(f"its stream {idnum}", limits.member_bytes)
                    budget.spend(len(out), "its streams together")
                    pending = inflater.unconsumed_tail
                    if inflater.eof or (not out and not pending):
                        break
            except zlib.error:
                continue  # a damaged stream: pypdf copes (or the page reads empty)
            sizes[(idnum, generation)] = size
    return sizes


def _check_page_content(pages: list[Any], sizes: dict[tuple[int, int], int]) -> None:
    """A page's content may inflate to MAX_PAGE_CONTENT at most: text extraction parses every
    operator in Python (a few MB a second), so a larger page is a bomb for time."""
    from pypdf.generic import ArrayObject, IndirectObject

    for number, page in enumerate(pages, start=1):
        try:
            contents = page.get("/Contents")
            refs = list(contents) if isinstance(contents, ArrayObject) else [contents]
            if isinstance(contents, IndirectObject):
                resolved = contents.get_object()
                refs = list(resolved) if isinstance(resolved, ArrayObject) else [contents]
        except Exception:
            continue
        total = sum(sizes.get((ref.idnum, ref.generation), 0) for ref in refs if isinstance(ref, IndirectObject))
        if total > MAX_PAGE_CONTENT:
            raise SourceRejected(
                "too-expanded", f"its page {number}'s content decompresses past {size_words(MAX_PAGE_CONTENT)}: "
                "a decompression bomb, or a drawing with no text worth reading",
            )


_COLUMN_GAP = re.compile(r"\S {4,}\S")


def _page_text(page: Any, index: int) -> str:
    """A page's text by its layout (pypdf's layout mode: blank lines where the page has gaps,
    a paragraph's first-line indent kept), with the spacing inside lines made single again.
    A page set in columns (most lines hold a wide gap) is read in plain mode instead, which
    follows the columns rather than running across them."""
    try:
        laid_out = page.extract_text(extraction_mode="layout") or ""
    except Exception as exc:  # layout mode fails on some fonts: plain mode may not
        log.info("PDF page %d: layout extraction failed (%s); plain extraction", index + 1, exc)
        laid_out = ""
    lines = [line.rstrip() for line in laid_out.split("\n")]
    filled = [line for line in lines if line.strip()]
    if not filled or sum(1 for line in filled if _COLUMN_GAP.search(line.strip())) > 0.4 * len(filled):
        try:
            return str(page.extract_text() or "")
        except Exception as exc:  # one bad page must not lose the others
            log.info("PDF page %d unreadable: %s", index + 1, exc)
            return ""
    base = min(len(line) - len(line.lstrip()) for line in filled)
    out: list[str] = []
    previous_indent = -1
    for line in lines:
        if not line.strip():
            out.append("")
            previous_indent = -1
            continue
        indent = len(line) - len(line.lstrip())
        text = re.sub(r" {2,}", " ", line.strip())
        # A first-line indent after a line at the margin starts a paragraph (not a list item's
        # continuation: that follows an indented line).
        if indent > base and previous_indent == base and out and out[-1]:
            out.append("")
        out.append(text)
        previous_indent = indent
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out))


def read_pdf(data: bytes, limits: Limits | None = None) -> tuple[str, str]:
    """(markdown text, title metadata)."""
    limits = limits or Limits()
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
        declared = _declared_pages(reader)
        if declared > MAX_PAGES:
            raise _too_many_pages(declared)
        pages = list(reader.pages)
        if len(pages) > MAX_PAGES:
            raise _too_many_pages(len(pages))
        _check_page_content(pages, _check_streams(reader, limits))
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
        text = _page_text(page, index)
        text = re.sub(r"[ \t]+\n", "\n", text).strip()
        text_chars += len(re.sub(r"\s", "", text))
        text = dekern(_paragraphs(text))
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
