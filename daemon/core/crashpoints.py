"""Test-only crash points.

When the environment variable ``WIKIWRIGHT_CRASH_AT`` names a point (e.g.
``before-commit``), the process kills itself there with SIGKILL, as a power cut or an OOM
kill would. ``WIKIWRIGHT_CRASH_AT=before-commit:3`` crashes at the third time the point is
reached. Unset (always, outside the fault tests), this costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading

_counts: dict[str, int] = {}
_lock = threading.Lock()

POINTS = (
    "after-temp-write",
    "after-rename",
    "after-ledger-update",
    "before-commit",
    "after-commit",
)
# The door's own steps (daemon/door): journal saved, index.md and log.md written, the commit
# made and the ledger updated, and recovery done; swept per operation kind by test_door_crash.py.
DOOR_POINTS = (
    "door-journal-saved",
    "door-after-index",
    "door-after-log",
    "door-after-commit",
    "door-before-journal-clear",
    "door-recovered",
)


def crash_point(name: str) -> None:
    target = os.environ.get("WIKIWRIGHT_CRASH_AT")
    if not target:
        return
    point, _, nth = target.partition(":")
    if point != name:
        return
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        reached = _counts[name]
    if reached >= int(nth or "1"):
        os.kill(os.getpid(), signal.SIGKILL)
