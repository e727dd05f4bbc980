"""The operation journal: what an operation is about to change, so a crash ends in all or nothing.

One operation at a time holds the vault's write lock, so one file serves every process:
``.wikiwright/journal.json``. It is written (fsync, rename) before the first file of the
vault changes and each time the operation touches another file, and removed after the commit
and the ledger updates that follow it. For every file it names the blob the file held before
(always committed: the person's edits are committed first) and the blob the operation
writes, so recovery can tell the operation's text from anything else.

Recovery (when a door opens, under the write lock): if the operation's commit landed
(``Wikiwright-Op: <id>`` in history) it is rolled forward — the ledger updates the journal
names are made — else every file still holding the operation's text gets its earlier text
back. Both are idempotent, so a second crash during recovery is recovered the same way.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.crashpoints import crash_point
from ..core.fsutil import atomic_write_text

log = logging.getLogger(__name__)

JOURNAL_FILE = "journal.json"


@dataclass
class FileChange:
    before: str | None  # blob id the commit builds on (committed; None: the file did not exist)
    after: str | None  # blob id the commit holds (None: the operation removes the file)
    # The file itself, when a person typed in it after it was settled: what it held just before
    # the write (kept in the object store) and what was written (``after`` on top of their text).
    disk_before: str | None = None
    disk_after: str | None = None


@dataclass
class JournalEntry:
    op_id: str
    kind: str
    title: str
    files: dict[str, FileChange] = field(default_factory=dict)
    # Ledger calls to make once the commit exists: [method, args]; "@commit" stands for its sha.
    ledger: list[list[Any]] = field(default_factory=list)
    page_blobs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({
            "id": self.op_id, "kind": self.kind, "title": self.title,
            "files": {rel: [c.before, c.after, c.disk_before, c.disk_after] for rel, c in self.files.items()},
            "ledger": self.ledger, "page_blobs": self.page_blobs,
        }, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> JournalEntry:
        data = json.loads(text)
        return cls(str(data["id"]), str(data["kind"]), str(data.get("title", "")),
                   {rel: FileChange(*row) for rel, row in data.get("files", {}).items()},
                   list(data.get("ledger", [])), dict(data.get("page_blobs", {})))


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / JOURNAL_FILE

    def save(self, entry: JournalEntry) -> None:
        atomic_write_text(self.path, entry.to_json(), crash_hooks=False)
        crash_point("door-journal-saved")

    def load(self) -> JournalEntry | None:
        try:
            return JournalEntry.from_json(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # Only a torn write could do this, and the journal is written by rename: keep a copy.
            log.error("the operation journal %s is unreadable (%s); set aside as %s.bad", self.path, exc, self.path)
            self.path.replace(self.path.with_suffix(".json.bad"))
            return None

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
