"""The person's git is busy (reliability.md T27, T33, T38, T39) while a real daemon ingests.

A held ``index.lock``, a person committing every second with other work staged, a merge in
progress, a detached HEAD. In every case: no corruption, none of the person's staged work in
a daemon commit, a clear pause reason in ``wikiwright status``, and the daemon resumes by
itself once git is free. Each ends with doctor green.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from tests.fault_tools import (
    assert_doctor_green,
    ingest_commits_by_sha,
    launch,
    ledger_rows,
    new_vault,
    note,
    reap_daemons,  # noqa: F401
    stop,
    wait_settled,
)
from tests.helpers import cli, git, git_holding_index_lock, wait_for


def _env() -> dict[str, str]:
    return dict(os.environ, WIKIWRIGHT_GIT_LOCK_RETRY_SECONDS="1")


def _status(root: Path) -> dict:
    result = cli("status", "--json", "--vault", str(root))
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def _pause_reasons(root: Path) -> list[str]:
    data = _status(root)
    reasons = [n["message"] for n in data["notices"]]
    if data["git_problem"]:
        reasons.append(data["git_problem"])
    return reasons


def _waiting(root: Path, rel: str, words: str) -> bool:
    row = ledger_rows(root).get(rel)
    return bool(row and row[0] == "pending" and words in row[2])


def _daemon_paths(root: Path) -> set[str]:
    out = git(root, "log", "--author=wikiwright", "--name-only", "--format=")
    return {line for line in out.splitlines() if line}


def test_held_index_lock_pauses_then_resumes_by_itself(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    (root / "staged.md").write_text("my staged work\n")
    git(root, "add", "staged.md")
    lock = root / ".git" / "index.lock"
    holder = ExitStack()  # another git process (an editor's git plugin) holds the index
    holder.enter_context(git_holding_index_lock(root))
    proc = launch(root, _env())
    (root / "raw" / "a.md").write_text(note(1))
    wait_for(lambda: _waiting(root, "raw/a.md", "index.lock"), timeout=20, what="a pause naming index.lock")
    assert any("index.lock" in r for r in _pause_reasons(root))
    text = cli("status", "--vault", str(root)).stdout
    assert "index.lock" in text
    assert lock.exists()  # never removed by the daemon: its holder may be alive
    time.sleep(1.5)
    holder.close()
    released = time.monotonic()
    wait_settled(root, ["raw/a.md"], timeout=30, proc=proc)
    resumed_in = time.monotonic() - released
    assert stop(proc) == 0
    assert git(root, "diff", "--cached", "--name-only").split() == ["staged.md"]
    assert "staged.md" not in _daemon_paths(root)
    assert _pause_reasons(root) == []
    assert_doctor_green(root)
    assert resumed_in < 15


def test_person_committing_every_second_while_ingests_run(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    (root / "staged.md").write_text("staged, not for the daemon\n")
    git(root, "add", "staged.md")
    proc = launch(root, _env())
    stop_user = threading.Event()
    made: list[int] = []

    def person() -> None:
        n = 0
        while not stop_user.is_set():
            n += 1
            (root / "journal.md").write_text(f"entry {n}\n")
            # `git commit PATH` commits only that path, as a careful person (or plugin) does.
            for _ in range(20):
                done = subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", f"journal {n}", "--",
                                       "journal.md"], capture_output=True, text=True)
                if done.returncode == 0 or "nothing" in done.stdout:
                    made.append(n)
                    break
                if n == 1 and "did not match" in done.stderr:
                    subprocess.run(["git", "-C", str(root), "add", "journal.md"], check=True)
                time.sleep(0.1)
            stop_user.wait(1.0)

    user = threading.Thread(target=person)
    user.start()
    paths = []
    try:
        for n in range(12):
            rel = f"raw/s{n}.md"
            (root / rel).write_text(note(n))
            paths.append(rel)
            time.sleep(0.4)
        wait_settled(root, paths, timeout=60, proc=proc)
    finally:
        stop_user.set()
        user.join()
    assert stop(proc) == 0
    assert len(made) >= 4
    assert git(root, "diff", "--cached", "--name-only").split() == ["staged.md"]
    assert _daemon_paths(root).isdisjoint({"staged.md", "journal.md"})
    person_commits = git(root, "log", "--author=Test Person", "--format=%s").splitlines()
    assert sum(s.startswith("journal ") for s in person_commits) == len(made)
    counts = ingest_commits_by_sha(root)
    assert all(counts.get(ledger_rows(root)[p][1]) == 1 for p in paths)
    assert_doctor_green(root)


def _conflicted_merge(root: Path) -> None:
    (root / "plan.md").write_text("line one\n")
    git(root, "add", "plan.md")
    git(root, "commit", "-q", "-m", "plan")
    git(root, "checkout", "-q", "-b", "other")
    (root / "plan.md").write_text("line one, as other has it\n")
    git(root, "commit", "-q", "-am", "other plan")
    git(root, "checkout", "-q", "main")
    (root / "plan.md").write_text("line one, as main has it\n")
    git(root, "commit", "-q", "-am", "main plan")
    assert subprocess.run(["git", "-C", str(root), "merge", "other"], capture_output=True).returncode != 0
    assert (root / ".git" / "MERGE_HEAD").exists()


def test_merge_in_progress_and_detached_head_pause_and_resume(tmp_path: Path) -> None:
    root = new_vault(tmp_path)
    proc = launch(root, _env())
    _conflicted_merge(root)
    index_before = (root / "wiki" / "index.md").read_bytes()
    (root / "raw" / "m.md").write_text(note(1))
    wait_for(lambda: _waiting(root, "raw/m.md", "merge is in progress"), timeout=20, what="the merge pause")
    assert any("merge is in progress" in r for r in _pause_reasons(root))
    assert "PAUSED:" in cli("status", "--vault", str(root)).stdout
    assert (root / "wiki" / "index.md").read_bytes() == index_before  # nothing written into a merge
    assert not (root / "wiki" / "sources" / "src-m.md").exists()
    git(root, "merge", "--abort")
    wait_settled(root, ["raw/m.md"], timeout=30, proc=proc)

    git(root, "checkout", "-q", "--detach")
    (root / "raw" / "d.md").write_text(note(2))
    wait_for(lambda: _waiting(root, "raw/d.md", "HEAD is detached"), timeout=20, what="the detached-HEAD pause")
    assert any("HEAD is detached" in r for r in _pause_reasons(root))
    git(root, "checkout", "-q", "main")
    wait_settled(root, ["raw/d.md"], timeout=30, proc=proc)
    assert stop(proc) == 0
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert "<<<<<<<" not in git(root, "log", "-p", "--author=wikiwright")
    assert _pause_reasons(root) == []
    assert_doctor_green(root)
