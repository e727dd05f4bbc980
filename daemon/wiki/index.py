"""index.md (and log.md's first text), built by code from the catalogue, never written by the model.

index.md lists every page, one line each with its summary, grouped by type. It stays small
enough to read at a glance (and to load whole into a prompt): when the whole list does not fit
its budget, the largest groups move to a page of their own (``index-sources.md``, …), linked
from index.md — never "… and N more". A group page lists every one of its pages itself up to
:data:`PART_ENTRIES`; past that it is a hub (the count, the newest, its parts) and the lines are
on part pages of a bounded size (``index/sources-001.md``, …) that a page joins once and keeps,
so no commit rewrites a page that grows with the wiki. index.md and those pages keep whatever a
person writes outside the generated block. (log.md's entries and archives: wiki/logfile.py.)
"""

from __future__ import annotations

import bisect
import functools
import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..wiki.catalog import Catalog, PageEntry
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
    return _line_of(entry.stem, entry.title, entry.summary)


# index.md is rendered again in every commit from every page (a function of its inputs): each
# page's line is worked out once per process, not once per commit, so a commit's share of the
# index grows with the number of pages only by a join.
@functools.lru_cache(maxsize=1 << 16)
def _line_of(stem: str, title: str, summary: str) -> str:
    summary = summary.replace("\n", " ").strip()
    if len(summary) > 140:
        summary = summary[:137].rstrip() + "…"
    same = title.casefold() == stem.casefold()
    # A title is data (a model's, a file name's): through the sanitizer, and unable to close the link.
    label = f"[[{stem}]]" if same else f"[[{stem}|{link_label(clean_line(title).text)}]]"
    return f"- {label}" + (f" — {summary}" if summary else "")


# index.md must stay readable at a glance (and loadable whole by a model): the generated block
# is kept under these budgets, which leave room for a person's text around it (file < 200
# lines, < 25 KB). Over budget, the largest groups move to their own group pages.
MAX_INDEX_LINES = 180
MAX_INDEX_BYTES = 22_000
SUB_PREFIX = "index-"


def sub_index_name(heading: str) -> str:
    """The page a whole group moves to: ``index-sources`` for "Sources"."""
    return SUB_PREFIX + "".join(c if c.isalnum() else "-" for c in heading.casefold()).strip("-")


def is_index_page(entry: PageEntry) -> bool:
    return ("/" not in entry.name and entry.stem in ("index", "log")) or entry.type == "index"


def _group_link(heading: str, count: int) -> str:
    return (f"- [[{sub_index_name(heading)}|All {count} {heading.casefold()}]] — every one, one line each "
            "with its summary")


def _listing(heading: str, lines: list[str]) -> str:
    """The block of a group page listing every one of its pages itself."""
    return "\n".join([INDEX_START, f"\n## {heading} ({len(lines)})\n", *lines, INDEX_END]) + "\n"


def sub_index_page(stem: str, block: str) -> str:
    """A new group index page: its title and the generated block."""
    heading = stem.removeprefix(SUB_PREFIX).replace("-", " ").capitalize()
    title = f"Index — {heading}"
    return render_page(Page({"type": "index", "title": title},
                            f"# {title}\n\nEvery page of this kind (from [[index]]).\n\n{block}"))


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


# -- a group's own page: a hub, and parts of a bounded size --------------------------------------
#
# A group moved off index.md gets a page of its own (``index-sources.md``). Up to PART_ENTRIES
# pages it lists every one itself, as index.md would. Past that it is a hub — the count, the
# newest HUB_NEWEST, a link to each part — and the lines are on part pages of at most
# PART_ENTRIES each (``index/sources-001.md``, …). A page is given its part once, when it joins
# the group (the last part, or a new one when that is full), and keeps it: a new page edits the
# hub and one part, a retitled or removed page the hub and its own part, however large the
# group. So no commit rewrites a page that grows with the wiki (issue 24). Where each page is —
# its part and its place there, in the order pages joined — is kept in the catalogue
# (``index_parts``) for the next commit and other processes, and written in the part pages
# themselves, which a rebuild from every entry reads first (so a catalogue rebuilt from the
# pages, or two machines after a sync, come to the same parts). Pages a vault had before parts
# existed join in index.md's order (by title), so a long old group page is cut into parts once.
PART_ENTRIES = 100  # lines on one part page: ~20 KB of source lines, about one screenful to scroll
HUB_NEWEST = 10  # the newest pages a hub lists itself
PART_FOLDER = "index"  # under wiki/: index/sources-001.md
_PART_RE = re.compile(r"^" + PART_FOLDER + r"/(.+)-(\d{3,})$")
_LISTED_RE = re.compile(r"^- \[\[([^\]|\n]+)", re.MULTILINE)

