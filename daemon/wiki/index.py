"""index.md (and log.md's first text), built by code from the catalogue, never written by the model.

index.md lists every page, one line each with its summary, grouped by type. It stays small
enough to read at a glance (and to load whole into a prompt): when the whole list does not fit
its budget, the largest groups move to a page of their own (``index-sources.md``, …), each
complete, linked from index.md — never "… and N more". index.md and those pages keep whatever a
person writes outside the generated block. (log.md's entries and archives: wiki/logfile.py.)
"""

from __future__ import annotations

import bisect
import functools
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

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
# lines, < 25 KB). Over budget, the largest groups move to their own index pages, complete.
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


def render_index(entries: list[PageEntry]) -> tuple[str, dict[str, str]]:
    """index.md's generated block, and the generated blocks of the group pages it links to
    (page stem -> block; empty when everything fits in index.md). Every page is listed."""
    ordered = [(heading, [_line(e) for e in members]) for heading, members in _ordered(entries)]
    moved: set[str] = set()
    while True:
        block = "\n".join(_render(ordered, moved)) + "\n"
        if _fits(block) or len(moved) == len(ordered):
            break
        heading = max((g for g in ordered if g[0] not in moved), key=lambda g: (sum(map(len, g[1])), g[0]))[0]
        moved.add(heading)
    subs = {sub_index_name(heading): "\n".join(_render([(heading, lines)], set())) + "\n"
            for heading, lines in ordered if heading in moved}
    return block, subs


def _fits(block: str) -> bool:
    return block.count("\n") <= MAX_INDEX_LINES and len(block.encode("utf-8")) <= MAX_INDEX_BYTES


def _render(groups: list[tuple[str, list[str]]], moved: set[str]) -> list[str]:
    out = [INDEX_START]
    for heading, lines in groups:
        out.append(f"\n## {heading} ({len(lines)})\n")
        if heading in moved:
            out.append(_group_link(heading, len(lines)))
        else:
            out += lines
    out.append(INDEX_END)
    return out


def _ordered(entries: list[PageEntry]) -> list[tuple[str, list[PageEntry]]]:
    groups: dict[str, list[PageEntry]] = defaultdict(list)
    for entry in entries:
        if is_index_page(entry):
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
    return ordered


def sub_index_page(stem: str, block: str) -> str:
    """A new group index page: its title and the generated block."""
    heading = stem.removeprefix(SUB_PREFIX).replace("-", " ").capitalize()
    title = f"Index — {heading}"
    return render_page(Page({"type": "index", "title": title},
                            f"# {title}\n\nEvery page of this kind, one line each (from [[index]]).\n\n{block}"))


def render_index_block(entries: list[PageEntry]) -> str:
    """index.md's generated block (see :func:`render_index` for the group pages)."""
    return render_index(entries)[0]


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


# -- index.md kept up to date from the pages that changed ----------------------------------------

@dataclass
class _Group:
    """One type's pages, sorted as index.md lists them, with the sizes the budget needs."""

    heading: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (title folded, name), sorted
    lines: list[str] = field(default_factory=list)  # the rendered line of each, same order
    chars: int = 0  # sum of len(line): what render_index picks the largest group by
    size: int = 0  # sum of the lines' UTF-8 bytes
    breaks: int = 0  # newlines inside lines (none, unless a title carries one)
    text: str | None = None  # the group page's block, while the group is unchanged

    def add(self, key: tuple[str, str], line: str) -> None:
        at = bisect.bisect_left(self.keys, key)
        self.keys.insert(at, key)
        self.lines.insert(at, line)
        self._count(line, 1)

    def remove(self, key: tuple[str, str]) -> None:
        at = bisect.bisect_left(self.keys, key)
        if at < len(self.keys) and self.keys[at] == key:
            del self.keys[at]
            self._count(self.lines.pop(at), -1)

    def _count(self, line: str, sign: int) -> None:
        self.chars += sign * len(line)
        self.size += sign * len(line.encode("utf-8"))
        self.breaks += sign * line.count("\n")
        self.text = None


