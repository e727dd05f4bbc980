"""Git: one commit per operation, with machine-readable trailers.

Driven through GitPython's command layer (``git.Git``), which runs the real git CLI and so
keeps git's own semantics (attributes, filters, locks). We never use GitPython's ``Repo``
object model in the long-running daemon: it keeps ``cat-file`` helper processes alive and
leaks (see shared/reference/deps.md §4).

Rules kept here: commits name their paths (``git commit --only -- PATHS``), so whatever the
user has staged stays staged and uncommitted; no checkout, reset, stash, clean or pull ever
runs; while a merge, rebase or cherry-pick is in progress, or HEAD is detached, commits
pause with a reason; a held ``index.lock`` is retried with backoff, then reported.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git

from .crashpoints import crash_point
from .errors import CommitPaused, WikiwrightError

log = logging.getLogger(__name__)

_LOCK_MARKERS = ("index.lock", "File exists", "Unable to create", "another git process")


def git_blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (``git hash-object``), computed in-process."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    date: str
    author: str
    trailers: dict[str, str]


def format_message(subject: str, trailers: Mapping[str, str], body: str = "") -> str:
    lines = [subject.replace("\n", " ").strip()[:200]]
    if body:
        lines += ["", body.strip()]
    if trailers:
        lines.append("")
        lines += [f"{key}: {str(value).replace(chr(10), ' ')}" for key, value in trailers.items()]
    return "\n".join(lines) + "\n"


class GitRepo:
    def __init__(
        self,
        root: Path,
        author_name: str = "wikiwright",
        author_email: str = "wikiwright@localhost",
        lock_retry_seconds: float = 60.0,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.git_dir = root / ".git"
        self.lock_retry_seconds = lock_retry_seconds
        self.on_wait = on_wait
        self._env = {
            "GIT_AUTHOR_NAME": author_name,
            "GIT_AUTHOR_EMAIL": author_email,
            "GIT_COMMITTER_NAME": author_name,
            "GIT_COMMITTER_EMAIL": author_email,
            # Read-only commands must not take index.lock from under the user.
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
        }
        self._git = git.Git(str(root))

    def run(self, *args: str, env: Mapping[str, str] | None = None, strip: bool = True) -> str:
        full_env = {**self._env, **(env or {})}
        result = self._git.execute(
            ["git", *args], env=full_env, strip_newline_in_stdout=strip
        )
        return str(result)

    # -- state -----------------------------------------------------------------------

    def init_if_missing(self) -> bool:
        if self.git_dir.exists():
            return False
        self.run("init", "-q")
        return True

    def head(self) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "-q", "HEAD") or None
        except git.GitCommandError:
            return None

    def _head_from_files(self) -> str | None:
        """HEAD's sha read from .git's files (no git process); None when only git can say."""
        try:
            head = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
            if not head.startswith("ref: refs/"):
                return None
            sha = (self.git_dir / head[5:]).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None  # packed or reftable refs: ask git
        return sha if len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha) else None

    def problem(self) -> str | None:
        """Why commits must wait right now, or None when they may go ahead."""
        checks = (
            ("MERGE_HEAD", "a merge is in progress in the vault's git repository; finish or abort it"),
            ("rebase-merge", "a rebase is in progress in the vault's git repository; finish or abort it"),
            ("rebase-apply", "a rebase or am is in progress in the vault's git repository"),
            ("CHERRY_PICK_HEAD", "a cherry-pick is in progress in the vault's git repository"),
            ("REVERT_HEAD", "a revert is in progress in the vault's git repository"),
        )
        for name, reason in checks:
            if (self.git_dir / name).exists():
                return reason
        try:
            head = (self.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return "the vault has no git repository (.git/HEAD missing)"
        if not head.startswith("ref:"):
            return "HEAD is detached in the vault's git repository; check out a branch to resume commits"
        return None

    def commit_person_edits(self, paths: Sequence[str]) -> str | None:
        """Commit a person's uncommitted edits to ``paths`` under their own git identity.

        Called before the daemon changes those pages, so history shows who wrote what. Only
        paths git sees as changed are committed; the person's other work is not touched.
        """
        changed = [p for p in paths if not self.is_tracked_clean(p)]
        if not changed:
            return None
        return self.commit_paths(
            changed, "edit: your changes to " + ", ".join(changed),
            {"Wikiwright-Operation": "user-edit"}, author=self.user_identity(),
        )

    def user_identity(self) -> tuple[str, str]:
        """The person's own git identity (for committing their edits as theirs)."""
        values = []
        for key in ("user.name", "user.email"):
            try:
                values.append(self.run("config", key))
            except git.GitCommandError:
                values.append("")
        return values[0] or "Vault owner", values[1] or "owner@localhost"

    # -- committing ----------------------------------------------------------------------

    def commit_paths(
        self,
        paths: Sequence[str],
        subject: str,
        trailers: Mapping[str, str],
        body: str = "",
        author: tuple[str, str] | None = None,
    ) -> str | None:
        """Commit exactly ``paths`` (vault-relative); returns the new sha, None if unchanged.

        Raises CommitPaused when the repository is busy or in a state we must not commit in.
        """
        if not paths:
            return None
        env = None
        if author:
            env = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
                   "GIT_COMMITTER_NAME": author[0], "GIT_COMMITTER_EMAIL": author[1]}
        problem = self.problem()
        if problem:
            raise CommitPaused(problem)
        message_file = self.root / ".wikiwright" / f"commit-msg-{os.getpid()}-{random.randrange(1 << 30)}"
        message_file.parent.mkdir(parents=True, exist_ok=True)
        message_file.write_text(format_message(subject, trailers, body), encoding="utf-8")
        try:
            unique = sorted(set(paths))
            self._with_lock_retry(lambda: self.run("add", "-A", "--", *unique))
            crash_point("before-commit")
            try:
                self._with_lock_retry(
                    lambda: self.run(
                        "commit", "-q", "--no-verify", "--only", "-F", str(message_file), "--", *unique,
                        env=env,
                    )
                )
            except CommitPaused:
                raise
            except WikiwrightError:
                # `git commit` refuses when none of the paths changed. Asking why only after a
                # refusal keeps the usual case at two git processes, like a bare add + commit.
                if self.head() is None:
                    raise
                staged = self.run("diff", "--cached", "--name-only", "--no-renames", "--", *unique)
                if staged.strip():
                    raise
                return None
            sha = self._head_from_files() or self.head()
            crash_point("after-commit")
            return sha
        finally:
            message_file.unlink(missing_ok=True)

    def _with_lock_retry(self, action: Callable[[], str]) -> str:
        deadline = time.monotonic() + self.lock_retry_seconds
        delay = 0.1
        while True:
            try:
                return action()
            except git.GitCommandError as exc:
                text = f"{exc.stderr} {exc.stdout}"
                if not any(marker in text for marker in _LOCK_MARKERS):
                    raise WikiwrightError(f"git failed: {' '.join(map(str, exc.command[:3]))}: "
                                          f"{str(exc.stderr).strip()}") from exc
                if time.monotonic() >= deadline:
                    raise CommitPaused(
                        "another git process holds .git/index.lock in the vault; commits resume "
                        "when it is released (remove the file only if no git command is running)"
                    ) from exc
                if self.on_wait:
                    self.on_wait("waiting for .git/index.lock held by another git process")
                log.info("index.lock held by another git process; retrying in %.1fs", delay)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 5.0)

    # -- reading history ---------------------------------------------------------------

    def log(self, *args: str, limit: int | None = None) -> list[CommitInfo]:
        fmt = "%H%x1f%s%x1f%cI%x1f%an%x1f%(trailers:only,unfold)%x1e"
        cmd = ["log", f"--format={fmt}"]
        if limit:
            cmd.append(f"-n{limit}")
        try:
            out = self.run(*cmd, *args, strip=False)
        except git.GitCommandError:
            return []
        commits = []
        for record in out.split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            sha, subject, date, author, trailer_text = (record.split("\x1f") + [""] * 5)[:5]
            trailers = {}
            for line in trailer_text.splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    trailers[key.strip()] = value.strip()
            commits.append(CommitInfo(sha, subject, date, author, trailers))
        return commits

    def find_source_commit(self, sha256: str) -> str | None:
        """The commit that ingested content ``sha256``, if one exists (crash recovery)."""
        commits = self.log("-F", f"--grep=sha256:{sha256}", limit=1)
        return commits[0].sha if commits else None

    def blob_text(self, blob: str) -> str | None:
        try:
            return self.run("cat-file", "blob", blob, strip=False)
        except git.GitCommandError:
            return None

    def show(self, rev: str, path: str) -> str | None:
        try:
            return self.run("show", f"{rev}:{path}", strip=False)
        except git.GitCommandError:
            return None

    def is_tracked_clean(self, path: str) -> bool:
        """True when ``path`` has no uncommitted changes (staged or not) against HEAD."""
        out = self.run("status", "--porcelain", "--", path)
        return not out.strip()

    def fsck(self) -> tuple[bool, str]:
        try:
            out = self.run("fsck", "--full", "--no-progress")
            return True, out
        except git.GitCommandError as exc:
            return False, str(exc.stderr)


def merge_texts(repo: GitRepo, base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Three-way merge with ``git merge-file``; returns (text, clean).

    ``ours`` is what is on disk now (a person's edits), ``theirs`` what the daemon wants to
    write, ``base`` what both started from. On conflict the text carries conflict markers
    and must not be written to a page.
    """
    import tempfile

    work = repo.root / ".wikiwright" / "merge"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            files.append(str(path))
        status, out, _err = repo._git.execute(
            ["git", "merge-file", "-p", "-L", "person", "-L", "base", "-L", "wikiwright", *files],
            with_extended_output=True, with_exceptions=False, strip_newline_in_stdout=False,
        )
    return str(out), status == 0
