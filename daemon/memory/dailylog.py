"""Daily logs: the format, its parser, the safe appender, and secret redaction.

One file per day, ``logs/YYYY-MM-DD.md``, append-only::

    # 2026-11-29

    ## Session 14:05 UTC — claude-code: billing
    ### Decisions
    - 🔴 Deploys go through the staging gate from now on
    ### What Changed
    - 🟡 Working on the billing export
    - 🟢 Restarted the dev server twice

A ``## Session HH:MM <tz>`` heading opens a session block (an optional `` — label`` names
where it came from); ``## Note HH:MM <tz>`` opens a block that is read the same way but does
not count as a session for the consolidation gate (a person's one-line ``wikiwright log`` note;
agents' hook blocks and ``wikiwright log --session`` are sessions); ``### `` headings inside
it name sections (What Changed, What Worked, What Didn't, Patterns Learned, Decisions — others
are allowed); every bullet or prose line is
an observation, optionally starting with a priority marker: 🔴 durable rule or decision,
🟡 working context, 🟢 ephemeral.

Appending takes an exclusive ``flock`` on the day's file, writes with ``O_APPEND`` and never
rewrites a byte already there; every text is redacted before it reaches the file.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from ..core.errors import WikiwrightError
from ..core.fsutil import race_point
from ..core.secrets import REDACTED_RE as SECRET_REDACTED_RE
from ..core.secrets import redact as redact_secrets

log = logging.getLogger(__name__)

SECTIONS = ("What Changed", "What Worked", "What Didn't", "Patterns Learned", "Decisions")
MARKERS = {"🔴": "durable", "🟡": "context", "🟢": "ephemeral"}
PRIORITY_MARKER = {value: key for key, value in MARKERS.items()}
LOG_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
SESSION_RE = re.compile(
    r"^##[ \t]+(?P<kind>Session|Note)[ \t]+(?P<time>\d{1,2}:\d{2})(?:[ \t]+(?P<tz>[^\s—]+))?"
    r"(?:[ \t]+—[ \t]*(?P<label>.*?))?[ \t]*$"
)
_SECTION_RE = re.compile(r"^#{3,6}[ \t]+(?P<name>.+?)[ \t]*#*[ \t]*$")
_BULLET_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+(?P<text>.*)$")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
# Aliases people and hooks type for the canonical sections.
_SECTION_ALIASES = {
    "changed": "What Changed", "what changed": "What Changed", "changes": "What Changed",
    "worked": "What Worked", "what worked": "What Worked",
    "didnt": "What Didn't", "didn't": "What Didn't", "what didnt": "What Didn't", "what didn't": "What Didn't",
    "failed": "What Didn't",
    "patterns": "Patterns Learned", "patterns learned": "Patterns Learned", "learned": "Patterns Learned",
    "decisions": "Decisions", "decision": "Decisions", "decided": "Decisions",
}
MAX_BLOCK_BYTES = 64_000
LOCK_TIMEOUT = 10.0


class LogWriteError(WikiwrightError):
    """A daily log cannot be appended to (busy, unsafe path, unwritable)."""


# --- redaction ------------------------------------------------------------------------

# The one scanner lives in core/secrets.py (prompts, logs and source pages use it too).
REDACTED_RE = SECRET_REDACTED_RE


def redact(text: str) -> str:
    """Replace API keys, tokens, passwords and private keys with ``[REDACTED:kind]``."""
    return redact_secrets(text)


# --- the parsed form --------------------------------------------------------------------

@dataclass(frozen=True)
class Observation:
    text: str  # without bullet and marker
    priority: str  # durable | context | ephemeral | "" (unmarked)
    section: str  # canonical section name, "" before any section heading
    day: date
    session: int  # index of the session within its day's file
    offset: int  # byte offset of the line in the file


@dataclass
class Session:
    day: date
    time: str  # HH:MM
    tz: str
    label: str
    offset: int  # byte offset of the heading line
    index: int
    observations: list[Observation] = field(default_factory=list)
    counted: bool = True  # a "## Session" block; a "## Note" block does not count toward the gate

    @property
    def key(self) -> str:
        return f"{self.day.isoformat()} {self.time} #{self.index}"


@dataclass
class DailyLog:
    day: date
    sessions: list[Session]
    size: int  # bytes parsed
    loose: list[Observation] = field(default_factory=list)  # lines before the first session

    def observations(self, since_offset: int = 0) -> Iterator[Observation]:
        for obs in self.loose:
            if obs.offset >= since_offset:
                yield obs
        for session in self.sessions:
            for obs in session.observations:
                if obs.offset >= since_offset:
                    yield obs

    def sessions_since(self, offset: int) -> list[Session]:
        """The blocks (sessions and notes) that start at or after ``offset``."""
        return [s for s in self.sessions if s.offset >= offset]

    def counted_since(self, offset: int) -> list[Session]:
        """The blocks after ``offset`` that count toward the consolidation gate (not notes)."""
        return [s for s in self.sessions_since(offset) if s.counted]


def canonical_section(name: str) -> str:
    # One line, no leading '#': a section name from a hook or an MCP client can't open a fake
    # "## Session" heading (the consolidation gate counts those).
    # Redacted first (the cleaning below drops "_" and ":", which would hide a token's shape).
    flat = " ".join(redact_secrets(_printable(name), label=False).split()).lstrip("# ")
    cleaned = re.sub(r"[*_`:]+", "", flat).strip()
    alias = _SECTION_ALIASES.get(cleaned.casefold().replace("’", "'"))
    if alias:
        return alias
    for known in SECTIONS:
        if known.casefold() == cleaned.casefold():
            return known
    return cleaned[:60]


def split_marker(text: str) -> tuple[str, str]:
    """``(priority, text without the marker)``; the marker may follow a checkbox or emphasis."""
    stripped = text.strip()
    for marker, priority in MARKERS.items():
        if stripped.startswith(marker):
            return priority, stripped[len(marker):].lstrip(" \t:-—").strip()
    return "", stripped


def day_of(path: Path) -> date | None:
    match = LOG_NAME_RE.match(path.name)
    if not match:
        return None
    try:
        return date.fromisoformat(match.group(1))
    except ValueError:
        return None


def parse_log(text: str, day: date) -> DailyLog:
    """Sessions and observations of one day's log. Never fails: odd lines become prose."""
    sessions: list[Session] = []
    loose: list[Observation] = []
    section = ""
    offset = 0
    in_fence = False
    current: Session | None = None
    last: Observation | None = None
    last_list: list[Observation] | None = None

    def add(text_: str, at: int) -> None:
        nonlocal last, last_list
        priority, clean = split_marker(text_)
        if not clean:
            return
        target = current.observations if current else loose
        obs = Observation(clean, priority, section, day, current.index if current else -1, at)
        target.append(obs)
        last, last_list = obs, target

    for raw_line in text.splitlines(keepends=True):
        at = offset
        offset += len(raw_line.encode("utf-8"))
        line = raw_line.rstrip("\r\n")
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            last = None
            continue
        if in_fence:
            continue  # code snippets are never observations
        heading = SESSION_RE.match(line)
        if heading:
            current = Session(day, heading.group("time").zfill(5), heading.group("tz") or "",
                              (heading.group("label") or "").strip(), at, len(sessions),
                              counted=heading.group("kind") == "Session")
            sessions.append(current)
            section, last = "", None
            continue
        if line.startswith("#"):
            sec = _SECTION_RE.match(line)
            if sec:
                section = canonical_section(sec.group("name"))
            last = None  # a "# date" title or any other heading
            continue
        if not line.strip() or line.strip().startswith("<!--"):
            last = None
            continue
        bullet = _BULLET_RE.match(line)
        if bullet:
            add(bullet.group("text"), at)
        elif line[:1] in (" ", "\t") and last is not None and last_list is not None:
            # A continuation line of the previous bullet.
            merged = Observation(f"{last.text} {line.strip()}", last.priority, last.section, last.day,
                                 last.session, last.offset)
            last_list[-1] = merged
            last = merged
        else:
            add(line, at)
    return DailyLog(day, sessions, offset, loose)


