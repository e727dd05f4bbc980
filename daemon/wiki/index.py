"""index.md and log.md, built by code from the catalogue, never written by the model.

index.md keeps whatever a person writes outside the generated block; log.md is
append-only: one ``## [YYYY-MM-DD] kind | Title`` entry per operation.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date

from ..wiki.catalog import PageEntry
from ..wiki.pages import Page, render_page
from ..wiki.sanitize import clean_line, link_label

INDEX_START = "<!-- wikiwright:index:start (built by wikiwright; edit outside this block) -->"
INDEX_END = "<!-- wikiwright:index:end -->"
TYPE_HEADINGS = {
    "overview": "Overview",
    "topic": "Topics",
    "entity": "Entities",
    "concept": "Concepts",
    "answer": "Answers",
    "stub": "Stubs",
    "source": "Sources",
}
TITLES = {"index": "Index", "log": "Log", "overview": "Overview"}


def empty_page(stem: str) -> str:
    """The initial content of index.md, log.md and overview.md."""
    title = TITLES.get(stem, stem.title())
    body = f"# {title}\n\n"
    if stem == "index":
        body += f"{INDEX_START}\n{INDEX_END}\n"
    elif stem == "log":
        body += "Every operation on this wiki, oldest first (appended by wikiwright).\n"
    else:
        body += "What this wiki is about. Edit freely; wikiwright adds to it, never removes.\n"
    return render_page(Page({"type": stem, "title": title}, body))


def _line(entry: PageEntry) -> str:
    summary = entry.summary.replace("\n", " ").strip()
    if len(summary) > 140:
        summary = summary[:137].rstrip() + "…"
    same = entry.title.casefold() == entry.stem.casefold()
    # A title is data (a model's, a file name's): through the sanitizer, and unable to close the link.
    label = f"[[{entry.stem}]]" if same else f"[[{entry.stem}|{link_label(clean_line(entry.title).text)}]]"
    return f"- {label}" + (f" — {summary}" if summary else "")


# index.md must stay readable at a glance (and loadable whole by a model): the generated block
# is kept under these budgets, which leave room for a person's text around it (file < 200
# lines, < 25 KB). Over budget, summaries of source pages go first, then the largest groups
# are cut to their first entries with a "… and N more" line.
MAX_INDEX_LINES = 180
MAX_INDEX_BYTES = 22_000


def _render_groups(groups: list[tuple[str, list[PageEntry]]], caps: dict[str, int], short: set[str]) -> list[str]:
    out = [INDEX_START]
    for heading, members in groups:
        out.append(f"\n## {heading} ({len(members)})\n")
        cap = caps.get(heading, len(members))
        for entry in members[:cap]:
            line = _line(entry)
            out.append(line.split(" — ", 1)[0] if heading in short else line)
        if cap < len(members):
            out.append(f"- … and {len(members) - cap} more (find them with `wikiwright search`)")
    out.append(INDEX_END)
    return out


def render_index_block(entries: list[PageEntry]) -> str:
    groups: dict[str, list[PageEntry]] = defaultdict(list)
    for entry in entries:
        if entry.stem in ("index", "log") and "/" not in entry.name:
            continue
        if entry.error:
            continue  # an unreadable page is a stale pointer; lint reports it
        groups[entry.type or "page"].append(entry)
    order = [*TYPE_HEADINGS, *sorted(set(groups) - set(TYPE_HEADINGS))]
    ordered: list[tuple[str, list[PageEntry]]] = []
    for page_type in order:
        members = groups.get(page_type)
        if not members:
            continue
        members.sort(key=lambda e: (e.title.casefold(), e.name))
        ordered.append((TYPE_HEADINGS.get(page_type, page_type.title() or "Pages"), members))

    # The budget search works on line sizes measured once, and the block is rendered once at
    # the end: rendering it afresh at every step cost ~0.4 s per ingest at 10,000 pages.
    # fits() gives exactly what measuring "\n".join(_render_groups(...)) would.
    sizes = [_PrefixSizes(members) for _, members in ordered]

    def fits(caps: dict[str, int], short: set[str]) -> bool:
        items = 2
        newlines = INDEX_START.count("\n") + INDEX_END.count("\n")
        size = len(INDEX_START.encode("utf-8")) + len(INDEX_END.encode("utf-8"))
        kept = []
        for heading, members in ordered:
            header = f"\n## {heading} ({len(members)})\n"
            cap = caps.get(heading, len(members))
            kept.append(min(cap, len(members)))
            items += 1 + kept[-1]
            newlines += header.count("\n")
            size += len(header.encode("utf-8"))
            if cap < len(members):
                more = f"- … and {len(members) - cap} more (find them with `wikiwright search`)"
                items += 1
                size += len(more.encode("utf-8"))
        # "\n".join adds one newline (and one byte) between items. Every item is at least one
        # line, so too many items fail without measuring a single entry line.
        if newlines + items > MAX_INDEX_LINES:
            return False
        for (heading, _), count, prefix in zip(ordered, kept, sizes, strict=True):
            line_bytes, line_newlines = prefix.upto(count, heading in short)
            size += line_bytes
            newlines += line_newlines
        return newlines + items <= MAX_INDEX_LINES and size + items - 1 <= MAX_INDEX_BYTES

    caps: dict[str, int] = {}
    short: set[str] = set()
    # Shorten the largest groups first, summaries before entries.
    for heading, _ in sorted(ordered, key=lambda g: -len(g[1])):
        if fits(caps, short):
            break
        short.add(heading)
    while not fits(caps, short):
        heading, members = max(ordered, key=lambda g: min(caps.get(g[0], len(g[1])), len(g[1])))
        current = caps.get(heading, len(members))
        if current <= 5:
            break
        caps[heading] = max(5, current - max(1, current // 4))
    return "\n".join(_render_groups(ordered, caps, short)) + "\n"


class _PrefixSizes:
    """(bytes, newlines) of a group's first k index lines, full or shortened, measured lazily:
    only as many entries are formatted as the budget search asks about."""

    def __init__(self, members: list[PageEntry]) -> None:
        self.members = members
        self.lines: list[str] = []
        self.sums: dict[bool, list[tuple[int, int]]] = {False: [(0, 0)], True: [(0, 0)]}

    def upto(self, count: int, short: bool) -> tuple[int, int]:
        sums = self.sums[short]
        while len(sums) <= count:
            index = len(sums) - 1
            if index == len(self.lines):
                self.lines.append(_line(self.members[index]))
            line = self.lines[index].split(" — ", 1)[0] if short else self.lines[index]
            size, newlines = sums[-1]
            sums.append((size + len(line.encode("utf-8")), newlines + line.count("\n")))
        return sums[count]


def splice_index(current: str, block: str, previous_block: str = "") -> str:
    """``current`` index.md text with its generated block replaced by ``block``.

    The normal case is one start marker followed by one end marker. If a person deleted,
    moved or duplicated a marker, no text is ever removed by pairing markers that do not
    belong together: every marker line goes, plus the lines right next to a marker that are
    lines of the block wikiwright wrote last (``previous_block``) — never anything else — and
    the new block takes the place of the first marker (the end of the file when there is none).
    """
    rows = current.splitlines(keepends=True)
    starts = [i for i, row in enumerate(rows) if row.strip() == INDEX_START]
    ends = [i for i, row in enumerate(rows) if row.strip() == INDEX_END]
    if len(starts) == 1 and len(ends) == 1 and starts[0] < ends[0]:
        head, tail = "".join(rows[: starts[0]]), "".join(rows[ends[0] + 1 :])
        return head + block + tail.lstrip("\n")
    ours = {line for line in previous_block.splitlines() if line.strip()} - {INDEX_START, INDEX_END}
    drop = set(starts) | set(ends)
    for marker in sorted(drop):
        # Generated lines run down from a start marker and up to an end marker.
        step = 1 if marker in starts else -1
        i = marker + step
        while 0 <= i < len(rows) and i not in drop and (not rows[i].strip() or rows[i].rstrip("\r\n") in ours):
            drop.add(i)
            i += step
    # A blank line inside a person's text (kept lines on both sides) stays; only generated lines go.
    keep = [i not in drop or (not row.strip() and _between_kept(i, drop, rows)) for i, row in enumerate(rows)]
    at = min(starts + ends) if starts or ends else None
    if at is None:
        return current.rstrip("\n") + "\n\n" + block
    head = "".join(row for i, row in enumerate(rows[:at]) if keep[i])
    tail = "".join(row for i, row in enumerate(rows) if i >= at and keep[i])
    if head and not head.endswith("\n"):
        head += "\n"
    return head + block + tail.lstrip("\n")


def _between_kept(i: int, drop: set[int], rows: list[str]) -> bool:
    """A blank line inside a person's text (kept lines on both sides) stays."""
    up = next((j for j in range(i - 1, -1, -1) if rows[j].strip()), None)
    down = next((j for j in range(i + 1, len(rows)) if rows[j].strip()), None)
    return up is not None and down is not None and up not in drop and down not in drop


def block_of(text: str) -> str:
    """The generated block of an index.md text ('' when its markers are not a proper pair)."""
    start, end = text.find(INDEX_START), text.find(INDEX_END)
    if start == -1 or end < start:
        return ""
    return text[start : end + len(INDEX_END)]


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

