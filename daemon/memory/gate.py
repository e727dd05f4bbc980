"""Consolidation's gate, read cheaply: the lock, the cursor over the daily logs, what is new.

Split from :mod:`memory.consolidate` so that ``wikiwright status`` can say what waits for
consolidation without importing the machinery that writes pages (the door, the catalogue,
the page writer). The lock ``.wikiwright/consolidation-lock`` is JSON
``{"last_consolidated_at", "locked_by", "locked_at", "holder"}`` (ms since the epoch); a lock
held longer than ``stale_lock_minutes`` is taken over, and so is one whose holder is gone (its
pid no longer runs on this host, or the machine rebooted since: pid and boot id).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..core.config import Config
from ..core.errors import ConsolidationBusy
from ..core.fsutil import atomic_write_text, sha256_bytes
from ..core.locks import holder_gone, holder_identity
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..memory.dailylog import _FENCE_RE, SESSION_RE, DailyLog, Observation, iter_log_files, parse_log
from ..vcs.repo import GitRepo

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds since the epoch
LOCK_FILE = "consolidation-lock"
GUARD_FILE = "consolidation-lock.guard"
CURSOR_KEY = "consolidation.cursor"


# --- the lock --------------------------------------------------------------------------

@dataclass(frozen=True)
class LockData:
    last_consolidated_at: int | None = None
    locked_by: str | None = None
    locked_at: int | None = None
    # Who holds it (host, pid, boot id, process start): a holder that is gone is taken over at once.
    holder: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data: dict[str, Any] = {"last_consolidated_at": self.last_consolidated_at, "locked_by": self.locked_by,
                                "locked_at": self.locked_at}
        if self.locked_by is not None and self.holder:
            data["holder"] = self.holder
        return json.dumps(data) + "\n"


def owner_name(purpose: str = "consolidate") -> str:
    return f"{socket.gethostname()}:{os.getpid()} ({purpose})"


class ConsolidationLock:
    """The lock file; every read-modify-write happens under a short flock on a guard file."""

    def __init__(self, vault: Vault, stale_minutes: float, clock: Clock = time.time) -> None:
        self.path = vault.state / LOCK_FILE
        self.guard = vault.state / GUARD_FILE
        self.stale_ms = int(stale_minutes * 60_000)
        self.clock = clock

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def read(self) -> LockData:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return LockData()
        except (OSError, ValueError):
            log.warning("%s is unreadable; treating it as free (last consolidation unknown)", self.path)
            return LockData()
        if not isinstance(data, dict):
            return LockData()

        def as_int(value: Any) -> int | None:
            return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        holder = data.get("locked_by")
        identity = data.get("holder")
        return LockData(as_int(data.get("last_consolidated_at")), str(holder) if holder else None,
                        as_int(data.get("locked_at")), identity if isinstance(identity, dict) else {})

    def is_stale(self, data: LockData) -> bool:
        """Taken over: its holder is gone (a killed run), or it is older than the time limit."""
        if data.locked_by is None:
            return False
        return self.now_ms() - (data.locked_at or 0) >= self.stale_ms or holder_gone(data.holder)

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        self.guard.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.guard, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def acquire(self, owner: str) -> LockData:
        """Take the lock (a stale one is taken over); returns what the file held before."""
        with self._guarded():
            data = self.read()
            if data.locked_by is not None:
                age_min = (self.now_ms() - (data.locked_at or 0)) / 60_000
                if not self.is_stale(data):
                    raise ConsolidationBusy(
                        f"a consolidation is in progress ({data.locked_by}, for {age_min:.0f} min); "
                        f"its lock becomes stale after {self.stale_ms / 60_000:.0f} min"
                    )
                gone = " (its process is gone)" if holder_gone(data.holder) else ""
                log.warning("taking over a stale consolidation lock held by %s for %.0f min%s",
                            data.locked_by, age_min, gone)
            atomic_write_text(self.path, LockData(data.last_consolidated_at, owner, self.now_ms(),
                                                  holder_identity()).to_json(), crash_hooks=False)
            return data

    def release(self, owner: str, consolidated_at: int | None) -> None:
        """Free the lock; ``consolidated_at`` (ms) records a finished run, None leaves the time gate."""
        with self._guarded():
            data = self.read()
            if data.locked_by != owner:
                log.warning("the consolidation lock was taken over by %s while %s ran; leaving it",
                            data.locked_by, owner)
                if consolidated_at is not None:
                    atomic_write_text(self.path, LockData(consolidated_at, data.locked_by, data.locked_at,
                                                          data.holder).to_json(), crash_hooks=False)
                return
            last = consolidated_at if consolidated_at is not None else data.last_consolidated_at
            atomic_write_text(self.path, LockData(last, None, None).to_json(), crash_hooks=False)


# --- what is new in the logs ------------------------------------------------------------

@dataclass
class LogRead:
    rel: str
    day: date
    start: int
    size: int
    sha256: str
    parsed: DailyLog
    new_sessions: int

    @property
    def bytes_new(self) -> int:
        return self.size - self.start

    def observations(self) -> list[Observation]:
        return list(self.parsed.observations(self.start))


def load_cursor(ledger: Ledger) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(ledger.get_kv(CURSOR_KEY, "{}"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class LogPeek:
    """A daily log with new content, as status needs it: its name and the sessions logged since."""

    rel: str
    new_sessions: int


def new_log_content(vault: Vault, cursor: dict[str, dict[str, Any]]) -> list[LogRead]:
    """Every daily log with bytes past the cursor; a log edited before the cursor is read whole."""
    reads: list[LogRead] = []
    for rel, day, start, data in _new_bytes(vault, cursor):
        parsed = parse_log(data.decode("utf-8", errors="replace"), day)
        reads.append(LogRead(rel, day, start, len(data), sha256_bytes(data), parsed,
                             len(parsed.counted_since(start))))
    return reads


def peek_new_logs(vault: Vault, cursor: dict[str, dict[str, Any]]) -> list[LogPeek]:
    """What :func:`new_log_content` finds, without parsing every line (status, on a long week)."""
    return [LogPeek(rel, count_sessions(data, start))
            for rel, _day, start, data in _new_bytes(vault, cursor, quiet=True)]


def count_sessions(data: bytes, start: int) -> int:
    """The blocks at or after byte ``start`` that count toward the gate, as :func:`parse_log` counts
    them: ``## Session`` headings (not notes), none inside a code fence."""
    count = 0
    offset = 0
    in_fence = False
    for raw_line in data.decode("utf-8", errors="replace").splitlines(keepends=True):
        at = offset
        offset += len(raw_line.encode("utf-8"))
        if raw_line[:1] not in ("#", " ", "\t", "`", "~"):
            continue  # neither a heading nor a fence: the common line, skipped at once
        line = raw_line.rstrip("\r\n")
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        elif not in_fence and at >= start:
            heading = SESSION_RE.match(line)
            count += bool(heading and heading.group("kind") == "Session")
    return count


