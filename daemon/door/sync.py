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
conflicts are resolved by what each file is (the rules: ``wiki/syncmerge.py``; pages by front
matter, claims and text: ``wiki/pagemerge.py``; lines both machines changed keep the remote's
version on the page and this machine's in REVIEW.md), and the result is screened
(``door/synctree.py``): only what sync's allow-list lets in comes from the remote — safe names
under wiki/, raw/, logs/ and the root files, regular files within size limits, pages the
sanitizer passes; ``.gitignore`` keeps this machine's lines and the daemon's section. A refused
entry keeps this machine's version in the committed tree (a fast-forward becomes a commit on
HEAD and the remote's commit), so HEAD, the person's index and the working tree never hold it;
the commit, status and REVIEW.md say what was refused and why.

Then it is an ordinary door operation of kind ``sync`` (:meth:`Operation.integrate`): the
merged files are written through the door (journaled, compare-and-swap against HEAD's bytes,
so nothing a person typed is overwritten), index.md is rebuilt from the merged pages, the
REVIEW.md items are the door's proposals, and the commit has the remote's commit as its second
parent; the door's journal names the expected HEAD move, so its one recovery finishes or undoes
a round a crash cut, like any other operation. Git is asked through ``vcs/merge.py`` only.

Duplicates across machines: the same bytes ingested on two machines before either saw the
other — the ingest published first (the remote's) stands; this machine's ingest commit
stays in history (nothing is rewritten) but the merge drops its source page (or takes the
remote's when both used the same name), records its file as a duplicate, and says so in a
``Wikiwright-Duplicate: <commit> <sha256>`` trailer, which the ledger rebuild honours.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.config import Config
from ..core.errors import CommitPaused, WikiwrightError
from ..core.logsetup import escape_controls
from ..core.opkinds import MACHINE_LOCAL_FIXES, OpKind
from ..core.vault import Vault
from ..core.vaultpaths import GENERATED_PAGES, is_log_file, sync_problem
from ..intake.ledger import SYNC_STATE_KEY, Ledger
from ..vcs.merge import (
    REGULAR,
    blob_at,
    blob_sizes,
    changed_paths,
    commits_between,
    read_blobs,
    status_paths,
    tree_entries,
    write_blob,
    write_tree,
)
from ..vcs.queries import merge_base
from ..vcs.remote import MergeTree, PushResult, Remote, RemoteError, merge_file
from ..vcs.repo import (
    GitRepo,
    git,  # GitPython, imported only when one of its errors is raised or matched
)
from ..wiki.catalog import Catalog
from ..wiki.pagemerge import PageMerge
from ..wiki.syncmerge import resolve
from .sourceclaims import SourceClaims, wake_claimed
from .synctree import (
    REFUSED_HEADING,
    REFUSED_KEY,
    Entry,
    Refusal,
    Screen,
    Screened,
    refusals_record,
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

if TYPE_CHECKING:
    from .door import Door, Operation

log = logging.getLogger(__name__)

STATE_KEY = SYNC_STATE_KEY
IMPORTED_KEY = "sync.imported"
# Fixes that act on what only this machine vouches for: a held-back model operation, a page text
# it proposed, a costly source to send to the model. Another machine's tick never approves them.
GUARDED_ACTIONS = MACHINE_LOCAL_FIXES  # answered only on this machine (core/opkinds.py)
MAX_BACKOFF = 300.0
PUSH_ATTEMPTS = 3
# What a person edits by hand, committed (as theirs) at the start of every round: the pages,
# REVIEW.md and SCHEMA.md. Daily logs are the hooks' and are committed by the daemon's own
# log commits.
_PERSON_EDITED = ("wiki", "REVIEW.md", "SCHEMA.md")

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

    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog, repo: GitRepo,
                 door: Door) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.repo = repo
        self._door = door  # the process's one door (its vault context's), on the parts above
        self.remote = Remote(repo, config.git.remote, config.git.branch)
        self._round_times: dict[str, float] = {}
        self._refused: list[TrailerRefusal] = []  # trailers refused this round, kept by _import_sources
        self._claims: SourceClaims | None = None

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
        self._prune_claims()
        return report

    @property
    def claims(self) -> SourceClaims:
        """This machine's source claims on the remote (door/sourceclaims.py)."""
        if self._claims is None:
            self._claims = SourceClaims(self.config, self.repo, self.ledger)
        return self._claims

    def _prune_claims(self) -> None:
        """Source claims whose ingest is published go after a round too (not only when this
        machine next claims a source)."""
        self.claims.prune_if_due()

    def _propose_refused(self) -> None:
        """Trailers refused while integrating, as REVIEW.md items (one door operation; the list
        is cleared in its journaled ledger step, so a crash neither loses nor repeats one)."""
        refused = pending_refusals(self.ledger)
        if not refused:
            return
        door = self.door()
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

    def door(self) -> Door:
        """The door every round's operations pass (the one the process was given)."""
        return self._door

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

        One door operation of kind ``sync``: the vault's write lock, another operation's crash
        recovered first, no work while a person's merge or rebase is in progress; its commit has
        the remote's commit as second parent (:meth:`Operation.integrate`), or, for a clean
        fast-forward, HEAD moves to the remote's commit itself.
        """
        door = self.door()
        with door.operation(OpKind.SYNC, "sync") as op:
            problem = self._repository_problem()
            if problem:
                return self._wait("paused", problem, backoff=False)
            imported = self._import_history_once()
            # The person's own edits travel with this round's push, even when the remote has
            # nothing new.
            self._settle_person_edits(op, ())
            head = self.repo.head()
            if theirs is None or head == theirs or (head and self.remote.is_ancestor(theirs, head)):
                return SyncReport("up-to-date", imported=imported)
            imported += self._import_sources(self._ingests(theirs, head), _undone_ingests(self.repo, theirs, head))
            base = merge_base(self.repo, head, theirs) if head else None
            # Only what sync may write can hold a person's edit it would overwrite; the other
            # names are never handed to git as pathspecs either.
            self._settle_person_edits(op, [p for p in changed_paths(self.repo, base, theirs) if not sync_problem(p)])
            head = self.repo.head()
            if head is None or self.remote.is_ancestor(head, theirs):
                report = self._fast_forward(op, head, theirs, imported)
            else:
                report = self._merge(op, head, theirs, imported)
        report.merged = op.commit_sha or report.merged
        if report.refused:
            log.warning("sync refused %d entries from the remote (%s); see status and REVIEW.md",
                        len(report.refused), theirs[:10])
        return report

    def _settle_person_edits(self, op: Operation, remote_changed: Sequence[str]) -> None:
        """A person's uncommitted edits are committed first, as theirs: every page, REVIEW.md
        and SCHEMA.md they changed (so their edits reach the other machines with this round's
        push), and whatever else the merge may write.

        raw/ is the inbox: a file being dropped there is the daemon's to ingest, not an edit.
        Only names sync would take from a remote are committed (the same allow-list both ways).
        """
        paths = sorted({*(p for p in remote_changed if not p.startswith("raw/")), *_PERSON_EDITED})
        dirty = [path for path in status_paths(self.repo, paths) if not sync_problem(path)]
        if dirty:
            op.commit_person_edits(sorted(set(dirty)))

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

    def _fast_forward(self, op: Operation, head: str | None, theirs: str, imported: int) -> SyncReport:
        """The remote's commit as it is when every entry it changes passes the screen; else a
        commit of its tree without the refused entries (on HEAD and the remote's commit)."""
        screened = self._screen(head, tree_entries(self.repo, theirs))
        if not screened.changed:
            op.title = f"fast-forward to {theirs[:10]}"
            op.integrate(head, theirs, self.repo.tree_of(theirs) or "", fast_forward=True)
            log.info("sync: fast-forwarded to %s", theirs[:10])
            return SyncReport("integrated", f"fast-forward to {theirs[:10]}", theirs, imported=imported)
        op.title = f"take {commits_between(self.repo, theirs, head)} commit(s) from {self._remote_name()}"
        op.trailers.update({"Wikiwright-Merged": theirs, **_refused_trailer(screened.refused)})
        op.body = _refused_body(screened.refused)
        op.integrate(head, theirs, write_tree(self.repo, screened.entries))
        self._propose(op, [], screened.refused, theirs)
        self._record_refusals(op, screened.refused, theirs)
        subject = f"sync: {op.title}"
        log.info("%s; %d entries refused", subject, len(screened.refused))
        return SyncReport("integrated", subject, imported=imported,
                          refused=[_refusal_line(r) for r in screened.refused])

    def _remote_name(self) -> str:
        return f"{self.remote.name}/{self.remote.branch}"

    def _merge(self, op: Operation, head: str, theirs: str, imported: int) -> SyncReport:
        merged = self.remote.merge_tree(head, theirs)
        resolutions: dict[str, bytes | None] = {}
        reviews: list[tuple[str, PageMerge]] = []
        unread = self._unmergeable(merged)
        for path in sorted(set(merged.conflicts) - set(unread)):
            texts = stages_blobs(self.repo, merged, path)
            data, review = resolve(path, texts[1], texts[2], texts[3], self._merge3)
            resolutions[path] = data
            if review is not None:
                reviews.append((path, review))
        duplicates, undone = self._duplicates(head, theirs, resolutions)
        candidate = self._tree_with(merged.tree, resolutions)
        candidate.update(unread)
        screened = self._screen(head, candidate)
        refused = {r.path for r in screened.refused}
        reviews = [(path, review) for path, review in reviews if path not in refused]  # the local page stays
        tree = merged.tree if not resolutions and not screened.changed else write_tree(self.repo, screened.entries)
        report = SyncReport("integrated", "", imported=imported, conflicts=[p for p, _ in reviews],
                            duplicates=duplicates, refused=[_refusal_line(r) for r in screened.refused])
        op.trailers["Wikiwright-Merged"] = theirs
        if reviews:
            op.trailers["Wikiwright-Conflicts"] = ", ".join(p for p, _ in reviews)
        if undone:
            op.trailers["Wikiwright-Duplicate"] = ", ".join(undone.values())
        op.trailers.update(_refused_trailer(screened.refused))
        op.title = f"merge {commits_between(self.repo, theirs, head)} commit(s) from {self._remote_name()}"
        op.body = "\n".join([*(f"- {path}: {note}" for path, review in reviews for note in review.notes),
                             *([_refused_body(screened.refused)] if screened.refused else [])])
        op.integrate(head, theirs, tree)
        self._propose(op, reviews, screened.refused, theirs)
        self._record_refusals(op, screened.refused, theirs)
        report.detail = f"sync: {op.title}"
        log.info("%s%s%s", report.detail, f"; conflicts kept for review: {', '.join(report.conflicts)}"
                 if reviews else "", f"; {len(screened.refused)} entries refused" if screened.refused else "")
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
        screen = Screen(self.config, self.repo, self.vault.root, read_blobs, guarded=self._guarded_items())
        return screen.run(tree_entries(self.repo, head), candidate)

    def _guarded_items(self) -> list[str]:
        """This machine's open REVIEW.md items a tick from another machine must not approve."""
        from ..wiki.reviewfile import ReviewStore

        store = ReviewStore.on(self.ledger)  # the ledger's connection: no second one to state.db
        try:
            return [item.id for item in store.items("open") if item.fix.get("action") in GUARDED_ACTIONS]
        finally:
            store.close()

    def _merge3(self, base: str, ours: str, theirs: str, favour: str) -> tuple[str, bool]:
        return merge_file(self.repo, base, ours, theirs, favour)

    def _duplicates(self, head: str, theirs: str,
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
                blob = blob_at(self.repo, theirs, f"wiki/{mine.page}.md")
                resolutions[f"wiki/{mine.page}.md"] = read_blobs(self.repo, [blob])[blob] if blob else None
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
                entries[path] = (REGULAR, write_blob(self.repo, data))
        return entries

    def _propose(self, op: Operation, reviews: list[tuple[str, PageMerge]], refusals: list[Refusal],
                 theirs: str) -> None:
        """REVIEW.md items, through the operation: what did not merge and what was refused."""
        from ..wiki.reviewfile import proposal

        items = []
        details: dict[str, list[str]] = {}
        for path, review in reviews:
            text = (f"`{path}`: this machine and the remote changed the same lines; the remote's version is on "
                    "the page, this machine's is quoted below — copy what should stay, then tick")
            item = proposal("sync-conflict", text, pages=[path.removeprefix("wiki/").removesuffix(".md")],
                            facts={"path": path, "hunks": review.hunks, "notes": review.notes})
            items.append(item)
            lines = []
            for ours, remote in review.hunks:
                lines.append("    - this machine's lines:")
                lines += [f"      > {line}" for line in ours.splitlines()] or ["      > (none)"]
                lines.append("    - the remote's lines (on the page):")
                lines += [f"      > {line}" for line in remote.splitlines()] or ["      > (none)"]
            lines += [f"    - {note}" for note in review.notes]
            details[item.id] = lines
        if items:
            op.propose("sync-conflict", items, details)
        refused_items, refused_details = self._refusal_items(refusals, theirs)
        if refused_items:
            op.propose("sync-refused", refused_items, refused_details)

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
        quoted = read_blobs(self.repo, [r.blob for r in refusals if r.quote and r.blob])
        for refusal in refusals:
            text = f"refused from the remote: {code_span(refusal.path)} ({refusal.why}) — {take(refusal.path)}"
            item = proposal("sync-refused", text, facts={"path": refusal.path, "blob": refusal.blob,
                                                         "why": refusal.why}, heading=REFUSED_HEADING)
            items.append(item)
            if refusal.quote and refusal.blob in quoted:
                details[item.id] = _quoted(quoted[refusal.blob].decode("utf-8", "replace"))
        return items, details

    def _record_refusals(self, op: Operation, refusals: list[Refusal], theirs: str) -> None:
        """What was refused, for status (the newest kept), recorded with the commit (journaled)."""
        value = refusals_record(self.ledger, ((r.path, r.why, theirs) for r in refusals))
        if value is not None:
            op.ledger_after_commit("set_kv", REFUSED_KEY, value)

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

def stages_blobs(repo: GitRepo, merged: MergeTree, path: str) -> dict[int, bytes | None]:
    stages = merged.conflicts[path]
    blobs = read_blobs(repo, [s.blob for s in stages.values()])
    return {n: blobs.get(stages[n].blob) if n in stages else None for n in (1, 2, 3)}


class SyncJob:
    """The daemon's periodic sync, on the daemon's door (its ledger, catalogue and repository:
    one connection to each database)."""

    def __init__(self, door: Door) -> None:
        self._syncer = Syncer(door.config, door.vault, door.ledger, door.catalog, door.repo, door=door)

    def tick(self) -> SyncReport | None:
        if not self._syncer.due():
            return None
        report = self._syncer.round()
        if report.state not in ("up-to-date", "off"):
            log.info("sync: %s %s", report.state, report.detail)
        return report


# -- consolidation once per period across machines ------------------------------------------------

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
