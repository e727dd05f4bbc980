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

Crash safety: a run is one operation through the door (daemon/door): a run that fails puts
its files back at once, and a run killed mid-way is rolled back (or, when its commit landed,
rolled forward, cursor included) by the door's journal when the next run (or any writer) starts.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..core.config import Config
from ..core.crashpoints import crash_point
from ..core.errors import ConsolidationBusy, LLMError, WikiwrightError
from ..core.fsutil import sha256_bytes
from ..core.opkinds import FixAction, OpKind
from ..core.vault import Vault
from ..door import COMMIT, Door, Operation
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
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

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
        repo: GitRepo,
        *,
        door: Door | None = None,
        clock: Clock = time.time,
        owner: str | None = None,
        fault: Callable[[str], None] | None = None,
        llm: Any = None,
    ) -> None:
        """The process's parts (its vault context's): the ledger and repository the gate reads,
        the door a run writes through (its ledger, catalogue and repository are these; without
        one, the gate and a dry run only), the model client a model run calls (on the process's
        cost ledger). A run adds no connection and no second door."""
        self.config = config
        self.settings = config.consolidation
        self.vault = vault
        self.ledger = ledger
        self.repo = repo
        self.clock = clock
        self.owner = owner or owner_name()
        self.lock = ConsolidationLock(vault, self.settings.stale_lock_minutes, clock)
        # Tests inject a failure at a named step ("after-pages", "before-commit"...).
        self.fault = fault or (lambda step: None)
        self._llm = llm
        self._door = door

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
            raise WikiwrightError("a model run of consolidation needs the process's model client (llm=...)")
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
        # The model call above runs unlocked; writing and committing are one door operation (the
        # vault's write lock), so an ingest or a review approval never interleaves with it.
        if self.settings.review:
            return self._propose(plan, run_id)
        return self._apply(plan, run_id, started_ms)

    # -- applying through the door -------------------------------------------------------

    @property
    def door(self) -> Door:
        """The door a run writes through (the process's)."""
        if self._door is None:
            raise WikiwrightError("consolidation writes through the process's door; this one was made to read only")
        return self._door

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

    def _finish_ledger(self, op: Operation, after: dict[str, Any]) -> None:
        """The cursor, the pending observations and the logs' states, made once the commit exists
        (journaled by the door: a crash after the commit still records them)."""
        op.ledger_after_commit("set_kv", CURSOR_KEY, json.dumps(after["cursor"]))
        op.ledger_after_commit("set_kv", PENDING_KEY, json.dumps(after["pending"], ensure_ascii=False))
        op.ledger_after_commit("finish_logs", after["logs"], COMMIT)

    def _apply(self, plan: Plan, run_id: str, started_ms: int) -> RunResult:
        title = f"{len(plan.logs)} daily log(s), {plan.sessions} session(s)"
        with self.door.operation(OpKind.CONSOLIDATE, title, today=date.fromtimestamp(self.clock())) as op:
            outcome = op.write(plan.changes)
            crash_point("consolidate-after-pages")
            self.fault("after-pages")
            op.rebuild_index()  # prune: index.md within its budget
            self.fault("after-index")
            op.details += self._log_details(plan, run_id)
            op.trailers.update(self._trailers(plan, run_id))
            op.always_log = True
            self._finish_ledger(op, self._ledger_after(plan))
            crash_point("consolidate-before-commit")
            self.fault("before-commit")
        detail = (f"{len(plan.logs)} log(s), {plan.bytes_in} bytes in, {plan.bytes_out} bytes out "
                  f"({plan.ratio:.1f}:1), {len(plan.changes)} page(s) touched")
        if outcome.conflicts:
            detail += f"; kept a person's version of {', '.join(c.page for c in outcome.conflicts)}"
        return RunResult("consolidated", detail, op.commit_sha or "", plan)

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

    def recover(self) -> str | None:
        """Finish what a killed run left: roll forward if its commit landed, else roll back."""
        return self.door.recover()

    # -- review mode -------------------------------------------------------------------

    def _propose(self, plan: Plan, run_id: str) -> RunResult:
        """consolidation.review = true: each page change waits in REVIEW.md for a tick.

        Proposals carry a ``write-page`` fix: ticking one applies that page's change as its own
        commit, with the usual compare-and-swap against what the page held when it was proposed.
        """
        title = f"{len(plan.logs)} daily log(s), {plan.sessions} session(s)"
        items = []
        for change in plan.changes:
            entries = change.text.count("\n- ") - (plan.before.get(change.page) or "").count("\n- ")
            items.append({
                "description": f"Consolidation {run_id[:15]}: {entries} new line(s) for [[{change.page}]] "
                               f"from {title}",
                "pages": [change.page],
                "facts": {"run": run_id, "page": change.page},
                "fix": {"action": FixAction.WRITE_PAGE, "page": change.page, "text": change.text,
                        "base": plan.before.get(change.page)},
            })
        with self.door.operation(OpKind.CONSOLIDATE, f"{title} (proposed for review)",
                                 today=date.fromtimestamp(self.clock())) as op:
            added = op.propose("consolidation", items) if items else []
            op.details += [*self._log_details(plan, run_id), f"proposed in REVIEW.md: {len(added)} page change(s)"]
            op.trailers.update({**self._trailers(plan, run_id), "Wikiwright-Review": "proposed"})
            op.always_log = True
            self._finish_ledger(op, self._ledger_after(plan))
        return RunResult("proposed", f"{len(added)} page change(s) wait in REVIEW.md", op.commit_sha or "", plan)


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


def scheduled_tick(config: Config, vault: Vault, door: Door, clock: Clock = time.time, *,
                   llm: Callable[[], Any] | None = None) -> RunResult | None:
    """The daemon's periodic job: apply approved proposals, then run if the gate is open.
    ``door``: the daemon's (its ledger, catalogue and repository); ``llm``: makes the model
    client, on the process's cost ledger, when a run needs one."""
    consolidator = Consolidator(config, vault, door.ledger, door.repo, door=door, clock=clock,
                                owner=owner_name("daemon"),
                                llm=llm() if llm is not None and config.llm.enabled else None)
    if not consolidator.gate().would_run():
        return None
    try:
        result = consolidator.run()
    except ConsolidationBusy:
        return None
    log.info("consolidation: %s — %s", result.state, result.detail)
    return result