Slot = tuple[str, int, int]  # (page type, part number, place in the part)


def part_name(hub: str, number: int) -> str:
    """``index/sources-003``: part 3 of the group page ``index-sources``."""
    return f"{PART_FOLDER}/{hub.removeprefix(SUB_PREFIX)}-{number:03d}"


def part_of(name: str) -> tuple[str, int] | None:
    """(hub, part number) of a part page's name (``index/sources-003``); None for any other name."""
    match = _PART_RE.match(name)
    return (SUB_PREFIX + match.group(1), int(match.group(2))) if match else None


def is_group_page_name(name: str) -> bool:
    """A name index.md's own pages take: a group page (``index-sources``) or one of its parts
    (``index/sources-003``). Rebuilt with index.md, never patched."""
    return ("/" not in name and name.startswith(SUB_PREFIX)) or part_of(name) is not None


def group_page_names(wiki: Path) -> list[str]:
    """The group pages and parts on disk, by name (hubs first, parts in number order)."""
    hubs = sorted(p.name[:-3] for p in wiki.glob(f"{SUB_PREFIX}*.md"))
    folder = wiki / PART_FOLDER
    names = [f"{PART_FOLDER}/{p.name[:-3]}" for p in folder.glob("*.md")] if folder.is_dir() else []
    parts = sorted((found, name) for name in names if (found := part_of(name)) is not None)
    return [*hubs, *(name for _part, name in parts)]


def new_group_page(name: str, block: str) -> str:
    """A new group page or part: its title, a line saying what it is, and the generated block."""
    part = part_of(name)
    if part is None:
        return sub_index_page(name, block)
    hub, number = part
    heading = hub.removeprefix(SUB_PREFIX).replace("-", " ").capitalize()
    title = f"Index — {heading}, part {number}"
    return render_page(Page({"type": "index", "title": title}, (
        f"# {title}\n\nPart {number} of [[{hub}]], in the order the pages joined it: a page keeps its "
        f"part, new ones join the last.\n\n{block}")))


def _heading_of(page_type: str) -> str:
    return TYPE_HEADINGS.get(page_type, page_type.title() or "Pages")


@dataclass
class _Part:
    """The pages of one part of a group, in the order they joined it."""

    places: list[tuple[int, str]] = field(default_factory=list)  # (place, page), sorted
    lines: dict[str, str] = field(default_factory=dict)  # page -> its line
    text: str | None = None  # the part's block, while the part is unchanged

    def add(self, place: int, name: str, line: str) -> None:
        bisect.insort(self.places, (place, name))
        self.lines[name] = line
        self.text = None

    def remove(self, place: int, name: str) -> None:
        at = bisect.bisect_left(self.places, (place, name))
        if at < len(self.places) and self.places[at] == (place, name):
            del self.places[at]
        self.lines.pop(name, None)
        self.text = None


@dataclass
class _Group:
    """One type's pages, sorted as index.md lists them, with the sizes the budget needs, and
    their parts."""

    heading: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (title folded, name), sorted
    lines: list[str] = field(default_factory=list)  # the rendered line of each, same order
    chars: int = 0  # sum of len(line): what render_index picks the largest group by
    size: int = 0  # sum of the lines' UTF-8 bytes
    breaks: int = 0  # newlines inside lines (none, unless a title carries one)
    text: str | None = None  # the group page's block, while the group is unchanged
    parts: dict[int, _Part] = field(default_factory=dict)  # part number -> its pages

    def add(self, key: tuple[str, str], line: str, part: int, place: int) -> None:
        at = bisect.bisect_left(self.keys, key)
        self.keys.insert(at, key)
        self.lines.insert(at, line)
        self.parts.setdefault(part, _Part()).add(place, key[1], line)
        self._count(line, 1)

    def remove(self, key: tuple[str, str], part: int, place: int) -> None:
        at = bisect.bisect_left(self.keys, key)
        if at < len(self.keys) and self.keys[at] == key:
            del self.keys[at]
            self._count(self.lines.pop(at), -1)
        held = self.parts.get(part)
        if held is not None:
            held.remove(place, key[1])
            if not held.places:
                del self.parts[part]

    def next_slot(self) -> tuple[int, int]:
        """Where a page joining the group goes: the end of the last part, or a new part."""
        if not self.parts:
            return 1, 0
        last = max(self.parts)
        places = self.parts[last].places
        if len(places) >= PART_ENTRIES:
            return last + 1, 0
        return last, places[-1][0] + 1

    def _count(self, line: str, sign: int) -> None:
        self.chars += sign * len(line)
        self.size += sign * len(line.encode("utf-8"))
        self.breaks += sign * line.count("\n")
        self.text = None


