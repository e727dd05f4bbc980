"""The offline engine's words (issue 18), on the real pipeline (offline engine, one commit per
source): titles a reader can tell apart, key points that are whole sentences of the main prose,
concept pages only for names and domain terms, and "What it is" quoting the best definition."""

from __future__ import annotations

from pathlib import Path

from wikiwright.wiki.pages import get_section, parse_page

from tests.conftest import Services
from tests.helpers import git


def source_page(services: Services, name: str) -> tuple[dict, str]:
    record = services.ledger.get_file(f"raw/{name}")
    assert record is not None and record.state == "ingested", record
    page = parse_page((services.vault.wiki / f"{record.page}.md").read_text(encoding="utf-8"))
    return page.meta, page.body


def key_points(body: str) -> list[str]:
    return [line[2:] for line in (get_section(body, "Key points") or "").splitlines() if line.startswith("- ")]


def section(body: str, heading: str) -> str:
    """A section's text without its heading line."""
    return (get_section(body, heading) or "").split("\n", 1)[-1].strip()


def concept_titles(wiki: Path) -> set[str]:
    titles = set()
    for path in wiki.glob("*.md"):
        meta = parse_page(path.read_text(encoding="utf-8")).meta
        if meta.get("type") in ("concept", "entity"):
            titles.add(str(meta.get("title")))
    return titles


QUICKSTART = """# Quickstart

This page gets you started with {project} in a few minutes, from installing it to a first run.
The first example prints a greeting when the server starts, and the second one adds a route.
"""
README = """# README

{project} is a small tool for building web applications, with a core that stays simple.
It has no database layer and no form validation of its own, and extensions add both.
"""


def test_titles_are_the_first_heading_qualified_by_project_and_never_shared(services: Services) -> None:
    for project in ("flask", "click"):
        services.drop(f"{project}/docs/quickstart.md", QUICKSTART.format(project=project.title()))
        services.drop(f"{project}/README.md", README.format(project=project.title()))
    # A second README in the same project, and a document whose only level-1 heading is a sentence.
    services.drop("flask/examples/README.md", README.format(project="The tutorial app"))
    services.drop("bash/bashref.md", "# ($#) Expands to the number of positional parameters in decimal.\n\n"
                                     "Bash is the shell, or command language interpreter, of the GNU system.\n")
    services.drain()
    titles = {name: source_page(services, name)[0]["title"] for name in (
        "flask/docs/quickstart.md", "click/docs/quickstart.md", "flask/README.md", "click/README.md",
        "flask/examples/README.md", "bash/bashref.md")}
    assert titles["flask/docs/quickstart.md"] == "Flask — Quickstart"
    assert titles["click/docs/quickstart.md"] == "Click — Quickstart"
    assert titles["flask/README.md"] == "Flask — README"
    assert titles["click/README.md"] == "Click — README"
    assert titles["flask/examples/README.md"].startswith("Flask — README")
    assert not titles["bash/bashref.md"].endswith("."), titles  # never a sentence
    assert len(set(titles.values())) == len(titles), titles
    subjects = [s for s in git(services.vault.root, "log", "--format=%s").splitlines() if s.startswith("ingest:")]
    assert len(subjects) == len(set(subjects)) == len(titles), subjects


FLASK_CHANGES = """# Changes

## Version 3.1.0

Released 2024-11-13

-   ``flask.Flask.request_globals_class`` got renamed to
    ``app_ctx_globals_class``, and the old name warns when it is used.
-   Drop support for Python 3.8, which reached its end of life.

## Version 3.0.3

Released 2024-04-07

-   The default ``hashlib.sha1`` may not be available in FIPS builds.
"""
TUTORIAL = """# Flaskr tutorial

English readme • 简体中文 readme • 日本語 readme

[![Build Status](https://ci.example.org/flaskr.svg)](https://ci.example.org/flaskr)

The tutorial walks through a basic blog application called Flaskr, built with [WSGI][] tools.

-   Users are able to register, log in, create posts, and edit or delete
    their own posts, which the application keeps in a SQLite database.
-   Each view checks the logged-in user before it changes anything, so one
    user never edits another user's posts.
    -   A nested note: the check runs before the database is opened at all.

Run the tests as shown below and read what pytest reports.

Version 2.0.1 of the tutorial added route shortcuts, e.g. `app.get()` and `app.post()`, beside `app.route()`. The
shortcuts call ``flask.Flask.add_url_rule`` with the method filled in.

```
$ pytest tests/
FAILED test_class_demo.py::TestClassDemoInstance::test_two - assert 0
```

    $ flask --app flaskr init-db

[WSGI]: https://wsgi.readthedocs.io/en/latest/
"""


