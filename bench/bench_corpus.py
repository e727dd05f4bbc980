"""The offline engine on real documents: does it read them, and does it build a wiki?

    .venv/bin/python bench/bench_corpus.py                 # ~130 mixed documents, then 1,000 sources
    .venv/bin/python bench/bench_corpus.py --scale 0       # the quality table only
    .venv/bin/python bench/bench_corpus.py --keep DIR      # keep the vaults (open them in Obsidian)

The corpus is built from documents installed on this machine, not written for the test:
package READMEs, Debian changelogs and copyright files from /usr/share/doc, man pages rendered
to text by ``man``, HTML manuals under /usr/share/doc, the PDFs found there (and, where groff's
PDF device is installed, man pages rendered to PDF by ``groff -Tpdf``), and Word, PowerPoint,
spreadsheet, CSV and EPUB files made from installed documents by python-docx, python-pptx,
openpyxl and zipfile. Every file is ingested by the real pipeline (offline engine, git commits)
and the table reports (issue 11):

- text files quarantined for their extension (target 0); PDF/DOCX/PPTX/HTML read (all with text);
- titles taken from a sub-heading while a better title exists (0);
- summaries starting with navigation or boilerplate (0; rule: ``textrules.BOILERPLATE_RULES``),
  repeated key points (0), identifiers with underscores damaged (0);
- source pages linking to at least one concept/entity page shared with another source (>= 70%);
- links from a source page that its own text does not back (< 10%);
- pages with generic titles used as link targets (0);
- the vault's link graph (obsidiantools when it installs, else the same check in this file):
  broken links 0, isolated wiki pages 0;
- ingest time per source without a model, at 100 and at 1,000 sources, and the growth.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from refcode import export_code, isolate

ROOT = Path(__file__).resolve().parent.parent
DOC = Path("/usr/share/doc")
MAN_PAGES = ["ls", "cp", "mv", "rm", "grep", "sed", "tar", "gzip", "find", "xargs", "sort", "uniq", "cut", "chmod",
             "chown", "ln", "cat", "head", "tail", "wc", "diff", "patch", "make", "git", "bash", "ssh", "curl",
             "python3", "date", "du", "df", "ps", "kill", "env", "tee", "tr", "awk", "less", "man", "apt"]


# -- the corpus --------------------------------------------------------------------------------

def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _name(path: Path, base: Path = DOC) -> str:
    """``/usr/share/doc/git/README.md`` -> ``git/README.md``: each package's documents in its
    own folder under raw/, as a person files a project's documents (the folder names the project)."""
    rel = path.relative_to(base).as_posix()
    return rel[:-3] if rel.endswith(".gz") else rel


def _site_packages() -> list[Path]:
    import sysconfig

    found = [Path(sysconfig.get_paths()["purelib"]), Path("/usr/lib/python3/dist-packages")]
    return [p for p in dict.fromkeys(found) if p.is_dir()]


def package_descriptions(limit: int = 60) -> list[tuple[str, bytes]]:
    """The long descriptions installed packages carry in ``*.dist-info/METADATA`` (their PyPI
    page: README, often with the changelog), markdown or reStructuredText, as
    ``<Name>/README.md`` or ``<Name>/README.rst``."""
    import email.parser

    found: list[tuple[str, bytes]] = []
    for site in _site_packages():
        for meta in sorted(site.glob("*.dist-info/METADATA")):
            message = email.parser.Parser().parsestr(meta.read_text(encoding="utf-8", errors="replace"))
            body = message.get_payload() if not message.is_multipart() else ""
            body = body if isinstance(body, str) and body.strip() else str(message.get("Description") or "")
            name = str(message.get("Name") or meta.parent.name.split("-")[0])
            if len(body.strip()) < 400 or name.casefold() in ("wikiwright",):
                continue
            kind = str(message.get("Description-Content-Type") or "")
            suffix = ".md" if "markdown" in kind else ".rst" if "rst" in kind else ".txt"
            found.append((f"{name}/README{suffix}", body.encode("utf-8")))
            if len(found) >= limit:
                return found
    return found


