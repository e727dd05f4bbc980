"""index.md's group pages bounded (issue 24: git objects written per operation independent of the
number of operations): a large group is a hub and parts of a bounded size that a page joins once
and keeps. Real door operations, real git, the real catalogue, lint and doctor."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from wikiwright.core.sqlitedb import BACKUP_DIR, recorded_versions
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki import index as index_module
from wikiwright.wiki.catalog import Catalog
from wikiwright.wiki.index import INDEX_END, INDEX_START, block_of
from wikiwright.wiki.writer import PageChange

from tests.conftest import Services
from tests.fault_tools import assert_doctor_green
from tests.helpers import cli, git
from tests.test_sync import Machine, two_machines

PART = 5  # lines on a part page in these tests (the release's PART_ENTRIES is 100)
ENTRY = re.compile(r"^- \[\[([^\]|]+)", re.MULTILINE)
SUMMARY = "what this source says, in a line long enough that the index line is a real one " + "w" * 60


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of PART lines, and an index.md that moves a group of more than a few lines to its page."""
    monkeypatch.setattr(index_module, "PART_ENTRIES", PART)
    monkeypatch.setattr(index_module, "MAX_INDEX_LINES", 12)


def _source(n: int, title: str | None = None) -> str:
    return (f"---\ntype: source\ntitle: {title or f'Source {n:03d}'}\nsummary: {SUMMARY} {n}\n---\n"
            f"# {title or f'Source {n:03d}'}\n\nBody {n}.\n")


def _add_sources(services: Services, numbers: range) -> None:
    door = services.pipeline.door
    for n in numbers:  # one operation, one commit, per source: as ingests are
        with door.operation("lint-fix", f"source {n}") as op:
            op.write([PageChange(f"sources/src-{n:03d}", _source(n), base=None)])


def _changed(root: Path, commit: str = "HEAD") -> set[str]:
    """The files a commit changed (git diff-tree of it against its parent)."""
    return set(git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split())


def _group_files(paths: set[str]) -> set[str]:
    return {p for p in paths if p.startswith(("wiki/index-", "wiki/index/"))}


def _listed(text: str) -> list[str]:
    return ENTRY.findall(block_of(text))


def _parts(wiki: Path) -> dict[str, list[str]]:
    """Each part page on disk, and the pages its block lists in order."""
    return {p.name: _listed(p.read_text()) for p in sorted((wiki / "index").glob("sources-*.md"))}


def _part_of(wiki: Path, stem: str) -> str:
    return next(name for name, listed in _parts(wiki).items() if stem in listed)


def test_an_ingest_rewrites_the_hub_and_the_last_part_only_and_every_page_stays_bounded(
        services: Services, small_parts: None) -> None:
    root, wiki = services.vault.root, services.vault.wiki
    _add_sources(services, range(4 * PART))
    for n in range(4 * PART, 8 * PART + 2):
        _add_sources(services, range(n, n + 1))
        # The commit wrote the new source, index.md's count, the hub and the part it joined: the
        # last one, which the number of sources before it says (old code: index-sources.md alone,
        # one line longer in every commit).
        joined = f"wiki/index/sources-{n // PART + 1:03d}.md"
        assert _group_files(_changed(root)) == {"wiki/index-sources.md", joined}, n
        assert f"src-{n:03d}" in _listed((root / joined).read_text())

    # Every part holds at most PART lines, and the hub the newest HUB_NEWEST and one link a part.
    parts = _parts(wiki)
    assert len(parts) == 9 and all(0 < len(listed) <= PART for listed in parts.values()), parts
    hub = (wiki / "index-sources.md").read_text()
    assert _listed(hub) == [f"src-{n:03d}" for n in range(8 * PART + 1, 8 * PART + 1 - index_module.HUB_NEWEST, -1)] \
        + [f"index/sources-{k:03d}" for k in range(1, 10)]
    assert "## Sources (42)" in hub
    # Every source listed once across the parts, in the order they joined.
    assert [stem for listed in parts.values() for stem in listed] == [f"src-{n:03d}" for n in range(8 * PART + 2)]
    # No version of a group page in the history grew past a bound independent of the sources:
    # the largest is far below the one page listing all 42 that the old code kept rewriting.
    one_line = len(_listed_line(wiki, "src-001").encode())
    for path in ("wiki/index-sources.md", *(f"wiki/index/{name}" for name in parts)):
        for sha in git(root, "log", "--format=%H", "--", path).split():
            size = int(git(root, "cat-file", "-s", f"{sha}:{path}"))
            assert size < (index_module.HUB_NEWEST + 9 + 8) * one_line, (path, size)

    findings = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert not [f for f in findings if f.kind in ("index-missing", "index-dangling", "broken-link", "orphan")], \
        findings
    assert git(root, "status", "--porcelain").strip() == ""
    assert_doctor_green(root)


