"""The vault: its layout, how a command finds it, and path safety (``init``: door/init.py).

Every path the daemon writes goes through :meth:`Vault.wiki_path` (or one of the few fixed
files at the vault root), which resolves symlinks and refuses anything outside ``wiki/``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UnsafePathError, VaultError, VaultLockedError

STATE_DIR = ".wikiwright"
GITIGNORE_LINES = (".wikiwright/", ".obsidian/workspace*.json", ".trash/", "*.wikiwright-tmp-*")
# Folders no model output and no wiki write may ever touch.
PROTECTED_PARTS = {".git", ".obsidian", ".wikiwright", "raw", "logs"}


@dataclass(frozen=True)
class Vault:
    root: Path

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def wiki(self) -> Path:
        return self.root / "wiki"

    @property
    def sources_dir(self) -> Path:
        return self.wiki / "sources"

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    @property
    def review_file(self) -> Path:
        return self.root / "REVIEW.md"

    @property
    def schema_file(self) -> Path:
        return self.root / "SCHEMA.md"

    @property
    def db_path(self) -> Path:
        return self.state / "state.db"

    def rel(self, path: Path) -> str:
        """The vault-relative POSIX path of ``path`` (as git and the ledger name it)."""
        return path.resolve().relative_to(self.root.resolve()).as_posix() if path.is_absolute() else str(path)

    def wiki_path(self, relative: str) -> Path:
        """Resolve a page path given relative to ``wiki/`` and check it stays inside.

        Refuses absolute paths, ``..``, protected folders, non-markdown targets and any
        path whose resolution (symlinks included) leaves ``wiki/``.
        """
        if not relative or "\x00" in relative:
            raise UnsafePathError(f"empty or NUL-bearing page path {relative!r}")
        candidate = Path(relative)
        if candidate.is_absolute() or relative.startswith(("/", "\\")) or ":" in candidate.parts[0]:
            raise UnsafePathError(f"page path {relative!r} is absolute")
        parts = candidate.parts
        if any(part in {"..", "."} for part in parts):
            raise UnsafePathError(f"page path {relative!r} climbs out of wiki/")
        if any(part in PROTECTED_PARTS or part.startswith(".") for part in parts):
            raise UnsafePathError(f"page path {relative!r} names a protected or hidden folder")
        if candidate.suffix != ".md":
            raise UnsafePathError(f"page path {relative!r} is not a markdown page")
        wiki_root = self.wiki.resolve()
        target = (self.wiki / candidate).resolve()
        if not target.is_relative_to(wiki_root):
            raise UnsafePathError(f"page path {relative!r} resolves outside wiki/ (symlink?)")
        return self.wiki / candidate

    def is_vault(self) -> bool:
        return (self.root / STATE_DIR).is_dir() and (self.root / "wiki").is_dir()


def find_vault(explicit: str | None, environ: dict[str, str] | os._Environ[str], default: str) -> Vault:
    """Name the vault by the one rule every command follows.

    ``--vault PATH``, else ``WIKIWRIGHT_VAULT``, else the current directory when it is inside
    a vault, else the default vault that ``init`` recorded in the user config.
    """
    for label, value in (("--vault", explicit), ("WIKIWRIGHT_VAULT", environ.get("WIKIWRIGHT_VAULT"))):
        if value:
            vault = Vault(Path(value).expanduser().resolve())
            if not vault.is_vault():
                raise VaultError(f"{label} {value}: not a wikiwright vault (run `wikiwright init {value}`)")
            return vault
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if Vault(folder).is_vault():
            return Vault(folder)
    if default:
        vault = Vault(Path(default).expanduser().resolve())
        if vault.is_vault():
            return vault
        raise VaultError(f"the default vault {default} (from the user config) is not a wikiwright vault")
    raise VaultError(
        "no vault: pass --vault PATH, set WIKIWRIGHT_VAULT, run inside a vault, "
        "or create one with `wikiwright init PATH`"
    )


class VaultLock:
    """The single-writer lock: one ``wikiwright run`` (or one-shot ingest) per vault.

    ``fcntl.flock`` on ``.wikiwright/daemon.lock``; the kernel drops it when the process
    dies, so a crash never leaves a stale lock. The pid inside is for messages only.
    """

    def __init__(self, vault: Vault, purpose: str = "run") -> None:
        self.path = vault.state / "daemon.lock"
        self.purpose = purpose
        self._fd: int | None = None

    def acquire(self) -> None:
        if not self.try_acquire():
            holder = self.holder() or "another process"
            raise VaultLockedError(
                f"the vault {self.path.parent.parent} is already in use by {holder}; "
                "only one wikiwright writer may run per vault"
            )

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; False (nothing taken) when someone does."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {self.purpose}\n".encode())
        self._fd = fd
        return True

    def holder_purpose(self) -> str | None:
        """What the holder is doing ("run": the daemon, "ingest": a one-shot), None if free."""
        holder = self.holder()
        if holder is None:
            return None
        return holder.rsplit("(", 1)[-1].rstrip(")") if holder.endswith(")") else ""

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def holder(self) -> str | None:
        """Who holds the lock ("pid 123 (run)"), or None when nobody does."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                text = os.read(fd, 100).decode(errors="replace").split()
                return f"pid {text[0]} ({text[1]})" if len(text) >= 2 else "a running process"
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def __enter__(self) -> VaultLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)
