"""The door: the one object through which every change to the vault passes.

Usage::

    door = ctx.door                            # the VaultContext's, once per process; runs crash recovery
    with door.operation(OpKind.LINT_FIX, "title") as op:   # the vault's write lock (all processes)
        text = op.read("topics/x")          # the person's uncommitted edits are committed first
        op.write([PageChange("topics/x", new, base=text)])   # compare-and-swap, three-way merge;
                                            # unmergeable: the person's text stays, REVIEW.md asks
        op.edit_file("REVIEW.md", mutate)   # any other vault file, same rules
        op.propose("held-back", [proposal(...)])   # REVIEW.md proposals (wiki/reviewfile.py)
        op.add_paths(["raw/x.md"])          # commit these files as they are on disk
        op.integrate(head, theirs, tree)    # a sync merge: the commit starts from the merged
                                            # tree, the remote's commit its second parent
        op.details.append("…"); op.trailers["Wikiwright-Source"] = "…"
        op.ledger_after_commit("set_kv", key, value)   # journaled: made even after a crash
        op.apply_after_commit(delta)        # a StateDelta (the term index's), journaled too
        op.after_commit(callback)           # called with the commit sha (not journaled)
    # on exit: index.md rebuilt (if pages changed), one log.md entry, exactly one commit
    # with trailers (Wikiwright-Operation: <OpKind>), the ledger calls (one transaction), the
    # journal cleared.
    # An exception inside the block puts every file back as it was: nothing is committed.
    op.commit_sha                           # None when the operation changed nothing

Rules the door keeps, so no caller has to: a file is never written without first committing
what a person changed in it under their own name (``user-edit``), and only while it still
holds what was read (compare-and-swap, redone on the person's newer text); the commit holds
exactly the bytes the operation wrote, never what a person saves meanwhile; the journal
(:mod:`.journal`, the only one: files, the HEAD move, the person's index) makes the whole
operation crash-safe.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.crashpoints import crash_point
from ..core.errors import CommitPaused, PlanOutdated, UnsafePathError, WikiwrightError
from ..core.fsutil import TEMP_MARKER, atomic_replace_if
from ..core.locks import vault_write_lock
from ..core.logsetup import escape_controls
from ..core.opkinds import FixAction, OpKind
from ..core.vault import Vault
from ..core.vaultpaths import INDEX_PAGE, LOG_PAGE, is_log_file, safe_target, sync_problem
from ..intake.ledger import Ledger
from ..vcs.gitlock import remove_stale_locks
from ..vcs.merge import commit_merge, read_blobs, tree_changes
from ..vcs.queries import is_ancestor
from ..vcs.repo import GitRepo, format_message, git_blob_id, merge_texts
from ..wiki import reviewfile
from ..wiki.catalog import Catalog
from ..wiki.index import (
    IndexPages,
    block_of,
    empty_page,
    group_page_names,
    index_builder,
    new_group_page,
    splice_index,
)
from ..wiki.logfile import ARCHIVE_FOLDER, appended_log, log_entry, plan_archive
from ..wiki.writer import Conflict, PageChange, WriteOutcome
from .deltas import DeltaSink, StateDelta
from .journal import FileChange, Journal, JournalEntry

log = logging.getLogger(__name__)

# Files outside wiki/ an operation may write (raw/ and logs/ are only ever committed as they are).
ROOT_FILES = ("REVIEW.md", "SCHEMA.md", ".gitignore")
COMMIT = "@commit"  # stands for the operation's commit sha in ledger_after_commit arguments
_LEDGER_CALLS = ("set_kv", "finish_logs", "record_ingest", "bind_page", "set_source_state", "set_page_blobs",
                 "set_notice", "clear_notice", "review_add", "review_set_state")
_RETRIES = 20


def _page_rel(page: str) -> str:
    return f"wiki/{page}.md"


class Door:
    def __init__(self, config: Config, vault: Vault, ledger: Ledger, catalog: Catalog, repo: GitRepo, *,
                 sinks: Mapping[str, Callable[[], DeltaSink]] | None = None) -> None:
        self.config = config
        self.vault = vault
        self.ledger = ledger
        self.catalog = catalog
        self.repo = repo
        self.journal = Journal(vault.state)
        # Where state deltas are made, by name: each opened on first use by its owner's function
        # (the vault context's term index), never closed by the door.
        self._sink_makers: dict[str, Callable[[], DeltaSink]] = dict(sinks or {})

    @classmethod
    def open(cls, config: Config, vault: Vault, *, ledger: Ledger, catalog: Catalog, repo: GitRepo,
             sinks: Mapping[str, Callable[[], DeltaSink]] | None = None) -> Door:
        """The door on the process's parts (its ``VaultContext``'s, which close them), after
        finishing whatever a crashed operation left. ``sinks``: where the state deltas
        operations journal are made (door/deltas.py), by name; a door without the sink a crashed
        operation's delta names refuses to open (the journal waits for one that has it)."""
        door = cls(config, vault, ledger, catalog, repo, sinks=sinks)
        door.recover()
        catalog.refresh()
        return door

    def sink(self, name: str) -> DeltaSink:
        makers = self._sink_makers
        if name not in makers:
            raise WikiwrightError(f"this door has no {name!r} to make an operation's changes in "
                                  f"(open it with the vault context's parts)")
        return makers[name]()

    def close(self) -> None:
        """Nothing to close: the door holds the context's parts, and the context closes them."""

    # -- operations ------------------------------------------------------------------------

    @contextmanager
    def operation(self, kind: OpKind | str, title: str, *, today: date | None = None) -> Iterator[Operation]:
        """One operation: the write lock for its whole life, one commit at its end (or nothing)."""
        with vault_write_lock(self.vault.state):
            self.recover()  # a crash of another process that held the lock before us
            problem = self.repo.problem()
            if problem:
                raise CommitPaused(problem)
            op = Operation(self, OpKind(kind), title, today)
            try:
                yield op
                op._finish()
            except BaseException:
                op._roll_back()
                raise

    # -- crash recovery ----------------------------------------------------------------------

    def recover(self) -> str | None:
        """Finish or undo the operation a crash interrupted (idempotent); what was done, in words."""
        with vault_write_lock(self.vault.state):
            # A git child of ours killed mid-command (with the daemon's process group) leaves
            # .git/index.lock behind; nobody holds it once no git process runs here.
            remove_stale_locks(self.vault.root, self.vault.state)
            self.repo.finish_index_sync()
            entry = self.journal.load()
            if entry is not None and entry.index:
                # A commit of the operation (or of the person's edits it made first) moved HEAD;
                # the person's index may not have caught up.
                self.repo.finish_index_entries(entry.index)
            if entry is None:
                if self.journal.refused:
                    self.ledger.set_notice("journal", f"an operation journal was refused, not replayed: "
                                           f"{self.journal.refused} (set aside as journal.json.refused)")
                return None
            landed = self._landed(entry)
            if landed:
                self._roll_forward(entry, landed)
                message = (f"{entry.kind} '{entry.title}' had committed ({landed[:10]}) before a crash; "
                           "finished it")
            else:
                self._restore(entry)
                message = f"{entry.kind} '{entry.title}' stopped before its commit; the wiki was put back as it was"
            self._sweep_temp_files(entry)
            crash_point("door-recovered")
            self.journal.clear()
            log.warning("%s", message)
            return message

    def _landed(self, entry: JournalEntry) -> str | None:
        """The commit of the journaled operation if it landed (None: HEAD never got there).

        An operation that names its HEAD move (a merge, a fast-forward) landed when HEAD is at
        that commit or past it; any other is found by its ``Wikiwright-Op`` trailer."""
        if entry.head_move:
            old, new = entry.head_move
            head = self.repo.head()
            if head == new or (head is not None and head != (old or None) and is_ancestor(self.repo, new, head)):
                return new
            return None
        found = self.repo.log("-F", f"--grep=Wikiwright-Op: {entry.op_id}", limit=1)
        return found[0].sha if found else None

    def _sweep_temp_files(self, entry: JournalEntry) -> None:
        """The temp files of the interrupted writes (atomic writes of the journaled files).

        A crash right after a compare-and-swap's exchange leaves the displaced file under the
        temp name: when its bytes are none the journal knows (a person's save in that instant),
        it is kept beside the file, renamed out of every sweep's reach, never removed."""
        journal_rel = f"{self.journal.path.parent.name}/{self.journal.path.name}"
        for rel in [*entry.files, journal_rel]:
            path = self.vault.root / rel
            change = entry.files.get(rel)
            known = {change.before, change.after, change.disk_before, *change.written()} if change else set()
            for temp in path.parent.glob(f".{path.name}{TEMP_MARKER}*"):
                data = _read_bytes(temp)
                if change is None or not data or git_blob_id(data) in known or data == _read_bytes(path):
                    temp.unlink(missing_ok=True)
                    continue
                kept = temp.with_name(temp.name.replace(TEMP_MARKER, ".wikiwright-kept-"))
                temp.replace(kept)
                log.warning("recovery: %s may hold a save of yours made as the interrupted operation wrote %s; "
                            "kept as it is", kept.name, rel)

    def _roll_forward(self, entry: JournalEntry, sha: str) -> None:
        sinks = [self.sink(name) for name, _payload in entry.deltas]  # all there, before anything is made
        if not entry.index:  # a journal of an earlier release: its files are what the commit wrote
            self.repo.sync_person_index({rel: change.after for rel, change in entry.files.items()})
        self._record(entry.page_blobs, entry.ledger, sha)
        for sink, (name, payload) in zip(sinks, entry.deltas, strict=True):
            try:
                sink.apply_journaled(payload)
            except ValueError as exc:  # not a delta its sink makes (a journal from elsewhere): left out
                log.error("recovery: the journaled %s change is not one (%s); not made", name, exc)
                self.ledger.set_notice("journal", f"an interrupted operation's {name} change was not made: {exc}"[:300])

    def _record(self, page_blobs: Mapping[str, str], calls: Iterable[list[Any]], sha: str) -> None:
        """What an operation's commit changes in state.db (the page blobs, its journaled ledger
        and review calls), in one transaction: a crash leaves all of it or none (and the
        journal, so recovery makes all of it)."""
        calls = list(calls)
        if any(method.startswith("review_") for method, _args in calls):
            # The review tables brought to their version first: that takes its own transaction.
            reviewfile.ReviewStore.on(self.ledger).close()
        with self.ledger.atomic():
            if page_blobs:
                self.ledger.set_page_blobs(dict(page_blobs))
            for method, args in calls:
                _call_ledger(self, method, args, sha)

    def _restore(self, entry: JournalEntry) -> None:
        for rel, change in entry.files.items():
            path = self.vault.root / rel
            disk = _read_bytes(path)
            blob = git_blob_id(disk) if disk is not None else None
            written = change.written()
            earlier = change.disk_before if change.disk_before is not None else change.before
            if blob in (change.before, earlier):
                continue
            if blob in (*written, change.after):
                atomic_replace_if(path, self._blob(earlier), disk)
                continue
            # A person changed the file after the crashed operation wrote it: take out only the
            # operation's change (a reverse three-way merge on the text it last wrote, or on its
            # earlier write when the last one had not landed), or leave it for them if that fails.
            if not self._take_out(path, disk, written, earlier):
                log.warning("recovery: %s changed after an interrupted operation wrote it; left as it is", rel)

    def _take_out(self, path: Path, disk: bytes | None, written: list[str], earlier: str | None) -> bool:
        """The file's text with the crashed operation's change taken out (the person's kept); False
        when no text the operation wrote merges cleanly with it."""
        theirs = self._blob(earlier)
        if disk is None or theirs is None:
            return False
        for blob in written:
            ours = self._blob(blob)
            if ours is None:
                continue
            merged, clean = merge_texts(self.repo, ours.decode("utf-8", "surrogateescape"),
                                        disk.decode("utf-8", "surrogateescape"),
                                        theirs.decode("utf-8", "surrogateescape"))
            if clean:
                return atomic_replace_if(path, merged.encode("utf-8", "surrogateescape"), disk)
        return False

    def _blob(self, blob: str | None) -> bytes | None:
        if blob is None:
            return None
        text = self.repo.blob_text(blob)
        return text.encode("utf-8", "surrogateescape") if text is not None else None


