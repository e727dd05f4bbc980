"""Crash-point sweep (reliability.md T30): SIGKILL at every durable step, restart, audit.

``WIKIWRIGHT_CRASH_AT=<point>:<n>`` kills the real ``wikiwright ingest`` process the n-th time
it reaches ``point``. For each point, n moves forward until the process finishes without
reaching it, as SQLite's crash tests move the failure point forward. After every crash the
next run must recover: the source ingested exactly once (one commit, one log.md entry), no
page torn, no temp file left, doctor green. Then the same with a second crash during the
recovery (a compound failure). The full cross product of compound crashes is ``slow``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from wikiwright.core.crashpoints import POINTS
from wikiwright.wiki.pages import parse_page

from tests.fault_tools import (
    FULL_SWEEPS,
    assert_doctor_green,
    ingest_commits_by_sha,
    launch,
    ledger_rows,
    new_vault,
    note,
    reap_daemons,  # noqa: F401
    spawn,
    stop,
    wait_settled,
)
from tests.helpers import cli, daemon_log

KILLED = -signal.SIGKILL
MAX_N = 8


def _ingest(root: Path, source: Path, crash_at: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if crash_at:
        env["WIKIWRIGHT_CRASH_AT"] = crash_at
    return cli("ingest", "--vault", str(root), str(source), env=env)


def _assert_ingested_once(root: Path, rel: str) -> None:
    state, sha, _reason = ledger_rows(root)[rel]
    assert state == "ingested"
    assert ingest_commits_by_sha(root).get(sha) == 1
    log_text = (root / "wiki" / "log.md").read_text()
    assert log_text.count(f"sha256 {sha[:16]}") == 1, "log.md entry missing or doubled"
    for page in (root / "wiki").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert text.strip(), f"{page} is empty"
        parse_page(text)  # raises on torn front matter
    assert not [p for p in root.rglob("*wikiwright-tmp*") if ".git" not in p.parts]


def _sweep(tmp_path: Path, point: str, then: str = "", stride: int = 1) -> list[str]:
    """Crash at ``point``:1, :1+stride, ... until a run gets through; returns the points covered."""
    covered = []
    for n in range(1, MAX_N + 1, stride):
        root = new_vault(tmp_path, f"v-{point}-{n}-{then or 'once'}")
        source = root / "raw" / "src.md"
        source.write_text(note(n))
        first = _ingest(root, source, f"{point}:{n}")
        if first.returncode != KILLED:
            assert first.returncode == 0, first.stderr
            _assert_ingested_once(root, "raw/src.md")
            return covered
        covered.append(f"{point}:{n}")
        if then:
            second = _ingest(root, source, then)
            assert second.returncode in (0, KILLED), second.stderr
        final = _ingest(root, source)
        assert final.returncode == 0, final.stdout + final.stderr
        _assert_ingested_once(root, "raw/src.md")
        assert_doctor_green(root)
    raise AssertionError(f"{point} was still reached after {MAX_N} crashes")


@pytest.mark.parametrize("point", POINTS)
def test_crash_at_every_durable_step_then_recover(tmp_path: Path, point: str) -> None:
    covered = _sweep(tmp_path, point)
    assert covered, f"{point} is never reached by an ingest"
    print(f"{point}: {len(covered)} crash point(s) covered: {', '.join(covered)}")


@pytest.mark.parametrize("point", POINTS)
def test_second_crash_during_recovery(tmp_path: Path, point: str) -> None:
    """Crash at ``point``, then crash again at the same step while recovering."""
    root = new_vault(tmp_path)
    source = root / "raw" / "src.md"
    source.write_text(note(1))
    assert _ingest(root, source, f"{point}:1").returncode == KILLED
    second = _ingest(root, source, f"{point}:1")
    assert second.returncode in (0, KILLED), second.stderr
    final = _ingest(root, source)
    assert final.returncode == 0, final.stdout + final.stderr
    _assert_ingested_once(root, "raw/src.md")
    assert_doctor_green(root)


# Every pair in full; bounded, every first point and every second point still appear (a Latin
# square's worth of pairs, plus each point crashing twice in a row), and the first crash moves
# through every third occurrence of its point (the single-crash sweep above visits each one).
_PAIRS = [(a, b) for i, a in enumerate(POINTS) for j, b in enumerate(POINTS)
          if FULL_SWEEPS or i == j or (i + 1) % len(POINTS) == j]
_STRIDE = 1 if FULL_SWEEPS else 3


@pytest.mark.slow
@pytest.mark.parametrize(("first", "then"), _PAIRS)
def test_compound_crash_full_cross_product(tmp_path: Path, first: str, then: str) -> None:
    _sweep(tmp_path, first, f"{then}:1", stride=_STRIDE)


def test_daemon_crash_before_commit_recovers_on_restart(tmp_path: Path) -> None:
    """The same on the real daemon: it dies mid-burst, the restarted one finishes the work."""
    root = new_vault(tmp_path)
    env = dict(os.environ, WIKIWRIGHT_CRASH_AT="before-commit:3")
    proc = spawn(root, env)
    paths = []
    for n in range(6):
        (root / "raw" / f"d{n}.md").write_text(note(n))
        paths.append(f"raw/d{n}.md")
    assert proc.wait(timeout=30) == KILLED, daemon_log(proc)
    started = time.monotonic()
    again = launch(root)
    wait_settled(root, paths, proc=again)
    recovery = time.monotonic() - started
    assert stop(again) == 0
    counts = ingest_commits_by_sha(root)
    rows = ledger_rows(root)
    assert all(rows[p][0] == "ingested" and counts.get(rows[p][1]) == 1 for p in paths)
    assert_doctor_green(root)
    print(f"daemon recovered {len(paths)} sources in {recovery:.2f}s after a crash before commit")
    assert recovery < 20
