"""One wiki across machines: a sync round — fetch, integrate, push.

A round (the daemon's ``sync`` job every ``git.sync_interval_seconds``, or ``wikiwright sync``):

1. **fetch** the configured branch (no lock held: it only moves the remote-tracking ref).
2. **integrate**, under the vault's write lock (the one every writer takes, so no ingest
   writes or commits meanwhile): the other machines' ingests are recorded in this ledger
   first (so a source they ingested is a duplicate here, never a second ingest); a person's
   uncommitted edits to every path the remote changed are committed under their own name;
   then either a fast-forward (no commit of ours since the last sync) or a **merge commit**.
3. **push** the branch, fast-forward only; a rejected push (someone pushed first) is fetched,
   integrated and pushed again; an unreachable remote is retried with backoff, every commit
   waiting locally ("N commits not pushed" in status).

Why a merge commit and not a rebase of the daemon's unpushed commits: a merge never rewrites
a commit, so every sha the ledger recorded (ingest commits, page blobs, revert targets) stays
valid; it works the same when a person committed locally (their commits are never replayed or
re-signed); and a crash half-way leaves nothing to repair in history, only in the working
tree. History is not linear; `wikiwright history` lists operations, not the graph.

The merge is computed without touching the working tree (``git merge-tree --write-tree``),
conflicts are resolved by what each file is, and only then are the changed files written —
each only where it still holds HEAD's bytes, so nothing a person typed is overwritten:

- files with a generated block merge by block (``wiki/blockmerge.py``): the text before and
  after it keeps both machines' lines, never one side's whole file; index.md's block is then
  rebuilt from the merged pages, overview.md keeps the remote's block (this machine's next
  ingest rebuilds it); ``wiki/log.md``, ``REVIEW.md``,
  ``.gitignore`` and daily logs keep both sides' lines (they only grow);
- pages merge by front matter key, by claim and by text (``wiki/pagemerge.py``); lines both
  machines changed keep the remote's version on the page and this machine's in REVIEW.md;
- any other file: three-way text merge, the same rule; bytes that are not text: the remote's.

Then the result is screened (``door/synctree.py``): only what sync's allow-list lets in comes
from the remote — safe names under wiki/, raw/, logs/ and the root files, regular files within
size limits, pages the sanitizer passes; ``.gitignore`` keeps this machine's lines and the
daemon's section. A refused entry keeps this machine's version in the committed tree (a
fast-forward becomes a commit on HEAD and the remote's commit), so HEAD, the person's index and
the working tree never hold it; the commit, status and REVIEW.md say what was refused and why.

A journal (``.wikiwright/sync-journal.json``) names every file written and the commit they
belong to: a crash before HEAD moved puts back the files the round wrote, one after rolls
forward, so the working tree never shows the merge as a person's edit. A journal naming any
path off the allow-list is set aside (``.refused``) and reported, never replayed.

Duplicates across machines: the same bytes ingested on two machines before either saw the
other — the ingest published first (the remote's) stands; this machine's ingest commit
stays in history (nothing is rewritten) but the merge drops its source page (or takes the
remote's when both used the same name), records its file as a duplicate, and says so in a
``Wikiwright-Duplicate: <commit> <sha256>`` trailer, which the ledger rebuild honours.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.crashpoints import crash_point
from ..core.errors import CommitPaused, UnsafePathError, WikiwrightError
from ..core.fsutil import atomic_replace_if, atomic_write_bytes
from ..core.locks import vault_write_lock
from ..core.logsetup import escape_controls
from ..core.opkinds import OpKind
from ..core.vault import Vault
from ..core.vaultpaths import GENERATED_PAGES, is_log_file, safe_target, sync_problem
from ..intake.ledger import Ledger
from ..vcs.gitlock import SYNC_INDEX
from ..vcs.remote import MergeTree, PushResult, Remote, RemoteError, git_status, merge_file
from ..vcs.repo import (
    GitRepo,
    format_message,
    git,  # GitPython, imported only when one of its errors is raised or matched
    git_blob_id,
    merge_texts,
)
from ..wiki.blockmerge import Markers, merge_with_block
from ..wiki.catalog import Catalog
from ..wiki.index import INDEX_END, INDEX_START, block_of, render_index_block, splice_index
from ..wiki.pagemerge import Merge3, PageMerge, merge_page, merge_plain
from .sourceclaims import wake_claimed
from .synctree import (
    REFUSED_HEADING,
    REFUSED_KEY,
    Entry,
    Refusal,
    Screen,
    Screened,
    blob_sizes,
    build_tree,
    record_refusals,
    tree_entries,
)
from .trailers import PENDING_KEY as TRAILERS_PENDING_KEY
from .trailers import Refusal as TrailerRefusal
from .trailers import (
    VerifiedIngest,
    keep_refusals,
    pending_refusals,
    read_duplicates,
    read_ingests,
)

log = logging.getLogger(__name__)

STATE_KEY = "sync.state"
IMPORTED_KEY = "sync.imported"
# Fixes that act on what only this machine vouches for: a held-back model operation, a page text
# it proposed, a costly source to send to the model. Another machine's tick never approves them.
GUARDED_ACTIONS = ("apply-op", "write-page", "ingest-source")
JOURNAL_FILE = "sync-journal.json"
MAX_BACKOFF = 300.0
PUSH_ATTEMPTS = 3
# Files that only grow: both sides' lines are kept.
_UNION = ("REVIEW.md", ".gitignore")
# What a person edits by hand, committed (as theirs) at the start of every round: the pages,
# REVIEW.md and SCHEMA.md. Daily logs are the hooks' and are committed by the daemon's own
# log commits.
_PERSON_EDITED = ("wiki", "REVIEW.md", "SCHEMA.md")

# overview.md's generated block (ingest/concepts.py keeps it): the remote's version stands in a
# merge until this machine's next ingest rebuilds it; the text around it keeps both sides.
_OVERVIEW_START = "<!-- wikiwright:overview:start"
_OVERVIEW_END = "<!-- wikiwright:overview:end -->"
_ZERO = "0" * 40


@dataclass
class SyncReport:
    state: str  # off | up-to-date | integrated | pushed | offline | paused | waiting
    detail: str = ""
    merged: str = ""
    conflicts: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    imported: int = 0
    refused: list[str] = field(default_factory=list)  # "path (why)", escaped


# An ingest another machine (or this vault's history) claims, as its commit bears it out.
_Source = VerifiedIngest


class Syncer:
    """Sync rounds for one vault, with the services of the process that runs them."""

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog, repo: GitRepo) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.repo = repo
        self.remote = Remote(repo, config.git.remote, config.git.branch)
        self._round_times: dict[str, float] = {}
        self._refused: list[TrailerRefusal] = []  # trailers refused this round, kept by _import_sources

    @property
    def enabled(self) -> bool:
        return bool(self.config.git.remote.strip())

    # -- state shown by status ------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.ledger.get_kv(STATE_KEY, "{}"))
        except ValueError:
            data = {}
        return data if isinstance(data, dict) else {}

    def _save(self, **values: Any) -> None:
        """Times are gathered during a round and written once with its outcome (one fsync)."""
        data = self.state()
        data.update(self._round_times, **values)
        self._round_times = {}
        self.ledger.set_kv(STATE_KEY, json.dumps(data))

    def due(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        data = self.state()
        return now >= float(data.get("next_try", 0)) and \
            now - float(data.get("last_attempt", 0)) >= self.config.git.sync_interval_seconds * 0.9

    def _wait(self, state: str, reason: str, backoff: bool) -> SyncReport:
        data = self.state()
        failures = int(data.get("failures", 0)) + 1 if backoff else 0
        delay = min(MAX_BACKOFF, self.config.git.sync_interval_seconds * (2 ** min(failures, 8))) if backoff else 0
        self._save(waiting=reason, failures=failures, next_try=time.time() + delay, last_error=reason)
        self.ledger.set_notice("sync", f"sync waits: {reason}")
        log.warning("sync waits: %s", reason)
        return SyncReport(state, reason)

    # -- the round --------------------------------------------------------------------------

    def round(self) -> SyncReport:
        """Fetch, integrate, push. Never raises for a remote or repository that must wait."""
        try:
            return self._round()
        except CommitPaused as exc:
            return self._wait("waiting", exc.reason, backoff=False)
        except (WikiwrightError, git.GitCommandError, OSError) as exc:
            log.exception("sync round failed")
            return self._wait("waiting", f"sync failed: {str(exc).strip().splitlines()[-1][:300]}", backoff=True)

    def _round(self) -> SyncReport:
        if not self.enabled:
            return SyncReport("off", "git.remote is not set")
        self._round_times["last_attempt"] = time.time()
        if not self.remote.configured():
            return self._wait("waiting", f"the vault's git repository has no remote named {self.remote.name!r} "
                              f"(git remote add {self.remote.name} URL)", backoff=True)
        problem = self._repository_problem()
        if problem:
            return self._wait("paused", problem, backoff=False)
        try:
            theirs = self.remote.fetch()
        except RemoteError as exc:
            return self._wait("offline", f"the remote cannot be reached: {exc}", backoff=True)
        self._round_times["last_fetch"] = time.time()
        report = self.integrate(theirs)
        if report.state == "paused":
            return report
        self._propose_refused()
        if self.config.git.push:
            for _attempt in range(PUSH_ATTEMPTS):
                result, detail = self.remote.push()
                if result in (PushResult.PUSHED, PushResult.UP_TO_DATE):
                    if result is PushResult.PUSHED:
                        self._round_times["last_push"] = time.time()
                        report.state = "pushed"
                    break
                if result is PushResult.UNREACHABLE:
                    return self._wait("offline", f"push failed, commits wait here: {detail}", backoff=True)
                # Rejected: someone pushed first. Integrate their commits and push again.
                try:
                    theirs = self.remote.fetch()
                except RemoteError as exc:
                    return self._wait("offline", f"the remote cannot be reached: {exc}", backoff=True)
                merged = self.integrate(theirs)
                if merged.state == "paused":
                    return merged
                report.conflicts += merged.conflicts
                report.duplicates += merged.duplicates
                report.refused += merged.refused
                report.merged = merged.merged or report.merged
            else:
                return self._wait("waiting", "the push was rejected again and again (busy remote); next round "
                                  "retries", backoff=True)
        was_waiting = bool(self.state().get("waiting"))
        self._save(last_success=time.time(), waiting="", failures=0, next_try=0, last_error="")
        if was_waiting:
            self.ledger.clear_notice("sync")
        return report

    def _propose_refused(self) -> None:
        """Trailers refused while integrating, as REVIEW.md items (one door operation; the list
        is cleared in its journaled ledger step, so a crash neither loses nor repeats one)."""
        refused = pending_refusals(self.ledger)
        if not refused:
            return
        from .door import Door

        door = Door(self.config, self.vault, self.ledger, self.catalog, self.repo)
        with door.operation(OpKind.SYNC, "refused from the remote") as op:
            added = op.propose("sync-refused", [
                {"description": refusal.line() + "; this machine ingests its own copy of any bytes it holds — "
                 "tick to acknowledge", "facts": {"commit": refusal.commit, "what": refusal.what}, "fix": {},
                 "heading": REFUSED_HEADING}
                for refusal in refused])
            if added:
                op.details += [refusal.line() for refusal in refused]
                op.ledger_after_commit("set_kv", TRAILERS_PENDING_KEY, "[]")
        if not added:  # all in REVIEW.md already (answered or not): nothing to commit
            self.ledger.set_kv(TRAILERS_PENDING_KEY, "[]")

    def _repository_problem(self) -> str | None:
        problem = self.repo.problem()
        if problem:
            return problem + " — sync pauses until it is done"
        current = self.remote.current_branch()
        if current != self.remote.branch:
            return (f"the vault has {current or 'a detached HEAD'} checked out, not {self.remote.branch} "
                    "(git.branch); sync pauses")
        return None

    # -- integrating ----------------------------------------------------------------------------

    def integrate(self, theirs: str | None) -> SyncReport:
        """Bring the fetched commits in: fast-forward, or a merge commit.

        Runs as a door operation of kind ``sync``: the vault's write lock, another operation's
        crash recovered first, no work while a person's merge or rebase is in progress. The
        door's own commit is not used (a merge commit has two parents); the operation touches
        no file through the door, so it adds no commit of its own.
        """
        from .door import Door

        door = Door(self.config, self.vault, self.ledger, self.catalog, self.repo)
        with vault_write_lock(self.vault.state), door.operation(OpKind.SYNC, "sync"):
            problem = self._repository_problem()
            if problem:
                return self._wait("paused", problem, backoff=False)
            self.recover()
            imported = self._import_history_once()
            # The person's own edits travel with this round's push, even when the remote has
            # nothing new.
            self._settle_person_edits(())
            head = self.repo.head()
            if theirs is None or head == theirs or (head and self.remote.is_ancestor(theirs, head)):
                return SyncReport("up-to-date", imported=imported)
            imported += self._import_sources(self._ingests(theirs, head), _undone_ingests(self.repo, theirs, head))
            base = self._merge_base(head, theirs) if head else None
            # Only what sync may write can hold a person's edit it would overwrite; the other
            # names are never handed to git as pathspecs either.
            self._settle_person_edits([p for p in self._changed_paths(base, theirs) if not sync_problem(p)])
            head = self.repo.head()
            if head is None or self.remote.is_ancestor(head, theirs):
                return self._fast_forward(head, theirs, imported)
            return self._merge(head, theirs, imported)

    def _merge_base(self, head: str, theirs: str) -> str | None:
        try:
            return self.repo.run("merge-base", head, theirs) or None
        except git.GitCommandError:
            return None  # unrelated histories (a vault initialised on its own, then joined)

    def _changed_paths(self, base: str | None, theirs: str) -> list[str]:
        if base:
            out = self.repo.run("diff", "--name-only", "-z", "--no-renames", base, theirs, strip=False)
        else:
            out = self.repo.run("ls-tree", "-r", "-z", "--name-only", theirs, strip=False)
        return [p for p in out.split("\0") if p]

    def _settle_person_edits(self, remote_changed: Sequence[str]) -> None:
        """A person's uncommitted edits are committed first, as theirs: every page, REVIEW.md
        and SCHEMA.md they changed (so their edits reach the other machines with this round's
        push), and whatever else the merge may write.

        raw/ is the inbox: a file being dropped there is the daemon's to ingest, not an edit.
        Only names sync would take from a remote are committed (the same allow-list both ways).
        """
        paths = sorted({*(p for p in remote_changed if not p.startswith("raw/")), *_PERSON_EDITED})
        dirty: list[str] = []
        for chunk in _chunks(paths, 500):
            out = self.repo.run("--literal-pathspecs", "status", "--porcelain", "-z", "--no-renames",
                                "--untracked-files=all", "--", *chunk, strip=False)
            for entry in out.split("\0"):
                if len(entry) > 3 and entry[2] == " " and not sync_problem(entry[3:]):
                    dirty.append(entry[3:])
        if dirty:
            self.repo.commit_person_edits(sorted(set(dirty)))

    # -- the other machines' ingests ---------------------------------------------------------

    def _ingests(self, tip: str, *exclude: str | None, report: bool = True) -> list[_Source]:
        """The ingests in ``tip`` and not in ``exclude`` whose trailers their commits bear out
        (door/trailers.py); the refused ones are kept for status and REVIEW.md (``report``)."""
        verified, refused = read_ingests(self.repo, [tip, *(arg for ex in exclude if ex for arg in ("--not", ex))])
        if report:
            self._refused += refused
        return verified

    def _import_sources(self, sources: list[_Source], undone: set[str] | None = None) -> int:
        """Record ingests from the shared history in this ledger (oldest first: the first wins)."""
        count = 0
        for source in reversed(sources):
            if undone and source.commit in undone:
                continue
            if self.ledger.record_shared_source(source.sha256, source.path, source.page, source.title,
                                                source.commit, "shared history"):
                count += 1
        refused, self._refused = [*self._refused, *getattr(undone, "refused", [])], []
        keep_refusals(self.ledger, refused, holds=_held_sha256s(self.ledger))
        if count:
            wake_claimed(self.ledger)  # files that waited for these ingests (door/sourceclaims.py)
        return count

    def _import_history_once(self) -> int:
        """The first round on a vault (a fresh clone): the ledger learns every ingest in history."""
        if self.ledger.get_kv(IMPORTED_KEY):
            return 0
        count = rebuild_ledger_sources(self.repo, self.ledger)
        self.ledger.set_kv(IMPORTED_KEY, self.repo.head() or "")
        return count

    # -- fast-forward and merge --------------------------------------------------------------

    def _fast_forward(self, head: str | None, theirs: str, imported: int) -> SyncReport:
        """The remote's commit as it is when every entry it changes passes the screen; else a
        commit of its tree without the refused entries (on HEAD and the remote's commit)."""
        screened = self._screen(head, tree_entries(self.repo, theirs))
        if not screened.changed:
            self._move_to(head, theirs, theirs, changed_pages_need_index=False)
            log.info("sync: fast-forwarded to %s", theirs[:10])
            return SyncReport("integrated", f"fast-forward to {theirs[:10]}", theirs, imported=imported)
        tree = build_tree(self.repo, screened.entries, self.vault.state / SYNC_INDEX)
        count = len(self.repo.run("rev-list", theirs, *(("--not", head) if head else ())).split())
        subject = f"sync: take {count} commit(s) from {self.remote.name}/{self.remote.branch}"
        trailers = {"Wikiwright-Operation": OpKind.SYNC.value, "Wikiwright-Merged": theirs}
        message = format_message(subject, {**trailers, **_refused_trailer(screened.refused)},
                                 _refused_body(screened.refused))
        merged = self._move_to(head, tree, theirs, changed_pages_need_index=True, message=message,
                               refusals=screened.refused)
        self._record_refusals(screened.refused, theirs)
        log.info("%s; %d entries refused", subject, len(screened.refused))
        return SyncReport("integrated", subject, merged, imported=imported,
                          refused=[_refusal_line(r) for r in screened.refused])

    def _merge(self, head: str, theirs: str, imported: int) -> SyncReport:
        merged = self.remote.merge_tree(head, theirs)
        resolutions: dict[str, bytes | None] = {}
        reviews: list[tuple[str, PageMerge]] = []
        unread = self._unmergeable(merged)
        for path in sorted(set(merged.conflicts) - set(unread)):
            data, review = self._resolve(path, stages_blobs(self.repo, merged, path))
            resolutions[path] = data
            if review is not None:
                reviews.append((path, review))
        duplicates, undone = self._duplicates(head, theirs, merged, resolutions)
        candidate = self._tree_with(merged.tree, resolutions)
        candidate.update(unread)
        screened = self._screen(head, candidate)
        refused = {r.path for r in screened.refused}
        reviews = [(path, review) for path, review in reviews if path not in refused]  # the local page stays
        tree = merged.tree if not resolutions and not screened.changed else \
            build_tree(self.repo, screened.entries, self.vault.state / SYNC_INDEX)
        report = SyncReport("integrated", "", imported=imported, conflicts=[p for p, _ in reviews],
                            duplicates=duplicates, refused=[_refusal_line(r) for r in screened.refused])
        trailers = {"Wikiwright-Operation": OpKind.SYNC.value, "Wikiwright-Merged": theirs}
        if reviews:
            trailers["Wikiwright-Conflicts"] = ", ".join(p for p, _ in reviews)
        if undone:
            trailers["Wikiwright-Duplicate"] = ", ".join(undone.values())
        trailers.update(_refused_trailer(screened.refused))
        count = len(self.repo.run("rev-list", theirs, "--not", head).split())
        subject = f"sync: merge {count} commit(s) from {self.remote.name}/{self.remote.branch}"
        body = "\n".join([*(f"- {path}: {note}" for path, review in reviews for note in review.notes),
                          *([_refused_body(screened.refused)] if screened.refused else [])])
        report.merged = self._move_to(head, tree, theirs, changed_pages_need_index=True,
                                      message=format_message(subject, trailers, body), reviews=reviews,
                                      refusals=screened.refused)
        self._record_refusals(screened.refused, theirs)
        report.detail = subject
        log.info("%s%s%s", subject, f"; conflicts kept for review: {', '.join(report.conflicts)}" if reviews else "",
                 f"; {len(screened.refused)} entries refused" if screened.refused else "")
        return report

    def _unmergeable(self, merged: MergeTree) -> dict[str, Entry]:
        """Conflicted paths whose remote side the screen refuses anyway (a name off the allow-list,
        bytes over the limits): never read or merged; the remote's entry goes to the screen."""
        remote = {path: stages[3] for path, stages in merged.conflicts.items() if 3 in stages}
        sizes = blob_sizes(self.repo, [stage.blob for stage in remote.values()])
        limit = max(self.config.lint.max_page_bytes, self.config.git.commit_raw_max_bytes,
                    self.config.git.sync_max_file_bytes)
        return {path: (stage.mode, stage.blob) for path, stage in remote.items()
                if sync_problem(path) or stage.mode not in ("100644", "100755") or sizes.get(stage.blob, 0) > limit
                or (path.startswith("wiki/") and sizes.get(stage.blob, 0) > self.config.lint.max_page_bytes
                    and path not in GENERATED_PAGES and not is_log_file(path))}

    def _screen(self, head: str | None, candidate: dict[str, Entry]) -> Screened:
        """The candidate tree's entries with what this vault refuses put back as HEAD has them."""
        screen = Screen(self.config, self.repo, self.vault.root, _read_blobs, guarded=self._guarded_items())
        return screen.run(tree_entries(self.repo, head), candidate)

    def _guarded_items(self) -> list[str]:
        """This machine's open REVIEW.md items a tick from another machine must not approve."""
        from ..wiki.reviewfile import ReviewStore

        store = ReviewStore(self.vault.db_path)
        try:
            return [item.id for item in store.items("open") if item.fix.get("action") in GUARDED_ACTIONS]
        finally:
            store.close()

    def _resolve(self, path: str, texts: dict[int, bytes | None]) -> tuple[bytes | None, PageMerge | None]:
        """One conflicted path: the bytes it ends with (None: deleted) and what a person should see."""
        base, ours, theirs = texts.get(1), texts.get(2), texts.get(3)
        if ours is None or theirs is None:
            # Changed on one side, deleted on the other: the changed file stays (no line lost).
            return (theirs if theirs is not None else ours), None
        try:
            b, o, t = (base or b"").decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8")
        except UnicodeDecodeError:
            note = PageMerge("", False, notes=["not text: the remote's bytes kept; this machine's are in its "
                                               "own commit in history"])
            return theirs, note
        if path == "wiki/index.md":
            return _merge_index(self.repo, b, o, t).encode("utf-8"), None
        if path == "wiki/overview.md":
            return _merge_overview(self.repo, b, o, t).encode("utf-8"), None
        if is_log_file(path) or (path.startswith("logs/") and path.endswith(".md")):
            return _merge_appended(self.repo, b, o, t).encode("utf-8"), None
        if path in _UNION:
            text, _clean = merge_file(self.repo, b, o, t, "union")
            return text.encode("utf-8"), None
        if path.startswith("wiki/") and path.endswith(".md"):
            result = merge_page(b, o, t, self._merge3)
        else:
            result = merge_plain(b, o, t, self._merge3)
        return result.text.encode("utf-8"), (None if result.clean else result)

    def _merge3(self, base: str, ours: str, theirs: str, favour: str) -> tuple[str, bool]:
        return merge_file(self.repo, base, ours, theirs, favour)

    def _duplicates(self, head: str, theirs: str, merged: MergeTree,
                    resolutions: dict[str, bytes | None]) -> tuple[list[str], dict[str, str]]:
        """This machine's unpublished ingests of bytes the remote already ingested: theirs stands."""
        remote = {s.sha256: s for s in self._ingests(theirs, head, report=False)}
        if not remote:
            return [], {}
        found: list[str] = []
        undone: dict[str, str] = {}
        for mine in self._ingests(head, theirs, report=False):
            first = remote.get(mine.sha256)
            if first is None:
                continue
            if mine.page and mine.page != first.page:
                resolutions[f"wiki/{mine.page}.md"] = None  # one source page: the published one
            elif mine.page:
                resolutions[f"wiki/{mine.page}.md"] = _blob_bytes(self.repo, f"{theirs}:wiki/{mine.page}.md")
            reason = f"same content as {first.path} ingested on another machine ({first.commit[:10]})"
            self.ledger.record_shared_source(first.sha256, first.path, first.page, first.title, first.commit,
                                             "shared history", replace=True)
            self.ledger.mark_duplicate(mine.path, reason, first.commit, first.page)
            found.append(mine.path)
            undone[mine.commit] = f"{mine.commit} {mine.sha256}"
        return found, undone

    def _tree_with(self, tree: str, resolutions: dict[str, bytes | None]) -> dict[str, Entry]:
        """The merged tree's entries with the resolved conflicts (read as objects: no index)."""
        entries = tree_entries(self.repo, tree)
        for path, data in resolutions.items():
            if data is None:
                entries.pop(path, None)
            else:
                entries[path] = ("100644", _hash_blob(self.repo, data))
        return entries

    @contextmanager
    def _scratch_index(self) -> Iterator[dict[str, str]]:
        path = self.vault.state / SYNC_INDEX
        path.unlink(missing_ok=True)
        try:
            yield {"GIT_INDEX_FILE": str(path)}
        finally:
            path.unlink(missing_ok=True)

    def _move_to(self, head: str | None, target: str, theirs: str, *, changed_pages_need_index: bool,
                 message: str = "", reviews: list[tuple[str, PageMerge]] | None = None,
                 refusals: list[Refusal] | None = None) -> str:
        """Write the files that change from ``head`` to ``target`` (a commit, or a tree to commit
        on ``head`` and ``theirs``) and move HEAD there, journalled; returns the new HEAD."""
        changes = _tree_changes(self.repo, head, target)
        journal: dict[str, Any] = {"old_head": head, "commit": target if not message else "", "paths": {}}
        skipped = self._write_files(changes, journal)
        pages = [p.removeprefix("wiki/").removesuffix(".md") for p in changes
                 if p.startswith("wiki/") and p.endswith(".md")]
        if pages:
            self.catalog.refresh(pages)
        commit = target
        if message:
            extra = self._after_merge_files(changed_pages_need_index and bool(pages), reviews or [], journal,
                                            head, refusals or [], theirs)
            tree = target
            if extra:
                with self._scratch_index() as env:
                    self.repo.run("read-tree", target, env=env)
                    _update_index(self.repo, [f"100644 {_hash_blob(self.repo, data)}\t{path}"
                                              for path, data in extra.items()], env)
                    tree = self.repo.run("write-tree", env=env)
            commit = self._commit_tree(tree, [p for p in (head, theirs) if p], message)
            journal["commit"] = commit
            self._write_journal(journal)
        crash_point("before-commit")
        try:
            if head:
                self.repo.run("update-ref", "-m", "wikiwright sync", "HEAD", commit, head)
            else:
                self.repo.run("update-ref", "-m", "wikiwright sync", "HEAD", commit)
        except git.GitCommandError as exc:
            # The person committed while we wrote: put our files back, try next round.
            self._roll(journal, forward=False)
            raise CommitPaused("HEAD moved while syncing (a commit landed); the next round tries again") from exc
        crash_point("after-commit")
        self._sync_person_index(commit, journal, skipped)
        self._journal_path().unlink(missing_ok=True)
        self._remember_pages(commit, pages)
        index = _disk_blob(self.vault.wiki / "index.md")
        if index and index != "symlink":
            # The block the door splices next time is the one this merge committed.
            self.ledger.set_page_blobs({"index": index})
        return commit

    def _after_merge_files(self, rebuild: bool, reviews: list[tuple[str, PageMerge]],
                           journal: dict[str, Any], head: str | None, refusals: list[Refusal],
                           theirs: str) -> dict[str, bytes]:
        """index.md rebuilt from the merged pages; REVIEW.md items for what did not merge and
        for what was refused."""
        extra: dict[str, bytes] = {}
        targets = (["wiki/index.md"] if rebuild else []) + (["REVIEW.md"] if reviews or refusals else [])
        for path in targets:
            entry = journal["paths"].setdefault(path, [_blob_at(self.repo, head, path), "?"])
            entry[1] = "?"
        self._write_journal(journal)
        if rebuild:
            self._rebuild_index()
        if reviews or refusals:
            self._propose(reviews, refusals, theirs)
        for path in targets:
            try:
                data = (self.vault.root / path).read_bytes()
            except FileNotFoundError:
                continue
            extra[path] = data
            journal["paths"][path][1] = git_blob_id(data)
        self._write_journal(journal)
        return extra

    def _rebuild_index(self) -> None:
        """index.md's generated block from the merged pages; the person's text around it kept."""
        path = self.vault.wiki / "index.md"
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        last = self.ledger.page_blob("index")
        previous = block_of(self.repo.blob_text(last) or "") if last else ""
        updated = splice_index(current, render_index_block(self.catalog.entries()), previous or block_of(current))
        if updated != current and not atomic_replace_if(path, updated.encode("utf-8"), current.encode("utf-8")):
            # A person saved index.md meanwhile: their text stays; the next door operation
            # rebuilds the block around it.
            log.info("sync: index.md changed while its block was rebuilt; left as the person saved it")

    def _propose(self, reviews: list[tuple[str, PageMerge]], refusals: list[Refusal], theirs: str) -> None:
        from ..wiki.reviewfile import add_proposals, edit_review, proposal

        items = []
        details: dict[str, list[str]] = {}
        refused_items, refused_details = self._refusal_items(refusals, theirs)
        for path, review in reviews:
            text = (f"`{path}`: this machine and the remote changed the same lines; the remote's version is on "
                    "the page, this machine's is quoted below — copy what should stay, then tick")
            item = proposal("sync-conflict", text, pages=[path.removeprefix("wiki/").removesuffix(".md")],
                            facts={"path": path, "hunks": review.hunks, "notes": review.notes})
            items.append(item)
            lines = []
            for ours, theirs in review.hunks:
                lines.append("    - this machine's lines:")
                lines += [f"      > {line}" for line in ours.splitlines()] or ["      > (none)"]
                lines.append("    - the remote's lines (on the page):")
                lines += [f"      > {line}" for line in theirs.splitlines()] or ["      > (none)"]
            lines += [f"    - {note}" for note in review.notes]
            details[item.id] = lines
        added = add_proposals(self.vault, "sync-conflict", items) if items else []
        added += add_proposals(self.vault, "sync-refused", refused_items) if refused_items else []
        details.update(refused_details)
        if not added:
            return

        def attach(text: str) -> str:
            out = []
            for line in text.splitlines(keepends=True):
                out.append(line)
                for item_id in added:
                    if line.rstrip().endswith(f"^{item_id}"):
                        out += [f"{extra}\n" for extra in details.get(item_id, [])]
            return "".join(out)

        edit_review(self.vault, attach)

    def _refusal_items(self, refusals: list[Refusal], theirs: str) -> tuple[list[Any], dict[str, list[str]]]:
        """One REVIEW.md item per refused entry (one for all when there are many); a held page's
        remote version quoted as text in a code block (never rendered, never read as an answer)."""
        from ..wiki.reviewfile import proposal
        from ..wiki.sanitize import code_span

        if not refusals:
            return [], {}
        def take(path: str) -> str:
            if sync_problem(path):
                return "never taken by sync; tick to dismiss"
            return f"to take it anyway: `git checkout {theirs[:12]} -- <path>`, read it, commit it; tick when done"

        if len(refusals) > 20:
            text = (f"refused from the remote: {len(refusals)} entries of {theirs[:12]} ({refusals[0].why}) — "
                    f"listed below; {take(refusals[0].path)}")
            item = proposal("sync-refused", text, facts={"commit": theirs, "count": len(refusals)},
                            heading=REFUSED_HEADING)
            lines = [f"    - {code_span(r.path)} ({escape_controls(r.why)})" for r in refusals[:50]]
            if len(refusals) > 50:
                lines.append(f"    - … and {len(refusals) - 50} more (`git show --stat {theirs[:12]}`)")
            return [item], {item.id: lines}
        items, details = [], {}
        quoted = _read_blobs(self.repo, [r.blob for r in refusals if r.quote and r.blob])
        for refusal in refusals:
            text = f"refused from the remote: {code_span(refusal.path)} ({refusal.why}) — {take(refusal.path)}"
            item = proposal("sync-refused", text, facts={"path": refusal.path, "blob": refusal.blob,
                                                         "why": refusal.why}, heading=REFUSED_HEADING)
            items.append(item)
            if refusal.quote and refusal.blob in quoted:
                details[item.id] = _quoted(quoted[refusal.blob].decode("utf-8", "replace"))
        return items, details

    def _record_refusals(self, refusals: list[Refusal], theirs: str) -> None:
        """What was refused, for status (the newest kept); a person sees it until the next refusal."""
        if not refusals:
            return
        record_refusals(self.ledger, ((r.path, r.why, theirs) for r in refusals))
        log.warning("sync refused %d entries from the remote (%s); see status and REVIEW.md", len(refusals),
                    theirs[:10])

    def _commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        message_file = self.vault.state / f"sync-msg-{os.getpid()}"
        message_file.write_text(message, encoding="utf-8")
        try:
            args = ["commit-tree", tree]
            for parent in parents:
                args += ["-p", parent]
            return self.repo.run(*args, "-F", str(message_file))
        finally:
            message_file.unlink(missing_ok=True)

    # -- the working tree, journalled -----------------------------------------------------------

    def _journal_path(self) -> Path:
        return self.vault.state / JOURNAL_FILE

    def _write_journal(self, journal: dict[str, Any]) -> None:
        atomic_write_bytes(self._journal_path(), json.dumps(journal).encode("utf-8"), crash_hooks=False)

    def _write_files(self, changes: dict[str, tuple[str, str, str]], journal: dict[str, Any]) -> list[str]:
        """Write each changed file where it still holds HEAD's bytes; the others are a person's."""
        plan: list[tuple[str, str, str]] = []
        skipped: list[str] = []
        for path, (old, new, mode) in changes.items():
            target = self._target(path)
            if target is None:
                skipped.append(path)
                continue
            disk = _disk_blob(target)
            if disk == (new or ""):
                continue
            if disk != (old or "") or mode not in ("100644", "100755", "000000"):
                skipped.append(path)
                log.warning("sync: %s has changes of a person's that are not committed; left as it is", path)
                continue
            plan.append((path, new, mode))
            journal["paths"][path] = [old or "", new or ""]
        self._write_journal(journal)
        olds = {path: old for path, (old, _new, _mode) in changes.items()}
        contents = _read_blobs(self.repo, [blob for path, new, _ in plan for blob in (new, olds[path]) if blob])
        # Removals first (a folder the remote turned into a file is emptied before the file
        # lands); never an executable bit; one file that cannot be written never stops the round.
        # Each write is a compare-and-swap against HEAD's bytes: a save a person makes while the
        # round runs is kept, never overwritten (the file is then theirs, as above).
        for path, new, _mode in sorted(plan, key=lambda item: bool(item[1])):
            target = self.vault.root / path
            expected = contents[olds[path]] if olds[path] else None
            try:
                if new:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    written = atomic_replace_if(target, contents[new], expected)
                else:
                    written = atomic_replace_if(target, None, expected)
                    if written:
                        self._prune_empty(target.parent)
                if not written and not (new and expected is not None
                                        and self._merge_late_save(target, expected, contents[new])):
                    skipped.append(path)
                    log.warning("sync: %s was saved by a person while the round ran; left as it is", path)
            except OSError as exc:
                skipped.append(path)
                log.warning("sync: %s could not be written (%s); left as it is", escape_controls(path)[:300], exc)
        crash_point("sync-files-written")
        return skipped

    def _merge_late_save(self, target: Path, base: bytes, remote: bytes) -> bool:
        """A person saved ``target`` while the round wrote it: their text and the remote's, merged
        three-way where that is clean (then the file holds both, and it is committed under their
        name as their edit on the merged HEAD); else their file is left exactly as they saved it."""
        for _attempt in range(3):
            try:
                disk = target.read_bytes()
            except OSError:
                return False
            try:
                merged, clean = merge_texts(self.repo, base.decode("utf-8"), disk.decode("utf-8"),
                                            remote.decode("utf-8"))
            except UnicodeDecodeError:
                return False
            if not clean:
                return False
            if atomic_replace_if(target, merged.encode("utf-8"), disk):
                return True
        return False

    def _prune_empty(self, folder: Path) -> None:
        """Folders a removal left empty, up to (not including) wiki/, raw/ and logs/."""
        root = self.vault.root
        while folder != root and folder.parent != root and not folder.is_symlink():
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent

    def _target(self, path: str) -> Path | None:
        """Where sync may write ``path``: on the allow-list, no symbolic link on the way (else None)."""
        problem = sync_problem(path)
        try:
            if problem:
                raise UnsafePathError(problem)
            return safe_target(self.vault.root, path)
        except UnsafePathError as exc:
            log.error("sync: %s is not written: %s", escape_controls(path)[:300], exc)
            return None

    def _roll(self, journal: dict[str, Any], *, forward: bool) -> None:
        """Finish (forward) or undo (back) a journalled round's file writes: only our own bytes.

        Each file is replaced only while it still holds the bytes the journal says we left there
        (compare-and-swap on exactly those bytes, read from disk and checked against the blob id:
        a blob a killed round had not yet stored is no obstacle). A blob that cannot be read
        leaves its file as it is, logged: recovery never stops the daemon from starting."""
        wanted: dict[str, tuple[str, bytes | None]] = {}
        for path, (old, new) in journal.get("paths", {}).items():
            have, want = (old, new) if forward else (new, old)
            if have == "?" or want == "?" or self._target(path) is None:
                continue
            target = self.vault.root / path
            if _disk_blob(target) != have or have == want:
                continue
            try:
                disk: bytes | None = target.read_bytes() if have else None
            except OSError:
                continue
            if disk is not None and git_blob_id(disk) != have:
                continue  # changed in the instant between the two reads: a person's, left
            wanted[path] = (want, disk)
        contents = _read_blobs(self.repo, [want for want, _disk in wanted.values() if want], missing_ok=True)
        for path, (blob, expected) in wanted.items():
            target = self._target(path)
            if target is None:
                continue
            if blob and blob not in contents:
                log.warning("sync recovery: %s's version %s is not in the repository; left as it is",
                            escape_controls(path)[:300], blob[:10])
                continue
            if blob:
                target.parent.mkdir(parents=True, exist_ok=True)
            if not atomic_replace_if(target, contents[blob] if blob else None, expected):
                log.warning("sync recovery: %s was saved by a person meanwhile; left as it is",
                            escape_controls(path)[:300])

    def recover(self) -> str | None:
        """After a crash mid-round: roll the working tree forward or back to match HEAD."""
        try:
            journal = json.loads(self._journal_path().read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:
            self._journal_path().unlink(missing_ok=True)
            return None
        problem = _journal_problem(journal)
        if problem:
            # Never replayed: a journal that names anything sync may not write is not ours.
            aside = self._journal_path().with_suffix(".json.refused")
            self._journal_path().replace(aside)
            log.error("sync: the sync journal was refused and not replayed (%s); set aside as %s", problem, aside)
            self.ledger.set_notice("sync-journal", f"the sync journal was refused, not replayed: {problem} "
                                   f"(set aside as {aside.name})")
            self._record_refusals([Refusal(f".wikiwright/{JOURNAL_FILE}", f"a journal that {problem}")], "")
            return "refused"
        head = self.repo.head()
        forward = bool(journal.get("commit")) and head == journal.get("commit")
        self._roll(journal, forward=forward)
        if forward:
            self._sync_person_index(head or "", journal, [])
        self._journal_path().unlink(missing_ok=True)
        what = "finished" if forward else "undone"
        log.info("sync: an interrupted round was %s", what)
        return what

    def _sync_person_index(self, commit: str, journal: dict[str, Any], skipped: list[str]) -> None:
        """The person's git index follows HEAD for the paths the round changed (nothing else)."""
        paths = [*journal.get("paths", {}), *skipped]
        if not paths or not commit:
            return
        lines = []
        for chunk in _chunks(sorted(set(paths)), 500):
            out = self.repo.run("ls-tree", "-z", commit, "--", *chunk, strip=False)
            present = {}
            for entry in out.split("\0"):
                if entry:
                    info, _, path = entry.partition("\t")
                    mode, _kind, blob = info.split()
                    if mode in ("100644", "100755"):  # never a link or a gitlink in the person's index
                        present[path] = f"{mode} {blob}\t{path}"
            lines += [present.get(path, f"0 {_ZERO}\t{path}") for path in chunk if not sync_problem(path)]
        try:
            # No `update-index --refresh` (it stats every file of a large wiki): the few entries
            # written here have no stat data, so git re-reads just those files once.
            self.repo._with_lock_retry(lambda: _update_index_text(self.repo, lines, None))
        except (git.GitCommandError, WikiwrightError) as exc:
            log.warning("sync: merged, but the git index could not be updated yet: %s", exc)

    def _remember_pages(self, commit: str, pages: list[str]) -> None:
        """Pages new to this machine: what the merge committed is the base of the daemon's next
        change (the committed blob, not the file on disk: a person may have typed there since,
        and their bytes must not pass for the daemon's)."""
        new = [page for page in pages if self.ledger.page_blob(page) is None]
        committed = self.repo.head_blobs([f"wiki/{page}.md" for page in new], rev=commit) if new else {}
        blobs = {page: committed[f"wiki/{page}.md"] for page in new if f"wiki/{page}.md" in committed}
        if blobs:
            self.ledger.set_page_blobs(blobs)


# -- refusals, in words ------------------------------------------------------------------------

QUOTE_LINES = 60


def _refusal_line(refusal: Refusal) -> str:
    return f"refused from the remote: {escape_controls(refusal.path)[:300]} ({refusal.why})"


def _refused_trailer(refusals: list[Refusal]) -> dict[str, str]:
    return {"Wikiwright-Refused": str(len(refusals))} if refusals else {}


def _refused_body(refusals: list[Refusal]) -> str:
    lines = [f"- {_refusal_line(r)}" for r in refusals[:100]]
    if len(refusals) > 100:
        lines.append(f"- … and {len(refusals) - 100} more")
    return "\n".join(lines)


def _quoted(text: str) -> list[str]:
    """The remote's version as inert text under a REVIEW.md item: a fenced code block (never
    rendered), every line behind a bar (no line can close the fence or read as an answer)."""
    rows = text.splitlines()
    # The fence starts the line (a fence indented under the item is not one to every reader).
    lines = ["    - the remote's version (not applied; quoted as text below)", "", "```text"]
    lines += [f"│ {escape_controls(row)[:400]}" for row in rows[:QUOTE_LINES]]
    if len(rows) > QUOTE_LINES:
        lines.append(f"│ … {len(rows) - QUOTE_LINES} more lines")
    lines += ["```", ""]
    return lines


# -- the ledger from history ------------------------------------------------------------------

class _Undone(set[str]):
    """Ingest commits undone as duplicates, with the duplicate claims that were refused."""

    refused: list[TrailerRefusal]


def _undone_ingests(repo: GitRepo, *revs: str | None) -> _Undone:
    """Ingest commits a sync merge undid as duplicates (``Wikiwright-Duplicate`` trailers),
    honoured only where another verified ingest of the same bytes stands (door/trailers.py)."""
    tip = (revs[0] if revs else None) or "HEAD"
    args = [tip, *(arg for rev in revs[1:] if rev for arg in ("--not", rev))]
    honoured, refused = read_duplicates(repo, args, tip)
    undone = _Undone(honoured)
    undone.refused = refused
    return undone


def rebuild_ledger_sources(repo: GitRepo, ledger: Ledger) -> int:
    """Record every ingest in HEAD's history in ``ledger`` (a fresh clone, or a lost ledger).

    Only ingests whose commits bear their trailers out (door/trailers.py); the oldest ingest of
    a content hash is its one ingest; ingests a sync merge marked as duplicates
    (``Wikiwright-Duplicate``, where another ingest of the bytes stands) are skipped.
    """
    undone = _undone_ingests(repo)
    verified, refused = read_ingests(repo, ["HEAD"]) if repo.head() else ([], [])
    count = 0
    for found in reversed(verified):
        if found.commit in undone:
            continue
        if ledger.record_shared_source(found.sha256, found.path, found.page, found.title, found.commit,
                                       "shared history"):
            count += 1
    keep_refusals(ledger, [*refused, *undone.refused], holds=_held_sha256s(ledger))
    return count


def _held_sha256s(ledger: Ledger) -> set[str]:
    """The content hashes and paths of the files in this vault's raw/ (as its ledger knows them)."""
    records = ledger.files(kind="raw")
    return {record.sha256 for record in records if record.sha256} | {record.path for record in records}


# -- small git helpers ------------------------------------------------------------------------

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def _journal_problem(journal: Any) -> str:
    """Why a sync journal is not one sync wrote ('' when it is): every path on the allow-list,
    every value a blob or commit id."""
    if not isinstance(journal, dict) or not isinstance(journal.get("paths", {}), dict):
        return "is not a sync journal"
    for key in ("old_head", "commit"):
        value = journal.get(key)
        if value not in (None, "") and not (isinstance(value, str) and _SHA_RE.match(value)):
            return f"has a {key} that is not a commit id"
    for path, row in journal.get("paths", {}).items():
        problem = sync_problem(path) if isinstance(path, str) else "not a path"
        if problem:
            return f"names {escape_controls(str(path))[:200]!r} ({problem})"
        if not (isinstance(row, list) and len(row) == 2
                and all(isinstance(v, str) and (v in ("", "?") or _SHA_RE.match(v)) for v in row)):
            return f"has an entry for {escape_controls(path)[:200]!r} that is not two blob ids"
    return ""


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _merge_index(repo: GitRepo, base: str, ours: str, theirs: str) -> str:
    """index.md: the person's text before and after the generated block keeps both machines'
    lines; the block is rebuilt from the merged pages afterwards (``_rebuild_index``)."""
    return merge_with_block(base, ours, theirs, Markers(INDEX_START, INDEX_END), _union_merge3(repo))


def _merge_overview(repo: GitRepo, base: str, ours: str, theirs: str) -> str:
    """overview.md: the person's text before and after the generated block keeps both
    machines' lines; the block is the remote's (this machine's next ingest rebuilds it: the
    term index it is built from is the ingest room's)."""
    return merge_with_block(base, ours, theirs, Markers(_OVERVIEW_START, _OVERVIEW_END), _union_merge3(repo))


def _union_merge3(repo: GitRepo) -> Merge3:
    def merge3(base: str, ours: str, theirs: str, favour: str) -> tuple[str, bool]:
        return merge_file(repo, base, ours, theirs, favour)
    return merge3


def _merge_appended(repo: GitRepo, base: str, ours: str, theirs: str) -> str:
    """A file that only grows at its end (log.md, daily logs): the remote's new entries, then ours."""
    if ours.startswith(base) and theirs.startswith(base):
        mine, remote = ours[len(base):], theirs[len(base):]
        if mine == remote:
            return theirs
        if remote and not remote.endswith("\n"):
            remote += "\n"
        return base + remote + mine
    text, _clean = merge_file(repo, base, ours, theirs, "union")
    return text


def stages_blobs(repo: GitRepo, merged: MergeTree, path: str) -> dict[int, bytes | None]:
    stages = merged.conflicts[path]
    blobs = _read_blobs(repo, [s.blob for s in stages.values()])
    return {n: blobs.get(stages[n].blob) if n in stages else None for n in (1, 2, 3)}


def _read_blobs(repo: GitRepo, blobs: list[str], *, missing_ok: bool = False) -> dict[str, bytes]:
    """Many blobs in one ``git cat-file --batch`` (``missing_ok``: the absent ones left out)."""
    unique = sorted(set(blobs))
    if not unique:
        return {}
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=repo.root, input="\n".join(unique).encode() + b"\n",
                          capture_output=True, check=True)
    out, pos, result = proc.stdout, 0, {}
    for blob in unique:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        if len(header) >= 2 and header[1] == b"missing" and missing_ok:
            pos = header_end + 1
            continue
        if len(header) < 3 or header[1] == b"missing":
            raise WikiwrightError(f"git object {blob} is missing")
        size = int(header[2])
        result[blob] = out[header_end + 1: header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return result


def _blob_bytes(repo: GitRepo, spec: str) -> bytes | None:
    blob = _blob_at(repo, spec, "")
    return _read_blobs(repo, [blob]).get(blob) if blob else None


def _blob_at(repo: GitRepo, commit: str | None, path: str) -> str:
    """The blob id at ``commit:path`` ('' when absent); ``path`` '' takes ``commit`` as the spec."""
    if not commit:
        return ""
    status, out, _err = git_status(repo, "rev-parse", "--verify", "-q", f"{commit}:{path}" if path else commit)
    return out.strip() if status == 0 else ""


def _hash_blob(repo: GitRepo, data: bytes) -> str:
    proc = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo.root, input=data,
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def _update_index(repo: GitRepo, lines: list[str], env: dict[str, str] | None) -> str:
    return _update_index_text(repo, lines, env)


def _update_index_text(repo: GitRepo, lines: list[str], env: dict[str, str] | None) -> str:
    full_env = {**os.environ, **repo._env, **(env or {})}
    full_env.pop("GIT_OPTIONAL_LOCKS", None)
    proc = subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=repo.root, env=full_env,
                          input="".join(f"{line}\0" for line in lines).encode("utf-8"), capture_output=True)
    if proc.returncode != 0:
        raise git.GitCommandError(["git", "update-index"], proc.returncode, proc.stderr.decode(errors="replace"))
    return ""


def _tree_changes(repo: GitRepo, old: str | None, new: str) -> dict[str, tuple[str, str, str]]:
    """path -> (old blob, new blob, new mode) for every file that differs ('' where absent)."""
    if old:
        out = repo.run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new, strip=False)
    else:
        out = repo.run("diff-tree", "-r", "-z", "--no-renames", "--root", "--no-commit-id", new, strip=False)
    parts = out.split("\0")
    changes: dict[str, tuple[str, str, str]] = {}
    index = 0
    while index < len(parts) - 1:
        info = parts[index]
        if not info.startswith(":"):
            index += 1
            continue
        _old_mode, new_mode, old_blob, new_blob, _status = info[1:].split()
        path = parts[index + 1]
        changes[path] = (old_blob if old_blob != _ZERO else "", new_blob if new_blob != _ZERO else "", new_mode)
        index += 2
    return changes


