"""Questions the rest of the daemon asks of the vault's history, as named functions with typed answers.

Every git command the daemon runs outside this package goes through a function here (or
:mod:`.repo`, :mod:`.remote`, :mod:`.objects`): callers say what they want to know (the
commits in a range, whether one commit is in another's history, the paths a commit changed),
never which plumbing command answers it or how its output is parsed. A command whose exit
status is the answer (``merge-base --is-ancestor``, ``git grep``) is asked through
:func:`.repo.git_status`, so no exception (and no GitPython import) is raised for a "no".

``tests/test_architecture.py`` checks that no module outside ``vcs/`` starts git itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .repo import GitRepo, git, git_status

# -- commits ---------------------------------------------------------------------------------

def rev_list(repo: GitRepo, *revs: str, grep: str = "") -> list[str]:
    """The commits ``git rev-list revs`` lists (newest first), those whose message holds the
    fixed string ``grep`` when given; empty when a revision is unknown (an empty history)."""
    args = ["rev-list", *revs, *(("-F", f"--grep={grep}") if grep else ())]
    try:
        return repo._run(*args).split()
    except git.GitCommandError:
        return []


def all_commits(repo: GitRepo) -> set[str]:
    """Every commit reachable from any ref."""
    return set(rev_list(repo, "--all"))


def unpublished_commits(repo: GitRepo, rev: str = "HEAD") -> set[str]:
    """The commits of ``rev``'s history that no remote-tracking branch holds (made here)."""
    return set(rev_list(repo, rev, "--not", "--remotes"))


