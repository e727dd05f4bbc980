"""A vault the previous release made and used opens in this one and works (issue 24).

The previous release is the code of the last commit that landed (``RELEASE``), taken from this
repository's history with ``git archive`` and run as its own CLI in its own processes: it makes
a vault, ingests, leaves review items in REVIEW.md and syncs with a remote — its databases, its
private git index, its history. This release then opens that vault: ``status``, an ingest,
REVIEW.md's items, a sync and ``doctor`` all work, every database migrated once with a backup.
(tests/test_schema_upgrade.py recreates older schemas by hand; this runs the real old code.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import cli, git
from tests.release_code import export_code, has_commit, run_release

RELEASE = "24d8db4"  # the last commit that landed before the schema versions, claims and the in-memory commit

NOTES = {
    "kestrel.md": "# Kestrel gateway\n\nThe Kestrel gateway routes ingest traffic for Project Heron.\n\n"
                  "`gateway.timeout`: 30 s\n",
    "retention.md": "# Heron retention\n\nProject Heron keeps raw events for ninety days before the Kestrel "
                    "gateway drops them.\n",
    "orphan.md": "# A lonely note\n\nThis note about tide tables shares nothing with the others.\n",
}


@pytest.mark.skipif(not has_commit(RELEASE), reason=f"the previous release {RELEASE} is not in this clone's history")
def test_a_vault_the_previous_release_made_and_synced_works_here(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    old = export_code(RELEASE, tmp_path / "release")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    root = tmp_path / "Wiki"
    env = {**isolated_env, "WIKIWRIGHT_GIT_REMOTE": "origin"}

    def old_cli(*args: str) -> str:
        done = run_release(old, *args, env=env)
        assert done.returncode == 0, f"{RELEASE} {args}: {done.stdout}{done.stderr}"
        return done.stdout

    old_cli("init", "--no-default", str(root))
    git(root, "remote", "add", "origin", str(remote))
    for name, text in NOTES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        old_cli("ingest", "--vault", str(root), str(tmp_path / name))
    # A question for a person: the source changes where a person rewrote its page's same line.
    plan = root / "raw" / "plan.md"
    plan.write_text("# Plan\n\nThe launch is on Monday.\n", encoding="utf-8")
    old_cli("ingest", "--vault", str(root), str(plan))
    page = next(p for p in (root / "wiki" / "sources").glob("*plan*.md"))
    text = page.read_text(encoding="utf-8")
    at = text.rindex("The launch is on Monday.")  # in the body (the front matter's summary stays)
    page.write_text(text[:at] + "The person says the launch moved to Friday." + text[at + 24:], encoding="utf-8")
    plan.write_text("# Plan\n\nThe launch is on Tuesday.\n", encoding="utf-8")
    old_cli("ingest", "--vault", str(root), str(plan))
    old_cli("sync", "--vault", str(root))
    review_before = (root / "REVIEW.md").read_text(encoding="utf-8")
    open_items = [line for line in review_before.splitlines() if line.lstrip().startswith("- [ ]")]
    assert open_items, review_before  # the old release left something for a person to answer
    head_before = git(root, "rev-parse", "HEAD").strip()

    def new_cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = cli(*args, "--vault", str(root), env=env, timeout=300)
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
        return done

    status = new_cli("status").stdout
    assert "Sources: 4 ingested, 0 pending" in status, status  # three notes and the plan (edited once)
    (tmp_path / "dashboards.md").write_text("# Heron dashboards\n\nThe Heron dashboards read from the Kestrel "
                                            "gateway's metrics endpoint.\n", encoding="utf-8")
    new_cli("ingest", str(tmp_path / "dashboards.md"))
    assert (root / "wiki" / "sources" / "src-dashboards.md").exists()
    review_after = (root / "REVIEW.md").read_text(encoding="utf-8")
    assert all(item in review_after for item in open_items), review_after  # nothing a person had to answer lost
    new_cli("sync")
    assert git(remote, "rev-parse", "main").strip() == git(root, "rev-parse", "HEAD").strip() != head_before
    report = json.loads(new_cli("doctor", "--no-repair", "--json").stdout)
    assert report["ok"], [c for c in report["checks"] if not c["ok"]]
    backups = list((root / ".wikiwright" / "backups").glob("*"))
    assert backups, "the databases were migrated without a backup"
    # Opened again, nothing is migrated a second time.
    new_cli("status")
    assert sorted((root / ".wikiwright" / "backups").glob("*")) == sorted(backups)
    assert git(root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""
