"""Git tree objects edited in memory: HEAD's tree with some paths set or removed.

What ``git update-index --index-info`` followed by ``git write-tree`` makes of a tree, without
an index file or a git process: only the trees on the way to a changed path are read and
written again; every other entry (mode, name, object id) is kept byte for byte. A file set
where a folder is (or under a path that is a file) replaces it, as ``update-index`` does;
removing a path removes a file there, never a folder; a folder left empty disappears, as it
does from an index. The objects are read and written
through the callables given (:class:`~wikiwright.vcs.store.ObjectStore`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..core.errors import WikiwrightError

TREE_MODE = b"40000"
GITLINK_MODE = b"160000"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# name -> (mode, raw 20-byte object id), in git's order (as parsed from a tree)
Entries = dict[bytes, tuple[bytes, bytes]]
ReadTree = Callable[[str], Entries]
WriteTree = Callable[[Entries], str]  # stores a tree object; its id
# path -> (mode such as "100644", blob id), or None: the path is removed
Changes = Mapping[str, tuple[str, str] | None]


def parse_tree(data: bytes) -> Entries:
    """A tree object's entries (``<mode> <name>\\0<20-byte id>`` each)."""
    entries: Entries = {}
    at, end = 0, len(data)
    while at < end:
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul]] = (data[at:space], data[nul + 1:nul + 21])
        at = nul + 21
    if at != end:
        raise WikiwrightError("a git tree object ends in the middle of an entry")
    return entries


def _order(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
    name, (mode, _oid) = item
    return name + b"/" if mode == TREE_MODE else name  # git compares a folder as "name/"


def format_tree(entries: Entries) -> bytes:
    return b"".join(b"%s %s\0%s" % (mode, name, oid) for name, (mode, oid) in sorted(entries.items(), key=_order))


def _components(path: str) -> tuple[bytes, ...]:
    parts = tuple(path.encode("utf-8", "surrogateescape").split(b"/"))
    for part in parts:
        if part in (b"", b".", b"..") or part.lower() == b".git" or b"\0" in part:
            raise WikiwrightError(f"not a path git can commit: {path!r}")
    return parts


def _is_tree(entry: tuple[bytes, bytes] | None) -> bool:
    return entry is not None and entry[0] == TREE_MODE


def tree_with(read: ReadTree, write: WriteTree, base: str | None, changes: Changes) -> str:
    """The id of ``base`` (None: the empty tree) with ``changes`` applied; new trees are written."""
    split: dict[tuple[bytes, ...], tuple[bytes, bytes] | None] = {}
    for path, change in changes.items():
        split[_components(path)] = None if change is None else (change[0].encode("ascii"), bytes.fromhex(change[1]))
    new = _edit(read, write, base, split)
    if new is None:
        return write({})  # every path removed: the empty tree (commit-tree needs the object)
    return new


def _edit(read: ReadTree, write: WriteTree, tree: str | None,
          changes: Mapping[tuple[bytes, ...], tuple[bytes, bytes] | None]) -> str | None:
    """``tree`` with ``changes`` (paths relative to it); None when nothing is left in it."""
    original = read(tree) if tree is not None else {}
    entries = dict(original)
    below: dict[bytes, dict[tuple[bytes, ...], tuple[bytes, bytes] | None]] = {}
    for parts, change in changes.items():
        if len(parts) == 1:
            if parts[0] in below:
                raise WikiwrightError(f"{parts[0]!r} is committed both as a file and as a folder")
            if change is None:
                if not _is_tree(entries.get(parts[0])):
                    entries.pop(parts[0], None)  # a path names a file: a folder there stays, as in an index
            else:
                entries[parts[0]] = change
        else:
            if (parts[0],) in changes:
                raise WikiwrightError(f"{parts[0]!r} is committed both as a file and as a folder")
            below.setdefault(parts[0], {})[parts[1:]] = change
    for name, inner in below.items():
        current = entries.get(name)
        if current is not None and not _is_tree(current) and all(c is None for c in inner.values()):
            continue  # removing paths under a file: there are none
        subtree = current[1].hex() if current is not None and current[0] == TREE_MODE else None
        sub = _edit(read, write, subtree, inner)
        if sub is None:
            if subtree is not None:
                entries.pop(name)
        else:
            entries[name] = (TREE_MODE, bytes.fromhex(sub))
    if entries == original and tree is not None:
        return tree
    if not entries:
        return None
    return write(entries)


def entry_at(read: ReadTree, tree: str, path: str) -> tuple[bytes, str] | None:
    """(mode, object id) of ``path`` in ``tree``, matched literally; None when absent."""
    try:
        parts = _components(path)
    except WikiwrightError:
        return None
    current = tree
    for depth, name in enumerate(parts):
        found = read(current).get(name)
        if found is None:
            return None
        if depth == len(parts) - 1:
            return found[0], found[1].hex()
        if found[0] != TREE_MODE:
            return None
        current = found[1].hex()
    return None


def is_blob_mode(mode: bytes) -> bool:
    return mode not in (TREE_MODE, GITLINK_MODE)