def _new_bytes(vault: Vault, cursor: dict[str, dict[str, Any]], *, quiet: bool = False
               ) -> Iterator[tuple[str, date, int, bytes]]:
    """(rel, day, first new byte, the file's bytes) of each daily log with bytes past the cursor."""
    for day, path in iter_log_files(vault.logs):
        rel = f"logs/{path.name}"
        mark = cursor.get(rel) or {}
        offset = int(mark.get("offset", 0))
        try:
            if offset and path.stat().st_size == offset:
                continue  # nothing appended since (cheap: most days are done)
            data = path.read_bytes()
        except OSError:
            continue
        start = 0
        if 0 < offset <= len(data) and sha256_bytes(data[:offset]) == mark.get("prefix_sha256"):
            start = offset
        elif offset and not quiet:
            log.warning("%s changed before the point consolidated last time; reading it whole", rel)
        if start >= len(data):
            continue
        yield rel, day, start, data


# --- the gate ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GateStatus:
    hours_since: float | None
    min_hours: float
    sessions: int
    min_sessions: int
    lock: LockData
    lock_stale: bool
    now_ms: int

    @property
    def time_ok(self) -> bool:
        return self.hours_since is None or self.hours_since >= self.min_hours

    @property
    def sessions_ok(self) -> bool:
        return self.sessions >= self.min_sessions

    @property
    def lock_ok(self) -> bool:
        return self.lock.locked_by is None or self.lock_stale

    def would_run(self, force: bool = False) -> bool:
        return self.lock_ok and (force or (self.time_ok and self.sessions_ok))

    def lines(self) -> list[str]:
        def mark(ok: bool) -> str:
            return "open  " if ok else "closed"

        since = "never consolidated" if self.hours_since is None else f"{self.hours_since:.1f} h since the last"
        if self.lock.locked_by is None:
            lock = "free"
        else:
            age = (self.now_ms - (self.lock.locked_at or 0)) / 60_000
            lock = f"held by {self.lock.locked_by} for {age:.0f} min" + (" (stale: will be taken over)"
                                                                         if self.lock_stale else "")
        return [
            f"time:     {mark(self.time_ok)} {since} (needs {self.min_hours:g} h)",
            f"sessions: {mark(self.sessions_ok)} {self.sessions} logged since (needs {self.min_sessions})",
            f"lock:     {mark(self.lock_ok)} {lock}",
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "hours_since": self.hours_since, "min_hours": self.min_hours, "time_ok": self.time_ok,
            "sessions": self.sessions, "min_sessions": self.min_sessions, "sessions_ok": self.sessions_ok,
            "locked_by": self.lock.locked_by, "lock_stale": self.lock_stale, "lock_ok": self.lock_ok,
            "last_consolidated_at": self.lock.last_consolidated_at, "would_run": self.would_run(),
        }


def gate_status(config: Config, vault: Vault, ledger: Ledger, lock: ConsolidationLock, repo: GitRepo,
                reads: Sequence[LogRead | LogPeek] | None = None) -> GateStatus:
    """The three gates as they stand (reads the logs past the cursor unless ``reads`` is given)."""
    settings = config.consolidation
    data = lock.read()
    now_ms = lock.now_ms()
    last = data.last_consolidated_at
    if config.git.remote.strip():
        # One wiki on several machines: the last consolidation anywhere (shared history, or a
        # claim another machine pushed) closes the time gate here too.
        from ..vcs.remote import shared_consolidation_ms

        shared = shared_consolidation_ms(repo, config.git.remote, config.git.branch)
        if shared is not None and (last is None or shared > last):
            last = shared
    hours = None if last is None else (now_ms - last) / 3_600_000
    if reads is None:
        reads = new_log_content(vault, load_cursor(ledger))
    sessions = sum(read.new_sessions for read in reads)
    return GateStatus(hours, settings.min_hours, sessions, settings.min_sessions, data, lock.is_stale(data), now_ms)
