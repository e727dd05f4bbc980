"""Atomic, durable file writes and content hashing."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

# Temp files carry this marker so the watcher, doctor and Obsidian users can tell them apart.
TEMP_MARKER = ".wikiwright-tmp-"

log = logging.getLogger(__name__)


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


# -- compare-and-swap on a file a person may edit ------------------------------------------------
#
# "Replace this file only if it still holds X", without a window. With an atomic exchange
# (Linux renameat2(RENAME_EXCHANGE), macOS renamex_np(RENAME_SWAP)) our fully written temp file
# and the file at the path swap places in one step, so the temp path then holds exactly what
# was displaced: the install is checked after the fact, against the very bytes it replaced.
# If those are not the expected ones, a person saved in between: their file is swapped back
# and the caller redoes its change on their text (the door merges or re-applies; see DESIGN.md
# rule 4). Nothing a person saved is ever unlinked by us unless it is byte for byte what the
# caller expected, or a later save of theirs replaced it (as their own rename would have).

EXCHANGE_MODE = "atomic exchange"
FALLBACK_MODE = "fallback"
# How long a displaced file may stay open for writing (an in-place save still being written)
# before we stop waiting for it and put it back; and the pause of the stability check where
# the kernel cannot say whether a writer has it open.
SETTLE_SECONDS = 2.0
STABLE_PAUSE = 0.02
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOTTY}
_no_exchange: set[int] = set()  # st_dev of filesystems where the exchange was refused
_race_hook: Callable[[Path], None] | None = None


@contextlib.contextmanager
def race_hook(hook: Callable[[Path], None]) -> Iterator[None]:
    """Tests only: ``hook(path)`` runs between the last comparison and the install of every
    compare-and-swap, so a test can make "the person" save exactly there, every run."""
    global _race_hook
    if "PYTEST_CURRENT_TEST" not in os.environ:
        raise RuntimeError("race_hook is for the test suite only")
    previous, _race_hook = _race_hook, hook
    try:
        yield
    finally:
        _race_hook = previous


def race_point(path: Path) -> None:
    """The test hook's point: between a writer's last comparison and its install."""
    if _race_hook is not None:
        _race_hook(path)


class _Renamer:
    """renameat2 / renamex_np through libc (ctypes); ``fn`` None where there is neither."""

    def __init__(self) -> None:
        self.fn: Any = None
        self.linux = sys.platform.startswith("linux")
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if self.linux:
                fn = libc.renameat2
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            elif sys.platform == "darwin":
                fn = libc.renamex_np
                fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
            else:
                return
            fn.restype = ctypes.c_int
            self.fn = fn
        except (OSError, AttributeError):
            self.fn = None

    def __call__(self, src: Path, dst: Path, *, exchange: bool) -> None:
        """Swap ``src`` and ``dst`` (``exchange``), or rename ``src`` to ``dst`` only where
        ``dst`` does not exist; OSError (ENOSYS where unavailable) otherwise."""
        if self.fn is None:
            raise OSError(errno.ENOSYS, "no atomic exchange on this platform")
        a, b = os.fsencode(src), os.fsencode(dst)
        # Linux: AT_FDCWD, RENAME_EXCHANGE (2) / RENAME_NOREPLACE (1); macOS: RENAME_SWAP / RENAME_EXCL.
        result = (self.fn(-100, a, -100, b, 2 if exchange else 1) if self.linux
                  else self.fn(a, b, 0x2 if exchange else 0x4))
        if result != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(src), None, str(dst))


_rename2 = _Renamer()


def _exchange_ok(folder: Path) -> bool:
    try:
        return folder.stat().st_dev not in _no_exchange and _rename2.fn is not None
    except OSError:
        return False


def _refused(folder: Path, exc: OSError) -> bool:
    """True (and the folder's filesystem remembered as fallback) when ``exc`` says the
    filesystem does not do exchanges (some network and FUSE filesystems)."""
    if exc.errno not in _UNSUPPORTED:
        return False
    with contextlib.suppress(OSError):
        _no_exchange.add(folder.stat().st_dev)
    log.info("%s: atomic exchange refused (%s); compare-and-swap uses the fallback", folder, exc.strerror)
    return True


def cas_mode(folder: Path) -> str:
    """How compare-and-swap runs in ``folder``: :data:`EXCHANGE_MODE` or :data:`FALLBACK_MODE`
    (probed with two empty temp files; shown by ``status`` and ``doctor``); "unknown (…)"
    where the folder cannot be written to probe it."""
    if not _exchange_ok(folder):
        return FALLBACK_MODE
    made: list[Path] = []
    try:
        for _ in range(2):
            fd, name = tempfile.mkstemp(prefix=f".probe{TEMP_MARKER}", dir=folder)
            os.close(fd)
            made.append(Path(name))
        _rename2(made[0], made[1], exchange=True)
    except OSError as exc:
        if made and _refused(folder, exc):
            return FALLBACK_MODE
        return f"unknown (cannot probe {folder}: {exc.strerror})"
    finally:
        for path in made:
            with contextlib.suppress(OSError):
                path.unlink()
    return EXCHANGE_MODE


_BUSY = object()  # a displaced file still open for writing after SETTLE_SECONDS


_UNKNOWN = object()  # the kernel cannot say whether a writer has the file open


def _read_unwritten(fd: int) -> object:
    """The file's bytes, read while no process has it open for writing (Linux: a read lease
    is refused while any writer has it open, and broken by a writer opening it meanwhile);
    :data:`_BUSY` while a writer has it open; :data:`_UNKNOWN` where the kernel cannot tell
    (macOS, a file another user owns, some filesystems)."""
    if not sys.platform.startswith("linux"):
        return _UNKNOWN
    try:
        # A lease break would send SIGIO, whose default kills the process: SIGURG is ignored.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return _BUSY if exc.errno in (errno.EAGAIN, errno.EBUSY) else _UNKNOWN
    try:
        data = _read_fd(fd)
        # Still ours (F_RDLCK): no writer opened it while we read. Nobody else knows the
        # displaced file's temp name, so once no writer has it open, its bytes are final.
        return data if fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK else _BUSY
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)


def _read_fd(fd: int) -> bytes:
    chunks = []
    offset = 0
    while block := os.pread(fd, 1 << 20, offset):
        chunks.append(block)
        offset += len(block)
    return b"".join(chunks)


def _settled_read(path: Path) -> object:
    """The final bytes of a displaced file (None: gone), once no save into it is in progress:
    a writer with it open (an editor truncating and rewriting in place) is waited for, up to
    :data:`SETTLE_SECONDS`; :data:`_BUSY` if it is still being written then."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            data = _read_unwritten(fd)
            if isinstance(data, bytes):
                return data
            if data is _UNKNOWN:
                # The kernel cannot tell: the bytes must stand still across a short pause.
                before = os.fstat(fd)
                data = _read_fd(fd)
                time.sleep(STABLE_PAUSE)
                after = os.fstat(fd)
                if ((before.st_size, before.st_mtime_ns, before.st_ctime_ns)
                        == (after.st_size, after.st_mtime_ns, after.st_ctime_ns) and _read_fd(fd) == data):
                    return data
            if time.monotonic() >= deadline:
                return _BUSY
            time.sleep(0.005)  # a save in progress: wait for its close, not a retry of ours
    finally:
        os.close(fd)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _give_back(path: Path, held: Path, kept: object, drop: object) -> None:
    """``held`` holds a person's version (bytes ``kept``) that must be at ``path``, where ours
    (``drop``) is now, or a save of theirs newer still. Swapped back; what comes out is removed
    only while it is ``drop`` — a newer save of theirs goes back to the path instead, and the
    older one it superseded is removed as their own rename would have removed it."""
    for _attempt in range(10):
        try:
            _rename2(held, path, exchange=True)
        except FileNotFoundError:
            # They removed the path after our install: their version goes back, beside nothing.
            with contextlib.suppress(FileExistsError):
                _rename2(held, path, exchange=False)
            if held.exists():
                continue
            fsync_dir(path.parent)
            return
        out = _settled_read(held)
        if out is not _BUSY and out == drop:
            held.unlink(missing_ok=True)
            fsync_dir(path.parent)
            return
        # A newer save of theirs (or one still being written) came out: it goes back in.
        drop, kept = kept, out
    kept_as = path.with_name(f".{path.name}.wikiwright-kept-{os.getpid()}-{time.time_ns()}")
    os.replace(held, kept_as)  # out of the temp-file sweeps' reach: never removed by us
    log.warning("%s kept changing while wikiwright put a person's version back; the other version is kept "
                "beside it as %s", path, kept_as.name)


