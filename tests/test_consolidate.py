"""Consolidation: every gate combination (controllable clock), the lock, crashes, dry-run, content."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from wikiwright.core.config import Config
from wikiwright.core.errors import ConsolidationBusy
from wikiwright.core.vault import Vault
from wikiwright.door import Door
from wikiwright.intake.ledger import Ledger
from wikiwright.memory.consolidate import (
    ConsolidationLock,
    Consolidator,
    LockData,
    load_cursor,
)
from wikiwright.memory.dailylog import append_session
from wikiwright.runtime.context import VaultContext
from wikiwright.upkeep.lint import run_lint
from wikiwright.wiki.catalog import PageEntry
from wikiwright.wiki.index import MAX_INDEX_BYTES, MAX_INDEX_LINES, render_index_block

from tests.conftest import Services
from tests.helpers import cli, git, review_queue
from tests.logweek import generate_week, surviving

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()
HOUR = 3600.0


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _sessions(vault: Vault, count: int, start: datetime | None = None) -> None:
    when = start or datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    for n in range(count):
        append_session(vault.logs, [f"- 🔴 Rule number {n}: keep the export idempotent for tenant {n}"],
                       section="Decisions", label="test", when=when + timedelta(minutes=10 * n))


def _set_lock(vault: Vault, data: LockData) -> None:
    (vault.state / "consolidation-lock").write_text(data.to_json())


@pytest.fixture
def ctx(config: Config, vault: Vault) -> Iterator[VaultContext]:
    with VaultContext(config, vault) as opened:
        yield opened


@pytest.fixture
def ledger(ctx: VaultContext) -> Ledger:
    return ctx.ledger


def _consolidator(config: Config, ctx: VaultContext, clock: Clock, **kw: object) -> Consolidator:
    """A consolidator on the context's parts, through a door on them that has not recovered
    yet (the run recovers, and says what it did, as the first operation of a process does)."""
    door = Door(config, ctx.vault, ctx.ledger, ctx.catalog, ctx.repo)
    return Consolidator(config, ctx.vault, ctx.ledger, ctx.repo, door=door, clock=clock,  # type: ignore[arg-type]
                        owner="test-host:1 (test)", **kw)


TIME_CASES = {"never": None, "23h": NOW - 23 * HOUR, "25h": NOW - 25 * HOUR}
LOCK_CASES = {
    "free": (None, None),
    "held-10min": ("other-host:77 (daemon)", NOW - 10 * 60),
    "held-31min-stale": ("other-host:77 (daemon)", NOW - 31 * 60),
}


@pytest.mark.parametrize("time_case", TIME_CASES)
@pytest.mark.parametrize("sessions", [4, 5])
@pytest.mark.parametrize("lock_case", LOCK_CASES)
def test_every_gate_combination(config: Config, vault: Vault, ctx: VaultContext, time_case: str, sessions: int,
                                lock_case: str) -> None:
    last = TIME_CASES[time_case]
    holder, locked_at = LOCK_CASES[lock_case]
    _set_lock(vault, LockData(int(last * 1000) if last else None, holder,
                              int(locked_at * 1000) if locked_at else None))
    _sessions(vault, sessions)
    consolidator = _consolidator(config, ctx, Clock())
    status = consolidator.gate()
    expected_time = time_case != "23h"
    expected_lock = lock_case != "held-10min"
    assert status.time_ok is expected_time
    assert status.sessions_ok is (sessions >= 5)
    assert status.sessions == sessions
    assert status.lock_ok is expected_lock
    expected = expected_time and sessions >= 5 and expected_lock
    assert status.would_run() is expected
    assert status.would_run(force=True) is expected_lock
    result = consolidator.run()
    assert result.state == ("consolidated" if expected else ("busy" if not expected_lock else "gate-closed"))
    lock = ConsolidationLock(vault, 30, Clock()).read()
    if expected:
        assert lock.locked_by is None and lock.last_consolidated_at == int(NOW * 1000)
    else:
        assert lock == LockData(int(last * 1000) if last else None, holder,
                                int(locked_at * 1000) if locked_at else None)


def test_force_skips_time_and_sessions_but_not_the_lock(config: Config, vault: Vault, ctx: VaultContext) -> None:
    _set_lock(vault, LockData(int((NOW - HOUR) * 1000), None, None))
    _sessions(vault, 1)
    consolidator = _consolidator(config, ctx, Clock())
    assert consolidator.run().state == "gate-closed"
    assert consolidator.run(force=True).state == "consolidated"
    _set_lock(vault, LockData(int(NOW * 1000), "someone:1 (x)", int((NOW - 60) * 1000)))
    _sessions(vault, 1, datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    assert consolidator.run(force=True).state == "busy"
    with pytest.raises(ConsolidationBusy):
        consolidator.lock.acquire("me")


def test_stale_lock_is_taken_over_with_a_log_line(config: Config, vault: Vault, ctx: VaultContext,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    _set_lock(vault, LockData(None, "laptop:4242 (daemon)", int((NOW - 45 * 60) * 1000)))
    _sessions(vault, 5)
    with caplog.at_level(logging.WARNING, logger="wikiwright.memory.consolidate"):
        result = _consolidator(config, ctx, Clock()).run()
    assert result.state == "consolidated"
    assert any("taking over a stale consolidation lock held by laptop:4242" in r.message for r in caplog.records)
    assert ConsolidationLock(vault, 30, Clock()).read() == LockData(int(NOW * 1000), None, None)


def _wiki_clean(vault: Vault) -> bool:
    return git(vault.root, "status", "--porcelain", "--", "wiki").strip() == ""


def _commits(vault: Vault) -> list[str]:
    return git(vault.root, "log", "--format=%s").splitlines()


@pytest.mark.parametrize("step", ["after-pages", "after-index", "before-commit"])
def test_failure_mid_run_leaves_the_wiki_as_it_was(config: Config, vault: Vault, ledger: Ledger, ctx: VaultContext,
                                                   step: str) -> None:
    _sessions(vault, 6)
    commits = _commits(vault)

    def fail(at: str) -> None:
        if at == step:
            raise RuntimeError(f"injected failure at {at}")

    with pytest.raises(RuntimeError, match="injected"):
        _consolidator(config, ctx, Clock(), fault=fail).run()
    assert _wiki_clean(vault)
    assert not (vault.wiki / "decisions.md").exists()
    assert _commits(vault) == commits
    assert load_cursor(ledger) == {}
    lock = ConsolidationLock(vault, 30, Clock()).read()
    assert lock == LockData(None, None, None)  # freed; the time gate stays open
    assert not (vault.state / "consolidation-journal.json").exists()
    # The next run starts clean.
    result = _consolidator(config, ctx, Clock()).run()
    assert result.state == "consolidated" and _wiki_clean(vault)
    assert "Rule number 5" in (vault.wiki / "decisions.md").read_text()


def test_killed_mid_run_is_taken_over_at_once_and_recovers(config: Config, vault: Vault, ctx: VaultContext) -> None:
    _sessions(vault, 6)
    commits = _commits(vault)
    env = {**os.environ, "WIKIWRIGHT_CRASH_AT": "consolidate-before-commit"}
    crashed = cli("consolidate", "--vault", str(vault.root), env=env)
    assert crashed.returncode == -9, crashed.stderr
    assert (vault.wiki / "decisions.md").exists() and not _wiki_clean(vault)  # half done on disk
    lock = ConsolidationLock(vault, 30).read()
    assert lock.locked_by is not None
    held_at = (lock.locked_at or 0) / 1000
    # Its holder is gone (pid and boot id recorded): the next run takes over at once, not after
    # 30 minutes, rolls back and runs clean.
    assert lock.holder.get("pid") and lock.holder.get("pid") != os.getpid()
    result = _consolidator(config, ctx, Clock(held_at + 60)).run()
    assert result.state == "consolidated", result.detail
    assert "put back as it was" in result.recovered
    assert _wiki_clean(vault)
    assert _commits(vault)[1:] == commits and _commits(vault)[0].startswith("consolidate:")
    text = (vault.wiki / "decisions.md").read_text()
    assert text.count("Rule number 3") == 1


def test_killed_after_commit_rolls_forward(config: Config, vault: Vault, ctx: VaultContext) -> None:
    _sessions(vault, 6)
    env = {**os.environ, "WIKIWRIGHT_CRASH_AT": "after-commit"}
    crashed = cli("consolidate", "--vault", str(vault.root), env=env)
    assert crashed.returncode == -9
    assert _commits(vault)[0].startswith("consolidate:")
    held_at = (ConsolidationLock(vault, 30).read().locked_at or 0) / 1000
    _sessions(vault, 5, datetime(2026, 11, 30, 15, 0, tzinfo=UTC))
    result = _consolidator(config, ctx, Clock(held_at + 31 * 60)).run(force=True)
    assert "finished it" in result.recovered
    assert result.state == "consolidated"
    # Only the sessions logged after the killed run were read again.
    assert result.plan is not None and result.plan.sessions == 5
    assert (vault.wiki / "decisions.md").read_text().count("Rule number 1:") == 1


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.parts:
            out[path.relative_to(root).as_posix()] = (path.stat().st_mtime_ns, path.read_bytes())
    return out


def test_dry_run_prints_logs_and_prompt_and_writes_nothing(vault: Vault) -> None:
    generate_week(vault.logs, days=2, sessions=4, filler=4)
    before = _tree(vault.root)
    result = cli("consolidate", "--vault", str(vault.root), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "logs/2026-11-16.md: bytes 0-" in result.stdout and "logs/2026-11-17.md" in result.stdout
    assert "New observations from the daily logs:" in result.stdout
    assert "Deploys go through the staging gate" in result.stdout
    assert "sk_live" not in result.stdout  # secrets never reach a prompt
    assert _tree(vault.root) == before


def test_check_cli_prints_gates_and_exit_code(vault: Vault) -> None:
    _sessions(vault, 2)
    closed = cli("consolidate", "--vault", str(vault.root), "--check")
    assert closed.returncode == 1
    assert "sessions: closed 2 logged since (needs 5)" in closed.stdout and "lock:     open   free" in closed.stdout
    _sessions(vault, 3, datetime(2026, 11, 29, 18, 0, tzinfo=UTC))
    opened = cli("consolidate", "--vault", str(vault.root), "--check", "--json")
    assert opened.returncode == 0
    data = json.loads(opened.stdout)
    assert data["sessions"] == 5 and data["would_run"] is True
    run = cli("consolidate", "--vault", str(vault.root))
    assert run.returncode == 0 and run.stdout.startswith("consolidated:"), run.stdout + run.stderr
    again = cli("consolidate", "--vault", str(vault.root), "--check")
    assert again.returncode == 1 and "h since the last" in again.stdout


def test_check_and_dry_run_on_a_vault_without_a_state_database_write_none(vault: Vault) -> None:
    """A clone that never ran a daemon has no state.db: `--check`, `--dry-run` and `doctor
    --no-repair` read an empty one and leave none behind (old code: the check's scratch ledger
    had no tables and failed; doctor made the file)."""
    vault.db_path.unlink()
    for suffix in ("-wal", "-shm"):
        vault.db_path.with_name(vault.db_path.name + suffix).unlink(missing_ok=True)
    _sessions(vault, 5)
    check = cli("consolidate", "--vault", str(vault.root), "--check")
    assert check.returncode == 0 and "would run" in check.stdout, check.stdout + check.stderr
    dry = cli("consolidate", "--vault", str(vault.root), "--dry-run")
    assert dry.returncode == 0 and "Rule number 4" in dry.stdout, dry.stdout + dry.stderr
    doctor = cli("doctor", "--vault", str(vault.root), "--no-repair")
    assert "accounting" in doctor.stdout, doctor.stdout + doctor.stderr
    assert not vault.db_path.exists()


def test_a_week_of_logs_consolidates_with_every_planted_fact(services: Services) -> None:
    config, vault, ledger, ctx = services.config, services.vault, services.ledger, services.ctx
    assert ctx is not None
    written = generate_week(vault.logs)
    assert written >= 100_000
    for path in sorted(vault.logs.glob("*.md")):
        services.registrar.register(path)  # as the daemon's watcher, through its wiring
    assert len(ledger.files("pending", kind="log")) == 7
    result = _consolidator(config, ctx, Clock()).run()
    assert result.state == "consolidated" and result.plan is not None
    plan = result.plan
    assert plan.ratio >= 5, plan.ratio
    pages = "".join((vault.wiki / f"{c.page}.md").read_text() for c in plan.changes)
    missing = [fact.name for fact, ok in surviving(pages) if not ok]
    assert missing == []
    assert pages.count("50 requests per second per client") == 1  # duplicates merged
    assert "yesterday" not in pages.casefold() and "last week" not in pages.casefold()
    assert "sk_live" not in pages and "```" not in pages and "Restarted the dev server" not in pages
    # One commit with the trailers; the logs are recorded as consolidated in that commit.
    trailers = git(vault.root, "log", "-1", "--format=%(trailers:only,unfold)")
    for key in ("Wikiwright-Operation: consolidate", "Wikiwright-Logs-Read: logs/2026-11-16.md",
                "Wikiwright-Bytes-In: ", "Wikiwright-Bytes-Out: ", "Wikiwright-Compression: ",
                "Wikiwright-Pages: wiki/decisions.md"):
        assert key in trailers
    assert {r.commit_sha for r in ledger.files("ingested", kind="log")} == {result.commit}
    assert _wiki_clean(vault)
    assert "[[decisions]]" in (vault.wiki / "index.md").read_text()
    assert "## [" in (vault.wiki / "log.md").read_text() and "consolidate |" in (vault.wiki / "log.md").read_text()
    # What consolidation writes (claims citing [[logs/DATE]], topic pages) passes lint.
    report = run_lint(vault, config.lint, ctx.catalog)
    assert [f.kind for f in report.findings] == [], [f.description for f in report.findings]


def test_second_run_merges_keeps_person_lines_and_reads_only_new_bytes(config: Config, vault: Vault,
                                                                      ctx: VaultContext) -> None:
    _sessions(vault, 5)
    clock = Clock()
    consolidator = _consolidator(config, ctx, clock)
    assert consolidator.run().state == "consolidated"
    page = vault.wiki / "decisions.md"
    page.write_text(page.read_text().replace("## Entries\n", "## Entries\n- A line a person wrote by hand\n"))
    day = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    append_session(vault.logs, ["- 🔴 Rule number 2: keep the export idempotent for tenant 2",
                                "- 🔴 `deploy.window`: Tuesdays 10:00-12:00",
                                "- We decided the queue retries 5 times before it gives up"],
                   section="Decisions", label="t", when=day)
    append_session(vault.logs, ["- 🔴 `deploy.window`: switched to Fridays 09:00-11:00"], section="Decisions",
                   label="t", when=day + timedelta(hours=2))
    clock.now += 25 * HOUR
    result = consolidator.run(force=True)
    assert result.state == "consolidated" and result.plan is not None
    assert result.plan.bytes_in == (vault.logs / "2026-12-01.md").stat().st_size
    text = page.read_text()
    assert "- A line a person wrote by hand\n" in text
    assert text.count("Rule number 2:") == 1 and "(2 sessions)" in text
    assert "We decided the queue retries 5 times before it gives up — `logs/2026-12-01.md`" in text
    assert "- ~~`deploy.window`: Tuesdays 10:00-12:00 (as of 2026-12-01, [[logs/2026-12-01]])~~ superseded" in text
    assert "- `deploy.window`: switched to Fridays 09:00-11:00 (as of 2026-12-01, [[logs/2026-12-01]])" in text
    assert _wiki_clean(vault)


def test_review_mode_proposes_instead_of_writing(config: Config, vault: Vault, ctx: VaultContext) -> None:
    reviewed = config.replace(consolidation=dataclasses.replace(config.consolidation, review=True))
    _sessions(vault, 5)
    result = _consolidator(reviewed, ctx, Clock()).run()
    assert result.state == "proposed"
    assert not (vault.wiki / "decisions.md").exists()
    review = vault.review_file.read_text()
    assert "[[decisions]]" in review and "- [ ] " in review
    assert ConsolidationLock(vault, 30, Clock()).read().last_consolidated_at == int(NOW * 1000)

    vault.review_file.write_text(review.replace("- [ ] Consolidation", "- [x] Consolidation"))
    queue = review_queue(reviewed, vault)
    try:
        outcomes = queue.process()
    finally:
        queue.close()
    assert [o.state for o in outcomes] == ["applied", "applied"]  # decisions.md and overview.md
    assert "Rule number 4" in (vault.wiki / "decisions.md").read_text()


def test_index_stays_within_its_budget() -> None:
    entries = [PageEntry(f"sources/src-{n:04d}", "source", f"Source number {n}", "x" * 120, ()) for n in range(900)]
    entries += [PageEntry(f"topic-{n}", "topic", f"Topic {n}", "a topic page", ()) for n in range(40)]
    block = render_index_block(entries)
    assert block.count("\n") <= MAX_INDEX_LINES and len(block.encode()) <= MAX_INDEX_BYTES
    assert "[[topic-39|Topic 39]]" in block  # small groups are kept whole
    assert "[[index-sources|All 900 sources]]" in block  # the large one has its own, complete page


def test_scheduler_registers_the_gate_check(config: Config, vault: Vault) -> None:
    from wikiwright.runtime.context import VaultContext
    from wikiwright.runtime.schedule import periodic_jobs

    jobs = {job.name: job for job in periodic_jobs(VaultContext(config, vault))}
    assert jobs["consolidation"].seconds == config.consolidation.check_interval_minutes * 60
