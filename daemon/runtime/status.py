"""What ``wikiwright status`` reports, gathered as plain data (the CLI renders it)."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from ..core.config import Config
from ..core.vault import Vault, VaultLock
from ..intake.ledger import Ledger
from ..runtime.diskspace import disk_full_status
from ..vcs.repo import GitRepo

STALE_HEARTBEAT = 30.0


def gather(config: Config, vault: Vault, *, recent: int = 5) -> dict[str, Any]:
    ledger = Ledger(vault.db_path)
    try:
        counts = ledger.counts()
        problems = [
            {"path": r.path, "state": r.state, "reason": r.reason}
            for state in ("quarantined", "skipped")
            for r in ledger.files(state)
        ]
        pending = [
            {"path": r.path, "kind": r.kind, "state": r.state, "reason": r.reason, "attempts": r.attempts}
            for r in ledger.files("pending") + ledger.files("running")
        ]
        duplicates = [{"path": r.path, "reason": r.reason} for r in ledger.files("duplicate")]
        # Sources a person took back: `wikiwright revert` / `retract` (their files stay in raw/).
        withdrawn = [
            {"path": s.path, "state": s.state, "page": s.page, "commit": s.commit_sha[:10]}
            for s in ledger.sources() if s.state != "ingested"
        ]
        notices = [{"key": k, "message": m, "since": s} for k, m, s in ledger.notices()]
        # A full disk can keep new files from even reaching the queue: count them as waiting.
        disk_notice, waiting = disk_full_status(vault, lambda: {r.path for r in ledger.files()})
        if disk_notice is not None:
            notices.append(disk_notice)
            pending += waiting
            counts["pending"] = counts.get("pending", 0) + len(waiting)
    finally:
        ledger.close()
    holder = VaultLock(vault).holder()
    heartbeat: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):  # no heartbeat yet, or torn by a crash
        heartbeat = json.loads((vault.state / "heartbeat.json").read_text(encoding="utf-8"))
    repo = GitRepo(vault.root)
    commits = [
        {"sha": c.sha[:10], "subject": c.subject, "date": c.date}
        for c in repo.log(limit=recent)
    ]
    engine = f"model:{config.llm.model}" if config.llm.enabled else "offline (no model configured)"
    from ..ingest.llm import spend_summary  # litellm itself is not imported by this

    spend = spend_summary(vault, config)
    daemon: dict[str, Any] = {"running": holder is not None, "holder": holder}
    if heartbeat:
        age = time.time() - float(heartbeat.get("time", 0))
        daemon.update(
            heartbeat_age_seconds=round(age, 1),
            heartbeat_stale=holder is not None and age > STALE_HEARTBEAT,
            watcher_alive=heartbeat.get("watcher_alive"),
            last_rescan=heartbeat.get("last_rescan"),
            missed_by_watcher=heartbeat.get("missed_by_watcher"),
            last_ingest=heartbeat.get("last_ingest"),
            healthy=heartbeat.get("healthy", True),
            problems=heartbeat.get("problems", []),
        )
    return {
        "vault": str(vault.root),
        "engine": engine,
        "spend": spend,
        "daemon": daemon,
        "counts": counts,
        "pending": pending,
        "problems": problems,
        "duplicates": duplicates,
        "withdrawn": withdrawn,
        "notices": notices,
        "git_problem": repo.problem(),
        "recent_commits": commits,
    }