def _docx_from_markdown(text: str) -> bytes:
    import docx

    document = docx.Document()
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        setext = re.fullmatch(r"([^\n]+)\n(=+|-+)\s*", block)
        if setext:  # "Title\n=====" is a heading too
            block = ("# " if setext.group(2)[0] == "=" else "## ") + setext.group(1).strip()
        heading = re.match(r"^(#{1,3})\s+(.+)", block)
        if heading and "\n" not in block:
            document.add_paragraph(heading.group(2), style=f"Heading {len(heading.group(1))}")
        elif all(re.match(r"\s*[-*]\s", line) for line in block.splitlines()):
            for line in block.splitlines():
                document.add_paragraph(re.sub(r"^\s*[-*]\s+", "", line), style="List Bullet")
        else:
            document.add_paragraph(" ".join(block.split()))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _pptx_from_man(text: str, name: str) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = f"{name} — a short tour"
    sections = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    for heading, body in zip(sections[1::2], sections[2::2], strict=False):
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if p.strip()][:5]
        if not paragraphs:
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = heading.title()
        frame = slide.placeholders[1].text_frame
        frame.text = paragraphs[0][:300]
        for paragraph in paragraphs[1:]:
            frame.add_paragraph().text = paragraph[:300]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _xlsx(sheets: dict[str, list[list[str]]], title: str) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    first = True
    for sheet_name, rows in sheets.items():
        ws = book.active if first else book.create_sheet()
        assert ws is not None
        ws.title = sheet_name[:31]
        first = False
        for row in rows:
            ws.append(row)
    book.properties.title = title
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _epub(title: str, chapters: list[str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                      'full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                      "</rootfiles></container>")
        items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i in range(len(chapters)))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        book.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                      f'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}'
                      f"</dc:title></metadata><manifest>{items}</manifest><spine>{spine}</spine></package>")
        for i, chapter in enumerate(chapters):
            book.writestr(f"OEBPS/c{i}.xhtml", chapter)
    return out.getvalue()


def _man_text(name: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "MAN_KEEP_FORMATTING"}
    env["MANWIDTH"] = "80"
    result = subprocess.run(["man", "-P", "cat", name], capture_output=True, env=env, timeout=60, check=False)
    return result.stdout if result.returncode == 0 else b""


def _man_pdf(name: str) -> bytes:
    source = next(iter(sorted(Path("/usr/share/man/man1").glob(f"{name}.1*"))), None)
    if source is None or not shutil.which("groff"):
        return b""
    result = subprocess.run(["groff", "-Tpdf", "-man"], input=_read(source), capture_output=True, timeout=60,
                            check=False)
    return result.stdout if result.returncode == 0 and result.stdout.startswith(b"%PDF") else b""


def build_mixed(out: Path) -> dict[str, str]:
    """~130 documents of mixed kinds; returns name -> kind (what the file is)."""
    out.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, str] = {}
    seen: set[bytes] = set()

    def put(name: str, data: bytes, kind: str) -> None:
        if not data.strip() or data in seen:
            return
        seen.add(data)
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
        kinds[name] = kind

    readmes = sorted(p for p in DOC.glob("*/README*") if p.is_file())
    for path in readmes[:45]:
        put(_name(path), _read(path), "text")
    for path in sorted(DOC.glob("*/changelog.Debian.gz"))[:12]:
        data = _read(path)
        put(_name(path), data[:200_000], "text")
    for path in sorted(DOC.glob("*/copyright"))[:10]:
        put(_name(path), _read(path), "text")
    for name, data in package_descriptions():
        put(name, data, "markdown" if name.endswith(".md") else "rst" if name.endswith(".rst") else "text")
    for name in MAN_PAGES[:20]:
        put(f"man/{name}.1.txt", _man_text(name), "man")
    htmls = (sorted(DOC.glob("nodejs/api/*.html"))[:14] + sorted(DOC.glob("valgrind/html/*.html"))[:8]
             + sorted(DOC.glob("libxslt1-dev/html/*.html"))[:4] + sorted(DOC.glob("*/*.html"))[:4])
    for path in htmls:
        put(_name(path), _read(path), "html")
    for path in sorted(DOC.glob("**/*.pdf")):
        put(_name(path), path.read_bytes(), "pdf")
    for name in MAN_PAGES[20:28]:
        put(f"man/{name}.1.pdf", _man_pdf(name), "pdf")
    markdown = [p for p in sorted(DOC.glob("*/README.md*")) + sorted(DOC.glob("*/*.md*")) if p.is_file()]
    for path in markdown[:6]:
        put(_name(path).rsplit(".md", 1)[0] + ".docx", _docx_from_markdown(_read(path).decode("utf-8", "replace")),
            "docx")
    from wikiwright.intake.extract.text import man_page_to_markdown

    for name in MAN_PAGES[28:32]:
        converted = man_page_to_markdown(_man_text(name).decode("utf-8", "replace"))
        if converted:
            put(f"man/{name}-tour.pptx", _pptx_from_man(converted[0], name), "pptx")
    services = [line.split() for line in Path("/etc/services").read_text().splitlines()
                if line.strip() and not line.startswith("#")] if Path("/etc/services").exists() else []
    if services:
        rows = [["name", "port/protocol", "aliases"]] + [[r[0], r[1], " ".join(r[2:])] for r in services]
        put("tables/services.xlsx", _xlsx({"services": rows}, "Network services"), "xlsx")
        put("tables/services.csv", "\n".join(",".join(r) for r in rows).encode(), "csv")
    packages = subprocess.run(["dpkg-query", "-W", "-f", "${Package},${Version},${Installed-Size}\n"],
                              capture_output=True, text=True, check=False).stdout
    if packages:
        rows = [["package", "version", "installed size (KiB)"]] + [line.split(",") for line in packages.splitlines()]
        put("tables/packages.xlsx", _xlsx({"packages": rows}, "Installed packages"), "xlsx")
    chapters = [_read(p).decode("utf-8", "replace") for p in sorted(DOC.glob("nodejs/api/*.html"))[14:17]]
    if chapters:
        put("nodejs/nodejs-chapters.epub", _epub("Node.js API chapters", chapters), "epub")
    return kinds