def _heading_item(heading: str, count: int) -> str:
    return f"\n## {heading} ({count})\n"


class IndexBuilder:
    """index.md's block and its group pages, as :func:`render_index` builds them from every
    entry, kept from one commit to the next by the catalogue's change log: a commit looks again
    only at the pages whose rows changed since (by any process), moves a page between groups
    when its type changed, and works the budget split out from each group's size, so its cost
    does not grow with the wiki (issue 24). Only a group page whose group changed is joined again."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._seq: int | None = None  # the catalogue change the groups are up to
        self._groups: dict[str, _Group] = {}  # page type -> group
        self._where: dict[str, tuple[str, tuple[str, str]]] = {}  # page -> (type, sort key)

    def render(self, *, full: bool = False) -> tuple[str, dict[str, str]]:
        """What :func:`render_index` returns for the catalogue's entries now (``full``: read every
        entry again instead of only the changed ones, as init, revert, doctor and sync ask)."""
        changes = None if full or self._seq is None else self.catalog.changes_since(self._seq)
        if changes is None:
            self._build()
        else:
            self._seq, names = changes
            for name in names:
                self._update(name, self.catalog.get(name))
        return self._render()

    def _build(self) -> None:
        seq = self.catalog.changes_since(-1)
        assert seq is not None
        self._seq = seq[0]
        self._groups, self._where = {}, {}
        for entry in self.catalog.entries():
            self._update(entry.name, entry)

    def _update(self, name: str, entry: PageEntry | None) -> None:
        old = self._where.pop(name, None)
        if old is not None:
            was = self._groups[old[0]]
            was.remove(old[1])
            if not was.keys:
                del self._groups[old[0]]
        if entry is None or is_index_page(entry) or entry.error:
            return
        page_type = entry.type or "page"
        key = (entry.title.casefold(), entry.name)
        group = self._groups.get(page_type)
        if group is None:
            group = self._groups[page_type] = _Group(TYPE_HEADINGS.get(page_type, page_type.title() or "Pages"))
        group.add(key, _line(entry))
        self._where[name] = (page_type, key)

    def _render(self) -> tuple[str, dict[str, str]]:
        order = [t for t in (*TYPE_HEADINGS, *sorted(set(self._groups) - set(TYPE_HEADINGS))) if t in self._groups]
        groups = [self._groups[t] for t in order]
        moved: set[int] = set()
        while True:
            size, lines = self._measure(groups, moved)
            if (lines <= MAX_INDEX_LINES and size <= MAX_INDEX_BYTES) or len(moved) == len(groups):
                break
            moved.add(max((i for i in range(len(groups)) if i not in moved),
                          key=lambda i: (groups[i].chars, groups[i].heading)))
        out = [INDEX_START]
        subs: dict[str, str] = {}
        for i, group in enumerate(groups):
            out.append(_heading_item(group.heading, len(group.lines)))
            if i in moved:
                out.append(_group_link(group.heading, len(group.lines)))
                if group.text is None:
                    group.text = "\n".join(_render([(group.heading, group.lines)], set())) + "\n"
                subs[sub_index_name(group.heading)] = group.text
            else:
                out += group.lines
        out.append(INDEX_END)
        return "\n".join(out) + "\n", subs

    @staticmethod
    def _measure(groups: list[_Group], moved: set[int]) -> tuple[int, int]:
        """UTF-8 bytes and newlines of the block ``_render`` joins: its items joined by a
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


_BUILDERS: weakref.WeakKeyDictionary[Catalog, IndexBuilder] = weakref.WeakKeyDictionary()


def index_builder(catalog: Catalog) -> IndexBuilder:
    """The one :class:`IndexBuilder` of this catalogue (kept while the catalogue is open)."""
    builder = _BUILDERS.get(catalog)
    if builder is None:
        builder = _BUILDERS[catalog] = IndexBuilder(catalog)
    return builder
