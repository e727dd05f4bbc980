"""Helpers for the service and fault tests: a daemon's life in a subprocess, the doctor's verdict.

Every fault test ends with :func:`assert_doctor_green`: the real ``wikiwright doctor --json
--no-repair`` in a subprocess must find every invariant holding, nothing lost, nothing
unseen. ``--no-repair`` matters: a test must not pass because the doctor fixed a loss.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli, daemon_log, git, start_daemon, wait_for

FINAL = ("ingested", "duplicate", "quarantined", "skipped")


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def reap_daemons() -> Iterator[None]:
    """Any daemon a test started and left alive (a failed test) is killed at the end."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


# The long sweeps run in full with WIKIWRIGHT_FULL_SWEEPS=1; CI (.ci/run) runs them in a bounded
# form that keeps the suite under ten minutes on two cores: the same code paths, fewer repetitions.
FULL_SWEEPS = os.environ.get("WIKIWRIGHT_FULL_SWEEPS") == "1"

def spawn(root: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    proc = start_daemon(root, env)
    _STARTED.append(proc)
    return proc


def new_vault(tmp_path: Path, name: str = "Wiki") -> Path:
    root = tmp_path / name
    result = cli("init", "--no-default", str(root))
    assert result.returncode == 0, result.stderr
    return root


def heartbeat(root: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((root / ".wikiwright" / "heartbeat.json").read_text()))
    except (OSError, ValueError):
        return {}


def launch(root: Path, env: dict[str, str] | None = None, timeout: float = 20) -> subprocess.Popen[str]:
    """Start ``wikiwright run`` and wait until its heartbeat says it is up."""
    proc = spawn(root, env)

    def ready() -> bool:
        if proc.poll() is not None:
            return True
        beat = heartbeat(root)
        return bool(beat.get("pid") == proc.pid and not beat.get("stopped"))

    wait_for(ready, timeout=timeout, interval=0.05, what="the daemon to start")
    return proc


def stop(proc: subprocess.Popen[str], timeout: float = 30) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def ledger_rows(root: Path) -> dict[str, tuple[str, str, str]]:
    """path -> (state, sha256, reason), read straight from the queue database."""
    db = sqlite3.connect(f"file:{root / '.wikiwright' / 'state.db'}?mode=ro", uri=True, timeout=30)
    try:
        return {r[0]: (r[1], r[2], r[3]) for r in db.execute("SELECT path, state, sha256, reason FROM files")}
    finally:
        db.close()


def wait_settled(root: Path, paths: list[str], timeout: float = 60, proc: subprocess.Popen[str] | None = None,
                 stall: float | None = None) -> dict[str, tuple[str, str, str]]:
    """Wait until every one of ``paths`` has a final state in the ledger.

    ``stall``: fail only when no further path settled for that many seconds (a long drain on
    a loaded machine keeps going as long as it progresses; a hung daemon still fails), instead
    of after ``timeout`` in all.
    """
    done = 0
    last_progress = time.monotonic()

    def settled() -> dict[str, tuple[str, str, str]] | None:
        nonlocal done, last_progress
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"daemon exited ({proc.returncode}):\n{daemon_log(proc)[-3000:]}")
        try:
            rows = ledger_rows(root)
        except sqlite3.Error:
            return None
        now_done = sum(1 for p in paths if p in rows and rows[p][0] in FINAL)
        if now_done == len(paths):
            return rows
        if now_done > done:
            done, last_progress = now_done, time.monotonic()
        elif stall is not None and time.monotonic() - last_progress > stall:
            raise AssertionError(f"no source settled for {stall:.0f}s; {done} of {len(paths)} settled")
        return None

    if stall is None:
        return wait_for(settled, timeout=timeout, interval=0.2, what=f"{len(paths)} source(s) to settle")
    while True:  # bounded by the stall check above
        rows = settled()
        if rows is not None:
            return rows
        time.sleep(0.5)


def ingest_commits_by_sha(root: Path) -> dict[str, int]:
    """sha256 -> number of ingest commits naming it (must never exceed 1)."""
    out = git(root, "log", "--format=%(trailers:key=Wikiwright-Source,valueonly)")
    counts: dict[str, int] = {}
    for line in out.splitlines():
        if "sha256:" in line:
            sha = line.rsplit("sha256:", 1)[1].strip()
            counts[sha] = counts.get(sha, 0) + 1
    return counts


def doctor(root: Path, repair: bool = False) -> tuple[int, dict[str, Any]]:
    args = ["doctor", "--json", "--vault", str(root)]
    if not repair:
        args.append("--no-repair")
    result = cli(*args, timeout=120)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout)


def assert_doctor_green(root: Path, *, allow_pending: bool = False) -> dict[str, Any]:
    code, report = doctor(root)
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["ok"], json.dumps(failed, indent=1)
    assert report["lost"] == 0 and report["unseen"] == 0, report
    assert report["person_lines_removed"] == 0
    if not allow_pending:
        assert report["states"]["pending"] == 0 and report["states"]["running"] == 0, report["states"]
    return report


def note(n: int, words: str = "") -> str:
    return (f"# Fault note {n}\n\nThis note number {n} talks about the billing service and its limits. "
            f"It was written for the fault tests {words}.\nA second sentence keeps the summary honest.\n")


def since(start: float) -> float:
    return time.monotonic() - start