def build_scale(out: Path, count: int, avoid: set[str]) -> list[str]:
    """More real documents (READMEs, changelogs, copyright files) up to ``count`` in all."""
    out.mkdir(parents=True, exist_ok=True)
    names = []
    seen: set[bytes] = set()
    pool = sorted(DOC.glob("*/README*")) + sorted(DOC.glob("*/changelog.Debian.gz")) + sorted(DOC.glob("*/copyright")) \
        + sorted(DOC.glob("*/NEWS*")) + sorted(DOC.glob("*/changelog.gz"))
    for path in pool:
        if len(names) >= count:
            break
        name = _name(path)
        if name in avoid or not path.is_file():
            continue
        data = _read(path)[:200_000]
        if not data.strip() or data in seen:
            continue
        seen.add(data)
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
        names.append(name)
    return names


# -- running the pipeline ------------------------------------------------------------------------

class Run:
    def __init__(self, root: Path) -> None:
        from wikiwright.core.config import load_config
        from wikiwright.door.init import init_vault
        from wikiwright.runtime.context import VaultContext

        self.vault, _ = init_vault(root, "wikiwright", "wikiwright@localhost")
        self.config = load_config(self.vault.root)
        # The process's vault context and its ingest wiring (as the daemon's), open until exit.
        self.ctx = VaultContext(self.config, self.vault)
        services = self.ctx.ingest_services()
        self.ledger, self.catalog = self.ctx.ledger, self.ctx.catalog
        self.pipeline, self.registrar = services.pipeline, services.registrar
        self.planner = self.pipeline.planner
        self.plan_seconds: list[float] = []
        self._read_seconds = 0.0

        def timer(original: Any, finishes: bool) -> Any:
            def timed(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    self._read_seconds += time.perf_counter() - started
                    if finishes:
                        self.plan_seconds.append(self._read_seconds)
                        self._read_seconds = 0.0
            return timed

        # The planner's work per source: plan(), or read() + plan_read() where the pipeline calls
        # those (the part read outside the planner's lock, then the rest).
        if hasattr(self.planner, "plan_read"):
            self.planner.read = timer(self.planner.read, False)
            self.planner.plan_read = timer(self.planner.plan_read, True)
        else:
            self.planner.plan = timer(self.planner.plan, True)  # type: ignore[method-assign]

    def ingest(self, folder: Path, names: list[str]) -> list[float]:
        """Drop each file and ingest it at once; seconds per source (read + plan + write + commit)."""
        took = []
        for name in names:
            target = self.vault.raw / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / name, target)
            self.registrar.register(target)
            started = time.perf_counter()
            while self.pipeline.drain_once() is not None:
                pass
            took.append(time.perf_counter() - started)
        return took


# -- the checks -----------------------------------------------------------------------------------

def _pages(vault: Any) -> dict[str, tuple[dict[str, Any], str]]:
    from wikiwright.wiki.pages import parse_page

    found = {}
    for path in sorted(vault.wiki.rglob("*.md")):
        page = parse_page(path.read_text(encoding="utf-8"))
        found[path.relative_to(vault.wiki).with_suffix("").as_posix()] = (page.meta, page.body)
    return found


