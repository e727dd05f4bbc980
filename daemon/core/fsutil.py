"""Atomic, durable file writes and content hashing."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

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
    _atomic_write(path, lambda handle: handle.write(data), crash_hooks=crash_hooks)


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def atomic_append_bytes(path: Path, data: bytes, *, initial: bytes = b"", crash_hooks: bool = True) -> None:
    """Append ``data`` atomically (``initial`` first when the file does not exist yet).

    The earlier bytes are copied into the temp file in chunks, so an append-only file that
    grows for months (log.md) costs no whole-file string per append. If someone writes the
    file while we copy, the copy is redone on their version: their bytes are never dropped.
    """
    for _attempt in range(10):
        before = _stat_key(path)

        def write(handle: BinaryIO, before: tuple[int, int] | None = before) -> None:
            if before is None:
                handle.write(initial)
            else:
                with path.open("rb") as old:
                    shutil.copyfileobj(old, handle, 1 << 16)
                    if before[0]:
                        old.seek(-1, os.SEEK_END)
                        if old.read(1) != b"\n":
                            handle.write(b"\n")
            handle.write(data)

        if _atomic_write(path, write, crash_hooks=crash_hooks, unchanged_since=before):
            return
    raise OSError(f"{path} kept changing while wikiwright appended to it")


def _atomic_write(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    crash_hooks: bool = True,
    unchanged_since: tuple[int, int] | bool | None = False,
    still: Callable[[], bool] | None = None,
) -> bool:
    """The temp-fsync-rename dance; with ``unchanged_since``, gives up (False) if ``path`` changed."""
    from ..core.crashpoints import crash_point
    from ..core.rootguard import check_path

    check_path(path.parent)  # never recreate a moved vault's folders at its old path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARKER}", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
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
        if (unchanged_since is not False and _stat_key(path) != unchanged_since) or (still and not still()):
            tmp.unlink()
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
    if crash_hooks:
        crash_point("after-rename")
    return True


def atomic_replace_if(path: Path, data: bytes | None, expected: bytes | None) -> bool:
    """Compare-and-swap on a file: put ``data`` there (None: remove it) only while it still holds
    ``expected`` (None: absent), checked right before the rename; False when it changed."""

    def read() -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    if data is None:
        if read() != expected:
            return False
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
        return True
    if read() != expected:
        return False
    return _atomic_write(path, lambda handle: handle.write(data), still=lambda: read() == expected)


def atomic_write_text(path: Path, text: str, *, crash_hooks: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), crash_hooks=crash_hooks)