def _listed_line(wiki: Path, stem: str) -> str:
    text = "".join(p.read_text() for p in (wiki / "index").glob("*.md"))
    return next(line for line in text.splitlines() if line.startswith(f"- [[{stem}|"))


def test_a_retitle_or_a_removal_touches_only_that_pages_part(services: Services, small_parts: None) -> None:
    root, wiki = services.vault.root, services.vault.wiki
    _add_sources(services, range(6 * PART))
    door = services.pipeline.door
    second = _part_of(wiki, "src-007")
    assert second == "sources-002.md"
    before = _parts(wiki)

    with door.operation("lint-fix", "retitle") as op:
        old = op.read("sources/src-007")
        assert old is not None
        op.write([PageChange("sources/src-007", _source(7, "A new title for seven"), base=old)])
    # Its own part only: the hub's count, newest and parts are as they were (old code: the one
    # index-sources.md, re-sorted).
    assert _group_files(_changed(root)) == {f"wiki/index/{second}"}
    assert "[[src-007|A new title for seven]]" in (wiki / "index" / second).read_text()
    assert _parts(wiki) == before  # the page kept its place: a part is in joining order, not by title

    with door.operation("lint-fix", "remove") as op:
        gone = op.read("sources/src-001")
        assert gone is not None and op.delete_page("sources/src-001", gone)
    assert _group_files(_changed(root)) == {"wiki/index-sources.md", "wiki/index/sources-001.md"}
    assert "src-001" not in (wiki / "index" / "sources-001.md").read_text()

    # A new page joins the last part (a new one: the last is full), not the gap the removal left.
    _add_sources(services, range(6 * PART, 6 * PART + 1))
    assert _group_files(_changed(root)) == {"wiki/index-sources.md", "wiki/index/sources-007.md"}
    assert len(_parts(wiki)["sources-001.md"]) == PART - 1

    # A part emptied is removed, and the hub no longer links it.
    with door.operation("lint-fix", "remove the last one") as op:
        last = op.read(f"sources/src-{6 * PART:03d}")
        assert last is not None and op.delete_page(f"sources/src-{6 * PART:03d}", last)
    assert _group_files(_changed(root)) == {"wiki/index-sources.md", "wiki/index/sources-007.md"}
    assert not (wiki / "index" / "sources-007.md").exists()
    assert "sources-007" not in (wiki / "index-sources.md").read_text()
    findings = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert not [f for f in findings if f.kind in ("index-missing", "index-dangling", "broken-link")], findings


