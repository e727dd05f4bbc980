"""REVIEW.md: the format, the stable ids, parsing answers, and the proposal store.

Its one writer is the door (``op.propose`` and ``op.edit_file("REVIEW.md", …)``, with the
text functions here: :func:`insert_lines`, :func:`replace_line`, :func:`render_lines`), so
every change to it is journaled, compare-and-swapped and committed like any other::

    from ..wiki.reviewfile import Option, Proposal, proposal

    p = proposal("held-back", "`raw/x.md` → [[page]]: reason — proposed …",
                 pages=["page"], fix={"action": "apply-op", ...}, facts={...})
    op.propose("held-back", [p])                   # REVIEW.md in the operation's commit, the
                                                   # store's row made after it (journaled)

    answers = read_answers(vault, store)           # what a person ticked, for upkeep/review.py

The format. A proposal is one checkbox line under a ``## <heading>`` section, ending in an
Obsidian block id: ``- [ ] text ^<kind>-<10 hex>``. The id is a hash of the proposal's kind
and the facts that make it (never line numbers), so the same proposal is never added twice.
A proposal may offer *options*, one indented checkbox each, ``  - [ ] text ^<id>-<key>``:
a claim conflict lists every value (``v1``, ``v2``, …) and ``both`` ("keep both, scoped").

Answers. ``- [x]`` on the line (or on an option) approves; ``- [-]`` rejects; deleting the
line rejects. The daemon owns only lines whose id it wrote (the ``review_items`` table of the
state database); every other line belongs to the person and is never changed.

Bad bytes. REVIEW.md is read with ``surrogateescape`` and written back the same way, so a
byte that is not UTF-8 is kept exactly as the person left it; :func:`read_review` reports the
lines holding one (status shows a notice) and answers on the other lines still count.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.locks import vault_write_lock
from ..core.secrets import redact
from ..core.sqlitedb import Schema, migrate_on, open_db
from ..core.vault import Vault
from ..intake.ledger import Ledger

log = logging.getLogger(__name__)

HEADER = "# Review\n\nProposals waiting for a person. Tick `- [x]` to approve, mark `- [-]` to reject.\n"
HELD_BACK = "held-back"
# Headings of the kinds proposed outside lint (lint passes its own with each proposal).
HEADINGS = {HELD_BACK: "Held back by ingest checks", "prose-contradiction": "Contradictions in prose",
            "consolidation": "Consolidation", "edit-conflict": "Edit conflicts"}
SUPPRESSED_STATES = ("rejected", "dismissed")
NOTICE_KEY = "review-file"
_ID = r"[a-z][a-z0-9-]*-[0-9a-f]{10}"
_ITEM_RE = re.compile(
    rf"^(?P<lead>[ \t]*[-*+][ \t]*)\[(?P<mark>[^\]\n]{{0,3}})\](?P<text>.*?)[ \t]+\^(?P<id>{_ID})[ \t]*$"
)
_OPTION_RE = re.compile(
    rf"^(?P<lead>[ \t]*[-*+][ \t]*)\[(?P<mark>[^\]\n]{{0,3}})\](?P<text>.*?)"
    rf"[ \t]+\^(?P<id>{_ID})-(?P<key>[a-z][a-z0-9]{{0,7}})[ \t]*$"
)
_HEADING_RE = re.compile(r"^#{1,6}[ \t]")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS review_items (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    description TEXT NOT NULL,
    pages TEXT NOT NULL DEFAULT '[]',
    fix TEXT NOT NULL DEFAULT '{}',    -- JSON: what approving does; {} = nothing to apply
    state TEXT NOT NULL,               -- open | applied | dismissed | rejected | resolved
    note TEXT NOT NULL DEFAULT '',
    commit_sha TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
"""


def proposal_id(kind: str, facts: Mapping[str, Any]) -> str:
    """``<kind>-<10 hex>``: a hash of the kind and the facts, never of line numbers."""
    blob = json.dumps([kind, facts], sort_keys=True, ensure_ascii=False, default=str)
    return f"{kind}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:10]}"


@dataclass(frozen=True)
class Option:
    """One answer a person can tick under a proposal (``key``: ``v1``, ``both``, …)."""

    key: str
    text: str


@dataclass(frozen=True)
class Proposal:
    id: str
    kind: str
    description: str
    pages: tuple[str, ...] = ()
    fix: Mapping[str, Any] = field(default_factory=dict)
    options: tuple[Option, ...] = ()
    heading: str = ""  # the REVIEW.md section; default: HEADINGS[kind]


