"""Opening a file in raw/ (or logs/) without following a link anywhere on its path.

A check-then-open on a path can be raced: a folder swapped for a symlink between the check
and the open redirects the read to any file the daemon can read. So a source is opened by
walking from the descriptor of its top folder one component at a time with ``O_NOFOLLOW``
(``openat``), never by path; the opened file is then checked with ``fstat``: a regular file
on the top folder's device. Whatever the read sees is what was checked.

A file with more than one hard link is refused unless ``ingest.allow_hard_links``: a hard
link made inside raw/ to a file elsewhere would otherwise bring that file in.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import SourceRejected

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20


def _parts(top: Path, path: Path) -> list[str]:
    try:
        parts = list(path.relative_to(top).parts)
    except ValueError:
        raise SourceRejected("outside", f"is not inside {top.name}/") from None
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise SourceRejected("outside", f"does not name a file inside {top.name}/")
    return parts


@contextmanager
def open_inside(top: Path, path: Path, *, allow_hard_links: bool = False) -> Iterator[tuple[int, os.stat_result]]:
    """(descriptor, fstat) of ``path``, a regular file under ``top``, reached without links.

    Raises :class:`SourceRejected` (``symlink``, ``not-a-file``, ``hard-link``, ``outside``,
    ``missing``) with the reason ``status`` shows; the descriptor is closed on exit.
    """
    parts = _parts(top, path)
    try:
        top_fd = os.open(top, _DIR_FLAGS)
    except FileNotFoundError:
        raise SourceRejected("missing", f"{top.name}/ does not exist") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise SourceRejected("symlink", f"{top.name}/ itself is a symbolic link; links are never followed") \
                from None
        raise
    fds = [top_fd]
    try:
        top_dev = os.fstat(top_fd).st_dev
        for index, part in enumerate(parts[:-1]):
            try:
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
            except FileNotFoundError:
                raise SourceRejected("missing", "was removed before it could be read") from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    shown = "/".join(parts[: index + 1])
                    raise SourceRejected(
                        "symlink", f"its folder {shown!r} is a symbolic link (or not a folder); "
                        "links are never followed, anywhere on the path",
                    ) from None
                raise
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fds[-1])
        except FileNotFoundError:
            raise SourceRejected("missing", "was removed before it could be read") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SourceRejected("symlink", "is a symbolic link; links are never followed") from None
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
                raise SourceRejected("not-a-file", "is not a regular file (socket or device)") from None
            raise
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "folder" if stat.S_ISDIR(st.st_mode) \
                else "socket or device"
            raise SourceRejected("not-a-file", f"is a {what}, not a regular file")
        if st.st_dev != top_dev:
            raise SourceRejected("outside", f"lives on another file system than {top.name}/ (a mount point)")
        if st.st_nlink > 1 and not allow_hard_links:
            raise SourceRejected(
                "hard-link", f"has {st.st_nlink} hard links (it may be a link to a file outside the vault); "
                "set ingest.allow_hard_links = true to ingest such files",
            )
        yield fd, st
    finally:
        for opened in reversed(fds):
            os.close(opened)


def read_inside(top: Path, path: Path, max_bytes: int, *, allow_hard_links: bool = False) -> bytes:
    """The bytes of ``path`` (at most ``max_bytes``; more raises ``too-large``)."""
    with open_inside(top, path, allow_hard_links=allow_hard_links) as (fd, st):
        if st.st_size > max_bytes:
            raise SourceRejected(
                "too-large", f"is {st.st_size} bytes, over the limit of {max_bytes} (ingest.max_source_bytes); "
                "split it or raise the limit",
            )
        chunks = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise SourceRejected("too-large", f"grew past the limit of {max_bytes} bytes while being read")
    return data


def hash_inside(top: Path, path: Path, *, allow_hard_links: bool = False) -> tuple[str, os.stat_result]:
    """(sha256 hex, fstat) of ``path`` read through the same no-follow walk."""
    digest = hashlib.sha256()
    with open_inside(top, path, allow_hard_links=allow_hard_links) as (fd, st):
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
    return digest.hexdigest(), st