def _call_ledger(door: Door, method: str, args: list[Any], sha: str) -> None:
    """One journaled state update (the ledger's, or the REVIEW.md proposal store's)."""
    if method not in _LEDGER_CALLS:
        raise ValueError(f"not a journaled ledger call: {method}")
    values: list[Any] = [sha if arg == COMMIT else arg for arg in args]
    if method.startswith("review_"):
        store = reviewfile.ReviewStore.on(door.ledger)  # the ledger's connection: no second one to state.db
        try:
            if method == "review_add":
                ident, kind, description, pages, fix = values
                store.add(reviewfile.Proposal(str(ident), str(kind), str(description), tuple(pages), dict(fix)))
            else:
                store.set_state(*values)
        finally:
            store.close()
        return
    getattr(door.ledger, method)(*values)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


@dataclass
class _Touched:
    ours: bytes | None  # what this operation commits at the path


@dataclass
class _Merge:
    """Another machine's commit this operation brings in (:meth:`Operation.integrate`)."""

    head: str | None  # HEAD the merge builds on (its first parent)
    theirs: str  # the second parent
    tree: str  # the merged, screened tree the commit starts from
    fast_forward: bool  # HEAD may move to ``theirs`` itself when nothing is added on top
    written: dict[str, str | None]  # the files the merge wrote: their blob in ``tree`` (None: removed)
    changed: dict[str, tuple[str, str]]  # every path ``tree`` changes from HEAD's: (mode, blob; '' removed)


