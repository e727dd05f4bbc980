"""Which sources in raw/ go into git, and the .gitignore section that keeps the others out.

A source is committed in its own ingest commit, so one commit holds the source and every
page made of it, when it is text (valid UTF-8, no NUL byte) of at most
``git.commit_raw_max_bytes``. Everything else in raw/ stays out of git: a larger or binary
source (its sha256 is on its source page, so history still says exactly which bytes a page
was made of), and files not ingested (pending, quarantined, skipped, duplicates). The
daemon's section of the vault's ``.gitignore`` (between two marker lines; every other line
belongs to the person and is never changed) ignores ``/raw/``: git ignores only files it does
not track, so a committed source stays tracked (a change or removal of it shows in
``git status`` and in doctor) while the rest never clutters ``git status``.

Pure functions: the door writes ``.gitignore`` (``op.edit_file``) and commits the source
(``op.add_paths``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.secrets import secret_kinds

SECTION_START = "# wikiwright:raw-ignore:start (raw/ is committed source by source with each ingest)"
SECTION_END = "# wikiwright:raw-ignore:end"
_START_KEY = "# wikiwright:raw-ignore:start"


@dataclass(frozen=True)
class RawDecision:
    commit: bool
    reason: str  # why it is kept out ('' when committed)


def decide(data: bytes, max_bytes: int) -> RawDecision:
    """Commit ``data`` with its ingest, or keep it out of git (and why)."""
    if len(data) > max_bytes:
        return RawDecision(False, f"{len(data)} bytes, over git.commit_raw_max_bytes ({max_bytes})")
    if b"\0" in data:
        return RawDecision(False, "binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return RawDecision(False, "binary (not UTF-8 text)")
    kinds = secret_kinds(text)
    if kinds:
        # Secrets never leave the machine (issue 10): a commit may be pushed.
        return RawDecision(False, f"it contains secrets ({', '.join(kinds)})")
    return RawDecision(True, "")


SECTION = [SECTION_START, "/raw/", SECTION_END]


def with_section(text: str | None) -> str | None:
    """``text`` (a .gitignore; None when there is none) with the daemon's section in place;
    None when it is there already. The person's lines are kept as they are."""
    rows = (text or "").splitlines()
    start = next((i for i, row in enumerate(rows) if row.startswith(_START_KEY)), None)
    if start is not None:
        end = next((i for i in range(start + 1, len(rows)) if rows[i].strip() == SECTION_END), None)
        if end is not None and rows[start + 1 : end] == SECTION[1:-1]:
            return None
        rows[start : (end if end is not None else start) + 1] = SECTION
    else:
        while rows and not rows[-1].strip():
            rows.pop()
        rows += [*([""] if rows else []), *SECTION]
    return "\n".join(rows) + "\n"
