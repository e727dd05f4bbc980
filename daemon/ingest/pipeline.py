"""Process one queued source from start to commit, and record how it ended.

Used by the daemon's worker threads and by the one-shot ``wikiwright ingest``. The stages:
dedupe by content hash → read and decode → plan (offline engine or model) → write pages
under per-page locks (compare-and-swap) → rebuild index.md, append log.md → one commit with
trailers → ledger. A stop request before writing abandons the job (it stays pending);
once writing has begun the job finishes, so nothing is left half done.
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
from typing import Protocol

from ..core.config import Config
from ..core.errors import (
    BudgetExceeded,
    CommitPaused,
    LLMAuthError,
    LLMTransientError,
    SourceNotReady,
    SourceRejected,
    WikiwrightError,
)
from ..core.locks import PageLocks, vault_write_lock
from ..core.vault import Vault
from ..ingest.plan import IngestPlan, OfflinePlanner, prepare, source_page_name
from ..ingest.selffeed import SELF_FEEDING_RULE, is_own_page
from ..intake.extract import SourceText
from ..intake.ledger import FileRecord, Ledger
from ..vcs.repo import GitRepo
from ..wiki.catalog import Catalog
from ..wiki.index import append_log, rebuild_index
from ..wiki.reviewfile import HELD_BACK, add_proposals
from ..wiki.writer import PageWriter, WriteOutcome

log = logging.getLogger(__name__)

RETRY_NOT_READY = 2.0
RETRY_GIT = 5.0
RETRY_IO = 10.0
RETRY_BUDGET = 300.0


class Planner(Protocol):
    engine: str

    def plan(self, record: FileRecord, source: SourceText, data: bytes, today: date) -> IngestPlan: ...


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
        config: Config,
        vault: Vault,
        ledger: Ledger,
        catalog: Catalog,
        repo: GitRepo,
        planner: Planner | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], date] = date.today,
    ) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.repo = repo
        self.planner: Planner = planner or OfflinePlanner(config, vault, ledger, catalog)
        self.stop = stop or threading.Event()
        self.clock = clock
        self.page_locks = PageLocks()
        # Seconds a job waits before the next try (instance knobs so tests can shorten them).
        self.retry_git_seconds = RETRY_GIT
        self.retry_not_ready_seconds = RETRY_NOT_READY
        self.retry_io_seconds = RETRY_IO
        self._unreleased: list[tuple[FileRecord, str]] = []
        self._unreleased_lock = threading.Lock()
        self.writer = PageWriter(vault, ledger, repo)

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
        except SourceRejected as exc:
            reason = f"{exc.code}: {exc}"
            self.ledger.finish_quarantined(record, reason)
            return JobResult(record.path, "quarantined", reason)

    def _process(self, record: FileRecord) -> JobResult:
        if record.recovering:
            found = self.repo.find_source_commit(record.sha256)
            if found:
                # The process died after committing but before the ledger heard of it.
                page = source_page_name(self.ledger, self.vault, record.path)  # bound before that commit
                self.ledger.finish_ingested(record, page=page, title="", commit_sha=found, engine="recovered")
                return JobResult(record.path, "ingested", "recovered after a crash", found, page)
        original = self.ledger.source(record.sha256)
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
        plan = self.planner.plan(record, source, data, self.clock())
        if self.stop.is_set():
            self.ledger.release(record, "abandoned at shutdown; resumes on the next start", 0)
            return JobResult(record.path, "pending", "abandoned at shutdown")
        # Checked again before any page is touched: no writes into a merge or a detached HEAD.
        self._check_repository()
        with self.page_locks.hold(plan.pages):
            outcome = self.writer.write(plan.changes)
            # Nothing new to commit: an earlier attempt committed and then failed to record it.
            sha = self._commit(plan, outcome) or self.repo.find_source_commit(record.sha256)
        self.ledger.finish_ingested(
            record, page=plan.source_page, title=plan.title, commit_sha=sha or "", engine=plan.engine
        )
        self.ledger.clear_notice("git")
        self.ledger.clear_notice("io")
        return JobResult(record.path, "ingested", plan.title, sha or "", plan.source_page)

    def _check_repository(self) -> None:
        problem = self.repo.problem()
        if problem:
            raise CommitPaused(problem)

    def _commit(self, plan: IngestPlan, outcome: WriteOutcome) -> str | None:
        record = plan.record
        with vault_write_lock(self.vault.state):
            self.catalog.refresh([*plan.pages])
            rebuild_index(self.vault, self.catalog)
            marker = f"sha256 {record.sha256[:16]}"
            page_links = ", ".join(f"[[{page.rsplit('/', 1)[-1]}]]" for page in plan.pages)
            details = [f"source: `{record.path}` ({marker})", f"pages: {page_links}"]
            if outcome.merged:
                details.append(f"merged with a person's edits: {', '.join(outcome.merged)}")
            for conflict in outcome.conflicts:
                details.append(f"kept a person's version of {conflict.page}; proposal in `{conflict.proposal_file}`")
            self._append_log_once(plan.title, details, marker)
            trailers = {
                "Wikiwright-Operation": "ingest",
                "Wikiwright-Source": f"{record.path} sha256:{record.sha256}",
                "Wikiwright-Pages": ", ".join(f"wiki/{p}.md" for p in plan.pages),
                "Wikiwright-Engine": plan.engine,
            }
            if plan.claims_added or plan.claims_superseded:
                trailers["Wikiwright-Claims"] = f"added {plan.claims_added}, superseded {plan.claims_superseded}"
            if plan.tokens_in or plan.tokens_out:
                trailers["Wikiwright-Tokens"] = f"in {plan.tokens_in}, out {plan.tokens_out}"
                trailers["Wikiwright-Cost-USD"] = f"{plan.cost_usd:.6f}"
            if outcome.conflicts:
                trailers["Wikiwright-Conflicts"] = ", ".join(c.page for c in outcome.conflicts)
            paths = [*outcome.paths, "wiki/index.md", "wiki/log.md"]
            if plan.held_for_review:
                add_proposals(self.vault, HELD_BACK, plan.held_for_review)
                trailers["Wikiwright-Held"] = str(len(plan.held_for_review))
                paths.append("REVIEW.md")
            sha = self.repo.commit_paths(paths, f"ingest: {plan.title}", trailers)
            self.writer.remember(outcome)
            self._after_commit(plan, outcome, sha)
            return sha

    def _after_commit(self, plan: IngestPlan, outcome: WriteOutcome, sha: str | None) -> None:
        """Hook for follow-ups of a commit (review queue entries for conflicts)."""
        if outcome.conflicts:
            for conflict in outcome.conflicts:
                self.ledger.set_notice(f"conflict:{conflict.page}", conflict.reason)

    def _append_log_once(self, title: str, details: list[str], marker: str) -> None:
        path = self.vault.wiki / "log.md"
        try:
            with path.open("rb") as handle:  # only the tail: log.md grows for as long as the wiki lives
                handle.seek(max(0, path.stat().st_size - 4000))
                tail = handle.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            tail = ""
        if marker in tail:
            return  # a retry after a paused commit: the entry is already there
        append_log(self.vault, "ingest", title, details, self.clock())

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
