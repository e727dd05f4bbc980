"""The operation journal: what an operation is about to change, so a crash ends in all or nothing.

One operation at a time holds the vault's write lock, so one file serves every process:
``.wikiwright/journal.json``. It is written (fsync, rename) before the first file of the
vault changes and each time the operation writes a file, and removed after the commit and
the ledger updates that follow it. For every file it names the blob the file held before
(always committed: the person's edits are committed first) and the blob the operation
writes (stored before the file is written), and, while a second write of the same file has
not landed, the blob of the first: so recovery can tell the operation's text from anything
else, and take it out of a file a person typed in after the crash (a reverse three-way merge).

Just before HEAD moves, the journal names the move (``head: [old, new]``: the operation's own
commit, a sync round's merge commit, or the remote's commit a fast-forward takes) and the
entries the person's git index still has to record (``index``: path -> blob; also for the
commits of a person's edits the operation makes first), so one journal covers the files, the
commit and the person's index: no second file for any of them.

Recovery (when a door opens, under the write lock): the person's index gets every ``index``
entry HEAD holds; if the operation's commit landed (HEAD at the expected move's commit or past
it; a journal without a move: ``Wikiwright-Op: <id>`` in history) it is rolled forward — the
ledger updates and the state deltas (the term index's: :mod:`.deltas`) the journal names are
made — else every file still holding the operation's text gets its earlier text back (and no
delta is made: a plan set aside changes no state). All of it is idempotent, so a second crash during recovery is
recovered the same way.

A journal is replayed only when every file it names is one the door writes (``wiki/**.md``,
``REVIEW.md``, ``SCHEMA.md``, ``.gitignore``; for a sync round, what sync may bring from
another machine: :func:`~wikiwright.core.vaultpaths.sync_problem`; no symbolic link on the
way) and every blob is a blob id: a journal from anywhere else (a synced or forged file) is
set aside as ``journal.json.refused``, never replayed, and :attr:`Journal.refused` says why.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.crashpoints import crash_point
from ..core.errors import UnsafePathError
from ..core.fsutil import atomic_write_text
from ..core.opkinds import OpKind
from ..core.vaultpaths import ROOT_FILES, safe_target, sync_problem

log = logging.getLogger(__name__)

JOURNAL_FILE = "journal.json"
# An earlier release's sync round kept a journal of its own; one a crash left is read once, as
# the door's entry of a sync operation (then checked and replayed, or refused, like any other).
LEGACY_SYNC_JOURNAL = "sync-journal.json"
_BLOB_RE = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class FileChange:
    before: str | None  # blob id the commit builds on (committed; None: the file did not exist)
    after: str | None  # blob id the commit holds (None: the operation removes the file)
    # The file itself, when a person typed in it after it was settled: what it held just before
    # the write (kept in the object store) and what was written (``after`` on top of their text).
    disk_before: str | None = None
    disk_after: str | None = None
    # What this operation's earlier write of the file put there, while a later write of it (the
    # index rebuilt after a merge wrote it, a second REVIEW.md item) may not have landed yet.
    replaced: str | None = None

    def written(self) -> list[str]:
        """The blobs this operation may have left in the file (newest first), in the object store."""
        latest = self.disk_after if self.disk_after is not None else self.after
        return [blob for blob in dict.fromkeys((latest, self.replaced)) if blob is not None]


@dataclass
class JournalEntry:
    op_id: str
    kind: str
    title: str
    files: dict[str, FileChange] = field(default_factory=dict)
    # Ledger calls to make once the commit exists: [method, args]; "@commit" stands for its sha.
    ledger: list[list[Any]] = field(default_factory=list)
    page_blobs: dict[str, str] = field(default_factory=dict)
    # HEAD's expected move [old ('' for none), new], named just before it moves.
    head_move: list[str] = field(default_factory=list)
    # What the person's git index still has to record of the last commit made (path -> blob id).
    index: dict[str, str | None] = field(default_factory=dict)
    # State outside state.db to change once the commit exists: [sink name, delta] (door/deltas.py).
    deltas: list[list[Any]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({
            "id": self.op_id, "kind": self.kind, "title": self.title,
            "files": {rel: [c.before, c.after, c.disk_before, c.disk_after, *([c.replaced] if c.replaced else [])]
                      for rel, c in self.files.items()},
            "ledger": self.ledger, "page_blobs": self.page_blobs,
            **({"head": self.head_move} if self.head_move else {}),
            **({"index": self.index} if self.index else {}),
            **({"deltas": self.deltas} if self.deltas else {}),
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> JournalEntry:
        data = json.loads(text)
        return cls(str(data["id"]), str(data["kind"]), str(data.get("title", "")),
                   {rel: FileChange(*row) for rel, row in data.get("files", {}).items()},
                   list(data.get("ledger", [])), dict(data.get("page_blobs", {})), list(data.get("head", [])),
                   dict(data.get("index", {})), list(data.get("deltas", [])))


def entry_problem(root: Path, entry: JournalEntry) -> str:
    """Why the door must not replay ``entry`` ('' when it may): a file it does not write, or a
    value that is not a blob id."""
    if entry.head_move and not (len(entry.head_move) == 2 and all(
            isinstance(sha, str) and (sha == "" or _BLOB_RE.match(sha)) for sha in entry.head_move)):
        return "its expected HEAD move is not two commit ids"
    for delta in entry.deltas:
        if not (isinstance(delta, list) and len(delta) == 2 and isinstance(delta[0], str)
                and isinstance(delta[1], dict)):
            return f"its state deltas hold {str(delta)[:60]!r}, not a sink's name and a delta"
    for rel, blob in entry.index.items():
        parts = rel.split("/")
        if rel.startswith("/") or "\0" in rel or parts[0] == ".wikiwright" or any(
                part in ("", ".", "..") or part.casefold().rstrip(" .") == ".git" for part in parts):
            return f"its index entries name {rel[:200]!r}, not a path in the vault"
        if blob is not None and not (isinstance(blob, str) and _BLOB_RE.match(blob)):
            return f"its index entry for {rel[:200]!r} holds {str(blob)[:60]!r}, not a blob id"
    for rel, change in entry.files.items():
        if entry.kind == OpKind.SYNC.value:
            problem = sync_problem(rel)
            if problem:
                return f"it names {rel[:200]!r}, which sync never writes ({problem})"
        elif not (rel in ROOT_FILES or (rel.startswith("wiki/") and rel.endswith(".md"))):
            return f"it names {rel[:200]!r}, which the door never writes"
        try:
            safe_target(root, rel)
        except UnsafePathError as exc:
            return str(exc)[:300]
        for blob in (change.before, change.after, change.disk_before, change.disk_after, change.replaced):
            if blob is not None and not (isinstance(blob, str) and _BLOB_RE.match(blob)):
                return f"its entry for {rel[:200]!r} holds {str(blob)[:60]!r}, not a blob id"
    return ""


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / JOURNAL_FILE
        self.refused = ""  # why the last journal loaded was refused

    def save(self, entry: JournalEntry) -> None:
        atomic_write_text(self.path, entry.to_json(), crash_hooks=False)
        crash_point("door-journal-saved")

    def load(self) -> JournalEntry | None:
        if not self.path.exists() and self._legacy_sync_entry() is None:
            return None
        try:
            entry = JournalEntry.from_json(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # Only a torn write could do this, and the journal is written by rename: keep a copy.
            log.error("the operation journal %s is unreadable (%s); set aside as %s.bad", self.path, exc, self.path)
            self.path.replace(self.path.with_suffix(".json.bad"))
            return None
        problem = entry_problem(self.path.parent.parent, entry)
        if problem:
            self.refused = problem
            log.error("the operation journal %s was refused and not replayed: %s; set aside as %s.refused",
                      self.path, problem, self.path.with_suffix(".json"))
            self.path.replace(self.path.with_suffix(".json.refused"))
            return None
        return entry

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def _legacy_sync_entry(self) -> JournalEntry | None:
        """The journal an earlier release's sync round left (``{"old_head", "commit", "paths":
        {path: [blob before, blob written]}}``), as the door's entry: written as journal.json
        first, so a crash while it is recovered finds it there. A file it cannot read as one is
        kept aside as ``.refused``."""
        legacy = self.path.parent / LEGACY_SYNC_JOURNAL
        try:
            data = json.loads(legacy.read_text(encoding="utf-8"))
            files = {}
            for rel, (before, after) in dict(data.get("paths", {})).items():
                if "?" in (before, after):
                    continue  # a file the round had not written yet (index.md, REVIEW.md)
                files[str(rel)] = FileChange(str(before) or None, str(after) or None)
            commit = str(data.get("commit") or "")
            head = [str(data.get("old_head") or ""), commit] if commit else []
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, AttributeError) as exc:
            self.refused = f"an earlier release's sync journal that is not one ({exc})"[:300]
            legacy.replace(legacy.with_suffix(".json.refused"))
            return None
        entry = JournalEntry(f"sync-{legacy.stat().st_mtime_ns}", "sync", "a sync round of an earlier release",
                             files, head_move=head)
        self.save(entry)
        legacy.unlink()
        return entry
