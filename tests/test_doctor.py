"""``wikiwright doctor``: each invariant is checked, fails when broken, and safe repairs happen.

Each test breaks one invariant the way it breaks in life (a file nobody recorded, a history
rewritten under an ingested source, debris of a killed write, a held git lock, a page with
broken YAML, a daemon commit that dropped a person's line) and checks that the doctor says
so, exits non-zero, and repairs only what is safe.
"""

from __future__ import annotations

import json
import os
import time

from wikiwright.core.fsutil import TEMP_MARKER
from wikiwright.core.vault import VaultLock
from wikiwright.upkeep.doctor import Doctor, format_report, run_doctor

from tests.conftest import Services
from tests.fault_tools import note
from tests.helpers import cli, git


def _check(report, name):  # type: ignore[no-untyped-def]
    return next(c for c in report.checks if c.name == name)


def test_a_healthy_vault_passes_every_check(services: Services) -> None:
    for n in range(3):
        services.drop(f"n{n}.md", note(n))
    services.drop(".hidden.md", "skipped by rule")
    services.drain()
    report = run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False)
    assert report.ok, format_report(report)
    assert report.lost == 0 and report.unseen == 0
    assert [c.name for c in report.checks] == [
        "accounting", "commits", "sources in raw/", "temp files", "locks", "git fsck", "pages", "person lines",
        "writes"]
    assert "3 ingested" in _check(report, "accounting").summary
    assert "1 skipped" in _check(report, "accounting").summary
    assert "all invariants hold" in format_report(report)


def test_a_file_nobody_recorded_is_lost_while_the_daemon_runs_and_is_queued(services: Services) -> None:
    (services.vault.raw / "missed.md").write_text(note(1))
    # With no daemon running the file simply waits for the next start: not yet seen, not lost.
    idle = run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False)
    assert idle.ok and idle.unseen == 1 and idle.lost == 0
    holder = VaultLock(services.vault, "run")
    holder.acquire()
    try:
        report = Doctor(services.config, services.vault, services.ledger, services.repo, grace_seconds=0).run()
    finally:
        holder.release()
    accounting = _check(report, "accounting")
    assert not report.ok and report.lost == 1
    assert accounting.repaired == ["recorded raw/missed.md as pending"]
    assert services.ledger.get_file("raw/missed.md").state == "pending"  # type: ignore[union-attr]
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok


def test_an_ingest_whose_commit_left_the_history_is_requeued_and_reingested(services: Services) -> None:
    services.drop("a.md", note(1))
    services.drop("b.md", note(2))
    services.drain()
    lost_commit = services.ledger.get_file("raw/b.md").commit_sha  # type: ignore[union-attr]
    git(services.vault.root, "reset", "-q", "--hard", "HEAD~1")  # the person rewrites history
    git(services.vault.root, "reflog", "expire", "--expire=now", "--all")
    git(services.vault.root, "gc", "-q", "--prune=now")
    # The source was in that commit, so the reset removed it too; the person still has it.
    (services.vault.raw / "b.md").write_text(note(2))
    report = run_doctor(services.config, services.vault, services.ledger, services.repo)
    commits = _check(report, "commits")
    assert not commits.ok and report.lost == 1
    assert lost_commit[:10] in commits.details[0]
    assert commits.repaired == ["re-queued raw/b.md"]
    assert [r.state for r in services.drain()] == ["ingested"]
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok


def test_leftover_temp_files_are_reported_and_removed_but_never_in_raw(services: Services) -> None:
    debris = services.vault.wiki / f".page.md{TEMP_MARKER}abc123"
    debris.write_text("half a page")
    msg = services.vault.state / "commit-msg-999-1"
    msg.write_text("ingest: x")
    in_raw = services.vault.raw / f"user{TEMP_MARKER}file.md"  # a person's file: never touched
    in_raw.write_text("mine")
    report = run_doctor(services.config, services.vault, services.ledger, services.repo)
    temp = _check(report, "temp files")
    assert not temp.ok
    assert sorted(temp.repaired) == sorted([f"removed wiki/.page.md{TEMP_MARKER}abc123",
                                            "removed .wikiwright/commit-msg-999-1"])
    assert not debris.exists() and not msg.exists() and in_raw.exists()
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok


