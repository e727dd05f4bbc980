"""File names are data: how a name in raw/ or logs/ is recorded, shown and found again.

A name on disk is any bytes but ``/`` and NUL: not necessarily UTF-8, with newlines, escape
sequences or leading dashes. The ledger (SQLite, UTF-8 text), log lines, commit trailers and
markdown all need one printable line, so every name is recorded under its *ledger name*:

- a name that is valid UTF-8 with no control character and no backslash is kept as it is
  (so existing ledgers and every ordinary name are unchanged);
- any other name is escaped: ``\\`` → ``\\\\``, ``\\n``/``\\r``/``\\t``, other control characters
  → ``\\xNN`` (NN < 80) or ``\\uNNNN``, and each byte that is not UTF-8 → ``\\xNN`` (NN ≥ 80).

The mapping is one-to-one (an escaped name always holds a backslash, a kept one never does),
so :func:`disk_name` gives back the original bytes (as a surrogate-escaped ``str``) and every
file is recorded exactly once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..core.secrets import redact, secret_kinds

_SPECIAL_RE = re.compile(r"[\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_ESCAPE_RE = re.compile(r"\\(\\|n|r|t|x[0-9a-f]{2}|u[0-9a-f]{4})")
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_LONG = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def ledger_name(name: str) -> str:
    """The printable, one-line, reversible form of a path (given as ``os.fsdecode`` gives it)."""
    return _SPECIAL_RE.sub(_escape, name) if _SPECIAL_RE.search(name) else name


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _LONG:
        return _LONG[code]
    value = int(code[1:], 16)
    if code[0] == "x" and value >= 0x80:
        return chr(0xDC00 + value)
    return chr(value)


def disk_name(recorded: str) -> str:
    """The name on disk (surrogate-escaped ``str``) for a ledger name."""
    return _ESCAPE_RE.sub(_unescape, recorded) if "\\" in recorded else recorded


def disk_path(root: Path, recorded: str) -> Path:
    """``root / recorded`` as the file system names it."""
    return root / disk_name(recorded)


def relative_name(root: Path, path: Path) -> str:
    """The ledger name of ``path`` relative to ``root`` (e.g. ``raw/a\\nb.md``)."""
    return ledger_name(path.relative_to(root).as_posix())


def name_bytes(recorded: str) -> bytes:
    """The original bytes of a recorded name."""
    return os.fsencode(disk_name(recorded))


def shown_name(recorded: str) -> str:
    """A ledger name as pages, commit messages and trailers, log.md and REVIEW.md show it: a
    secret in it (``raw/deploy-ghp_….md``) replaced by its kind. The ledger keeps the real name."""
    return redact(recorded)


def name_secrets(recorded: str) -> list[str]:
    """The kinds of secret a name holds (a source so named is never committed)."""
    return secret_kinds(recorded)


def in_hidden_folder(top: Path, path: Path) -> bool:
    """True when a folder between ``top`` and ``path`` starts with a dot (rescans skip those)."""
    try:
        parts = path.relative_to(top).parts[:-1]
    except ValueError:
        return False
    return any(part.startswith(".") for part in parts)
