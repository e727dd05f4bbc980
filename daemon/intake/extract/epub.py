"""EPUB e-books: the chapters in reading order (the OPF spine), each through the HTML reader.

An EPUB is a zip of XHTML files; ``META-INF/container.xml`` names the package document, whose
spine gives the reading order and whose ``dc:title`` is the book's title. Read with the
standard library (zipfile) and defusedxml (ElementTree with entities and DTDs refused). Each
chapter is read once, however often the spine names it, and all chapters together stay within
the document's decompressed-size budget (bounds.py).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException, ElementTree

from ...core.errors import SourceRejected
from .bounds import Budget, Limits
from .html import html_to_markdown_stdlib

MAX_CHAPTER_BYTES = 5_000_000


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_epub(data: bytes, limits: Limits | None = None) -> tuple[str, str]:
    budget = Budget(limits or Limits())
    try:
        book = zipfile.ZipFile(io.BytesIO(data))
        container = ElementTree.fromstring(book.read("META-INF/container.xml"))
        rootfile = next(el.get("full-path") for el in container.iter() if _local(el.tag) == "rootfile")
        if not rootfile:
            raise KeyError("rootfile")
        package = ElementTree.fromstring(book.read(rootfile))
    except DefusedXmlException:
        raise SourceRejected("xml-entities", "its package document declares XML entities or a DTD "
                             "(an entity-expansion bomb); entities are never expanded") from None
    except (zipfile.BadZipFile, KeyError, StopIteration, ParseError) as exc:
        raise SourceRejected("unreadable", f"is not a readable EPUB ({type(exc).__name__}: {exc})") from None
    base = posixpath.dirname(rootfile)
    title = ""
    manifest: dict[str, str] = {}
    spine: list[str] = []
    for el in package.iter():
        name = _local(el.tag)
        if name == "title" and not title and el.text:
            title = " ".join(el.text.split())
        elif name == "item" and el.get("id") and el.get("href"):
            manifest[str(el.get("id"))] = posixpath.normpath(posixpath.join(base, str(el.get("href"))))
        elif name == "itemref" and el.get("idref"):
            spine.append(str(el.get("idref")))
    chapters: list[str] = []
    read: set[str] = set()
    for idref in spine:
        path = manifest.get(idref)
        if not path or path in read:
            continue
        read.add(path)
        try:
            info = book.getinfo(path)
            if info.file_size > MAX_CHAPTER_BYTES:
                chapters.append(f"(chapter {path} is larger than {MAX_CHAPTER_BYTES} bytes and was not read)")
                continue
            budget.spend(info.file_size, "its chapters together")
            markup = book.read(path).decode("utf-8", errors="replace")
        except KeyError:
            continue
        body, _ = html_to_markdown_stdlib(markup)
        if body.strip():
            chapters.append(body.strip())
    text = "\n\n".join(chapters)
    if not re.search(r"\w", text):
        raise SourceRejected("no-text-layer", "is an EPUB with no text in its chapters")
    return text + "\n", title
