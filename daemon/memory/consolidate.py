"""Consolidation: the gate, the lock, and the four phases that turn daily logs into topic pages.

The gate opens when all three hold: ``consolidation.min_hours`` since the last consolidation,
``consolidation.min_sessions`` session blocks logged since then (``## Session`` blocks: agents'
hook blocks, a repository's day of commits, ``wikiwright log --session``; a ``## Note`` does not
count), and no consolidation in progress. The lock ``.wikiwright/consolidation-lock`` is JSON
``{"last_consolidated_at", "locked_by", "locked_at"}`` (ms since the epoch); a lock held longer
than ``stale_lock_minutes`` is taken over, with a log line, and so is one whose holder is gone
(its pid no longer runs on this host, or the machine rebooted since: pid and boot id).

What "since then" means is a cursor: for every log file, the byte offset consolidation read
up to and the sha256 of those bytes (logs are append-only, so new content is what follows).

The phases: **orient** (read the topic pages and the index), **gather** (new signal, see
distill.py), **consolidate** (merge into topic pages as cited entries and claims, see
topics.py), **prune** (rebuild index.md inside its budget). One commit per run, with trailers.

Crash safety: before the first write a journal records what every file held; a run that
fails rolls its files back at once, and a run killed mid-way is rolled back (or, when its
commit landed, rolled forward) by the next run, which can start once the lock is stale.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.crashpoints import crash_point
from ..core.errors import ConsolidationBusy, LLMError
from ..core.fsutil import atomic_write_text, sha256_bytes
from ..core.locks import vault_write_lock
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..memory.distill import PROMOTE_SESSIONS, SYSTEM_PROMPT, Gathered, check_model_items, gather, prompt_chunks
from ..memory.gate import (  # the gate, the lock, the log cursor
    CURSOR_KEY,
    Clock,
    ConsolidationLock,
    GateStatus,
    LogRead,
    gate_status,
    load_cursor,
    new_log_content,
    owner_name,
)
from ..memory.gate import LockData as LockData  # re-exported: callers import the lock's data from here
from ..memory.topics import TOPIC_PAGES, ClaimItem, Item, MergeStats, is_topic_page, parse_entries, update_topic_page
from ..vcs.repo import GitRepo
from ..wiki.catalog import Catalog
from ..wiki.index import append_log, rebuild_index
from ..wiki.writer import PageChange, PageWriter

log = logging.getLogger(__name__)

JOURNAL_FILE = "consolidation-journal.json"
PENDING_KEY = "consolidation.pending"
PAGES_KEY = "consolidation.pages"


# --- plan and result --------------------------------------------------------------------

@dataclass
class Plan:
    logs: list[LogRead]
    gathered: Gathered
    items: list[Item]
    claims: list[ClaimItem]
    changes: list[PageChange]
    before: dict[str, str | None]  # page -> text before
    stats: MergeStats
    prompts: list[str]
    engine: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    rejected: int = 0

    @property
    def bytes_in(self) -> int:
        return sum(read.bytes_new for read in self.logs)

    @property
    def bytes_out(self) -> int:
        """What the topic pages grew by (their whole size for new pages)."""
        grown = 0
        for change in self.changes:
            if change.page == "overview":
                continue
            before = self.before.get(change.page) or ""
            grown += max(0, len(change.text.encode("utf-8")) - len(before.encode("utf-8")))
        return grown

    @property
    def ratio(self) -> float:
        return self.bytes_in / max(1, self.bytes_out)

    @property
    def sessions(self) -> int:
        return sum(read.new_sessions for read in self.logs)


@dataclass
class RunResult:
    state: str  # consolidated | proposed | nothing-new | gate-closed | busy | waiting
    detail: str
    commit: str = ""
    plan: Plan | None = None
    gate: GateStatus | None = None
    recovered: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Consolidator:
    def __init__(
        self,
        config: Config,
        vault: Vault,
        ledger: Ledger,
        catalog: Catalog | None = None,
        repo: GitRepo | None = None,
        *,
        clock: Clock = time.time,
        owner: str | None = None,
        fault: Callable[[str], None] | None = None,
        llm: Any = None,
    ) -> None:
        self.config = config
        self.settings = config.consolidation
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.repo = repo or GitRepo(vault.root, config.git.author_name, config.git.author_email,
                                    config.git.lock_retry_seconds)
        self.clock = clock
        self.owner = owner or owner_name()
        self.lock = ConsolidationLock(vault, self.settings.stale_lock_minutes, clock)
        # Tests inject a failure at a named step ("after-pages", "before-commit"...).
        self.fault = fault or (lambda step: None)
        self._llm = llm

    # -- gate ------------------------------------------------------------------------

    def gate(self, reads: list[LogRead] | None = None) -> GateStatus:
        return gate_status(self.config, self.vault, self.ledger, self.lock, self.repo, reads)

    # -- orient + gather + consolidate (in memory) -------------------------------------

    def _page_names(self) -> dict[str, str]:
        try:
            names = json.loads(self.ledger.get_kv(PAGES_KEY, "{}"))
        except ValueError:
            names = {}
        out: dict[str, str] = {}
        for kind, (slug, _title, _summary) in TOPIC_PAGES.items():
            name = names.get(kind) if isinstance(names, dict) else None
            if not name:
                name = slug
                path = self.vault.wiki / f"{slug}.md"
                # A page of that name that consolidation did not make is not ours to fill.
                if path.exists() and not is_topic_page(path.read_text(encoding="utf-8", errors="replace")):
                    name = f"{slug}-from-logs"
            out[kind] = name
        return out

    def _read_page(self, name: str) -> str | None:
        try:
            return self.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def plan(self, reads: list[LogRead], *, call_model: bool = True) -> Plan:
        today = date.fromtimestamp(self.clock())
        names = self._page_names()
        # Orient: what the topic pages already hold.
        texts = {kind: self._read_page(name) for kind, name in names.items()}
        known = []
        known_lines = []
        from ..wiki.pages import get_section, parse_page

        for kind, text in texts.items():
            if text is None:
                continue
            for entry in parse_entries(get_section(parse_page(text).body, "Entries")):
                if entry.current:
                    known.append(entry.norm)
                    known_lines.append(f"- [{kind}] {entry.text}")
        # Gather.
        try:
            pending = json.loads(self.ledger.get_kv(PENDING_KEY, "{}"))
        except ValueError:
            pending = {}
        observations = [obs for read in reads for obs in read.observations()]
        gathered = gather(observations, known, pending if isinstance(pending, dict) else {})
        candidates = [g for g in gathered.groups if not g.carried or g.promoted]
        prompts = prompt_chunks(candidates, known_lines, self.config.llm.prompt_budget_chars)
        items, claims = gathered.items(), list(gathered.claims)
        engine = "offline"
        plan = Plan(reads, gathered, items, claims, [], {}, MergeStats(), prompts, engine)
        if self.config.llm.enabled and call_model:
            self._model_gather(plan, {read.day for read in reads})
        # Consolidate, in memory.
        by_kind: dict[str, list[Item]] = {}
        for item in plan.items:
            by_kind.setdefault(item.kind, []).append(item)
        claim_kind = "decision"
        for kind, name in names.items():
            kind_items = by_kind.get(kind, [])
            kind_claims = plan.claims if kind == claim_kind else []
            if not kind_items and not kind_claims:
                continue
            before = texts[kind]
            new_text = update_topic_page(kind, before, kind_items, kind_claims, today, plan.stats)
            if new_text != before:
                # base: the text this change was computed from, for compare-and-swap.
                plan.changes.append(PageChange(name, new_text, base=before, reason=f"consolidation: {kind}"))
                plan.before[name] = before
        self._link_from_overview(plan, [name for kind, name in names.items()
                                        if texts[kind] is not None or any(c.page == name for c in plan.changes)])
        return plan

    def _link_from_overview(self, plan: Plan, pages: list[str]) -> None:
        """The topic pages are listed on overview.md (added to, never removed from)."""
        from ..wiki.pages import Page, get_section, iter_links, link_key, parse_page, render_page, set_section

        text = self._read_page("overview")
        if text is None or not pages:
            return
        try:
            page = parse_page(text)
        except ValueError:
            return
        linked = {link_key(link.target) for link in iter_links(page.body)}
        missing = [name for name in pages if link_key(name) not in linked]
        if not missing:
            return
        heading = "From the daily logs"
        section = get_section(page.body, heading) or f"## {heading}\n\n"
        section = section.rstrip("\n") + "\n" + "".join(f"- [[{name}]]\n" for name in missing)
        new_text = render_page(Page(page.meta, set_section(page.body, heading, section)))
        plan.changes.append(PageChange("overview", new_text, base=text, reason="link the topic pages"))
        plan.before["overview"] = text

    def _client(self) -> Any:
        if self._llm is None:
            from ..ingest.llm import LLMClient

            self._llm = LLMClient(self.config, self.vault, self.ledger)
        return self._llm

    def _model_gather(self, plan: Plan, days: set[date]) -> None:
        from ..memory.distill import REPLY_SCHEMA

        client = self._client()
        items: list[Item] = []
        claims: list[ClaimItem] = []
        for prompt in plan.prompts:
            reply, usage = client.complete_json(purpose="consolidate", system=SYSTEM_PROMPT, user=prompt,
                                                schema=REPLY_SCHEMA)
            got_items, got_claims, rejected = check_model_items(reply, days)
            items.extend(got_items)
            claims.extend(got_claims)
            plan.rejected += rejected
            plan.tokens_in += usage.tokens_in
            plan.tokens_out += usage.tokens_out
            plan.cost_usd += usage.cost_usd
            plan.engine = f"model ({usage.model})"
        # What the author marked 🔴 or wrote under Decisions is kept even if the model left it out.
        marked = [g for g in plan.gathered.groups if g.durable or g.section == "Decisions"]
        from ..memory.topics import normalize, similar

        for group in marked:
            if not any(similar(group.norm, normalize(item.text)) for item in items):
                items.append(Item(group.kind, group.text, group.first, group.last, len(group.sessions)))
        plan.items = items
        plan.claims = [*plan.gathered.claims, *claims]

    # -- the run ---------------------------------------------------------------------

    def run(self, *, force: bool = False) -> RunResult:
        reads = new_log_content(self.vault, load_cursor(self.ledger))
        status = self.gate(reads)
        if not status.lock_ok:
            return RunResult("busy", f"a consolidation is in progress ({status.lock.locked_by})", gate=status)
        if not status.would_run(force):
            closed = [line for line in status.lines() if "closed" in line]
            return RunResult("gate-closed", "; ".join(closed), gate=status)
        if self.config.git.remote.strip():
            # The lock across machines: a claim pushed to the remote; the first push wins.
            from ..door.sync import claim_consolidation

            refused = claim_consolidation(self.config, self.repo, self.owner, force=force)
            if refused:
                return RunResult("waiting", refused, gate=status)
        self.lock.acquire(self.owner)
        started_ms = self.lock.now_ms()
        consolidated_at: int | None = None
        try:
            recovered = self.recover()
            if recovered:
                reads = new_log_content(self.vault, load_cursor(self.ledger))
            result = self._run_locked(reads, started_ms)
            result.gate, result.recovered = status, recovered or ""
            if result.state in ("consolidated", "proposed", "nothing-new"):
                consolidated_at = started_ms if result.state != "nothing-new" else None
            return result
        finally:
            self.lock.release(self.owner, consolidated_at)

    def _run_locked(self, reads: list[LogRead], started_ms: int) -> RunResult:
        if not reads:
            return RunResult("nothing-new", "no daily log has anything new since the last consolidation")
        try:
            plan = self.plan(reads)
        except LLMError as exc:
            self.ledger.set_notice("consolidation", f"consolidation waits for the model: {exc}")
            return RunResult("waiting", f"the model is not available: {exc}")
        self.ledger.clear_notice("consolidation")
        run_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(started_ms / 1000))}-{uuid.uuid4().hex[:8]}"
        # The model call above runs unlocked; writing and committing wait for the vault's write
        # lock, so an ingest or a review approval never interleaves with this run's commit.
        with vault_write_lock(self.vault.state):
            if self.settings.review:
                return self._propose(plan, run_id)
            return self._apply(plan, run_id, started_ms)

    # -- applying with a journal ------------------------------------------------------

    @property
    def journal_path(self) -> Path:
        return self.vault.state / JOURNAL_FILE

    def _write_journal(self, journal: dict[str, Any]) -> None:
        atomic_write_text(self.journal_path, json.dumps(journal, ensure_ascii=False), crash_hooks=False)

    def _file_text(self, rel: str) -> str | None:
        try:
            return (self.vault.root / rel).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _ledger_after(self, plan: Plan) -> dict[str, Any]:
        cursor = load_cursor(self.ledger)
        for read in plan.logs:
            data = (self.vault.root / read.rel).read_bytes()[: read.size]
            cursor[read.rel] = {"offset": read.size, "prefix_sha256": sha256_bytes(data)}
        return {
            "cursor": cursor,
            "pending": plan.gathered.pending_store(),
            "logs": {read.rel: read.sha256 for read in plan.logs},
        }

    def _finish_ledger(self, after: dict[str, Any], commit: str) -> None:
        self.ledger.set_kv(CURSOR_KEY, json.dumps(after["cursor"]))
        self.ledger.set_kv(PENDING_KEY, json.dumps(after["pending"], ensure_ascii=False))
        self.ledger.finish_logs(after["logs"], commit)

    def _apply(self, plan: Plan, run_id: str, started_ms: int) -> RunResult:
        writer = PageWriter(self.vault, self.ledger, self.repo)
        page_rels = [f"wiki/{change.page}.md" for change in plan.changes]
        rels = [*page_rels, "wiki/index.md", "wiki/log.md"]
        journal: dict[str, Any] = {
            "run": run_id, "started_ms": started_ms, "owner": self.owner,
            "files": {rel: {"before": self._file_text(rel)} for rel in rels},
            "ledger": self._ledger_after(plan),
        }
        for change in plan.changes:
            journal["files"][f"wiki/{change.page}.md"]["planned"] = sha256_bytes(change.text.encode("utf-8"))
        self._write_journal(journal)
        try:
            outcome = writer.write(plan.changes)
            for page, text in outcome.texts.items():
                journal["files"][f"wiki/{page}.md"]["after"] = sha256_bytes(text.encode("utf-8"))
            self._write_journal(journal)
            crash_point("consolidate-after-pages")
            self.fault("after-pages")
            catalog = self.catalog or Catalog(self.vault)
            try:
                catalog.refresh([change.page for change in plan.changes])
                rebuild_index(self.vault, catalog)  # prune: index.md within its budget
            finally:
                if self.catalog is None:
                    catalog.close()
            self.fault("after-index")
            details = self._log_details(plan, run_id)
            title = f"{len(plan.logs)} daily log(s), {plan.sessions} session(s)"
            append_log(self.vault, "consolidate", title, details, date.fromtimestamp(self.clock()))
            crash_point("consolidate-before-commit")
            self.fault("before-commit")
            trailers = self._trailers(plan, run_id)
            sha = self.repo.commit_paths(rels, f"consolidate: {title}", trailers) or ""
        except BaseException:
            log.warning("consolidation %s failed; putting the wiki back as it was", run_id)
            self._rollback(journal)
            raise
        writer.remember(outcome)
        self._finish_ledger(journal["ledger"], sha)
        self.journal_path.unlink(missing_ok=True)
        detail = (f"{len(plan.logs)} log(s), {plan.bytes_in} bytes in, {plan.bytes_out} bytes out "
                  f"({plan.ratio:.1f}:1), {len(plan.changes)} page(s) touched")
        if outcome.conflicts:
            detail += f"; kept a person's version of {', '.join(c.page for c in outcome.conflicts)}"
        return RunResult("consolidated", detail, sha, plan)

    def _log_details(self, plan: Plan, run_id: str) -> list[str]:
        pages = ", ".join(f"[[{change.page}]]" for change in plan.changes) or "(none)"
        return [
            f"logs: {', '.join(f'`{read.rel}`' for read in plan.logs)}",
            f"pages: {pages}",
            f"entries: {plan.stats.added} added, {plan.stats.merged} merged, {plan.stats.superseded} superseded; "
            f"claims: {plan.stats.claims_added} added, {plan.stats.claims_superseded} superseded",
            f"compression: {plan.bytes_in} → {plan.bytes_out} bytes ({plan.ratio:.1f}:1)",
            f"run: {run_id}",
        ]

    def _trailers(self, plan: Plan, run_id: str) -> dict[str, str]:
        trailers = {
            "Wikiwright-Operation": "consolidate",
            "Wikiwright-Run": run_id,
            "Wikiwright-Logs-Read": ", ".join(read.rel for read in plan.logs),
            "Wikiwright-Pages": ", ".join(f"wiki/{change.page}.md" for change in plan.changes) or "(none)",
            "Wikiwright-Bytes-In": str(plan.bytes_in),
            "Wikiwright-Bytes-Out": str(plan.bytes_out),
            "Wikiwright-Compression": f"{plan.ratio:.1f}:1",
            "Wikiwright-Entries": f"added {plan.stats.added}, merged {plan.stats.merged}, "
                                  f"superseded {plan.stats.superseded}",
            "Wikiwright-Claims": f"added {plan.stats.claims_added}, superseded {plan.stats.claims_superseded}",
            "Wikiwright-Engine": plan.engine,
        }
        if plan.tokens_in or plan.tokens_out:
            trailers["Wikiwright-Tokens"] = f"in {plan.tokens_in}, out {plan.tokens_out}"
            trailers["Wikiwright-Cost-USD"] = f"{plan.cost_usd:.6f}"
        return trailers

    def _rollback(self, journal: dict[str, Any]) -> None:
        run_id = str(journal.get("run", ""))
        for rel, info in journal.get("files", {}).items():
            before = info.get("before")
            disk = self._file_text(rel)
            if disk == before:
                continue
            digest = sha256_bytes(disk.encode("utf-8")) if disk is not None else ""
            ours = digest in (info.get("planned"), info.get("after"))
            if rel == "wiki/index.md":
                ours = ours or info.get("after") is None  # generated; rebuilt from the pages below
            if rel == "wiki/log.md":
                ours = disk is not None and disk.startswith(before or "") and run_id in disk[len(before or ""):]
            if not ours:
                log.warning("rollback: %s changed since the failed run wrote it; keeping it as it is", rel)
                continue
            path = self.vault.root / rel
            if before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write_text(path, before, crash_hooks=False)
        self.journal_path.unlink(missing_ok=True)

    def recover(self) -> str | None:
        """Finish what a killed run left: roll forward if its commit landed, else roll back."""
        try:
            journal = json.loads(self.journal_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:
            self.journal_path.unlink(missing_ok=True)
            return "discarded an unreadable consolidation journal"
        run_id = str(journal.get("run", ""))
        commits = self.repo.log("-F", f"--grep=Wikiwright-Run: {run_id}", limit=1) if run_id else []
        if commits:
            self._finish_ledger(journal["ledger"], commits[0].sha)
            self.journal_path.unlink(missing_ok=True)
            message = f"consolidation {run_id} had committed ({commits[0].sha[:10]}) before it stopped; finished it"
        else:
            self._rollback(journal)
            message = f"consolidation {run_id} stopped before its commit; the wiki was put back as it was"
        log.warning("%s", message)
        return message

    # -- review mode -------------------------------------------------------------------

    def _propose(self, plan: Plan, run_id: str) -> RunResult:
        """consolidation.review = true: each page change waits in REVIEW.md for a tick.

        Proposals go through wiki/reviewfile.py (``add_proposals`` with a ``write-page`` fix): ticking
        one applies that page's change as its own commit, with the usual compare-and-swap
        against what the page held when the proposal was made.
        """
        from ..wiki.reviewfile import add_proposals

        after = self._ledger_after(plan)
        title = f"{len(plan.logs)} daily log(s), {plan.sessions} session(s)"
        items = []
        for change in plan.changes:
            entries = change.text.count("\n- ") - (plan.before.get(change.page) or "").count("\n- ")
            items.append({
                "description": f"Consolidation {run_id[:15]}: {entries} new line(s) for [[{change.page}]] "
                               f"from {title}",
                "pages": [change.page],
                "facts": {"run": run_id, "page": change.page},
                "fix": {"action": "write-page", "page": change.page, "text": change.text,
                        "base": plan.before.get(change.page)},
            })
        added = add_proposals(self.vault, "consolidation", items) if items else []
        details = [*self._log_details(plan, run_id), f"proposed in REVIEW.md: {len(added)} page change(s)"]
        append_log(self.vault, "consolidate", f"{title} (proposed for review)", details,
                   date.fromtimestamp(self.clock()))
        trailers = {**self._trailers(plan, run_id), "Wikiwright-Review": "proposed"}
        sha = self.repo.commit_paths(["REVIEW.md", "wiki/log.md"], f"consolidate: {title} (proposed)", trailers)
        self._finish_ledger(after, sha or "")
        return RunResult("proposed", f"{len(added)} page change(s) wait in REVIEW.md", sha or "", plan)


def dry_run_report(consolidator: Consolidator) -> str:
    """What a run would read and send, without writing anything (no lock, no ledger, no pages)."""
    reads = new_log_content(consolidator.vault, load_cursor(consolidator.ledger))
    status = consolidator.gate(reads)
    out = ["Gates:", *(f"  {line}" for line in status.lines()), ""]
    if not reads:
        out.append("No daily log has anything new since the last consolidation.")
        return "\n".join(out) + "\n"
    out.append("Logs that would be read:")
    for read in reads:
        out.append(f"  {read.rel}: bytes {read.start}-{read.size} ({read.bytes_new} new), "
                   f"{read.new_sessions} new session(s)")
    plan = consolidator.plan(reads, call_model=False)
    out.append("")
    config = consolidator.config
    if config.llm.enabled:
        out.append(f"Prompt ({len(plan.prompts)} call(s) to {config.llm.model}):")
        out.append("--- system ---")
        out.append(SYSTEM_PROMPT)
    else:
        out.append("No model configured: the deterministic rules decide (🔴 or a decision: kept at once; "
                   f"otherwise after {PROMOTE_SESSIONS} sessions, 2 for lessons). The prompt a model would get:")
    for index, prompt in enumerate(plan.prompts, start=1):
        out.append(f"--- user ({index}/{len(plan.prompts)}) ---")
        out.append(prompt.rstrip("\n"))
    out.append("")
    if not config.llm.enabled:
        out.append(f"Would write {len(plan.changes)} page(s): " + ", ".join(f"wiki/{c.page}.md" for c in plan.changes))
        out.append(f"  {plan.stats.added} new entries, {plan.stats.merged} merged, "
                   f"{plan.stats.claims_added} claims; {plan.bytes_in} bytes in, {plan.bytes_out} out "
                   f"({plan.ratio:.1f}:1)")
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(plan.gathered.skipped.items()))
        out.append(f"  skipped observations: {skipped or 'none'}")
    return "\n".join(out) + "\n"


def scheduled_tick(config: Config, vault: Vault, clock: Clock = time.time) -> RunResult | None:
    """The daemon's periodic job: apply approved proposals, then run if the gate is open."""
    ledger = Ledger(vault.db_path)
    try:
        consolidator = Consolidator(config, vault, ledger, clock=clock, owner=owner_name("daemon"))
        if not consolidator.gate().would_run():
            return None
        try:
            result = consolidator.run()
        except ConsolidationBusy:
            return None
        log.info("consolidation: %s — %s", result.state, result.detail)
        return result
    finally:
        ledger.close()
