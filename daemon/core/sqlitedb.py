"""Opening the local SQLite databases (queue, review items, cost ledger, page catalogue, terms).

One way for all of them: WAL (readers never block the writer, and `status` can read while
the daemon writes), a busy timeout, a connection shared by threads behind the owner's lock,
and the owner's schema brought up to date before the connection is handed out.

Upgrades. Every owner declares a :class:`Schema`: a component name, the version this release
writes and its ``CREATE ... IF NOT EXISTS`` script. A database file records, per component,
the version it was last migrated to (table ``schema_version``: one file can hold several
components, as state.db holds the ledger and the review store, so a single ``PRAGMA
user_version`` could not say which part is how old). Opening a file:

- at the current version: nothing is written (the common case; a reader never waits for the
  daemon's write lock just to open);
- older, or from a release before versions were recorded (tables present, no version row):
  the file is copied to ``.wikiwright/backups/`` first, then, in one transaction, the
  schema's ordered ``steps`` run, every column the script declares but the table lacks is
  added (the usual change between releases), the script creates what is missing, and the
  version is recorded. A column that cannot be added that way (NOT NULL without a default)
  needs a step: opening fails loudly rather than running with half a schema;
- newer (written by a later release): refused with :class:`SchemaTooNew`, nothing changed.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import SchemaTooNew, WikiwrightError
from ..core.rootguard import check_path

log = logging.getLogger(__name__)

BACKUP_DIR = "backups"
_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)


MEMORY = ":memory:"  # the path of a scratch database (what a command that writes nothing reads)


@dataclass(frozen=True)
class Schema:
    """What one owner keeps in a database file, and how to bring an older file up to it.

    ``steps[n]`` is SQL run to go from version ``n - 1`` to ``n`` (before missing columns are
    added and the script is applied); additive changes need no step.
    """

    component: str
    version: int
    script: str
    steps: Mapping[int, str] = field(default_factory=dict)


def open_db(path: Path, schema: Schema, *, synchronous: str | None = None,
            autocommit: bool = True) -> sqlite3.Connection:
    """A connection to ``path`` with ``schema`` applied (migrated first when the file is older).

    ``autocommit``: transactions are explicit (``BEGIN IMMEDIATE``); otherwise Python's
    implicit ones (``with connection:``). ``synchronous``: FULL for records that must survive
    a power cut, NORMAL for caches that can be rebuilt; None keeps SQLite's default.
    """
    if str(path) == MEMORY:  # a scratch database: its one connection is all of it
        db = sqlite3.connect(MEMORY, check_same_thread=False, isolation_level=None if autocommit else "DEFERRED")
        migrate_on(db, path, schema)
        return db
    check_path(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    migrate(path, schema)
    if autocommit:
        db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
    else:
        db = sqlite3.connect(path, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    if synchronous:
        db.execute(f"PRAGMA synchronous={synchronous}")
    return db


def migrate(path: Path, schema: Schema) -> int | None:
    """Bring ``schema``'s tables in ``path`` to ``schema.version``; the version found (None: new)."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        return migrate_on(db, path, schema)
    finally:
        db.close()


def migrate_on(db: sqlite3.Connection, path: Path, schema: Schema) -> int | None:
    """:func:`migrate` on a connection already open to ``path`` (autocommit, no transaction
    open): a table group sharing another owner's connection (doctor's on the ledger's) is
    brought to its version without a second connection, whose descriptor SQLite would keep
    open while the first holds its lock on the file."""
    found = _recorded_version(db, schema.component)
    if found == schema.version:
        return found
    _refuse_newer(path, schema, found)
    existing = _tables(db) & _declared_tables(schema.script)
    if existing and (found or 0) < schema.version:
        backup = _backup(db, path, schema, found or 0)
        log.info("upgrading %s (%s) from version %s to %s; backup at %s", path.name, schema.component,
                 found or 0, schema.version, backup)
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(_VERSION_TABLE)
        found = _recorded_version(db, schema.component)  # another process may have done it meanwhile
        _refuse_newer(path, schema, found)
        if found != schema.version:
            if existing:
                for version in range((found or 0) + 1, schema.version + 1):
                    for statement in _statements(schema.steps.get(version, "")):
                        db.execute(statement)
                _add_missing_columns(db, schema)
            for statement in _statements(schema.script):
                db.execute(statement)
            db.execute("INSERT OR REPLACE INTO schema_version (component, version) VALUES (?, ?)",
                       (schema.component, schema.version))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return None if not existing else (found or 0)


def recorded_versions(path: Path) -> dict[str, int]:
    """component -> version recorded in ``path`` (empty for a file without versions)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        if "schema_version" not in _tables(db):
            return {}
        return {str(c): int(v) for c, v in db.execute("SELECT component, version FROM schema_version")}
    finally:
        db.close()


def _recorded_version(db: sqlite3.Connection, component: str) -> int | None:
    if "schema_version" not in _tables(db):
        return None
    row = db.execute("SELECT version FROM schema_version WHERE component=?", (component,)).fetchone()
    return None if row is None else int(row[0])


def _refuse_newer(path: Path, schema: Schema, found: int | None) -> None:
    if found is not None and found > schema.version:
        raise SchemaTooNew(
            f"{path} was written by a newer wikiwright ({schema.component} schema version {found}; this "
            f"release knows up to {schema.version}): upgrade wikiwright to open this vault. Nothing was changed."
        )


def _tables(db: sqlite3.Connection) -> set[str]:
    return {str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _declared(script: str) -> sqlite3.Connection:
    """The script's tables, made in memory: SQLite itself reads the declarations."""
    scratch = sqlite3.connect(":memory:")
    scratch.executescript(script)
    return scratch


def _declared_tables(script: str) -> set[str]:
    scratch = _declared(script)
    try:
        return _tables(scratch)
    finally:
        scratch.close()


def _add_missing_columns(db: sqlite3.Connection, schema: Schema) -> None:
    scratch = _declared(schema.script)
    try:
        plain = [str(name) for name, sql in scratch.execute("SELECT name, sql FROM sqlite_master WHERE type='table'")
                 if not str(sql).upper().startswith("CREATE VIRTUAL") and not str(name).startswith("sqlite_")]
        present = _tables(db)
        for table in plain:
            if table not in present:
                continue  # the script creates it
            have = {str(row[1]) for row in db.execute(f'PRAGMA table_info("{table}")')}
            for _cid, name, kind, notnull, default, _pk in scratch.execute(f'PRAGMA table_info("{table}")'):
                if name in have:
                    continue
                if notnull and default is None:
                    raise WikiwrightError(
                        f"cannot upgrade {schema.component}: column {table}.{name} is NOT NULL without a default; "
                        f"schema version {schema.version} needs a migration step for it")
                column = f'"{name}" {kind}' + (" NOT NULL" if notnull else "")
                if default is not None:
                    column += f" DEFAULT {default}"
                db.execute(f'ALTER TABLE "{table}" ADD COLUMN {column}')
                log.info("upgrade: added column %s.%s (%s)", table, name, schema.component)
    finally:
        scratch.close()


def _statements(script: str) -> list[str]:
    """The script's statements one by one (``executescript`` would commit the open transaction)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                statements.append(pending)
            pending = ""
    if pending.strip(" \t\r\n;"):
        statements.append(pending)
    return statements


def _backup(db: sqlite3.Connection, path: Path, schema: Schema, found: int) -> Path:
    folder = path.parent / BACKUP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = folder / f"{path.name}.{schema.component}-v{found}.{stamp}"
    copy = sqlite3.connect(target)
    try:
        db.backup(copy)
    finally:
        copy.close()
    return target
