"""log.md and its archives: the wiki's operation log, bounded so one entry never rewrites a
growing file (issue 24: git objects written per operation independent of the vault's age).

log.md holds the newest entries, oldest first, one ``## [YYYY-MM-DD] kind | Title`` entry per
operation. When its entries pass :data:`MAX_LOG_ENTRIES` or :data:`MAX_LOG_BYTES`, the oldest
ones — of one month, up to :data:`ARCHIVE_ENTRIES` / :data:`ARCHIVE_BYTES` — move to an
archive, ``wiki/log/2026-12.md`` (then ``2026-12-2.md``, … for the same month), written once,
complete, and never rewritten. log.md's head links the newest archives; every archive links
the one written before it, so a person can walk back to the first entry.

Why these bounds: an entry of an ingest is a few hundred bytes (its pages, its source), so
log.md stays under ~50 KB (one screenful of recent history is the newest 100-200 operations,
and a commit writes at most that much log text however old the vault is); an archive is half
of that, so log.md keeps at least the newest ~100 entries right after a move, and a move
happens once in ~100 operations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from ..wiki.index import empty_page
from ..wiki.pages import Page, render_page
from ..wiki.sanitize import clean_line

MAX_LOG_ENTRIES = 200
MAX_LOG_BYTES = 48 * 1024
ARCHIVE_ENTRIES = 100
ARCHIVE_BYTES = 24 * 1024
LINKED_ARCHIVES = 12  # the newest archives log.md links (older ones through each archive's own link)
ARCHIVE_FOLDER = "log"  # under wiki/
OLDER_PREFIX = "Older entries"
_ENTRY_RE = re.compile(r"^## \[(\d{4}-\d{2})-\d{2}\] ")
_DAY_RE = re.compile(r"^## \[(\d{4}-\d{2}-\d{2})\] ")
_LINK_RE = re.compile(r"\[\[" + ARCHIVE_FOLDER + r"/([^\]|]+)")
_ARCHIVE_NAME_RE = re.compile(r"^(\d{4}-\d{2})(?:-(\d+))?$")


def log_entry(kind: str, title: str, details: list[str], when: date | None = None) -> str:
    """One log.md entry: ``## [YYYY-MM-DD] kind | Title`` and its detail lines."""
    day = (when or date.today()).isoformat()
    # A title or a file name in a detail line is data: one line each, through the sanitizer,
    # so a name cannot add entries (or markup) to log.md.
    safe_title = clean_line(title).text or "(untitled)"
    return f"\n## [{day}] {kind} | {safe_title}\n" + "".join(f"- {clean_line(d).text}\n" for d in details)


def appended_log(current: str | None, entry: str) -> str:
    """log.md's text with ``entry`` appended (the first entry starts the file)."""
    text = current if current is not None else empty_page("log")
    if text and not text.endswith("\n"):
        text += "\n"
    return text + entry


def is_archive_name(name: str) -> bool:
    """``2026-12`` or ``2026-12-2``: the file name (no .md) of a log archive under wiki/log/."""
    return _ARCHIVE_NAME_RE.match(name) is not None


def _archive_order(name: str) -> tuple[str, int]:
    match = _ARCHIVE_NAME_RE.match(name)
    assert match is not None
    return match.group(1), int(match.group(2) or 1)


