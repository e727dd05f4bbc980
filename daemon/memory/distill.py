"""Gather: which observations of the daily logs are durable signal, and what they say.

Code rules first, with or without a model: ephemeral lines (🟢), code snippets, anything that
held a secret and transient debugging state never leave this module. The rest is grouped by
meaning (similar wording counts as the same item) and counted by the sessions it appeared
in. The deterministic path promotes an item when a log marks it durable (🔴), when it sits
under Decisions, or when it recurs: in 2 sessions for lessons (what worked, what did not,
patterns learned) and for lines that read as decisions, gotchas, preferences or dead ends;
in 3 for anything else. Items not promoted yet are remembered
(``pending``) so their sessions keep counting across runs. The model path sends the same
grouped signal to the model and checks every item it returns (see :func:`check_model_items`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..memory.dailylog import REDACTED_RE, Observation, redact
from ..memory.reldate import absolutize
from ..memory.topics import KINDS, ClaimItem, Item, SimilarIndex, normalize

PROMOTE_SESSIONS = 3
PROMOTE_SESSIONS_LEARNED = 2
MAX_TEXT = 300
MAX_PENDING = 2000
LEARNED_SECTIONS = {"What Worked", "What Didn't", "Patterns Learned"}

_CLAIM_RE = re.compile(r"^`(?P<key>[A-Za-z0-9][\w.\-/]{1,80})`\s*[:=]\s*(?P<value>.{1,200})$")
_REPLACES_RE = re.compile(
    r"(?i)\b(now|instead|no longer|changed|replac\w*|from now on|switched|moved to|updated to|supersed\w*|"
    r"anymore|new value)\b"
)
_TRANSIENT_RE = re.compile(
    r"(?i)\b(currently|right now|at the moment|for now|wip|todo|fixme|debug(?:ging)?|stack ?trace|traceback|"
    r"print statements?|breakpoints?|temporar(?:y|ily)|retrying|rerun|re-ran|"
    r"still investigating|investigating|looking into|in progress|half[- ]done|stuck on|trying to|"
    r"console\.log|pdb|typo|lunch|coffee)\b"
)
_KIND_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decision", re.compile(
        r"(?i)\b(decid\w*|decision|agreed|from now on|going forward|standardi[sz]\w*|"
        r"settled on|rule:|must always)\b")),
    ("dead-end", re.compile(
        r"(?i)(didn'?t work|does ?n[o']t work|did not work|dead end|abandon\w*|gave up|won'?t work|not worth|"
        r"failed to|no luck|ruled out|too slow to|made (?:it|things) worse|doesn'?t help)")),
    ("gotcha", re.compile(
        r"(?i)\b(gotcha|careful|beware|watch out|pitfall|trap|caveat|must not|never|don'?t forget|"
        r"breaks? (?:if|when)|silently|surprising\w*|footgun|only works)\b")),
    ("preference", re.compile(
        r"(?i)\b(prefers?|preferred|preference|likes?|dislikes?|wants?|always use|please use|rather than|"
        r"style)\b")),
)
_SECTION_KIND = {"Decisions": "decision", "What Didn't": "dead-end", "Patterns Learned": "pattern",
                 "What Worked": "pattern"}


def looks_like_code(text: str) -> bool:
    if "```" in text or text.startswith(("$ ", "> ", ">>> ")):
        return True
    stripped = re.sub(r"`[^`]*`", "", text)
    inline = len(text) - len(stripped)
    if len(text) > 30 and inline / len(text) > 0.6:
        return True
    symbols = sum(stripped.count(ch) for ch in "{}();=<>[]|\\")
    return len(stripped) > 0 and symbols / len(stripped) > 0.12


def skip_reason(obs: Observation) -> str | None:
    """Why an observation is not durable signal, or None when it is a candidate."""
    if obs.priority == "ephemeral":
        return "ephemeral"
    if REDACTED_RE.search(obs.text) or redact(obs.text) != obs.text:
        return "secret"
    if _CLAIM_RE.match(obs.text):
        return None
    if looks_like_code(obs.text):
        return "code"
    if obs.priority != "durable" and _TRANSIENT_RE.search(obs.text):
        return "transient"
    if len(normalize(obs.text)) < 3:
        return "one-word"
    return None


def classify(text: str, section: str) -> str:
    for kind, cue in _KIND_CUES:
        if cue.search(text):
            return kind
    return _SECTION_KIND.get(section, "pattern")


@dataclass
class Group:
    """Observations that say the same thing."""

    text: str
    day: date
    norm: frozenset[str]
    kind: str
    section: str
    durable: bool = False
    sessions: set[str] = field(default_factory=set)
    days: set[date] = field(default_factory=set)
    known: bool = False  # already an entry on a topic page
    carried: bool = False  # came from the pending store of an earlier run

    @property
    def first(self) -> date:
        return min(self.days) if self.days else self.day

    @property
    def last(self) -> date:
        return max(self.days) if self.days else self.day

    def threshold(self) -> int:
        # A decision written under Decisions is kept at once; a line that only sounds like
        # one ("agreed follow-ups are in BIL-12") must recur like any other.
        if self.durable or self.known or self.section == "Decisions":
            return 1
        if self.section in LEARNED_SECTIONS or self.kind in ("decision", "gotcha", "preference", "dead-end"):
            return PROMOTE_SESSIONS_LEARNED
        return PROMOTE_SESSIONS

    @property
    def promoted(self) -> bool:
        return len(self.sessions) >= self.threshold()


@dataclass
class Gathered:
    groups: list[Group]
    claims: list[ClaimItem]
    skipped: dict[str, int]
    observations: int

    @property
    def promoted(self) -> list[Group]:
        return [g for g in self.groups if g.promoted]

    def items(self) -> list[Item]:
        return [Item(g.kind, g.text, g.first, g.last, len(g.sessions)) for g in self.promoted]

    def pending_store(self) -> dict[str, Any]:
        """Groups not promoted yet, for the next run (bounded; the most recent kept)."""
        waiting = sorted((g for g in self.groups if not g.promoted), key=lambda g: g.last, reverse=True)
        return {
            " ".join(sorted(g.norm)): {
                "text": g.text, "kind": g.kind, "section": g.section, "day": g.day.isoformat(),
                "sessions": sorted(g.sessions)[-20:], "days": sorted(d.isoformat() for d in g.days)[-20:],
            }
            for g in waiting[:MAX_PENDING]
        }


def _clean_text(text: str, day: date, *, sentence: bool = True) -> str:
    text = absolutize(text.strip(), day)
    text = re.sub(r"\s+", " ", text).strip().rstrip(".")
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - 1].rstrip() + "…"
    return text[:1].upper() + text[1:] if sentence else text


def session_key(obs: Observation) -> str:
    return f"{obs.day.isoformat()}#{obs.session}"


def gather(
    observations: Iterable[Observation],
    known: list[frozenset[str]],
    pending: dict[str, Any] | None = None,
) -> Gathered:
    groups: list[Group] = []
    claims: list[ClaimItem] = []
    skipped: dict[str, int] = {}
    count = 0
    # Groups by their words: finding the similar group reads a few postings, not every group.
    seen: SimilarIndex[Group] = SimilarIndex()
    known_index: SimilarIndex[bool] = SimilarIndex()
    for words in known:
        known_index.add(words, True)

    def index(group: Group) -> None:
        groups.append(group)
        seen.add(group.norm, group)

    for key, data in (pending or {}).items():
        try:
            day = date.fromisoformat(data["day"])
            carried = Group(str(data["text"]), day, frozenset(key.split()), str(data["kind"]), str(data["section"]),
                          sessions=set(data["sessions"]), days={date.fromisoformat(d) for d in data["days"]},
                          carried=True)
        except (KeyError, ValueError, TypeError):
            continue
        if carried.kind in KINDS and carried.norm:
            index(carried)

    for obs in observations:
        count += 1
        reason = skip_reason(obs)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        claim = _CLAIM_RE.match(obs.text)
        if claim:
            value = _clean_text(claim.group("value"), obs.day, sentence=False)
            claims.append(ClaimItem(claim.group("key"), value, obs.day, bool(_REPLACES_RE.search(value))))
            continue
        norm = normalize(obs.text)
        group = seen.find(norm)
        if group is None:
            text = _clean_text(obs.text, obs.day)
            group = Group(text, obs.day, norm, classify(obs.text, obs.section), obs.section)
            group.known = known_index.find(norm) is not None
            index(group)
        elif obs.priority == "durable" and not group.durable:
            # The wording a log marks durable is the one worth keeping.
            group.text, group.day = _clean_text(obs.text, obs.day), obs.day
            group.kind = classify(obs.text, obs.section)
        group.durable = group.durable or obs.priority == "durable"
        group.sessions.add(session_key(obs))
        group.days.add(obs.day)
    return Gathered(groups, claims, skipped, count)


# --- the model path ---------------------------------------------------------------------

REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["entries"],
    "properties": {
        "entries": {
            "type": "array",
            "maxItems": 200,
            "items": {
                "type": "object",
                "required": ["kind", "text", "logs"],
                "properties": {
                    "kind": {"enum": list(KINDS)},
                    "text": {"type": "string", "minLength": 3, "maxLength": 400},
                    "logs": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                    "supersedes": {"type": "string"},
                },
            },
        },
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "value", "log"],
                "properties": {
                    "key": {"type": "string", "minLength": 1, "maxLength": 80},
                    "value": {"type": "string", "minLength": 1, "maxLength": 300},
                    "log": {"type": "string"},
                    "replaces": {"type": "boolean"},
                },
            },
        },
    },
}

SYSTEM_PROMPT = """You consolidate an engineer's daily work logs into durable topic pages of a wiki.
Keep only durable signal: recurring patterns, gotchas, stable preferences, decisions, dead ends.
Skip one-off events, transient debugging state, code snippets and anything secret.
Each input line is one observation group: [kind guess] text (sessions N; logs DATES; under SECTION).
Marker 🔴 means the author marked it durable. Items already on the pages are listed first; do not
repeat them, but an input that changes one should name it in "supersedes".
Write each entry as one short self-contained sentence with absolute dates (YYYY-MM-DD), never
"yesterday" or "last week". Cite the logs (dates) each entry comes from.
Facts with a stable name and a value that can change go to "claims" (key like "deploy.window").
Reply with one JSON object: {"entries": [{"kind", "text", "logs": ["YYYY-MM-DD"], "supersedes"?}],
"claims": [{"key", "value", "log": "YYYY-MM-DD", "replaces": bool}]}."""


def group_line(group: Group) -> str:
    marker = " 🔴" if group.durable else ""
    days = ", ".join(sorted(d.isoformat() for d in group.days))
    under = f"; under {group.section}" if group.section else ""
    return f"- [{group.kind}] {group.text} (sessions {len(group.sessions)}; logs {days}{under}){marker}"


def prompt_chunks(groups: list[Group], known_lines: list[str], budget: int) -> list[str]:
    """User prompts, each within ``budget`` characters: the known entries, then signal lines."""
    head = "Entries already on the topic pages:\n" + ("\n".join(known_lines[:200]) or "(none)") + "\n\n"
    head = head[: budget // 3]
    chunks: list[str] = []
    current: list[str] = []
    size = len(head)
    for group in sorted(groups, key=lambda g: (g.first, g.text)):
        line = group_line(group)
        if current and size + len(line) + 1 > budget:
            chunks.append(head + "New observations from the daily logs:\n" + "\n".join(current) + "\n")
            current, size = [], len(head)
        current.append(line)
        size += len(line) + 1
    if current:
        chunks.append(head + "New observations from the daily logs:\n" + "\n".join(current) + "\n")
    return chunks


def check_model_items(reply: dict[str, Any], days_read: set[date]) -> tuple[list[Item], list[ClaimItem], int]:
    """The model proposes; code decides. Returns (items, claims, rejected count)."""
    items: list[Item] = []
    claims: list[ClaimItem] = []
    rejected = 0

    def cited(values: Iterable[Any]) -> list[date]:
        out = []
        for value in values:
            try:
                day = date.fromisoformat(str(value).removeprefix("logs/").removesuffix(".md"))
            except ValueError:
                continue
            if day in days_read:
                out.append(day)
        return sorted(set(out))

    for raw in reply.get("entries") or []:
        days = cited(raw.get("logs") or [])
        text = str(raw.get("text") or "")
        unsafe = redact(text) != text or "```" in text or bool(REDACTED_RE.search(text))
        if not days or raw.get("kind") not in KINDS or unsafe:
            rejected += 1
            continue
        items.append(Item(str(raw["kind"]), _clean_text(text, days[0]), days[0], days[-1], len(days),
                          supersedes=str(raw.get("supersedes") or "")))
    for raw in reply.get("claims") or []:
        days = cited([raw.get("log")])
        key, value = str(raw.get("key") or "").strip(), str(raw.get("value") or "")
        if not days or not re.fullmatch(r"[A-Za-z0-9][\w.\-/]{0,79}", key) or redact(value) != value:
            rejected += 1
            continue
        claims.append(ClaimItem(key, _clean_text(value, days[0], sentence=False), days[0],
                                bool(raw.get("replaces"))))
    return items, claims, rejected