def test_the_parts_are_found_again_in_the_part_pages_when_the_catalogue_is_made_again(
        services: Services, small_parts: None) -> None:
    """The catalogue is a cache (``.wikiwright/`` may go): a rebuild from every entry reads the part
    pages, so no page moves and nothing is rewritten; the next retitle still edits one part."""
    root, wiki = services.vault.root, services.vault.wiki
    _add_sources(services, range(3 * PART + 2))
    door = services.pipeline.door
    with door.operation("lint-fix", "retitle") as op:  # out of title order: a rebuild by title would move it
        old = op.read("sources/src-002")
        assert old is not None
        op.write([PageChange("sources/src-002", _source(2, "Zzz last by title"), base=old)])
    before = _parts(wiki)
    head = git(root, "rev-parse", "HEAD")

    services.catalog.close()
    catalog_db = root / ".wikiwright" / "catalog.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{catalog_db}{suffix}").unlink(missing_ok=True)
    fresh = Catalog(services.vault)
    try:
        fresh.refresh()
        assert fresh.index_parts() == {}
        services.pipeline.door.catalog = fresh
        with door.operation("lint-fix", "rebuild the index") as op:
            op.rebuild_index()
        assert git(root, "rev-parse", "HEAD") == head  # nothing to commit: every page where it was
        assert _parts(wiki) == before
        assert fresh.index_parts()["sources/src-002"] == ("source", 1, 2)

        with door.operation("lint-fix", "retitle again") as op:
            old = op.read("sources/src-003")  # not among the hub's newest: its part alone changes
            assert old is not None
            op.write([PageChange("sources/src-003", _source(3, "Three, renamed"), base=old)])
        assert _group_files(_changed(root)) == {"wiki/index/sources-001.md"}
    finally:
        fresh.close()


def _old_style_vault(tmp_path: Path, count: int) -> Path:
    """A vault as the release before parts left it: ``count`` source pages and the one
    index-sources.md listing every one, written by the daemon; a catalogue without index_parts."""
    root = tmp_path / "vault"
    assert cli("init", str(root)).returncode == 0
    wiki = root / "wiki"
    (wiki / "sources").mkdir(exist_ok=True)
    lines = []
    for n in range(count):
        (wiki / "sources" / f"src-{n:03d}.md").write_text(_source(n))
        lines.append(f"- [[src-{n:03d}|Source {n:03d}]] — {SUMMARY} {n}"[:160])
    block = "\n".join([INDEX_START, f"\n## Sources ({count})\n", *lines, INDEX_END]) + "\n"
    (wiki / "index-sources.md").write_text(
        "---\ntype: index\ntitle: Index — Sources\n---\n\n# Index — Sources\n\n"
        "Every page of this kind, one line each (from [[index]]).\n\n" + block + "\nA person's line after it.\n")
    index_md = wiki / "index.md"
    index_md.write_text(index_md.read_text().replace(
        INDEX_END, f"\n## Sources ({count})\n\n- [[index-sources|All {count} sources]] — every one, one line "
                   f"each with its summary\n{INDEX_END}"))
    identity = ["-c", "user.name=wikiwright", "-c", "user.email=wikiwright@localhost"]
    git(root, "add", "wiki")
    git(root, *identity, "commit", "-q", "-m", "lint-fix: the index as the earlier release wrote it",
        "-m", "Wikiwright-Operation: lint-fix")
    assert cli("status", "--vault", str(root)).returncode == 0  # the catalogue made, as that release had it
    catalog_db = root / ".wikiwright" / "catalog.db"
    db = sqlite3.connect(catalog_db)
    db.execute("DROP TABLE IF EXISTS index_parts")
    db.execute("UPDATE schema_version SET version=3 WHERE component='catalog'")
    db.commit()
    db.close()
    return root


