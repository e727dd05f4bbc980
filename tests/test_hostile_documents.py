"""Hostile documents (issue 20): decompression and parser bombs are quarantined at once, with a
reason that names the bound, never retried, and the daemon's memory stays flat.

Every bomb is built here in well under a second: a zip member or a Flate stream is deflated
from one compressed segment repeated (a full flush resets the compressor, so the segment is
the same each time), a PDF is written object by object. Nothing is shipped as a binary.
"""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import struct
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import cli, daemon_log, start_daemon, wait_for
from tests.source_fixtures import _pdf, docx_bytes, epub_bytes, pptx_bytes, xlsx_bytes

MB = 1 << 20
RSS_LIMIT_KB = 300 * 1024
NOTE = "# Tide tables\n\nThe harbour office prints tide tables every week. Each table lists high and low water.\n"


# -- building the bombs ----------------------------------------------------------------------------

def repeated_deflate(prefix: bytes, chunk: bytes, times: int, suffix: bytes, *, raw: bool) -> tuple[bytes, int, int]:
    """(compressed, crc32, size) of ``prefix + chunk * times + suffix``; ``raw`` deflate for zip
    members, else a zlib stream (PDF /FlateDecode) with its true adler32."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15 if raw else 15)
    head = packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH)
    segment = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH) == segment  # the same bytes every time
    tail = packer.compress(suffix) + packer.flush()
    crc, adler = zlib.crc32(prefix), zlib.adler32(prefix)
    for _ in range(times):
        crc = zlib.crc32(chunk, crc)
        if not raw:
            adler = zlib.adler32(chunk, adler)
    crc, adler = zlib.crc32(suffix, crc), zlib.adler32(suffix, adler)
    body = head + segment * times + tail
    if not raw:
        body = body[:-4] + struct.pack(">I", adler)
    return body, crc, len(prefix) + len(chunk) * times + len(suffix)


def rezip(base: bytes, replace: dict[str, tuple[bytes, int, int]]) -> bytes:
    """The zip ``base`` with some members replaced by pre-deflated (data, crc32, size)."""
    source = zipfile.ZipFile(io.BytesIO(base))
    out, central = bytearray(), bytearray()
    members = source.infolist()
    for info in members:
        if info.filename in replace:
            data, crc, size = replace[info.filename]
        else:
            plain = source.read(info.filename)
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            data, crc, size = packer.compress(plain) + packer.flush(), zlib.crc32(plain), len(plain)
        name = info.filename.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(name), 0)
        out += name + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), size,
                               len(name), 0, 0, 0, 0, 0, offset) + name
    start = len(out)
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), start, 0)
    return bytes(out)


def docx_bomb() -> bytes:
    """A Word file whose document.xml inflates to 1 GB of paragraphs (3 MB on disk)."""
    base = docx_bytes("Bomb", "Part", ["x"], [], [["a"]])
    ns = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    chunk = b"<w:p><w:r><w:t>boom</w:t></w:r></w:p>" * (MB // 38)
    member = repeated_deflate(b'<?xml version="1.0"?><w:document ' + ns + b"><w:body>", chunk, 1024 * MB // len(chunk),
                              b"</w:body></w:document>", raw=True)
    return rezip(base, {"word/document.xml": member})


def docx_entity_bomb() -> bytes:
    """A Word file whose document.xml is a "billion laughs": ten entities, each ten of the last."""
    base = docx_bytes("Bomb", "Part", ["x"], [], [["a"]])
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10))
    xml = ('<?xml version="1.0"?><!DOCTYPE w:document [' + entities + ']>'
           '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
           + "<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p>" * 50 + "</w:body></w:document>").encode()
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return rezip(base, {"word/document.xml": (packer.compress(xml) + packer.flush(), zlib.crc32(xml), len(xml))})


def pptx_bomb() -> bytes:
    """A slide deck whose first slide holds one text run of 1 GB."""
    base = pptx_bytes([("Bomb", ["x"])])
    name = "ppt/slides/slide1.xml"
    head, _, rest = zipfile.ZipFile(io.BytesIO(base)).read(name).partition(b"<a:t>x</a:t>")
    chunk = b"boom " * (MB // 5)
    return rezip(base, {name: repeated_deflate(head + b"<a:t>", chunk, 1024 * MB // len(chunk), b"</a:t>" + rest,
                                               raw=True)})


def xlsx_bomb() -> bytes:
    """A workbook whose sheet inflates to 1 GB of rows, with no <dimension> to stop a reader early."""
    base = xlsx_bytes("Bomb", ["a"], [[1]])
    name = "xl/worksheets/sheet1.xml"
    sheet = re.sub(rb"<dimension[^>]*/>", b"", zipfile.ZipFile(io.BytesIO(base)).read(name))
    head, _, rest = sheet.partition(b"<sheetData>")
    tail = rest.partition(b"</sheetData>")[2]
    chunk = b"<row><c><v>1</v></c></row>" * (MB // 26)
    return rezip(base, {name: repeated_deflate(head + b"<sheetData>", chunk, 1024 * MB // len(chunk),
                                               b"</sheetData>" + tail, raw=True)})


def epub_bomb() -> bytes:
    """An e-book whose one chapter (just under the old 5 MB per-chapter cap) the spine names
    2,000 times: 10 GB of reading from 8 KB."""
    base = epub_bytes("Bomb", ["<p>x</p>"])
    opf = zipfile.ZipFile(io.BytesIO(base)).read("OEBPS/content.opf")
    opf = opf.replace(b'<itemref idref="c0"/>', b'<itemref idref="c0"/>' * 2000)
    chapter = (b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>' + b"boom " * 980_000 + b"</p></body></html>")

    def deflated(plain: bytes) -> tuple[bytes, int, int]:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(plain) + packer.flush(), zlib.crc32(plain), len(plain)

    return rezip(base, {"OEBPS/c0.xhtml": deflated(chapter), "OEBPS/content.opf": deflated(opf)})


def _text(line: str) -> bytes:
    return b"BT /F1 12 Tf 72 720 Td (" + line.encode() + b") Tj ET"


_PAGE = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
         b" /Resources << /Font << /F1 %d 0 R >> >> >>")
_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def pdf_flate_bomb() -> bytes:
    """One page whose content stream inflates to 2 GB (2 MB on disk)."""
    data, _, _ = repeated_deflate(_text("A page whose content never ends.") + b"\n", b" " * MB, 2000, b"\n", raw=False)
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", _PAGE % (4, 5),
                 _stream(data, b" /Filter /FlateDecode"), _FONT, b"<< /Title (Flate bomb) >>"])


def pdf_page_of_operators() -> bytes:
    """One page whose content inflates to 8 MB of text operators (under the 200 MB budget, but
    parsed operator by operator: minutes)."""
    chunk = b"BT /F1 12 Tf 72 720 Td (word) Tj ET\n" * 29_000
    data, _, _ = repeated_deflate(b"", chunk, 8, b"", raw=False)
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", _PAGE % (4, 5),
                 _stream(data, b" /Filter /FlateDecode"), _FONT, b"<< /Title (Operators) >>"])


def pdf_many_pages() -> bytes:
    """20,000 pages sharing one content stream (3 MB)."""
    pages = 20_000
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
                 _stream(_text("One of very many pages.")), _FONT, *[_PAGE % (3, 4)] * pages,
                 b"<< /Title (Many pages) >>"])


def pdf_folded_outline() -> bytes:
    """An outline of 40 entries where each entry's first child and next sibling are the next
    entry: 40 objects, 2^40 paths through the tree."""
    entries, first = 40, 7
    objects = [b"<< /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               _PAGE % (4, 5), _stream(_text("A chapter of a book whose outline folds back on itself.")), _FONT,
               b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (first, first, entries)]
    for i in range(entries):
        link = b" /First %d 0 R /Next %d 0 R" % (first + i + 1, first + i + 1) if i + 1 < entries else b""
        objects.append(b"<< /Title (Part %d) /Parent 6 0 R%s /Dest [3 0 R /Fit] >>" % (i, link))
    objects.append(b"<< /Title (Folded outline) >>")
    return _pdf(objects)


def deep_html() -> bytes:
    """A page nested 900,000 elements deep (10 MB)."""
    depth = 900_000
    return (b"<!doctype html><html><head><title>Deep</title></head><body>" + b"<div>" * depth
            + b"<p>The innermost paragraph of a page nested far too deep.</p>" + b"</div>" * depth + b"</body></html>")


# name in raw/, builder, what the quarantine reason must say
CASES: dict[str, tuple[str, Callable[[], bytes], str]] = {
    "docx": ("report.docx", docx_bomb, "too-expanded: its part word/document.xml decompresses past 200 MB"),
    "docx-entities": ("laughs.docx", docx_entity_bomb,
                      "xml-entities: its part word/document.xml declares XML entities"),
    "xlsx": ("budget.xlsx", xlsx_bomb, "too-expanded: its part xl/worksheets/sheet1.xml decompresses past 200 MB"),
    "pptx": ("deck.pptx", pptx_bomb, "too-expanded: its part ppt/slides/slide1.xml decompresses past 200 MB"),
    "epub": ("book.epub", epub_bomb, "too-expanded: its part OEBPS/c0.xhtml expands"),
    "pdf-flate": ("stream.pdf", pdf_flate_bomb, "too-expanded: its stream 4 decompresses past 200 MB"),
    "pdf-operators": ("drawing.pdf", pdf_page_of_operators,
                      "too-expanded: its page 1's content decompresses past 4 MB"),
    "pdf-pages": ("pages.pdf", pdf_many_pages, "too-many-pages: is a PDF of more than 5,000 pages (20,000)"),
    "pdf-outline": ("outline.pdf", pdf_folded_outline, "outline-loop: its outline (bookmarks) loops back on itself"),
    "html": ("deep.html", deep_html, "too-deep: nests its elements more than 1,000 deep"),
}


# -- watching a daemon -----------------------------------------------------------------------------

def file_row(root: Path, rel: str) -> tuple[str, str, int] | None:
    """(state, reason, attempts) of a file, read from the ledger (read-only)."""
    db = sqlite3.connect(f"file:{root / '.wikiwright' / 'state.db'}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT state, reason, attempts FROM files WHERE path=?", (rel,)).fetchone()
    except sqlite3.OperationalError:  # the daemon has not made its tables yet
        return None
    finally:
        db.close()
    return (str(row[0]), str(row[1]), int(row[2])) if row else None


def peak_rss_kb(pid: int) -> int:
    """VmHWM: the highest resident set size the process ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def launch(tmp_path: Path, daemons: list[subprocess.Popen[str]]) -> tuple[Path, subprocess.Popen[str]]:
    root = tmp_path / "Wiki"
    made = cli("init", "--no-default", str(root))
    assert made.returncode == 0, made.stderr
    proc = start_daemon(root)
    daemons.append(proc)

    def ready() -> bool:
        assert proc.poll() is None, f"daemon exited early:\n{daemon_log(proc)}"
        try:
            beat = json.loads((root / ".wikiwright" / "heartbeat.json").read_text())
        except (OSError, ValueError):
            return False
        return bool(beat["pid"] == proc.pid and not beat["stopped"])

    wait_for(ready, timeout=30, what="the daemon to start")
    return root, proc


