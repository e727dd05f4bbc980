"""The vault's Obsidian settings: raw sources and local state stay out of search and graph.

Files in ``raw/`` are inputs, not notes: shown in Obsidian's graph they are isolated dots, and
in search they duplicate the pages made from them. ``init`` therefore writes
``.obsidian/app.json`` with ``userIgnoreFilters`` ("Excluded files" in Obsidian's settings) —
only when the person has no such setting yet. An existing app.json keeps every other setting;
one with its own exclusions, or one that is not valid JSON, is left exactly as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

from .fsutil import atomic_write_text

IGNORED = ["raw/", ".wikiwright/"]


def write_ignore_filters(root: Path) -> bool:
    """Add the exclusions to ``root/.obsidian/app.json`` if it has none; True if written."""
    path = root / ".obsidian" / "app.json"
    settings: dict[str, object] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False  # the person's file, unreadable to us: never overwritten
        if not isinstance(loaded, dict) or "userIgnoreFilters" in loaded:
            return False
        settings = loaded
    settings["userIgnoreFilters"] = list(IGNORED)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(settings, indent=2) + "\n", crash_hooks=False)
    return True
