"""What a commit costs in git processes, and that the in-memory tree is the one git would build.

The processes are counted for real: every ``subprocess.Popen`` of ``git`` this test process
starts (the pipeline, the door and vcs all start theirs through it) is recorded, and the
process still runs as usual.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wikiwright.vcs.repo import GitRepo
from wikiwright.vcs.trees import tree_with

from tests.conftest import Services
from tests.helpers import git

MAX_PER_INGEST = 3  # issue 24: commit-tree, update-ref and the person's update-index


@pytest.fixture
def git_spawns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The argv (after ``git``) of every git process started from here on."""
    spawned: list[list[str]] = []
    real = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "git":
            spawned.append([str(a) for a in args[1:]])
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting)
    yield spawned


def _source(n: int) -> str:
    rng = random.Random(n)
    words = " ".join(rng.choice(["heron", "latency", "cedar", "marble", "quartz", "willow"]) for _ in range(40))
    return f"# Source {n}\n\nSource {n} was written on 2026-03-{n % 28 + 1:02d}. {words}.\n"


def test_an_offline_ingest_runs_at_most_three_git_processes_and_keeps_the_persons_index(
        services: Services, git_spawns: list[list[str]]) -> None:
    root = services.vault.root
    # The person has work staged (a new file, and a change to a page) that must stay staged.
    (root / "draft.md").write_text("my staged draft\n")
    git(root, "add", "draft.md")
    services.drop("s-0.md", _source(0))
    assert [r.state for r in services.drain()] == ["ingested"]  # warm-up: the object reader starts
    per_ingest = []
    for n in range(1, 6):
        git_spawns.clear()
        services.drop(f"s-{n}.md", _source(n))
        assert [r.state for r in services.drain()] == ["ingested"]
        per_ingest.append([argv[0] for argv in git_spawns])
    assert all(len(spawns) <= MAX_PER_INGEST for spawns in per_ingest), per_ingest  # old code: 10 each
    # Same guarantees: the person's staged work is untouched, the committed paths show no diff.
    assert git(root, "diff", "--cached", "--name-only").split() == ["draft.md"]
    assert git(root, "status", "--porcelain", "--", "wiki", "raw").strip() == ""
    assert "Wikiwright-Operation: ingest" in git(root, "log", "-1", "--format=%B")
    assert git(root, "fsck", "--no-progress", "--strict").strip() == ""


def _git_tree(root: Path, base: str | None, changes: dict[str, tuple[str, str] | None], index: Path) -> str:
    """The tree git itself makes: ``read-tree`` of base, ``update-index --index-info``, ``write-tree``."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "-C", str(root), "read-tree", *([base] if base else ["--empty"])], env=env, check=True)
    lines = "".join(f"0 {'0' * 40}\t{p}\n" if c is None else f"{c[0]} {c[1]}\t{p}\n" for p, c in changes.items())
    subprocess.run(["git", "-C", str(root), "update-index", "--index-info"], input=lines.encode(), env=env,
                   check=True)
    return subprocess.run(["git", "-C", str(root), "write-tree"], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_the_tree_built_in_memory_is_the_one_git_builds(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    repo = GitRepo(root)
    blob = {name: repo.store_bytes(f"{name}\n".encode()) for name in ("a", "b", "c", "d")}
    rng = random.Random(24)
    names = ["x", "x.md", "x-y", "x0", "y/z", "x/a", "x/b/c", "wiki/p.md", "wiki/q.md", "wiki/sub/r.md", "z"]
    base: str | None = None
    for round_ in range(200):
        changes: dict[str, tuple[str, str] | None] = {}
        for path in rng.sample(names, 3):
            if any(other != path and (other.startswith(path + "/") or path.startswith(other + "/"))
                   for other in changes):
                continue  # a file and a folder at one name in one commit: refused, not a case to compare
            changes[path] = None if rng.random() < 0.3 else (rng.choice(["100644", "100755"]),
                                                             blob[rng.choice("abcd")])
        ours = tree_with(repo.objects.tree, repo.objects.write_tree, base, changes)
        theirs = _git_tree(root, base, changes, tmp_path / f"index-{round_}")
        assert ours == theirs, (round_, base, changes)
        base = ours
    assert subprocess.run(["git", "-C", str(root), "fsck", "--strict", "--no-progress", "--unreachable"],
                          capture_output=True, text=True).returncode == 0
    repo.close()


def test_the_object_reader_sees_others_commits_and_outlives_a_kill(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".wikiwright").mkdir()  # a vault's state folder (the commit's pending index sync)
    repo = GitRepo(root)
    (root / "a.md").write_text("one\n")
    first = repo.commit_paths(["a.md"], "one", {})
    subprocess.run(["git", "-C", str(root), "pack-refs", "--all"], check=True)  # HEAD no longer in a file
    (root / "a.md").write_text("two\n")
    git(root, "commit", "-q", "-am", "person: two")
    person = git(root, "rev-parse", "HEAD").strip()
    assert repo.head() == person != first
    reader = repo.objects._proc
    assert reader is not None
    os.kill(reader.pid, signal.SIGKILL)  # a process-group kill of the daemon's children
    reader.wait()
    assert repo.head_blobs(["a.md"]) == {"a.md": git(root, "rev-parse", "HEAD:a.md").strip()}
    (root / "a.md").write_text("three\n")
    ours = repo.commit_paths(["a.md"], "three", {})
    assert git(root, "rev-parse", "HEAD^").strip() == person and repo.head() == ours
    repo.close()


def test_the_object_reader_does_not_keep_a_killed_gits_lock_alive(vault: Any) -> None:
    """The reader is a git process working in the vault for the daemon's whole life; it takes no
    lock, so a lock a killed git left is still found stale and removed (counting the reader as
    a git at work, no lock would ever be removed while the daemon runs)."""
    from wikiwright.vcs.gitlock import remove_stale_locks

    repo = GitRepo(vault.root)
    repo.head_blobs(["wiki/index.md"])  # the reader is running
    assert repo.objects._proc is not None and repo.objects._proc.poll() is None
    lock = vault.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    before = time.time() - 10
    os.utime(lock, (before, before))
    assert remove_stale_locks(vault.root, vault.state) == [".git/index.lock"]
    with subprocess.Popen(["git", "hash-object", "--stdin"], cwd=vault.root, stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL) as writer:  # any other git at work: a lock may be its own
        lock.write_bytes(b"")
        os.utime(lock, (before, before))
        assert remove_stale_locks(vault.root, vault.state) == []
        assert writer.stdin is not None
        writer.stdin.close()
    repo.close()
