"""index.md (and log.md's first text), built by code from the catalogue, never written by the model.

index.md lists every page, one line each with its summary, grouped by type. It stays small
enough to read at a glance (and to load whole into a prompt): when the whole list does not fit
its budget, the largest groups move to a page of their own (``index-sources.md``, …), each
complete, linked from index.md — never "… and N more". index.md and those pages keep whatever a
person writes outside the generated block. (log.md's entries and archives: wiki/logfile.py.)
"""

from __future__ import annotations

import functools
from collections import defaultdict

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
