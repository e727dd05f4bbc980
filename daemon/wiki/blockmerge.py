"""Merging two machines' versions of a file with a generated block (index.md, overview.md).

Such a file is three parts: the person's text before the block, the block (built by code,
between a start and an end marker line) and the person's text after it. A line merge of the
whole file goes wrong as soon as one version has the block and another does not (the merge
base of a fresh vault has none): the marker lines then pair up with the wrong neighbours and
the result holds two start markers or none. So the parts are merged separately:

- the text before and the text after the block each keep both machines' lines (a union
  three-way merge: a line only one side removed is removed, every line anyone added stays);
  a version without a block is all "before" text;
- the block is the remote's (the published one), or this machine's when the remote has none;
  the caller rebuilds it from the merged wiki where it can (index.md);
- front matter merges key by key (``wiki/pagemerge.merge_meta``), so a key both sides set
  is never written twice.

The result has exactly one block when either side had one, and never one side's whole file
in place of the other's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..wiki.pagemerge import Merge3, merge_meta
from ..wiki.pages import FrontMatterError, Page, parse_page, render_page


@dataclass(frozen=True)
class Markers:
    start: str  # the start marker line begins with this (its wording after the key may change)
    end: str  # the end marker line, exactly

    def is_start(self, row: str) -> bool:
        return row.strip().startswith(self.start)

    def is_end(self, row: str) -> bool:
        return row.strip() == self.end


@dataclass(frozen=True)
class _Parts:
    before: str
    block: str  # '' when the text has no well-formed block
    after: str


def split_block(text: str, markers: Markers) -> _Parts:
    """The text before the first well-formed block, the block (marker lines included), the rest.

    Stray marker lines outside it (a person's copy, a half-deleted block) are dropped from
    the text parts: they are generated markup, not words, and would make a second block.
    """
    rows = text.splitlines(keepends=True)
    start = next((i for i, row in enumerate(rows) if markers.is_start(row)), None)
    end = None if start is None else next((i for i in range(start + 1, len(rows)) if markers.is_end(rows[i])), None)
    if start is None or end is None:
        before, block, after = rows, [], []
    else:
        before, block, after = rows[:start], rows[start:end + 1], rows[end + 1:]

    def words(part: list[str]) -> str:
        return "".join(row for row in part if not (markers.is_start(row) or markers.is_end(row)))

    joined = "".join(block)
    if joined and not joined.endswith("\n"):
        joined += "\n"
    return _Parts(words(before), joined, words(after))


def _body_and_meta(text: str) -> tuple[str, dict[str, object] | None]:
    if not text.startswith("---"):
        return text, None
    try:
        page = parse_page(text)
    except FrontMatterError:
        return text, None
    return page.body, dict(page.meta)


def merge_with_block(base: str, ours: str, theirs: str, markers: Markers, merge3: Merge3) -> str:
    """Merge three versions of a file with a generated block; see the module docstring."""
    (b_body, b_meta), (o_body, o_meta), (t_body, t_meta) = (_body_and_meta(t) for t in (base, ours, theirs))
    with_meta = o_meta is not None and t_meta is not None
    if not with_meta:
        # A side whose front matter does not parse: the whole text is merged as text.
        b_body, o_body, t_body = base, ours, theirs
    b, o, t = (split_block(text, markers) for text in (b_body, o_body, t_body))
    before, _clean = merge3(b.before, o.before, t.before, "union")
    after, _clean = merge3(b.after, o.after, t.after, "union")
    block = t.block or o.block
    if block and before and not before.endswith("\n"):
        before += "\n"
    body = before + block + after
    if not with_meta:
        return body
    meta = merge_meta(b_meta or {}, o_meta or {}, t_meta or {}, [])
    return render_page(Page(meta, body))