def test_key_points_are_whole_sentences_of_the_main_prose(services: Services) -> None:
    services.drop("flask/CHANGES.md", FLASK_CHANGES)
    services.drop("flask/docs/tutorial.md", TUTORIAL)
    services.drain()
    _, body = source_page(services, "flask/docs/tutorial.md")
    points = key_points(body)
    summary = section(body, "Summary")
    shown = [summary, *points]
    assert summary.startswith("The tutorial walks through a basic blog application called Flaskr"), summary
    # A list item is one unit, its continuation lines included; a nested item is its own.
    assert ("Users are able to register, log in, create posts, and edit or delete their own posts, which the "
            "application keeps in a SQLite database.") in " ".join(shown), shown
    for text in shown:
        assert "readme •" not in text and "https://" not in text and "[WSGI]:" not in text, text
        assert "FAILED" not in text and "$ " not in text and "Build Status" not in text, text
    for point in points:
        assert point.rstrip("`*_\"')").endswith((".", "!", "?")), point  # whole sentences, never cut
    # Never cut inside an abbreviation, a version number or a code span.
    assert ("Version 2.0.1 of the tutorial added route shortcuts, e.g. `app.get()` and `app.post()`, beside "
            "`app.route()`.") in shown, shown
    # A changelog is summarised as a changelog: its newest entry and what changed in it.
    _, body = source_page(services, "flask/CHANGES.md")
    summary = section(body, "Summary")
    assert "3.1.0" in summary and "2024-11-13" in summary and "3.0.3" not in summary, summary
    points = key_points(body)
    assert points[0] == ("``flask.Flask.request_globals_class`` got renamed to ``app_ctx_globals_class``, "
                         "and the old name warns when it is used."), points
    assert not any("FIPS" in p for p in points), points  # an older version's change is not the news


WORDS_A = """# Release notes for the uploader

## Point

We met John on Friday and wrote the notes in English before the Fix went in.
The upload limit of the Flask service is 16 MB and every request is checked for CSRF tokens.
Hello from the team: the HEAD of the branch now carries the Check for oversized uploads.
"""
WORDS_B = """# Uploader operations

## Point

John reviewed the Fix on Fri and said the English docs were fine.
The Flask app returns an error above 16 MB, and CSRF protection rejects forged form posts.
Hello again: the Check runs on HEAD before each deploy of the service.
"""


def test_concept_pages_only_for_names_and_domain_terms(services: Services) -> None:
    services.drop("a.md", WORDS_A)
    services.drop("b.md", WORDS_B)
    services.drain()
    titles = concept_titles(services.vault.wiki)
    common = {"Point", "John", "Friday", "Fri", "English", "Fix", "MB", "Hello", "Check"}
    assert not titles & common, titles & common
    assert {"Flask", "CSRF", "HEAD"} <= titles, titles


CSRF_A = """# Security notes

Cookies are sent with every request to the site that set them.
Another big problem is CSRF.
"""
CSRF_B = """# Form handling

We also talk about CSRF in this guide, next to sessions and cookies.
"""
CSRF_C = """# Web security basics

CSRF attacks allow a malicious user to perform actions on behalf of another user who is logged in.
"""


def test_what_it_is_quotes_the_best_definition_and_is_upgraded(services: Services) -> None:
    services.drop("a.md", CSRF_A)
    services.drop("b.md", CSRF_B)
    services.drain()
    services.drop("c.md", CSRF_C)
    services.drain()
    page = parse_page((services.vault.wiki / "csrf.md").read_text(encoding="utf-8"))
    what = get_section(page.body, "What it is") or ""
    assert "> CSRF attacks allow a malicious user to perform actions on behalf of another user" in what, what
    assert "> — [[src-c]]" in what, what
    assert page.meta["summary"].startswith("CSRF attacks allow"), page.meta
    mentioned = get_section(page.body, "Mentioned in") or ""
    assert "Another big problem is CSRF." in mentioned  # every source's sentence stays listed


CLI_A = """# Click

Click is a Python package for creating beautiful command line interfaces. The command line interface is built
from decorated functions. Writing command line tools is easy with it: the command line interface grows with the
code. Each command line interface gets help pages, and writing command groups takes one decorator.
"""
CLI_B = """# Typer notes

A command line interface can nest commands, and the command line interface shows their help. We keep writing
command callbacks as plain functions, and writing command tests needs no terminal. Every command line interface
here starts from one function.
"""


def test_fragments_of_a_phrase_are_not_concepts_and_overview_ranks_names(services: Services) -> None:
    services.drop("click.md", CLI_A)
    services.drop("typer.md", CLI_B)
    services.drop("a.md", WORDS_A)
    services.drop("b.md", WORDS_B)
    services.drain()
    titles = {t.casefold() for t in concept_titles(services.vault.wiki)}
    assert not titles & {"line interface", "writing command", "line interfaces", "line interface grows"}, titles
    assert "command line interface" in titles, titles
    overview = (services.vault.wiki / "overview.md").read_text(encoding="utf-8")
    main_ones = overview.split("The main ones", 1)[-1].split("##", 1)[0]
    assert "[[csrf|CSRF]]" in main_ones or "[[csrf]]" in main_ones, main_ones
    assert "point" not in main_ones.casefold() and "john" not in main_ones.casefold(), main_ones
