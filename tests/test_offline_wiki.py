"""An interlinked wiki without a model (issue 11): concept and entity pages two sources share,
kept incrementally; generic words never link targets; overview.md kept by code; Obsidian settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wikiwright.door.init import init_vault
from wikiwright.ingest import concepts
from wikiwright.ingest.terms import TermIndex
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.pages import OWNED_KEYS, get_section, iter_links, parse_page

from tests.conftest import Services
from tests.helpers import cli, git
from tests.undo_corpus import corpus

VALGRIND_A = """# Memory checking notes

Valgrind is an instrumentation framework for building dynamic analysis tools.
We ran the test suite under Valgrind and Memcheck found two leaks in the parser.
"""
VALGRIND_B = """# Profiling the build

The nightly job runs Cachegrind, a cache profiler that ships with Valgrind.
Memcheck reports were clean this week.
"""
VALGRIND_C = """# Release checklist

Before a release we run Valgrind over the integration tests and read every report.
"""


def source_page(services: Services, name: str) -> tuple[dict, str]:
    record = services.ledger.get_file(f"raw/{name}")
    assert record is not None and record.state == "ingested", record
    page = parse_page((services.vault.wiki / f"{record.page}.md").read_text(encoding="utf-8"))
    return page.meta, page.body


def wiki_page(services: Services, stem: str) -> tuple[dict, str, str]:
    text = (services.vault.wiki / f"{stem}.md").read_text(encoding="utf-8")
    page = parse_page(text)
    return page.meta, page.body, text


def test_a_term_two_sources_share_gets_a_page_with_quotes_and_backlinks(services: Services) -> None:
    services.drop("a.md", VALGRIND_A)
    services.drain()
    assert not (services.vault.wiki / "valgrind.md").exists()  # one source: no page yet
    services.drop("b.md", VALGRIND_B)
    services.drain()

    meta, body, text = wiki_page(services, "valgrind")
    assert list(meta)[: len(OWNED_KEYS)] == list(OWNED_KEYS)  # the front matter model pages have
    assert meta["type"] == "entity" and meta["title"] == "Valgrind"
    assert meta["sources"] == ["src-a", "src-b"]
    what = get_section(body, "What it is") or ""
    assert "> Valgrind is an instrumentation framework for building dynamic analysis tools." in what
    assert "> — [[src-a]]" in what
    mentioned = get_section(body, "Mentioned in") or ""
    assert "[[src-a|Memory checking notes]]: “Valgrind is an instrumentation framework" in mentioned
    assert "[[src-b|Profiling the build]]: “The nightly job runs Cachegrind, a cache profiler that ships with " \
           "Valgrind.”" in mentioned
    # Both source pages link to it: the earlier one was given the link when the page was made.
    for name in ("a.md", "b.md"):
        _, source_body = source_page(services, name)
        assert "[[valgrind]]" in (get_section(source_body, "Related pages") or ""), name
    memcheck = wiki_page(services, "memcheck")[1]
    assert "[[valgrind]]" in (get_section(memcheck, "Related") or "")  # related terms share sources

    # A person adds to the page; the next source adds its line and keeps theirs.
    (services.vault.wiki / "valgrind.md").write_text(text.replace("## Mentioned in", "My own note.\n\n## Mentioned in"))
    services.drop("c.md", VALGRIND_C)
    services.drain()
    meta, body, _ = wiki_page(services, "valgrind")
    assert "My own note." in body
    assert meta["sources"] == ["src-a", "src-b", "src-c"]
    mentioned = get_section(body, "Mentioned in") or ""
    assert [line.split("|")[0] for line in mentioned.splitlines() if line.startswith("- ")] == [
        "- [[src-a", "- [[src-b", "- [[src-c"]
    subjects = git(services.vault.root, "log", "--format=%s", "--", "wiki/valgrind.md").splitlines()
    assert subjects[0].startswith("ingest: Release checklist") and not subjects[1].startswith("ingest:"), subjects

    report = run_lint(services.vault, services.config.lint, services.catalog)
    kinds = {f.kind for f in report.findings}
    assert not kinds & {"broken-link", "missing-page", "orphan", "front-matter", "duplicate-title"}, report.findings


def test_generic_words_never_become_link_targets(services: Services) -> None:
    (services.vault.wiki / "documentation.md").write_text(
        "---\ntype: concept\ntitle: Documentation\nsummary: Where the docs live.\n---\n\n# Documentation\n")
    services.catalog.refresh()
    for name, tool in (("x.md", "Zstandard"), ("y.md", "Brotli")):
        services.drop(name, f"# Introduction\n\n## Documentation\n\nThe Documentation for {tool} explains the "
                            "Overview and the Changelog of the README.\n\n"
                            "## Overview\n\nRead the Documentation first.\n")
    services.drain()
    generic = {"documentation", "introduction", "overview", "changelog", "readme"}
    for path in services.vault.wiki.rglob("*.md"):
        if path.stem in ("index", "log", "overview"):
            continue
        for link in iter_links(path.read_text(encoding="utf-8")):
            assert link.target.rsplit("/", 1)[-1].casefold() not in generic, (path.name, link.target)
    assert not any((services.vault.wiki / f"{word}-2.md").exists() for word in generic)
    meta, _ = source_page(services, "x.md")
    # issue 18: the first level-1 heading is the title, a generic one qualified (no project folder: the file name)
    assert meta["title"] == "x — Introduction"


def test_overview_is_kept_by_code_around_a_persons_text(services: Services) -> None:
    overview = services.vault.wiki / "overview.md"
    overview.write_text(overview.read_text(encoding="utf-8") + "\nThis wiki follows our tooling choices.\n")
    review = services.vault.review_file
    review.write_text(review.read_text(encoding="utf-8") + "\n- [ ] Is Valgrind still needed on arm64?\n")
    services.drop("a.md", VALGRIND_A)
    services.drop("b.md", VALGRIND_B)
    services.drain()
    body = parse_page(overview.read_text(encoding="utf-8")).body
    assert "This wiki follows our tooling choices." in body
    covers = get_section(body, "What this wiki covers") or ""
    assert "2 source(s)" in covers and "- [[valgrind]] — 2 sources" in covers
    newest = get_section(body, "Newest sources") or ""
    assert newest.index("[[src-b|Profiling the build]]") < newest.index("[[src-a|Memory checking notes]]")
    assert "Is Valgrind still needed on arm64?" in (get_section(body, "Open questions") or "")
    services.drop("c.md", VALGRIND_C)
    services.drain()
    body = parse_page(overview.read_text(encoding="utf-8")).body
    assert body.count("## What this wiki covers") == 1 and "- [[valgrind]] — 3 sources" in body


def test_init_keeps_raw_and_state_out_of_obsidian_search_and_graph(tmp_path: Path) -> None:
    fresh, _ = init_vault(tmp_path / "fresh", "wikiwright", "wikiwright@localhost")
    settings = json.loads((fresh.root / ".obsidian" / "app.json").read_text())
    assert settings["userIgnoreFilters"] == ["raw/", ".wikiwright/"]
    assert init_vault(fresh.root, "wikiwright", "wikiwright@localhost")[1] == []  # a re-run changes nothing

    theirs = tmp_path / "theirs" / ".obsidian"
    theirs.mkdir(parents=True)
    (theirs / "app.json").write_text('{"vimMode": true}')
    init_vault(theirs.parent, "wikiwright", "wikiwright@localhost")
    assert json.loads((theirs / "app.json").read_text()) == {"vimMode": True,
                                                             "userIgnoreFilters": ["raw/", ".wikiwright/"]}

    own = tmp_path / "own" / ".obsidian"
    own.mkdir(parents=True)
    (own / "app.json").write_text('{"userIgnoreFilters": ["archive/"]}')
    init_vault(own.parent, "wikiwright", "wikiwright@localhost")
    assert (own / "app.json").read_text() == '{"userIgnoreFilters": ["archive/"]}'


# -- "Related": a function of the recorded sources (issue 23) ------------------------------------

def _vault_with(tmp_path: Path, name: str, files: list[tuple[str, str]]) -> Path:
    root = init_vault(tmp_path / name, "wikiwright", "wikiwright@localhost")[0].root
    for rel, text in files:
        (root / "raw" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "raw" / rel).write_text(text)
    done = cli("ingest", *(str(root / "raw" / rel) for rel, _ in files), "--vault", str(root), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _related_lists(root: Path) -> dict[str, list[str]]:
    """Every concept page's "Related" entries, in their order."""
    found = {}
    for path in sorted((root / "wiki").glob("*.md")):
        if path.stem in ("index", "log", "overview"):
            continue
        section = get_section(parse_page(path.read_text(encoding="utf-8")).body, "Related")
        found[path.stem] = [link.target for link in iter_links(section or "")]
    return found


