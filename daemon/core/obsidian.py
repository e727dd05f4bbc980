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

from .fsutil import atomic_replace_if

IGNORED = ["raw/", ".wikiwright/"]


def write_ignore_filters(root: Path) -> bool:
    """Add the exclusions to ``root/.obsidian/app.json`` if it has none; True if written.

    Installed by compare-and-swap against the bytes read: a person saving their settings
    meanwhile keeps their file, and the exclusions are added to it (if it still has none)."""
    path = root / ".obsidian" / "app.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    for _attempt in range(10):
        try:
            old: bytes | None = path.read_bytes()
        except FileNotFoundError:
            old = None
        except OSError:
            return False  # the person's file, unreadable to us: never overwritten
        settings: dict[str, object] = {}
        if old is not None:
            try:
                loaded = json.loads(old.decode("utf-8") or "{}")
            except (UnicodeDecodeError, json.JSONDecodeError):
                return False  # the person's file, unreadable to us: never overwritten
            if not isinstance(loaded, dict) or "userIgnoreFilters" in loaded:
                return False
            settings = loaded
        settings["userIgnoreFilters"] = list(IGNORED)
        if atomic_replace_if(path, (json.dumps(settings, indent=2) + "\n").encode("utf-8"), old):
            return True
    return False  # the person kept saving it: theirs stays, the filters wait for the next init
