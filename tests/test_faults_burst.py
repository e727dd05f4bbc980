"""Bursts and loops: 2,000 files at once (T13/T55) and the daemon's own pages fed back (T54).

The burst: 1,000 files written one by one into raw/ plus a folder of 1,000 moved in with
one rename (a move brings no per-file events). After the rescan every one of the 2,000 has a
recorded state (pending counts: it is accounted for, merely not done yet); doctor finds
nothing lost. Draining all 2,000 is the ``slow`` form.

The loop: copies of the daemon's own pages dropped into raw/ are skipped with the
self-feeding rule; a person's ordinary note is not.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from wikiwright.ingest.selffeed import SELF_FEEDING_RULE

from tests.conftest import Services
from tests.fault_tools import (
    FINAL,
    FULL_SWEEPS,
    assert_doctor_green,
    heartbeat,
    launch,
    ledger_rows,
    new_vault,
    note,
    reap_daemons,  # noqa: F401
    stop,
    wait_settled,
)
from tests.helpers import wait_for


def _burst(root: Path, tmp_path: Path, count: int) -> list[str]:
    half = count // 2
    staging = tmp_path / "staging"
    staging.mkdir()
    for n in range(half):
        (staging / f"m{n:04d}.md").write_text(f"# Moved {n}\n\nMoved note {n} about the archive, unique {n}.\n")
    raw = root / "raw"
    for n in range(half):
        (raw / f"w{n:04d}.md").write_text(f"# Written {n}\n\nWritten note {n} about the inbox, unique {n}.\n")
    os.rename(staging, raw / "moved")  # one rename: 1,000 files, no event for any of them
    return [f"raw/w{n:04d}.md" for n in range(half)] + [f"raw/moved/m{n:04d}.md" for n in range(half)]


def _run_burst(tmp_path: Path, count: int, drain: bool) -> None:
    root = new_vault(tmp_path)
    env = dict(os.environ, WIKIWRIGHT_WATCH_RESCAN_MINUTES="0.05")  # a rescan every 3 s
    proc = launch(root, env)
    started = time.monotonic()
    paths = _burst(root, tmp_path, count)

    def all_recorded() -> bool:
        assert proc.poll() is None
        rows = ledger_rows(root)
        return all(p in rows for p in paths)

    wait_for(all_recorded, timeout=90, interval=0.5, what=f"all {count} files recorded")
    recorded_in = time.monotonic() - started
    beat = heartbeat(root)
    if drain:
        # Bounded by progress, not by a total time: on a loaded machine the drain is slower,
        # never stuck; a daemon that stops settling sources fails after two idle minutes.
        wait_settled(root, paths, proc=proc, stall=120)
    assert stop(proc) == 0
    rows = ledger_rows(root)
    states = [rows[p][0] for p in paths]
    assert all(state in (*FINAL, "pending") for state in states)
    report = assert_doctor_green(root, allow_pending=not drain)
    assert report["lost"] == 0
    print(f"{count} files recorded in {recorded_in:.1f}s; rescans found {beat.get('missed_by_watcher')} the "
          f"watcher missed; states {dict((s, states.count(s)) for s in set(states))}")


def test_burst_of_2000_files_all_accounted_after_the_rescan(tmp_path: Path) -> None:
    _run_burst(tmp_path, 2000, drain=False)


@pytest.mark.slow
def test_burst_of_2000_files_drains_completely(tmp_path: Path) -> None:
    # Bounded form: 250 drained (the 2,000 are all recorded by the test above).
    _run_burst(tmp_path, 2000 if FULL_SWEEPS else 250, drain=True)


def test_own_pages_copied_into_raw_are_skipped_as_self_feeding(services: Services) -> None:
    services.drop("design.md", note(1, "about the design"))
    services.drain()
    wiki = services.vault.wiki
    page = wiki / "sources" / "src-design.md"
    shutil.copy(page, services.vault.raw / "copy-of-page.md")
    shutil.copy(wiki / "index.md", services.vault.raw / "copy-of-index.md")
    # A person's edited copy still carries the engine's front matter.
    (services.vault.raw / "edited-copy.md").write_text(page.read_text() + "\nMy own addition.\n")
    # The same bytes as a page, with the front matter stripped: recognised by its blob.
    body_only = wiki / "sources" / "plain.md"
    body_only.write_text("# Plain page\n\nA page the daemon wrote, without front matter.\n")
    services.repo.commit_paths(["wiki/sources/plain.md"], "ingest: plain", {"Wikiwright-Operation": "ingest"})
    shutil.copy(body_only, services.vault.raw / "copy-of-plain.md")
    services.drop("person.md", "# Meeting notes\n\nWe agreed the billing limits stay as they are for now.\n")
    for name in ("copy-of-page.md", "copy-of-index.md", "edited-copy.md", "copy-of-plain.md"):
        services.registrar.register(services.vault.raw / name)
    results = {r.path: (r.state, r.detail) for r in services.drain()}
    for name in ("copy-of-page.md", "copy-of-index.md", "edited-copy.md", "copy-of-plain.md"):
        assert results[f"raw/{name}"] == ("skipped", SELF_FEEDING_RULE)
        assert services.ledger.get_file(f"raw/{name}").reason == SELF_FEEDING_RULE  # type: ignore[union-attr]
    assert results["raw/person.md"][0] == "ingested"
    assert not (wiki / "sources" / "src-copy-of-page.md").exists()
    assert_doctor_green(services.vault.root)
