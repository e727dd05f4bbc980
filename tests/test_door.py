"""The one door (issue 15): regression tests on the real CLI and real git for the defects the
door removes — a person's index.md text deleted (1), a crash attributing the daemon's text to
the person (2), an unmergeable edit hidden in .wikiwright/conflicts (5), a second one-shot
ingest dropping its file (10). (The room order and the other rules about the code's shape are
checked in tests/test_architecture.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.fault_tools import assert_doctor_green, ledger_rows, new_vault, note
from tests.helpers import cli, git, wait_for
from tests.llm_server import ScriptedServer
from tests.model_helpers import reply

START = "<!-- wikiwright:index:start"
END = "<!-- wikiwright:index:end -->"
BATCH = 15  # enough work that the second command starts while the first holds the vault


def _ingest(root: Path, *files: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli("ingest", "--vault", str(root), *map(str, files), env=env, timeout=180)


def _authors_of_line(root: Path, rel: str, needle: str) -> set[str]:
    """Authors of the commits that added a line containing ``needle`` to ``rel`` (git log -S)."""
    out = git(root, "log", "--format=%an", "-S", needle, "--", rel)
    return {line for line in out.splitlines() if line}


def test_deleted_index_end_marker_never_costs_the_persons_text(tmp_path: Path) -> None:
    """Issue 15 item 1: the end marker deleted, two ingests later the person's text is all there."""
    root = new_vault(tmp_path)
    for n in range(3):
        (root / "raw" / f"s{n}.md").write_text(note(n))
    assert _ingest(root, root / "raw" / "s0.md").returncode == 0
    index = root / "wiki" / "index.md"
    text = index.read_text()
    assert text.count(END) == 1
    person = "\n## My reading list\n\n- the person's first line\n- the person's second line\n"
    index.write_text(text.replace(END + "\n", "") + person)  # the end marker deleted, text added below
    assert _ingest(root, root / "raw" / "s1.md").returncode == 0
    assert _ingest(root, root / "raw" / "s2.md").returncode == 0
    final = index.read_text()
    assert "- the person's first line" in final and "- the person's second line" in final
    assert final.count(END) == 1 and final.count(START) == 1, final
    assert "[[src-s2" in final or "s2" in final
    report = assert_doctor_green(root)
    assert report["person_lines_removed"] == 0
    # The person's lines were committed under their own name, never as wikiwright's.
    assert _authors_of_line(root, "wiki/index.md", "the person's first line") == {"Test Person"}


def test_crash_before_commit_never_commits_daemon_text_as_the_persons(tmp_path: Path) -> None:
    """Issue 15 item 2 (model engine): SIGKILL between the page writes and the commit, then a
    rerun: the daemon's text is committed once, as wikiwright's, never as "edit: your changes";
    the page the ingest created is committed; nothing stays uncommitted; doctor clean."""
    root = new_vault(tmp_path)
    source = root / "raw" / "billing.md"
    source.write_text("# Billing\n\nThe billing API answers within 200 ms.\n")
    answer = reply({"op": "create_page", "page": "billing-api", "type": "entity", "title": "Billing API",
                    "summary": "The billing API.", "body": "The billing API answers within 200 ms."})
    with ScriptedServer([], default=answer) as server:
        env = {**os.environ, **server.env()}
        crashed = _ingest(root, source, env={**env, "WIKIWRIGHT_CRASH_AT": "before-commit"})
        assert crashed.returncode == -9, crashed.stdout + crashed.stderr
        again = _ingest(root, source, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    person_commits = git(root, "log", "--format=%an %s", "--author=Test Person")
    assert person_commits == "", person_commits  # no "edit: your changes to …" made of our text
    assert (root / "wiki" / "billing-api.md").exists()
    assert "wiki/billing-api.md" in git(root, "ls-files", "wiki")
    assert git(root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""
    assert ledger_rows(root)["raw/billing.md"][0] == "ingested"
    assert assert_doctor_green(root)["person_lines_removed"] == 0


def test_unmergeable_edit_goes_to_review_md_and_the_persons_page_stays(tmp_path: Path) -> None:
    """Issue 15 item 5: a new version of a source whose page a person rewrote on the same lines."""
    root = new_vault(tmp_path)
    source = root / "raw" / "plan.md"
    source.write_text("# Plan\n\nThe launch is on Monday.\n")
    assert _ingest(root, source).returncode == 0
    page = next((root / "wiki" / "sources").glob("*.md"))
    text = page.read_text()
    assert "The launch is on Monday." in text
    mine = text.replace("The launch is on Monday.", "The person says: the launch moved to Friday.")
    page.write_text(mine)
    source.write_text("# Plan\n\nThe launch is on Tuesday.\n")
    result = _ingest(root, source)
    assert result.returncode == 0, result.stdout + result.stderr
    assert page.read_text() == mine  # the person's version stays
    review = (root / "REVIEW.md").read_text()
    conflict = r"- \[ \] .*changed while wikiwright worked on it.* \^edit-conflict-[0-9a-f]{10}$"
    assert re.search(conflict, review, re.M), review
    assert not (root / ".wikiwright" / "conflicts").exists()
    assert "Wikiwright-Conflicts:" in git(root, "log", "-1", "--format=%B")
    assert _authors_of_line(root, page.relative_to(root).as_posix(), "moved to Friday") == {"Test Person"}
    assert git(root, "status", "--porcelain", "--", "wiki", "REVIEW.md").strip() == ""


def test_two_one_shot_ingests_at_once_both_ingest_and_neither_says_queued(tmp_path: Path) -> None:
    """Issue 15 item 10: no daemon; the second one-shot waits for the first instead of
    claiming a daemon will take its file, and its file is ingested."""
    root = new_vault(tmp_path)
    many = []
    for n in range(BATCH):
        path = root / "raw" / f"batch-{n}.md"
        path.write_text(note(n, "batch"))
        many.append(str(path))
    single = root / "raw" / "single.md"
    single.write_text(note(99, "single"))
    first = subprocess.Popen([sys.executable, "-m", "wikiwright", "ingest", "--vault", str(root), *many],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = root / ".wikiwright" / "daemon.lock"
    wait_for(lambda: (lock.exists() and "ingest" in lock.read_text()) or first.poll() is not None,
             timeout=30, what="the first ingest holding the vault")
    overlapped = first.poll() is None
    second = _ingest(root, single)
    out, err = first.communicate(timeout=180)
    if overlapped and "waiting for" not in second.stderr:
        assert second.returncode == 0  # the first finished just before the second looked: no overlap to test
    elif overlapped:
        assert "(ingest)" in second.stderr  # it waited for the one-shot, named as such
    assert first.returncode == 0, out + err
    assert second.returncode == 0, second.stdout + second.stderr
    assert "queued" not in second.stdout and "queued" not in out
    rows = ledger_rows(root)
    assert rows["raw/single.md"][0] == "ingested"
    assert all(rows[f"raw/batch-{n}.md"][0] == "ingested" for n in range(BATCH))
    assert_doctor_green(root)
