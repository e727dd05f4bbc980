"""How the daemon commits: exactly its paths on top of HEAD, never the person's staged work,
never over a commit the person made meanwhile, never left over from an interrupted commit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from wikiwright.core.vault import Vault
from wikiwright.vcs.repo import GitRepo

from tests.helpers import git


# Every commit is HEAD's tree with exactly the bytes given (never `commit --only`,
# which reads the working tree).
def _repo(vault: Vault, cls: type[GitRepo] = GitRepo) -> GitRepo:
    return cls(vault.root)


def _page(vault: Vault, name: str, text: str) -> str:
    (vault.wiki / f"{name}.md").write_text(text)
    return f"wiki/{name}.md"


def _person_commits(root: Path, name: str) -> str:
    (root / name).write_text(f"written by a person: {name}\n")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", f"person: {name}")
    return git(root, "rev-parse", "HEAD").strip()


def _files(root: Path, rev: str) -> list[str]:
    return git(root, "show", "--format=", "--name-only", rev).split()


def test_a_commit_holds_its_paths_on_top_of_the_persons_latest_commit(vault: Vault) -> None:
    repo = _repo(vault)
    first = repo.commit_paths([_page(vault, "a", "# A\n")], "ingest: a", {"Wikiwright-Operation": "ingest"})
    person = _person_commits(vault.root, "notes.txt")
    second = repo.commit_paths([_page(vault, "b", "# B\n")], "ingest: b", {"Wikiwright-Operation": "ingest"})
    assert first and second
    assert git(vault.root, "rev-parse", f"{second}^").strip() == person
    assert _files(vault.root, second) == ["wiki/b.md"]
    assert "notes.txt" in git(vault.root, "ls-tree", "--name-only", second)
    assert git(vault.root, "status", "--porcelain", "--", "wiki").strip() == ""
    assert "Wikiwright-Operation: ingest" in git(vault.root, "log", "-1", "--format=%B")


def test_the_persons_staged_work_stays_staged_and_out_of_our_commits(vault: Vault) -> None:
    repo = _repo(vault)
    repo.commit_paths([_page(vault, "a", "# A\n")], "ingest: a", {})
    (vault.root / "draft.md").write_text("my staged draft\n")
    _page(vault, "a", "# A\n\nA person's staged change.\n")
    git(vault.root, "add", "draft.md", "wiki/a.md")
    sha = repo.commit_paths([_page(vault, "b", "# B\n")], "ingest: b", {})
    assert _files(vault.root, str(sha)) == ["wiki/b.md"]
    assert sorted(git(vault.root, "diff", "--cached", "--name-only").split()) == ["draft.md", "wiki/a.md"]


def test_an_interrupted_commit_leaves_nothing_behind_for_the_next_one(vault: Vault) -> None:
    repo = _repo(vault)
    repo.commit_paths([_page(vault, "a", "# A\n")], "ingest: a", {})
    head = git(vault.root, "rev-parse", "HEAD").strip()
    # A process died after writing its blobs and trees, before its commit: they are left in the
    # object store, unreferenced. And an older release's private index, with a page staged in it
    # and a marker naming HEAD, is still in .wikiwright/.
    stray = _page(vault, "stray", "# Half an operation\n")
    crashed = subprocess.run(
        [sys.executable, "-c", "import sys; from wikiwright.vcs.repo import GitRepo; "
         "GitRepo(__import__('pathlib').Path(sys.argv[1])).commit_paths([sys.argv[2]], 'ingest: stray', {})",
         str(vault.root), stray], env={**os.environ, "WIKIWRIGHT_CRASH_AT": "before-commit"})
    assert crashed.returncode == -signal.SIGKILL
    assert git(vault.root, "rev-parse", "HEAD").strip() == head
    old_index = vault.root / ".wikiwright" / "git-index"
    subprocess.run(["git", "-C", str(vault.root), "add", stray], check=True,
                   env={**os.environ, "GIT_INDEX_FILE": str(old_index)})
    tree = subprocess.run(["git", "-C", str(vault.root), "write-tree"], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_INDEX_FILE": str(old_index)}).stdout.strip()
    (vault.root / ".wikiwright" / "git-index.head").write_text(f"{head} {tree}\n")
    for committer in (repo, _repo(vault)):  # the same object, and a fresh one (a restart)
        sha = committer.commit_paths([_page(vault, "b", f"# B {id(committer)}\n")], "ingest: b", {})
        assert "wiki/stray.md" not in git(vault.root, "ls-tree", "-r", "--name-only", str(sha))
        assert _files(vault.root, str(sha)) == ["wiki/b.md"]
    assert "error" not in git(vault.root, "fsck", "--no-progress").lower()


class _RacingRepo(GitRepo):
    """Makes a real commit as the person just before we move HEAD (update-ref on the private
    index way, `git commit` on the other): HEAD is no longer what our commit was built on."""

    raced = False

    def _run(self, *args: str, env: Mapping[str, str] | None = None, strip: bool = True,
            input: bytes | None = None) -> str:
        if args and args[0] in ("update-ref", "commit") and not self.raced:
            self.raced = True
            _person_commits(self.root, "race.txt")
        return super()._run(*args, env=env, strip=strip, input=input)


def test_head_moving_under_a_commit_is_never_overwritten(vault: Vault) -> None:
    repo = _repo(vault, _RacingRepo)
    repo.commit_paths([_page(vault, "a", "# A\n")], "ingest: a", {})
    person = git(vault.root, "log", "-1", "--format=%H", "--", "race.txt").strip()
    head = git(vault.root, "rev-parse", "HEAD").strip()
    assert repo.raced and person and head != person
    assert git(vault.root, "rev-parse", "HEAD^").strip() == person  # ours went on top of theirs
    assert _files(vault.root, head) == ["wiki/a.md"]
    # The first attempt's commit is left dangling (git gc removes it); nothing is broken.
    assert "error" not in git(vault.root, "fsck", "--no-progress").lower()


def test_a_commit_with_nothing_changed_makes_no_commit(vault: Vault) -> None:
    repo = _repo(vault)
    path = _page(vault, "a", "# A\n")
    assert repo.commit_paths([path], "ingest: a", {})
    head = git(vault.root, "rev-parse", "HEAD").strip()
    assert repo.commit_paths([path], "ingest: a again", {}) is None
    assert _repo(vault).commit_paths([path], "ingest: a, fresh object", {}) is None
    assert git(vault.root, "rev-parse", "HEAD").strip() == head
