"""The bounds every extractor runs under, and the checks made before a parser sees the bytes.

A 5 MB Word file can hold an XML part that inflates to gigabytes; a PDF can hold a Flate
stream of 2 GB, 20,000 pages or an outline that loops; an HTML page can nest 900,000 deep.
Read naively each takes the process (and the machine) down. So:

- zip-based formats (DOCX, XLSX, PPTX, EPUB) are checked from the central directory
  (member count, the sum of uncompressed sizes, the compression ratio) and then by streaming
  every member through the decompressor with a cap, so a header that lies changes nothing;
  an XML part that declares entities (``<!ENTITY``, never used by these formats) is refused;
- PDF page counts, outline entries and every Flate stream's inflated size are bounded;
- HTML element nesting is bounded before any parser builds a tree.

Over a bound the source is rejected with a reason that names the bound; the pipeline
quarantines it at once and never retries it (the same bytes would fail the same way).
The wall-clock and memory limits of one extraction live in :mod:`.sandbox`.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

from ...core.config import IngestConfig
from ...core.errors import SourceRejected

MB = 1_000_000
MAX_PAGES = 5_000  # a PDF with more pages is refused (text extraction is ~2 ms a page)
MAX_PAGE_CONTENT = 4 * MB  # one PDF page's content, inflated: pypdf parses ~0.1-1 MB of operators a second
MAX_OUTLINE_ENTRIES = 2_000  # outline entries walked (a loop or a flood stops here)
MAX_HTML_DEPTH = 1_000  # nested elements; real pages stay under ~100
MAX_ZIP_MEMBERS = 10_000
MAX_RATIO = 200  # uncompressed : compressed; XML compresses ~10-30:1, bombs ~1000:1
RATIO_FLOOR = 1 * MB  # small members may compress as well as they like
_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx", ".xhtml", ".html", ".htm", ".svg", ".vml")


@dataclass(frozen=True)
class Limits:
    """What one extraction may use. ``expanded_bytes`` bounds the decompressed bytes of one
    document (all members, all streams, all chapters); ``member_bytes`` one member or stream."""

    expanded_bytes: int = 200 * MB
    member_bytes: int = 200 * MB
    timeout_seconds: float = 60.0
    memory_bytes: int = 1024 * 1024 * 1024

    @classmethod
    def from_config(cls, ingest: IngestConfig) -> Limits:
        """From ``Config.ingest``: the budget is ``max_expansion`` times ``max_source_bytes``."""
        budget = ingest.max_source_bytes * ingest.max_expansion
        return cls(expanded_bytes=budget, member_bytes=budget, timeout_seconds=ingest.extract_timeout_seconds,
                   memory_bytes=ingest.extract_memory_mb * 1024 * 1024)


def size_words(size: int) -> str:
    """``200 MB``, ``1.5 GB``: sizes as a reason shows them."""
    if size >= 1000 * MB:
        return f"{size / (1000 * MB):.3g} GB"
    return f"{size / MB:.3g} MB" if size >= MB else f"{size:,} bytes"


def too_expanded(what: str, limit: int) -> SourceRejected:
    return SourceRejected(
        "too-expanded", f"{what} decompresses past {size_words(limit)} (ingest.max_expansion × "
        "ingest.max_source_bytes): a decompression bomb, or a document too large to read",
    )


class Budget:
    """Decompressed bytes spent so far by one document, against its limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.spent = 0

    def spend(self, amount: int, what: str = "the document") -> None:
        self.spent += amount
        if self.spent > self.limits.expanded_bytes:
            raise too_expanded(what, self.limits.expanded_bytes)


def _stream_member(handle: IO[bytes], cap: int, name: str, budget: Budget) -> bytes:
    """Read a member through the decompressor, never more than ``cap`` bytes; the first 64 KB
    are returned for the entity check."""
    head = b""
    total = 0
    while True:
        chunk = handle.read(1 << 20)
        if not chunk:
            return head
        if len(head) < 65536:
            head += chunk[: 65536 - len(head)]
        total += len(chunk)
        if total > cap:
            raise too_expanded(f"its part {name}", cap)
        budget.spend(len(chunk), "its parts together")


def check_zip(data: bytes, limits: Limits, what: str) -> None:
    """Refuse a zip-based document whose parts would expand past the limits, before any
    library opens it. ``what`` names the format in reasons ("Word document")."""
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise SourceRejected("unreadable", f"is not a readable {what} ({exc})") from None
    if len(infos) > MAX_ZIP_MEMBERS:
        raise SourceRejected("too-many-parts", f"is a {what} of more than {MAX_ZIP_MEMBERS:,} parts "
                             f"({len(infos):,}): a zip bomb, or not a document")
    declared = 0
    for info in infos:
        declared += info.file_size
        if info.file_size > limits.member_bytes:
            raise too_expanded(f"its part {info.filename}", limits.member_bytes)
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(1, info.compress_size):
            raise SourceRejected(
                "too-expanded", f"its part {info.filename} expands {info.file_size // max(1, info.compress_size):,}"
                f":1 ({size_words(info.file_size)} from {size_words(info.compress_size)}), more than {MAX_RATIO}:1: "
                "a decompression bomb",
            )
    if declared > limits.expanded_bytes:
        raise too_expanded("its parts together", limits.expanded_bytes)
    # The sizes above are what the headers say; the bytes themselves are counted as they inflate.
    budget = Budget(limits)
    for info in infos:
        if info.is_dir():
            continue
        try:
            with archive.open(info) as handle:
                head = _stream_member(handle, limits.member_bytes, info.filename, budget)
        except SourceRejected:
            raise
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
            raise SourceRejected("unreadable", f"is not a readable {what}: part {info.filename}: {exc}") from None
        if info.filename.lower().endswith(_XML_SUFFIXES) and b"<!ENTITY" in head:
            raise SourceRejected(
                "xml-entities", f"its part {info.filename} declares XML entities, which {what}s never use "
                "(an entity-expansion bomb); entities are never expanded",
            )


_TAG_RE = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:_-]*)[^<>]*?(/?)>")
# Elements that never nest (void) or that a browser closes by itself (a new <p> ends the last one):
# unclosed, they are not depth.
_FLAT = frozenset(
    b"area base br col embed hr img input link meta param source track wbr p li dt dd tr td th option "
    b"thead tbody tfoot colgroup rt rp optgroup".split()
)


def check_html_depth(markup: str | bytes, limit: int = MAX_HTML_DEPTH) -> None:
    """Refuse HTML whose elements nest deeper than ``limit`` (parsers recurse over the tree)."""
    data = markup.encode("utf-8", "replace") if isinstance(markup, str) else markup
    depth = 0
    for match in _TAG_RE.finditer(data):
        closing, name, selfclosing = match.groups()
        name = name.lower()
        if selfclosing or name in _FLAT:
            continue
        if closing:
            depth = max(0, depth - 1)
            continue
        depth += 1
        if depth > limit:
            raise SourceRejected("too-deep", f"nests its elements more than {limit:,} deep: a parser bomb, "
                                 "not a page anyone reads")
