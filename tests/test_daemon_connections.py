"""A running daemon holds one connection to each database of its vault (issue 24).

Its jobs (ingest workers, the review watch and lint, consolidation, sync with a remote) work
through the door the daemon opened: its ledger (the review store on the same connection), its
catalogue and its repository. Counted from ``/proc/<pid>/fd`` of the real daemon while it is at
rest, after an ingest and sync rounds (old code: state.db 4, catalog.db 3).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import daemon_log, git, start_daemon, wait_for
from tests.test_sync import sync_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _open_databases(pid: int, state: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = Path(fd.readlink())
        except OSError:
            continue  # closed meanwhile
        if target.parent == state and target.suffix == ".db":
            counts[target.name] += 1
    return counts


def test_a_syncing_daemon_holds_one_connection_to_each_database(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    root = tmp_path / "Wiki"
    subprocess.run([sys.executable, "-m", "wikiwright", "init", "--no-default", str(root)], check=True,
                   capture_output=True)
    git(root, "remote", "add", "origin", str(remote))
    proc = start_daemon(root, sync_env(isolated_env, interval=0.5))
    try:
        (root / "raw" / "tides.md").write_text("# Tides\n\nThe harbour office prints tide tables every week.\n")

        def settled() -> bool:
            assert proc.poll() is None, daemon_log(proc)
            pushed = subprocess.run(["git", "-C", str(remote), "log", "--format=%s", "main"], capture_output=True,
                                    text=True).stdout
            return "ingest: Tides" in pushed

        wait_for(settled, timeout=60, interval=0.2, what=f"the ingest to be pushed\n{daemon_log(proc)[-3000:]}")
        counts = _open_databases(proc.pid, root / ".wikiwright")
        assert counts["state.db"] == 1, counts
        assert counts["catalog.db"] == 1, counts
        assert counts["terms.db"] <= 1, counts
    finally:
        proc.terminate()
        proc.wait(timeout=30)
