"""The plumbing a merge across machines needs, typed: trees as entries, blobs in batches.

Everything a sync round asks git (``door/sync.py``, ``door/synctree.py``) goes through these
functions (with the history questions of :mod:`.queries`: the merge base, ancestry, a working
tree's status), so no git command line is written outside ``vcs/``: what changed,
a tree's file entries, many blobs or sizes at once, the paths a person changed and has not
committed, a tree written from entries (in memory, :mod:`.trees`: no index file), and the
diff between two trees. Nothing here touches the working tree, the person's index or HEAD.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core.crashpoints import crash_point
from ..core.errors import CommitPaused, WikiwrightError
from .queries import worktree_status
from .repo import BeforeMove, GitRepo, git
from .trees import tree_with

Entry = tuple[str, str]  # (mode such as "100644", object id)
REGULAR = "100644"
ZERO = "0" * 40
_CHUNK = 500


def changed_paths(repo: GitRepo, base: str | None, theirs: str) -> list[str]:
    """The paths ``theirs`` changed since ``base`` (every path of ``theirs`` without a base)."""
    if base:
        out = repo._run("diff", "--name-only", "-z", "--no-renames", base, theirs, strip=False)
    else:
        out = repo._run("ls-tree", "-r", "-z", "--name-only", theirs, strip=False)
    return [p for p in out.split("\0") if p]


def commits_between(repo: GitRepo, tip: str, exclude: str | None) -> int:
    """How many commits ``tip`` has that ``exclude`` has not."""
    return len(repo._run("rev-list", tip, *(("--not", exclude) if exclude else ())).split())


def tree_entries(repo: GitRepo, tree: str | None) -> dict[str, Entry]:
    """Every file entry of ``tree`` (blobs, links, gitlinks), read as objects: no index involved."""
    if not tree:
        return {}
    out = repo._run("ls-tree", "-r", "-z", "--full-tree", tree, strip=False)
    entries: dict[str, Entry] = {}
    for item in out.split("\0"):
        if not item:
            continue
        info, _, path = item.partition("\t")
        mode, _kind, blob = info.split()
        entries[path] = (mode, blob)
    return entries


def blob_at(repo: GitRepo, commit: str | None, path: str) -> str:
    """The blob id at ``commit:path`` ('' when absent)."""
    if not commit:
        return ""
    found = repo.objects.info(f"{commit}:{path}")
    return found[0] if found and found[1] == "blob" else ""


def read_blobs(repo: GitRepo, blobs: Iterable[str], *, missing_ok: bool = False) -> dict[str, bytes]:
    """Many blobs through the repository's one object reader (``missing_ok``: absent ones left out)."""
    result: dict[str, bytes] = {}
    for blob in sorted(set(blobs)):
        data = repo.objects.read(blob, "blob")
        if data is None:
            if missing_ok:
                continue
            raise WikiwrightError(f"git object {blob} is missing")
        result[blob] = data
    return result


def blob_sizes(repo: GitRepo, blobs: Iterable[str]) -> dict[str, int]:
    """Sizes of many objects in one ``git cat-file --batch-check`` (nothing read into memory)."""
    unique = sorted(set(blobs))
    if not unique:
        return {}
    out = repo._run("cat-file", "--batch-check", input="\n".join(unique).encode() + b"\n")
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def write_blob(repo: GitRepo, data: bytes) -> str:
    return repo.store_bytes(data)


def write_tree(repo: GitRepo, entries: Mapping[str, Entry]) -> str:
    """A tree of exactly ``entries`` (path -> (mode, blob)), written in memory from nothing
    (never a read-tree of someone else's tree: a name no index can hold cannot stop it)."""
    return tree_with(repo.objects.tree, repo.objects.write_tree, None, dict(entries))