def test_an_old_style_group_page_is_cut_into_parts_on_the_next_commit(tmp_path: Path) -> None:
    count = 2 * index_module.PART_ENTRIES + 30
    root = _old_style_vault(tmp_path, count)
    wiki = root / "wiki"
    old_size = (wiki / "index-sources.md").stat().st_size

    note = tmp_path / "tomatoes.md"
    note.write_text("# Tomato garden\n\nTomatoes need six hours of sun. Water them at dawn.\n")
    out = cli("ingest", str(note), "--vault", str(root))
    assert out.returncode == 0, out.stdout + out.stderr

    # The catalogue was upgraded once (backed up first) and holds where each page went.
    catalog_db = root / ".wikiwright" / "catalog.db"
    assert recorded_versions(catalog_db)["catalog"] == 4
    assert any(p.name.startswith("catalog.db.catalog-v3.") for p in (root / ".wikiwright" / BACKUP_DIR).iterdir())
    placed = sqlite3.connect(catalog_db).execute("SELECT count(*) FROM index_parts WHERE type='source'").fetchone()
    assert placed[0] == count + 1

    # index-sources.md is a hub now (the person's line after its block kept); the lines are on
    # parts of at most PART_ENTRIES, the old ones in the old page's order, the new source last.
    hub = (wiki / "index-sources.md").read_text()
    assert "A person's line after it." in hub
    assert (wiki / "index-sources.md").stat().st_size < old_size / 4
    parts = _parts(wiki)
    assert list(parts) == ["sources-001.md", "sources-002.md", "sources-003.md"]
    assert all(len(listed) <= index_module.PART_ENTRIES for listed in parts.values())
    assert [stem for listed in parts.values() for stem in listed] == \
        [f"src-{n:03d}" for n in range(count)] + ["src-tomatoes"]
    assert {"wiki/index-sources.md", *(f"wiki/index/{name}" for name in parts)} <= _changed(root)

    # The next ingest: the hub and the last part only.
    note.write_text("# Bicycle chains\n\nA chain stretches with use. Replace it every 3000 km.\n")
    out = cli("ingest", str(note), "--vault", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _group_files(_changed(root)) == {"wiki/index-sources.md", "wiki/index/sources-003.md"}

    lint = cli("lint", "--json", "--vault", str(root))
    findings = json.loads(lint.stdout)["findings"]
    assert not [f for f in findings if f["kind"] in ("index-missing", "index-dangling", "broken-link")
                or (f["kind"] == "orphan" and f["page"].startswith("index"))], findings
    assert_doctor_green(root)


def _machine_sources(machine: Machine, names: list[str]) -> None:
    for name in names:
        with machine.pipeline.door.operation("lint-fix", f"source {name}") as op:
            op.write([PageChange(f"sources/src-{name}", _source(0, f"Source {name}"), base=None)])


def _index_files(root: Path) -> dict[str, str]:
    wiki = root / "wiki"
    return {str(p.relative_to(wiki)): p.read_text() for p in [*wiki.glob("index-*.md"), *(wiki / "index").glob("*.md")]}


def test_two_machines_adding_to_the_same_part_come_to_the_same_parts_and_stay_there(
        tmp_path: Path, small_parts: None) -> None:
    _remote, a, b = two_machines(tmp_path)
    try:
        _machine_sources(a, [f"{n:03d}" for n in range(7)])
        a.sync()
        b.sync()
        # Both add to part 2 at once, past its end (part 3 on each side).
        _machine_sources(a, [f"a-{n}" for n in range(4)])
        _machine_sources(b, [f"b-{n}" for n in range(4)])
        a.sync()
        b.sync()  # the merge: its index rebuilt from the merged pages and the parts both sides wrote
        a.sync()
        assert _index_files(a.root) == _index_files(b.root)
        parts = _parts(a.root / "wiki")
        listed = [stem for stems in parts.values() for stem in stems]
        assert sorted(listed) == sorted([f"src-{n:03d}" for n in range(7)] + [f"src-a-{n}" for n in range(4)]
                                        + [f"src-b-{n}" for n in range(4)])  # each once
        review = (b.root / "REVIEW.md").read_text()
        assert "index-sources" not in review and "index/" not in review  # nothing for a person to settle
        assert len(parts) == 3 and all(len(stems) == PART for stems in parts.values())

        # Settled: another round on each side changes nothing (the parts do not flip back and forth).
        heads = (git(a.root, "rev-parse", "HEAD"), git(b.root, "rev-parse", "HEAD"))
        b.sync()
        a.sync()
        assert (git(a.root, "rev-parse", "HEAD"), git(b.root, "rev-parse", "HEAD")) == heads
        # And the next source on either machine edits the hub and one part (a new one: three are full).
        _machine_sources(b, ["b-next"])
        assert _group_files(_changed(b.root)) == {"wiki/index-sources.md", "wiki/index/sources-004.md"}
        b.sync()
        _machine_sources(a, ["a-next"])
        assert _group_files(_changed(a.root)) == {"wiki/index-sources.md", "wiki/index/sources-004.md"}
    finally:
        a.close()
        b.close()