def iter_log_files(logs_dir: Path) -> list[tuple[date, Path]]:
    """Daily log files in date order (names that are not ``YYYY-MM-DD.md`` are ignored)."""
    found = []
    try:
        entries = list(os.scandir(logs_dir))
    except FileNotFoundError:
        return []
    for entry in entries:
        path = Path(entry.path)
        day = day_of(path)
        if day is not None and entry.is_file(follow_symlinks=False):
            found.append((day, path))
    return sorted(found)


# --- writing ----------------------------------------------------------------------------

def tz_label(when: datetime) -> str:
    name = when.strftime("%Z")
    if name and re.fullmatch(r"[A-Za-z]{2,6}", name):
        return name
    offset = when.strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"


def clean_label(label: str) -> str:
    return " ".join(redact(_printable(label)).split())[:120]


def session_heading(when: datetime, label: str = "", counted: bool = True) -> str:
    clean = clean_label(label)
    word = "Session" if counted else "Note"
    return f"## {word} {when:%H:%M} {tz_label(when)}" + (f" — {clean}" if clean else "")


# Terminal escapes, NUL, bidi overrides and other invisible controls from an agent's text would
# reach a person's terminal (cat, git log) or reorder what the log seems to say: they go; the
# Unicode line/paragraph separators are line breaks.
_UNPRINTABLE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _printable(text: str) -> str:
    return _UNPRINTABLE_RE.sub("", text.replace("\u2028", "\n").replace("\u2029", "\n"))


