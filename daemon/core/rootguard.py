"""The vault root a long-running process works in must stay the folder it opened.

If a person renames or moves the vault while the daemon runs, every path the daemon holds
now names a folder that is gone (or a new one made in its place). The daemon notices by
the root's device and inode (:func:`moved`, looked at every second and before writes),
says so and exits non-zero; and no write may recreate anything at the old path:
:func:`check_path` is called before any folder is created for a write (atomic writes, the
write lock, the databases) and raises :class:`VaultMoved` instead.

Only processes that call :func:`guard` are affected (the daemon); one-shot commands open
the vault, act and exit.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..core.errors import VaultMoved

_GUARDED: dict[str, tuple[int, int]] = {}
_LOCK = threading.Lock()


def _identity(root: str) -> tuple[int, int] | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def guard(root: Path) -> None:
    """Remember ``root``'s device and inode: from now on it must stay the same folder."""
    key = os.path.abspath(root)
    identity = _identity(key)
    if identity is None:
        raise VaultMoved(f"the vault folder {key} does not exist")
    with _LOCK:
        _GUARDED[key] = identity


def release(root: Path) -> None:
    with _LOCK:
        _GUARDED.pop(os.path.abspath(root), None)


def moved(root: Path) -> str:
    """Why ``root`` is no longer the folder that was guarded, or '' (also '' if not guarded)."""
    key = os.path.abspath(root)
    with _LOCK:
        expected = _GUARDED.get(key)
    if expected is None:
        return ""
    now = _identity(key)
    if now is None:
        return f"the vault folder {key} was moved, renamed or deleted"
    if now != expected:
        return f"the vault folder {key} was replaced by another folder (moved away and a new one made in its place)"
    return ""


def check_path(path: Path) -> None:
    """Raise :class:`VaultMoved` if ``path`` lies in a guarded vault that moved (before creating folders)."""
    if not _GUARDED:
        return
    target = os.path.abspath(path)
    with _LOCK:
        roots = [root for root in _GUARDED if target == root or target.startswith(root + os.sep)]
    for root in roots:
        reason = moved(Path(root))
        if reason:
            raise VaultMoved(f"{reason}; not writing {target}")
