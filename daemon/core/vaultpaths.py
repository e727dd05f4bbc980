"""Which vault-relative paths are safe, and which another machine may bring in by sync.

A path from a git tree (another machine's commit, a journal) is data from outside: git's
``mktree`` accepts any entry name, so a tree can hold ``.git/hooks/…``, ``.GIT``, ``..``,
control characters or names longer than a file system allows. Two questions are answered
here, as pure functions on the path's text:

- :func:`path_problem`: is it a path at all inside the vault — no ``..``/``.``/empty component,
  no absolute or backslash form, no component that is hidden (``.git`` in any case, ``.wikiwright``,
  ``.obsidian``, any dot-folder) except the root ``.gitignore``, no control or invisible
  format character, no bytes that are not UTF-8, no over-long name (the atomic writer adds a
  temp suffix to the name, so a component stays well under the 255 bytes file systems allow).
- :func:`sync_problem`: is it on sync's allow-list: ``wiki/**.md``, ``REVIEW.md``,
  ``SCHEMA.md``, ``logs/*.md``, ``raw/**`` (text sources; their bytes are checked by the
  caller) and ``.gitignore`` (only its generated section is taken).

:func:`safe_target` adds the disk: no folder on the way to the file may be a symbolic link,
so a write can never land outside the vault through a link a person (or git) made.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from .errors import UnsafePathError

MAX_COMPONENT_BYTES = 200
MAX_PATH_BYTES = 1000
ROOT_FILES = ("REVIEW.md", "SCHEMA.md", ".gitignore")
INDEX_PAGE = "wiki/index.md"
LOG_PAGE = "wiki/log.md"
OVERVIEW_PAGE = "wiki/overview.md"
GENERATED_PAGES = (INDEX_PAGE, LOG_PAGE, OVERVIEW_PAGE)  # built by code (rule 5)
LOG_ARCHIVE_FOLDER = "wiki/log/"  # log.md's older entries, a file per month (wiki/logfile.py)
_LOG_ARCHIVE_RE = re.compile(r"^wiki/log/\d{4}-\d{2}(?:-\d+)?\.md$")


def is_log_file(rel: str) -> bool:
    """A file of the wiki's operation log, written by the door only: log.md (the newest entries,
    appended to) and its archives (``wiki/log/2026-12.md``, ``wiki/log/2026-12-2.md``: older
    entries, each written once, whole); merged by keeping both machines' entries. An archive is
    not a content page: no catalogue row, no index.md line, no lint finding, no search hit.
    The one place that says which paths those are."""
    return rel == LOG_PAGE or (rel.startswith(LOG_ARCHIVE_FOLDER) and _LOG_ARCHIVE_RE.match(rel) is not None)


# NTFS short names of .git (git itself refuses them with core.protectNTFS).
_SHORT_GIT_RE = re.compile(r"^git~\d+$", re.IGNORECASE)


def _bad_character(part: str) -> str:
    for ch in part:
        if "\udc80" <= ch <= "\udcff":
            return "bytes that are not UTF-8"
        category = unicodedata.category(ch)
        if category == "Cc":
            return "a control character"
        if category in ("Cf", "Zl", "Zp"):
            return "an invisible formatting character"
    return ""


def path_problem(rel: str) -> str:
    """Why ``rel`` is not a safe vault-relative path ('' when it is)."""
    if not rel:
        return "an empty path"
    if rel.startswith("/") or "\\" in rel or re.match(r"^[A-Za-z]:", rel):
        return "an absolute path or a backslash"
    if len(rel.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        return f"a path over {MAX_PATH_BYTES} bytes"
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            return "climbs out of the vault (.. or an empty component)"
        bad = _bad_character(part)
        if bad:
            return f"a name with {bad}"
        folded = part.casefold().rstrip(" .")
        if folded == ".git" or _SHORT_GIT_RE.match(part):
            return "names .git (git's own folder: hooks and configuration)"
        if part.startswith("."):
            if rel == ".gitignore":
                continue
            if parts[0] == ".wikiwright":
                return ".wikiwright/ is this machine's own state and configuration"
            if parts[0] == ".obsidian":
                return ".obsidian/ is Obsidian's configuration and plugins"
            return "a hidden file or folder"
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            return f"a name over {MAX_COMPONENT_BYTES} bytes"
    return ""


def sync_kind(rel: str) -> str:
    """What an allowed path is: page | review | schema | log | raw | gitignore ('' when not allowed)."""
    if rel == "REVIEW.md":
        return "review"
    if rel == "SCHEMA.md":
        return "schema"
    if rel == ".gitignore":
        return "gitignore"
    parts = rel.split("/")
    if parts[0] == "wiki" and len(parts) > 1 and rel.endswith(".md") and parts[-1] != ".md":
        return "page"
    if parts[0] == "logs" and len(parts) == 2 and rel.endswith(".md"):
        return "log"
    if parts[0] == "raw" and len(parts) > 1:
        return "raw"
    return ""


def sync_problem(rel: str) -> str:
    """Why another machine may not bring ``rel`` into this vault ('' when it may)."""
    problem = path_problem(rel)
    if problem:
        return problem
    if not sync_kind(rel):
        return ("not on sync's allow-list (wiki/**.md, REVIEW.md, SCHEMA.md, logs/*.md, raw/ text sources, "
                ".gitignore)")
    return ""


def safe_target(root: Path, rel: str) -> Path:
    """``root / rel`` for a write or a removal; raises UnsafePathError when ``rel`` is not a
    safe path or a folder on the way is a symbolic link (or not a folder)."""
    problem = path_problem(rel)
    if problem:
        raise UnsafePathError(f"{rel!r}: {problem}")
    parts = rel.split("/")
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            raise UnsafePathError(f"{rel!r}: its folder {folder.relative_to(root).as_posix()} is a symbolic link")
        if folder.exists() and not folder.is_dir():
            raise UnsafePathError(f"{rel!r}: {folder.relative_to(root).as_posix()} is a file, not a folder")
    return root / rel
