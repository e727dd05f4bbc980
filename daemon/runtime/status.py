"""What ``wikiwright status`` reports, gathered as plain data (the CLI renders it)."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from ..core.config import Config
from ..core.fsutil import cas_mode
from ..core.vault import Vault, VaultLock
from ..intake.ledger import SYNC_REFUSED_KEY, SYNC_STATE_KEY, Ledger
from ..runtime.context import VaultContext
from ..runtime.diskspace import disk_full_status
from ..vcs.remote import Remote
from ..vcs.repo import GitRepo, git

STALE_HEARTBEAT = 30.0


def gather(ctx: VaultContext | Config, vault: Vault | None = None, *, recent: int = 5) -> dict[str, Any]:
    """Read only: the context's ledger, repository and (when llm.db exists) cost ledger. Given
    a Config and a Vault instead (a caller with no context of its own), a read-only context
    is opened for the call."""
    if not isinstance(ctx, VaultContext):
        assert vault is not None, "gather(config, vault) needs the vault"
        with VaultContext(ctx, vault, write=False) as own:
            return gather(own, recent=recent)
    config, vault, ledger = ctx.config, ctx.vault, ctx.ledger
    counts = ledger.counts()
    # Daily logs wait for the consolidation gate, not in the ingest queue: counted apart.
    for row in ledger.files(kind="log"):
        counts[row.state] = counts.get(row.state, 0) - 1
    problems = [
        {"path": r.path, "state": r.state, "reason": r.reason}
        for state in ("quarantined", "skipped")
        for r in ledger.files(state)
    ]
    pending = [
        {"path": r.path, "kind": r.kind, "state": r.state, "reason": r.reason, "attempts": r.attempts}
        for r in ledger.files("pending") + ledger.files("running") if r.kind != "log"
    ]
    duplicates = [{"path": r.path, "reason": r.reason} for r in ledger.files("duplicate")]
    # Sources a person took back: `wikiwright revert` / `retract` (their files stay in raw/).
    withdrawn = [
        {"path": s.path, "state": s.state, "page": s.page, "commit": s.commit_sha[:10]}
        for s in ledger.sources() if s.state != "ingested"
    ]
    notices = [{"key": k, "message": m, "since": s} for k, m, s in ledger.notices()]
    consolidation = consolidation_summary(ctx)
    # A full disk can keep new files from even reaching the queue: count them as waiting.
    disk_notice, waiting = disk_full_status(vault, lambda: {r.path for r in ledger.files()})
    if disk_notice is not None:
        notices.append(disk_notice)
        pending += waiting
        counts["pending"] = counts.get("pending", 0) + len(waiting)
    sync: dict[str, Any] = {"enabled": False}
    if config.git.remote.strip():
        sync = sync_summary(config, ledger, ctx.repo)
    holder = VaultLock(vault).holder()
    heartbeat: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):  # no heartbeat yet, or torn by a crash
        heartbeat = json.loads((vault.state / "heartbeat.json").read_text(encoding="utf-8"))
    repo = ctx.repo
    commits = [
        {"sha": c.sha[:10], "subject": c.subject, "date": c.date}
        for c in repo.log(limit=recent)
    ]
    engine = f"model:{config.llm.model}" if config.llm.enabled else "offline (no model configured)"
    from ..ingest.llm import spend_summary  # litellm itself is not imported by this

    spend = spend_summary(vault, lambda: ctx.costs, config)
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
        "writes": cas_mode(vault.wiki),  # compare-and-swap by "atomic exchange" or the "fallback"
        "spend": spend,
        "daemon": daemon,
        "counts": counts,
        "pending": pending,
        "problems": problems,
        "duplicates": duplicates,
        "withdrawn": withdrawn,
        "notices": notices,
        "consolidation": consolidation,
        "git_problem": repo.problem(),
        "sync": sync,
        "recent_commits": commits,
    }


def consolidation_summary(ctx: VaultContext) -> dict[str, Any]:
    """The daily logs waiting for consolidation and the gate they wait for (read only)."""
    config, vault, ledger = ctx.config, ctx.vault, ctx.ledger
    # The gate module, not the consolidator: status does not import what writes pages.
    from ..memory.gate import ConsolidationLock, gate_status, load_cursor, peek_new_logs

    reads = peek_new_logs(vault, load_cursor(ledger))  # names and session counts, not every line parsed
    lock = ConsolidationLock(vault, config.consolidation.stale_lock_minutes)
    gate = gate_status(config, vault, ledger, lock, ctx.repo, reads)
    hours_left = None if gate.time_ok or gate.hours_since is None else max(0.0, gate.min_hours - gate.hours_since)
    if not reads:
        line = "nothing waiting for consolidation"
    elif gate.would_run():
        line = "consolidation due: the gate is open (the daemon runs it at its next check)"
    else:
        parts = [f"{gate.sessions}/{gate.min_sessions} sessions"]
        parts.append(f"{hours_left:.0f} h left" if hours_left is not None else "time open")
        if not gate.lock_ok:
            parts.append(f"locked by {gate.lock.locked_by}")
        line = f"waiting for consolidation (gate: {', '.join(parts)})"
    return {"logs": [read.rel for read in reads], "line": line, "hours_left": hours_left, **gate.as_dict()}


def sync_summary(config: Config, ledger: Ledger, repo: GitRepo) -> dict[str, Any]:
    """Ahead/behind (as of the last fetch), the last sync, and why a sync waits: read from the
    ledger and the refs, so status shows it without importing the door."""
    if not config.git.remote.strip():
        return {"enabled": False}
    remote = Remote(repo, config.git.remote, config.git.branch)
    try:
        state = json.loads(ledger.get_kv(SYNC_STATE_KEY, "{}"))
    except ValueError:
        state = {}
    try:
        ahead, behind = remote.ahead_behind()
    except (git.GitCommandError, ValueError):
        ahead, behind = 0, 0
    try:
        refused = json.loads(ledger.get_kv(SYNC_REFUSED_KEY, "{}"))
    except ValueError:
        refused = {}
    return {
        "refused": [f"refused from the remote: {item.get('path', '')} ({item.get('why', '')})"
                    for item in refused.get("items", [])] if isinstance(refused, dict) else [],
        "refused_total": int(refused.get("total", 0)) if isinstance(refused, dict) else 0,
        "enabled": True, "remote": remote.name, "branch": remote.branch, "ahead": ahead, "behind": behind,
        "not_pushed": ahead, "push": config.git.push, "interval_seconds": config.git.sync_interval_seconds,
        "last_sync": state.get("last_success", 0), "last_fetch": state.get("last_fetch", 0),
        "last_push": state.get("last_push", 0), "waiting": state.get("waiting", ""),
        "next_try": state.get("next_try", 0),
    }
