"""What the agent and editor hooks log: Claude Code sessions and git commits.

``wikiwright hook claude-code`` (SessionEnd, PreCompact) reads the hook's JSON from stdin,
takes the person's messages and the final summary from the transcript JSONL it names, and
appends one session block. Only what is new since the last call for that session is logged
(PreCompact then SessionEnd never log the same message twice): the byte offset reached in
the transcript is kept per session under ``.wikiwright/hooks/``.

``wikiwright hook git-post-commit`` logs the commits (and amends and rebases) the git hooks
queued in a code repository; a day's commits of one repository go into one block, so they
count as one session for the consolidation gate.

Hooks are fire and forget: the CLI wraps these in a deadline and always exits 0.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.fsutil import atomic_write_text
from ..core.vault import Vault
from ..memory.dailylog import AppendResult, append_session, redact

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
        info = path.stat()
    except OSError:
        return digest
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block the hook or never end
        return digest
    size = info.st_size
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
            # One Claude Code session counts once toward the consolidation gate: what a later
            # PreCompact or SessionEnd of the same session adds is written as a note.
            counted = not state.get("counted")
            result = append_session(vault.logs, lines, label=label, when=now, counted=counted)
            state["counted"] = True
        state.update(transcript=str(path), offset=digest.end_offset, updated=time.time())
    _prune_state(vault, time.time())
    return result


# --- git post-commit and post-rewrite -------------------------------------------------
#
# The shell hooks (hooks/git-post-commit, hooks/git-post-rewrite) read what happened before git
# returns and queue it as one small file per event under <git common dir>/wikiwright/queue/
# (written to a temporary name, then renamed: a reader never sees half an entry). This drainer
# runs in the background, takes the queue's lock, logs every entry in the order the hooks ran,
# and only then deletes them. Commits made while no vault or no wikiwright could be reached stay
# queued and are logged by the next run. Why post-rewrite and not the reflog alone: git runs
# post-commit for every commit a rebase picks and for an amend, with a new sha each time; the
# post-commit hook skips those (its reflog entry says "rebase (pick)" or "commit (amend)") and
# post-rewrite, which git runs once per amend or rebase with the old -> new pairs, logs each
# rewrite as one entry.

QUEUE_DIR = "wikiwright"
SEEN_KEEP = 2000
REFLOG_LOOKBACK = 2000
MAX_REBASE_SUBJECTS = 5


@dataclass(frozen=True)
class QueuedEvent:
    path: Path
    kind: str  # "commit" | "rewrite"
    sha: str = ""  # commit: its sha
    branch: str = ""
    made_by: str = ""  # commit: the reflog's "commit", "cherry-pick", ...; rewrite: "amend" | "rebase"
    pairs: tuple[tuple[str, str], ...] = ()  # rewrite: (old, new)

    @property
    def key(self) -> str:
        return self.sha if self.kind == "commit" else "rewrite:" + ",".join(new for _old, new in self.pairs)


def _git(repo_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo_dir), *args], capture_output=True, text=True,
                          timeout=5, check=True).stdout


def queue_dir(repo_dir: Path) -> Path:
    common = _git(repo_dir, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    return Path(common) / QUEUE_DIR


def read_queue(folder: Path, repo_dir: Path | None = None) -> list[QueuedEvent]:
    """The queued events in the order git made them (by the HEAD reflog, given ``repo_dir``).

    An entry still being written (no final newline yet) is left for the next read; one that
    cannot be read at all is dropped with a warning.
    """
    events = []
    try:
        names = [entry.name for entry in os.scandir(folder / "queue") if not entry.name.startswith(".")]
    except FileNotFoundError:
        return []
    for name in names:
        path = folder / "queue" / name
        try:
            data = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if not data.endswith("\n"):
            continue  # the hook is writing it
        lines = data.splitlines()
        head = lines[0].split("\t") if lines else []
        if len(head) >= 2 and head[0] == "commit":
            events.append(QueuedEvent(path, "commit", sha=head[1], branch=_field(head, 2),
                                      made_by=_field(head, 3) or "commit"))
        elif len(head) >= 2 and head[0] == "rewrite":
            pairs = tuple((parts[0], parts[1]) for parts in (line.split() for line in lines[1:]) if len(parts) >= 2)
            events.append(QueuedEvent(path, "rewrite", branch=_field(head, 2), made_by=head[1], pairs=pairs))
        else:
            log.warning("dropping an unreadable git hook queue entry: %s", path)
            with contextlib.suppress(OSError):
                path.unlink()
    return _in_commit_order(events, repo_dir)


def _in_commit_order(events: list[QueuedEvent], repo_dir: Path | None) -> list[QueuedEvent]:
    """Oldest first: by the position of the event's commit in the HEAD reflog (a burst of
    commits within one second has no other reliable order); entries the reflog no longer
    shows come first, by file time."""
    position: dict[str, int] = {}
    if repo_dir is not None and events:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            out = _git(repo_dir, "log", "-g", f"-n{REFLOG_LOOKBACK}", "--format=%H", "HEAD")
            for n, sha in enumerate(reversed(out.split())):
                position.setdefault(sha, n)

    def order(event: QueuedEvent) -> tuple[int, float, str]:
        sha = event.sha if event.kind == "commit" else (event.pairs[-1][1] if event.pairs else "")
        try:
            mtime = event.path.stat().st_mtime
        except OSError:
            mtime = 0.0
        return (position.get(sha, -1), mtime, event.path.name)

    return sorted(events, key=order)


def _field(parts: list[str], index: int) -> str:
    return parts[index].strip() if len(parts) > index else ""


def _subjects(repo_dir: Path, shas: list[str]) -> dict[str, str]:
    """sha -> subject for the commits that still exist (one git call)."""
    if not shas:
        return {}
    try:
        out = _git(repo_dir, "show", "-s", "--no-walk=unsorted", "--format=%H%x1f%s%x1e", *shas)
    except subprocess.CalledProcessError:
        # One of them is gone (gc after a rewrite): ask one by one.
        found = {}
        for sha in shas:
            with contextlib.suppress(subprocess.CalledProcessError):
                found.update(_subjects(repo_dir, [sha]))
        return found
    subjects = {}
    for record in out.split("\x1e"):
        sha, sep, subject = record.strip("\n").partition("\x1f")
        if sep:
            subjects[sha] = subject.strip()
    return subjects


def _where(sha: str, branch: str) -> str:
    return f"{sha[:7]} on {branch}" if branch and branch != "HEAD" else sha[:7]


def event_line(event: QueuedEvent, subjects: dict[str, str]) -> str | None:
    if event.kind == "commit":
        subject = subjects.get(event.sha) or "(no subject)"
        made = "" if event.made_by in ("commit", "commit (initial)") else f"{event.made_by}: "
        return f"- {made}{subject} ({_where(event.sha, event.branch)})"
    if not event.pairs:
        return None
    if event.made_by == "amend":
        old, new = event.pairs[-1]
        return f"- amended: {subjects.get(new) or '(no subject)'} ({old[:7]} → {_where(new, event.branch)})"
    names = [subjects.get(new) or new[:7] for _old, new in event.pairs]
    shown = "; ".join(names[:MAX_REBASE_SUBJECTS])
    if len(names) > MAX_REBASE_SUBJECTS:
        shown += f"; and {len(names) - MAX_REBASE_SUBJECTS} more"
    branch = f" on {event.branch}" if event.branch and event.branch != "HEAD" else ""
    what = "commit" if len(names) == 1 else "commits"
    return f"- rebased {len(names)} {what}{branch}: {shown} (now {event.pairs[-1][1][:7]})"


@contextmanager
def _queue_lock(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / "drain.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _load_seen(folder: Path) -> list[str]:
    try:
        return (folder / "seen").read_text(encoding="utf-8").split()
    except OSError:
        return []


def run_git_post_commit(repo_dir: Path, vault: Vault, now: datetime | None = None) -> AppendResult | None:
    """Log every commit and rewrite the git hooks queued in the repository at ``repo_dir``.

    Each queued event is logged once: its key (the sha, or the rewritten shas) is remembered,
    and the entry is deleted once the log holds it. The hook that started this run set the
    ``draining`` flag so that a burst of commits starts one run: the run goes on while entries
    arrive, and re-checks the queue after dropping the flag, so none is left behind. A
    repository whose hook predates the queue (nothing was ever queued) gets HEAD logged, as
    that old hook expected.
    """
    top = Path(_git(repo_dir, "rev-parse", "--show-toplevel").strip()).resolve()
    folder = queue_dir(repo_dir)
    if not (folder / "queue").exists():
        return None if top == vault.root.resolve() else _log_head(repo_dir, top, vault, now)
    last = None
    try:
        while True:
            last = _drain_once(repo_dir, top, folder, vault, now) or last
            release_drain_flag(folder)
            if not read_queue(folder):
                return last
            try:
                (folder / "draining").mkdir()
            except OSError:
                return last  # another run took over
    finally:
        release_drain_flag(folder)


def release_drain_flag(folder: Path) -> None:
    with contextlib.suppress(OSError):
        (folder / "draining").rmdir()


def _drain_once(repo_dir: Path, top: Path, folder: Path, vault: Vault, now: datetime | None) -> AppendResult | None:
    with _queue_lock(folder):
        events = read_queue(folder, repo_dir)
        if top == vault.root.resolve():
            for event in events:  # the vault's own commits (the daemon's) are not work to log
                with contextlib.suppress(OSError):
                    event.path.unlink()
            return None
        seen = _load_seen(folder)
        known = set(seen)
        fresh = [event for event in events if event.key not in known]
        shas = [e.sha for e in fresh if e.kind == "commit"] + [new for e in fresh for _old, new in e.pairs]
        subjects = _subjects(repo_dir, list(dict.fromkeys(shas)))
        lines = [line for line in (event_line(event, subjects) for event in fresh) if line]
        result = None
        if lines:
            result = append_session(vault.logs, lines, section="What Changed", label=f"git: {top.name}",
                                    when=now, continue_label=True)
            seen = [*seen, *(event.key for event in fresh)][-SEEN_KEEP:]
            atomic_write_text(folder / "seen", "\n".join(seen) + "\n", crash_hooks=False)
        for event in events:
            with contextlib.suppress(OSError):
                event.path.unlink()
        return result


def _log_head(repo_dir: Path, top: Path, vault: Vault, now: datetime | None) -> AppendResult | None:
    """What a hook installed before the queue existed asks for: HEAD's subject."""
    record_hook_problem("git-post-commit", f"{top}: an old post-commit hook (it logs HEAD, which can be a later "
                        "commit); run `wikiwright hooks install git` there", echo=False)
    sha, _, rest = _git(repo_dir, "log", "-1", "--format=%H%x1f%s%x1f%D").strip().partition("\x1f")
    subject, _, refs = rest.partition("\x1f")
    branch = ""
    for ref in refs.split(","):
        ref = ref.strip()
        if ref.startswith("HEAD -> "):
            branch = ref[len("HEAD -> "):]
    line = f"- {subject.strip() or '(no subject)'} ({_where(sha, branch)})"
    return append_session(vault.logs, [line], section="What Changed", label=f"git: {top.name}",
                          when=now, continue_label=True)


