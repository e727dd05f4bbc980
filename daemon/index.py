"""index.md and log.md, built by code from the catalogue, never written by the model.

index.md keeps whatever a person writes outside the generated block; log.md is
append-only: one ``## [YYYY-MM-DD] kind | Title`` entry per operation.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date

from .catalog import Catalog, PageEntry
from .fsutil import atomic_write_text
from .pages import Page, render_page
from .vault import Vault

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
    label = f"[[{entry.stem}]]" if same else f"[[{entry.stem}|{entry.title}]]"
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

    def fits(lines: list[str]) -> bool:
        text = "\n".join(lines)
        return text.count("\n") + 1 <= MAX_INDEX_LINES and len(text.encode("utf-8")) <= MAX_INDEX_BYTES

    caps: dict[str, int] = {}
    short: set[str] = set()
    out = _render_groups(ordered, caps, short)
    # Shorten the largest groups first, summaries before entries.
    for heading, _ in sorted(ordered, key=lambda g: -len(g[1])):
        if fits(out):
            break
        short.add(heading)
        out = _render_groups(ordered, caps, short)
    while not fits(out):
        heading, members = max(ordered, key=lambda g: min(caps.get(g[0], len(g[1])), len(g[1])))
        current = caps.get(heading, len(members))
        if current <= 5:
            break
        caps[heading] = max(5, current - max(1, current // 4))
        out = _render_groups(ordered, caps, short)
    return "\n".join(out) + "\n"


def rebuild_index(vault: Vault, catalog: Catalog) -> bool:
    """Rewrite the generated block of index.md; returns True if the file changed."""
    path = vault.wiki / "index.md"
    current = path.read_text(encoding="utf-8") if path.exists() else empty_page("index")
    block = render_index_block(catalog.entries())
    start, end = current.find(INDEX_START), current.find(INDEX_END)
    if start != -1 and end > start:
        updated = current[:start] + block + current[end + len(INDEX_END) :].lstrip("\n")
    else:
        # A person removed the markers: keep their text and put the block after it.
        updated = current.rstrip("\n") + "\n\n" + block
    if updated == current:
        return False
    atomic_write_text(path, updated)
    return True


def append_log(vault: Vault, kind: str, title: str, details: list[str], when: date | None = None) -> None:
    """Append one entry to log.md (the file is rewritten atomically, earlier bytes kept)."""
    path = vault.wiki / "log.md"
    current = path.read_text(encoding="utf-8") if path.exists() else empty_page("log")
    day = (when or date.today()).isoformat()
    safe_title = title.replace("\n", " ").strip() or "(untitled)"
    entry = f"\n## [{day}] {kind} | {safe_title}\n" + "".join(f"- {d}\n" for d in details)
    if not current.endswith("\n"):
        current += "\n"
    atomic_write_text(path, current + entry)