def _heading_item(heading: str, count: int) -> str:
    return f"\n## {heading} ({count})\n"


def is_listed(entry: PageEntry | None) -> bool:
    """A page index.md lists (not its own pages, not an unreadable page: lint reports that)."""
    return entry is not None and not is_index_page(entry) and not entry.error


class _Groups:
    """Every listed page in its group and part, and index.md's block and group pages rendered
    from them (a group page or part joined again only when it changed)."""

    def __init__(self) -> None:
        self.groups: dict[str, _Group] = {}  # page type -> group
        self.where: dict[str, tuple[str, tuple[str, str], int, int]] = {}  # page -> (type, sort key, part, place)

    def update(self, entries: dict[str, PageEntry | None],
               slots: Callable[[str], list[Slot | None]]) -> tuple[dict[str, Slot], list[str]]:
        """Put these pages (None: gone) where they belong now; ``slots(name)`` gives where the
        page was found, best first: the first is taken as it is, a later one only while its part
        has room (a merge may have filled it), and a page with neither joins the end of its
        group (those of one call in index.md's order). Returns the slots given or moved, and the
        pages that left the index."""
        placed: dict[str, Slot] = {}
        gone: list[str] = []
        waiting: list[tuple[PageEntry, list[Slot]]] = []
        for name, entry in entries.items():
            old = self.where.pop(name, None)
            if old is not None:
                was = self.groups[old[0]]
                was.remove(old[1], old[2], old[3])
                if not was.keys:
                    del self.groups[old[0]]
            if entry is None or not is_listed(entry):
                gone.append(name)
                continue
            page_type = entry.type or "page"
            found = slots(name)
            first = found[0] if found else None
            if first is not None and first[0] == page_type:
                self._add(entry, first[1], first[2])
                placed[name] = first
                continue
            known = [(old[0], old[2], old[3])] if old is not None else []
            waiting.append((entry, [s for s in [*found[1:], *known] if s is not None and s[0] == page_type]))
        joining: list[PageEntry] = []
        for entry, later in waiting:
            group = self.groups.get(entry.type or "page")
            slot = next((s for s in later if group is None or s[1] not in group.parts
                         or len(group.parts[s[1]].places) < PART_ENTRIES), None)
            if slot is None:
                joining.append(entry)
            else:
                self._add(entry, slot[1], slot[2])
                placed[entry.name] = slot
        for entry in sorted(joining, key=lambda e: (e.title.casefold(), e.name)):
            page_type = entry.type or "page"
            group = self.groups.get(page_type)
            part, place = group.next_slot() if group is not None else (1, 0)
            self._add(entry, part, place)
            placed[entry.name] = (page_type, part, place)
        return placed, gone

    def _add(self, entry: PageEntry, part: int, place: int) -> None:
        page_type = entry.type or "page"
        key = (entry.title.casefold(), entry.name)
        group = self.groups.get(page_type)
        if group is None:
            group = self.groups[page_type] = _Group(_heading_of(page_type))
        group.add(key, _line(entry), part, place)
        self.where[entry.name] = (page_type, key, part, place)

    def render(self) -> tuple[str, dict[str, str]]:
        """index.md's block, and the block of every group page and part it links to."""
        order = [t for t in (*TYPE_HEADINGS, *sorted(set(self.groups) - set(TYPE_HEADINGS))) if t in self.groups]
        groups = [self.groups[t] for t in order]
        moved: set[int] = set()
        while True:
            size, lines = self._measure(groups, moved)
            if (lines <= MAX_INDEX_LINES and size <= MAX_INDEX_BYTES) or len(moved) == len(groups):
                break
            moved.add(max((i for i in range(len(groups)) if i not in moved),
                          key=lambda i: (groups[i].chars, groups[i].heading)))
        out = [INDEX_START]
        pages: dict[str, str] = {}
        for i, group in enumerate(groups):
            out.append(_heading_item(group.heading, len(group.lines)))
            if i in moved:
                out.append(_group_link(group.heading, len(group.lines)))
                pages.update(self._group_pages(group))
            else:
                out += group.lines
        out.append(INDEX_END)
        return "\n".join(out) + "\n", pages

    @staticmethod
    def _group_pages(group: _Group) -> dict[str, str]:
        hub = sub_index_name(group.heading)
        if len(group.lines) <= PART_ENTRIES:  # small enough to list whole, as index.md would
            if group.text is None:
                group.text = _listing(group.heading, group.lines)
            return {hub: group.text}
        numbers = sorted(group.parts)
        if group.text is None:
            group.text = _hub_block(group, hub, numbers)
        pages = {hub: group.text}
        for number in numbers:
            part = group.parts[number]
            if part.text is None:
                part.text = "\n".join([INDEX_START, _heading_item(f"{group.heading}, part {number}", len(part.places)),
                                       *(part.lines[name] for _place, name in part.places), INDEX_END]) + "\n"
            pages[part_name(hub, number)] = part.text
        return pages

    @staticmethod
    def _measure(groups: list[_Group], moved: set[int]) -> tuple[int, int]:
        """UTF-8 bytes and newlines of the block ``render`` joins: its items joined by a
        newline, one more at the end (so each item adds one of each)."""
        items = 2
        size = len(INDEX_START.encode("utf-8")) + len(INDEX_END.encode("utf-8"))
        lines = 0
        for i, group in enumerate(groups):
            heading = _heading_item(group.heading, len(group.lines))
            size += len(heading.encode("utf-8"))
            lines += 2
            if i in moved:
                link = _group_link(group.heading, len(group.lines))
                size, items = size + len(link.encode("utf-8")), items + 2
            else:
                size, items, lines = size + group.size, items + 1 + len(group.lines), lines + group.breaks
        return size + items, lines + items