def _links(body: str) -> list[str]:
    from wikiwright.wiki.pages import iter_links

    return [link.target for link in iter_links(body)]


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def quality(run: Run, kinds: dict[str, str]) -> dict[str, Any]:
    from wikiwright.ingest.offline import headings, source_properties
    from wikiwright.ingest.textrules import boilerplate_rule, is_generic_title
    from wikiwright.intake.extract import read_source
    from wikiwright.wiki.pages import get_section

    pages = _pages(run.vault)
    by_stem = {name.rsplit("/", 1)[-1].casefold(): name for name in pages}
    records = {r.path: r for r in run.ledger.files()} if hasattr(run.ledger, "files") else {}
    if not records:
        records = {f"raw/{n}": run.ledger.get_file(f"raw/{n}") for n in kinds}
    out: dict[str, Any] = {}
    quarantined_text = []
    read: Counter[str] = Counter()
    total: Counter[str] = Counter()
    sub_heading_titles = []
    boiler = []
    repeated = 0
    underscores_lost = []
    linking = 0
    backed = unbacked = 0
    unbacked_examples = []
    source_pages = 0
    for name, kind in kinds.items():
        record = records.get(f"raw/{name}")
        total[kind] += 1
        if record is None:
            continue
        if record.state == "quarantined":
            if kind in ("text", "man", "csv", "markdown", "rst"):
                quarantined_text.append(f"{name}: {record.reason}")
            continue
        if record.state != "ingested" or not record.page:
            continue
        read[kind] += 1
        meta, body = pages.get(record.page, ({}, ""))
        source_pages += 1
        source = read_source(run.vault.raw / name, (run.vault.raw / name).read_bytes())
        props, text = source_properties(source.text, source.kind)
        has_better = bool(props.get("title")) or any(level == 1 for level, _ in headings(text)) or bool(
            source.doc_title.strip())
        subs = {h.strip().rstrip("#").strip().casefold() for level, h in headings(text) if level >= 2}
        own = {str(props.get("title") or "").casefold(), source.doc_title.casefold()}
        own |= {h.strip().rstrip("#").strip().casefold() for level, h in headings(text) if level == 1}
        own |= {part.strip().casefold() for part in re.split(r"\s+[|—–·:-]\s+", source.doc_title)}
        title = str(meta.get("title", "")).casefold()
        if has_better and title in subs and title not in own:
            sub_heading_titles.append(f"{name}: {meta.get('title')}")
        summary = (get_section(body, "Summary") or "").split("\n", 2)[-1].strip()
        first = re.split(r"(?<=[.!?])\s", summary, maxsplit=1)[0] if summary else ""
        rule = boilerplate_rule(first) if first else ""
        if rule:
            boiler.append(f"{name}: [{rule}] {first[:90]}")
        points = [line[2:].strip() for line in (get_section(body, "Key points") or "").splitlines()
                  if line.startswith("- ")]
        sentences = re.split(r"(?<=[.!?])\s", summary) + points
        repeated += len(sentences) - len({_folded(s) for s in sentences})
        shown = summary + " " + " ".join(points)
        for ident in set(re.findall(r"\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b", text)):
            if ident.replace("_", "") in shown and ident not in shown and ident.replace("_", "") not in text:
                underscores_lost.append(f"{name}: {ident}")
        related = get_section(body, "Related pages") or ""
        targets = _links(related)
        folded_text = _folded(text + " " + source.doc_title)
        shared = False
        for target in targets:
            page = by_stem.get(target.rsplit("/", 1)[-1].casefold())
            if page is None:
                continue
            tmeta = pages[page][0]
            if tmeta.get("type") in ("entity", "concept") and len(tmeta.get("sources") or []) >= 2:
                shared = True
            labels = [str(tmeta.get("title") or "")] + [str(a) for a in tmeta.get("aliases") or []]
            if any(label and _folded(label) in folded_text for label in labels):
                backed += 1
            else:
                unbacked += 1
                unbacked_examples.append(f"{name} -> {target}")
        linking += shared
    generic_targets = set()
    for _meta, body in pages.values():
        for target in _links(body):
            page = by_stem.get(target.rsplit("/", 1)[-1].casefold())
            if page is None or page in ("index", "log", "overview"):
                continue
            title = str(pages[page][0].get("title") or "")
            if is_generic_title(title) or title.casefold() in ("documentation", "introduction", "readme", "overview",
                                                                 "changelog"):
                generic_targets.add(f"{page} ({title})")
    out["text files quarantined for their extension"] = (len(quarantined_text), quarantined_text[:5])
    for kind in ("pdf", "docx", "pptx", "html", "xlsx", "csv", "epub", "man", "text", "markdown", "rst"):
        if total[kind]:
            out[f"{kind} read"] = f"{read[kind]}/{total[kind]}"
    out["titles from a sub-heading while a better exists"] = (len(sub_heading_titles), sub_heading_titles[:5])
    out["summaries starting with navigation/boilerplate"] = (len(boiler), boiler[:5])
    out["repeated key points"] = repeated
    out["identifiers with underscores damaged"] = (len(underscores_lost), underscores_lost[:5])
    out["source pages linking to a shared concept/entity page"] = (
        f"{linking}/{source_pages} = {100 * linking / max(1, source_pages):.0f}%")
    links_total = backed + unbacked
    out["links the source's own text does not back"] = (
        f"{unbacked}/{links_total} = {100 * unbacked / max(1, links_total):.1f}%", unbacked_examples[:5])
    out["generic-title pages used as link targets"] = (len(generic_targets), sorted(generic_targets)[:5])
    concept_pages = [n for n, (m, _) in pages.items() if m.get("type") in ("entity", "concept")]
    out["concept/entity pages"] = len(concept_pages)
    return out


# -- the words (issue 18): what a reader of the pages sees -----------------------------------------

_HTML_ELEMENTS = frozenset("""
a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption cite code col
colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset figcaption figure footer form h1 h2
h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label legend li link main map mark menu meta
meter nav noscript object ol optgroup option output p param picture pre progress q rp rt ruby s samp script
search section select slot small source span strong style sub summary sup table tbody td template textarea tfoot
th thead time title tr track u ul var video wbr svg math frame frameset applet base basefont center font marquee
""".split())  # noqa: SIM905 - a word list reads better as prose
_DAYS_MONTHS_UNITS = frozenset("""
monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun january february march
april may june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec
b kb mb gb tb kib mib gib bps kbps mbps ms us ns sec min hz khz mhz ghz px pt em dpi fps
""".split())  # noqa: SIM905 - a word list reads better as prose
_KP_CODE_RE = re.compile(r"^(\$|>>>|%|#)\s|^(FAILED|PASSED|ERROR)\b|\w\.py::|Traceback \(most recent|"
                         r"^File \"[^\"]+\", line|^\s*\[[^\]]+\]:\s*\S|^[\w.]+\([^)]*\)\s*$")
