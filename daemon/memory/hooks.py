"""What the agent and editor hooks log: Claude Code sessions and git commits.

``wikiwright hook claude-code`` (SessionEnd, PreCompact) reads the hook's JSON from stdin,
takes the person's messages and the final summary from the transcript JSONL it names, and
appends one session block. Only what is new since the last call for that session is logged
(PreCompact then SessionEnd never log the same message twice): the byte offset reached in
the transcript is kept per session under ``.wikiwright/hooks/``.

``wikiwright hook git-post-commit`` logs the subject of the commit just made in a code
repository; a day's commits of one repository go into one block, so they count as one
session for the consolidation gate.

Hooks are fire and forget: the CLI wraps these in a deadline and always exits 0.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.vault import Vault
from ..memory.dailylog import AppendResult, append_session

log = logging.getLogger(__name__)

HOOK_DEADLINE_SECONDS = 10
MAX_TRANSCRIPT_READ = 32 * 1024 * 1024
MAX_USER_MESSAGES = 12
MAX_MESSAGE_CHARS = 300
MAX_SUMMARY_LINES = 12
STATE_KEEP_DAYS = 30
# Text Claude Code itself puts into "user" entries: slash-command echoes, reminders, caveats.
_NOT_TYPED = ("<command-", "<local-command", "<system-reminder>", "<user-prompt-submit-hook>",
              "Caveat:", "[Request interrupted", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")


@dataclass
class TranscriptDigest:
    user_messages: list[str] = field(default_factory=list)
    final_text: str = ""
    title: str = ""
    end_offset: int = 0
    skipped_earlier: int = 0


def _text_of(content: Any) -> str:
    """The typed text of a message's content (string, or the text blocks of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [block.get("text", "") for block in content
                 if isinstance(block, dict) and block.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def read_transcript(path: Path, start: int = 0) -> TranscriptDigest:
    """Digest the transcript from byte ``start``; a partly written last line is left for later."""
    digest = TranscriptDigest(end_offset=start)
    try:
        size = path.stat().st_size
    except OSError:
        return digest
    if size < start:
        start = 0  # the transcript was replaced: read it again
    begin = max(start, size - MAX_TRANSCRIPT_READ)
    with path.open("rb") as handle:
        handle.seek(begin)
        data = handle.read(size - begin)
    if begin > start:
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
        begin = size - len(data)
    cut = data.rfind(b"\n") + 1  # a partly written last line waits for the next call
    complete = data[:cut]
    digest.end_offset = begin + cut
    messages: list[str] = []
    for raw in complete.split(b"\n"):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        kind = entry.get("type")
        if kind == "summary" and isinstance(entry.get("summary"), str):
            digest.title = entry["summary"]
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        if kind == "user" and not entry.get("isMeta") and not entry.get("isCompactSummary"):
            text = _text_of(message.get("content")).strip()
            if text and not text.startswith(_NOT_TYPED):
                messages.append(_one_line(text))
        elif kind == "assistant":
            text = _text_of(message.get("content")).strip()
            if text:
                digest.final_text = text
    if len(messages) > MAX_USER_MESSAGES:
        digest.skipped_earlier = len(messages) - MAX_USER_MESSAGES
        messages = messages[-MAX_USER_MESSAGES:]
    digest.user_messages = messages
    return digest


def summary_lines(text: str) -> list[str]:
    """The final assistant message as at most a dozen observation lines (no code)."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line.strip():
            continue
        clean = line.strip().lstrip("#").strip()
        clean = re.sub(r"^(?:[-*+]|\d{1,3}[.)])\s+", "", clean)
        if clean:
            out.append(_one_line(clean))
        if len(out) >= MAX_SUMMARY_LINES:
            break
    return out


# --- per-session state ---------------------------------------------------------------

def _state_dir(vault: Vault) -> Path:
    return vault.state / "hooks" / "claude-code"


@contextmanager
def _session_state(vault: Vault, session_id: str) -> Iterator[dict[str, Any]]:
    """The session's saved state, held under an exclusive lock; saved on clean exit."""
    folder = _state_dir(vault)
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(session_id.encode()).hexdigest()[:24]
    path = folder / f"{name}.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.pread(fd, 1 << 16, 0)
        try:
            state = json.loads(raw) if raw.strip() else {}
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        yield state
        data = json.dumps(state).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)


def _prune_state(vault: Vault, now: float) -> None:
    cutoff = now - STATE_KEEP_DAYS * 86400
    try:
        entries = list(os.scandir(_state_dir(vault)))
    except FileNotFoundError:
        return
    for entry in entries:
        try:
            if entry.is_file() and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
        except OSError:
            continue


# --- Claude Code ----------------------------------------------------------------------

def claude_code_block(payload: dict[str, Any], digest: TranscriptDigest) -> tuple[str, list[str]]:
    """The label and body lines of the session block for one hook call."""
    event = str(payload.get("hook_event_name") or "hook")
    project = Path(str(payload.get("cwd") or "")).name or "claude-code"
    label = f"claude-code: {project} ({event})"
    lines: list[str] = []
    if digest.user_messages:
        lines.append("### Requests")
        if digest.skipped_earlier:
            lines.append(f"- ({digest.skipped_earlier} earlier message(s) not shown)")
        lines.extend(f"- {message}" for message in digest.user_messages)
    summary = summary_lines(digest.final_text)
    if summary or digest.title:
        lines.append("### What Changed")
        if digest.title:
            lines.append(f"- Session: {_one_line(digest.title)}")
        lines.extend(f"- {line}" for line in summary)
    return label, lines


def run_claude_code_hook(payload: dict[str, Any], vault: Vault, now: datetime | None = None) -> AppendResult | None:
    """Log what is new in the transcript the hook payload points to."""
    session_id = str(payload.get("session_id") or "")
    transcript = payload.get("transcript_path")
    if not session_id or not isinstance(transcript, str) or not transcript:
        raise ValueError("hook payload has no session_id or transcript_path")
    path = Path(transcript).expanduser()
    with _session_state(vault, session_id) as state:
        start = int(state.get("offset", 0)) if state.get("transcript") == str(path) else 0
        digest = read_transcript(path, start)
        label, lines = claude_code_block(payload, digest)
        result = None
        if digest.user_messages or digest.final_text:
            result = append_session(vault.logs, lines, label=label, when=now)
        state.update(transcript=str(path), offset=digest.end_offset, updated=time.time())
    _prune_state(vault, time.time())
    return result


# --- git post-commit ------------------------------------------------------------------

def run_git_post_commit(repo_dir: Path, vault: Vault, now: datetime | None = None) -> AppendResult | None:
    """Log the subject of HEAD in the code repository at ``repo_dir``."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo_dir), *args], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()

    top = Path(git("rev-parse", "--show-toplevel")).resolve()
    if top == vault.root.resolve():
        return None  # the vault's own commits (the daemon's) are not work to log
    sha, _, rest = git("log", "-1", "--format=%h%x1f%s%x1f%D").partition("\x1f")
    subject, _, refs = rest.partition("\x1f")
    branch = ""
    for ref in refs.split(","):
        ref = ref.strip()
        if ref.startswith("HEAD -> "):
            branch = ref[len("HEAD -> "):]
    where = f"{sha} on {branch}" if branch else sha
    line = f"- {subject.strip() or '(no subject)'} ({where})"
    return append_session(vault.logs, [line], section="What Changed", label=f"git: {top.name}",
                          when=now, continue_label=True)
