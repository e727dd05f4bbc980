"""Locks: the vault's write lock that serialises applying and committing across threads and
processes (the door takes it around every operation), and the identity of a lock's holder."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.rootguard import check_path

# -- the vault's write lock ----------------------------------------------------------------

_THREAD_LOCKS: dict[str, threading.RLock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()
# Vault roots whose flock this process holds, with the nesting depth (only read and written
# by the thread holding that vault's RLock).
_HELD: dict[str, int] = {}


def _thread_lock(root: str) -> threading.RLock:
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(root, threading.RLock())


@contextmanager
def vault_write_lock(state_dir: Path) -> Iterator[None]:
    """One operation at a time applies its changes and commits: threads and processes alike.

    Held around "write pages → rebuild index.md / log.md → commit" by the ingest workers,
    review approvals, consolidation, and the one-shot commands (revert, retract, ask --save),
    so a command can run beside the daemon instead of racing it. Re-entrant within a thread.
    The kernel drops the flock when a process dies, so a crash never leaves it held.
    """
    key = str(state_dir)
    with _thread_lock(key):
        depth = _HELD.get(key, 0)
        if depth:
            # Re-entered by the thread that holds it: a second flock on a new descriptor
            # would wait for ourselves.
            _HELD[key] = depth + 1
            try:
                yield
            finally:
                _HELD[key] = depth
            return
        check_path(state_dir)  # a moved vault: no lock file recreated at its old path
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / "write.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _HELD[key] = 1
            yield
        finally:
            _HELD.pop(key, None)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


# -- is a lock's holder still there? --------------------------------------------------------

BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str | None:
    """This boot's id (Linux); a lock written under another boot has no living holder."""
    try:
        return BOOT_ID_PATH.read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, /proc), to tell a reused pid from its first owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None  # field 22, starttime (fields count from 3 here)


def holder_identity() -> dict[str, str | int | None]:
    """What a file lock records about its holder so that another process can tell it is gone."""
    import socket

    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "boot_id": boot_id(), "started": process_start(pid)}


def holder_gone(identity: dict[str, object]) -> bool:
    """True when the process that recorded ``identity`` surely no longer runs.

    Only on this host: the pid is dead, or the machine rebooted since (another boot id), or the
    pid now belongs to a process that started at another time. Unknown stays False (the caller
    falls back to its time limit).
    """
    import socket

    pid = identity.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or identity.get("host") != socket.gethostname():
        return False
    recorded_boot, current_boot = identity.get("boot_id"), boot_id()
    if recorded_boot and current_boot and recorded_boot != current_boot:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    started = identity.get("started")
    now_started = process_start(pid)
    return bool(started and now_started and started != now_started)


# -- per-page locks between the workers of one process ---------------------------------------


class PageLocks:
    """Pages an ingest is planning against, held from the moment it has chosen them until its
    commit, so two workers never build on the same old text of a page: the second waits for the
    first's commit, then reads the new text (only a person's edit is ever a conflict).

    One instance per process (the pipeline's); the vault write lock still orders the commits.
    Pages are taken in sorted order and a holder never waits while holding (:meth:`Holder.hold`
    gives back what it holds and takes the whole set again in order), so two holders cannot
    deadlock on each other."""

    def __init__(self) -> None:
        self._guard = threading.Condition()
        self._owners: dict[str, int] = {}  # page -> holder id
        self._waiting = 0  # holders waiting for pages another holds

    @contextmanager
    def holder(self) -> Iterator[PageHolder]:
        holder = PageHolder(self)
        try:
            yield holder
        finally:
            holder.release()

    def _take(self, owner: int, pages: set[str], *, wait: bool) -> bool:
        with self._guard:
            while True:
                busy = [p for p in pages if self._owners.get(p, owner) != owner]
                if not busy:
                    for page in pages:
                        self._owners[page] = owner
                    return True
                if not wait:
                    return False
                self._waiting += 1
                try:
                    self._guard.wait()
                finally:
                    self._waiting -= 1

    def _give_back(self, owner: int, pages: set[str]) -> None:
        with self._guard:
            for page in pages:
                if self._owners.get(page) == owner:
                    del self._owners[page]
            self._guard.notify_all()

    def held(self) -> dict[str, int]:
        with self._guard:
            return dict(self._owners)

    def waiting(self) -> int:
        """How many holders wait for a page another holds (for status and tests)."""
        with self._guard:
            return self._waiting


class PageHolder:
    """One ingest's share of :class:`PageLocks`."""

    def __init__(self, locks: PageLocks) -> None:
        self._locks = locks
        self.pages: set[str] = set()
        self.waited = False  # another worker held one of them: what was read before is stale

    def hold(self, pages: Iterable[str]) -> bool:
        """Hold ``pages`` too (with those already held); True if it had to wait for another
        worker (its plan must re-read what it read before)."""
        wanted = set(pages) - self.pages
        if not wanted:
            return False
        if self._locks._take(id(self), wanted, wait=False):
            self.pages |= wanted
            return False
        # Never wait while holding: give back, then take everything at once.
        self._locks._give_back(id(self), self.pages)
        self._locks._take(id(self), self.pages | wanted, wait=True)
        self.pages |= wanted
        self.waited = True
        return True

    def release(self) -> None:
        self._locks._give_back(id(self), self.pages)
        self.pages = set()
