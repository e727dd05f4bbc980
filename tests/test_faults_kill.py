"""SIGKILL at random moments while 200 files are dropped (reliability.md T31), then restart.

The daemon is killed (no clean shutdown, as an OOM kill or power cut would) several times
while a writer drops 200 distinct sources into raw/; each time it is started again at once.
After the last start: every file has a final state, every source has exactly one ingest
commit, and doctor finds nothing lost. The seed is printed so a failure can be replayed.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from tests.fault_tools import (
    FULL_SWEEPS,
    assert_doctor_green,
    ingest_commits_by_sha,
    kill,
    launch,
    ledger_rows,
    new_vault,
    note,
    reap_daemons,  # noqa: F401
    stop,
    wait_settled,
)


def _burst(root: Path, count: int, pace: float) -> tuple[list[str], threading.Thread]:
    paths = [f"raw/burst/b{n:03d}.md" for n in range(count)]

    def drop() -> None:
        (root / "raw" / "burst").mkdir(exist_ok=True)
        for n, rel in enumerate(paths):
            (root / rel).write_text(note(n, f"burst item {n}"))
            time.sleep(pace)

    thread = threading.Thread(target=drop)
    thread.start()
    return paths, thread


def _kill_storm(tmp_path: Path, count: int, kills: int, seed: int
                ) -> float:
    rng = random.Random(seed)
    root = new_vault(tmp_path)
    proc = launch(root)
    paths, writer = _burst(root, count, pace=0.01)
    longest = 0.0
    for _ in range(kills):
        time.sleep(rng.uniform(0.2, 1.5))
        kill(proc)
        started = time.monotonic()
        proc = launch(root)
        longest = max(longest, time.monotonic() - started)
    writer.join()
    started = time.monotonic()
    wait_settled(root, paths, proc=proc, stall=120)  # bounded by progress: slower under load, never stuck
    drain = time.monotonic() - started
    assert stop(proc) == 0
    rows = ledger_rows(root)
    commits = ingest_commits_by_sha(root)
    assert all(rows[p][0] == "ingested" for p in paths), {p: rows[p] for p in paths if rows[p][0] != "ingested"}
    assert all(commits.get(rows[p][1]) == 1 for p in paths), "a source was committed twice or not at all"
    assert_doctor_green(root)
    print(f"seed {seed}: {kills} kills, longest restart {longest:.2f}s, drain after last start {drain:.1f}s")
    return longest


def test_sigkill_at_random_moments_during_a_burst_of_200(tmp_path: Path) -> None:
    seed = int(os.environ.get("WIKIWRIGHT_FAULT_SEED", "0")) or random.randrange(1 << 30)
    _kill_storm(tmp_path, count=200, kills=4, seed=seed)


@pytest.mark.slow
def test_sigkill_storm_long(tmp_path: Path) -> None:
    seed = int(os.environ.get("WIKIWRIGHT_FAULT_SEED", "0")) or random.randrange(1 << 30)
    _kill_storm(tmp_path, count=600 if FULL_SWEEPS else 300, kills=15 if FULL_SWEEPS else 8, seed=seed)