def proposal(kind: str, description: str, pages: Iterable[str] = (), fix: Mapping[str, Any] | None = None,
             facts: Mapping[str, Any] | None = None, options: Iterable[Option] = (), heading: str = "") -> Proposal:
    """A proposal whose id is a hash of ``kind`` and ``facts`` (default: description and pages)."""
    pages = tuple(pages)
    facts = facts if facts is not None else {"description": description, "pages": list(pages)}
    # REVIEW.md is committed: a secret quoted by a proposal (a held-back operation, a file name)
    # shows as its kind (the id still hashes the facts, so answers stay matched).
    options = tuple(Option(o.key, redact(o.text)) for o in options)
    return Proposal(proposal_id(kind, facts), kind, redact(" ".join(description.split())), pages, dict(fix or {}),
                    options, heading)


def heading_of(item: Proposal) -> str:
    return item.heading or HEADINGS.get(item.kind) or item.kind.replace("-", " ").capitalize()


# -- parsing ---------------------------------------------------------------------------------

def _answer(mark: str) -> str:
    mark = mark.strip().lower()
    if mark in ("x", "✓", "✔"):
        return "approve"
    if mark in ("-", "~"):
        return "reject"
    return "open"


@dataclass(frozen=True)
class ReviewLine:
    id: str
    mark: str
    text: str
    number: int  # 0-based line index
    options: tuple[tuple[str, str], ...] = ()  # (option key, mark) in file order

    @property
    def answer(self) -> str:
        return _answer(self.mark)

    @property
    def chosen(self) -> tuple[str, ...]:
        """The option keys a person ticked."""
        return tuple(key for key, mark in self.options if _answer(mark) == "approve")


def parse_review(text: str) -> dict[str, ReviewLine]:
    """Our proposal lines by id (the first line wins if a person copied one), with their options."""
    found: dict[str, ReviewLine] = {}
    options: dict[str, list[tuple[str, str]]] = {}
    for number, line in enumerate(text.splitlines()):
        option = _OPTION_RE.match(line)
        if option:
            picked = options.setdefault(option.group("id"), [])
            if option.group("key") not in {k for k, _ in picked}:
                picked.append((option.group("key"), option.group("mark")))
            continue
        match = _ITEM_RE.match(line)
        if match and match.group("id") not in found:
            found[match.group("id")] = ReviewLine(
                match.group("id"), match.group("mark"), match.group("text").strip(), number
            )
    for ident, picked in options.items():
        if ident in found:
            item = found[ident]
            found[ident] = ReviewLine(item.id, item.mark, item.text, item.number, tuple(picked))
    return found


@dataclass(frozen=True)
class ReviewText:
    """REVIEW.md as read: ``text`` keeps undecodable bytes as surrogates (written back unchanged)."""

    text: str | None  # None: there is no REVIEW.md
    bad_lines: tuple[int, ...] = ()  # 1-based lines holding bytes that are not UTF-8

    @property
    def notice(self) -> str:
        if not self.bad_lines:
            return ""
        shown = ", ".join(str(n) for n in self.bad_lines[:5]) + (" …" if len(self.bad_lines) > 5 else "")
        return (f"REVIEW.md has bytes that are not UTF-8 on line(s) {shown}; they are kept as they are and "
                f"answers on the other lines still count (save the file as UTF-8 to clear this)")


def decode(data: bytes) -> ReviewText:
    text = data.decode("utf-8", errors="surrogateescape")
    bad: tuple[int, ...] = ()
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        bad = tuple(n for n, row in enumerate(text.splitlines(), start=1)
                    if any("\udc80" <= ch <= "\udcff" for ch in row))
    return ReviewText(text, bad)


def read_review(vault: Vault) -> ReviewText:
    try:
        data = vault.review_file.read_bytes()
    except FileNotFoundError:
        return ReviewText(None)
    return decode(data)


# -- rendering and editing ---------------------------------------------------------------------

def render_lines(item: Proposal) -> list[str]:
    lines = [f"- [ ] {' '.join(item.description.split())} ^{item.id}"]
    lines += [f"    - [ ] {' '.join(o.text.split())} ^{item.id}-{o.key}" for o in item.options]
    return lines


def render_line(item: Proposal) -> str:
    return render_lines(item)[0]


def insert_lines(text: str, heading: str, lines: list[str]) -> str:
    """Add ``lines`` at the end of the ``## heading`` section (made at the end if missing)."""
    rows = text.splitlines()
    title = f"## {heading}"
    start = next((i for i, row in enumerate(rows) if row.strip().casefold() == title.casefold()), None)
    if start is None:
        while rows and not rows[-1].strip():
            rows.pop()
        rows += ["", title, "", *lines]
        return "\n".join(rows) + "\n"
    end = next((i for i in range(start + 1, len(rows)) if _HEADING_RE.match(rows[i])), len(rows))
    last = end
    while last > start + 1 and not rows[last - 1].strip():
        last -= 1
    if last == start + 1:
        rows[last:last] = ["", *lines]
    else:
        rows[last:last] = lines
    return "\n".join(rows) + "\n"


