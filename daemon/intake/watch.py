"""Seeing files arrive in ``raw/`` and ``logs/``: watchdog events, stability, rescans.

The watcher is a hint, the rescan is the truth: watchdog events only mark a path as
"look at this soon"; the stability checker queues a path once it has been quiet for the
debounce period and its size and mtime held still across two looks; a full rescan at start
and every few minutes finds whatever the watcher missed (and counts those misses).
Nothing here ingests: it records files in the ledger, which is the queue.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import sqlite3
import stat
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..core.config import WatchConfig
from ..core.errors import SourceRejected
from ..core.fsutil import TEMP_MARKER
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..intake.names import in_hidden_folder, relative_name
from ..intake.safeopen import hash_inside

log = logging.getLogger(__name__)

RETRY_REGISTER = 5.0

# (glob on the file name, rule shown in status). Dotfiles cover editors' atomic-save temps.
IGNORE_RULES: tuple[tuple[str, str], ...] = (
    (".*", "hidden or temporary file (name starts with a dot)"),
    ("*.part", "partial download (.part)"),
    ("*.partial", "partial download (.partial)"),
    ("*.crdownload", "partial download (.crdownload)"),
    ("*.download", "partial download (.download)"),
    ("*.tmp", "temporary file (.tmp)"),
    ("~$*", "office lock file (~$)"),
    ("*.swp", "editor swap file (.swp)"),
    ("*.swx", "editor swap file (.swx)"),
    ("*~", "editor backup file (~)"),
    ("4913", "vim write probe (4913)"),
    ("*.sync-conflict-*", "sync conflict copy (Syncthing)"),
    ("* (conflicted copy*)*", "sync conflict copy (Dropbox)"),
    ("*.icloud", "iCloud placeholder"),
    (f"*{TEMP_MARKER}*", "wikiwright temporary file"),
)


def ignore_rule(name: str) -> str | None:
    """The skip rule a file name matches, or None when it is a candidate source."""
    for pattern, rule in IGNORE_RULES:
        if fnmatch.fnmatchcase(name, pattern):
            return rule
    return None


@dataclass
class _Watch:
    last_event: float
    last_stat: tuple[int, int] | None
    from_rescan: bool = False


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


class Registrar:
    """Decides what a stable path is and records it in the ledger."""

    def __init__(self, vault: Vault, ledger: Ledger, max_bytes: int, on_queued: threading.Event,
                 allow_hard_links: bool = False) -> None:
        self.vault = vault
        self.ledger = ledger
        self.max_bytes = max_bytes
        self.on_queued = on_queued
        self.allow_hard_links = allow_hard_links

    def kind_of(self, path: Path) -> str | None:
        for kind, folder in (("raw", self.vault.raw), ("log", self.vault.logs)):
            if path.is_relative_to(folder) and path != folder:
                return kind
        return None

    def register(self, path: Path) -> str | None:
        """Record one path; returns the state recorded (None when there was nothing to do)."""
        kind = self.kind_of(path)
        if kind is None:
            return None
        top = self.vault.raw if kind == "raw" else self.vault.logs
        if in_hidden_folder(top, path):
            return None  # as the rescan and doctor: a hidden folder (.git, .obsidian, .trash) is not input
        # The ledger name: the file name escaped to one printable line when it needs it.
        rel = relative_name(self.vault.root, path)
        try:
            st = path.lstat()
        except FileNotFoundError:
            return None  # gone again: a temp file that was renamed away
        if stat.S_ISDIR(st.st_mode):
            return None
        rule = ignore_rule(path.name)
        if rule is not None:
            self.ledger.record_final(rel, kind, "skipped", rule, size=st.st_size, mtime_ns=st.st_mtime_ns)
            return "skipped"
        if kind == "log" and not path.name.endswith(".md"):
            self.ledger.record_final(rel, kind, "skipped", "logs/ holds daily logs named YYYY-MM-DD.md only",
                                     size=st.st_size, mtime_ns=st.st_mtime_ns)
            return "skipped"
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(path)
            self.ledger.record_final(
                rel, kind, "quarantined", f"symlink: points to {target!r}; links in raw/ are never followed",
                size=st.st_size, mtime_ns=st.st_mtime_ns,
            )
            return "quarantined"
        if not stat.S_ISREG(st.st_mode):
            what = "FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "socket or device"
            self.ledger.record_final(rel, kind, "quarantined", f"not-a-file: is a {what}, not a regular file",
                                     size=st.st_size, mtime_ns=st.st_mtime_ns)
            return "quarantined"
        if st.st_size > self.max_bytes:
            self.ledger.record_final(
                rel, kind, "quarantined",
                f"too-large: {st.st_size} bytes, over the limit of {self.max_bytes} (ingest.max_source_bytes)",
                size=st.st_size, mtime_ns=st.st_mtime_ns,
            )
            return "quarantined"
        if unicodedata.normalize("NFC", rel) != rel:
            log.debug("%s has a decomposed (NFD) name; recorded as is", rel)
        try:
            # Hashed through the no-follow walk: a folder on the path swapped for a link since
            # the lstat above is refused, never followed.
            digest, _ = hash_inside(top, path, allow_hard_links=self.allow_hard_links)
        except SourceRejected as exc:
            if exc.code == "missing":
                return None
            self.ledger.record_final(rel, kind, "quarantined", f"{exc.code}: {exc}",
                                     size=st.st_size, mtime_ns=st.st_mtime_ns)
            return "quarantined"
        except OSError as exc:
            log.warning("cannot read %s: %s", rel, exc)
            return None
        if self.ledger.observe(rel, kind, digest, st.st_size, st.st_mtime_ns):
            if kind == "raw":
                self.on_queued.set()
            return "pending"
        return None


class StabilityTracker:
    """Paths with recent events; hands a path over once it is quiet and its stat is steady."""

    def __init__(self, config: WatchConfig, registrar: Registrar) -> None:
        self.config = config
        self.registrar = registrar
        self._lock = threading.Lock()
        self._watched: dict[Path, _Watch] = {}
        self.missed_by_watcher = 0
        self.last_rescan: float = 0.0

    def touch(self, path: Path, *, from_rescan: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            current = self._watched.get(path)
            if from_rescan:
                if current is None:
                    # Due at the next check; it still needs one steady look before queueing.
                    self._watched[path] = _Watch(now - self.config.debounce_seconds, _stat_key(path), True)
                return
            self._watched[path] = _Watch(now, _stat_key(path))

    def pending(self) -> int:
        with self._lock:
            return len(self._watched)

    def check(self) -> list[Path]:
        """One pass: register every path that is due and steady. Returns those registered."""
        now = time.monotonic()
        with self._lock:
            due = [(p, w) for p, w in self._watched.items() if now - w.last_event >= self.config.debounce_seconds]
        ready = []
        for path, watch in due:
            current = _stat_key(path)
            with self._lock:
                if self._watched.get(path) is not watch:
                    continue  # a new event arrived meanwhile
                if current is not None and current != watch.last_stat:
                    watch.last_stat = current
                    watch.last_event = now - self.config.debounce_seconds + self.config.poll_interval_seconds
                    continue
                del self._watched[path]
            ready.append(path)
        registered = []
        for path in ready:
            try:
                state = self.registrar.register(path)
            except (OSError, sqlite3.Error) as exc:  # disk full, database locked: look again later, drop nothing
                log.warning("cannot record %s yet (%s); trying again in %.0fs", path, exc, RETRY_REGISTER)
                with self._lock:
                    self._watched.setdefault(path, _Watch(now + RETRY_REGISTER, _stat_key(path)))
                continue
            except Exception as exc:
                # Not a passing condition: retrying every few seconds would only repeat it. The
                # next event on the file or the next rescan looks again.
                log.error("cannot record %s: %s: %s; it is looked at again at the next rescan",
                          path, type(exc).__name__, exc)
                continue
            if state is not None:
                registered.append(path)
        return registered

    def rescan(self) -> int:
        """Walk raw/ and logs/; anything new or changed since the ledger saw it is looked at."""
        known = self.registrar.ledger.all_stats()
        found = 0
        root = self.registrar.vault.root
        for folder in (self.registrar.vault.raw, self.registrar.vault.logs):
            for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                base = Path(dirpath)
                names = filenames + [d for d in os.listdir(dirpath) if (base / d).is_symlink() and d not in filenames]
                for name in names:
                    path = base / name
                    rel = relative_name(root, path)
                    key = _stat_key(path)
                    seen = known.get(rel)
                    if seen is not None and key is not None and (seen[0], seen[1]) == key:
                        continue
                    with self._lock:
                        watched = path in self._watched
                    if not watched:
                        found += 1
                        self.touch(path, from_rescan=True)
        self.last_rescan = time.time()
        return found


class _Handler(FileSystemEventHandler):
    def __init__(self, tracker: StabilityTracker) -> None:
        self.tracker = tracker

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                # A folder dropped in whole: its files arrive with no events of their own.
                self.tracker.touch(Path(os.fsdecode(event.dest_path or event.src_path)), from_rescan=True)
            return
        if event.event_type in ("created", "modified", "closed", "attrib"):
            self.tracker.touch(Path(os.fsdecode(event.src_path)))
        elif event.event_type == "moved":
            self.tracker.touch(Path(os.fsdecode(event.dest_path)))


class PageChanges:
    """Names of pages changed on disk since last taken (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def add(self, name: str) -> None:
        with self._lock:
            self._names.add(name)

    def take(self) -> list[str]:
        with self._lock:
            names, self._names = self._names, set()
        return sorted(names)


class _PageHandler(FileSystemEventHandler):
    """Pages saved, moved or removed under wiki/ (a person in Obsidian, or the daemon itself)."""

    def __init__(self, wiki: Path, changes: PageChanges) -> None:
        self.wiki = wiki
        self.changes = changes

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        for raw_path in (event.src_path, event.dest_path):
            if not raw_path:
                continue
            path = Path(os.fsdecode(raw_path))
            if path.suffix != ".md" or path.name.startswith(".") or not path.is_relative_to(self.wiki):
                continue
            self.changes.add(path.relative_to(self.wiki).as_posix()[:-3])


class Watcher:
    """The watchdog observer over raw/ and logs/ (and wiki/, so the page catalogue follows a
    person's edits); never the vault root, where .git churns."""

    def __init__(self, vault: Vault, config: WatchConfig, tracker: StabilityTracker) -> None:
        self.vault = vault
        self.config = config
        self.tracker = tracker
        self.observer: BaseObserver | None = None
        self.page_changes = PageChanges()
        self.watching_pages = False

    def _schedule(self, observer: BaseObserver, pages: bool) -> None:
        handler = _Handler(self.tracker)
        for folder in (self.vault.raw, self.vault.logs):
            observer.schedule(handler, str(folder), recursive=True)
        if pages:
            observer.schedule(_PageHandler(self.vault.wiki, self.page_changes), str(self.vault.wiki), recursive=True)
        self.watching_pages = pages
        observer.start()

    def start(self) -> None:
        self.vault.raw.mkdir(parents=True, exist_ok=True)
        self.vault.logs.mkdir(parents=True, exist_ok=True)
        # Polling wiki/ would stat every page every second: with polling, searches scan instead.
        observer: BaseObserver = PollingObserver(timeout=1.0) if self.config.polling else Observer()
        try:
            self._schedule(observer, pages=not self.config.polling)
        except OSError as exc:
            # inotify limits (ENOSPC/EMFILE): fall back to polling rather than die.
            log.warning(
                "native file watching failed (%s); falling back to polling. Raise "
                "fs.inotify.max_user_watches to use inotify", exc,
            )
            observer = PollingObserver(timeout=1.0)
            self._schedule(observer, pages=False)
        self.observer = observer

    def alive(self) -> bool:
        return self.observer is not None and self.observer.is_alive()

    def stop(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)
            self.observer = None
