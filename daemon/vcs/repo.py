"""Git: one commit per operation, with machine-readable trailers.

Driven through the real git CLI, which keeps git's own semantics (attributes, filters, locks):
:meth:`GitRepo.run` starts it as GitPython's command layer (``git.Git.execute``) does (the same
environment, ``LC_ALL=C``, the same :class:`git.GitCommandError` on failure) without importing
GitPython, which costs ~150 ms that ``wikiwright status`` must not pay; GitPython is imported
on first need (an error to raise, ``_git`` for callers that use it directly). We never use GitPython's ``Repo``
object model in the long-running daemon: it keeps ``cat-file`` helper processes alive and
leaks (see shared/reference/deps.md §4).

Rules kept here: a commit holds exactly the bytes it is given on top of HEAD, its tree built in
memory from HEAD's (see :meth:`GitRepo._commit_on`) and never read back from the working tree
or any index, so a person saving a file meanwhile is never committed under our name and whatever
they staged stays staged and uncommitted; HEAD moves by compare-and-swap, never over a commit of theirs; no checkout,
reset, stash, clean or pull ever runs; while a merge, rebase or cherry-pick is in progress, or HEAD is detached, commits
pause with a reason; a held ``index.lock`` is retried with backoff, then reported.

An ingest's commit costs three git processes (``commit-tree``, ``update-ref``, ``update-index``
of the person's index): objects are read through one long-lived ``cat-file`` and blobs and
trees written in-process (:mod:`.store`, :mod:`.trees`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.crashpoints import crash_point
from ..core.errors import CommitPaused, WikiwrightError
from ..core.opkinds import OpKind
from .gitlock import remove_stale_locks
from .store import ObjectStore
from .trees import EMPTY_TREE, entry_at, is_blob_mode, tree_with

log = logging.getLogger(__name__)

_LOCK_MARKERS = ("index.lock", "File exists", "Unable to create", "another git process")


class _GitPython:
    """The ``git`` module (GitPython), imported on first attribute access."""

    def __getattr__(self, name: str) -> Any:
        import git as module

        return getattr(module, name)


git = _GitPython()  # `except git.GitCommandError` imports it only when an exception is matched


class _HeadMoved(Exception):
    """HEAD changed between reading it and moving it (the person committed): try again."""


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


_NO_AUTO_GC = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
               "GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false"}
GC_WAIT_SECONDS = 300.0


# Told just before HEAD moves: (old HEAD or None, the new commit, the person's-index entries
# still to record: path -> blob id, None for removed).
BeforeMove = Callable[[str | None, str, Mapping[str, str | None]], None]


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
            # The daemon owns housekeeping (:meth:`GitRepo.housekeeping`): no git command it runs
            # (commit-tree, update-ref, fetch, ...) starts an automatic, detached `gc --auto` that
            # would prune loose objects while doctor's `git fsck` walks them.
            **_NO_AUTO_GC,
            "GIT_TERMINAL_PROMPT": "0",
        }
        self._gitpython: Any = None
        # The paths a commit that moved HEAD still has to record in the person's index (a
        # crash in between is finished by finish_index_sync). The name is from the days of a
        # private index (.wikiwright/git-index), kept so a vault's pending file is still found.
        self.pending_sync = root / ".wikiwright" / "git-index.pending"
        self._objects_path: Path | None = None
        self.objects = ObjectStore(root, self._full_env, self._objects_dir)

    @property
    def _git(self) -> Any:
        """GitPython's ``git.Git`` for this repository (made on first use)."""
        if self._gitpython is None:
            self._gitpython = git.Git(str(self.root))
        return self._gitpython

    def close(self) -> None:
        """Stop the object reader (started again on the next read)."""
        self.objects.close()

    def _full_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self._env, **(env or {})}

    def _objects_dir(self) -> Path:
        if self._objects_path is None:
            if self.git_dir.is_dir() and not any(
                    name in os.environ for name in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")):
                self._objects_path = self.git_dir / "objects"
            else:
                self._objects_path = self.root / self._run("rev-parse", "--git-path", "objects")
        return self._objects_path

    def _run(self, *args: str, env: Mapping[str, str] | None = None, strip: bool = True,
            input: bytes | None = None) -> str:
        command = ["git", *args]
        full_env = self._full_env(env)
        if input is None:
            proc = subprocess.run(command, cwd=self.root, env=full_env, stdin=subprocess.DEVNULL,
                                  capture_output=True, check=False)
        else:
            proc = subprocess.run(command, cwd=self.root, env=full_env, input=input, capture_output=True, check=False)
        if proc.returncode != 0:
            raise git.GitCommandError(command, proc.returncode, proc.stderr, proc.stdout)
        out = proc.stdout[:-1] if strip and proc.stdout.endswith(b"\n") else proc.stdout
        return out.decode("utf-8", "surrogateescape")

    # -- state -----------------------------------------------------------------------

    def init_if_missing(self) -> bool:
        if self.git_dir.exists():
            return False
        self._run("init", "-q")
        return True

    def head(self) -> str | None:
        from_files = self._head_from_files()
        if from_files is not None:
            return from_files
        if not self.git_dir.exists():
            return None  # no repository (yet): no reader to start
        found = self.objects.info("HEAD")  # packed refs, reftable: git resolves it
        return found[0] if found is not None else None

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

    def commit_person_edits(self, paths: Sequence[str], before_move: BeforeMove | None = None) -> str | None:
        """Commit a person's uncommitted edits to ``paths`` under their own git identity.

        Called before the daemon changes those files, so history shows who wrote what. Only
        paths whose content differs from HEAD are committed (exactly the bytes read here); the
        person's other work is not touched.
        """
        return self.commit_person_contents({rel: self.read_worktree(rel) for rel in dict.fromkeys(paths)}, before_move)

    def commit_person_contents(self, contents: Mapping[str, bytes | None],
                               before_move: BeforeMove | None = None) -> str | None:
        """Commit these bytes (read from the person's files) where they differ from HEAD, as theirs."""
        head = self.head_blobs(list(contents))
        changed = {rel: data for rel, data in contents.items()
                   if (git_blob_id(data) if data is not None else None) != head.get(rel)}
        if not changed:
            return None
        return self.commit_contents(
            changed, "edit: your changes to " + ", ".join(changed),
            {"Wikiwright-Operation": OpKind.USER_EDIT.value}, author=self.user_identity(), before_move=before_move,
        )

    def user_identity(self) -> tuple[str, str]:
        """The person's own git identity (for committing their edits as theirs)."""
        values = []
        for key in ("user.name", "user.email"):
            try:
                values.append(self._run("config", key))
            except git.GitCommandError:
                values.append("")
        return values[0] or "Vault owner", values[1] or "owner@localhost"

    # -- objects -------------------------------------------------------------------------

    def read_worktree(self, rel: str) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def tree_of(self, rev: str) -> str | None:
        """The tree id of ``rev`` (a commit or tree; ``HEAD``), None when there is none."""
        if rev == "HEAD":
            head = self.head()
            if head is None:
                return None
            rev = head
        found = self.objects.info(f"{rev}^{{tree}}")
        return found[0] if found and found[1] == "tree" else None

    def head_blobs(self, paths: Sequence[str], rev: str = "HEAD") -> dict[str, str]:
        """The blob id of each of ``paths`` in ``rev`` (paths absent there are left out)."""
        if not paths:
            return {}
        tree = self.tree_of(rev)
        if tree is None:
            return {}  # no commit yet
        found = {}
        for path in dict.fromkeys(paths):
            entry = entry_at(self.objects.tree, tree, path)
            if entry is not None and is_blob_mode(entry[0]):
                found[path] = entry[1]
        return found

    def has_blob(self, blob: str) -> bool:
        """The object store holds this blob (``git cat-file -e <blob>^{blob}``)."""
        found = self.objects.info(blob)
        return found is not None and found[1] == "blob"

    def store_bytes(self, data: bytes) -> str:
        """Write ``data`` into the object store as a blob (exactly these bytes); its id."""
        return self.objects.write("blob", data)

    def _index_info(self, entries: Mapping[str, str | None], modes: Mapping[str, str]) -> None:
        """Record ``entries`` (path -> blob id, None: removed) in the person's index."""
        lines = []
        for rel, blob in entries.items():
            if blob is None:
                lines.append(f"0 {'0' * 40}\t{rel}\n")
            else:
                lines.append(f"{modes.get(rel, '100644')} {blob}\t{rel}\n")
        data = "".join(lines).encode("utf-8", "surrogateescape")
        self._with_lock_retry(lambda: self._run("update-index", "--index-info", input=data))

    # -- committing ----------------------------------------------------------------------

    def commit_paths(
        self,
        paths: Sequence[str],
        subject: str,
        trailers: Mapping[str, str],
        body: str = "",
        author: tuple[str, str] | None = None,
    ) -> str | None:
        """Commit the working-tree content of exactly ``paths`` (a folder: the files in it); the
        new sha, None if unchanged."""
        files: list[str] = []
        for rel in paths:
            folder = self.root / rel
            if folder.is_dir() and not folder.is_symlink():
                files += sorted(p.relative_to(self.root).as_posix() for p in folder.rglob("*") if p.is_file())
            else:
                files.append(rel)
        return self.commit_contents({rel: self.read_worktree(rel) for rel in files}, subject, trailers, body, author)

    def commit_contents(
        self,
        contents: Mapping[str, bytes | None],
        subject: str,
        trailers: Mapping[str, str],
        body: str = "",
        author: tuple[str, str] | None = None,
        before_move: BeforeMove | None = None,
    ) -> str | None:
        """Commit these bytes at these paths (None: the path is removed); None if nothing changed."""
        stored = {rel: self.store_bytes(data) if data is not None else None for rel, data in contents.items()}
        return self.commit_blobs(stored, subject, trailers, body, author, before_move)

    def commit_blobs(
        self,
        entries: Mapping[str, str | None],
        subject: str,
        trailers: Mapping[str, str],
        body: str = "",
        author: tuple[str, str] | None = None,
        before_move: BeforeMove | None = None,
    ) -> str | None:
        """Commit HEAD's tree with ``entries`` (path -> blob id already stored, None: removed).

        Never reads the working tree: the commit holds exactly the blobs given, whatever a
        person saves meanwhile. Raises CommitPaused when the repository is busy or in a state
        we must not commit in. ``before_move(head, commit, index)``, when given, is told the
        HEAD move and the person's-index entries still to record just before HEAD moves (the
        door journals them); without it they are named in ``git-index.pending``.
        """
        if not entries:
            return None
        env = None
        if author:
            env = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
                   "GIT_COMMITTER_NAME": author[0], "GIT_COMMITTER_EMAIL": author[1]}
        problem = self.problem()
        if problem:
            raise CommitPaused(problem)
        message = format_message(subject, trailers, body)
        for _attempt in range(5):
            head = self.head()
            try:
                return self._commit_on(head, dict(entries), message, env, before_move)
            except _HeadMoved:
                continue
        raise CommitPaused("HEAD kept moving while committing (another git process is committing)")

    def _commit_on(
        self, head: str | None, entries: dict[str, str | None], message: str, env: Mapping[str, str] | None,
        before_move: BeforeMove | None = None,
    ) -> str | None:
        """Commit ``head``'s tree plus ``entries``, move HEAD from ``head``, sync the person's index.

        The tree is HEAD's with the entries set (:mod:`.trees`), so nothing the person staged is
        swept in; ``update-ref`` with the old value is a compare-and-swap on HEAD, so a commit
        the person made meanwhile is never overwritten. Three git processes: ``commit-tree``,
        ``update-ref`` and ``update-index`` of the person's index.
        """
        # The person's git is mid-operation (a `git commit` waiting for its message holds
        # index.lock): moving HEAD now would make their commit fail. Wait for it.
        self._with_lock_retry(self._refuse_while_index_locked)
        base = self.tree_of(head) if head else None
        if head and base is None:
            # Never commit our paths alone: that would remove every other file from the vault's history.
            raise WikiwrightError(f"git cannot read the tree of HEAD ({head}) in {self.root}")
        modes = self._modes(list(entries))
        changes = {rel: (modes.get(rel, "100644"), blob) if blob is not None else None for rel, blob in entries.items()}
        tree = tree_with(self.objects.tree, self.objects.write_tree, base, changes)
        if tree == (base or EMPTY_TREE):
            self._sync_person_index(entries, modes)
            return None  # none of the paths changed
        crash_point("before-commit")
        parents = ["-p", head] if head else []
        commit = self._run("commit-tree", tree, *parents, env=env, input=message.encode("utf-8"))
        subject = message.split("\n", 1)[0]
        # Named before HEAD moves: a crash before the person's index catches up is finished by
        # the door's recovery (its journal) or finish_index_sync, never left as a stale index.
        if before_move is not None:
            before_move(head, commit, entries)
        else:
            self.pending_sync.write_text("".join(f"{blob or '-'} {rel}\n" for rel, blob in entries.items()),
                                         encoding="utf-8", errors="surrogateescape")
        try:
            self._run("update-ref", "-m", f"commit: {subject}", "HEAD", commit, head or "")
        except git.GitCommandError as exc:
            self.pending_sync.unlink(missing_ok=True)
            raise _HeadMoved() from exc
        crash_point("after-commit")
        self._sync_person_index(entries, modes)
        self.pending_sync.unlink(missing_ok=True)
        return commit

    def finish_index_sync(self) -> None:
        """After a crash between moving HEAD and updating the person's index: the paths whose
        blob in HEAD is the one that commit wrote get it in the index too (so `git status` is clean)."""
        try:
            rows = self.pending_sync.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
        except FileNotFoundError:
            return
        self.finish_index_entries({rel: (None if blob == "-" else blob)
                                   for blob, _, rel in (row.partition(" ") for row in rows) if rel})
        self.pending_sync.unlink(missing_ok=True)

    def finish_index_entries(self, wanted: Mapping[str, str | None]) -> None:
        """The paths whose blob in HEAD is the one a commit wrote (``wanted``) get it in the
        person's index too (after a crash between moving HEAD and updating that index)."""
        head = self.head_blobs(list(wanted))
        landed = {rel: blob for rel, blob in wanted.items() if head.get(rel) == blob}
        if landed:
            self._sync_person_index(landed, self._modes(list(landed)))

    def _modes(self, paths: list[str]) -> dict[str, str]:
        """An executable file stays one (its mode as on disk); everything else is 100644."""
        modes = {}
        for rel in paths:
            try:
                if os.stat(self.root / rel).st_mode & 0o100:
                    modes[rel] = "100755"
            except OSError:
                continue
        return modes

    def _refuse_while_index_locked(self) -> str:
        if (self.git_dir / "index.lock").exists():
            raise git.GitCommandError(["git", "commit"], 128, "fatal: Unable to create index.lock: File exists")
        return ""

    def _sync_person_index(self, entries: Mapping[str, str | None], modes: Mapping[str, str]) -> None:
        """Record the committed blobs in the person's index, so `git status` shows what they
        changed since (nothing, or their own newer edits), never our commit as a change."""
        try:
            self._index_info(entries, modes)
        except (CommitPaused, WikiwrightError) as exc:
            # The commit stands; the next commit of these paths (or `git add`) settles the index.
            log.warning("committed, but could not update the git index for %s: %s", ", ".join(entries), exc)

    def sync_person_index(self, entries: Mapping[str, str | None]) -> None:
        """After a crash between a commit and this step (recovery rolls the operation forward)."""
        self._sync_person_index(entries, self._modes(list(entries)))

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
                if self._remove_stale_locks():
                    continue  # a killed git command's lock, held by nobody: removed (vcs/gitlock.py)
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

    def _remove_stale_locks(self) -> bool:
        """Remove git lock files nobody holds (only in a vault: its write lock is the guard)."""
        state = self.root / ".wikiwright"
        return state.is_dir() and bool(remove_stale_locks(self.root, state))

    # -- reading history ---------------------------------------------------------------

    def log(self, *args: str, limit: int | None = None) -> list[CommitInfo]:
        fmt = "%H%x1f%s%x1f%cI%x1f%an%x1f%(trailers:only,unfold)%x1e"
        cmd = ["log", f"--format={fmt}"]
        if limit:
            cmd.append(f"-n{limit}")
        try:
            out = self._run(*cmd, *args, strip=False)
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

    def blob_text(self, blob: str) -> str | None:
        data = self.objects.read(blob, "blob")
        return data.decode("utf-8", "surrogateescape") if data is not None else None

    def show(self, rev: str, path: str) -> str | None:
        try:
            return self._run("show", f"{rev}:{path}", strip=False)
        except git.GitCommandError:
            return None

    def fsck(self) -> tuple[bool, str]:
        """``git fsck --full``, after any gc another process started has finished (hold the
        vault's write lock around it, so the daemon's own housekeeping cannot start meanwhile)."""
        self.wait_for_gc()
        try:
            out = self._run("fsck", "--full", "--no-progress")
            return True, out
        except git.GitCommandError as exc:
            return False, str(exc.stderr)

    # -- housekeeping --------------------------------------------------------------------

    def gc_running(self) -> bool:
        """A ``git gc`` (any process on this machine) is running: ``.git/gc.pid`` names a live pid."""
        try:
            pid_text, _, host = (self.git_dir / "gc.pid").read_text(encoding="utf-8").strip().partition(" ")
            pid = int(pid_text)
        except (OSError, ValueError):
            return False
        if host and host != os.uname().nodename:
            return True  # another machine's gc on a shared disk: git itself waits for it
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False  # a stale file left by a killed gc
        except PermissionError:
            return True
        return True

    def wait_for_gc(self, timeout: float = GC_WAIT_SECONDS) -> bool:
        """Wait while a gc runs; False if it still ran after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if self.gc_running():
            log.info("waiting for a git gc running in the vault to finish")
        while self.gc_running():
            if time.monotonic() > deadline:
                log.warning("a git gc is still running after %.0fs", timeout)
                return False
            time.sleep(0.1)
        return True

    def housekeeping(self) -> None:
        """``git gc --auto`` in the foreground, with the person's own gc settings (the
        automatic gc is off only for the daemon's other commands). Call it under the vault's
        write lock: no commit of ours and no doctor fsck runs meanwhile."""
        if not self.wait_for_gc():
            return
        self._run("-c", "gc.autoDetach=false", "gc", "--auto", "--quiet", env={"GIT_CONFIG_COUNT": "0"})


def git_status(repo: GitRepo, *args: str) -> tuple[int, str, str]:
    """A git command whose exit status is an answer (merge-file, merge-tree): (status, out, err)."""
    env = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **repo._env}
    proc = subprocess.run(["git", *args], cwd=repo.root, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          check=False)
    return (proc.returncode, proc.stdout.decode("utf-8", "surrogateescape"),
            proc.stderr.decode("utf-8", "surrogateescape"))


def merge_file(repo: GitRepo, base: str, ours: str, theirs: str, labels: tuple[str, str, str],
               flags: Sequence[str] = ()) -> tuple[int, str]:
    """``git merge-file -p`` on three texts: (git's status — 0 clean, >0 conflicts — and the text)."""
    import tempfile

    work = repo.root / ".wikiwright" / "merge"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
            files.append(str(path))
        status, out, _err = git_status(repo, "merge-file", "-p", *flags, "-L", labels[0], "-L", labels[1],
                                        "-L", labels[2], *files)
    return status, out


def merge_texts(repo: GitRepo, base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """Three-way merge with ``git merge-file``; returns (text, clean).

    ``ours`` is what is on disk now (a person's edits), ``theirs`` what the daemon wants to
    write, ``base`` what both started from. On conflict the text carries conflict markers
    and must not be written to a page.
    """
    status, out = merge_file(repo, base, ours, theirs, ("person", "base", "wikiwright"))
    return out, status == 0
