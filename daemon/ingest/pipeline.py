"""Process one queued source from start to commit, and record how it ended.

Used by the daemon's worker threads and by the one-shot ``wikiwright ingest``. The stages:
dedupe by content hash → read and decode → plan (offline engine or model) → one operation
through the door (pages with compare-and-swap, index.md, log.md, one commit with trailers)
→ ledger. A stop request before writing abandons the job (it stays pending); once writing
has begun the operation is all or nothing (the door's journal), never half done.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol, runtime_checkable

from ..core.errors import (
    BudgetExceeded,
    CommitPaused,
    LLMAuthError,
    LLMTransientError,
    PlanOutdated,
    SourceAwaitsApproval,
    SourceNotReady,
    SourceRejected,
    WikiwrightError,
)
from ..core.locks import PageLocks, vault_write_lock
from ..core.opkinds import OpKind
from ..door import COMMIT, Door
from ..door.sourceclaims import SourceClaims
from ..door.trailers import recovered_ingest
from ..ingest.cost import APPROVAL_RECHECK_SECONDS, COSTLY_SOURCE, costly_proposal
from ..ingest.plan import IngestPlan, prepare, source_page_name
from ..ingest.rawcommit import include_source
from ..ingest.selffeed import SELF_FEEDING_RULE, is_own_page
from ..intake.extract import SourceText
from ..intake.ledger import FileRecord, SourceRecord
from ..intake.names import disk_name, disk_path, shown_name
from ..vcs.queries import tracked
from ..wiki.reviewfile import HELD_BACK, ReviewStore

log = logging.getLogger(__name__)

RETRY_NOT_READY = 2.0
RETRY_GIT = 5.0
RETRY_IO = 10.0
RETRY_BUDGET = 300.0


class Planner(Protocol):
    engine: str

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan: ...


@runtime_checkable
class ReadsAhead(Protocol):
    """A planner whose work on the source alone (:meth:`read`) runs outside its ``serial`` lock."""

    def read(self, record: FileRecord, source: SourceText, data: bytes) -> Any: ...

    def plan_read(self, record: FileRecord, reading: Any, today: date) -> IngestPlan: ...


@dataclass(frozen=True)
class JobResult:
    path: str
    state: str  # ingested | duplicate | quarantined | skipped | pending | unchanged
    detail: str
    commit: str = ""
    page: str = ""


class Pipeline:
    def __init__(
        self,
        door: Door,
        planner: Planner,
        stop: threading.Event | None = None,
        clock: Callable[[], date] = date.today,
    ) -> None:
        self.door = door
        self.config = door.config
        self.vault = door.vault
        self.ledger = door.ledger
        self.catalog = door.catalog
        self.repo = door.repo
        self.planner = planner  # the process's (VaultContext.planner: the model's or the offline engine)
        self.stop = stop or threading.Event()
        self.clock = clock
        # Seconds a job waits before the next try (instance knobs so tests can shorten them).
        self.retry_git_seconds = RETRY_GIT
        self.retry_not_ready_seconds = RETRY_NOT_READY
        self.retry_io_seconds = RETRY_IO
        self.claims = SourceClaims(self.config, self.repo, self.ledger)
        # Shared by this pipeline's workers: a planner that routes to pages (the model's) holds
        # them from routing to commit, so a second worker on the same page waits, then reads
        # the first one's text instead of planning on a page about to change.
        self.page_locks = PageLocks()
        self._replanning: set[str] = set()  # sources whose plan the door found outdated
        self._replan_lock = threading.Lock()
        self._unreleased: list[tuple[FileRecord, str]] = []
        self._unreleased_lock = threading.Lock()

    # -- one job ---------------------------------------------------------------------

    def process(self, record: FileRecord) -> JobResult:
        try:
            return self._process(record)
        except CommitPaused as exc:
            self.ledger.set_notice("git", exc.reason)
            self.ledger.release(record, f"waiting to commit: {exc.reason}", self.retry_git_seconds)
            return JobResult(record.path, "pending", exc.reason)
        except SourceNotReady as exc:
            self.ledger.release(record, "still being written; will retry", self.retry_not_ready_seconds)
            return JobResult(record.path, "pending", str(exc))
        except LLMAuthError as exc:
            self.ledger.set_notice("llm", f"model calls stopped: {exc}")
            self.ledger.release(record, f"waiting for the model: {exc}", 300)
            return JobResult(record.path, "pending", str(exc))
        except BudgetExceeded as exc:
            # A spend cap: the queue waits (nothing lost); re-checked every few minutes.
            self.ledger.set_notice("llm", f"model calls paused: {exc}")
            self.ledger.release(record, f"waiting for the spend cap: {exc}", RETRY_BUDGET)
            return JobResult(record.path, "pending", str(exc))
        except LLMTransientError as exc:
            delay = exc.retry_after or 30.0
            self.ledger.set_notice("llm", f"model unavailable, retrying: {exc}")
            self.ledger.release(record, f"waiting for the model: {exc}", delay)
            return JobResult(record.path, "pending", str(exc))
        except PlanOutdated as exc:
            # The model's replies are applied again to the pages as they are now (no second call).
            replan = getattr(self.planner, "replan_from_replies", None)
            if replan is not None:
                replan(record.sha256)
            with self._replan_lock:
                self._replanning.add(record.sha256)
            self.ledger.release(record, f"planning again: {exc}", 0)
            return JobResult(record.path, "pending", str(exc))
        except SourceAwaitsApproval as exc:
            return self._await_approval(record, exc)
        except SourceRejected as exc:
            reason = f"{exc.code}: {exc}"
            self.ledger.finish_quarantined(record, reason)
            return JobResult(record.path, "quarantined", reason)

    def _process(self, record: FileRecord) -> JobResult:
        if record.recovering:
            found = recovered_ingest(self.repo, record.path, record.sha256)
            if found:
                # The process died after committing but before the ledger heard of it: a vault an
                # earlier release left so (the ledger's call is journaled with the commit now).
                page = source_page_name(self.ledger, self.vault, record.path)  # bound before that commit
                with self.ledger.atomic():
                    self.ledger.bind_page(record.path, page)  # (no-op: that release bound it as it planned)
                    self.ledger.finish_ingested(record, page=page, title="", commit_sha=found, engine="recovered")
                return JobResult(record.path, "ingested", "recovered after a crash", found, page)
        original = self.ledger.source(record.sha256)
        moved = original is not None and not disk_path(self.vault.root, original.path).exists()
        if original is not None and original.path != record.path and moved:
            return self._renamed(record, original)
        if original is not None and original.path != record.path:
            self.ledger.finish_duplicate(record, original)
            return JobResult(record.path, "duplicate", f"same content as {original.path}", original.commit_sha)
        if original is not None:
            self.ledger.finish_ingested(
                record, page=original.page, title=original.title, commit_sha=original.commit_sha,
                engine=original.engine,
            )
            return JobResult(record.path, "unchanged", "already ingested", original.commit_sha, original.page)
        self._check_repository()  # no planning (or model spend) while commits cannot happen
        source, data = prepare(self.config, self.vault, record)
        if is_own_page(self.ledger, self.repo, data, self.config.git.author_name):
            self.ledger.finish_skipped(record, SELF_FEEDING_RULE)
            return JobResult(record.path, "skipped", SELF_FEEDING_RULE)
        # With a remote, the bytes are claimed there first: another machine's claim means its
        # ingest is on its way, and this one never plans (or pays a model for) the same source.
        waiting = self.claims.wait_reason(record)
        if waiting is not None:
            reason, delay = waiting
            self.ledger.release(record, reason, delay)
            return JobResult(record.path, "pending", reason)
        # A planner whose pages other sources share (the offline engine's concept pages) plans
        # and writes one source at a time, so two workers never build on the same old page;
        # what it reads from the source alone (summary, keyphrases) it reads first, in parallel.
        planner = self.planner
        reading = planner.read(record, source, data) if isinstance(planner, ReadsAhead) else None
        # Planned again because another worker changed a page the first plan read: this time
        # under the vault's write lock from planning to commit (the model's replies are kept,
        # so it is quick), so the page cannot move again in between: no livelock on a hub page.
        with self._replan_lock:
            replanning = record.sha256 in self._replanning
            self._replanning.discard(record.sha256)
        held = vault_write_lock(self.vault.state) if replanning else contextlib.nullcontext()
        with getattr(planner, "serial", None) or contextlib.nullcontext(), held, self.page_locks.holder() as pages:
            if isinstance(planner, ReadsAhead):
                plan = planner.plan_read(record, reading, self.clock())
            elif getattr(planner, "holds_pages", False) and not replanning:
                # Not while replanning: that holds the vault's write lock, which a page's
                # holder waits for at its commit (a wait for its pages here would be a deadlock).
                plan = planner.plan(record, source, data, self.clock(), hold=pages.hold)  # type: ignore[call-arg]
            else:
                plan = planner.plan(record, source, data, self.clock())
            if self.stop.is_set():
                self.ledger.release(record, "abandoned at shutdown; resumes on the next start", 0)
                return JobResult(record.path, "pending", "abandoned at shutdown")
            # Checked again before any page is touched: no writes into a merge or a detached HEAD.
            self._check_repository()
            sha = self._apply(plan, replan_if_outdated=not replanning)
        self.ledger.clear_notice("git")
        self.ledger.clear_notice("io")
        return JobResult(record.path, "ingested", plan.title, sha or "", plan.source_page)

    def _renamed(self, record: FileRecord, original: SourceRecord) -> JobResult:
        """The ingested bytes under a new name, the old name gone: a rename, not a duplicate.
        The ledger moves the source to its new name; git records the move (when it tracked
        the source) in one commit."""
        if tracked(self.repo, disk_name(original.path)):
            old, new = shown_name(original.path), shown_name(record.path)
            with self.door.operation(OpKind.INGEST, f"{old} renamed to {new}", today=self.clock()) as op:
                op.add_paths([disk_name(original.path)])
                include_source(op, record, self.config.git.commit_raw_max_bytes)
                op.details.append(f"`{old}` renamed to `{new}` (sha256 {record.sha256[:16]})")
        self.ledger.finish_renamed(record, original)
        return JobResult(record.path, "ingested", f"renamed from {original.path}", original.commit_sha, original.page)

    def _await_approval(self, record: FileRecord, exc: SourceAwaitsApproval) -> JobResult:
        """Over the cost bound: a REVIEW.md line to tick; the job waits, pending, until it is ticked
        (upkeep/review.py wakes it) and is skipped once a person rejects it."""
        bound = self.config.llm.max_tokens_per_source
        item = costly_proposal(record, exc.tokens, exc.calls, bound)
        answered = ReviewStore.on(self.ledger).get(item.id)  # the ledger's connection: no second one
        if answered is not None and answered.state == "rejected":
            rule = "its cost was declined in REVIEW.md (llm.max_tokens_per_source)"
            self.ledger.finish_skipped(record, rule)
            return JobResult(record.path, "skipped", rule)
        try:
            with self.door.operation(OpKind.REVIEW_REQUEST, f"approve the cost of {shown_name(record.path)}",
                                     today=self.clock()) as op:
                op.propose(COSTLY_SOURCE, [item])
                op.details.append(str(exc))
        except CommitPaused as paused:
            self.ledger.release(record, f"waiting to commit: {paused.reason}", self.retry_git_seconds)
            return JobResult(record.path, "pending", paused.reason)
        self.ledger.release(record, str(exc), APPROVAL_RECHECK_SECONDS)
        return JobResult(record.path, "pending", str(exc))

    def _check_repository(self) -> None:
        problem = self.repo.problem()
        if problem:
            raise CommitPaused(problem)

    def _apply(self, plan: IngestPlan, *, replan_if_outdated: bool = True) -> str | None:
        """Pages, index.md, log.md, one commit, then the ledger: one operation through the door."""
        record = plan.record
        shown = shown_name(record.path)  # a secret in the file name never reaches log.md or a commit
        with self.door.operation(OpKind.INGEST, plan.title, today=self.clock()) as op:
            op.always_log = True  # the source is recorded even if no page changed
            bind = self._source_page_still_free(plan)
            # Another worker changed a page this plan read: plan again on its text, once: that plan
            # runs under the write lock, where no other operation can move the page again.
            op.replan_if_outdated = replan_if_outdated
            outcome = op.write(plan.changes)
            page_links = ", ".join(f"[[{page.rsplit('/', 1)[-1]}]]" for page in plan.pages)
            op.details += [f"source: `{shown}` (sha256 {record.sha256[:16]})", f"pages: {page_links}"]
            if outcome.merged:
                op.details.append(f"merged with a person's edits: {', '.join(outcome.merged)}")
            for conflict in outcome.conflicts:
                op.details.append(f"kept a person's version of {conflict.page}; wikiwright's is proposed in REVIEW.md")
            op.trailers.update({
                "Wikiwright-Source": f"{shown} sha256:{record.sha256}",
                "Wikiwright-Pages": ", ".join(f"wiki/{p}.md" for p in plan.pages),
                "Wikiwright-Engine": plan.engine,
            })
            if plan.claims_added or plan.claims_superseded:
                op.trailers["Wikiwright-Claims"] = f"added {plan.claims_added}, superseded {plan.claims_superseded}"
            if plan.tokens_in or plan.tokens_out:
                op.trailers["Wikiwright-Tokens"] = f"in {plan.tokens_in}, out {plan.tokens_out}"
                op.trailers["Wikiwright-Cost-USD"] = f"{plan.cost_usd:.6f}"
            op.trailers.update(plan.trailers)
            if plan.held_for_review:
                op.propose(HELD_BACK, plan.held_for_review)
                op.trailers["Wikiwright-Held"] = str(len(plan.held_for_review))
            # The source itself goes into this commit (or, binary or large, into .gitignore).
            kept_out = include_source(op, record, self.config.git.commit_raw_max_bytes)
            if kept_out:
                op.details.append(kept_out)
            # Journaled with the commit: a crash after it is finished by the door's recovery.
            if bind:
                op.ledger_after_commit("bind_page", record.path, plan.source_page)
            op.ledger_after_commit("record_ingest", record.path, record.sha256, plan.source_page, plan.title,
                                   COMMIT, plan.engine)
            for delta in plan.deltas:  # the terms it saw, its notes: made with the ledger's, after the commit
                op.apply_after_commit(delta)
        return op.commit_sha

    def _source_page_still_free(self, plan: IngestPlan) -> bool:
        """Under the vault's write lock (inside the operation): the plan's source page is still
        the one its source gets. True when the binding is new (the operation records it once
        its commit exists); PlanOutdated when another source took the name meanwhile (a worker
        or a process planning a source whose name slugs the same committed first): planned again,
        the name the lookup gives now (``-2``) is this source's."""
        record = plan.record
        if self.ledger.bound_page(record.path) == plan.source_page:
            return False
        if source_page_name(self.ledger, self.vault, record.path) != plan.source_page:
            raise PlanOutdated(plan.source_page)
        return True

    # -- draining --------------------------------------------------------------------

    def _failed(self, record: FileRecord, exc: Exception) -> JobResult:
        """Anything else (disk full, a git error, a bug): the job goes back to the queue.

        Never left ``running`` until a restart, never marked failed for good: the cause is
        shown in ``status`` and the job is tried again after a pause.
        """
        if isinstance(exc, OSError):
            cause = f"{exc.strerror or exc} ({os.strerror(exc.errno) if exc.errno else 'I/O error'})"
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                cause = "the disk is full"
            log.warning("%s: could not write (%s); retrying in %.0fs", record.path, exc, self.retry_io_seconds)
        elif isinstance(exc, WikiwrightError):
            cause = str(exc)
            if "No space left" in cause:
                cause = "the disk is full"
            log.warning("%s: %s; retrying in %.0fs", record.path, exc, self.retry_io_seconds)
        else:
            cause = f"unexpected error {type(exc).__name__}: {exc}"
            log.exception("%s: unexpected error; retrying in %.0fs", record.path, self.retry_io_seconds)
        try:
            self.ledger.release(record, f"waiting to retry: {cause}", self.retry_io_seconds)
        except Exception:
            # The ledger itself cannot write (disk full): release it later, never leave it running.
            with self._unreleased_lock:
                self._unreleased.append((record, f"waiting to retry: {cause}"))
        with contextlib.suppress(Exception):
            self.ledger.set_notice("io", f"ingests retrying: {cause}")
        return JobResult(record.path, "pending", cause)

    def _retry_releases(self) -> None:
        with self._unreleased_lock:
            while self._unreleased:
                record, message = self._unreleased[0]
                try:
                    self.ledger.release(record, message, self.retry_io_seconds)
                except Exception:
                    return
                self._unreleased.pop(0)

    def drain_once(self) -> JobResult | None:
        self._retry_releases()
        record = self.ledger.claim_next()
        if record is None:
            return None
        started = time.monotonic()
        try:
            result = self.process(record)
        except Exception as exc:
            result = self._failed(record, exc)
        log.info("%s: %s (%s) in %.2fs", record.path, result.state, result.detail, time.monotonic() - started)
        return result

    def drain_paths(self, rels: list[str], report: Callable[[JobResult], None]) -> None:
        """The one-shot ``ingest``: work the queue until each of ``rels`` has an outcome or waits.

        The same jobs and retry delays as the daemon's workers. A file due again within the
        pipeline's "still being written" delay is waited for (three tries at most); anything
        paused longer (a merge in progress, the model away) is reported pending and stays
        queued for the daemon or the next ``ingest``.
        """
        reported: set[str] = set()
        for rel in rels:
            record = self.ledger.get_file(rel)
            if record is not None and record.state not in ("pending", "running"):
                reported.add(rel)
                report(JobResult(rel, record.state, record.reason, record.commit_sha, record.page))
        while True:
            result = self.drain_once()
            if result is not None:
                if result.path in rels and result.state != "pending" and result.path not in reported:
                    reported.add(result.path)
                    report(result)
                continue
            soon = [r for r in (self.ledger.get_file(rel) for rel in rels)
                    if r is not None and r.state == "pending" and r.attempts < 3
                    and r.not_before - time.time() <= self.retry_not_ready_seconds + 1.0]
            if not soon:
                break
            time.sleep(max(0.0, min(r.not_before for r in soon) - time.time()) + 0.05)
        for rel in rels:
            record = self.ledger.get_file(rel)
            if rel not in reported and record is not None:
                report(JobResult(rel, record.state, record.reason or "queued", record.commit_sha, record.page))
