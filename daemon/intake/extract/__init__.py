"""Turn a source file's bytes into markdown text, or say precisely why not.

The kind of a file is found from its content, not its name: a PDF by its ``%PDF-`` header,
Word, PowerPoint, Excel and EPUB files by what their zip holds, images by their signatures,
HTML by its markup, and anything whose bytes decode as text is text (``README.Debian``,
``LICENSE``, ``Makefile``, ``.cfg``, ``.log``). The result keeps the document's structure as
markdown (headings, lists, tables) and carries the document's own title metadata (PDF/DOCX/
PPTX/XLSX properties, HTML ``<title>``, EPUB ``dc:title``, a man page's NAME line) for the
title rule. Every reader runs within the bounds of ``bounds.py`` (decompressed sizes, entities,
pages, outline, nesting), and the pipeline reads through :func:`extract_source`: a reused
worker process with a memory and a time limit (``sandbox.py``). Images, scans without a text
layer, archives, audio and video are rejected with a :class:`SourceRejected` whose code and
message ``status`` shows.

Which formats need an extra (README "What happens to a file in raw/"): slide decks need
``slides`` (python-pptx); HTML is read by trafilatura with ``html``, else by a standard-library
parser. PDF (pypdf), Word (python-docx) and spreadsheets (openpyxl) are default dependencies.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import SourceRejected
from .bounds import Limits, check_zip
from .epub import read_epub
from .html import html_to_markdown
from .office import read_docx, read_pptx
from .pdf import read_pdf
from .rst import looks_rst, myst_to_markdown, rst_to_markdown
from .sheets import read_csv, read_xlsx
from .text import (
    atx_headings,
    decode_bytes,
    escape_hash_lines,
    escape_tag_shapes,
    man_page_to_markdown,
    strip_terminal_formatting,
)

log = logging.getLogger(__name__)

__all__ = ["Limits", "SourceRejected", "SourceText", "decode_bytes", "extract_source", "read_source", "sniff_kind"]

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}
RST_SUFFIXES = {".rst", ".rest"}
MAX_RST_CHARS = 2_000_000  # docutils reads ~1 MB/s; a larger file is read as plain text
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"), (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"), (b"II*\x00", "TIFF image"), (b"MM\x00*", "TIFF image"), (b"BM", "BMP image"),
)
_BINARY_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed file"), (b"BZh", "bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "xz-compressed file"),
    (b"(\xb5/\xfd", "zstd-compressed file"), (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"Rar!", "RAR archive"),
    (b"\x7fELF", "program (ELF executable)"), (b"ID3", "MP3 audio file"), (b"OggS", "Ogg audio/video file"),
    (b"fLaC", "FLAC audio file"), (b"\x1aE\xdf\xa3", "Matroska/WebM video"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Office file (.doc/.xls/.ppt); save it as .docx/.xlsx/.pptx"),
)


@dataclass(frozen=True)
class SourceText:
    text: str  # markdown
    encoding: str  # the text encoding, or the format for binary documents (pdf, docx, ...)
    kind: str  # markdown | rst | text | html | man | pdf | docx | pptx | xlsx | csv | epub
    doc_title: str = ""  # the document's own title metadata (PDF/DOCX/HTML <title>, man NAME)

    @property
    def html_title(self) -> str:  # the name callers used before other formats had titles
        return self.doc_title


def sniff_kind(data: bytes) -> str:
    """The format of ``data`` from its content; ``text`` when no binary signature matches."""
    head = data[:64]
    if head.lstrip(b"\x00\t\n\r ")[:5] == b"%PDF-" or data[:1024].find(b"%PDF-") != -1:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        except zipfile.BadZipFile:
            return "zip"
        if "word/document.xml" in names:
            return "docx"
        if "ppt/presentation.xml" in names:
            return "pptx"
        if "xl/workbook.xml" in names:
            return "xlsx"
        if "META-INF/container.xml" in names:
            return "epub"
        return "zip"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image:WebP image"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        still = brand in (b"heic", b"heix", b"avif", b"mif1")
        return "image:HEIC/AVIF image" if still else "binary:MP4/QuickTime video"
    for magic, label in _IMAGE_MAGIC:
        # "BM" starts much text too: a bitmap also has a known header size at byte 14.
        bitmap_header = len(data) > 26 and data[14:15] in (b"\x0c", b"(", b"@", b"l", b"|")
        if head.startswith(magic) and (magic != b"BM" or bitmap_header):
            return f"image:{label}"
    for magic, label in _BINARY_MAGIC:
        if head.startswith(magic):
            return f"binary:{label}"
    return "text"


def _looks_html(text: str, suffix: str) -> bool:
    if suffix in HTML_SUFFIXES:
        return True
    return bool(re.match(r"\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*(<!doctype html|<html)", text[:1000],
                         re.IGNORECASE | re.DOTALL))


def _require_text(body: str, what: str) -> None:
    if not re.search(r"\w", body):
        raise SourceRejected("empty", f"is {what} with no text in it")


_ZIP_KINDS = {"docx": "Word document", "pptx": "slide deck", "xlsx": "spreadsheet", "epub": "EPUB book"}


def read_source(path: Path, data: bytes, limits: Limits | None = None) -> SourceText:
    """Read one source within ``limits`` (bounds.py); the caller has already checked size and
    file type. The daemon calls this through :mod:`.sandbox`, in a child process with a memory
    and time limit."""
    limits = limits or Limits()
    if not data.strip(b" \t\r\n\x00\xef\xbb\xbf\xff\xfe"):
        raise SourceRejected("empty", "is empty or whitespace only")
    kind = sniff_kind(data)
    suffix = path.suffix.lower()
    if kind == "pdf":
        text, title = read_pdf(data, limits)
        return SourceText(text, "pdf", "pdf", title)
    if kind in _ZIP_KINDS:
        check_zip(data, limits, _ZIP_KINDS[kind])
    if kind == "docx":
        text, title = read_docx(data)
        return SourceText(text, "docx", "docx", title)
    if kind == "pptx":
        text, title = read_pptx(data)
        return SourceText(text, "pptx", "pptx", title)
    if kind == "xlsx":
        text, title = read_xlsx(data)
        return SourceText(text, "xlsx", "xlsx", title)
    if kind == "epub":
        text, title = read_epub(data, limits)
        return SourceText(text, "epub", "epub", title)
    if kind == "zip":
        raise SourceRejected("unsupported", "is a zip archive; unpack it and drop the files inside")
    if kind.startswith("image:"):
        raise SourceRejected(
            "image", f"is a {kind[6:]}: images have no text to read (run OCR on it and drop the text instead)"
        )
    if kind.startswith("binary:"):
        raise SourceRejected("unsupported", f"is a {kind[7:]}, not a document with text")
    text, encoding = decode_bytes(data)
    if not text.strip():
        raise SourceRejected("empty", "is empty or whitespace only")
    text = strip_terminal_formatting(text.replace("\r\n", "\n").replace("\r", "\n"))
    if _looks_html(text, suffix):
        body, title = html_to_markdown(text)
        _require_text(body, "an HTML page")
        return SourceText(body, encoding, "html", title)
    man = man_page_to_markdown(text)
    if man is not None:
        return SourceText(man[0], encoding, "man", man[1])
    if suffix in (".csv", ".tsv"):
        try:
            return SourceText(read_csv(text, path.stem), encoding, "csv")
        except Exception:  # a malformed CSV is still text: read it as such below
            pass
    rst_like = suffix in RST_SUFFIXES or (suffix not in MARKDOWN_SUFFIXES and looks_rst(text)
                                          and not _looks_markdown(text))
    if rst_like and len(text) <= MAX_RST_CHARS:
        rst = _read_rst(text)
        if rst is not None and not re.search(r"\w", rst[0]):
            raise SourceRejected("empty", "is a reStructuredText file with no text of its own "
                                 "(only directives, such as an include of another file)")
        if rst is not None:
            return SourceText(rst[0], encoding, "rst", rst[1])
    if suffix in MARKDOWN_SUFFIXES:
        return SourceText(myst_to_markdown(text), encoding, "markdown")
    if _looks_markdown(text):  # markdown kept in a .txt (or name-less) file
        return SourceText(atx_headings(myst_to_markdown(text)), encoding, "text")
    # In plain text a line starting with "#" is a comment ("# Older entries were removed"), not a
    # heading: escaped, it reads the same and never becomes a title.
    return SourceText(atx_headings(escape_tag_shapes(escape_hash_lines(text))), encoding, "text")


def extract_source(path: Path, data: bytes, limits: Limits) -> SourceText:
    """:func:`read_source` in a worker process with ``limits``' memory and time (sandbox.py)."""
    from .sandbox import pool

    reply = pool().read(path, data, limits)
    if "code" in reply:
        raise SourceRejected(str(reply["code"]), str(reply["message"]))
    return SourceText(str(reply["text"]), str(reply["encoding"]), str(reply["kind"]), str(reply["doc_title"]))


def _read_rst(text: str) -> tuple[str, str] | None:
    """reStructuredText through docutils; None (read as plain text instead) if docutils fails."""
    try:
        body, title = rst_to_markdown(text)
    except Exception as exc:  # a docutils bug on odd input must not lose the source
        log.info("docutils could not read a reStructuredText source (%s); reading it as text", exc)
        return None
    return body, title


def _looks_markdown(text: str) -> bool:
    """Text that opens with a ``# Title`` or uses markdown's other marks (``##`` headings,
    fences, links) is markdown, whatever its name."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    title_first = bool(re.match(r"#{1,6} \S", first)) and not first.rstrip().endswith((".", ";"))
    return bool(title_first or re.search(r"^(#{2,6} \S|```)|\]\(https?://", text, re.MULTILINE))