def test_hostile_documents_are_quarantined_at_once_and_the_daemon_stays_small(
        tmp_path: Path, daemons: list[subprocess.Popen[str]]) -> None:
    """Every bomb dropped at once into one running daemon, as a mailbox's worth of attachments
    would be: each is quarantined on its first reading with the reason that names its bound,
    never tried again; an ordinary note dropped after them is ingested; the daemon and every
    document reader it started stay under the memory limit."""
    built = {case: (name, build(), reason) for case, (name, build, reason) in CASES.items()}
    for name, data, _reason in built.values():
        assert len(data) < 10_000_000, name  # under ingest.max_source_bytes: only its content is hostile
    root, proc = launch(tmp_path, daemons)
    for name, data, _reason in built.values():
        (root / "raw" / name).write_bytes(data)

    def all_quarantined() -> dict[str, tuple[str, str, int]] | None:
        rows = {case: file_row(root, f"raw/{name}") for case, (name, _data, _reason) in built.items()}
        if any(row is None or row[0] != "quarantined" for row in rows.values()):
            return None
        return {case: row for case, row in rows.items() if row is not None}

    # Two workers read them; "at once" is each within its reader's bounds, not after retries.
    rows = wait_for(all_quarantined, timeout=10 + 5 * len(built),
                    what=f"every bomb to be quarantined\n{daemon_log(proc)[-3000:]}")
    wrong = {case: row for case, row in rows.items()
             if not row[1].startswith(built[case][2]) or row[2] != 1}
    assert not wrong, wrong  # the bound named, on the first reading

    (root / "raw" / "tides.md").write_text(NOTE)
    wait_for(lambda: (r := file_row(root, "raw/tides.md")) is not None and r[0] == "ingested", timeout=30,
             what=f"the ordinary note to be ingested\n{daemon_log(proc)[-3000:]}")
    assert all_quarantined() == rows  # still quarantined, never tried again

    daemon_peak = peak_rss_kb(proc.pid)
    assert daemon_peak < RSS_LIMIT_KB, f"the daemon's peak RSS was {daemon_peak // 1024} MB"
    readers = children(proc.pid)
    assert readers, "no document reader process"
    for pid in readers:  # the readers that read the bombs stayed small too
        peak = peak_rss_kb(pid)
        assert peak < RSS_LIMIT_KB, f"the document reader's peak RSS was {peak // 1024} MB"