_RAW_MARKUP_RE = re.compile(r"(?<![\w`]):[a-z][\w+.-]*:`|\{[a-z][\w+.:-]*\}`|^\.\. [\w:-]+::|^\s*\.\. [\w:-]+::",
                            re.MULTILINE)


def _bench_fragment(point: str) -> bool:
    """A key point that is not a whole sentence, judged here independently of the engine's
    rules: no sentence end, a cut ("…"), unbalanced code spans or brackets, or a start in the
    middle of a sentence (a lower-case common word)."""
    from wordfreq import zipf_frequency

    text = point.strip()
    if not re.search(r"[.!?][\"'’”)\]`*_]*$", text) or text.endswith(("…", "...")):
        return True
    if text.count("`") % 2 or text.count("(") < text.count(")") or text.count("[") != text.count("]"):
        return True
    first = re.sub(r"^[\"'(*_]+", "", text).split()[0].strip(",;:")
    return first[:1].islower() and zipf_frequency(first, "en") >= 4.0


def _bare_file_name(title: str, name: str) -> bool:
    from wikiwright.ingest.offline import humanize_file_name

    return title.casefold() in {humanize_file_name(name).casefold(), Path(name).name.casefold(),
                                Path(name).stem.casefold()}


def _sentence_title(title: str) -> bool:
    words = title.split()
    return len(words) > 14 or (len(words) >= 4 and bool(re.search(r"[^.][.!?]$", title)))


def _index_listed(pages: dict[str, tuple[dict[str, Any], str]]) -> set[str]:
    """Every page index.md links to, following index pages it links to (one per type)."""
    listed: set[str] = set()
    todo = ["index"]
    by_stem = {name.rsplit("/", 1)[-1].casefold(): name for name in pages}
    while todo:
        current = todo.pop()
        if current in listed or current not in pages:
            continue
        listed.add(current)
        for target in _links(pages[current][1]):
            page = by_stem.get(target.rsplit("/", 1)[-1].casefold())
            if page is None or page in listed:
                continue
            if pages[page][0].get("type") == "index" or page.rsplit("/", 1)[-1].startswith("index"):
                todo.append(page)
            else:
                listed.add(page)
    return listed


