"""A vault made by an earlier release opens, migrates once (backed up first) and works; one made
by a newer release is refused with nothing changed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from wikiwright.core.errors import SchemaTooNew, WikiwrightError
from wikiwright.core.sqlitedb import BACKUP_DIR, Schema, open_db, recorded_versions

from tests.helpers import cli, git

NOTE_A = ("# Kestrel gateway\n\nThe Kestrel gateway routes ingest traffic for Project Heron.\n\n"
          "`gateway.timeout`: 30 s\n")
NOTE_B = "# Heron retention\n\nProject Heron keeps raw events for ninety days before the Kestrel gateway drops them.\n"
NOTE_C = "# Heron dashboards\n\nThe Heron dashboards read from the Kestrel gateway's metrics endpoint.\n"


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    assert cli("init", str(root)).returncode == 0
    for name, text in (("a.md", NOTE_A), ("b.md", NOTE_B)):
        (tmp_path / name).write_text(text)
        out = cli("ingest", str(tmp_path / name), "--vault", str(root))
        assert out.returncode == 0, out.stdout + out.stderr
    return root


def _databases(root: Path) -> list[Path]:
    return sorted((root / ".wikiwright").glob("*.db"))


def _as_earlier_release(root: Path, *, drop_recovering: bool = False) -> None:
    """Put every database back in the form the releases before schema versions wrote."""
    for path in _databases(root):
        db = sqlite3.connect(path)
        db.execute("DROP TABLE IF EXISTS schema_version")
        if drop_recovering and path.name == "state.db":
            # The shape of a ledger from before files.recovering existed.
            db.execute("ALTER TABLE files DROP COLUMN recovering")
        db.commit()
        db.close()


def _digest(paths: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.exists()}


def test_a_vault_from_an_earlier_release_opens_migrates_once_and_works(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    _as_earlier_release(root, drop_recovering=True)

    status = cli("status", "--vault", str(root))
    assert status.returncode == 0, status.stdout + status.stderr
    (tmp_path / "c.md").write_text(NOTE_C)
    out = cli("ingest", str(tmp_path / "c.md"), "--vault", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    doctor = cli("doctor", "--vault", str(root))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    state = root / ".wikiwright" / "state.db"
    assert recorded_versions(state).get("ledger") == 1
    columns = {row[1] for row in sqlite3.connect(state).execute("PRAGMA table_info(files)")}
    assert "recovering" in columns
    backups = sorted(p.name for p in (root / ".wikiwright" / BACKUP_DIR).iterdir())
    assert any(name.startswith("state.db.ledger-v0.") for name in backups), backups
    # Backed up before the change: the copy still has the old shape.
    old = next(p for p in (root / ".wikiwright" / BACKUP_DIR).iterdir() if p.name.startswith("state.db.ledger-v0."))
    assert "recovering" not in {row[1] for row in sqlite3.connect(old).execute("PRAGMA table_info(files)")}
    assert "ingest: " in git(root, "log", "-1", "--format=%s")

    # Once: the same commands again migrate nothing and make no second backup.
    for args in (("status",), ("doctor",), ("status",)):
        assert cli(*args, "--vault", str(root)).returncode == 0
    settled = sorted(p.name for p in (root / ".wikiwright" / BACKUP_DIR).iterdir())
    for args in (("status",), ("doctor",), ("lint",)):
        cli(*args, "--vault", str(root))
    assert sorted(p.name for p in (root / ".wikiwright" / BACKUP_DIR).iterdir()) == settled
    assert recorded_versions(state).get("ledger") == 1


def test_a_vault_from_a_newer_release_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    state = root / ".wikiwright" / "state.db"
    db = sqlite3.connect(state)
    db.execute("UPDATE schema_version SET version = 7 WHERE component = 'ledger'")
    db.commit()
    db.close()
    before = _digest(_databases(root))

    out = cli("status", "--vault", str(root))
    assert out.returncode != 0
    assert "newer wikiwright" in out.stderr and "ledger schema version 7" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert _digest(_databases(root)) == before
    assert not (root / ".wikiwright" / BACKUP_DIR).exists()


def test_a_later_column_and_a_step_are_applied_to_an_older_file(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    v1 = Schema("thing", 1, "CREATE TABLE IF NOT EXISTS t (a TEXT PRIMARY KEY);")
    db = open_db(path, v1)
    db.execute("INSERT INTO t (a) VALUES ('kept')")
    db.close()

    v2 = Schema("thing", 2, "CREATE TABLE IF NOT EXISTS t (a TEXT PRIMARY KEY, b INTEGER NOT NULL DEFAULT 3);\n"
                            "CREATE INDEX IF NOT EXISTS t_b ON t(b);",
                steps={2: "UPDATE t SET a = a || '!';"})
    db = open_db(path, v2)
    assert db.execute("SELECT a, b FROM t").fetchall() == [("kept!", 3)]
    db.close()
    assert recorded_versions(path) == {"thing": 2}
    assert [p.name.split(".")[2] for p in (tmp_path / BACKUP_DIR).iterdir()] == ["thing-v1"]

    with pytest.raises(SchemaTooNew):
        open_db(path, v1)


def test_a_column_that_cannot_be_added_without_a_step_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "y.db"
    open_db(path, Schema("thing", 1, "CREATE TABLE IF NOT EXISTS t (a TEXT);")).close()
    with pytest.raises(WikiwrightError, match="needs a migration step"):
        open_db(path, Schema("thing", 2, "CREATE TABLE IF NOT EXISTS t (a TEXT, b TEXT NOT NULL);"))
    assert recorded_versions(path) == {"thing": 1}
