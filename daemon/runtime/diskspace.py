"""Disk full, made visible: ``status`` says so and lists the files waiting to be recorded.

When the disk holding the vault (or its state folder) is full, the daemon cannot even record
a new file in the queue database: the file waits in raw/ (nothing is lost, the watcher keeps
trying) but the queue would show "0 pending". So ``status`` checks the free space itself and,
when it is gone, walks raw/ the way a rescan does and lists every file the queue has not
recorded yet as waiting.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.vault import Vault
from ..intake.names import relative_name

# Below this many free bytes a write of a page, a commit or a queue row fails.
DISK_FULL_BYTES = 1 << 20


def free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def unrecorded_inputs(vault: Vault, known: set[str]) -> list[str]:
    """Files in raw/ a rescan would queue that the ledger has no row for (ledger names)."""
    from ..intake.watch import ignore_rule  # only with a full disk: status need not import watchdog

    waiting = []
    for dirpath, dirnames, filenames in os.walk(vault.raw, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            path = Path(dirpath) / name
            rel = relative_name(vault.root, path)
            if rel not in known and ignore_rule(name) is None:
                waiting.append(rel)
    return sorted(waiting)


def disk_full_status(vault: Vault, known: Callable[[], set[str]]) -> tuple[dict[str, Any] | None,
                                                                         list[dict[str, Any]]]:
    """(a notice, or None while there is space; the files waiting to be recorded)."""
    full: list[tuple[str, int]] = []
    for label, path in (("the vault", vault.root), ("the state folder", vault.state)):
        free = free_bytes(path)
        if free is not None and free < DISK_FULL_BYTES and label not in [f[0] for f in full]:
            full.append((label, free))
    if not full:
        return None, []
    waiting = unrecorded_inputs(vault, known())
    where = " and ".join(f"{label} ({free} bytes free)" for label, free in full)
    message = (f"disk full: the disk holding {where} is full; {len(waiting)} file(s) in raw/ wait to be "
               "recorded and queued. Nothing is lost: ingest resumes by itself once there is space")
    notice = {"key": "disk-full", "message": message, "since": time.time()}
    rows = [{"path": rel, "kind": "raw", "state": "pending", "attempts": 0,
             "reason": "waiting: the disk is full; recorded once there is space"} for rel in waiting]
    return notice, rows
