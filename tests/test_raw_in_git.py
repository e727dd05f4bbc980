"""raw/ and logs/ in git: a source in its own ingest commit, large ones kept out by .gitignore,
daily logs in batches, doctor noticing a removed source, a rename that is not a duplicate."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.intake.ledger import Ledger

from tests.fault_tools import doctor
from tests.helpers import cli, daemon_log, git, start_daemon, wait_for

NOTE = "# Rate limits\n\nThe billing API allows 50 requests per second per client since incident 482.\n"
OTHER = "# Owners\n\nDana Whitfield owns the export service and its retention rules.\n"
LARGE = "# Archive\n\n" + "A long archived discussion about exports. " * 100 + "\n"


def _state(vault: Vault, rel: str) -> tuple[str, str]:
    ledger = Ledger(vault.db_path)
    try:
        record = ledger.get_file(rel)
        return (record.state, record.reason) if record else ("", "")
    finally:
        ledger.close()


def _status(vault: Vault) -> str:
    return git(vault.root, "status", "--porcelain", "--", "raw", "logs", "wiki", "REVIEW.md", ".gitignore")


def _commit_of(vault: Vault, rel: str) -> list[str]:
    sha = git(vault.root, "log", "-1", "--format=%H", "--", rel).strip()
    return git(vault.root, "show", "--format=", "--name-only", sha).split()


def test_sources_and_logs_go_into_git_and_doctor_notices_a_removed_source(
    vault: Vault, isolated_env: dict[str, str]
) -> None:
    env = {**isolated_env, "WIKIWRIGHT_GIT_COMMIT_RAW_MAX_BYTES": "2000",
           "WIKIWRIGHT_GIT_COMMIT_LOGS_AFTER_QUIET_SECONDS": "1"}
    proc = start_daemon(vault.root, env)
    try:
        (vault.raw / "limits.md").write_text(NOTE)
        (vault.raw / "owners.md").write_text(OTHER)
        (vault.raw / "archive.md").write_text(LARGE)
        log_text = ("# 2026-11-30\n\n## Session 09:15 UTC — test: exports\n\n- moved the cron job\n\n"
                    "## Session 11:40 UTC — test: billing\n\n- raised the limit\n")
        (vault.logs / "2026-11-30.md").write_text(log_text)
        wait_for(lambda: all(_state(vault, f"raw/{n}")[0] == "ingested" for n in ("limits.md", "owners.md",
                                                                                   "archive.md")),
                 timeout=60, what="three sources ingested")
        # One commit holds the source and everything made of it.
        files = _commit_of(vault, "raw/limits.md")
        assert "raw/limits.md" in files and "wiki/sources/src-limits.md" in files, files
        # Over git.commit_raw_max_bytes: kept out by the daemon's .gitignore section, sha256 on its page.
        assert git(vault.root, "ls-files", "raw/archive.md").strip() == ""
        assert "/raw/" in (vault.root / ".gitignore").read_text()
        digest = hashlib.sha256(LARGE.encode()).hexdigest()
        assert digest in (vault.wiki / "sources" / "src-archive.md").read_text()
        # The daily log: one batch commit after the quiet period.
        wait_for(lambda: git(vault.root, "log", "--format=%s", "--", "logs/2026-11-30.md").strip(), timeout=30,
                 what="the daily log committed")
        subject = git(vault.root, "log", "-1", "--format=%s%n%b", "--", "logs/2026-11-30.md")
        assert subject.startswith("logs: 2 session blocks") and "Wikiwright-Operation: logs" in subject, subject
        wait_for(lambda: _status(vault) == "", timeout=30, what="a clean git status")

        # A rename is the same source under a new name, never a "duplicate of" a path that is gone.
        os.rename(vault.raw / "owners.md", vault.raw / "service-owners.md")
        wait_for(lambda: _state(vault, "raw/service-owners.md")[0] == "ingested", timeout=30,
                 what="the renamed source recorded")
        assert _state(vault, "raw/service-owners.md")[1] == "renamed from raw/owners.md"
        assert git(vault.root, "ls-files", "raw/owners.md", "raw/service-owners.md").split() == [
            "raw/service-owners.md"]
        status = json.loads(cli("status", "--json", "--vault", str(vault.root), env=env).stdout)
        assert status["duplicates"] == [], status["duplicates"]
        wait_for(lambda: _status(vault) == "", timeout=30, what="a clean git status after the rename")
        assert proc.poll() is None, daemon_log(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    code, report = doctor(vault.root)
    assert code == 0, json.dumps([c for c in report["checks"] if not c["ok"]], indent=1)
    # A source removed after its ingest is reported, with how to get it back.
    Path(vault.raw / "limits.md").unlink()
    code, report = doctor(vault.root)
    [check] = [c for c in report["checks"] if c["name"] == "sources in raw/"]
    assert code != 0 and not check["ok"]
    assert "raw/limits.md was removed after its ingest" in check["details"][0]
    assert "git checkout HEAD -- raw/limits.md" in check["details"][0]
