"""Consolidation at scale (issue 12): logs that repeat themselves shrink at least 5:1 with every
planted fact kept; the similar-item index finds what comparing with everything found; a killed
run's lock is taken over as soon as its holder is gone (pid, boot id), a live holder's is not.
Sizes here are small; bench/bench_consolidate.py measures CPU time at 5k, 20k and 100k lines."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from wikiwright.core.config import Config
from wikiwright.core.locks import boot_id, holder_gone, holder_identity
from wikiwright.core.vault import Vault
from wikiwright.memory.consolidate import ConsolidationLock, Consolidator
from wikiwright.memory.dailylog import parse_log
from wikiwright.memory.gate import count_sessions
from wikiwright.memory.topics import SimilarIndex, similar
from wikiwright.runtime.context import VaultContext

from tests.helpers import consolidator_on
from tests.logweek import FACTS, filler_for_lines, generate_week, surviving

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


def _run(config: Config, vault: Vault) -> Consolidator:
    with VaultContext(config, vault) as ctx:
        consolidator = consolidator_on(ctx, clock=lambda: NOW)
        result = consolidator.run(force=True)
        assert result.state == "consolidated", result.detail
        consolidator.result = result  # type: ignore[attr-defined]
        return consolidator


def test_logs_that_repeat_themselves_shrink_5_to_1_and_keep_every_fact(config: Config, vault: Vault) -> None:
    written = generate_week(vault.logs, filler=filler_for_lines(3000), repeat_pool=40)
    lines = sum(len(p.read_text().splitlines()) for p in vault.logs.glob("*.md"))
    assert lines >= 2500
    plan = _run(config, vault).result.plan  # type: ignore[attr-defined]
    assert plan.bytes_in == written
    assert plan.bytes_out * 5 <= plan.bytes_in, (plan.bytes_in, plan.bytes_out)
    pages = "".join((vault.wiki / f"{c.page}.md").read_text() for c in plan.changes)
    assert [fact.name for fact, ok in surviving(pages) if not ok] == []
    # A line recurring in dozens of sessions is one entry, counting its sessions.
    entries = [line for line in pages.splitlines() if line.startswith("- ") and "sessions)" in line]
    texts = [line.split(" — ")[0] for line in entries]
    assert len(texts) == len(set(texts))
    assert len(FACTS) <= len(entries) <= 40 + 2 * len(FACTS)


def test_the_index_finds_what_comparing_with_everything_finds() -> None:
    rng = random.Random(12)
    vocabulary = [f"w{n}" for n in range(40)] + ["bil", "src", "billing", "export", "42", "4821", "16", "4"]
    sets = [frozenset(rng.sample(vocabulary, rng.randrange(1, 12))) for _ in range(600)]
    index: SimilarIndex[int] = SimilarIndex()
    added: list[frozenset[str]] = []
    for n, words in enumerate(sets):
        expected = [i for i, other in enumerate(added) if similar(other, words)]
        assert list(index.matches(words)) == expected
        found = index.find(words)
        if expected:
            assert found is not None and similar(added[found], words)
            best = max(len(added[i] & words) for i in expected)
            assert len(added[found] & words) == best
        else:
            assert found is None
        index.add(words, n)
        added.append(words)


def _write_lock(vault: Vault, holder: dict[str, object]) -> None:
    (vault.state / "consolidation-lock").write_text(json.dumps({
        "last_consolidated_at": None, "locked_by": f"{holder.get('host')}:{holder.get('pid')} (consolidate)",
        "locked_at": int(NOW * 1000) - 60_000, "holder": holder,
    }))


def test_a_killed_holders_lock_is_taken_over_at_once(config: Config, vault: Vault) -> None:
    generate_week(vault.logs, days=1, sessions=5, filler=3)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    identity = {**holder_identity(), "pid": dead.pid, "started": None}
    assert holder_gone(identity)
    _write_lock(vault, identity)
    lock = ConsolidationLock(vault, 30, lambda: NOW)
    assert lock.is_stale(lock.read())  # one minute old, not 30: its holder is gone
    _run(config, vault)
    assert ConsolidationLock(vault, 30, lambda: NOW).read().locked_by is None


def test_a_lock_from_another_boot_is_taken_over_and_a_live_holders_is_not(vault: Vault) -> None:
    lock = ConsolidationLock(vault, 30, lambda: NOW)
    alive = holder_identity()  # this very process: alive
    _write_lock(vault, alive)
    assert not lock.is_stale(lock.read())
    if boot_id() is not None:
        _write_lock(vault, {**alive, "boot_id": "00000000-0000-0000-0000-000000000000"})
        assert lock.is_stale(lock.read())
    # Another host's holder cannot be checked from here: only the time limit frees it.
    _write_lock(vault, {**alive, "host": "some-other-host", "pid": 1})
    assert not lock.is_stale(lock.read())
    # The pid reused by a process that started at another time is not the holder.
    _write_lock(vault, {**alive, "started": "1"})
    assert lock.is_stale(lock.read()) is bool(alive["started"])


def test_the_lock_records_its_holder_while_held(config: Config, vault: Vault) -> None:
    lock = ConsolidationLock(vault, 30, lambda: NOW)
    lock.acquire("me")
    data = json.loads((vault.state / "consolidation-lock").read_text())
    assert data["holder"]["pid"] == os.getpid() and data["holder"]["host"]
    lock.release("me", None)
    assert "holder" not in json.loads((vault.state / "consolidation-lock").read_text())


def test_bench_sizes_are_what_they_say(tmp_path: Path) -> None:
    generate_week(tmp_path, filler=filler_for_lines(5000))
    lines = sum(len(p.read_text().splitlines()) for p in tmp_path.glob("*.md"))
    assert 4500 <= lines <= 5500


def test_status_counts_sessions_as_the_parser_does(tmp_path: Path) -> None:
    generate_week(tmp_path, days=2, sessions=5, filler=3)
    odd = ("# 2026-11-18\n\n## Session 09:00 UTC — a\n- one\n```\n## Session 10:00 UTC — in a fence\n```\n"
           "## Note 11:00 UTC — a note\n- two\n  ## Session 12:00 UTC — indented, not a heading\n"
           "## Session 13:00 UTC — b\n- three ünïcode\n~~~\n## Session 14:00\n~~~\n## Session 15:00 UTC\n")
    (tmp_path / "2026-11-18.md").write_text(odd)
    for path in sorted(tmp_path.glob("*.md")):
        data = path.read_bytes()
        parsed = parse_log(data.decode(), datetime(2026, 11, 16).date())
        for start in (0, len(data) // 3, len(data) // 2, len(data)):
            assert count_sessions(data, start) == len(parsed.counted_since(start)), (path.name, start)
    assert count_sessions(odd.encode(), 0) == 3