def words_checks(run: Run, kinds: dict[str, str]) -> dict[str, Any]:
    """The checks of issue 18, on the pages as written."""
    from wikiwright.intake.extract import read_source
    from wikiwright.wiki.pages import get_section
    from wordfreq import zipf_frequency

    pages = _pages(run.vault)
    records = {f"raw/{n}": run.ledger.get_file(f"raw/{n}") for n in kinds}
    sources: list[tuple[str, str, dict[str, Any], str]] = []  # (name, page, meta, body)
    for name in kinds:
        record = records.get(f"raw/{name}")
        if record is None or record.state != "ingested" or not record.page or record.page not in pages:
            continue
        meta, body = pages[record.page]
        sources.append((name, record.page, meta, body))
    titles = Counter(str(meta.get("title") or "").casefold() for _, _, meta, _ in sources)
    duplicate = [f"{name}: {meta.get('title')}" for name, _, meta, _ in sources
                 if titles[str(meta.get("title") or "").casefold()] > 1]
    bare, sentence_titles, markup_pages = [], [], []
    points = fragments = 0
    fragment_examples: list[str] = []
    code_points: list[str] = []
    removed_non_html: list[str] = []
    redacted: list[str] = []
    for name, _page, meta, body in sources:
        title = str(meta.get("title") or "")
        if _bare_file_name(title, name):  # read the source again only then (a PDF takes a while)
            source = read_source(run.vault.raw / name, (run.vault.raw / name).read_bytes())
            own = {h.strip().casefold() for h in re.findall(r"^# (.+)$", source.text, re.MULTILINE)}
            own |= {part.strip().casefold() for part in re.split(r"\s+[|—–·:-]\s+", source.doc_title) if part.strip()}
            if own and title.casefold() not in own:  # a heading or metadata said more than the file name
                bare.append(f"{name}: {title}")
        if _sentence_title(title):
            sentence_titles.append(f"{name}: {title}")
        summary = (get_section(body, "Summary") or "").strip()
        key_points = [line[2:].strip() for line in (get_section(body, "Key points") or "").splitlines()
                      if line.startswith("- ")]
        for point in key_points:
            points += 1
            if _bench_fragment(point):
                fragments += 1
                fragment_examples.append(f"{name}: {point[:70]}")
            if _KP_CODE_RE.search(point):
                code_points.append(f"{name}: {point[:70]}")
        if _RAW_MARKUP_RE.search(summary + "\n" + "\n".join(key_points)):
            markup_pages.append(name)
        for line in (get_section(body, "Cleaned") or "").splitlines():
            tag = re.search(r"removed a `<(\w[\w:-]*)>` element|removed markup nh3 does not allow: `?<([\w@.:-]+)",
                            line)
            if tag and (tag.group(1) or tag.group(2) or "").casefold() not in _HTML_ELEMENTS:
                removed_non_html.append(f"{name}: {line[2:80]}")
        if "[REDACTED" in body or meta.get("secrets"):
            redacted.append(f"{name}: {meta.get('secrets')}")
    concept_pages = [(n, m, b) for n, (m, b) in pages.items() if m.get("type") in ("entity", "concept")]
    common = []
    whole_definitions = 0
    weak_definitions = []
    for _page, meta, body in concept_pages:
        title = str(meta.get("title") or "")
        words = title.split()
        acronym = re.fullmatch(r"[A-Z][A-Z0-9+#&-]{1,9}", title) is not None
        if title.casefold() in _DAYS_MONTHS_UNITS or (
                len(words) == 1 and not acronym and not re.search(r"[a-z][A-Z]|\d", title)
                and zipf_frequency(title.casefold(), "en") >= 4.3):
            common.append(title)
        quote = next((line[2:] for line in (get_section(body, "What it is") or "").splitlines()
                      if line.startswith("> ") and not line.startswith("> — ")), "")
        labels = [title, *[str(a) for a in meta.get("aliases") or []]]
        names_it = any(re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", quote, re.IGNORECASE)
                       for label in labels if label)
        if quote and names_it and not _bench_fragment(quote) and not _KP_CODE_RE.search(quote):
            whole_definitions += 1
        else:
            weak_definitions.append(f"{title}: {quote[:60]}")
    listed = _index_listed(pages)
    missing = [n for n in pages if n not in listed and n not in ("log",) and not n.rsplit("/", 1)[-1].startswith(
        "index")]
    total_concepts = len(concept_pages)
    return {
        "projects (folders under raw/)": len({name.split("/", 1)[0] for name in kinds if "/" in name}),
        "duplicate titles (target 0)": (len(duplicate), duplicate[:4]),
        "bare file-name titles (target 0)": (len(bare), bare[:4]),
        "sentence titles (target 0)": (len(sentence_titles), sentence_titles[:3]),
        "key-point fragments (target ≤ 5%)": (
            f"{fragments}/{points} = {100 * fragments / max(1, points):.1f}%", fragment_examples[:4]),
        "pages with raw markup (target 0)": (len(markup_pages), markup_pages[:4]),
        "code or link-definition key points (target 0)": (len(code_points), code_points[:4]),
        "concept pages titled by a common word/day/month/unit (target 0)": (len(common), common[:8]),
        "definitions that are whole sentences naming their concept (target ≥ 90%)": (
            f"{whole_definitions}/{total_concepts} = {100 * whole_definitions / max(1, total_concepts):.0f}%",
            weak_definitions[:3]),
        "pages missing from index.md (target 0; the undo helper's part)": (len(missing), missing[:4]),
        "text removed as non-HTML (target 0; the model helper's part)": (len(removed_non_html), removed_non_html[:3]),
        "source pages with redactions (only real secrets; the secrets helper's part)": (len(redacted), redacted[:3]),
    }


def graph_check(wiki: Path) -> dict[str, Any]:
    """Every [[link]] in wiki/ resolves (by file name, as Obsidian does); every page has a link."""
    from wikiwright.wiki.pages import iter_links, link_key

    names = {link_key(p.stem): p for p in wiki.rglob("*.md")}
    outgoing: dict[str, set[str]] = {}
    incoming: Counter[str] = Counter()
    broken = []
    for path in wiki.rglob("*.md"):
        key = link_key(path.stem)
        outgoing[key] = set()
        for link in iter_links(path.read_text(encoding="utf-8")):
            target = link_key(link.target) if link.target else key
            if target not in names:
                broken.append(f"{path.stem} -> {link.target}")
                continue
            if target != key:
                outgoing[key].add(target)
                incoming[target] += 1
    isolated = [k for k in outgoing if not outgoing[k] and not incoming[k] and k not in ("log",)]
    return {"broken links": (len(broken), broken[:5]), "isolated wiki pages": (len(isolated), isolated[:5])}


def obsidiantools_check(vault_root: Path, cache: Path) -> dict[str, Any] | str:
    """The same graph through obsidiantools, installed into a private folder if it installs."""
    target = cache / "wikiwright-bench-obsidiantools"  # kept between runs: it is 200 MB with pandas
    if not (target / "obsidiantools").exists():
        result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                                 "obsidiantools"], capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0:
            return f"obsidiantools did not install: {result.stderr.strip()[-200:]}"
    if str(target) not in sys.path:
        sys.path.append(str(target))
    try:
        import obsidiantools.api as otools
    except Exception as exc:
        return f"obsidiantools did not import: {exc}"
    # Obsidian's own exclusions (userIgnoreFilters): raw/ and .wikiwright/ are not part of the graph.
    vault = otools.Vault(vault_root, include_subdirs=["wiki", "wiki/sources"]).connect()
    broken = list(vault.nonexistent_notes)
    in_wiki = {name for name, path in vault.md_file_index.items() if Path(path).parts[:1] == ("wiki",)}
    isolated = [n for n in vault.isolated_notes if n in in_wiki and n != "log"]
    return {"broken links (obsidiantools)": (len(broken), broken[:5]),
            "isolated wiki pages (obsidiantools)": (len(isolated), isolated[:5])}