def atomic_replace_if(path: Path, data: bytes | None, expected: bytes | None) -> bool:
    """Compare-and-swap on a file a person may edit: put ``data`` at ``path`` (None: remove it)
    only if it holds ``expected`` (None: absent); False when it did not, the person's version
    left in place for the caller to redo its change on.

    Atomic exchange mode (see :func:`cas_mode`): no window. The temp file is written and
    fsynced first; exchange installs it and hands back the displaced file, which is checked
    (after any in-place save into it has finished: see :func:`_settled_read`) and swapped
    back unless it is exactly ``expected``. A save landing after the install simply replaces
    ours, and stays. Fallback mode: temp written and fsynced, then compare, rename, verify;
    the window is the few microseconds between the final read and the rename.
    """
    from ..core.crashpoints import crash_point
    from ..core.rootguard import check_path

    if _read_or_none(path) != expected:
        return False
    check_path(path.parent)  # never recreate a moved vault's folders at its old path
    if data is None:
        return expected is None or _remove_if(path, expected)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARKER}", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        mode = 0o644
        with contextlib.suppress(OSError):
            mode = path.stat().st_mode & 0o7777  # keep the mode the person gave the file
        os.chmod(tmp, mode)
        crash_point("after-temp-write")
        if _read_or_none(path) != expected:  # the final comparison: everything slow is done
            tmp.unlink()
            return False
        race_point(path)
        installed = _install(path, tmp, data, expected)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if installed:
        fsync_dir(path.parent)
        crash_point("after-rename")
    return installed


