"""The source itself in its ingest's commit (the policy: :mod:`..intake.rawgit`).

Called inside the ingest's door operation: a text source up to ``git.commit_raw_max_bytes``
is added to the commit as its bytes on disk (only while they are still the bytes that were
ingested: a newer version is ingested, and committed, by its own job); any other source
stays out of git. The daemon's ``.gitignore`` section (``/raw/``) is put in place by the
same commit if it is missing, so ``git status`` stays clean either way.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..core.errors import SourceRejected
from ..intake.ledger import FileRecord
from ..intake.names import disk_name, name_secrets, shown_name
from ..intake.rawgit import decide, with_section
from ..intake.safeopen import read_inside


def include_source(op: Any, record: FileRecord, max_bytes: int) -> str:
    """Add the source (or its .gitignore line) to ``op``; returns a line for log.md ('' if nothing)."""
    shown = shown_name(record.path)
    if disk_name(record.path) != record.path:
        # A name that is not plain text (bytes that are not UTF-8, control characters): git's
        # paths and our commit messages are text, so the source stays out (issue 10).
        return f"`{shown}` kept out of git (its file name is not plain text)"
    kinds = name_secrets(record.path)
    if kinds:
        # git records the path itself: a secret in it would be in history for good (issue 20).
        return f"`{shown}` kept out of git (its file name contains secrets: {', '.join(kinds)})"
    rel = disk_name(record.path)  # the ledger's printable name, as the file system and git name it
    path = op.vault.root / rel
    try:
        # Through the same no-follow walk as the ingest read: a folder on the path swapped for a
        # link since then is refused, never followed (issue 10).
        data = read_inside(op.vault.raw, path, 1 << 40, allow_hard_links=True)
    except SourceRejected as exc:
        if exc.code == "missing":
            return ""  # gone already: the ledger and the source page keep its sha256
        return f"`{shown}` kept out of git ({exc})"
    except OSError:
        return ""
    try:
        ignore = (op.vault.root / ".gitignore").read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        ignore = None
    if with_section(ignore) is not None:  # missing (a new vault, or a person removed it): through the door
        op.edit_file(".gitignore", lambda text: with_section(text) or text)
    if hashlib.sha256(data).hexdigest() != record.sha256:
        return ""  # changed since it was read: the newer version is its own job
    decision = decide(data, max_bytes)
    if decision.commit:
        op.add_paths([rel])
        return ""
    return f"`{shown}` kept out of git ({decision.reason}); its sha256 is on the source page"