def _disk_blob(path: Path) -> str:
    try:
        if path.is_symlink():
            return "symlink"
        return git_blob_id(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return ""


# -- what status shows -------------------------------------------------------------------------

def sync_summary(config: Config, ledger: Ledger, repo: GitRepo) -> dict[str, Any]:
    """Ahead/behind (as of the last fetch), the last sync, and why a sync waits."""
    if not config.git.remote.strip():
        return {"enabled": False}
    remote = Remote(repo, config.git.remote, config.git.branch)
    try:
        state = json.loads(ledger.get_kv(STATE_KEY, "{}"))
    except ValueError:
        state = {}
    try:
        ahead, behind = remote.ahead_behind()
    except (git.GitCommandError, ValueError):
        ahead, behind = 0, 0
    try:
        refused = json.loads(ledger.get_kv(REFUSED_KEY, "{}"))
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


class SyncJob:
    """The daemon's periodic sync: its own ledger, catalogue and repository connections."""

    def __init__(self, config: Config, vault: Vault, services: tuple[Ledger, Catalog, GitRepo] | None = None) -> None:
        self.config = config
        self.vault = vault
        self._services = services  # the daemon's own (one connection per database), else opened here
        self._syncer: Syncer | None = None

    def tick(self) -> SyncReport | None:
        if self._syncer is None:
            if self._services is None:
                repo = GitRepo(self.vault.root, self.config.git.author_name, self.config.git.author_email,
                               self.config.git.lock_retry_seconds)
                self._services = (Ledger(self.vault.db_path), Catalog(self.vault), repo)
            self._syncer = Syncer(self.config, self.vault, *self._services)
        if not self._syncer.due():
            return None
        report = self._syncer.round()
        if report.state not in ("up-to-date", "off"):
            log.info("sync: %s %s", report.state, report.detail)
        return report


# -- consolidation once per period across machines ------------------------------------------------

def shared_consolidation_ms(config: Config, repo: GitRepo) -> int | None:
    """When the wiki was last consolidated on any machine (ms): the newest consolidation commit
    in HEAD's history, or the newest claim on the remote as last fetched."""
    newest: int | None = None
    found = repo.log("-F", f"--grep=Wikiwright-Operation: {OpKind.CONSOLIDATE.value}", limit=1)
    if found:
        from datetime import datetime

        newest = int(datetime.fromisoformat(found[0].date).timestamp() * 1000)
    claim = Remote(repo, config.git.remote, config.git.branch).last_claim()
    if claim is not None and (newest is None or claim[0] * 1000 > newest):
        newest = int(claim[0] * 1000)
    return newest


def claim_consolidation(config: Config, repo: GitRepo, owner: str, *, force: bool = False) -> str | None:
    """Take this period's consolidation through the remote; None when this machine may run.

    The claim is a commit pushed fast-forward onto ``refs/wikiwright/consolidation``: of two
    machines that fetched the same claim, the first push wins and the other's is rejected, so
    it waits for the next period. Offline, consolidation waits too (the logs keep).
    """
    remote = Remote(repo, config.git.remote, config.git.branch)
    try:
        remote.fetch()
    except RemoteError as exc:
        return f"the remote cannot be reached, so no claim can be taken ({exc}); consolidation waits"
    last = remote.last_claim()
    period = config.consolidation.min_hours * 3600
    if last is not None and not force and time.time() - last[0] < period:
        return f"another machine claimed this period's consolidation ({last[1]}); waiting for the next period"
    result, detail = remote.push_claim(f"consolidation claim by {owner} at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}")
    if result is PushResult.PUSHED:
        return None
    if result is PushResult.REJECTED:
        remote.fetch()
        return "another machine claimed this period's consolidation first; waiting for the next period"
    return f"the consolidation claim could not be pushed ({detail}); consolidation waits"