def test_related_is_the_same_whatever_order_the_sources_came_in(tmp_path: Path) -> None:
    docs = corpus(20)
    forward = _related_lists(_vault_with(tmp_path, "forward", docs))
    backward = _related_lists(_vault_with(tmp_path, "backward", docs[::-1]))
    assert sorted(forward) == sorted(backward)  # the same concept pages
    assert sum(len(entries) >= 3 for entries in forward.values()) >= 3  # lists worth comparing
    differ = {page: (forward[page], backward[page]) for page in forward if forward[page] != backward[page]}
    assert not differ, differ


MEMORY = [
    ("a.md", "# Memory notes\n\nValgrind is an instrumentation framework. "
             "We ran Memcheck and Cachegrind under Valgrind on the parser.\n"),
    ("b.md", "# Build profiling\n\nMemcheck is a memory error detector. "
             "The nightly job runs Memcheck and Cachegrind beside Valgrind.\n"),
]
THREADS = [
    ("c.md", "# Release checks\n\nMassif is a heap profiler. Memcheck and Massif run before each release, "
             "with Helgrind.\n"),
    ("d.md", "# Threads\n\nHelgrind is a thread error detector. We run Helgrind, Massif and Memcheck on the server.\n"),
]
THEIRS = "- [[cachegrind]] — we profile with it every night\n\nAsk Dana before changing the suppressions.\n"


