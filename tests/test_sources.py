"""Sources as people have them (issue 11): every format read through the real pipeline, titles by
one rule, summaries from the main content, text kept byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from wikiwright.ingest.offline import digest, find_title, split_sentences
from wikiwright.ingest.textrules import boilerplate_rule
from wikiwright.intake.extract import SourceRejected, read_source
from wikiwright.wiki.pages import get_section, parse_page

from tests.conftest import Services
from tests.source_fixtures import (
    PNG_BYTES,
    docx_bytes,
    epub_bytes,
    pdf_bytes,
    pptx_bytes,
    scanned_pdf_bytes,
    xlsx_bytes,
)


def page_of(services: Services, name: str) -> tuple[dict, str]:
    record = services.ledger.get_file(f"raw/{name}")
    assert record is not None and record.state == "ingested", (name, record and (record.state, record.reason))
    page = parse_page((services.vault.wiki / f"{record.page}.md").read_text(encoding="utf-8"))
    return page.meta, page.body


def state_of(services: Services, name: str) -> tuple[str, str]:
    record = services.ledger.get_file(f"raw/{name}")
    assert record is not None
    return record.state, record.reason


HTML_PAGE = """<!doctype html><html><head><title>Resolver guide | Example Docs</title></head><body>
<nav><a href="/">Home</a> <a href="/next">Next</a> Press ← or → to navigate between chapters</nav>
<header><p>Example Docs — version 3</p></header>
<main><article><h1>Resolver guide</h1>
<p>The resolver reads the effective_tld_names.dat file when it starts, and caches every public suffix it finds.</p>
<h2>Cache</h2><p>The cache keeps entries for one hour, after which the resolver reads the file again.</p>
<ul><li>Entries expire after one hour.</li><li>A missing file is reported once.</li></ul>
<table><tr><th>option</th><th>default</th></tr><tr><td>ttl</td><td>3600</td></tr></table>
</article></main>
<footer><p>Copyright (c) 2024 Example Corp. All rights reserved.</p></footer></body></html>"""

MAN_PAGE = """LS(1)                            User Commands                           LS(1)

NAME
       ls - list directory contents

SYNOPSIS
       ls [OPTION]... [FILE]...

DESCRIPTION
       List  information  about  the FILEs (the current directory by default).
       Sort entries alphabetically if none of -cftuvSUX nor --sort is specified.

       -a, --all
              do not ignore entries starting with .