def resolve_commit(repo: GitRepo, rev: str) -> str | None:
    """The full sha of the commit ``rev`` names (a sha prefix, a ref), None when none."""
    status, out, _err = git_status(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")
    return out.strip() or None if status == 0 else None


def is_ancestor(repo: GitRepo, older: str, newer: str) -> bool:
    """``older`` is in ``newer``'s history (a commit is its own ancestor)."""
    status, _out, _err = git_status(repo, "merge-base", "--is-ancestor", older, newer)
    return status == 0


def ancestors_among(repo: GitRepo, commits: Iterable[str], tip: str) -> set[str]:
    """Those of ``commits`` that are in ``tip``'s history (empty when ``tip`` is unknown): one
    walk of that history for all of them, instead of a ``merge-base`` process per commit."""
    wanted = set(commits)
    if not wanted:
        return set()
    return wanted & set(rev_list(repo, tip))


def merge_base(repo: GitRepo, one: str, other: str) -> str | None:
    """The best common ancestor of two commits, None when they share no history."""
    status, out, _err = git_status(repo, "merge-base", one, other)
    return out.strip() or None if status == 0 else None


def verify_objects_since(repo: GitRepo, since: str) -> tuple[bool, str]:
    """Read every object reachable from a ref but not from ``since`` and check its hash and
    links (``rev-list --objects --verify-objects``): (all sound, git's complaint)."""
    try:
        repo._run("rev-list", "--objects", "--verify-objects", "--all", "--not", since)
        return True, ""
    except git.GitCommandError as exc:
        return False, str(exc.stderr)


@dataclass(frozen=True)
class Authored:
    sha: str
    author: str  # the author's name


def commit_authors(repo: GitRepo, revisions: str) -> list[Authored]:
    """(sha, author name) of each commit in ``revisions`` (a rev or a range), newest first."""
    out = repo._run("log", "--format=%H%x1f%an", revisions)
    found = []
    for line in out.splitlines():
        sha, _, author = line.partition("\x1f")
        if sha:
            found.append(Authored(sha, author))
    return found


def patch_log(repo: GitRepo, revs: Sequence[str], format: str) -> str:
    """``git log --reverse -p -U0`` of ``revs`` (all of HEAD's history when empty), oldest
    first, each commit headed by ``format`` and followed by its patch against its first parent
    (no renames, no colour, no external diff or textconv, paths unquoted); empty when git fails."""
    try:
        return repo._run(
            "-c", "core.quotePath=false", "log", "--reverse", "-p", "-U0", "--no-color", "--no-ext-diff",
            "--no-textconv", "--no-renames", "--diff-merges=first-parent", f"--format={format}", *revs, strip=False,
        )
    except git.GitCommandError:
        return ""


def local_commit_with_object(repo: GitRepo, blob: str, author: str, path: str) -> str | None:
    """The newest commit by ``author`` (matched literally) in HEAD's history and on no
    remote-tracking branch that adds or removes object ``blob`` under ``path``; None if none."""
    try:
        out = repo._run("log", "HEAD", "--not", "--remotes", "-n1", "--format=%H", "--fixed-strings",
                       f"--author={author}", f"--find-object={blob}", "--", path)
    except git.GitCommandError:
        return None
    return out.strip() or None


# -- paths -----------------------------------------------------------------------------------

def paths_changed(repo: GitRepo, commit: str) -> list[str]:
    """The paths ``commit`` changed against its first parent (all its files for a root commit)."""
    out = repo._run("diff-tree", "--no-commit-id", "-r", "--name-only", "--no-renames", "-z", "--root", commit,
                   strip=False)
    return [p for p in out.split("\0") if p]


def paths_changed_by(repo: GitRepo, commits: Sequence[str]) -> set[str]:
    """Every path any of ``commits`` changed, one git process for all of them. A merge counts
    what it changed against either parent; a root commit counts its files."""
    if not commits:
        return set()
    out = repo._run("diff-tree", "--stdin", "-r", "-m", "--root", "--no-commit-id", "--name-only", "--no-renames",
                   "-z", input=("\n".join(commits) + "\n").encode("ascii"), strip=False)
    return {p for p in out.split("\0") if p}


def paths_in_history(repo: GitRepo, *pathspecs: str) -> list[str]:
    """The paths matching ``pathspecs`` (git's pathspec magic allowed) that any commit of
    HEAD's history changed, newest first, each once; empty when git cannot say."""
    try:
        out = repo._run("log", "--format=", "--name-only", "--", *pathspecs)
    except git.GitCommandError:
        return []
    return list(dict.fromkeys(line for line in out.splitlines() if line.strip()))


def tracked(repo: GitRepo, *paths: str) -> list[str]:
    """The files under ``paths`` the person's index tracks (``git ls-files``), literally named."""
    out = repo._run("--literal-pathspecs", "ls-files", "-z", "--", *paths, strip=False)
    return [p for p in out.split("\0") if p]


@dataclass(frozen=True)
class Status:
    code: str  # git's two-letter porcelain status: " M", "??", " D", ...
    path: str


def worktree_status(repo: GitRepo, *paths: str) -> list[Status]:
    """What differs between HEAD, the index and the working tree under ``paths`` (untracked
    files listed one by one, renames as a removal and an addition)."""
    out = repo._run("--literal-pathspecs", "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all",
                   "--", *paths, strip=False)
    return [Status(entry[:2], entry[3:]) for entry in out.split("\0") if len(entry) > 3]


def files_containing(repo: GitRepo, words: Sequence[str], folder: str, *, top_level: bool = False
                     ) -> list[str] | None:
    """Files under ``folder`` (on disk, tracked or not; only those directly in it with
    ``top_level``) containing any of ``words`` as fixed strings, ASCII case-insensitively: one
    ``git grep --no-index``. None when git cannot answer (it failed)."""
    if not words:
        return []
    args = ["grep", "--no-index", "-l", "-z", "-i", "-F", *(["--max-depth", "0"] if top_level else [])]
    for word in words:
        args += ["-e", word]
    status, out, _err = git_status(repo, *args, "--", folder)
    if status == 1:
        return []  # no file matched
    if status != 0:
        return None
    return [p for p in out.split("\0") if p]


# -- refs ------------------------------------------------------------------------------------

def for_each_ref(repo: GitRepo, patterns: Sequence[str], fields: Sequence[str] = ("refname",)
                 ) -> list[tuple[str, ...]]:
    """One tuple per ref matching ``patterns`` (a prefix or a full name): the values of
    ``fields`` (``for-each-ref`` atoms such as ``refname``, ``objectname``,
    ``contents:subject``, ``creatordate:unix``)."""
    fmt = "%00".join(f"%({name})" for name in fields)
    out = repo._run("for-each-ref", f"--format={fmt}", *patterns)
    return [tuple((line.split("\0") + [""] * len(fields))[:len(fields)]) for line in out.splitlines() if line]


def update_refs(repo: GitRepo, updates: Mapping[str, str | None], message: str = "") -> None:
    """Set (a commit) or delete (None) each ref, all in one transaction (``update-ref --stdin``)."""
    if not updates:
        return
    lines = "".join(f"update {ref} {value}\n" if value else f"delete {ref}\n" for ref, value in updates.items())
    args = ["update-ref", *(("-m", message) if message else ()), "--stdin"]
    repo._run(*args, input=lines.encode("utf-8", "surrogateescape"))


__all__ = [
    "Authored", "Status", "all_commits", "ancestors_among", "commit_authors", "files_containing", "for_each_ref",
    "is_ancestor", "local_commit_with_object", "merge_base", "patch_log", "paths_changed", "paths_changed_by",
    "paths_in_history", "resolve_commit", "rev_list", "tracked", "unpublished_commits", "update_refs",
    "verify_objects_since", "worktree_status",
]
