"""Atomic, durable file writes and content hashing."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

# Temp files carry this marker so the watcher, doctor and Obsidian users can tell them apart.
TEMP_MARKER = ".wikiwright-tmp-"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, crash_hooks: bool = True) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a mix.

    Temp file in the same folder, fsync, rename, fsync of the folder. A failure (disk full)
    leaves the old file as it was and removes the temp file.
    """
    from .crashpoints import crash_point

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARKER}", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            # Keep the mode the person gave the file.
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        if crash_hooks:
            crash_point("after-temp-write")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
    if crash_hooks:
        crash_point("after-rename")


def atomic_write_text(path: Path, text: str, *, crash_hooks: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), crash_hooks=crash_hooks)