def queued_count(repo_dir: Path) -> int:
    """How many commits and rewrites wait in the repository's queue (not logged yet)."""
    try:
        return sum(1 for entry in os.scandir(queue_dir(repo_dir) / "queue") if not entry.name.startswith("."))
    except (OSError, subprocess.SubprocessError):
        return 0


# --- the hooks' own log ------------------------------------------------------------------

HOOK_LOG_NAME = "hooks.log"
HOOK_LOG_MAX_BYTES = 256 * 1024


def hook_log_path() -> Path:
    """Where the hooks write what stopped them (``WIKIWRIGHT_HOOK_LOG``, else the log folder)."""
    from ..core.logsetup import log_dir

    configured = os.environ.get("WIKIWRIGHT_HOOK_LOG")
    return Path(configured) if configured else log_dir() / HOOK_LOG_NAME


def record_hook_problem(kind: str, message: str, *, echo: bool = True) -> None:
    """A hook that could not do its work says so: on stderr and as one line of the hooks' log."""
    from ..core.logsetup import escape_controls

    line = escape_controls(f"wikiwright hook {kind}: {message}")
    if echo:
        print(line, file=sys.stderr)
    path = hook_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > HOOK_LOG_MAX_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"{datetime.now().astimezone():%Y-%m-%dT%H:%M:%S%z} {redact(line)}\n")
    except OSError as exc:
        print(f"wikiwright hook {kind}: cannot write {path}: {exc.strerror}", file=sys.stderr)


def recent_hook_problems(limit: int = 5) -> list[str]:
    try:
        lines = hook_log_path().read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return lines[-limit:]
