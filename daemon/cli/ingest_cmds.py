"""The command line: ingest (one-shot) and schema."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from ..core.errors import WikiwrightError
from ..core.fsutil import atomic_write_bytes
from ..intake.names import relative_name
from .common import AddParser, command, emit_json, open_vault, setup_logging

log = logging.getLogger(__name__)


def add_parsers(add: AddParser) -> None:
    p: argparse.ArgumentParser
    p = add("ingest", "ingest files now, without the daemon (files outside raw/ are copied in)")
    p.add_argument("files", nargs="+", metavar="FILE")
    add("schema", "print the JSON schemas of the model's replies (the operations contract)", vault=False)


def _in_raw(vault: Any, path: Path) -> Path | None:
    """``path`` inside raw/ with its folders resolved but never its last component (a link
    in raw/ is recorded as the link it is, never followed to its target); else None."""
    lexical = Path(os.path.normpath(path.absolute()))
    located = path.absolute().parent.resolve() / path.name
    for candidate in (lexical, located):  # as written (a linked folder in raw/ stays in raw/), then resolved
        for raw in (vault.raw, vault.raw.resolve()):
            if candidate.is_relative_to(raw) and candidate != raw:
                return vault.raw / candidate.relative_to(raw)
    return None


def _expand(vault: Any, given: list[Path]) -> tuple[list[tuple[Path, Path | None]], list[str]]:
    """The files to ingest as (path, the folder named on the command line or None): a folder
    gives the files under it, recursively, with the watcher's skips (hidden folders, temporary
    names; linked folders are not entered). Also the refusals, one line each."""
    from ..intake.watch import ignore_rule

    found: list[tuple[Path, Path | None]] = []
    refused: list[str] = []
    for path in given:
        if path.is_symlink():
            inside = _in_raw(vault, path)
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


def _read_outside(source: Path) -> bytes:
    """A file named on the command line, read without following a link in its last component."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise WikiwrightError(f"{source}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise WikiwrightError(f"{source}: not a regular file (FIFO, socket or device)")
        return handle.read()


def _copy_into_raw(vault: Any, source: Path, folder: Path | None = None) -> Path:
    """Files outside raw/ are copied in first (raw/ is the record of what was ingested); the
    files of a folder keep their place under ``raw/<folder name>/``."""
    inside = _in_raw(vault, source)
    if inside is not None:
        return inside
    data = _read_outside(source)
    base = vault.raw
    if folder is not None:
        base = vault.raw / folder.absolute().name / source.absolute().parent.relative_to(folder.absolute())
        base.mkdir(parents=True, exist_ok=True)
    target = base / source.name
    n = 2
    while target.exists() or target.is_symlink():
        if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
            return target
        target = base / f"{source.stem}-{n}{source.suffix}"
        n += 1
    atomic_write_bytes(target, data)
    shutil.copystat(source, target, follow_symlinks=False)
    return target


@command("ingest")
def cmd_ingest(args: argparse.Namespace) -> int:
    from ..core.vault import VaultLock
    from ..ingest.pipeline import JobResult

    setup_logging(args.verbose)
    config, vault = open_vault(args)
    given = [Path(f) for f in args.files]
    missing = [str(f) for f in given if not (f.exists() or f.is_symlink())]
    if missing:
        raise WikiwrightError(f"no such file: {', '.join(missing)}")
    # Folders give the files under them; a link outside raw/ is refused, never followed.
    files, refused = _expand(vault, given)
    for line in refused:
        print(f"refused {line}")
    if not files:
        return 1
    lock = VaultLock(vault, "ingest")
    waiting_said = False
    while not lock.try_acquire():
        # Only a running daemon takes the files over; another one-shot `ingest` is waited for.
        if lock.holder_purpose() == "run":
            holder = lock.holder()
            for f, folder in files:
                target = _copy_into_raw(vault, f, folder)
                print(f"queued {relative_name(vault.root, target)} for the running daemon ({holder})")
            return 1 if refused else 0
        if not waiting_said:
            print(f"waiting for {lock.holder() or 'another wikiwright command'} to finish", file=sys.stderr)
            waiting_said = True
        time.sleep(0.1)
    try:
        from ..runtime.oneshot import ingest_here

        targets = [_copy_into_raw(vault, f, folder) for f, folder in files]
        done = 0

        def report(result: JobResult) -> None:
            nonlocal done
            done += 1
            line = f"[{done}/{len(targets)}] {result.path}: {result.state}"
            if result.detail:
                line += f" — {result.detail}"
            if result.state == "pending":
                line += "; it stays queued for `wikiwright run` or the next `wikiwright ingest`"
            elif result.commit:
                line += f" ({result.commit[:10]})"
            print(line)

        outcomes = ingest_here(config, vault, targets, report)
        return 1 if refused or any(r.state in ("quarantined", "pending", "running") for r in outcomes) else 0
    finally:
        lock.release()


@command("schema")
def cmd_schema(args: argparse.Namespace) -> int:
    from ..ingest.operations import schemas_document

    emit_json(schemas_document())
    return 0