def normalise_body(text: str, section: str | None = None) -> list[str]:
    """The lines of a session block body: redacted, headings demoted, bare lines bulleted.

    ``#``/``##`` headings in the text would open a fake session, so they become ``###``.
    """
    text = redact(_printable(text.replace("\r\n", "\n").replace("\r", "\n")))
    lines: list[str] = []
    if section:
        lines.append(f"### {canonical_section(section)}")
    in_fence = False
    for line in text.split("\n"):
        stripped = line.rstrip()
        if _FENCE_RE.match(stripped):
            in_fence = not in_fence
            lines.append(stripped)
            continue
        if in_fence:
            lines.append(stripped)
            continue
        if not stripped.strip():
            continue
        if stripped.startswith("#"):
            name = stripped.lstrip("#").strip()
            if name:
                lines.append(f"### {canonical_section(name)}")
            continue
        if _BULLET_RE.match(stripped) or stripped[:1] in (" ", "\t"):
            lines.append(stripped)
        else:
            lines.append(f"- {stripped}")
    if in_fence:
        lines.append("```")  # never leave a fence open: it would swallow later sessions
    return lines


def render_block(lines: list[str], heading: str | None) -> str:
    out: list[str] = []
    if heading:
        out.append(heading)
    for line in lines:
        if line.startswith("### ") and len(out) > (1 if heading else 0):
            out.append("")
        out.append(line)
    block = "\n".join(out) + "\n"
    data = block.encode("utf-8")
    if len(data) > MAX_BLOCK_BYTES:
        block = data[:MAX_BLOCK_BYTES].decode("utf-8", errors="ignore").rsplit("\n", 1)[0]
        block += "\n- (block truncated: over 64 KB)\n"
    return block


@dataclass(frozen=True)
class AppendResult:
    path: Path
    new_session: bool
    bytes_written: int


def _lock(fd: int, path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            if time.monotonic() >= deadline:
                raise LogWriteError(f"{path} is locked by another writer for over {timeout:.0f}s") from None
            time.sleep(0.02)


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a save by rename replaces it)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _read_log(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _last_session_tail(fd: int, size: int) -> tuple[str, str]:
    """Heading and last section name of the file's last session block (from its tail)."""
    start = max(0, size - 65536)
    tail = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
    heading, section = "", ""
    for line in tail.splitlines():
        if SESSION_RE.match(line):
            heading, section = line, ""
        elif line.startswith("### "):
            section = line
    return heading, section


def append_session(
    logs_dir: Path,
    body: str | Iterable[str],
    *,
    section: str | None = None,
    label: str = "",
    when: datetime | None = None,
    continue_label: bool = False,
    counted: bool = True,
    lock_timeout: float = LOCK_TIMEOUT,
) -> AppendResult | None:
    """Append one session block to the day's log; returns None when there was nothing to log.

    ``counted=False`` writes a ``## Note`` block: read like a session, but not counted by the
    consolidation gate (a person's quick note is not a working session).

    With ``continue_label``, lines are added to the file's last block instead when that block
    carries the same label (a git hook adding commit after commit to one block of the day, an
    MCP client's later observations after its first): still an append, and a run of commits
    counts as one session.
    """
    when = (when or datetime.now().astimezone())
    if when.tzinfo is None:
        when = when.astimezone()
    text = body if isinstance(body, str) else "\n".join(body)
    lines = normalise_body(text, section)
    if not [line for line in lines if not line.startswith("### ")]:
        return None
    heading = session_heading(when, label, counted)
    logs_dir.mkdir(parents=True, exist_ok=True)
    path = logs_dir / f"{when:%Y-%m-%d}.md"
    for _attempt in range(10):
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LogWriteError(f"{path} is a symbolic link; daily logs are never written through links") from None
            raise LogWriteError(f"cannot open {path}: {exc.strerror}") from None
        try:
            _lock(fd, path, lock_timeout)
            if not _still_named(fd, path):
                continue  # a person's save (temp file + rename) replaced the file since we opened it
            size = os.fstat(fd).st_size
            prefix = ""
            new_session = True
            body = lines
            if size == 0:
                prefix = f"# {when:%Y-%m-%d}\n\n"
            else:
                if os.pread(fd, 1, size - 1) != b"\n":
                    prefix = "\n"
                if continue_label and label:
                    last_heading, last_section = _last_session_tail(fd, size)
                    match = SESSION_RE.match(last_heading)
                    if match and (match.group("label") or "").strip() == clean_label(label):
                        new_session = False
                        if body and body[0] == last_section:
                            body = body[1:]
                if new_session:
                    prefix += "\n"
            block = render_block(body, heading if new_session else None)
            data = (prefix + block).encode("utf-8")
            race_point(path)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
            # O_APPEND never overwrites a byte a person wrote; but a save of theirs by temp file +
            # rename that lands while we write replaces the file we appended to. Then the block
            # goes into the file they saved (unless their editor had read it in already).
            if _still_named(fd, path) or block.encode("utf-8") in _read_log(path):
                break
        finally:
            os.close(fd)  # closing drops the flock
    else:
        raise LogWriteError(f"{path} kept being replaced while wikiwright appended to it; nothing was lost, "
                            "the block was not written")
    return AppendResult(path, new_session, len(data))