def tree_changes(repo: GitRepo, old: str | None, new: str) -> dict[str, tuple[str, str, str]]:
    """path -> (old blob, new blob, new mode) for every file that differs between two trees or
    commits ('' where absent; ``old`` None: every file of ``new`` is new)."""
    if not old:
        return {path: ("", blob, mode) for path, (mode, blob) in tree_entries(repo, new).items()}
    out = repo._run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new, strip=False)
    parts = out.split("\0")
    changes: dict[str, tuple[str, str, str]] = {}
    index = 0
    while index < len(parts) - 1:
        info = parts[index]
        if not info.startswith(":"):
            index += 1
            continue
        _old_mode, new_mode, old_blob, new_blob, _status = info[1:].split()
        path = parts[index + 1]
        changes[path] = (old_blob if old_blob != ZERO else "", new_blob if new_blob != ZERO else "", new_mode)
        index += 2
    return changes


def status_paths(repo: GitRepo, paths: Sequence[str]) -> list[str]:
    """Of ``paths`` (files or folders), the files whose working-tree content differs from the
    person's index or that are untracked (``git status``; names matched literally), asked
    :data:`_CHUNK` paths at a time (a round can name thousands)."""
    return [entry.path for start in range(0, len(paths), _CHUNK)
            for entry in worktree_status(repo, *paths[start:start + _CHUNK])]


def commit_tree(repo: GitRepo, tree: str, parents: Sequence[str], message: str) -> str:
    """A commit object of ``tree`` with these parents (the person's signing and identity settings)."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return repo._run(*args, input=message.encode("utf-8"))


def move_head(repo: GitRepo, old: str | None, new: str, reason: str) -> bool:
    """HEAD from ``old`` to ``new`` (a compare-and-swap: False when HEAD is no longer ``old``)."""
    try:
        repo._run("update-ref", "-m", reason, "HEAD", new, old or "")
    except git.GitCommandError:
        return False
    return True


def commit_merge(repo: GitRepo, head: str | None, tree: str, entries: Mapping[str, str | None], message: str, *,
                 theirs: str, fast_forward: bool, merged: Mapping[str, tuple[str, str]],
                 in_person_index: Callable[[str], bool], before_move: BeforeMove) -> str:
    """Commit ``tree`` with ``entries`` set (path -> blob id, None: removed) on ``head`` and
    ``theirs`` (two parents), or, with ``fast_forward`` and nothing of ours on top, move HEAD to
    ``theirs`` itself; the new HEAD. ``merged``: every path where ``tree`` differs from HEAD's
    (path -> (mode, blob; '' removed)), as :func:`tree_changes` found them.

    ``before_move(head, commit, index)`` is called once the commit exists and before HEAD moves
    (the door journals the expected move and the index entries there, so a crash in between is
    finished by its recovery). HEAD moves by compare-and-swap from ``head``: a commit a person
    made meanwhile raises CommitPaused, nothing lost. Then the person's git index follows HEAD
    for every path the move changed that ``in_person_index`` accepts.
    """
    repo._with_lock_retry(repo._refuse_while_index_locked)
    modes = repo._modes(list(entries))
    changes = {rel: (modes.get(rel, REGULAR), blob) if blob is not None else None for rel, blob in entries.items()}
    final = tree_with(repo.objects.tree, repo.objects.write_tree, tree, changes) if changes else tree
    crash_point("before-commit")
    if fast_forward and head != theirs and final == repo.tree_of(theirs):
        commit = theirs
    else:
        commit = commit_tree(repo, final, [p for p in (head, theirs) if p], message)
    # What moves: the merge's paths, then the entries set on top of it (no second diff of trees).
    moved = {**merged, **{rel: (modes.get(rel, REGULAR), blob or "") for rel, blob in entries.items()}}
    index = {path: (blob or None) for path, (mode, blob) in moved.items()
             if in_person_index(path) and (not blob or mode in (REGULAR, "100755"))}
    index_modes = {path: mode for path, (mode, _blob) in moved.items() if mode == "100755"}
    before_move(head, commit, index)
    if not move_head(repo, head, commit, f"wikiwright sync: {message.split(chr(10), 1)[0]}"):
        raise CommitPaused("HEAD moved while syncing (a commit landed); the next round tries again")
    crash_point("after-commit")
    if index:
        repo._sync_person_index(index, index_modes)
    return commit
