"""Dropping a file into raw/: the one rule for every way a source arrives from outside it.

raw/ is the record of what was ingested, so whatever is ingested from elsewhere is put there
first: a file named on the command line outside raw/ (``wikiwright ingest``, in its own
process or handed to the daemon), a folder's files (under ``raw/<folder name>/``), a note an
agent sends over MCP. A file already in raw/ is taken where it is (a link in raw/ as the link
it is, never followed). A free name is found beside a taken one (``name-2.md``); bytes equal
to a file already at the name are that file, not a second copy.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from ..core.errors import WikiwrightError
from ..core.fsutil import atomic_write_bytes
from ..core.vault import Vault

_SLUG_RE = re.compile(r"[^a-z0-9]+")
NOTE_SLUG_CHARS = 60


def in_raw(vault: Vault, path: Path) -> Path | None:
    """``path`` inside raw/ with its folders resolved but never its last component (a link
    in raw/ is recorded as the link it is, never followed to its target); else None."""
    lexical = Path(os.path.normpath(path.absolute()))
    located = path.absolute().parent.resolve() / path.name
    for candidate in (lexical, located):  # as written (a linked folder in raw/ stays in raw/), then resolved
        for raw in (vault.raw, vault.raw.resolve()):
            if candidate.is_relative_to(raw) and candidate != raw:
                return vault.raw / candidate.relative_to(raw)
    return None


def expand(vault: Vault, given: list[Path]) -> tuple[list[tuple[Path, Path | None]], list[str]]:
    """The files to ingest as (path, the folder named or None): a folder gives the files under
    it, recursively, with the watcher's skips (hidden folders, temporary names; linked folders
    are not entered); a link outside raw/ is refused, never followed. Also the refusals, one
    line each."""
    from .watch import ignore_rule

    found: list[tuple[Path, Path | None]] = []
    refused: list[str] = []
    for path in given:
        if path.is_symlink():
            inside = in_raw(vault, path)
            if inside is not None:
                found.append((inside, None))  # recorded as quarantined, exactly as the daemon does
            else:
                refused.append(f"{path}: is a symbolic link; links are never followed (name the file itself)")
            continue
        if not path.is_dir():
            found.append((path, None))
            continue
        before = len(found)
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if ignore_rule(name) is None:
                    found.append((Path(dirpath) / name, path))
        if len(found) == before:
            refused.append(f"{path}: a folder with no files to ingest (hidden and temporary files are skipped)")
    return found, refused


def read_outside(source: Path) -> bytes:
    """A file named from outside raw/, read without following a link in its last component."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise WikiwrightError(f"{source}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise WikiwrightError(f"{source}: not a regular file (FIFO, socket or device)")
        return handle.read()


def drop_into_raw(folder: Path, name: str, data: bytes, *, same_bytes_are_the_file: bool = True,
                  crash_hooks: bool = True) -> tuple[Path, bool]:
    """Write ``data`` as ``folder/name`` (``folder`` inside raw/), at the first free name
    (``stem-2.suffix``, ``stem-3.suffix``, ...). Returns the path and whether it was written:
    with ``same_bytes_are_the_file``, a file already holding these bytes is returned as is."""
    folder.mkdir(parents=True, exist_ok=True)
    stem, suffix = Path(name).stem, Path(name).suffix
    target = folder / name
    n = 2
    while target.exists() or target.is_symlink():
        if (same_bytes_are_the_file and target.is_file() and not target.is_symlink()
                and target.read_bytes() == data):
            return target, False
        target = folder / f"{stem}-{n}{suffix}"
        n += 1
    atomic_write_bytes(target, data, crash_hooks=crash_hooks)
    return target, True


def copy_into_raw(vault: Vault, source: Path, folder: Path | None = None) -> Path:
    """A file named for ingest, in raw/: itself when it is there already, else a copy (its
    times kept); the files of a folder keep their place under ``raw/<folder name>/``."""
    inside = in_raw(vault, source)
    if inside is not None:
        return inside
    data = read_outside(source)
    base = vault.raw
    if folder is not None:
        base = vault.raw / folder.absolute().name / source.absolute().parent.relative_to(folder.absolute())
    target, written = drop_into_raw(base, source.name, data)
    if written:
        shutil.copystat(source, target, follow_symlinks=False)
    return target


def note_body(title: str, text: str) -> str:
    """A note's file text: a heading of the title first when the text has none."""
    body = text if not title.strip() or text.lstrip().startswith("#") else f"# {title.strip()}\n\n{text}"
    return body if body.endswith("\n") else body + "\n"


def note_into_raw(vault: Vault, title: str, text: str) -> Path:
    """A note (markdown text) as a new file in raw/ (:func:`note_body`), named from its title
    or first line; never taken for an earlier note with the same words."""
    first = title.strip() or next((line.strip("# ").strip() for line in text.splitlines() if line.strip()), "")
    slug = _SLUG_RE.sub("-", first.casefold()).strip("-")[:NOTE_SLUG_CHARS].strip("-") or "note"
    target, _ = drop_into_raw(vault.raw, f"{slug}.md", note_body(title, text).encode("utf-8"),
                              same_bytes_are_the_file=False, crash_hooks=False)
    return target