def test_the_one_shot_cli_quarantines_a_bomb_and_ingests_the_note(tmp_path: Path) -> None:
    """``wikiwright ingest`` reads through the same bounded reader; its peak RSS (with every
    process it started, from wait4) stays small, and its reader is gone when it exits."""
    root = tmp_path / "Wiki"
    assert cli("init", "--no-default", str(root)).returncode == 0
    bomb, note = tmp_path / "report.docx", tmp_path / "tides.md"
    bomb.write_bytes(docx_bomb())
    note.write_text(NOTE)
    # The command runs under a small fresh interpreter that reports its children's peak RSS: a
    # child spawned straight from this (large, long-lived) test worker would carry the worker's
    # own peak into its ru_maxrss across exec, measuring pytest rather than wikiwright.
    measure = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
               "print('PEAK-KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "wikiwright", "ingest", "--vault",
                           str(root), str(bomb), str(note)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    output = done.stdout
    peak_kb = int(output.rsplit("PEAK-KB", 1)[1].split()[0])
    state, reason, attempts = file_row(root, "raw/report.docx") or ("", "", 0)
    assert state == "quarantined" and "decompresses past 200 MB" in reason and attempts == 1, output
    assert (file_row(root, "raw/tides.md") or ("",))[0] == "ingested", output
    # RUSAGE_CHILDREN covers the command and the processes it reaped in turn (its document reader).
    assert peak_kb < RSS_LIMIT_KB, f"peak RSS {peak_kb // 1024} MB"