PROBES = 20


def _tagged(tag: str, name: str) -> str:
    return (Path(name).parent / f"{tag}-{Path(name).name}").as_posix()


def growth(base: Path, corpus: Path, names: list[str], kinds: dict[str, str], scale: int) -> dict[str, Any]:
    """The same probe documents ingested when the wiki holds 100 sources and again at ``scale``:
    the same work at two wiki sizes, so the ratio is the growth (the rest of the corpus goes
    in between, in a fixed shuffled order so no window is all PDFs or all changelogs)."""
    import random

    more = base / "scale"
    shutil.rmtree(more, ignore_errors=True)
    extra = build_scale(more, scale - len(names), set(names))
    for name in names:
        shutil.copyfile(corpus / name, more / name)
    order = names + extra
    random.Random(11).shuffle(order)
    probes, rest = order[:PROBES], order[PROBES:]
    for tag in ("early", "late"):  # a probe's copies differ by one line: new sources, same work
        for name in probes:
            data = (more / name).read_bytes()
            marker = f"\n\nProbe copy ({tag}).\n".encode()
            copy = more / Path(name).parent / f"{tag}-{Path(name).name}"
            copy.write_bytes(data + marker if kinds.get(name, "text") in ("text", "man") else data)
    probes = [p for p in probes if kinds.get(p, "text") in ("text", "man")][:PROBES]
    run = Run(base / "grown")
    run.ingest(more, rest[: 100 - len(probes)])
    plan_mark = len(run.plan_seconds)
    early = run.ingest(more, [_tagged("early", p) for p in probes])
    early_plan = run.plan_seconds[plan_mark:]
    run.ingest(more, rest[100 - len(probes): scale - 2 * len(probes)])
    plan_mark = len(run.plan_seconds)
    late = run.ingest(more, [_tagged("late", p) for p in probes])
    late_plan = run.plan_seconds[plan_mark:]
    total = len(list(run.vault.sources_dir.glob("*.md")))
    rows: dict[str, Any] = {
        "sources in the wiki at the end": total,
        "pages in the wiki at the end": len(list(run.vault.wiki.rglob("*.md"))),
        f"probe sources ({len(probes)}) at ~100 sources: s per source, mean (read+plan+write+commit)":
            f"{statistics.mean(early):.3f}",
        f"the same probes at ~{scale} sources: s per source, mean": f"{statistics.mean(late):.3f}",
        f"growth 100 → {scale} (ratio)": f"{statistics.mean(late) / statistics.mean(early):.2f}",
        "offline engine's plan only, at ~100 / at the end (mean s)":
            f"{statistics.mean(early_plan):.3f} / {statistics.mean(late_plan):.3f}",
        "plan growth (ratio)": f"{statistics.mean(late_plan) / statistics.mean(early_plan):.2f}",
    }
    every = {**kinds, **dict.fromkeys(extra, "text")}
    every.update({_tagged(tag, p): "text" for tag in ("early", "late") for p in probes})
    quality_rows = quality(run, every)
    for key in ("source pages linking to a shared concept/entity page", "links the source's own text does not back",
                "generic-title pages used as link targets", "concept/entity pages"):
        rows[key] = quality_rows[key]
    rows.update(graph_check(run.vault.wiki))
    return rows


def show(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}\n")
    print("| measure | value |\n|---|---|")
    for key, value in rows.items():
        if isinstance(value, tuple):
            shown, examples = value
            extra = f" (e.g. {'; '.join(map(str, examples))})" if examples and shown not in (0, "0") else ""
            print(f"| {key} | {shown}{extra} |")
        else:
            print(f"| {key} | {value} |")


def quality_run(base: Path, corpus: Path, kinds: dict[str, str], use_obsidiantools: bool) -> None:
    run = Run(base / "mixed")
    took = run.ingest(corpus, sorted(kinds))
    rows = quality(run, kinds)
    rows.update(graph_check(run.vault.wiki))
    if use_obsidiantools:
        checked = obsidiantools_check(run.vault.root, Path(tempfile.gettempdir()))
        if isinstance(checked, str):
            rows["obsidiantools"] = checked
        else:
            rows.update(checked)
    rows["ingest seconds per source (median, read+plan+write+commit)"] = f"{statistics.median(took):.3f}"
    rows["of which the offline engine's plan (median)"] = f"{statistics.median(run.plan_seconds):.3f}"
    show(f"Quality on {len(kinds)} real documents (offline engine)", rows)
    show("The words (issue 18): titles, key points, concepts, definitions", words_checks(run, kinds))


