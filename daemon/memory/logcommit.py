"""Daily logs into git, in batches: one commit ``logs: N session blocks`` after a quiet period.

Hooks and agents append to ``logs/YYYY-MM-DD.md`` many times a day; a commit per append would
bury the wiki's history. Once no log has changed for ``git.commit_logs_after_quiet_seconds``,
every log that differs from HEAD goes into one commit through the door (``OpKind.LOGS``),
with the number of session blocks it adds in the subject.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..core.opkinds import OpKind
from ..core.secrets import secret_kinds
from ..door import Door
from ..memory.dailylog import LOG_NAME_RE, SESSION_RE
from ..vcs.queries import worktree_status

log = logging.getLogger(__name__)


def _blocks(text: str) -> int:
    """``## Session`` blocks (a ``## Note`` is not a session)."""
    return sum(1 for line in text.splitlines() if (m := SESSION_RE.match(line)) and m.group("kind") == "Session")


def uncommitted_logs(door: Door) -> list[str]:
    """``logs/YYYY-MM-DD.md`` files that differ from HEAD (new or changed), vault-relative."""
    found = []
    for entry in worktree_status(door.repo, "logs"):
        rel = entry.path
        if entry.code != " D" and rel.count("/") == 1 and LOG_NAME_RE.match(rel[5:]):
            found.append(rel)
    return sorted(found)


def commit_quiet_logs(door: Door, quiet_seconds: float, clock: Callable[[], float] = time.time) -> str | None:
    """Commit the changed daily logs once none changed for ``quiet_seconds``; the commit's sha."""
    root = door.vault.root
    changed = [rel for rel in uncommitted_logs(door) if (root / rel).is_file()]
    if not changed:
        return None
    newest = max((root / rel).stat().st_mtime for rel in changed)
    if clock() - newest < quiet_seconds:
        return None  # still being written to: wait for the quiet
    added = 0
    kept_out: list[str] = []
    for rel in list(changed):
        now = (root / rel).read_text(encoding="utf-8", errors="replace")
        kinds = secret_kinds(now)
        if kinds:
            # Written by hand past the redacting appender: a commit may be pushed, and secrets
            # never leave the machine (issue 10). Kept out until the secret is removed.
            changed.remove(rel)
            kept_out.append(f"{rel} ({', '.join(kinds)})")
            continue
        before = door.repo.show("HEAD", rel) or ""
        added += max(0, _blocks(now) - _blocks(before))
    if kept_out:
        door.ledger.set_notice("log-secrets", "daily logs holding secrets are kept out of git until the secret is "
                               f"removed: {'; '.join(kept_out)}")
    else:
        door.ledger.clear_notice("log-secrets")
    if not changed:
        return None
    with door.operation(OpKind.LOGS, f"{added} session block{'s' if added != 1 else ''}") as op:
        op.add_paths(changed)
        op.details.append(", ".join(f"`{rel}`" for rel in changed))
    log.info("committed %d daily log(s): %d session block(s)", len(changed), added)
    return op.commit_sha