def big_docx(paragraphs: int) -> bytes:
    """A Word file of distinct paragraphs: within the size bounds, heavy to parse (python-docx
    builds a tree of every one)."""
    ns = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    xml = (b'<?xml version="1.0"?><w:document ' + ns + b"><w:body>"
           + b"".join(b"<w:p><w:r><w:t>paragraph %d</w:t></w:r></w:p>" % n for n in range(paragraphs))
           + b"</w:body></w:document>")
    packer = zlib.compressobj(1, zlib.DEFLATED, -15)
    member = (packer.compress(xml) + packer.flush(), zlib.crc32(xml), len(xml))
    return rezip(docx_bytes("Big", "Part", ["x"], [], [["a"]]), {"word/document.xml": member})


def test_the_reader_process_has_a_memory_and_a_time_limit() -> None:
    """What passes the size checks but needs more memory or time than allowed fails in the
    reader process, with a reason naming the limit; the next document gets a fresh reader."""
    from wikiwright.intake.extract import Limits, SourceRejected, extract_source

    data = big_docx(700_000)  # 30 MB of XML, 2 MB on disk
    roomy = {"expanded_bytes": 10**10, "member_bytes": 10**10}
    with pytest.raises(SourceRejected) as caught:
        extract_source(Path("big.docx"), data, Limits(**roomy, memory_bytes=150 * MB))
    assert caught.value.code == "too-much-memory" and "of memory to read" in str(caught.value)
    with pytest.raises(SourceRejected) as caught:
        extract_source(Path("big.docx"), data, Limits(**roomy, timeout_seconds=0.5))
    assert caught.value.code == "too-slow" and "took longer than 0.5 s" in str(caught.value)
    note = extract_source(Path("tides.md"), NOTE.encode(), Limits())
    assert note.text == NOTE and note.kind == "markdown"
