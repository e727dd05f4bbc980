"""log.md bounded, its older entries in archives written once (issue 24: cost flat in the
vault's size): real door operations, real git, the real doctor and lint."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from datetime import date
from pathlib import Path

from wikiwright.core.config import load_config
from wikiwright.core.vault import Vault
from wikiwright.core.vaultpaths import is_log_file
from wikiwright.door.door import Door
from wikiwright.door.init import init_vault
from wikiwright.runtime.context import VaultContext
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.logfile import MAX_LOG_BYTES, MAX_LOG_ENTRIES, appended_log, log_entry, plan_archive

from tests.conftest import Services
from tests.fault_tools import assert_doctor_green
from tests.helpers import git
from tests.test_door_crash import POINTS as CRASH_POINTS
from tests.test_door_crash import _run
from tests.test_sync import Machine, two_machines

HEADING = re.compile(r"^## \[(\d{4}-\d{2}-\d{2})\] lint \| (operation \d+)$", re.MULTILINE)
# A detail line of ~1 KB: log.md passes its byte bound after ~45 entries, so a few archives
# are written by a hundred operations (an ingest's entry is smaller; the rule is the same).
DETAIL = "pages written: " + ", ".join(f"[[page-{n}]]" for n in range(70))


def _operations(services: Services, days: list[date]) -> list[str]:
    door = services.pipeline.door
    titles = []
    for n, day in enumerate(days):
        with door.operation("lint", f"operation {n}", today=day) as op:
            op.always_log = True
            op.details.append(DETAIL)
        titles.append(f"operation {n}")
    return titles


def _in_order(root: Path) -> list[str]:
    """Every entry title, archives first (in the order log.md's links walk back), then log.md."""
    log_md = (root / "wiki" / "log.md").read_text()
    chain: list[str] = []
    found = re.search(r"^Older entries.*?\[\[log/([^\]]+)\]\]", log_md, re.MULTILINE)
    name = found.group(1) if found else ""
    while name:
        chain.append(name)
        text = (root / "wiki" / "log" / f"{name}.md").read_text()
        before = re.search(r"Before these: \[\[log/([^\]]+)\]\]", text)
        name = before.group(1) if before else ""
    texts = [(root / "wiki" / "log" / f"{n}.md").read_text() for n in reversed(chain)] + [log_md]
    return [m.group(2) for text in texts for m in HEADING.finditer(text)]


def test_log_md_stays_bounded_and_each_archive_is_written_once(services: Services) -> None:
    root = services.vault.root
    days = [date(2031, 1, 20)] * 60 + [date(2031, 2, 1)] * 110
    titles = _operations(services, days)

    # Nothing lost, nothing twice, in order: walking back from log.md's newest link reaches the first entry.
    assert _in_order(root) == titles
    archives = sorted(p.name for p in (root / "wiki" / "log").glob("*.md"))
    assert {"2031-01.md", "2031-02.md", "2031-02-2.md"} <= set(archives), archives
    for name in archives:  # a month's archive holds that month's entries only
        assert set(re.findall(r"^## \[(\d{4}-\d{2})", (root / "wiki" / "log" / name).read_text(), re.MULTILINE)) \
            == {name[:7]}

    # Each archive is in exactly one commit (written once, whole, never rewritten) ...
    for name in archives:
        assert len(git(root, "log", "--format=%H", "--", f"wiki/log/{name}").split()) == 1, name
    # ... and log.md never held more than its bound plus one entry, so one entry never rewrites a growing file.
    sizes = [int(git(root, "cat-file", "-s", f"{sha}:wiki/log.md"))
             for sha in git(root, "log", "--format=%H", "--", "wiki/log.md").split()]
    assert max(sizes) < MAX_LOG_BYTES + 3 * len(DETAIL), max(sizes)
    assert len(HEADING.findall((root / "wiki" / "log.md").read_text())) <= MAX_LOG_ENTRIES
    assert git(root, "status", "--porcelain").strip() == ""

    # History, not pages: no catalogue row, no search hit, no index.md line, no lint finding.
    services.catalog.refresh()
    names = [e.name for e in services.catalog.entries()]
    assert not [n for n in names if n.startswith("log/")], names
    assert not [h for h in services.catalog.search("operation") if h.name.startswith("log/")]
    assert "2031-01" not in (root / "wiki" / "index.md").read_text()
    findings = run_lint(services.vault, services.config.lint, services.catalog).findings
    assert not [f for f in findings if "log/" in f.page or "2031-0" in f.message], findings
    assert all(is_log_file(f"wiki/log/{name}") for name in archives)
    assert_doctor_green(root)


def test_a_persons_line_in_log_md_moves_with_its_entry(services: Services) -> None:
    """A person's note under an old entry goes to the archive with it: moved, not removed (doctor)."""
    root = services.vault.root
    _operations(services, [date(2031, 3, 1)] * 3)
    log_md = root / "wiki" / "log.md"
    text = log_md.read_text()
    log_md.write_text(text.replace("operation 1\n", "operation 1\n- the person's note on this one\n"))
    _operations(services, [date(2031, 3, 2)] * 60)
    archive = (root / "wiki" / "log" / "2031-03.md").read_text()
    assert "operation 1\n" in archive and "the person's note on this one" in archive
    assert "the person's note on this one" not in log_md.read_text()
    authors = git(root, "log", "--format=%an", "--", "wiki/log.md").split("\n")
    assert "Test Person" in authors, authors  # their line was theirs: the doctor below had to judge its move
    assert_doctor_green(root)


def test_a_long_log_md_from_before_archives_is_moved_out_a_run_per_operation(services: Services) -> None:
    """A vault whose log.md grew whole for months (an earlier release): each operation moves one
    run of its oldest entries out, until log.md is within its bound; every entry kept, in order."""
    root = services.vault.root
    log_md = root / "wiki" / "log.md"
    old = [f"operation {n}" for n in range(450)]
    log_md.write_text(log_md.read_text() + "".join(
        f"\n## [2030-0{1 + n // 150}-10] lint | {title}\n- {DETAIL[:300]}\n" for n, title in enumerate(old)))
    git(root, "add", "wiki/log.md")
    git(root, "-c", "user.name=wikiwright", "-c", "user.email=wikiwright@localhost", "commit", "-q", "-m",
        "ingest: an earlier release's log")
    assert _operations(services, [date(2031, 4, 1)] * 8)
    assert _in_order(root) == [*old, *[f"operation {n}" for n in range(8)]]
    assert len(HEADING.findall(log_md.read_text())) <= MAX_LOG_ENTRIES
    assert len(log_md.read_bytes()) < MAX_LOG_BYTES + 4096
    archives = sorted(p.name for p in (root / "wiki" / "log").glob("*.md"))
    assert {"2030-01.md", "2030-02.md", "2030-03.md"} <= set(archives), archives
    assert_doctor_green(root)


def _log_operations(door: Door, first: int, count: int, day: date) -> None:
    for n in range(first, first + count):
        with door.operation("lint", f"operation {n}", today=day) as op:
            op.always_log = True
            op.details.append(DETAIL)


def _entry_counts(root: Path) -> Counter[str]:
    texts = [p.read_text() for p in (root / "wiki" / "log").glob("*.md")] + [(root / "wiki" / "log.md").read_text()]
    return Counter(m.group(2) for text in texts for m in HEADING.finditer(text))


def _two_machines_archiving(tmp_path: Path) -> tuple[Machine, Machine]:
    """A few shared entries, then 80 on each machine (both archive, under the same month's name), synced."""
    _remote, a, b = two_machines(tmp_path)
    _log_operations(a.pipeline.door, 0, 3, date(2031, 5, 5))
    a.sync()
    b.sync()
    _log_operations(a.pipeline.door, 100, 80, date(2031, 5, 6))
    _log_operations(b.pipeline.door, 200, 80, date(2031, 5, 6))
    a.sync()
    b.sync()
    a.sync()
    return a, b


def test_both_machines_archiving_keep_every_entry_through_sync(tmp_path: Path) -> None:
    a, b = _two_machines_archiving(tmp_path)
    try:
        wanted = {f"operation {n}" for n in [*range(3), *range(100, 180), *range(200, 280)]}
        for machine in (a, b):
            counts = _entry_counts(machine.root)
            assert set(counts) == wanted
            assert not re.search(r"^(<{7}|>{7})", (machine.root / "wiki" / "log.md").read_text(), re.MULTILINE)
            assert (machine.root / "wiki" / "log" / "2031-05.md").exists()
        assert (a.root / "wiki" / "log.md").read_text() == (b.root / "wiki" / "log.md").read_text()
    finally:
        a.close()
        b.close()


def test_an_archive_both_machines_wrote_holds_their_shared_entries_once(tmp_path: Path) -> None:
    a, b = _two_machines_archiving(tmp_path)
    try:
        assert [t for t, n in _entry_counts(a.root).items() if n > 1] == []
    finally:
        a.close()
        b.close()


def test_a_crash_anywhere_in_an_archiving_operation_loses_and_doubles_no_entry(tmp_path: Path) -> None:
    """SIGKILL at every crash point of the operation that moves entries to an archive (a forked
    child, as the door's crash sweep does), then the restart: each entry once, the archive committed."""
    base = tmp_path / "base"
    init_vault(base, "wikiwright", "wikiwright@localhost")
    ctx = VaultContext(load_config(base), Vault(base))
    door = ctx.door
    entry = log_entry("lint", "operation 99", [DETAIL], date(2031, 6, 2))
    count = 0
    try:  # up to where one more entry passes log.md's byte bound
        while plan_archive(appended_log((base / "wiki" / "log.md").read_text(), entry), base / "wiki" / "log") is None:
            _log_operations(door, count, 1, date(2031, 6, 1))
            count += 1
    finally:
        ctx.close()
    assert not (base / "wiki" / "log").exists()

    def operation(root: Path) -> None:
        with VaultContext(load_config(root), Vault(root)) as opened:
            _log_operations(opened.door, count, 1, date(2031, 6, 2))

    crashed = 0
    for point in CRASH_POINTS:
        root = tmp_path / point
        shutil.copytree(base, root, symlinks=True)
        if _run(operation, root, point):
            crashed += 1
            with VaultContext(load_config(root), Vault(root)) as restarted:
                restarted.door.recover()  # the restart: its door opened (the recovery runs), nothing left
            if f"lint: operation {count}" not in git(root, "log", "--format=%s"):
                operation(root)  # it had not committed: done again
        assert _entry_counts(root) == Counter(f"operation {n}" for n in range(count + 1)), point
        assert git(root, "status", "--porcelain", "--untracked-files=all", "--", "wiki").strip() == "", point
        on_disk = sorted(f"wiki/log/{p.name}" for p in (root / "wiki" / "log").glob("*.md"))
        assert on_disk and git(root, "ls-files", "wiki/log").split() == on_disk, point  # committed, once
        shutil.rmtree(root)
    assert crashed >= 4


def test_merge_log_keeps_every_entry_once_whichever_side_archived() -> None:
    """The entry-level merge sync uses for log files: a side that moved the shared entries to
    an archive removes them from log.md (they are not brought back), each side's new entries
    stay, a file both sides made under one name holds the shared entries once."""
    from wikiwright.wiki.logfile import merge_log

    def entries(*names: str, day: str = "2031-05-05") -> str:
        return "".join(log_entry("lint", name, [], date.fromisoformat(day)) for name in names)

    head = "# Log\n"
    base = head + entries("s1", "s2")
    ours = head + entries("o1", day="2031-05-06")  # archived s1, s2; then o1
    theirs = head + entries("s1", "s2") + entries("t1", day="2031-05-06")
    merged = merge_log(base, ours, theirs, lambda b, o, t: t)
    assert [n for n in ("s1", "s2", "o1", "t1") if f"| {n}\n" in merged] == ["o1", "t1"]
    both = merge_log("", head + entries("s1", "s2", "o1"), head + entries("s1", "s2", "t1"), lambda b, o, t: t)
    assert [both.count(f"| {n}\n") for n in ("s1", "s2", "o1", "t1")] == [1, 1, 1, 1]