GNU coreutils 9.1                 September 2022                          LS(1)
"""


def test_every_kind_of_document_is_read_through_the_pipeline(services: Services) -> None:
    table = [["name", "value"], ["max_retries", "3"]]
    drops = {
        "plan.docx": docx_bytes("Release plan", "Scope", ["The parser keeps snake_case names like max_retries intact."],
                                ["first step", "second step"], table, meta_title="Metadata title"),
        "deck.pptx": pptx_bytes([("Roadmap", ["Ship the PDF reader", "Measure the corpus"]),
                                 ("Risks", ["Scanned files have no text layer"])], meta_title="Quarterly roadmap"),
        "budget.xlsx": xlsx_bytes("Costs", ["item", "cost"], [[f"item {n}", n * 10] for n in range(1, 21)]),
        "suffixes.pdf": pdf_bytes(["The effective_tld_names.dat file lists public suffixes.",
                                   "Every resolver reads it at start."], meta_title="Public suffix notes"),
        "book.epub": epub_bytes("A Small Book", ["<h1>Chapter one</h1><p>The lighthouse keeper wrote every night.</p>",
                                                 "<h2>Chapter two</h2><p>The storm came on the third day.</p>"]),
        "guide.html": HTML_PAGE,
        "people.csv": "name,role\nAda,engineer\nGrace,admiral\nLinus,maintainer\n",
        "scan.pdf": scanned_pdf_bytes(),
        "photo.png": PNG_BYTES,
    }
    for name, data in drops.items():
        services.drop(name, data)
    services.drain()

    meta, body = page_of(services, "plan.docx")
    assert meta["title"] == "Release plan"  # the Title paragraph (a level-1 heading) before the metadata
    assert "snake_case names like max_retries intact" in body

    meta, body = page_of(services, "deck.pptx")
    assert meta["title"] == "Quarterly roadmap"  # no level-1 heading: the deck's title metadata
    assert "Slide 1: Roadmap" in body and "Slide 2: Risks" in body

    meta, body = page_of(services, "budget.xlsx")
    assert "20 data row(s) × 2 column(s)" in body or "20 data row(s)" in meta["summary"]

    meta, body = page_of(services, "suffixes.pdf")
    assert meta["title"] == "Public suffix notes"
    assert "effective_tld_names.dat" in body

    meta, body = page_of(services, "book.epub")
    assert meta["title"] == "Chapter one"
    assert "lighthouse keeper" in body

    meta, body = page_of(services, "guide.html")
    assert meta["title"] == "Resolver guide"
    summary = get_section(body, "Summary") or ""
    assert summary.split("\n", 2)[2].startswith("The resolver reads the effective_tld_names.dat file")
    assert "navigate" not in body and "All rights reserved" not in body and "Example Docs — version 3" not in body

    meta, body = page_of(services, "people.csv")
    assert "3 data row(s)" in body

    state, reason = state_of(services, "scan.pdf")
    assert state == "quarantined" and reason.startswith("no-text-layer:") and "no text layer" in reason
    state, reason = state_of(services, "photo.png")
    assert state == "quarantined" and reason.startswith("image:") and "PNG image" in reason


TEXT_NAMES = ["README.Debian", "LICENSE", "Makefile", "settings.cfg", "build.log", "changelog.Debian", "README.api"]


def test_text_in_any_extension_is_text(services: Services) -> None:
    for name in TEXT_NAMES:
        services.drop(name, f"The {name} file explains how the widget_factory module loads its plugins.\n"
                            "Each plugin registers itself at start and is never unloaded.\n")
    services.drain()
    for name in TEXT_NAMES:
        meta, body = page_of(services, name)
        assert f"The {name} file explains how the widget_factory module loads its plugins." in body
        assert meta["title"] == name  # no heading, no metadata: the file name as it is


def test_man_page_title_and_summary_skip_the_banner(services: Services) -> None:
    services.drop("ls.1.txt", MAN_PAGE)
    services.drain()
    meta, body = page_of(services, "ls.1.txt")
    assert meta["title"] == "ls(1) — list directory contents"
    summary = (get_section(body, "Summary") or "").split("\n", 2)[2]
    assert summary.startswith("ls - list directory contents") or summary.startswith("List information")
    assert "User Commands" not in summary and not boilerplate_rule(summary.split(". ")[0])


def test_title_rule() -> None:
    body = "## Benchmarks\n\nSpeed numbers for the compressor are below, measured on one core.\n"
    # no level-1 heading: the document's own title metadata, never the sub-heading
    assert find_title(body, "text", "zstd manual", "zstd README") == "zstd manual"
    assert find_title(body, "text", "", "zstd README") == "zstd README"
    assert find_title("# Zstandard\n\n## Benchmarks\n", "markdown", "meta", "file") == "Zstandard"
    assert find_title("Zstandard\n=========\n", "text", "", "file") == "file"  # setext is read by the extractor
    # issue 18: the first level-1 heading is the title whatever it says; a generic one is
    # qualified by its project when the page is planned (qualify_title), not replaced by the file name
    assert find_title("# Introduction\n\n## Usage\n", "markdown", "", "libfoo README") == "Introduction"
    assert find_title("# Notes\n", "markdown", "", "file", {"title": "From front matter"}) == "From front matter"
    # setext and reStructuredText titles become level-1 headings when the text is read
    text = read_source(Path("README"), b"Zstandard\n=========\n\nFast compression.\n\nBuild\n-----\n\nRun make.\n")
    assert find_title(text.text, text.kind, text.doc_title, "README") == "Zstandard"
    # in plain text a line starting with "#" is a comment, never a title
    comment = read_source(Path("changelog.Debian"), b"The parser was rewritten for speed.\n\n"
                                                   b"# Older entries have been removed from this changelog.\n")
    assert find_title(comment.text, comment.kind, comment.doc_title, "changelog.Debian") == "changelog.Debian"
    assert split_sentences(comment.text)[1] == "# Older entries have been removed from this changelog."
    # ... while a .txt note that opens with "# Title" is markdown
    note = read_source(Path("note.txt"), b"# Parser rewrite\n\nThe parser was rewritten for speed.\n")
    assert find_title(note.text, note.kind, note.doc_title, "note") == "Parser rewrite"
    # an HTML page whose first heading is the site's banner takes the page's own name from <title>
    assert find_title("# Node.js documentation\n\n## File system\n", "html",
                      "File system | Node.js documentation", "fs") == "File system"


def test_boilerplate_never_opens_a_summary_and_key_points_do_not_repeat() -> None:
    text = """[![Build Status](https://travis-ci.org/x/y.svg)](https://travis-ci.org/x/y) [![codecov](https://codecov.io/b.svg)](https://codecov.io/x)

Press ← or → to navigate between chapters

## Table of Contents

- [Install](#install)
- [Usage](#usage)

libfoo parses public suffix lists into a compact trie for fast lookups.
libfoo parses public suffix lists into a compact trie for fast lookups.
The trie is built once at start and shared between threads.
The trie is built once at start and shared between threads!

## License

Permission is hereby granted, free of charge, to any person obtaining a copy of this software.
"""
    result = digest(text, "markdown", "", "libfoo", 3, 6)
    first = re.split(r"(?<=[.!?])\s", result.summary)[0]
    assert first == "libfoo parses public suffix lists into a compact trie for fast lookups."
    assert "Permission is hereby granted" not in result.summary + " ".join(result.key_points)
    assert "navigate" not in result.summary and "travis" not in result.summary
    everything = re.split(r"(?<=[.!?])\s", result.summary) + result.key_points
    assert len({s.rstrip(".!").casefold() for s in everything}) == len(everything)
    assert boilerplate_rule("LS(1)                User Commands                LS(1)") == "man-header"
    assert boilerplate_rule("Copyright (C) 2020 Free Software Foundation, Inc.") == "licence"
    assert boilerplate_rule("Press ← or → to navigate between chapters") == "navigation"


def test_underscores_asterisks_and_backticks_are_kept() -> None:
    text = ("The `effective_tld_names.dat` file and effective_tld_names.dat itself are read by the "
            "psl_builtin() function; a *glob* like **/*.md matches too.\n")
    sentences = split_sentences(text)
    assert sentences == [text.strip()]


def test_a_long_source_is_summarised_part_by_part_and_nothing_is_cut(services: Services) -> None:
    chapters = [f"# Chapter {n}: Topic {n}\n\n" + f"Chapter {n} explains the subject number {n} in detail. " * 20
                for n in range(1, 63)]
    services.drop("manual.md", "# The big manual\n\n" + "\n\n".join(chapters))
    services.drain()
    _, body = page_of(services, "manual.md")
    parts = get_section(body, "Parts") or ""
    assert "read in 62 part(s)" in parts or "read in 63 part(s)" in parts
    assert "**Chapter 1: Topic 1**" in parts
    assert "more part(s), listed in the source itself" in parts  # over the shown cap: said, not cut silently


def test_image_and_broken_pdf_reasons_are_specific() -> None:
    with pytest.raises(SourceRejected) as image:
        read_source(Path("scan.jpg.txt"), b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(256)))
    assert image.value.code == "image" and "JPEG image" in str(image.value)
    with pytest.raises(SourceRejected) as broken:
        read_source(Path("report.pdf"), b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n")
    assert broken.value.code in ("unreadable", "empty", "no-text-layer")


def test_the_model_path_splits_a_long_source_at_its_headings() -> None:
    from wikiwright.ingest.llm_planner import split_source

    chapters = [f"# Chapter {n}\n\n" + f"Sentence {n} of the chapter body. " * 20 + "\n\n" for n in range(1, 9)]
    text = "".join(chapters)
    parts = split_source(text, 1500)
    assert "".join(parts) == text  # nothing cut away
    assert all(part.startswith("# Chapter") for part in parts)  # every part starts at a heading
    assert all(len(part) <= 1500 for part in parts)
    long_one = "# Huge\n\n" + ("A paragraph of words. " * 30 + "\n\n") * 10
    assert "".join(split_source(long_one, 1000)) == long_one


def test_a_section_page_is_named_by_its_heading_not_by_the_site() -> None:
    """A documentation site's section page has no <h1> in its main content; its <title> is the
    first heading followed (or preceded) by the site's name."""
    page = (b"<html><head><title>Rc&lt;T&gt;, the Reference Counted Smart Pointer - The Rust Programming Language"
            b"</title></head><body><nav><h1 class='menu-title'>The Rust Programming Language</h1></nav><main>"
            b"<h2>Rc&lt;T&gt;, the Reference-Counted Smart Pointer</h2><p>In the majority of cases, ownership "
            b"is clear: you know exactly which variable owns a given value.</p><h3>Sharing Data</h3>"
            b"<p>We create two lists that both share ownership of a third list.</p></main></body></html>")
    text = read_source(Path("ch15-04-rc.html"), page)
    wanted = "Rc<T>, the Reference-Counted Smart Pointer"
    assert find_title(text.text, text.kind, text.doc_title, "ch15 04 rc") == wanted
    prefixed = (b"<html><head><title>Node.js v22 | File system</title></head><body><main><h2>File system</h2>"
                b"<p>The node:fs module enables interacting with the file system.</p></main></body></html>")
    text = read_source(Path("fs.html"), prefixed)
    assert find_title(text.text, text.kind, text.doc_title, "fs") == "File system"
    # A first heading the <title> does not name is a section of the page: the <title> stays.
    other = (b"<html><head><title>Release notes for 4.2</title></head><body><main><h2>Fixed</h2>"
             b"<p>The parser no longer drops the last line of a file.</p></main></body></html>")
    text = read_source(Path("notes.html"), other)
    assert find_title(text.text, text.kind, text.doc_title, "notes") == "Release notes for 4.2"


def test_a_readme_is_named_by_its_html_heading_its_logo_heading_or_its_logo() -> None:
    """GitHub READMEs name their project in HTML or with a logo. Old code: the file name
    ("httpx README", "libsodium README", "zstd README") for all three."""
    centred = ('<h1 align="center">HTTPX</h1>\n\n<p align="center"><em>A next-generation HTTP client.</em></p>\n\n'
               "HTTPX is a fully featured HTTP client library for Python.\n")
    assert find_title(centred, "markdown", "", "httpx README") == "HTTPX"
    logo_heading = ("[![Build Status](https://ci.example/x.svg)](https://ci.example/x)\n\n"
                    "![libsodium](https://example.org/logo.png)\n============\n\n"
                    "Sodium is an easy-to-use software library for encryption.\n")
    assert find_title(logo_heading, "markdown", "", "libsodium README") == "libsodium"
    logo = ('<p align="center"><img src="https://example.org/zstd_logo.png" alt="Zstandard"></p>\n\n'
            "__Zstandard__, or `zstd` as short version, is a fast lossless compression algorithm.\n")
    assert find_title(logo, "markdown", "", "zstd README") == "Zstandard"
    # a badge's or a picture's alt text is no name, nor an image the prose does not name
    badge = ('<p><img src="https://ci.example/x.svg" alt="Build Status"></p>\n\n'
             "Build Status is shown on every pull request of the widget.\n")
    assert find_title(badge, "markdown", "", "widget README") == "widget README"
    other = ('<p><img src="https://example.org/a.png" alt="Acme"></p>\n\nWidget draws charts in the terminal.\n')
    assert find_title(other, "markdown", "", "widget README") == "widget README"


def test_a_man_pages_broken_words_are_mended_and_sphinx_metadata_is_no_content() -> None:
    """Old code: "For a detailed discus‐ sion" in tar's summary (groff's line-break hyphen left
    in the word), and an .rst page opening with ":orphan:" titled by its file name, its first
    line reading "orphan:"."""
    man = ("TAR(1)                      GNU TAR Manual                      TAR(1)\n\nNAME\n"
           "       tar - an archiving utility\n\nNOTE\n"
           "       This manpage is a short description of GNU tar.  For a detailed discus\u2010\n"
           "       sion, refer to the GNU Tar Manual.  Set the VER\u2010\n       SION_CONTROL variable to a non-\n"
           "       empty value.\n\nGNU TAR 1.34                  2022-11-15                      TAR(1)\n")
    text = read_source(Path("tar.1.txt"), man.encode())
    assert text.kind == "man"
    assert "For a detailed discussion, refer" in " ".join(text.text.split())
    assert "VERSION_CONTROL" in text.text and "non-\nempty" in text.text  # its own hyphen stays
    rst = read_source(Path("sunset.rst"), b":orphan:\n\nPython 2 Sunset\n===============\n\n"
                                          b"Since January 2020, Python 2 is no longer supported.\n\n"
                                          b"Usage\n-----\n\nPin the older release.\n")
    assert find_title(rst.text, rst.kind, rst.doc_title, "sunset") == "Python 2 Sunset"
    assert "orphan" not in rst.text


def test_gnu_changelogs_and_a_readme_ending_with_its_history_are_read_as_they_are() -> None:
    """Old code: a GNU ChangeLog's summary was "Copyright and licence terms." (its indented
    entries read as code, its licence trailer as the only text), a GNU NEWS file was summarised
    by its first change, and a README ending with "## Changelog" was "A changelog" whose key
    points were all release notes."""
    changelog = ("2022-04-07  Jim Meyering  <meyering@example.org>\n\n"
                 "\tversion 1.12\n\t* NEWS: Record release date.\n\n"
                 "2022-04-07  Paul Eggert  <eggert@example.org>\n\n\tzgrep: fix \"binary file matches\" mislabeling\n"
                 "\tProblem reported by Jim Avera.\n\t* zgrep.in: Use -H.\n\n"
                 "2022-04-04  Paul Eggert  <eggert@example.org>\n\n\tgzip: fix race in unlink\n\n"
                 "Copyright (C) 2022 Free Software Foundation, Inc.\n")
    text = read_source(Path("ChangeLog"), changelog.encode())
    result = digest(text.text, text.kind, text.doc_title, "gzip ChangeLog", 3, 6)
    assert result.summary.startswith("A changelog; the newest entry is dated 2022-04-07"), result.summary
    assert 'zgrep: fix "binary file matches" mislabeling.' in result.key_points
    assert "gzip: fix race in unlink." not in result.key_points  # an older day's entry
    news = ("GNU gzip NEWS                                    -*- outline -*-\n\n"
            "* Noteworthy changes in release 1.12 (2022-04-07) [stable]\n\n** Changes in behavior\n\n"
            "  'gzip -l' no longer misreports file lengths 4 GiB and larger.\n"
            "  Previously it output the stored value.\n\n"
            "** Bug fixes\n\n  'zless' is no longer installed on platforms lacking 'less'.\n\n"
            "* Noteworthy changes in release 1.11 (2021-09-03) [stable]\n\n  Some old fix.\n")
    text = read_source(Path("NEWS"), news.encode())
    result = digest(text.text, text.kind, text.doc_title, "gzip NEWS", 3, 6)
    assert result.summary == ("A changelog; the newest entry is release 1.12 (released 2022-04-07), "
                              "with 2 changes listed."), result.summary
    assert result.key_points[0] == "'gzip -l' no longer misreports file lengths 4 GiB and larger."
    readme = ("# Watchdog\n\nPython API and shell utilities to monitor file system events.\n\n## Installation\n\n"
              "Install it from PyPI with pip. It needs Python 3.11 or above.\n\n## Editors\n\n"
              "Vim does not modify files unless directed to do so. It writes a backup and renames it.\n\n"
              "## Changelog\n\n### 7.1.0\n\n- Fix building the extension on PyPy 3.12 today.\n- Create the watch "
              "instance lazily.\n\n### 7.0.0\n\n- Drop support for Python 3.10 and older.\n\n### 6.0.0\n\n"
              "- Rename the observer classes.\n")
    result = digest(readme, "markdown", "", "watchdog README", 3, 6)
    assert result.summary.startswith("Python API and shell utilities to monitor file system events."), result.summary
    assert not any("PyPy" in p or "lazily" in p for p in result.key_points), result.key_points
    assert not any("PyPy" in s for s in result.sentences)  # nor where its terms are read from
    # a changelog of its own stays one
    own = "# Changelog\n\n## 2.0.0 (2024-05-01)\n\n- Drop the old API.\n\n## 1.0.0 (2023-01-01)\n\n- First release.\n"
    summary = digest(own, "markdown", "", "CHANGELOG", 3, 6).summary
    assert summary.startswith("A changelog; the newest entry is version 2.0.0"), summary


def test_angle_brackets_in_plain_text_are_words_not_markup(services: Services) -> None:
    """dpkg's triggers spec writes packages as <T> and <I>. Old code: the source page showed
    "a package <i> is interested, <i></i></i> is added" — <I> read as an italics tag and closed
    by the sanitizer."""
    text = ("TRIGGERS\n========\n\nWhen a package <T> activates a trigger in which a package <I> is\n"
            "interested, <I> is added to the list of packages whose trigger processing is awaited by <T>.\n"
            "Zero or more packages <I> may be added as a result of one trigger activation.\n\n"
            "Report bugs to <debian-dpkg@lists.debian.org> or see <https://wiki.debian.org/Teams/Dpkg>.\n")
    services.drop("triggers.txt", text)
    services.drain()
    meta, body = page_of(services, "triggers.txt")
    page = "\n".join(f"{k}: {v}" for k, v in meta.items()) + body
    assert "<i>" not in page.casefold() and "</i>" not in page.casefold(), page
    assert "a package &lt;T> activates a trigger in which a package &lt;I> is interested" in page, page
    source = read_source(Path("triggers.txt"), text.encode())
    assert "<https://wiki.debian.org/Teams/Dpkg>" in source.text and "<debian-dpkg@lists.debian.org>" in source.text


def test_a_title_in_capitals_is_written_as_the_text_writes_its_words() -> None:
    """procps's bugs.md opens "BUG REPORTS", dpkg's triggers spec "TRIGGERS". Old code: the
    index listed them shouting. A name the prose writes in capitals stays so."""
    bugs = ("BUG REPORTS\n===========\n\n"
            "The following is information for reporting bugs. Send bug reports to the list.\n")
    assert find_title(bugs, "markdown", "", "bugs") == "Bug Reports"
    api = "# GNU TAR API\n\nThe GNU tar API is stable across releases. Use the API from C.\n"
    assert find_title(api, "markdown", "", "api") == "GNU Tar API"
    readme = "# README\n\nRead this readme before the readme of the server.\n"
    assert find_title(readme, "markdown", "", "x") == "README"
    # docutils's README opens "README: Docutils 0.23": the file's name is no part of the title
    docutils = "# README: Docutils 0.23\n\nDocutils is a modular system for processing documentation.\n"
    assert find_title(docutils, "markdown", "", "docutils README") == "Docutils 0.23"


def test_a_shortcut_reference_link_reads_as_its_text() -> None:
    """zstd's README says "using [lzbench], … compiled with [gcc] 9.3.0" over definitions of
    both. Old code: the key point quoted the brackets."""
    text = ("# Zstandard\n\nSeveral fast compression algorithms were tested using [lzbench], an in-memory "
            "benchmark compiled with [gcc] 9.3.0, on the [Silesia compression corpus].\n\nA list item [x] stays "
            "as written when nothing defines it.\n\n[lzbench]: https://github.com/inikep/lzbench\n"
            "[Silesia compression corpus]: https://example.org/silesia\n[gcc]: https://gcc.gnu.org/\n")
    sentences = split_sentences(text)
    assert sentences[0] == ("Several fast compression algorithms were tested using lzbench, an in-memory benchmark "
                            "compiled with gcc 9.3.0, on the Silesia compression corpus."), sentences
    assert "A list item [x] stays as written when nothing defines it." in sentences


def test_a_key_point_stands_on_its_own() -> None:
    """coreutils's README: "This is not due to a bug in the package but instead due to a bug in
    the system header file …" was its first key point, read alone a riddle. Old code ranked
    sentences going on from the one before like any other."""
    text = ("# Building\n\nThe package builds on most systems with the default compiler.\n\n"
            "A known problem exists when compiling the package in 64-bit mode on old systems.\n"
            "This is not due to a bug in the package but due to a bug in the system header file of the package.\n"
            "The package build reads the system header file once, then compiles the package.\n")
    result = digest(text, "markdown", "", "building", 1, 1)
    assert result.key_points == ["The package build reads the system header file once, then compiles the package."], \
        result.key_points


def test_a_part_is_told_by_its_first_whole_sentence_and_licensing_is_boilerplate() -> None:
    """man-db's README: its opening part was told by a bare address ("https://gitlab.com/…") and
    its "Copyright and licensing" section quoted as a part of what it says. Old code: a part's
    first sentence, whatever it was; only headings spelt exactly as listed were licence text."""
    filler = " ".join(f"The formatter reads page {n} of the manual and writes it to the cache." for n in range(200))
    text = ("# The man-db manual pager suite\n\nhttps://gitlab.com/man-db/man-db\n\n"
            "Please read the man-db manual, included in the manual subdirectory.\n\n"
            "## Copyright and licensing\n\nIn addition, man-db incorporates Gnulib, copyrighted by others.\n\n"
            f"## Installation\n\n{filler}\n\n## Contacting the maintainer\n\nWrite to the maintainer by mail.\n")
    result = digest(text, "markdown", "", "man-db README", 3, 6)
    parts = dict(result.parts)
    assert parts["(opening)"] == "Please read the man-db manual, included in the manual subdirectory.", parts
    assert parts["Copyright and licensing"] == "", parts
    assert not any("Gnulib" in s for s in result.sentences)


def test_a_heading_s_decoration_is_no_part_of_a_title() -> None:
    """Old code: "python-policy — Abstract¶" (a Sphinx permalink mark), "🚅 LiteLLM" (an emoji
    before the name), "tqdm README" for an .rst README whose one section sits under "|Logo|",
    and "C" for a heading "# C#"."""
    assert find_title("# Abstract¶\n\nThis document describes the policy.\n", "markdown", "", "p") == "Abstract"
    assert find_title("# 🚅 LiteLLM\n\nCall every model with one API.\n", "markdown", "", "l") == "LiteLLM"
    assert find_title("# C#\n\nA language of the .NET platform.\n", "markdown", "", "c") == "C#"
    rst = read_source(Path("README.rst"), b"|Logo|\n\ntqdm\n====\n\n|Build-Status| |Coverage|\n\n"
                                          b"A fast, extensible progress bar for Python.\n\nUsage\n-----\n\n"
                                          b"Wrap any iterable.\n\n.. |Logo| image:: logo.png\n")
    assert find_title(rst.text, rst.kind, rst.doc_title, "tqdm README") == "tqdm"
    assert "## Usage" in rst.text
    # two sections side by side under a badge: neither is the document's title
    two = read_source(Path("README.rst"), b"|Badge|\n\nFirst\n=====\n\nOne.\n\nSecond\n======\n\nTwo.\n\n"
                                          b".. |Badge| image:: b.svg\n")
    assert find_title(two.text, two.kind, two.doc_title, "two README") == "two README"


GREP_PAGE = """GREP(1)                      User Commands                      GREP(1)

NAME
       grep - print lines that match patterns

DESCRIPTION
       grep searches for PATTERNS in each FILE.  PATTERNS is one or more
       patterns separated by newline characters, and grep prints each line
       that matches a pattern.

OPTIONS
   Generic Program Information
       -V, --version
              Output the version number of grep and exit.

   Matching Control
       -e PATTERNS, --regexp=PATTERNS
              Use PATTERNS as the patterns.  If this option is used multiple
              times, search for all patterns given.

       -i, --ignore-case
              Ignore case distinctions in patterns and input data, so that
              characters that differ only in case match each other.

GNU grep 3.8                      2022-09-06                      GREP(1)
"""


def test_a_man_pages_sub_headings_and_tagged_paragraphs_are_blocks_of_their_own() -> None:
    """Old code: grep's key points read "Matching Control -e PATTERNS, --regexp=PATTERNS Use
    PATTERNS as the patterns." — a sub-heading, an option and its description run together."""
    text = read_source(Path("grep.1.txt"), GREP_PAGE.encode())
    assert "### Matching Control" in text.text
    assert "- **-e PATTERNS, --regexp=PATTERNS**: Use PATTERNS as the patterns." in text.text
    result = digest(text.text, text.kind, text.doc_title, "grep", 1, 6)
    assert not any("Matching Control" in s or "Generic Program" in s for s in result.sentences), result.sentences
    assert "  Matching Control" in result.outline
    # the prose around the option list tells more than one option's entry
    assert digest(text.text, text.kind, text.doc_title, "grep", 1, 1).key_points == [
        "PATTERNS is one or more patterns separated by newline characters, and grep prints each line that "
        "matches a pattern."]


def test_a_generic_first_heading_gives_way_to_the_pages_title_and_the_fsf_address_is_licence() -> None:
    """Debian's python-policy.html opens with "Abstract" under <title>Debian Python Policy
    0.12.0.0 documentation</title>, and its summary quoted "You can also obtain it by writing to
    the Free Software Foundation, Inc., 51 Franklin St …". Old code: "Abstract" qualified by the
    file name, and the address in the summary."""
    page = (b"<html><head><title>Debian Python Policy 0.12.0.0 documentation</title></head><body><main>"
            b"<h1>Abstract</h1><p>This document describes the packaging of Python within Debian.</p>"
            b"<p>You can also obtain it by writing to the Free Software Foundation, Inc., 51 Franklin St, "
            b"Fifth Floor, Boston, MA 02110-1301, USA.</p><p>Debian has supported two Python stacks.</p>"
            b"</main></body></html>")
    text = read_source(Path("python-policy.html"), page)
    result = digest(text.text, text.kind, text.doc_title, "python-policy", 3, 6)
    assert result.title == "Debian Python Policy 0.12.0.0 documentation"
    assert "Franklin" not in result.summary, result.summary
    # a page whose <title> names its heading keeps the heading
    rust = (b"<html><head><title>Introduction - The Rust Programming Language</title></head><body><main>"
            b"<h1>Introduction</h1><p>Welcome to the book about Rust.</p></main></body></html>")
    text = read_source(Path("ch00.html"), rust)
    assert find_title(text.text, text.kind, text.doc_title, "ch00") == "Introduction"


def test_a_github_alert_label_and_an_aside_in_italics_are_not_quoted() -> None:
    """Old code: "[!NOTE] HTTPX2 is a continuation …" and "_(Please open a GitHub issue …)_"
    quoted as written on the HTTPX and GitHub pages."""
    text = ("# HTTPX2\n\n> [!NOTE]\n> HTTPX2 is a continuation of the work started by the HTTPX community.\n\n"
            "_(Please open a GitHub issue to let us know if you rely on such internals.)_\n")
    sentences = split_sentences(text)
    assert sentences == ["HTTPX2 is a continuation of the work started by the HTTPX community.",
                         "Please open a GitHub issue to let us know if you rely on such internals."], sentences


def test_a_texinfo_node_header_and_c_code_set_as_text_are_no_summary() -> None:
    """libffi's Texinfo manual pages open "Next: Multiple ABIs, Previous: Simple Example, Up:
    Using libffi"; zlib's usage example sets its C code in bold paragraphs. Old code: both
    were the summaries' first sentences."""
    node = ("Next:\nMultiple ABIs\n, Previous:\nSimple Example\n, Up:\nUsing libffi\n\\[\nIndex\n\\]\n2.3 Types\n"
            "Primitive Types\nStructures\nSize and Alignment\n")  # a menu page, as the extractor gives it
    assert digest(node, "html", "", "Types", 3, 6).summary == ""
    code = ("# zlib Usage Example\n\n**#define CHUNK 16384**\n\n"
            "**/\\* Compress from file source to file dest until EOF on source.\n"
            "   def() returns Z\\_OK on success.**\n\n"
            "Users wonder when they should provide more input and when they should read more output.\n")
    result = digest(code, "html", "", "zlib_how", 1, 6)
    assert result.summary == "Users wonder when they should provide more input and when they should read more output."


def test_a_run_in_heading_in_bold_stays_with_its_sentence_and_keeps_its_markers() -> None:
    """A research note opening "**What this covers.** A Python daemon watches …" was summarised
    "**What this covers. ** A Python daemon …" (the segmenter cut inside the bold, the closing
    ``**`` opened the next sentence: asterisks on the page), and a part of it was told by the
    label alone ("**What this covers."). Old code kept the segmenter's pieces as they were."""
    text = ("# Test plan\n\n**What this covers.** A Python daemon watches the inbox folder for new files. "
            "It queues every file and commits each change to git.\n\n"
            "The plan is meant for a team that runs the daemon for months. He said **stop.** Then the run ended.\n")
    result = digest(text, "markdown", "", "plan", 2, 4)
    assert result.summary.startswith("**What this covers.** A Python daemon watches the inbox folder"), result.summary
    sentences = split_sentences(text)
    assert "He said **stop.**" in sentences and "Then the run ended." in sentences, sentences
    assert not any(s.startswith("**") and s.count("**") % 2 for s in sentences), sentences