def pick(kinds: dict[str, str], limit: int) -> dict[str, str]:
    """``limit`` documents taken in turn from each kind (a quick run still sees every format
    and as many projects as it can)."""
    by_kind: dict[str, list[str]] = {}
    for name in sorted(kinds):
        by_kind.setdefault(kinds[name], []).append(name)
    for names in by_kind.values():  # one document per project first, then the others
        seen: Counter[str] = Counter()
        rank = {}
        for name in names:
            rank[name] = seen[name.split("/")[0]]
            seen[name.split("/")[0]] += 1
        names.sort(key=lambda n: (rank[n], n))
    chosen: list[str] = []
    while len(chosen) < limit and any(by_kind.values()):
        for names in by_kind.values():
            if names and len(chosen) < limit:
                chosen.append(names.pop(0))
    return {name: kinds[name] for name in chosen}


def timing_run(base: Path, corpus: Path, kinds: dict[str, str]) -> dict[str, float]:
    run = Run(base)
    took = run.ingest(corpus, sorted(kinds))
    return {"ingest": statistics.median(took), "plan": statistics.median(run.plan_seconds),
            "ingest_mean": statistics.mean(took), "plan_mean": statistics.mean(run.plan_seconds)}


def compare(base: Path, corpus: Path, kinds: dict[str, str], ref: str, rounds: int) -> dict[str, Any]:
    """Ingest time per source of this tree against ``ref``'s code, on the same corpus, in turn
    (ref, this, ref, this …: both see the same machine load), each in its own process."""
    code = export_code(ref, base / "ref-code")
    (base / "kinds.json").write_text(json.dumps(kinds))
    times: dict[str, list[dict[str, float]]] = {"ref": [], "this": []}
    for round_ in range(rounds):
        for label, extra in (("ref", ["--code", str(code)]), ("this", [])):
            out = subprocess.run([sys.executable, __file__, "--timing-only", "--corpus", str(corpus),
                                  "--keep", str(base / f"t-{label}-{round_}"), *extra],
                                 capture_output=True, text=True, check=False)
            line = next((x for x in out.stdout.splitlines() if x.startswith('{"ingest"')), "")
            if not line:
                raise SystemExit(f"timing run failed ({label}): {out.stderr[-2000:]}")
            times[label].append(json.loads(line))
    rows: dict[str, Any] = {}
    for key, what in (("ingest", "ingest s per source, median (read+plan+write+commit)"),
                      ("plan", "offline engine's plan s per source, median")):
        ref_value = statistics.median(t[key] for t in times["ref"])
        this_value = statistics.median(t[key] for t in times["this"])
        rows[f"{what}: {ref} / this branch"] = f"{ref_value:.3f} / {this_value:.3f}"
        rows[f"{what}: ratio (target ≤ 1.20 for ingest)"] = f"{this_value / ref_value:.2f}"
    rows["rounds (each a fresh vault and process)"] = rounds
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1000, help="sources in the growth run (0: skip it)")
    parser.add_argument("--keep", type=Path, help="keep the vaults and the corpus in this folder")
    parser.add_argument("--no-obsidiantools", action="store_true", help="only the built-in graph check")
    parser.add_argument("--growth-only", action="store_true", help="skip the quality run on the mixed corpus")
    parser.add_argument("--limit", type=int, default=0, help="quick mode: this many documents (e.g. 60)")
    parser.add_argument("--compare", metavar="REF", help="also time REF's code (e.g. main) on the same corpus")
    parser.add_argument("--rounds", type=int, default=1, help="timing rounds per side with --compare")
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)  # an existing corpus (timing runs)
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)  # import wikiwright from here
    parser.add_argument("--timing-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.code:
        sys.path.insert(0, str(args.code))
    base = args.keep or Path(tempfile.mkdtemp(prefix="ww-corpus-"))
    base.mkdir(parents=True, exist_ok=True)
    isolate(base)
    sys.path.insert(1 if args.code else 0, str(ROOT))
    if args.timing_only:
        kinds = json.loads((args.corpus.parent / "kinds.json").read_text())
        print(json.dumps(timing_run(base / "vault", args.corpus, kinds)))
        return 0
    corpus = base / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    kinds = build_mixed(corpus)
    if args.limit:
        # Quick mode: no multi-megabyte manual (an all-in-one HTML page takes a minute to read).
        kinds = pick({n: k for n, k in kinds.items() if (corpus / n).stat().st_size < 1_000_000}, args.limit)
    mix = ", ".join(f"{k} {v}" for k, v in sorted(Counter(kinds.values()).items()))
    print(f"corpus: {len(kinds)} documents from this machine ({mix})")
    if not args.growth_only:
        quality_run(base, corpus, kinds, not args.no_obsidiantools)
    if args.compare:
        show(f"Cost: this branch against {args.compare}'s code, same corpus, same run",
             compare(base, corpus, kinds, args.compare, args.rounds))
    if args.scale:
        grow = growth(base, corpus, sorted(kinds), kinds, args.scale)
        show(f"Growth: ingest time per source without a model, to {args.scale} sources", grow)
    print(json.dumps({"base": str(base)}))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