def test_a_young_temp_file_is_left_alone_while_the_daemon_runs(services: Services) -> None:
    young = services.vault.wiki / f".p.md{TEMP_MARKER}xyz"
    young.write_text("a write in progress")
    holder = VaultLock(services.vault, "run")
    holder.acquire()
    try:
        report = run_doctor(services.config, services.vault, services.ledger, services.repo)
    finally:
        holder.release()
    assert _check(report, "temp files").ok and young.exists()


def test_a_stale_git_lock_is_reported_not_removed(services: Services) -> None:
    lock = services.vault.root / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    report = run_doctor(services.config, services.vault, services.ledger, services.repo)
    locks = _check(report, "locks")
    assert not locks.ok and "index.lock" in locks.details[0] and lock.exists()
    lock.unlink()


def test_a_page_with_broken_front_matter_fails_the_pages_check(services: Services) -> None:
    (services.vault.wiki / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (services.vault.wiki / "empty.md").write_text("")
    report = run_doctor(services.config, services.vault, services.ledger, services.repo)
    pages = _check(report, "pages")
    assert not pages.ok
    assert any(d.startswith("wiki/broken.md: front matter is not valid YAML") for d in pages.details)
    assert "wiki/empty.md: empty" in pages.details


def test_a_daemon_commit_that_drops_a_persons_line_is_caught(services: Services) -> None:
    services.drop("a.md", note(1))
    services.drain()
    root = services.vault.root
    page = services.vault.wiki / "sources" / "src-a.md"
    page.write_text(page.read_text() + "\nU-7f3a my own remark, keep it\n")
    git(root, "commit", "-q", "-m", "my remark", "--", "wiki/sources/src-a.md")  # as the person
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok
    # A daemon commit that rewrites the page without the person's line (the bug I3 guards against).
    page.write_text(page.read_text().replace("U-7f3a my own remark, keep it\n", "") + "- a daemon line\n")
    services.repo.commit_paths(["wiki/sources/src-a.md"], "ingest: rewrite", {"Wikiwright-Operation": "ingest"})
    report = run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False)
    lines = _check(report, "person lines")
    assert not report.ok and report.person_lines_removed == 1
    assert "removed from wiki/sources/src-a.md: 'U-7f3a my own remark, keep it'" in lines.details[0]


def test_daemon_removing_its_own_lines_and_a_person_removing_theirs_is_fine(services: Services) -> None:
    services.drop("a.md", note(1))
    services.drain()
    root = services.vault.root
    page = services.vault.wiki / "sources" / "src-a.md"
    page.write_text(page.read_text() + "\nU-1 a line I will delete myself\n")
    git(root, "commit", "-q", "-m", "add", "--", "wiki/sources/src-a.md")
    page.write_text(page.read_text().replace("U-1 a line I will delete myself\n", ""))
    git(root, "commit", "-q", "-m", "remove", "--", "wiki/sources/src-a.md")
    text = page.read_text()
    page.write_text(text.replace("## Summary", "## Summary (daemon rewrote its own heading)"))
    services.repo.commit_paths(["wiki/sources/src-a.md"], "ingest: own lines", {"Wikiwright-Operation": "ingest"})
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok


def test_doctor_cli_json_and_exit_codes(services: Services) -> None:
    services.drop("a.md", note(1))
    services.drain()
    root = str(services.vault.root)
    ok = cli("doctor", "--json", "--vault", root)
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["ok"] is True and data["lost"] == 0 and data["states"]["ingested"] == 1
    (services.vault.wiki / "broken.md").write_text("---\n: : :\n---\n")
    bad = cli("doctor", "--vault", root)
    assert bad.returncode == 1
    assert "[FAIL] pages" in bad.stdout and "exit status 1" in bad.stdout


def test_a_source_removed_after_its_ingest_is_reported(services: Services) -> None:
    services.drop("kept.md", note(1))
    services.drop("gone.md", note(2))
    services.drain()
    assert run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False).ok
    (services.vault.raw / "gone.md").unlink()
    report = run_doctor(services.config, services.vault, services.ledger, services.repo, repair=False)
    check = _check(report, "sources in raw/")
    assert not report.ok and not check.ok
    assert len(check.details) == 1 and check.details[0].startswith("raw/gone.md was removed after its ingest")
    assert "all invariants hold" not in format_report(report)
