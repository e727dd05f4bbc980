"""The durable job queue and source ledger (SQLite, WAL).

``files`` has one row per file seen in ``raw/`` or ``logs/``: its content hash and its one
recorded state. A ``pending`` row is the queue entry; ``running`` only while a worker holds
it (reset to ``pending`` at start, so a restart resumes the work). ``sources`` has one row
per ingested content hash: the same bytes under two names are one ingest plus a
``duplicate`` record. ``notices`` holds the pauses and warnings ``status`` shows.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..core.crashpoints import crash_point
from ..core.sqlitedb import Schema, open_db


class FileState(StrEnum):
    """Where a file in raw/ or logs/ stands (rule 1: each ends in one recorded final state)."""

    PENDING = "pending"  # queued (with a reason when it waits for something)
    RUNNING = "running"  # a worker holds it
    INGESTED = "ingested"
    DUPLICATE = "duplicate"
    QUARANTINED = "quarantined"
    SKIPPED = "skipped"


class SourceState(StrEnum):
    """What became of an ingested source's pages (the sources table)."""

    INGESTED = "ingested"
    REVERTED = "reverted"
    RETRACTED = "retracted"


STATES = tuple(FileState)
# The keys sync keeps its state under (written by door/sync.py, read by status without the door).
SYNC_STATE_KEY = "sync.state"
SYNC_REFUSED_KEY = "sync.refused"
FINAL_STATES = (FileState.INGESTED, FileState.DUPLICATE, FileState.QUARANTINED, FileState.SKIPPED)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,            -- vault-relative, e.g. raw/notes.md
    kind TEXT NOT NULL,               -- raw | log
    sha256 TEXT NOT NULL DEFAULT '',
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',  -- why quarantined / skipped rule / what it duplicates
    commit_sha TEXT NOT NULL DEFAULT '',
    page TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    recovering INTEGER NOT NULL DEFAULT 0,
    seen_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS files_state ON files(state, not_before, seen_at);
