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
import threading
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

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
    rel = path.relative_to(base).as_posix()
    name = rel.replace("/", "_")
    return name[:-3] if name.endswith(".gz") else name


def _docx_from_markdown(text: str) -> bytes:
    import docx

    document = docx.Document()
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
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
    for name in MAN_PAGES[:20]:
        put(f"{name}.1.txt", _man_text(name), "man")
    htmls = (sorted(DOC.glob("nodejs/api/*.html"))[:14] + sorted(DOC.glob("valgrind/html/*.html"))[:8]
             + sorted(DOC.glob("libxslt1-dev/html/*.html"))[:4] + sorted(DOC.glob("*/*.html"))[:4])
    for path in htmls:
        put(_name(path), _read(path), "html")
    for path in sorted(DOC.glob("**/*.pdf")):
        put(_name(path), path.read_bytes(), "pdf")
    for name in MAN_PAGES[20:28]:
        put(f"{name}.1.pdf", _man_pdf(name), "pdf")
    markdown = [p for p in sorted(DOC.glob("*/README.md*")) + sorted(DOC.glob("*/*.md*")) if p.is_file()]
    for path in markdown[:6]:
        put(_name(path).rsplit(".md", 1)[0] + ".docx", _docx_from_markdown(_read(path).decode("utf-8", "replace")),
            "docx")
    from wikiwright.intake.extract.text import man_page_to_markdown

    for name in MAN_PAGES[28:32]:
        converted = man_page_to_markdown(_man_text(name).decode("utf-8", "replace"))
        if converted:
            put(f"{name}-tour.pptx", _pptx_from_man(converted[0], name), "pptx")
    services = [line.split() for line in Path("/etc/services").read_text().splitlines()
                if line.strip() and not line.startswith("#")] if Path("/etc/services").exists() else []
    if services:
        rows = [["name", "port/protocol", "aliases"]] + [[r[0], r[1], " ".join(r[2:])] for r in services]
        put("services.xlsx", _xlsx({"services": rows}, "Network services"), "xlsx")
        put("services.csv", "\n".join(",".join(r) for r in rows).encode(), "csv")
    packages = subprocess.run(["dpkg-query", "-W", "-f", "${Package},${Version},${Installed-Size}\n"],
                              capture_output=True, text=True, check=False).stdout
    if packages:
        rows = [["package", "version", "installed size (KiB)"]] + [line.split(",") for line in packages.splitlines()]
        put("packages.xlsx", _xlsx({"packages": rows}, "Installed packages"), "xlsx")
    chapters = [_read(p).decode("utf-8", "replace") for p in sorted(DOC.glob("nodejs/api/*.html"))[14:17]]
    if chapters:
        put("nodejs-chapters.epub", _epub("Node.js API chapters", chapters), "epub")
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
        (out / name).write_bytes(data)
        names.append(name)
    return names


# -- running the pipeline ------------------------------------------------------------------------

def isolate(base: Path) -> None:
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
                         "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n")
    for name in list(os.environ):
        if name.startswith("WIKIWRIGHT_"):
            del os.environ[name]
    os.environ.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                       "XDG_STATE_HOME": str(home / ".state"), "GIT_CONFIG_GLOBAL": str(gitconfig),
                       "GIT_CONFIG_NOSYSTEM": "1"})


class Run:
    def __init__(self, root: Path) -> None:
        from wikiwright.core.config import load_config
        from wikiwright.door import Door
        from wikiwright.door.init import init_vault
        from wikiwright.ingest.pipeline import Pipeline
        from wikiwright.intake.ledger import Ledger
        from wikiwright.intake.watch import Registrar
        from wikiwright.vcs.repo import GitRepo
        from wikiwright.wiki.catalog import Catalog

        self.vault, _ = init_vault(root, "wikiwright", "wikiwright@localhost")
        self.config = load_config(self.vault.root)
        self.ledger = Ledger(self.vault.db_path)
        self.catalog = Catalog(self.vault)
        self.catalog.refresh()
        repo = GitRepo(self.vault.root, "wikiwright", "wikiwright@localhost")
        self.pipeline = Pipeline(Door(self.config, self.vault, self.ledger, self.catalog, repo))
        self.registrar = Registrar(self.vault, self.ledger, self.config.ingest.max_source_bytes, threading.Event())
        self.planner = self.pipeline.planner
        self.plan_seconds: list[float] = []
        original = self.planner.plan

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.plan_seconds.append(time.perf_counter() - started)

        self.planner.plan = timed  # type: ignore[method-assign]

    def ingest(self, folder: Path, names: list[str]) -> list[float]:
        """Drop each file and ingest it at once; seconds per source (read + plan + write + commit)."""
        took = []
        for name in names:
            target = self.vault.raw / name
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
            if kind in ("text", "man", "csv"):
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
    for kind in ("pdf", "docx", "pptx", "html", "xlsx", "csv", "epub", "man", "text"):
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
            (more / f"{tag}-{name}").write_bytes(data + marker if kinds.get(name, "text") in ("text", "man") else data)
    probes = [p for p in probes if kinds.get(p, "text") in ("text", "man")][:PROBES]
    run = Run(base / "grown")
    run.ingest(more, rest[: 100 - len(probes)])
    plan_mark = len(run.plan_seconds)
    early = run.ingest(more, [f"early-{p}" for p in probes])
    early_plan = run.plan_seconds[plan_mark:]
    run.ingest(more, rest[100 - len(probes): scale - 2 * len(probes)])
    plan_mark = len(run.plan_seconds)
    late = run.ingest(more, [f"late-{p}" for p in probes])
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
    every.update({f"{tag}-{p}": "text" for tag in ("early", "late") for p in probes})
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1000, help="sources in the growth run (0: skip it)")
    parser.add_argument("--keep", type=Path, help="keep the vaults and the corpus in this folder")
    parser.add_argument("--no-obsidiantools", action="store_true", help="only the built-in graph check")
    parser.add_argument("--growth-only", action="store_true", help="skip the quality run on the mixed corpus")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="ww-corpus-"))
    base.mkdir(parents=True, exist_ok=True)
    isolate(base)
    sys.path.insert(0, str(ROOT))
    corpus = base / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    kinds = build_mixed(corpus)
    mix = ", ".join(f"{k} {v}" for k, v in sorted(Counter(kinds.values()).items()))
    print(f"corpus: {len(kinds)} documents from this machine ({mix})")
    if not args.growth_only:
        quality_run(base, corpus, kinds, not args.no_obsidiantools)
    if args.scale:
        grow = growth(base, corpus, sorted(kinds), kinds, args.scale)
        show(f"Growth: ingest time per source without a model, to {args.scale} sources", grow)
    print(json.dumps({"base": str(base)}))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