def test_a_persons_lines_in_related_stay_when_the_engine_writes_it_again(tmp_path: Path) -> None:
    root = _vault_with(tmp_path, "vault", MEMORY)
    page = root / "wiki" / "memcheck.md"
    first = "## Related\n\n- [[cachegrind]]\n- [[valgrind]]\n"
    assert get_section(parse_page(page.read_text()).body, "Related") == first
    page.write_text(page.read_text().rstrip("\n") + "\n" + THEIRS)  # a person's lines, not committed
    for rel, text in THREADS:
        (root / "raw" / rel).write_text(text)
    done = cli("ingest", *(str(root / "raw" / rel) for rel, _ in THREADS), "--vault", str(root))
    assert done.returncode == 0, done.stderr
    # The engine's list, written whole in its rank (ties by name), then the person's lines.
    assert get_section(parse_page(page.read_text()).body, "Related") == (
        "## Related\n\n- [[cachegrind]]\n- [[helgrind]]\n- [[massif]]\n- [[valgrind]]\n" + THEIRS)
    done = cli("revert", "raw/d.md", "--vault", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (root / "wiki" / "massif.md").exists() and not (root / "wiki" / "helgrind.md").exists()
    assert get_section(parse_page(page.read_text()).body, "Related") == first + THEIRS
    assert git(root, "status", "--porcelain", "--", "wiki").strip() == ""
    authors = set(git(root, "log", "--format=%an", "--", "wiki/memcheck.md").splitlines())
    assert len(authors) == 2 and "wikiwright" in authors  # the person's lines committed as theirs


TOOLS = ["Valgrind", "PgBouncer", "KafkaBridge", "Terraform", "ClickHouse", "WireGuard"]


def _field_note(n: int) -> str:
    first, second, third = TOOLS[n % 6], TOOLS[(n + 1) % 6], TOOLS[(n + 3) % 6]
    return (f"# Field note {n}\n\n{first} is a tool that checks the billing events in note {n}. "
            f"We ran {second} beside {first} on Tuesday. {third} keeps the audit trail for note {n}.\n")


def test_related_is_what_the_index_gives_on_pages_past_a_sources_links(services: Services,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Two links a source: its third shared term's page is not written for it, yet its shared
    # counts grew; its "Related" is still the term index's answer.
    monkeypatch.setattr(concepts, "MAX_LINKS", 2)
    for n in range(12):
        services.drop(f"note-{n:02d}.md", _field_note(n))
        assert {r.state for r in services.drain()} == {"ingested"}
    terms: TermIndex = services.pipeline.planner.terms  # type: ignore[attr-defined]
    checked = 0
    for path in sorted(services.vault.wiki.glob("*.md")):
        key = terms.key_of_page(path.stem)
        if not key:
            continue
        want = [page for _, page, _ in terms.related(key, 9) if page != path.stem][:8]
        section = get_section(parse_page(path.read_text(encoding="utf-8")).body, "Related")
        assert [link.target for link in iter_links(section or "")] == want, path.stem
        checked += bool(want)
    assert checked >= 4


def test_a_person_typing_in_related_while_the_engine_plans_keeps_their_line(services: Services) -> None:
    """The door merges three ways (what the plan read, the person's page now, the engine's):
    the person's added line stays in the regenerated section."""
    for name, text in MEMORY:
        services.drop(name, text)
    services.drain()
    page = services.vault.wiki / "memcheck.md"
    planner = services.pipeline.planner
    real_plan = planner.plan_read  # type: ignore[attr-defined]
    typed = []

    def plan(*args: object, **kwargs: object) -> object:
        planned = real_plan(*args, **kwargs)
        if getattr(args[0], "path", "") == "raw/d.md":  # the plan that gives Related two more entries
            page.write_text(page.read_text().rstrip("\n") + "\n" + THEIRS)  # typed after the plan read it
            typed.append("d")
        return planned

    planner.plan_read = plan  # type: ignore[attr-defined]
    for name, text in THREADS:
        services.drop(name, text)
    assert {r.state for r in services.drain()} == {"ingested"}
    assert typed == ["d"]
    section = get_section(parse_page(page.read_text()).body, "Related")
    assert section == "## Related\n\n- [[cachegrind]]\n- [[helgrind]]\n- [[massif]]\n- [[valgrind]]\n" + THEIRS


def test_a_term_no_source_defines_says_so_until_one_does(services: Services) -> None:
    """Our own research notes gave Python the "What it is" quote "The one local check was a
    10-line Python sanity run of …": a mention, not what Python is. A page whose sources only
    mention its term says so over the quote; a source saying what it is replaces both, and
    reverting that source brings the note back (old code: any mention quoted as the answer)."""
    services.drop("alpha.md", "# Alpha notes\n\nWe ran the Zephyrine importer on Tuesday for the billing team.\n")
    services.drop("beta.md", "# Beta notes\n\nThe Zephyrine importer crashed twice during the night run.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    page = services.vault.wiki / "zephyrine.md"
    what = get_section(parse_page(page.read_text(encoding="utf-8")).body, "What it is") or ""
    assert concepts.UNDEFINED_NOTE in what and "> The Zephyrine importer crashed" in what, what
    services.drop("gamma.md", "# Gamma\n\nZephyrine is a data importer that loads billing events into the warehouse.\n")
    assert {r.state for r in services.drain()} == {"ingested"}
    what = get_section(parse_page(page.read_text(encoding="utf-8")).body, "What it is") or ""
    assert concepts.UNDEFINED_NOTE not in what and "> Zephyrine is a data importer" in what, what
    reverted = cli("revert", "--vault", str(services.vault.root), "raw/gamma.md")
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    what = get_section(parse_page(page.read_text(encoding="utf-8")).body, "What it is") or ""
    assert concepts.UNDEFINED_NOTE in what and "Zephyrine is a data importer" not in what, what