def _hub_block(group: _Group, hub: str, numbers: list[int]) -> str:
    """A large group's page: its count, the newest pages, and its parts."""
    newest: list[str] = []
    for number in reversed(numbers):
        part = group.parts[number]
        newest += [part.lines[name] for _place, name in reversed(part.places[-(HUB_NEWEST - len(newest)):])]
        if len(newest) >= HUB_NEWEST:
            break
    label = link_label(clean_line(group.heading).text)
    links = [f"- [[{part_name(hub, n)}|{label}, part {n}]] ({len(group.parts[n].places)})" for n in numbers]
    count = len(group.lines)
    return "\n".join([
        INDEX_START, _heading_item(group.heading, count), f"The newest {len(newest)}, newest first:\n", *newest,
        f"\nAll {count}, in {len(numbers)} parts of at most {PART_ENTRIES} (a page keeps its part; new pages "
        "join the last):\n", *links, INDEX_END]) + "\n"


def render_index(entries: list[PageEntry], slots: Mapping[str, Slot] | None = None) -> tuple[str, dict[str, str]]:
    """index.md's generated block, and the generated blocks of the group pages and parts it
    links to (page name -> block; empty when everything fits in index.md), from every entry and
    where each was placed (``slots``; a page without one joins its group's end). Every page is
    listed, on index.md or a page it links to."""
    state = _Groups()
    given = slots or {}
    state.update({e.name: e for e in entries}, lambda name: [given.get(name)])
    return state.render()


def render_index_block(entries: list[PageEntry]) -> str:
    """index.md's generated block (see :func:`render_index` for the group pages)."""
    return render_index(entries)[0]


@dataclass(frozen=True)
class IndexPages:
    """What a commit writes of the index: index.md's block, the group pages and parts whose
    block changed since the builder's last render (all of them after a build from every
    entry), the names of every group page and part the index has now, and those it had at the
    last render and has no more (None after a build: any other on disk goes)."""

    block: str
    pages: dict[str, str]
    kept: frozenset[str]
    dropped: frozenset[str] | None = None


