"""The repository's objects as the daemon's commits use them: one reader, writes in-process.

Reading goes through one long-lived ``git cat-file --batch-command`` per :class:`GitRepo`
(started on first need, restarted when it dies or the process forked, one request at a time
under a lock): a name resolved, a tree or a blob read is a line on a pipe, not a process.
It sees what others write meanwhile — refs are read from disk on each lookup, a missing object
makes git look at the packs again — so it never answers from a stale view. It takes no lock
and writes nothing, so :mod:`.gitlock` does not count it as a git command at work.

Blobs and trees are written as loose objects the way git writes them (zlib, a ``tmp_obj_``
file in the fan-out folder, created read-only under the umask, renamed into place), without
fsync, as git itself does by default (``core.fsync`` leaves loose objects out). An object
already stored loose is only freshened (its mtime), as git does, so ``git prune`` does not
take it from under a commit being made. Commits are left to ``git commit-tree`` (the
person's signing and identity settings) and HEAD to ``git update-ref`` (its locks, the
compare-and-swap, the reflog).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import subprocess
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path

from ..core.errors import WikiwrightError
from .trees import Entries, format_tree, parse_tree

# Parsed trees kept for the next commit or lookup (objects never change), bounded by entries:
# about 10 MB at most, a few versions of a 10,000-page wiki/ folder.
_CACHE_ENTRIES = 40_000
_MODES = {m: m for m in (b"100644", b"100755", b"120000", b"40000", b"160000")}  # one bytes object each


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class ObjectStore:
    def __init__(self, root: Path, env: Callable[[], Mapping[str, str]], objects_dir: Callable[[], Path]) -> None:
        self.root = root
        self._env = env
        self._objects_dir = objects_dir
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0
        self._finalizer: weakref.finalize | None = None
        self._trees: OrderedDict[str, Entries] = OrderedDict()
        self._cached = 0

    # -- the reader ------------------------------------------------------------------------

    def _reader(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and self._pid == os.getpid() and proc.poll() is None:
            return proc
        self._drop_reader()
        proc = subprocess.Popen(["git", "cat-file", "--batch-command"], cwd=self.root, env=dict(self._env()),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._proc, self._pid = proc, os.getpid()
        self._finalizer = weakref.finalize(self, _stop, proc)
        return proc

    def _drop_reader(self) -> None:
        if self._finalizer is not None:
            if self._pid == os.getpid():
                self._finalizer()
            else:
                self._finalizer.detach()  # the parent's reader, inherited by a fork: not ours to stop
        self._proc, self._finalizer = None, None

    def close(self) -> None:
        with self._lock:
            self._drop_reader()

    def _request(self, command: str, name: str) -> tuple[str, str, bytes | None] | None:
        """(id, type, bytes: None for ``info``) of ``name``, or None when git has no such object."""
        if not name or "\n" in name or "\0" in name:
            return None
        line = f"{command} {name}\n".encode("utf-8", "surrogateescape")
        with self._lock:
            for attempt in (1, 2):
                proc = self._reader()
                assert proc.stdin is not None and proc.stdout is not None
                try:
                    proc.stdin.write(line)
                    proc.stdin.flush()
                    header = proc.stdout.readline()
                    if not header.endswith(b"\n"):
                        raise OSError("git cat-file stopped")
                    fields = header.split()
                    if len(fields) != 3:
                        return None  # "<name> missing" / "ambiguous"
                    oid, kind, size = fields[0].decode("ascii"), fields[1].decode("ascii"), int(fields[2])
                    if command != "contents":
                        return oid, kind, None
                    data = proc.stdout.read(size + 1)
                    if len(data) != size + 1:
                        raise OSError("git cat-file stopped mid-object")
                    return oid, kind, data[:size]
                except (OSError, ValueError) as exc:
                    self._drop_reader()  # killed (a process-group kill) or garbled: a fresh one
                    if attempt == 2:
                        raise WikiwrightError(f"git cat-file failed in {self.root}: {exc}") from exc
        return None

    def info(self, name: str) -> tuple[str, str] | None:
        """(object id, type) of a name git resolves (``HEAD``, ``<sha>^{tree}``); None if none."""
        found = self._request("info", name)
        return (found[0], found[1]) if found else None

    def read(self, name: str, kind: str) -> bytes | None:
        """The bytes of object ``name`` when it is a ``kind``; None otherwise."""
        found = self._request("contents", name)
        if found is None or found[1] != kind:
            return None
        return found[2]

    def tree(self, oid: str) -> Entries:
        with self._lock:
            cached = self._trees.get(oid)
            if cached is not None:
                self._trees.move_to_end(oid)
                return cached
        data = self.read(oid, "tree")
        if data is None:
            raise WikiwrightError(f"git has no tree {oid} in {self.root}")
        entries = {name: (_MODES.get(mode, mode), sha) for name, (mode, sha) in parse_tree(data).items()}
        self._remember(oid, entries)
        return entries

    def _remember(self, oid: str, entries: Entries) -> None:
        if len(entries) > _CACHE_ENTRIES:
            return
        with self._lock:
            if oid in self._trees:
                return
            self._trees[oid] = entries
            self._cached += len(entries)
            while self._cached > _CACHE_ENTRIES:
                _old, dropped = self._trees.popitem(last=False)
                self._cached -= len(dropped)

    # -- writing ---------------------------------------------------------------------------

    def write(self, kind: str, data: bytes) -> str:
        """Store ``data`` as a loose ``kind`` object (exactly these bytes); its id."""
        header = b"%s %d\0" % (kind.encode("ascii"), len(data))
        digest = hashlib.sha1(header, usedforsecurity=False)
        digest.update(data)
        oid = digest.hexdigest()
        folder = self._objects_dir() / oid[:2]
        path = folder / oid[2:]
        try:
            os.utime(path)  # stored already: freshened, as git does
            return oid
        except OSError:
            pass
        packer = zlib.compressobj(1)  # core.looseCompression's default
        compressed = packer.compress(header) + packer.compress(data) + packer.flush()
        folder.mkdir(exist_ok=True)
        temp = folder / f"tmp_obj_{secrets.token_hex(6)}"  # git prune's name for leftovers to clear
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
            with os.fdopen(fd, "wb") as out:
                out.write(compressed)
            os.replace(temp, path)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise WikiwrightError(f"could not write a git object in {self.root}: {exc}") from exc
        return oid

    def write_tree(self, entries: Entries) -> str:
        oid = self.write("tree", format_tree(entries))
        self._remember(oid, entries)
        return oid