def archive_names(folder: Path) -> list[str]:
    """The archives in ``wiki/log/`` (file names without .md), oldest first."""
    try:
        names = [p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md") and p.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((n for n in names if is_archive_name(n)), key=_archive_order)


@dataclass(frozen=True)
class _Split:
    head: list[str]  # the lines before the first entry (front matter, title, links)
    entries: list[str]  # each entry's text, a person's lines under it included


def _split(text: str) -> _Split:
    head: list[str] = []
    entries: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if _ENTRY_RE.match(line):
            entries.append([line])
        elif entries:
            entries[-1].append(line)
        else:
            head.append(line)
    # An entry starts with the blank line before its heading (log_entry writes it that way):
    # a trailing blank line belongs to the next entry, so a moved entry is whole in its archive.
    texts = ["".join(lines) for lines in entries]
    for i in range(len(texts) - 1):
        if texts[i].endswith("\n\n"):
            texts[i], texts[i + 1] = texts[i][:-1], "\n" + texts[i + 1]
    if texts and head and head[-1] == "\n":
        head.pop()
        texts[0] = "\n" + texts[0]
    return _Split(head, texts)


@dataclass(frozen=True)
class LogArchive:
    """The oldest entries of log.md moving to a new archive file, in one operation."""

    rel: str  # vault-relative path of the new archive (wiki/log/2026-12.md)
    text: str  # the archive's whole text
    moved: tuple[str, ...]  # the entries' texts, as they were in log.md
    linked: tuple[str, ...]  # the archives log.md links afterwards, newest first

    def trim(self, current: str | None) -> str | None:
        """log.md's text without the moved entries, its links line naming the archives.

        Applied to what the file holds (a person may have typed in it since it was read): each
        moved entry is taken out only where its text is found unchanged; every other line stays."""
        if current is None:
            return None
        split = _split(current)
        remaining = list(split.entries)
        for entry in self.moved:
            if entry in remaining:
                remaining.remove(entry)
            elif entry.lstrip("\n") in remaining:
                remaining.remove(entry.lstrip("\n"))
        if remaining and not remaining[0].startswith("\n"):
            remaining[0] = "\n" + remaining[0]
        return "".join(_with_links(split.head, self.linked)) + "".join(remaining)


def _with_links(head: list[str], linked: tuple[str, ...]) -> list[str]:
    """log.md's head with one links line (replacing any there, a merge's two included)."""
    line = (f"{OLDER_PREFIX} (newest first; each archive links the one before it): "
            + " · ".join(f"[[{ARCHIVE_FOLDER}/{name}]]" for name in linked) + "\n")
    kept = [row for row in head if not row.startswith(OLDER_PREFIX)]
    while kept and kept[-1] == "\n":
        kept.pop()
    return [*kept, "\n", line] if kept else [line]


def plan_archive(text: str | None, folder: Path) -> LogArchive | None:
    """The archive to write when log.md's ``text`` is over its bound (None: it is not).

    ``folder`` is wiki/log/ on disk: it is read only when an archive is due (the name to take
    and the archive before it)."""
    if text is None:
        return None
    entries = _split(text).entries
    sizes = [len(e.encode("utf-8")) for e in entries]
    if len(entries) <= MAX_LOG_ENTRIES and sum(sizes) <= MAX_LOG_BYTES:
        return None
    month = _month_of(entries[0])
    count, total = 0, 0
    while (count < len(entries) - 1 and _month_of(entries[count]) == month
           and (count == 0 or (count < ARCHIVE_ENTRIES and total + sizes[count] <= ARCHIVE_BYTES))):
        total += sizes[count]
        count += 1
    moved = tuple(entries[:count])
    name = _free_name(month, set(archive_names(folder)))
    # The chain runs in the order archives were written (a late entry of an earlier month, from
    # another machine, gets an archive after later months'): log.md's links, newest first, say it.
    earlier = [n for n in _linked(_split(text).head) if n != name]
    linked = tuple([name, *earlier][:LINKED_ARCHIVES])
    previous = earlier[0] if earlier else ""
    return LogArchive(f"wiki/{ARCHIVE_FOLDER}/{name}.md", _archive_text(name, month, previous, moved), moved, linked)


def _linked(head: list[str]) -> list[str]:
    """The archives log.md's links line names, newest first (two lines after a merge: both, once)."""
    names: list[str] = []
    for row in head:
        if row.startswith(OLDER_PREFIX):
            names += [n for n in _LINK_RE.findall(row) if is_archive_name(n) and n not in names]
    return names


def _day(entry: str) -> str:
    """An entry's ``## [YYYY-MM-DD]`` (its order among the others: entries of one day keep theirs)."""
    match = _DAY_RE.match(entry.lstrip("\n"))
    return match.group(1) if match else ""


def _month_of(entry: str) -> str:
    match = _ENTRY_RE.match(entry.lstrip("\n"))
    return match.group(1) if match else "0000-00"


def _free_name(month: str, taken: set[str]) -> str:
    if month not in taken:
        return month
    n = 2
    while f"{month}-{n}" in taken:
        n += 1
    return f"{month}-{n}"


def _archive_text(name: str, month: str, previous: str, moved: tuple[str, ...]) -> str:
    title = f"Log, {month}" + (f" ({name.rsplit('-', 1)[-1]})" if name != month else "")
    before = f" Before these: [[{ARCHIVE_FOLDER}/{previous}]]." if previous else " These are the first."
    body = (f"# {title}\n\nEntries moved from [[log]] when it passed its bound, oldest first; written once, "
            f"never changed.{before}\n")
    return render_page(Page({"type": "log", "title": title}, body)) + "".join(moved)


def merge_log(base: str, ours: str, theirs: str, merge_heads: Callable[[str, str, str], str]) -> str:
    """log.md or one of its archives as two machines left it: every entry either added, each
    once. An entry's count is the base's plus what each side added or removed (an entry a side
    moved to an archive leaves log.md), and in a file both sides made under one name (an archive
    written on each machine: no base) the larger of the two, since the entries both archived
    came from the log.md they shared. Entries keep their order by date, the remote's first on a
    day; the lines above the first entry are merged by ``merge_heads``."""
    b, o, t = _split(base), _split(ours), _split(theirs)
    have_o, have_t = Counter(o.entries), Counter(t.entries)
    if not b.entries and not b.head:
        wanted = have_o | have_t  # the larger count of each
    else:
        had = Counter(b.entries)
        wanted = Counter({e: had[e] + (have_o[e] - had[e]) + (have_t[e] - had[e]) for e in have_o | have_t | had})
    merged: list[str] = []
    taken: Counter[str] = Counter()
    for entry in [*t.entries, *o.entries]:
        if taken[entry] < wanted[entry]:
            taken[entry] += 1
            merged.append(entry)
    merged.sort(key=_day)
    heads = ["".join(side.head) for side in (b, o, t)]
    head = heads[2] if heads[1] in (heads[0], heads[2]) else heads[1] if heads[2] == heads[0] else \
        merge_heads(*heads)
    if head and not head.endswith("\n"):
        head += "\n"
    return head + "".join(entry if entry.startswith("\n") or not head else "\n" + entry for entry in merged)