class IndexBuilder:
    """index.md's block and its group pages, as :func:`render_index` builds them from every
    entry, kept from one commit to the next by the catalogue's change log: a commit looks again
    only at the pages whose rows changed since (by any process), moves a page between groups
    when its type changed, and works the budget split out from each group's size, so its cost
    does not grow with the wiki (issue 24). Only a group page or part whose pages changed is
    joined again and handed out to be written."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._seq: int | None = None  # the catalogue change the groups are up to
        self._state = _Groups()
        self._handed: dict[str, str] = {}  # group page -> the block last handed out

    def render(self, *, full: bool = False) -> IndexPages:
        """The index for the catalogue's entries now (``full``: read every entry again instead
        of only the changed ones, and the parts from the part pages, as init, revert, doctor
        and sync ask)."""
        changes = None if full or self._seq is None else self.catalog.changes_since(self._seq)
        built = changes is None
        if changes is None:
            self._build(from_files=full)
        elif any(is_group_page_name(name) and self._changed_elsewhere(name) for name in changes[1]):
            # A group page or part that is not what this builder wrote (a sync merge or a fast-forward
            # brought the other machine's, a person edited it): the parts are read from the pages again.
            self._build(from_files=True)
            built = True
        else:
            self._seq, names = changes
            if names:
                stored = self.catalog.index_parts(names)
                self._keep(self._state.update({n: self.catalog.get(n) for n in names},
                                              lambda name: [stored.get(name)]), stored)
        block, pages = self._state.render()
        # A block not re-joined since it was last handed out is the same object: nothing to write.
        fresh = {name: text for name, text in pages.items() if self._handed.get(name) is not text}
        dropped = None if built else frozenset(set(self._handed) - set(pages))
        self._handed = pages
        return IndexPages(block, fresh, frozenset(pages), dropped)

    def _changed_elsewhere(self, name: str) -> bool:
        """Whether a group page's block on disk differs from the one last handed out (the
        builder's own writes come back through the catalogue's change log too)."""
        try:
            text: str | None = (self.catalog.vault.wiki / f"{name}.md").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        handed = self._handed.get(name)
        if text is None:
            return handed is not None
        return handed is None or block_of(text) + "\n" != handed

    def _build(self, *, from_files: bool) -> None:
        seq = self.catalog.changes_since(-1)
        assert seq is not None
        self._seq = seq[0]
        self._state, self._handed = _Groups(), {}
        entries = self.catalog.entries()
        stored = self.catalog.index_parts()
        listed = [e for e in entries if is_listed(e)]
        found: dict[str, Slot] = {}
        if from_files or any(e.name not in stored for e in listed):
            found = _slots_on_disk(self.catalog.vault.wiki, entries)
        first, second = (found, stored) if from_files else (stored, found)
        placed = self._state.update({e.name: e for e in entries},
                                    lambda name: [first.get(name), second.get(name)])
        self._keep(placed, stored, gone_too=[n for n in stored if n not in placed[0]])

    def _keep(self, placed: tuple[dict[str, Slot], list[str]], stored: Mapping[str, Slot],
              gone_too: list[str] | None = None) -> None:
        """Record the slots given or moved (and forget those of pages no longer listed)."""
        given, gone = placed
        changed = {name: slot for name, slot in given.items() if stored.get(name) != slot}
        removed = sorted({*(n for n in gone if n in stored), *(gone_too or [])})
        if changed or removed:
            self.catalog.set_index_parts(changed, removed)


def _slots_on_disk(wiki: Path, entries: list[PageEntry]) -> dict[str, Slot]:
    """Where the part pages on disk list each page (a page listed twice: its first part)."""
    by_stem: dict[str, PageEntry] = {}
    for entry in entries:
        by_stem.setdefault(entry.stem, entry)
    found: dict[str, Slot] = {}
    for name in group_page_names(wiki):
        part = part_of(name)
        if part is None:
            continue
        try:
            text = (wiki / f"{name}.md").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not text.startswith("---\ntype: index\n"):
            continue  # a person's page in the folder, not one of ours
        hub, number = part
        for place, stem in enumerate(_LISTED_RE.findall(block_of(text))):
            listed = by_stem.get(stem)
            if listed is None or listed.name in found or not is_listed(listed):
                continue
            page_type = listed.type or "page"
            if sub_index_name(_heading_of(page_type)) == hub:
                found[listed.name] = (page_type, number, place)
    return found


_BUILDERS: weakref.WeakKeyDictionary[Catalog, IndexBuilder] = weakref.WeakKeyDictionary()


def index_builder(catalog: Catalog) -> IndexBuilder:
    """The one :class:`IndexBuilder` of this catalogue (kept while the catalogue is open)."""
    builder = _BUILDERS.get(catalog)
    if builder is None:
        builder = _BUILDERS[catalog] = IndexBuilder(catalog)
    return builder
