"""Topic pages fed by consolidation: their entry format, merging, and rendering.

A consolidated topic page (``wiki/decisions.md``, ``gotchas.md``, ``preferences.md``,
``patterns.md``, ``dead-ends.md``) has an ``## Entries`` section, one durable item a line,
citing the daily logs it came from::

    - Deploys go through the staging gate — `logs/2026-11-23.md`, `logs/2026-11-27.md` (4 sessions)

and, for facts that can change, a ``## Claims`` section in the format of DESIGN.md §1 citing
``[[logs/DATE]]``. Merging never drops a line: an entry seen again gains a session count and
its latest log; a line a person wrote is kept verbatim (and counts as already known); an
entry a later log replaces is struck through with the log that replaced it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Generic, TypeVar

from ..wiki.pages import Claim, Page, get_section, parse_claim_line, parse_page, render_page, set_section

TOPIC_TAG = "daily-logs"
KINDS = ("decision", "gotcha", "preference", "pattern", "dead-end")
TOPIC_PAGES: dict[str, tuple[str, str, str]] = {
    # kind: (page slug, title, summary)
    "decision": ("decisions", "Decisions", "Decisions and durable rules recorded in the daily logs."),
    "gotcha": ("gotchas", "Gotchas", "Pitfalls and traps found while working, from the daily logs."),
    "preference": ("preferences", "Preferences", "Stable preferences about tools, style and process."),
    "pattern": ("patterns", "Patterns", "Recurring patterns and practices that worked, from the daily logs."),
    "dead-end": ("dead-ends", "Dead Ends", "Approaches that were tried and did not work."),
}
_DATE = r"\d{4}-\d{2}-\d{2}"
_CITE = rf"`logs/{_DATE}\.md`"
ENTRY_RE = re.compile(
    rf"^[-*] (?P<text>.+?) — (?P<cites>{_CITE}(?:, {_CITE})?)(?: \((?P<n>\d+) sessions?\))?\s*$"
)
_CITE_DAY_RE = re.compile(rf"`logs/({_DATE})\.md`")
_STOP_WORDS = (
    "a an the and or but of to in on at for with by from is are was were be been being it its this that "
    "these those we i you they he she our your their us me my as into than then so do does did not no "
    "will would should can could has have had also just now all any some very more most on via per"
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD_RE = re.compile(r"[\w']+", re.UNICODE)
_DATE_RE = re.compile(rf"\b{_DATE}\b|\((?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\)", re.I)
SIMILAR = 0.7  # shared words over all words (Jaccard)
CONTAIN = 0.9  # or: shared words over the shorter one's words ...
CONTAIN_MIN = 5  # ... when at least this many are shared


def normalize(text: str) -> frozenset[str]:
    """The content words of ``text`` (dates, markers, stop words and punctuation dropped)."""
    text = _DATE_RE.sub(" ", text.casefold())
    words = [w.strip("'") for w in _WORD_RE.findall(text)]
    return frozenset(w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w
                     for w in words if w and w not in _STOP)


def similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    inter = len(a & b)
    if not (inter / len(a | b) >= SIMILAR or (inter >= CONTAIN_MIN and inter / min(len(a), len(b)) >= CONTAIN)):
        return False
    # Numbers and identifiers carry the fact: "BIL-4821" vs "BIL-1190", "50 rps" vs "100 rps".
    ids_a = _ids(a)
    ids_b = _ids(b)
    return not (ids_a and ids_b and ids_a != ids_b)


_DIGIT_RE = re.compile(r"\d")


@functools.lru_cache(maxsize=1 << 16)
def _ids(words: frozenset[str]) -> frozenset[str]:
    """The words that carry a number or an identifier (cached: a long log asks again and again)."""
    return frozenset(w for w in words if _DIGIT_RE.search(w))


T = TypeVar("T")
_NO_IDS: frozenset[str] = frozenset()


class SimilarIndex(Generic[T]):
    """Items by their words, answering "which are :func:`similar` to these words?" without
    comparing with every item (consolidating a long log was quadratic that way).

    Only items that can pass :func:`similar`'s bounds are compared: an item sharing enough of the
    query's words (Jaccard, or containing the query) shares at least one of the query's
    ``n - ceil(SIMILAR * n) + 1`` rarest words, so only those words' postings are read; an item
    contained in the query is found through the few words it was filed under when added (its
    rarest then, ``m - ceil(CONTAIN * m) + 1`` of them). Items whose numbers and identifiers
    differ from the query's are never similar, so postings are kept per set of identifiers.
    """

    def __init__(self) -> None:
        self._items: list[tuple[frozenset[str], T]] = []
        self._exact: dict[frozenset[str], int] = {}
        self._all: dict[str, list[int]] = {}  # word -> items (every word)
        self._by_ids: dict[tuple[frozenset[str], str], list[int]] = {}
        self._filed_all: dict[str, list[int]] = {}  # word -> items filed under it (a few words each)
        self._filed_by_ids: dict[tuple[frozenset[str], str], list[int]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, words: frozenset[str], item: T) -> None:
        seq = len(self._items)
        self._items.append((words, item))
        self._exact[words] = seq
        ids = _ids(words)
        for word in words:
            self._all.setdefault(word, []).append(seq)
            self._by_ids.setdefault((ids, word), []).append(seq)
        m = len(words)
        if m >= CONTAIN_MIN:
            needed = math.ceil(CONTAIN * m - 1e-9)
            for word in sorted(words, key=lambda w: (len(self._all[w]), w))[: m - needed + 1]:
                self._filed_all.setdefault(word, []).append(seq)
                self._filed_by_ids.setdefault((ids, word), []).append(seq)

    def _candidates(self, words: frozenset[str]) -> set[int]:
        if not self._items:
            return set()
        n = len(words)
        probe = n - math.ceil(SIMILAR * n - 1e-9) + 1
        ids = _ids(words)
        found: set[int] = set()
        if ids:
            # Items with other identifiers are never similar: read this set's postings and
            # those of items without any.
            for bucket in (ids, _NO_IDS):
                lists = sorted((self._by_ids.get((bucket, w), []) for w in words), key=len)[:probe]
                for postings in lists:
                    found.update(postings)
                for word in words:
                    found.update(self._filed_by_ids.get((bucket, word), ()))
        else:
            for postings in sorted((self._all.get(w, []) for w in words), key=len)[:probe]:
                found.update(postings)
            for word in words:
                found.update(self._filed_all.get(word, ()))
        return found

    def matches(self, words: frozenset[str]) -> Iterator[T]:
        """Every similar item, in the order they were added."""
        if not words:
            return
        for seq in sorted(self._candidates(words)):
            other, item = self._items[seq]
            if similar(other, words):
                yield item

    def find(self, words: frozenset[str]) -> T | None:
        """The similar item sharing the most words (an item with exactly these words first)."""
        exact = self._exact.get(words)
        if exact is not None:
            return self._items[exact][1]
        if not words:
            return None
        ranked = sorted(self._candidates(words), key=lambda seq: (-len(self._items[seq][0] & words), seq))
        for seq in ranked:
            other, item = self._items[seq]
            if similar(other, words):
                return item
        return None


@dataclass
class Entry:
    text: str
    first: date | None = None
    last: date | None = None
    sessions: int = 0
    raw: str = ""  # a line we do not own (a person's, or struck through): kept byte for byte
    new: bool = False
    norm: frozenset[str] = field(default_factory=frozenset)

    def render(self) -> str:
        if self.raw:
            return self.raw
        assert self.first is not None and self.last is not None
        cites = [f"`logs/{self.first.isoformat()}.md`"]
        if self.last != self.first:
            cites.append(f"`logs/{self.last.isoformat()}.md`")
        count = f" ({self.sessions} sessions)" if self.sessions > 1 else ""
        return f"- {self.text} — {', '.join(cites)}{count}"

    @property
    def current(self) -> bool:
        return not self.raw or not self.raw.lstrip("-* ").startswith("~~")


def parse_entries(section: str | None) -> list[Entry]:
    entries: list[Entry] = []
    if not section:
        return entries
    for line in section.splitlines():
        if line.startswith("## ") or not line.strip():
            continue
        match = ENTRY_RE.match(line.rstrip())
        if match:
            days = [date.fromisoformat(d) for d in _CITE_DAY_RE.findall(match.group("cites"))]
            text = match.group("text")
            entries.append(Entry(text, days[0], days[-1], int(match.group("n") or 1), norm=normalize(text)))
        else:
            body = line.strip().lstrip("-* ").strip("~")
            entries.append(Entry(body, raw=line.rstrip(), norm=normalize(body)))
    return entries


@dataclass(frozen=True)
class Item:
    """One durable item distilled from the logs, ready to merge into a topic page."""

    kind: str
    text: str
    first: date
    last: date
    sessions: int
    supersedes: str = ""  # text of an earlier entry this one replaces (model path)


@dataclass(frozen=True)
class ClaimItem:
    key: str
    value: str
    day: date
    replaces: bool  # the log says it replaces the earlier value


@dataclass
class MergeStats:
    added: int = 0
    merged: int = 0
    superseded: int = 0
    claims_added: int = 0
    claims_superseded: int = 0


def merge_entries(entries: list[Entry], items: list[Item], stats: MergeStats) -> list[Entry]:
    out = list(entries)
    positions: SimilarIndex[int] = SimilarIndex()
    for index, entry in enumerate(out):
        positions.add(entry.norm, index)
    for item in items:
        norm = normalize(item.text)
        if item.supersedes:
            old_norm = normalize(item.supersedes)
            for index, entry in enumerate(out):
                if entry.current and similar(entry.norm, old_norm) and not similar(entry.norm, norm):
                    cites = f" — `logs/{entry.first}.md`" if entry.first and not entry.raw else ""
                    out[index] = Entry(entry.text, raw=f"- ~~{entry.text}~~{cites} superseded on "
                                       f"{item.last.isoformat()} by `logs/{item.last.isoformat()}.md`",
                                       norm=entry.norm)
                    stats.superseded += 1
                    break
        match = next((out[i] for i in positions.matches(norm) if out[i].current), None)
        if match is None:
            positions.add(norm, len(out))
            out.append(Entry(item.text, item.first, item.last, item.sessions, new=True, norm=norm))
            stats.added += 1
        elif not match.raw:
            match.first = min(match.first or item.first, item.first)
            match.last = max(match.last or item.last, item.last)
            match.sessions += item.sessions
            stats.merged += 1
    return out


def merge_claims(section: str | None, items: list[ClaimItem], stats: MergeStats) -> str:
    """The ``## Claims`` section with ``items`` merged in; lines that are not claims are kept."""
    lines = (section or "## Claims\n").rstrip("\n").split("\n")
    if not lines or not lines[0].startswith("## "):
        lines.insert(0, "## Claims")
    # Each line parsed once: the current claims of each key, by line (a long log has many).
    by_key: dict[str, list[int]] = {}
    parsed: dict[int, Claim] = {}
    for index, line in enumerate(lines):
        claim = parse_claim_line(line)
        if claim is not None and claim.is_current:
            parsed[index] = claim
            by_key.setdefault(claim.key, []).append(index)
    for item in sorted(items, key=lambda c: c.day):
        source = f"logs/{item.day.isoformat()}"
        new_norm = normalize(item.value)
        current_same_key = [(index, parsed[index]) for index in by_key.get(item.key, [])]
        if any(normalize(claim.value) == new_norm for _, claim in current_same_key):
            continue
        if item.replaces:
            for index, claim in current_same_key:
                lines[index] = claim.with_status("superseded", by=source).render()
                stats.claims_superseded += 1
            by_key[item.key] = []
        rendered = Claim(item.key, item.value, item.day.isoformat(), source).render()
        added = parse_claim_line(rendered)
        if added is not None and added.is_current:
            parsed[len(lines)] = added
            by_key.setdefault(added.key, []).append(len(lines))
        lines.append(rendered)
        stats.claims_added += 1
    return "\n".join(lines) + "\n"


