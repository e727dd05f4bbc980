"""Find the shipped defaults and templates (config/, systemd/, hooks/).

An installed wheel carries them inside the package as ``wikiwright/_shipped/``; a checkout
(or an editable install) has them at the top of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def shipped_path(*parts: str) -> Path:
    """Path of a shipped file, e.g. ``shipped_path("config", "wikiwright.toml")``."""
    for base in (_PACKAGE_DIR / "_shipped", _PACKAGE_DIR.parent):
        candidate = base.joinpath(*parts)
        if candidate.exists():
            return candidate
    return (_PACKAGE_DIR / "_shipped").joinpath(*parts)


def read_shipped_text(*parts: str) -> str:
    return shipped_path(*parts).read_text(encoding="utf-8")