class Operation:
    """What one operation changes; made by :meth:`Door.operation`, never directly."""

    def __init__(self, door: Door, kind: OpKind, title: str, today: date | None) -> None:
        self.door = door
        self.kind = kind
        self.title = title
        self.today = today
        self.id = uuid.uuid4().hex[:16]
        self.details: list[str] = []
        self.trailers: dict[str, str] = {}
        self.outcome = WriteOutcome()  # every page write of the operation, merged
        self.deleted: list[str] = []  # pages removed
        self.always_log = False  # log.md entry and commit even when no file changed
        # An ingest whose plan read a page another worker's operation has changed since plans
        # again (PlanOutdated) instead of proposing a conflict: only a person's edit is one.
        self.replan_if_outdated = False
        self.commit_sha: str | None = None
        self._entry = JournalEntry(self.id, kind.value, title)
        self._touched: dict[str, _Touched] = {}
        self._settled: dict[str, bytes | None] = {}  # what each file held when the person's edits were committed
        self._extra: list[str] = []
        self._callbacks: list[Callable[[str | None], None]] = []
        self._index_wanted = False
        self._propose_conflicts = True
        self.body = ""  # the commit message's body (after the subject, before the trailers)
        self._merge: _Merge | None = None

    @property
    def vault(self) -> Vault:
        return self.door.vault

    @property
    def config(self) -> Config:
        return self.door.config

    @property
    def ledger(self) -> Ledger:
        return self.door.ledger

    @property
    def catalog(self) -> Catalog:
        return self.door.catalog

    @property
    def repo(self) -> GitRepo:
        return self.door.repo

    # -- reading ---------------------------------------------------------------------------

    def _path(self, rel: str) -> Path:
        if rel.startswith("wiki/"):
            return self.vault.wiki_path(rel.removeprefix("wiki/"))
        if rel in ROOT_FILES:
            return self.vault.root / rel
        raise UnsafePathError(f"an operation may not write {rel!r}")

    def settle(self, rels: Iterable[str]) -> None:
        """Commit the person's uncommitted edits to ``rels`` under their name, once per operation:
        the operation's commit builds on exactly what was settled here. What the person types
        after this stays in the files, on top of the operation's change, and stays theirs."""
        fresh = [rel for rel in dict.fromkeys(rels) if rel not in self._settled]
        if fresh:
            contents = {rel: _read_bytes(self._target(rel)) for rel in fresh}
            self.door.repo.commit_person_contents(contents, self._journal_index)
            self._settled.update(contents)

    def _journal_index(self, _head: str | None, _commit: str, index: Mapping[str, str | None]) -> None:
        """A commit of the person's edits is about to move HEAD: the journal names what the
        person's index then has to record (their commit is theirs, not this operation's)."""
        self._entry.index = dict(index)
        self.door.journal.save(self._entry)

    def _journal_move(self, head: str | None, commit: str, index: Mapping[str, str | None]) -> None:
        """This operation's commit is about to move HEAD: the journal names the move and what the
        person's index then has to record."""
        self._entry.head_move = [head or "", commit]
        self._entry.index = dict(index)
        self.door.journal.save(self._entry)

    def commit_person_edits(self, rels: Iterable[str]) -> None:
        """Commit the person's uncommitted changes to these files under their name, journaled
        like the operation's own commit (a sync round: every file the remote changed)."""
        self.door.repo.commit_person_edits(list(dict.fromkeys(rels)), self._journal_index)

    def _target(self, rel: str) -> Path:
        return self._path(rel) if rel.startswith("wiki/") or rel in ROOT_FILES else self.vault.root / rel

    def _ours(self, rel: str) -> bytes | None:
        """What this operation's commit holds at ``rel`` so far (settled, or written by it)."""
        self.settle([rel])
        return self._touched[rel].ours if rel in self._touched else self._settled[rel]

    def read(self, page: str) -> str | None:
        """A page as this operation's commit builds on it (the person's edits committed first)."""
        data = self._ours(_page_rel(page))
        return data.decode("utf-8") if data is not None else None

    def read_file(self, rel: str) -> str | None:
        self._path(rel)
        data = self._ours(rel)
        return data.decode("utf-8", "surrogateescape") if data is not None else None

    # -- writing ---------------------------------------------------------------------------

    def _put(self, rel: str, ours: bytes | None, disk_now: bytes | None, worktree: bytes | None) -> bool:
        """Journal, then write ``worktree`` at ``rel`` if it still holds ``disk_now``; the commit
        will hold ``ours``. False when the file changed meanwhile (nothing written)."""
        change = self._entry.files.get(rel)
        if change is None:
            settled = self._settled[rel]
            change = self._entry.files[rel] = FileChange(git_blob_id(settled) if settled is not None else None, None)
        first = rel not in self._touched  # recovery puts back what was there before the operation
        if not first and disk_now is not None:
            # A second write of the file (index.md rebuilt after a merge wrote it, another
            # REVIEW.md item): until it lands the file holds the earlier one, which recovery must
            # still know as this operation's, not take for a person's save.
            previous = change.written()
            change.replaced = git_blob_id(disk_now) if previous and git_blob_id(disk_now) == previous[0] else None
        change.after = git_blob_id(ours) if ours is not None else None
        base = self._touched[rel].ours if rel in self._touched else self._settled[rel]
        if (worktree != ours or disk_now != base) and first and disk_now is not None \
                and change.disk_before != git_blob_id(disk_now):
            # A person typed in the file since it was settled: recovery must be able to put back
            # exactly what it held, so those bytes go into the object store first.
            change.disk_before = self.door.repo.store_bytes(disk_now)
        change.disk_after = git_blob_id(worktree) if worktree is not None and worktree != ours else None
        if worktree is not None and (change.disk_before or change.before) is not None:
            # What the file is about to hold goes into the object store too (the commit stores the
            # same blob anyway): a person who types in the file after a crash cut the operation
            # keeps their words, and recovery takes out only the operation's change (a reverse
            # three-way merge needs the text it wrote). A file the operation creates is put back
            # as absent, with no merge: its text is left to the commit to store (init's first
            # index.md and log.md, rewritten before it, leave no dangling blob).
            self.door.repo.store_bytes(worktree)
        self.door.journal.save(self._entry)
        if not atomic_replace_if(self._path(rel), worktree, disk_now):
            return False
        self._touched[rel] = _Touched(ours)
        return True

    def edit_file(self, rel: str, mutate: Callable[[str | None], str | None]) -> bool:
        """Apply ``mutate`` (text → new text; None: absent / remove) to a vault file; True if changed.

        The commit holds ``mutate`` of the text the operation builds on; the file holds
        ``mutate`` of what is in it now, so whatever a person typed since stays, and stays theirs.
        """
        self._path(rel)
        ours = self._ours(rel)
        new = _encode(mutate(_decode(ours)))
        if new == ours:
            return False
        for _attempt in range(_RETRIES):
            disk = _read_bytes(self._path(rel))
            worktree = new if disk == ours else _encode(mutate(_decode(disk)))
            if self._put(rel, new, disk, worktree):
                return True
        raise CommitPaused(f"{rel} kept changing while wikiwright tried to update it; will try again")

    def write_file(self, rel: str, text: str, base: str | None) -> bool:
        """Write ``text`` to ``rel`` only if it holds ``base`` (None: absent); False if not."""
        if self.read_file(rel) != base:
            return False
        new = _encode(text)
        for _attempt in range(_RETRIES):
            disk = _read_bytes(self._path(rel))
            if disk != _encode(base):
                return False  # a person wrote it meanwhile: theirs stays
            if self._put(rel, new, disk, new):
                return True
        return False

    def delete_page(self, page: str, expected: str) -> bool:
        """Remove a page only if it still holds ``expected``; True if it is gone."""
        rel = _page_rel(page)
        ours = self._ours(rel)
        if ours is None:
            return True
        disk = _read_bytes(self._path(rel))
        if ours != expected.encode("utf-8") or disk != ours or not self._put(rel, None, disk, None):
            return False
        self.deleted.append(page)
        return True

    def write(self, changes: list[PageChange], *, propose_conflicts: bool = True) -> WriteOutcome:
        """Apply page changes: compare-and-swap, three-way merge with a person's edits, and an
        unmergeable change proposed in REVIEW.md while the person's version stays (with
        ``propose_conflicts=False`` only reported: a review fix that no longer applies)."""
        self._propose_conflicts = propose_conflicts
        outcome = WriteOutcome()
        for change in changes:
            self._path(_page_rel(change.page))  # check every target before touching any file
        self.settle([_page_rel(c.page) for c in changes])
        for change in changes:
            self._write_page(change, outcome)
        for field_name in ("written", "merged", "unchanged", "conflicts"):
            getattr(self.outcome, field_name).extend(getattr(outcome, field_name))
        self.outcome.texts.update(outcome.texts)
        return outcome

    def _write_page(self, change: PageChange, outcome: WriteOutcome) -> None:
        rel = _page_rel(change.page)
        new = change.text.encode("utf-8")
        ours = self._ours(rel)
        if ours == new:
            outcome.unchanged.append(change.page)
            outcome.texts[change.page] = change.text
            return
        base = self._base(change, rel)
        merged = False
        if ours is None or ours == base:
            commit = new
        elif base is not None:
            text, clean = merge_texts(self.door.repo, base.decode("utf-8"), ours.decode("utf-8"), change.text)
            if not clean:
                self._check_outdated(change, ours)
                outcome.conflicts.append(self._conflict(change, ours))
                return
            commit, merged = text.encode("utf-8"), True
        else:
            self._check_outdated(change, ours)
            outcome.conflicts.append(self._conflict(change, ours))
            return
        for _attempt in range(_RETRIES):
            disk = _read_bytes(self._path(rel))
            worktree: bytes | None = commit
            if disk != ours:
                # A person typed in the page since it was settled: their text stays in the file, on
                # top of ours, and stays theirs (uncommitted) — or, if it does not merge, the change waits.
                if ours is None or disk is None:
                    outcome.conflicts.append(self._conflict(change, disk))
                    return
                text, clean = merge_texts(self.door.repo, ours.decode("utf-8"), disk.decode("utf-8"),
                                          commit.decode("utf-8"))
                if not clean:
                    outcome.conflicts.append(self._conflict(change, disk))
                    return
                worktree = text.encode("utf-8")
            if self._put(rel, commit, disk, worktree):
                outcome.written.append(change.page)
                if merged:
                    outcome.merged.append(change.page)
                outcome.texts[change.page] = commit.decode("utf-8")
                return
        raise CommitPaused(f"{rel} kept changing while wikiwright tried to write it; will try again")

    def _check_outdated(self, change: PageChange, ours: bytes) -> None:
        """Raise PlanOutdated when what the page holds now is wikiwright's own last write (another
        worker's operation committed it after this plan read the page): not a person's edit."""
        if self.replan_if_outdated and self.door.ledger.page_blob(change.page) == git_blob_id(ours):
            log.info("%s: wiki/%s.md changed by another operation since it was planned; planning again",
                     self.title, change.page)
            raise PlanOutdated(change.page)

    def _base(self, change: PageChange, rel: str) -> bytes | None:
        if change.base is not None:
            return change.base.encode("utf-8")
        blob = self.door.ledger.page_blob(change.page)
        text = self.door.repo.blob_text(blob) if blob else None
        return text.encode("utf-8") if text is not None else None

    def _conflict(self, change: PageChange, disk: bytes | None) -> Conflict:
        """The person's page stays; wikiwright's version waits in REVIEW.md for them."""
        if not self._propose_conflicts:
            return Conflict(change.page, "", f"wiki/{change.page}.md changed since this was proposed and the "
                                             "change no longer merges with it")
        proposal = reviewfile.proposal(
            "edit-conflict",
            f"[[{change.page.rsplit('/', 1)[-1]}]] changed while wikiwright worked on it "
            f"({change.reason or self.title}) and the two versions do not merge; your version was kept — "
            "tick to replace it with wikiwright's",
            pages=[change.page],
            fix={"action": FixAction.WRITE_PAGE, "page": change.page, "text": change.text,
                 "base": disk.decode("utf-8") if disk is not None else None},
            facts={"page": change.page, "text": change.text},
        )
        self.propose("edit-conflict", [proposal])
        reason = (f"wiki/{change.page}.md changed on disk while wikiwright worked on it and the change did not "
                  f"merge cleanly; your version was kept, wikiwright's version is proposed in REVIEW.md")
        log.warning("%s", reason)
        return Conflict(change.page, "REVIEW.md", reason)

    def propose(self, kind: str, items: Iterable[reviewfile.Proposal | Mapping[str, Any]],
                details: Mapping[str, list[str]] | None = None) -> list[str]:
        """Add proposals to REVIEW.md in this operation (the format: wiki/reviewfile.py); new ids.
        ``details``: lines shown under an item (by id), such as the text it quotes."""
        proposals = []
        for raw in items:
            if isinstance(raw, reviewfile.Proposal):
                proposals.append(raw if raw.kind == kind else reviewfile.Proposal(
                    raw.id, kind, raw.description, raw.pages, raw.fix, raw.options, raw.heading))
            else:
                proposals.append(reviewfile.proposal(
                    kind, str(raw["description"]), raw.get("pages", ()), raw.get("fix"), raw.get("facts"),
                    raw.get("options", ()), str(raw.get("heading", ""))))
        store = reviewfile.ReviewStore.on(self.door.ledger)
        try:
            new = list({p.id: p for p in proposals if store.get(p.id) is None}.values())
            if not new:
                return []

            def mutate(text: str | None) -> str:
                text = text if text is not None else reviewfile.HEADER
                present = reviewfile.parse_review(text)
                for p in new:
                    if p.id not in present:
                        text = reviewfile.insert_lines(text, reviewfile.heading_of(p),
                                                       [*reviewfile.render_lines(p), *(details or {}).get(p.id, [])])
                return text

            self.edit_file("REVIEW.md", mutate)
        finally:
            store.close()
        for p in new:
            self.ledger_after_commit("review_add", p.id, p.kind, p.description, list(p.pages), dict(p.fix))
        return [p.id for p in new]

    def integrate(self, head: str | None, theirs: str, tree: str, *, fast_forward: bool = False) -> list[str]:
        """Bring another machine's commit in (a sync round): this operation's commit starts from
        ``tree`` (the merged, screened tree, made from ``head`` and ``theirs``) instead of HEAD's
        and has ``theirs`` as its second parent; with ``fast_forward``, when nothing is written
        on top, HEAD moves to ``theirs`` itself. No log.md entry of its own (the merge brings
        both machines' entries). HEAD must still be ``head`` (a commit landing after the merge
        was made would be undone by its tree: CommitPaused, the next round merges again), and
        moves only from there.

        Every file that differs between HEAD and ``tree`` is written now, journaled, each only
        where it still holds HEAD's bytes (compare-and-swap; a save a person makes meanwhile is
        merged three-way where that is clean, else kept as they saved it, uncommitted); the
        pages it changed are refreshed in the catalogue. Call first, once; returns the paths
        left as a person has them."""
        if self._merge is not None or self._touched or self.kind is not OpKind.SYNC:
            # Only a sync operation's journal may name what sync brings in (raw/, logs/).
            raise WikiwrightError("integrate() comes first in a sync operation, and once")
        if self.repo.head() != head:
            raise CommitPaused("HEAD moved while syncing (a commit landed); the next round tries again")
        changes = tree_changes(self.repo, head, tree)
        contents = read_blobs(self.repo, [blob for old, new, _mode in changes.values() for blob in (old, new) if blob])
        merge = self._merge = _Merge(head, theirs, tree, fast_forward, {},
                                     {rel: (mode, new) for rel, (_old, new, mode) in changes.items()})
        plan: list[tuple[str, Path, bytes | None, bytes | None]] = []
        left: list[str] = []
        for rel, (old, new, mode) in changes.items():
            before, after = contents.get(old) if old else None, contents.get(new) if new else None
            try:
                problem = sync_problem(rel) or ("" if mode in ("100644", "100755", "000000") else f"mode {mode}")
                if problem:
                    raise UnsafePathError(problem)
                target = safe_target(self.vault.root, rel)
            except UnsafePathError as exc:
                log.error("sync: %s is not written: %s", escape_controls(rel)[:300], exc)
                left.append(rel)
                continue
            link = target.is_symlink()
            disk = None if link else _read_bytes(target)
            if link or disk != before or disk == after:
                if link or disk != after:
                    left.append(rel)
                    log.warning("sync: %s has changes of a person's that are not committed; left as it is", rel)
                self._settled[rel] = after  # the commit holds the merge's bytes; the file is the person's
                continue
            self._settled[rel] = before
            self._entry.files[rel] = FileChange(old or None, new or None)
            plan.append((rel, target, before, after))
        self.door.journal.save(self._entry)
        # Removals first (a folder the remote turned into a file is emptied before the file lands).
        for rel, target, before, after in sorted(plan, key=lambda item: item[3] is not None):
            try:
                if after is not None:
                    target.parent.mkdir(parents=True, exist_ok=True)
                if atomic_replace_if(target, after, before):
                    if after is None:
                        self._prune_empty(target.parent)
                elif after is None or before is None or not self._merge_late_save(rel, target, before, after):
                    self._leave(rel, after)
                    left.append(rel)
                    log.warning("sync: %s was saved by a person while the round ran; left as it is", rel)
                    continue
            except OSError as exc:
                self._leave(rel, after)
                left.append(rel)
                log.warning("sync: %s could not be written (%s); left as it is", escape_controls(rel)[:300], exc)
                continue
            self._touched[rel] = _Touched(after)
            merge.written[rel] = new or None
        crash_point("sync-files-written")
        pages = [rel[5:-3] for rel in changes if rel.startswith("wiki/") and rel.endswith(".md")]
        if pages:
            self.catalog.refresh(pages)
            # Pages new to this machine: what the merge commits is the base of its next change
            # (the committed blob, never the file: a person may have typed there since).
            blobs = {page: changes[f"wiki/{page}.md"][1] for page in pages
                     if changes[f"wiki/{page}.md"][1] and self.ledger.page_blob(page) is None}
            if blobs:
                self.ledger_after_commit("set_page_blobs", blobs)
        return left

    def _leave(self, rel: str, after: bytes | None) -> None:
        """A merged file the round did not write (a person's save): out of the journal."""
        self._entry.files.pop(rel, None)
        self._settled[rel] = after
        self.door.journal.save(self._entry)

    def _merge_late_save(self, rel: str, target: Path, base: bytes, remote: bytes) -> bool:
        """A person saved ``target`` while the round wrote it: their text and the remote's, merged
        three-way where that is clean (the file then holds both; their part stays theirs,
        uncommitted, on top of the merge); else their file is left exactly as they saved it."""
        change = self._entry.files[rel]
        for _attempt in range(3):
            disk = _read_bytes(target)
            if disk is None:
                return False
            try:
                merged, clean = merge_texts(self.repo, base.decode("utf-8"), disk.decode("utf-8"),
                                            remote.decode("utf-8"))
            except UnicodeDecodeError:
                return False
            if not clean:
                return False
            data = merged.encode("utf-8")
            change.disk_before, change.disk_after = self.repo.store_bytes(disk), git_blob_id(data)
            self.door.journal.save(self._entry)
            if atomic_replace_if(target, data, disk):
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

    def add_paths(self, rels: Iterable[str]) -> None:
        """Commit these files (e.g. ``raw/x.md``) in this operation's commit, as they are on disk."""
        self._extra += [rel for rel in rels if rel not in self._extra]

    def rebuild_index(self) -> None:
        """Rebuild index.md at the end from every catalogue entry, even if no page changed."""
        self._index_wanted = True

    def ledger_after_commit(self, method: str, *args: Any) -> None:
        """A ledger call made once the commit exists, journaled so a crash cannot lose it;
        an argument equal to :data:`COMMIT` is replaced by the commit's sha. ``review_set_state``
        (item id, state, note, sha) updates a REVIEW.md proposal's answer the same way."""
        if method not in _LEDGER_CALLS:
            raise ValueError(f"not a journaled ledger call: {method}")
        self._entry.ledger.append([method, list(args)])

    def apply_after_commit(self, delta: StateDelta) -> None:
        """A change to state outside state.db (the term index), made once the commit exists, right
        after the ledger calls and before the journal is cleared; journaled, so a crash after
        the commit cannot lose it (recovery makes it again). Never made when the operation
        does not commit."""
        self.door.sink(delta.sink)  # a door that could not make it refuses it now, not after the commit
        self._entry.deltas.append([delta.sink, delta.to_json()])

    def after_commit(self, callback: Callable[[str | None], None]) -> None:
        """Called with the commit sha (None: nothing was committed) after the commit and the
        journaled ledger calls. Not journaled: what it records must be recoverable otherwise."""
        self._callbacks.append(callback)

    # -- the end -----------------------------------------------------------------------------

    def _pages_changed(self) -> list[str]:
        # A fast-forward takes the remote's index.md as it is: its own pages rebuild nothing.
        taken = self._merge.written if self._merge is not None and self._merge.fast_forward else {}
        return [rel[5:-3] for rel in self._touched if rel.startswith("wiki/") and rel.endswith(".md")
                and rel != INDEX_PAGE and not is_log_file(rel) and rel not in taken]

    def _finish(self) -> None:
        door = self.door
        changed = self._pages_changed()
        index_too = bool(changed or self.deleted or self._index_wanted)
        if self._touched or self._extra or self.always_log:
            self.settle([INDEX_PAGE, LOG_PAGE] if index_too else [LOG_PAGE])  # one git call
        if index_too:
            door.catalog.refresh(sorted({*changed, *self.deleted}) or None)
            self._write_index()
        crash_point("door-after-index")
        if not self._touched and not self._extra and not self.always_log and self._merge is None:
            if self._entry.index:  # only the person's edits were committed (journaled for their index)
                door.journal.clear()
            self._run_callbacks(None)
            return
        if self._merge is None:  # a merge brings both machines' log.md entries, and adds none
            entry = log_entry(self.kind.value, self.title, self.details, self.today)
            self.edit_file(LOG_PAGE, lambda text: appended_log(text, entry))
        archive = plan_archive(self.read_file(LOG_PAGE), self.vault.wiki / ARCHIVE_FOLDER)
        if archive is not None:  # log.md over its bound: its oldest entries move, written once (wiki/logfile.py)
            self.edit_file(archive.rel, lambda _text: archive.text)
            self.edit_file(LOG_PAGE, archive.trim)
        crash_point("door-after-log")
        trailers = {"Wikiwright-Operation": self.kind.value, **self.trailers}
        pages = sorted({*self.outcome.written, *self.outcome.unchanged, *self.deleted})
        if pages:
            trailers.setdefault("Wikiwright-Pages", ", ".join(_page_rel(p) for p in pages))
        if self.outcome.conflicts:
            trailers.setdefault("Wikiwright-Conflicts", ", ".join(c.page for c in self.outcome.conflicts))
        trailers["Wikiwright-Op"] = self.id
        contents = {rel: t.ours for rel, t in self._touched.items()}
        for rel in self._extra:
            if rel not in contents:
                contents[rel] = _read_bytes(door.vault.root / rel)
        blobs = {page: git_blob_id(text.encode("utf-8")) for page, text in self.outcome.texts.items()}
        index = self._touched.get("wiki/index.md")
        if index is not None and index.ours is not None:
            blobs["index"] = git_blob_id(index.ours)
        self._entry.page_blobs = blobs  # journaled with the HEAD move, just before HEAD moves
        subject = f"{self.kind.value}: {self.title}"
        if self._merge is None:
            self.commit_sha = door.repo.commit_contents(contents, subject, trailers, self.body,
                                                        before_move=self._journal_move)
        else:
            self.commit_sha = self._commit_merge(contents, format_message(subject, trailers, self.body))
        crash_point("door-after-commit")
        door._record(blobs, self._entry.ledger, self.commit_sha or "")
        for name, payload in self._entry.deltas:
            door.sink(name).apply_journaled(payload)
        crash_point("door-before-journal-clear")
        door.journal.clear()
        self._run_callbacks(self.commit_sha)

    def _commit_merge(self, contents: Mapping[str, bytes | None], message: str) -> str:
        """The merge's commit (two parents), or HEAD moved to the remote's commit (a fast-forward
        with nothing of ours on top); the expected HEAD move journaled before HEAD moves."""
        merge = self._merge
        assert merge is not None
        stored = {rel: self.repo.store_bytes(data) if data is not None else None for rel, data in contents.items()}
        # Only what the operation wrote on top of the merged tree (which holds the merge's own files).
        stored = {rel: blob for rel, blob in stored.items() if rel not in merge.written or merge.written[rel] != blob}

        return commit_merge(self.repo, merge.head, merge.tree, stored, message, theirs=merge.theirs,
                            fast_forward=merge.fast_forward, merged=merge.changed,
                            in_person_index=lambda rel: not sync_problem(rel),
                            before_move=self._journal_move)

    def _run_callbacks(self, sha: str | None) -> None:
        for callback in self._callbacks:
            callback(sha)

    def _write_index(self) -> None:
        door = self.door
        # From the pages whose catalogue rows changed since the last commit (wiki/index.py);
        # rebuild_index() asks for every entry read again.
        rendered = index_builder(door.catalog).render(full=self._index_wanted)
        self._write_group_indexes(rendered)
        block = rendered.block
        last = door.ledger.page_blob("index")
        previous = block_of(door.repo.blob_text(last) or "") if last else ""

        def mutate(text: str | None) -> str:
            current = text if text is not None else empty_page("index")
            return splice_index(current, block, previous or block_of(current))

        self.edit_file("wiki/index.md", mutate)

    def _write_group_indexes(self, rendered: IndexPages) -> None:
        """The group pages (and their parts) index.md links to when it is too large for one page
        whose block changed (a person's text outside the block kept); one no longer needed is removed."""
        for name, group_block in rendered.pages.items():
            def mutate(text: str | None, name: str = name, group_block: str = group_block) -> str:
                if text is None:
                    return new_group_page(name, group_block)
                return splice_index(text, group_block, block_of(text))

            self.edit_file(f"wiki/{name}.md", mutate)
        gone = group_page_names(self.vault.wiki) if rendered.dropped is None else sorted(rendered.dropped)
        for name in gone:
            text = None if name in rendered.kept else self.read(name)
            if text is not None and text.startswith("---\ntype: index\n"):
                self.delete_page(name, text)

    def _roll_back(self) -> None:
        """The operation failed before its commit: every file it wrote gets its earlier text."""
        entry = self.door.journal.load()
        if entry is None or entry.op_id != self.id:
            return
        if entry.index:
            self.door.repo.finish_index_entries(entry.index)
        landed = self.door._landed(entry)
        if landed:
            self.door._roll_forward(entry, landed)
        else:
            self.door._restore(entry)
        self.door.journal.clear()
        pages = [rel[5:-3] for rel in entry.files if rel.startswith("wiki/") and rel.endswith(".md")]
        if pages:
            self.door.catalog.refresh(pages)


def _decode(data: bytes | None) -> str | None:
    return data.decode("utf-8", "surrogateescape") if data is not None else None


def _encode(text: str | None) -> bytes | None:
    return text.encode("utf-8", "surrogateescape") if text is not None else None
