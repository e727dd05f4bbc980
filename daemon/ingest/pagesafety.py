"""What a source page says, made safe by the one sanitizer (wiki/sanitize.py) for both engines.

The offline engine copies text out of a dropped file and the model engine writes a title, a
summary and key points; either way it passes through :func:`safe_digest` before it is
rendered, and the source page lists what was cleaned (a remote image turned into a link, a
script removed) and which kinds of secret the source held (never their values).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..wiki.sanitize import clean_line, clean_markdown, link_label, link_target_problem

if TYPE_CHECKING:
    from ..ingest.offline import SourceDigest


def safe_digest(digest: SourceDigest, links: list[tuple[str, str]], *, allow_remote_images: bool = False,
                ) -> tuple[SourceDigest, list[tuple[str, str]], list[str]]:
    """(cleaned digest, cleaned (stem, label) links, notes on what was cleaned)."""
    notes: list[str] = []

    def line(value: str, what: str) -> str:
        result = clean_line(value, allow_remote_images=allow_remote_images)
        notes.extend(f"{what}: {note}" for note in result.notes)
        return result.text

    summary = clean_markdown(digest.summary, allow_remote_images=allow_remote_images)
    notes.extend(f"summary: {note}" for note in summary.notes)
    cleaned = dataclasses.replace(
        digest,
        title=line(digest.title, "title") or "untitled",
        summary=summary.text,
        key_points=[line(p, "key point") for p in digest.key_points],
        dates=[line(d, "date") for d in digest.dates],
        outline=[line(h, "outline") for h in digest.outline],
    )
    if getattr(digest, "parts", None):
        cleaned = dataclasses.replace(cleaned, parts=[(line(heading, "part"), line(first, "part"))
                                                      for heading, first in digest.parts])
    safe_links = []
    for stem, title in links:
        problem = link_target_problem(stem)
        if problem:
            notes.append(f"related page left out: {problem}")
            continue
        safe_links.append((stem, link_label(title)))
    return cleaned, safe_links, list(dict.fromkeys(notes))


def safety_lines(notes: list[str], secrets: list[str] | None) -> list[str]:
    """Body lines for the source page: secrets found (kinds only) and what was cleaned."""
    lines: list[str] = []
    if secrets:
        lines += ["## Secrets", "",
                  f"This source contained secrets ({', '.join(secrets)}). They were redacted: the values "
                  "are not in the wiki and were never sent to a model.", ""]
    if notes:
        lines += ["## Cleaned", "", "Unsafe content from the source or the model was not copied:", "",
                  *[f"- {note}" for note in notes[:30]], ""]
        if len(notes) > 30:
            lines.insert(-1, f"- … and {len(notes) - 30} more")
    return lines