def new_topic_page(kind: str) -> Page:
    _slug, title, summary = TOPIC_PAGES[kind]
    body = (
        f"\n# {title}\n\n"
        "Distilled from the daily logs by `wikiwright consolidate`; every entry cites the logs it "
        "came from. Edit freely: lines you write are kept as they are.\n\n## Entries\n"
    )
    return Page({"type": "topic", "title": title, "summary": summary, "tags": [TOPIC_TAG]}, body)


def update_topic_page(
    kind: str, text: str | None, items: list[Item], claims: list[ClaimItem], today: date, stats: MergeStats
) -> str:
    """The page's new text with ``items`` and ``claims`` merged in."""
    page = parse_page(text) if text is not None else new_topic_page(kind)
    entries = parse_entries(get_section(page.body, "Entries"))
    merged = merge_entries(entries, items, stats)
    section = "## Entries\n" + "".join(f"{entry.render()}\n" for entry in merged)
    body = set_section(page.body, "Entries", section)
    if claims:
        body = set_section(body, "Claims", merge_claims(get_section(body, "Claims"), claims, stats))
    meta = dict(page.meta)
    tags = meta.get("tags") or []
    tags = list(tags) if isinstance(tags, list) else [tags]
    if TOPIC_TAG not in tags:
        tags.append(TOPIC_TAG)
    meta.update(tags=tags, updated=today.isoformat())
    meta.setdefault("type", "topic")
    return render_page(replace(page, meta=meta, body=body))


def is_topic_page(text: str) -> bool:
    try:
        meta = parse_page(text).meta
    except ValueError:
        return False
    tags = meta.get("tags") or []
    return TOPIC_TAG in (tags if isinstance(tags, list) else [tags])