def _install(path: Path, tmp: Path, data: bytes, expected: bytes | None) -> bool:
    """Put the fsynced ``tmp`` at ``path`` if ``path`` holds ``expected``; False (and ``tmp``
    gone, the person's version in place) if it did not."""
    if expected is None:
        return _create(path, tmp)
    if _exchange_ok(path.parent):
        try:
            _rename2(tmp, path, exchange=True)
        except FileNotFoundError:
            tmp.unlink()  # the person removed the file: it no longer holds what was expected
            return False
        except OSError as exc:
            if not _refused(path.parent, exc):
                raise
        else:
            displaced = _settled_read(tmp)
            if displaced is not _BUSY and displaced == expected:
                tmp.unlink()
                return True
            _give_back(path, tmp, displaced, data)
            return False
    os.replace(tmp, path)
    if _read_or_none(path) != data:
        log.info("%s: a person's save replaced wikiwright's right after it was written; theirs stays", path)
    return True


def _create(path: Path, tmp: Path) -> bool:
    """Create ``path`` from ``tmp`` only where nothing is: a file a person made meanwhile stays."""
    if _exchange_ok(path.parent):
        try:
            _rename2(tmp, path, exchange=False)
            return True
        except FileExistsError:
            tmp.unlink()
            return False
        except OSError as exc:
            if not _refused(path.parent, exc):
                raise
    try:
        os.link(tmp, path)  # fails with EEXIST rather than replace a file
    except FileExistsError:
        tmp.unlink()
        return False
    except OSError:
        if path.exists():  # no hard links here either: the fallback's compare, then rename
            tmp.unlink()
            return False
        os.replace(tmp, path)
        return True
    tmp.unlink()
    return True


def _remove_if(path: Path, expected: bytes) -> bool:
    """Remove ``path`` only if it holds ``expected``: moved aside in one rename (the inode that
    was at the path, whatever it is), checked there, and put back if it was not ``expected``."""
    race_point(path)
    if not _exchange_ok(path.parent):
        if _read_or_none(path) != expected:
            return False
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
        return True
    fd, grave_name = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARKER}", dir=path.parent)
    os.close(fd)
    grave = Path(grave_name)
    try:
        os.replace(path, grave)
    except FileNotFoundError:
        grave.unlink()
        return False
    displaced = _settled_read(grave)
    if displaced is not _BUSY and displaced == expected:
        grave.unlink()
        fsync_dir(path.parent)
        return True
    try:
        _rename2(grave, path, exchange=False)  # the person's version back, unless they made a newer one
    except FileExistsError:
        # A newer file of theirs is at the path already; it supersedes the one we moved aside,
        # as their own save would have.
        grave.unlink()
    fsync_dir(path.parent)
    return False


def atomic_write_text(path: Path, text: str, *, crash_hooks: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), crash_hooks=crash_hooks)

