"""A model ingest's notes for a person under ``.wikiwright/``: the operations held for review
(``held/<sha>.json``) and what normalising the model's operations changed
(``normalised/<sha>.json``).

The planner writes neither: its plan carries a :class:`NotesDelta`, which the door journals
with the ingest's commit and makes through the ``notes`` sink (:class:`StateNotes`, given by
the vault context) once the commit exists, again by recovery after a crash. A plan set aside
leaves no note; an ingest that committed always has its notes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..core.fsutil import atomic_write_text

log = logging.getLogger(__name__)

NOTES_SINK = "notes"
HELD = "held"  # operations held for review
NORMALISED = "normalised"  # what normalising the model's operations changed
NOTE_FOLDERS = (HELD, NORMALISED)
# A note's name: the first 16 hex digits of its source's sha256.
_NOTE_NAME_RE = re.compile(r"[0-9a-f]{16}\.json")


def note_path(folder: str, sha256: str) -> str:
    """Where a source's note of ``folder`` is, relative to ``.wikiwright/``."""
    return f"{folder}/{sha256[:16]}.json"


@dataclass(frozen=True)
class NotesDelta:
    """The notes an ingest leaves: path under ``.wikiwright/`` -> text."""

    files: dict[str, str] = field(default_factory=dict)
    sink: ClassVar[str] = NOTES_SINK

    def __bool__(self) -> bool:
        return bool(self.files)

    def to_json(self) -> dict[str, Any]:
        return {"files": dict(self.files)}


def _checked(rel: object) -> str:
    """``rel`` when it names a note (``held/<16 hex>.json``); ValueError otherwise, so a journal
    from elsewhere cannot have a file written anywhere else under the vault."""
    if not isinstance(rel, str):
        raise ValueError(f"not a note's path: {rel!r}")
    parts = rel.split("/")
    if len(parts) != 2 or parts[0] not in NOTE_FOLDERS or not _NOTE_NAME_RE.fullmatch(parts[1]):
        raise ValueError(f"not a note's path: {rel!r}")
    return rel


class StateNotes:
    """The ``notes`` sink: writes a delta's notes under the vault's ``.wikiwright/``."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def apply_journaled(self, payload: Mapping[str, Any]) -> None:
        files = payload.get("files")
        if not isinstance(files, Mapping) or not all(isinstance(t, str) for t in files.values()):
            raise ValueError("not a notes delta")
        checked = {_checked(rel): text for rel, text in files.items()}  # all checked before any is written
        for rel, text in checked.items():
            folder, name = rel.split("/")
            path = (self.state_dir / HELD if folder == HELD else self.state_dir / NORMALISED) / name
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(path, text)
            except OSError as exc:  # a note only explains its commit, which says it all: never fatal
                log.warning("could not keep %s: %s", rel, exc)
