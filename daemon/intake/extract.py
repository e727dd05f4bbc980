"""Turn a source file's bytes into text, or say precisely why not.

Markdown, plain text and HTML (converted to text) are read; UTF-8 (with or without BOM),
UTF-16 (BOM or detectable), and Latin-1/cp1252 text are decoded. Everything else is
rejected with a :class:`SourceRejected` whose code and message ``status`` shows.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

from ..core.errors import SourceRejected

TEXT_SUFFIXES = {".md", ".markdown", ".mdown", ".txt", ".text", ".rst", ".org", ".csv", ".log", ""}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
KNOWN_BINARY = {
    ".pdf": "PDF", ".docx": "Word document", ".doc": "Word document", ".xlsx": "spreadsheet",
    ".pptx": "slide deck", ".png": "image", ".jpg": "image", ".jpeg": "image", ".gif": "image",
    ".webp": "image", ".zip": "archive", ".gz": "archive", ".tar": "archive", ".mp3": "audio",
    ".mp4": "video", ".mov": "video", ".epub": "e-book",
}


@dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str
    kind: str  # markdown | text | html
    html_title: str = ""


def _printable_share(text: str) -> float:
    if not text:
        return 1.0
    bad = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\t\n\r\f") or 0x7F <= ord(ch) < 0xA0)
    return 1 - bad / len(text)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode text bytes; raise SourceRejected for binary or undecodable content."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="strict"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise SourceRejected("undecodable", "has a UTF-16 byte-order mark but is not valid UTF-16") from None
    if b"\x00" in data:
        # UTF-16 without a BOM: ASCII-range text leaves every other byte NUL.
        sample = data[:4096]
        even_nul = sample[0::2].count(0) / max(1, len(sample[0::2]))
        odd_nul = sample[1::2].count(0) / max(1, len(sample[1::2]))
        for share, codec in ((odd_nul, "utf-16-le"), (even_nul, "utf-16-be")):
            if share > 0.6 and len(data) % 2 == 0:
                try:
                    text = data.decode(codec)
                except UnicodeDecodeError:
                    continue
                if _printable_share(text) > 0.97:
                    return text, codec
        raise SourceRejected("binary", "contains NUL bytes: binary data, not text")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    if "\ufffd" not in text and _printable_share(text) > 0.97:
        return text, "cp1252"
    text = data.decode("latin-1")
    if _printable_share(text) > 0.97:
        return text, "latin-1"
    raise SourceRejected("undecodable", "is neither UTF-8, UTF-16 nor Latin-1 text (binary or unknown encoding)")


class _HTMLText(HTMLParser):
    BLOCK: ClassVar[set[str]] = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
             "header", "footer", "pre", "blockquote", "table", "ul", "ol", "dd", "dt"}
    SKIP: ClassVar[set[str]] = {"script", "style", "noscript", "template", "svg", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._heading: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self.SKIP:
            self._skip += 1
        if tag in self.BLOCK:
            self.parts.append("\n")
        if re.fullmatch(r"h[1-6]", tag):
            self.parts.append("#" * int(tag[1]) + " ")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self.SKIP and self._skip:
            self._skip -= 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if not self._skip:
            self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return html.unescape(text), " ".join(parser.title.split())


def read_source(path: Path, data: bytes) -> SourceText:
    """Decode one source; the caller has already checked size and file type."""
    suffix = path.suffix.lower()
    if suffix in KNOWN_BINARY:
        raise SourceRejected(
            "unsupported", f"{KNOWN_BINARY[suffix]} files ({suffix}) are not supported yet; "
            "convert it to text or markdown and drop that instead"
        )
    if not data.strip(b" \t\r\n\x00\xef\xbb\xbf\xff\xfe"):
        raise SourceRejected("empty", "is empty or whitespace only")
    text, encoding = decode_bytes(data)
    if not text.strip():
        raise SourceRejected("empty", "is empty or whitespace only")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    looks_html = suffix in HTML_SUFFIXES or (
        suffix in {"", ".txt"} and re.match(r"\s*(<!doctype html|<html)", text[:200], re.IGNORECASE)
    )
    if looks_html:
        body, title = html_to_text(text)
        if not body.strip():
            raise SourceRejected("empty", "is an HTML page with no text in it")
        return SourceText(body, encoding, "html", title)
    if suffix not in TEXT_SUFFIXES:
        raise SourceRejected(
            "unsupported", f"{suffix} files are not supported yet (markdown, text and HTML are)"
        )
    return SourceText(text, encoding, "markdown" if suffix in {".md", ".markdown", ".mdown"} else "text")