def replace_line(text: str, item_id: str, make: Callable[[ReviewLine], str]) -> str:
    line = parse_review(text).get(item_id)
    if line is None:
        return text
    rows = text.splitlines(keepends=True)
    ending = "\n" if rows[line.number].endswith("\n") else ""
    rows[line.number] = make(line) + ending
    return "".join(rows)


def review_lock(vault: Vault) -> contextlib.AbstractContextManager[None]:
    """One writer of REVIEW.md (and of pages and commits) at a time: the vault's write lock."""
    return vault_write_lock(vault.state)


def struck(note: str) -> Callable[[ReviewLine], str]:
    def make(line: ReviewLine) -> str:
        return f"- [x] ~~{line.text}~~ — {note} ^{line.id}"

    return make


def line_with_note(line: ReviewLine, note: str) -> str:
    return f"- [x] {line.text} — {note} ^{line.id}"


# -- the store ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    id: str
    kind: str
    description: str
    pages: tuple[str, ...]
    fix: dict[str, Any]
    state: str


_REVIEW_SCHEMA = Schema("review", 1, _SCHEMA)


class ReviewStore:
    """The ``review_items`` table in the state database: every proposal and its answer."""

    def __init__(self, db_path: Path) -> None:
        self._db = open_db(db_path, _REVIEW_SCHEMA)
        self._lock = threading.RLock()
        self._owned = True

    @classmethod
    def on(cls, ledger: Ledger) -> ReviewStore:
        """The store on the ledger's own connection (its lock too): a long-lived store in the
        daemon adds no connection to state.db. Closing it leaves the ledger's open. The review
        tables are brought to their version once per ledger, on that connection."""
        store = cls.__new__(cls)
        store._db, store._lock = ledger.shared_connection()
        store._owned = False
        if getattr(ledger, "_review_schema_checked", False) is not True:
            with store._lock:  # on the ledger's connection: no second one (nor its descriptor) to state.db
                migrate_on(store._db, ledger.path, _REVIEW_SCHEMA)
        ledger._review_schema_checked = True  # type: ignore[attr-defined]
        return store

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._db.close()

    def get(self, item_id: str) -> Item | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, kind, description, pages, fix, state FROM review_items WHERE id=?", (item_id,)
            ).fetchone()
        return self._item(row) if row else None

    @staticmethod
    def _item(row: tuple[Any, ...]) -> Item:
        return Item(row[0], row[1], row[2], tuple(json.loads(row[3])), json.loads(row[4]), row[5])

    def items(self, state: str | None = None) -> list[Item]:
        query = "SELECT id, kind, description, pages, fix, state FROM review_items"
        args: tuple[str, ...] = ()
        if state:
            query += " WHERE state=?"
            args = (state,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY created_at, id", args).fetchall()
        return [self._item(r) for r in rows]

    def ids(self, states: Iterable[str]) -> set[str]:
        wanted = list(states)
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._db.execute(f"SELECT id FROM review_items WHERE state IN ({marks})", wanted).fetchall()
        return {r[0] for r in rows}

    def add(self, item: Proposal) -> None:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO review_items(id, kind, description, pages, fix, state, created_at, updated_at)"
                " VALUES (?,?,?,?,?,'open',?,?)",
                (item.id, item.kind, item.description, json.dumps(list(item.pages)),
                 json.dumps(dict(item.fix), default=str), now, now),
            )

    def set_state(self, item_id: str, state: str, note: str = "", commit_sha: str = "") -> None:
        with self._lock:
            self._db.execute(
                "UPDATE review_items SET state=?, note=?, commit_sha=?, updated_at=? WHERE id=?",
                (state, note, commit_sha, time.time(), item_id),
            )


# -- reading answers ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    item: Item
    verdict: str  # approve | reject
    why: str = ""  # for a rejection: how the person said no
    chosen: tuple[str, ...] = ()  # the option keys ticked


def answers(text: str, open_items: Iterable[Item]) -> list[Answer]:
    """What a person answered to the ``open_items`` in REVIEW.md's ``text``, in store order.

    A ticked option approves (unless the line itself is marked ``[-]``); a deleted line
    rejects. Proposals still unanswered are left out.
    """
    lines = parse_review(text)
    found: list[Answer] = []
    for item in open_items:
        line = lines.get(item.id)
        if line is None:
            found.append(Answer(item, "reject", "its line was removed from REVIEW.md"))
        elif line.answer == "reject":
            found.append(Answer(item, "reject", "marked [-] in REVIEW.md"))
        elif line.answer == "approve" or line.chosen:
            found.append(Answer(item, "approve", "", line.chosen))
    return found
