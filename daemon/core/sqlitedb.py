"""Opening the local SQLite databases (queue, review items, cost ledger, page catalogue).

One way for all of them: WAL (readers never block the writer, and `status` can read while
the daemon writes), a busy timeout, a connection shared by threads behind the owner's lock,
and the owner's schema created if missing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..core.rootguard import check_path


def open_db(path: Path, schema: str, *, synchronous: str | None = None, autocommit: bool = True) -> sqlite3.Connection:
    """A connection to ``path`` with ``schema`` applied.

    ``autocommit``: transactions are explicit (``BEGIN IMMEDIATE``); otherwise Python's
    implicit ones (``with connection:``). ``synchronous``: FULL for records that must survive
    a power cut, NORMAL for caches that can be rebuilt; None keeps SQLite's default.
    """
    check_path(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    if autocommit:
        db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
    else:
        db = sqlite3.connect(path, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    if synchronous:
        db.execute(f"PRAGMA synchronous={synchronous}")
    db.executescript(schema)
    return db
