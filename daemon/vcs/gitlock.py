"""A git lock file nobody holds: when wikiwright may remove ``.git/index.lock`` itself.

git takes ``.git/index.lock`` (and ``HEAD.lock``, ``refs/…/<branch>.lock``, and
``<index>.lock`` beside an index named by ``GIT_INDEX_FILE``: sync's scratch
``.wikiwright/sync-index``, and ``.wikiwright/git-index``, the private index earlier releases
committed from) by creating the
file, and removes it when it is done; a git process killed on the way (the daemon's git child
killed with its process group, an OOM kill) leaves it behind, and every later git command
that needs it fails with "File exists" until someone removes it. git's own advice is to
remove it when no git process is running; this module applies that advice, conservatively:

- the caller holds the vault's write lock (taken here, re-entrantly), so no wikiwright
  operation is between two git commands of its own;
- no live git process works in this repository: on Linux, every process whose name starts
  with ``git`` is looked at in ``/proc`` — its working directory and its ``GIT_DIR``,
  ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` and ``GIT_COMMON_DIR`` — and one that cannot be looked
  at (another user's) counts as working here; a ``git cat-file`` (such as the daemon's own
  long-lived object reader) takes no lock and is not counted. Without ``/proc`` nothing is known and no lock
  is ever called stale (the caller waits, as for any lock);
- the lock file is the same file (inode, size, mtime) before and after the look, so a git
  command that started meanwhile, whose lock this could be, is never robbed of it;
- it was last written at least ``MIN_AGE_SECONDS`` ago: a program that writes the index
  in-process (libgit2, JGit, isomorphic-git: no process named git) holds its lock for
  milliseconds, never seconds.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..core.locks import vault_write_lock

log = logging.getLogger(__name__)

_PROC = Path("/proc")
MIN_AGE_SECONDS = 2.0
_GIT_VARS = (b"GIT_DIR=", b"GIT_WORK_TREE=", b"GIT_INDEX_FILE=", b"GIT_COMMON_DIR=")


# The index files wikiwright points git at with GIT_INDEX_FILE, in the vault's .wikiwright/
# (door/sync.py's scratch index; git-index: the private index of earlier releases, whose lock
# a vault may still hold). Only their locks are git's
# there: write.lock and daemon.lock beside them are wikiwright's own flock files.
PRIVATE_INDEX = "git-index"
SYNC_INDEX = "sync-index"
PRIVATE_INDEX_NAMES = (PRIVATE_INDEX, SYNC_INDEX)


def lock_files(repo_root: Path) -> list[Path]:
    """The lock files git may leave in a vault: ``.git``'s top-level ``*.lock``, the refs' ones,
    and those of the daemon's own index files in ``.wikiwright/``."""
    git_dir = repo_root / ".git"
    found = [*git_dir.glob("*.lock")]
    refs = git_dir / "refs"
    if refs.is_dir():
        found += refs.rglob("*.lock")
    found += [path for name in PRIVATE_INDEX_NAMES
              if (path := repo_root / ".wikiwright" / f"{name}.lock").exists()]
    return sorted(found)


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def git_running_in(repo_root: Path) -> bool | None:
    """True when a live git process works in this repository (or may: one we cannot look at);
    False when none does; None when this system cannot tell (no ``/proc``)."""
    if not (_PROC / "self" / "stat").exists():
        return None
    roots = tuple(dict.fromkeys((os.path.realpath(repo_root), os.path.realpath(repo_root / ".git"))))
    me = os.getpid()
    try:
        entries = list(os.scandir(_PROC))
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        base = _PROC / entry.name
        try:
            stat = (base / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # gone meanwhile
        name, _, rest = stat.partition("(")[2].rpartition(")")
        if not name.startswith("git") or rest.split()[:1] == ["Z"]:
            continue  # not git, or a zombie (dead: it holds nothing)
        if _reads_only(base):
            continue
        try:
            cwd = os.readlink(base / "cwd")
        except PermissionError:
            return True  # another user's git: it may be working here
        except OSError:
            continue
        if _inside(cwd, roots):
            return True
        try:
            environ = (base / "environ").read_bytes()
        except PermissionError:
            return True
        except OSError:
            continue
        for item in environ.split(b"\0"):
            for var in _GIT_VARS:
                if item.startswith(var):
                    value = item[len(var):].decode("utf-8", "surrogateescape")
                    if value and _inside(os.path.realpath(os.path.join(cwd, value)), roots):
                        return True
    return False


def _reads_only(base: Path) -> bool:
    """A ``git cat-file`` (the daemon's object reader, vcs/store.py, or anyone's): it takes no
    lock and writes nothing, so it never holds one of the lock files."""
    try:
        argv = (base / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return len(argv) > 1 and argv[1] == b"cat-file"


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def stale_locks(repo_root: Path, state_dir: Path) -> list[Path]:
    """The git lock files in ``repo_root`` that nobody holds (see the module docstring)."""
    with vault_write_lock(state_dir):
        return _stale(repo_root)


def _stale(repo_root: Path) -> list[Path]:
    before = {path: _identity(path) for path in lock_files(repo_root)}
    settled = time.time_ns() - int(MIN_AGE_SECONDS * 1e9)
    before = {path: ident for path, ident in before.items() if ident is not None and ident[2] <= settled}
    if not before or git_running_in(repo_root) is not False:
        return []
    return [path for path, ident in before.items() if _identity(path) == ident]


def remove_stale_locks(repo_root: Path, state_dir: Path) -> list[str]:
    """Remove the git lock files nobody holds; their repository-relative names, each logged."""
    removed = []
    with vault_write_lock(state_dir):
        for path in _stale(repo_root):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            rel = path.relative_to(repo_root).as_posix()
            log.warning("removed %s: a git command that was killed left it, and no git process runs in the "
                        "vault", rel)
            removed.append(rel)
    return removed