CREATE INDEX IF NOT EXISTS files_sha ON files(sha256);
CREATE TABLE IF NOT EXISTS sources (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    page TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    commit_sha TEXT NOT NULL,
    engine TEXT NOT NULL,
    ingested_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'ingested'  -- ingested | reverted | retracted
);
CREATE TABLE IF NOT EXISTS page_bindings (
    page TEXT PRIMARY KEY,            -- page name under wiki/, e.g. sources/src-notes
    path TEXT NOT NULL UNIQUE         -- the raw/ path it summarises
);
CREATE TABLE IF NOT EXISTS page_blobs (
    page TEXT PRIMARY KEY,            -- page name under wiki/
    blob TEXT NOT NULL                -- git blob id of what the daemon last wrote there
);
CREATE TABLE IF NOT EXISTS notices (
    key TEXT PRIMARY KEY,
    message TEXT NOT NULL,
    since REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class FileRecord:
    path: str
    kind: str
    sha256: str
    size: int
    mtime_ns: int
    state: str
    reason: str
    commit_sha: str
    page: str
    attempts: int
    not_before: float
    recovering: bool
    seen_at: float
    updated_at: float


@dataclass(frozen=True)
class SourceRecord:
    sha256: str
    path: str
    page: str
    title: str
    commit_sha: str
    engine: str
    ingested_at: float
    state: str


_FILE_COLUMNS = (
    "path, kind, sha256, size, mtime_ns, state, reason, commit_sha, page, attempts, not_before,"
    " recovering, seen_at, updated_at"
)


class Ledger:
    """Thread-safe access to the queue database; one connection guarded by a lock."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path
        # The ledger is the record of what happened: durable commits.
        self._db = open_db(db_path, Schema("ledger", 1, _SCHEMA), synchronous="FULL")
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def shared_connection(self) -> tuple[sqlite3.Connection, threading.RLock]:
        """This ledger's connection and its lock, for the other table groups of the state
        database in this process (the review store): one connection to state.db, not one each."""
        return self._db, self._lock

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction on state.db (every table group on this connection: the queue, the
        ledger, the review store, notices); nested, an inner one is a savepoint of the outer."""
        with self._tx() as db:
            yield db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._db.in_transaction:  # an enclosing atomic() of this thread (it holds the lock)
                with self._savepoint():
                    yield self._db
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            try:
                self._db.execute("COMMIT")
            except BaseException:
                # A COMMIT that fails (disk full) leaves the transaction open; without this
                # rollback every later BEGIN on this connection would fail for good.
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        self._db.execute("SAVEPOINT nested")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK TO nested")
            self._db.execute("RELEASE nested")
            raise
        self._db.execute("RELEASE nested")

    # -- recording what the watcher and rescans see ------------------------------------

    def get_file(self, path: str) -> FileRecord | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path=?", (path,)).fetchone()
        return FileRecord(*row) if row else None

    def all_stats(self) -> dict[str, tuple[int, int, str]]:
        with self._lock:
            rows = self._db.execute("SELECT path, size, mtime_ns, state FROM files").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def observe(self, path: str, kind: str, sha256: str, size: int, mtime_ns: int, reason: str = "") -> bool:
        """Record a stable file. Returns True when it became (or stays) queued work."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT sha256, state FROM files WHERE path=?", (path,)).fetchone()
            if row and row[0] == sha256 and row[1] != FileState.SKIPPED:
                db.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))
                return False
            if row and row[0] and row[0] != sha256 and not reason:
                reason = "new version of a file seen before"
            db.execute(
                f"INSERT INTO files({_FILE_COLUMNS}) VALUES (?,?,?,?,?,'pending',?, '', '', 0, 0, 0, ?, ?)"
                " ON CONFLICT(path) DO UPDATE SET kind=excluded.kind, sha256=excluded.sha256,"
                " size=excluded.size, mtime_ns=excluded.mtime_ns, state='pending', reason=excluded.reason,"
                " commit_sha='', attempts=0, not_before=0, updated_at=excluded.updated_at",
                (path, kind, sha256, size, mtime_ns, reason, now, now),
            )
        return True

    def record_final(
        self, path: str, kind: str, state: str, reason: str, *, sha256: str = "", size: int = 0,
        mtime_ns: int = 0,
    ) -> None:
        """Record a file that ends at once: skipped (with the rule) or quarantined (with a reason)."""
        assert state in (FileState.SKIPPED, FileState.QUARANTINED)
        now = time.time()
        with self._tx() as db:
            db.execute(
                f"INSERT INTO files({_FILE_COLUMNS}) VALUES (?,?,?,?,?,?,?, '', '', 0, 0, 0, ?, ?)"
                " ON CONFLICT(path) DO UPDATE SET kind=excluded.kind, sha256=excluded.sha256,"
                " size=excluded.size, mtime_ns=excluded.mtime_ns, state=excluded.state,"
                " reason=excluded.reason, updated_at=excluded.updated_at",
                (path, kind, sha256, size, mtime_ns, state, reason, now, now),
            )

    # -- the queue -----------------------------------------------------------------

    def claim_next(self, kind: str = "raw") -> FileRecord | None:
        """Take the oldest due pending file whose content is not already being worked on."""
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE state='pending' AND kind=? AND not_before<=?"
                " AND sha256 NOT IN (SELECT sha256 FROM files WHERE state='running')"
                " ORDER BY seen_at, path LIMIT 1",
                (kind, now),
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE files SET state='running', attempts=attempts+1, updated_at=? WHERE path=?",
                (now, row[0]),
            )
        record = FileRecord(*row)
        return FileRecord(**{**record.__dict__, "state": FileState.RUNNING, "attempts": record.attempts + 1})

    def reset_running(self) -> int:
        """At start: work that was running when the process died goes back to pending."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE files SET state='pending', recovering=1, not_before=0 WHERE state='running'"
            )
            return cur.rowcount

    def note_progress(self, record: FileRecord, message: str) -> None:
        """What a running job is doing (a long source's model call N of M), shown by ``status``."""
        with self._tx() as db:
            db.execute("UPDATE files SET reason=?, updated_at=? WHERE path=? AND sha256=? AND state='running'",
                       (message, time.time(), record.path, record.sha256))

    def release(self, record: FileRecord, message: str, delay: float) -> None:
        """A transient failure: back to pending, retried after ``delay`` seconds."""
        with self._tx() as db:
            db.execute(
                "UPDATE files SET state='pending', reason=?, not_before=?, updated_at=? "
                "WHERE path=? AND sha256=? AND state='running'",
                (message, time.time() + delay, time.time(), record.path, record.sha256),
            )

    def wake(self, path: str, sha256: str, message: str) -> bool:
        """A pending job waiting for something (a person's approval) is due now; True if it was waiting."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE files SET reason=?, not_before=0, updated_at=? WHERE path=? AND sha256=? AND state='pending'",
                (message, time.time(), path, sha256),
            )
            return cur.rowcount > 0

    def _finish(self, db: sqlite3.Connection, record: FileRecord, state: FileState, **values: str) -> None:
        sets = ", ".join(f"{key}=?" for key in values)
        db.execute(
            f"UPDATE files SET state=?, {sets}, recovering=0, updated_at=? "
            "WHERE path=? AND sha256=? AND state='running'",
            (state, *values.values(), time.time(), record.path, record.sha256),
        )

    def finish_ingested(
        self, record: FileRecord, *, page: str, title: str, commit_sha: str, engine: str
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO sources(sha256, path, page, title, commit_sha, engine, ingested_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (record.sha256, record.path, page, title, commit_sha, engine, time.time()),
            )
            self._finish(db, record, FileState.INGESTED, reason="", commit_sha=commit_sha, page=page)
        crash_point("after-ledger-update")

    def record_ingest(self, path: str, sha256: str, page: str, title: str, commit_sha: str, engine: str) -> None:
        """The ingest of ``path``'s bytes committed: the door's journaled call after an ingest's
        commit (replayed by its recovery after a crash, so no history needs searching). Idempotent."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO sources(sha256, path, page, title, commit_sha, engine, ingested_at)"
                " VALUES (?,?,?,?,?,?,?)", (sha256, path, page, title, commit_sha, engine, time.time()))
            db.execute(
                "UPDATE files SET state='ingested', reason='', commit_sha=?, page=?, recovering=0, updated_at=?"
                " WHERE path=? AND sha256=? AND state IN ('running','pending')",
                (commit_sha, page, time.time(), path, sha256))
        crash_point("after-ledger-update")

    def record_shared_source(self, sha256: str, path: str, page: str, title: str, commit_sha: str,
                             engine: str, *, replace: bool = False) -> bool:
        """An ingest found in the shared history (another machine's, or history being re-read).

        Recorded as ingested, so the same bytes arriving here are a duplicate, never a second
        ingest; the raw path is bound to its page. ``replace`` makes this the one ingest of
        ``sha256`` (another machine's ingest of the same bytes won). True if the row is new.
        """
        with self._tx() as db:
            verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
            cur = db.execute(
                f"{verb} INTO sources(sha256, path, page, title, commit_sha, engine, ingested_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (sha256, path, page, title, commit_sha, engine, time.time()),
            )
            if page:
                db.execute("INSERT OR IGNORE INTO page_bindings(page, path) VALUES (?,?)", (page, path))
            return cur.rowcount > 0

    def mark_duplicate(self, path: str, reason: str, commit_sha: str, page: str) -> None:
        """A file this machine ingested whose bytes another machine's ingest published first."""
        with self._tx() as db:
            db.execute(
                "UPDATE files SET state='duplicate', reason=?, commit_sha=?, page=?, recovering=0, updated_at=?"
                " WHERE path=?",
                (reason, commit_sha, page, time.time(), path),
            )

    def finish_duplicate(self, record: FileRecord, original: SourceRecord) -> None:
        with self._tx() as db:
            self._finish(
                db, record, FileState.DUPLICATE, reason=f"same content as {original.path} ({original.sha256[:12]})",
                commit_sha=original.commit_sha, page=original.page,
            )

    def finish_quarantined(self, record: FileRecord, reason: str) -> None:
        with self._tx() as db:
            self._finish(db, record, FileState.QUARANTINED, reason=reason)

    def finish_skipped(self, record: FileRecord, rule: str) -> None:
        with self._tx() as db:
            self._finish(db, record, FileState.SKIPPED, reason=rule)

    # -- sources and pages ---------------------------------------------------------------

    def source(self, sha256: str) -> SourceRecord | None:
        with self._lock:
            row = self._db.execute(
                "SELECT sha256, path, page, title, commit_sha, engine, ingested_at, state"
                " FROM sources WHERE sha256=?",
                (sha256,),
            ).fetchone()
        return SourceRecord(*row) if row else None

    def sources(self) -> list[SourceRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT sha256, path, page, title, commit_sha, engine, ingested_at, state"
                " FROM sources ORDER BY ingested_at"
            ).fetchall()
        return [SourceRecord(*r) for r in rows]

    def finish_renamed(self, record: FileRecord, original: SourceRecord) -> None:
        """``record`` holds the bytes ingested from ``original.path``, which is gone: the same
        source renamed. It keeps its ingest, page and commit under the new name; the old
        name's row is dropped (nothing is at that path any more)."""
        with self._tx() as db:
            db.execute("UPDATE sources SET path=? WHERE sha256=?", (record.path, original.sha256))
            db.execute("UPDATE page_bindings SET path=? WHERE path=?", (record.path, original.path))
            db.execute("DELETE FROM files WHERE path=? AND sha256=?", (original.path, original.sha256))
            self._finish(db, record, FileState.INGESTED, reason=f"renamed from {original.path}",
                         commit_sha=original.commit_sha, page=original.page)

    def set_source_state(self, sha256: str, state: SourceState | str) -> None:
        with self._tx() as db:
            db.execute("UPDATE sources SET state=? WHERE sha256=?", (state, sha256))

    def bound_page(self, path: str) -> str | None:
        """The page bound to source ``path`` (None: no ingest of it has committed yet)."""
        with self._lock:
            row = self._db.execute("SELECT page FROM page_bindings WHERE path=?", (path,)).fetchone()
        return str(row[0]) if row else None

    def page_is_bound(self, page: str) -> bool:
        """A source is bound to ``page`` (a name a new binding must not take), compared as the
        names are written (slugs, lower case) and case-folded: key lookups, so a bulk import's
        cost does not grow with its sources."""
        names = sorted({page, page.lower(), page.casefold()})
        marks = ",".join("?" * len(names))
        with self._lock:
            row = self._db.execute(f"SELECT 1 FROM page_bindings WHERE page IN ({marks}) LIMIT 1", names).fetchone()
        return row is not None

    def bind_page(self, path: str, page: str) -> None:
        """Source ``path`` is summarised by ``page`` from now on: the door's journaled call after
        the ingest's commit that wrote the page (replayed by its recovery; idempotent).

        Bindings never move: a path already bound keeps its page, and a page bound to another
        path stays that path's (the operation checked both under the write lock before it
        committed, so neither happens but in a replay).
        """
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO page_bindings(page, path) VALUES (?,?)", (page, path))

    def page_blob(self, page: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT blob FROM page_blobs WHERE page=?", (page,)).fetchone()
        return str(row[0]) if row else None

    def is_page_blob(self, blob: str) -> bool:
        """True when ``blob`` is what the daemon last wrote to some page (self-feeding check)."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM page_blobs WHERE blob=? LIMIT 1", (blob,)).fetchone() is not None

    def requeue(self, path: str, reason: str) -> None:
        """Doctor's repair: an ingested file whose commit is gone from history is queued again."""
        with self._tx() as db:
            row = db.execute("SELECT sha256 FROM files WHERE path=?", (path,)).fetchone()
            if row is None:
                return
            db.execute("DELETE FROM sources WHERE sha256=?", (row[0],))
            db.execute(
                "UPDATE files SET state='pending', reason=?, commit_sha='', attempts=0, not_before=0,"
                " recovering=1, updated_at=? WHERE path=?",
                (reason, time.time(), path),
            )

    def finish_logs(self, consumed: dict[str, str], commit_sha: str) -> int:
        """Consolidation read these daily logs (path -> sha256 of the bytes it read).

        A row whose file has grown since (another sha) stays pending for the next run.
        """
        now = time.time()
        done = 0
        with self._tx() as db:
            for path, sha in consumed.items():
                cur = db.execute(
                    "UPDATE files SET state='ingested', commit_sha=?, reason='', attempts=0, recovering=0,"
                    " updated_at=? WHERE path=? AND kind='log' AND sha256=? AND state IN ('pending','running')",
                    (commit_sha, now, path, sha),
                )
                done += cur.rowcount
        return done

    def set_page_blobs(self, blobs: dict[str, str]) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO page_blobs(page, blob) VALUES (?,?)", blobs.items())

    # -- status --------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, count(*) FROM files GROUP BY state").fetchall()
        counts: dict[str, int] = {str(state): 0 for state in STATES}
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def files(self, state: str | None = None, kind: str | None = None) -> list[FileRecord]:
        query = f"SELECT {_FILE_COLUMNS} FROM files"
        clauses, args = [], []
        if state:
            clauses.append("state=?")
            args.append(state)
        if kind:
            clauses.append("kind=?")
            args.append(kind)
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY updated_at DESC, path", args).fetchall()
        return [FileRecord(*r) for r in rows]

    def pending_count(self, kind: str = "raw") -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM files WHERE state IN ('pending','running') AND kind=?", (kind,)
            ).fetchone()
        return int(row[0])

    def set_notice(self, key: str, message: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO notices(key, message, since) VALUES (?,?,?)"
                " ON CONFLICT(key) DO UPDATE SET message=excluded.message",
                (key, message, time.time()),
            )

    def clear_notice(self, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM notices WHERE key=?", (key,))

    def notices(self) -> list[tuple[str, str, float]]:
        with self._lock:
            rows = self._db.execute("SELECT key, message, since FROM notices ORDER BY since").fetchall()
        return [(str(r[0]), str(r[1]), float(r[2])) for r in rows]

    def get_kv(self, key: str, default: str = "") -> str:
        with self._lock:
            row = self._db.execute("SELECT value FROM kv WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else default

    def set_kv(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO kv(key, value) VALUES (?,?)", (key, value))
