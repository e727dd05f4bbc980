"""Merging two machines' versions of one vault file, by what the file is (sync's merge rules).

A sync round (``door/sync.py``) hands every path git's merge left conflicted to
:func:`resolve`, with the three versions (base, this machine's, the remote's):

- a file changed on one side and deleted on the other: the changed file stays (no line lost);
- bytes that are not UTF-8 text: the remote's, and a person is told this machine's are in history;
- ``wiki/index.md`` (and its group pages and their parts: ``index-sources.md``,
  ``index/sources-001.md``, …) and ``wiki/overview.md`` merge by their generated block
  (:mod:`.blockmerge`): the text before and after it keeps both machines' lines, never one
  side's whole file; index.md's blocks are rebuilt from the merged pages afterwards (by the
  door), overview.md keeps the remote's block until this machine's next ingest rebuilds it;
- files that only grow at their end (``wiki/log.md`` and its archives — what
  :func:`~wikiwright.core.vaultpaths.is_log_file` names — and the daily logs under ``logs/``):
  the remote's new entries, then this machine's;
- ``REVIEW.md`` and ``.gitignore``: both sides' lines (a union merge);
- pages: by front matter key, by claim and by text (:mod:`.pagemerge`); lines both machines
  changed keep the remote's version and this machine's are returned for REVIEW.md;
- anything else: a three-way text merge, the same rule.

The three-way text merge itself is given (``merge3``: git's ``merge-file`` through ``vcs/``),
so this module never runs a command.
"""

from __future__ import annotations

from ..core.vaultpaths import INDEX_PAGE, OVERVIEW_PAGE, is_log_file
from .blockmerge import Markers, merge_with_block
from .index import INDEX_END, INDEX_START, is_group_page_name
from .logfile import merge_log
from .pagemerge import Merge3, PageMerge, merge_page, merge_plain

# overview.md's generated block (ingest/concepts.py keeps it).
OVERVIEW_START = "<!-- wikiwright:overview:start"
OVERVIEW_END = "<!-- wikiwright:overview:end -->"
# Files that only grow anywhere in them: both sides' lines are kept.
UNION_FILES = ("REVIEW.md", ".gitignore")


def merge_index(base: str, ours: str, theirs: str, merge3: Merge3) -> str:
    """index.md: the person's text before and after the generated block keeps both machines'
    lines; the block is rebuilt from the merged pages afterwards."""
    return merge_with_block(base, ours, theirs, Markers(INDEX_START, INDEX_END), merge3)


def merge_overview(base: str, ours: str, theirs: str, merge3: Merge3) -> str:
    """overview.md: the person's text before and after the generated block keeps both
    machines' lines; the block is the remote's (this machine's next ingest rebuilds it: the
    term index it is built from is the ingest room's)."""
    return merge_with_block(base, ours, theirs, Markers(OVERVIEW_START, OVERVIEW_END), merge3)


def merge_appended(base: str, ours: str, theirs: str, merge3: Merge3) -> str:
    """A file that only grows at its end (log.md, daily logs): the remote's new entries, then ours."""
    if ours.startswith(base) and theirs.startswith(base):
        mine, remote = ours[len(base):], theirs[len(base):]
        if mine == remote:
            return theirs
        if remote and not remote.endswith("\n"):
            remote += "\n"
        return base + remote + mine
    text, _clean = merge3(base, ours, theirs, "union")
    return text


def is_growing_file(path: str) -> bool:
    """A file whose entries are only appended: log.md and its archives, the daily logs."""
    return is_log_file(path) or (path.startswith("logs/") and path.endswith(".md"))


def resolve(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None,
            merge3: Merge3) -> tuple[bytes | None, PageMerge | None]:
    """One conflicted path: the bytes it ends with (None: deleted) and what a person should see
    (None: nothing to review)."""
    if ours is None or theirs is None:
        # Changed on one side, deleted on the other: the changed file stays (no line lost).
        return (theirs if theirs is not None else ours), None
    try:
        b, o, t = (base or b"").decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8")
    except UnicodeDecodeError:
        note = PageMerge("", False, notes=["not text: the remote's bytes kept; this machine's are in its "
                                           "own commit in history"])
        return theirs, note
    if path == INDEX_PAGE or (path.startswith("wiki/") and path.endswith(".md") and is_group_page_name(path[5:-3])):
        return merge_index(b, o, t, merge3).encode("utf-8"), None
    if path == OVERVIEW_PAGE:
        return merge_overview(b, o, t, merge3).encode("utf-8"), None
    if is_log_file(path):  # log.md and its archives: entries, each once, whichever side archived them
        return merge_log(b, o, t, lambda hb, ho, ht: merge3(hb, ho, ht, "union")[0]).encode("utf-8"), None
    if is_growing_file(path):
        return merge_appended(b, o, t, merge3).encode("utf-8"), None
    if path in UNION_FILES:
        text, _clean = merge3(b, o, t, "union")
        return text.encode("utf-8"), None
    if path.startswith("wiki/") and path.endswith(".md"):
        result = merge_page(b, o, t, merge3)
    else:
        result = merge_plain(b, o, t, merge3)
    return result.text.encode("utf-8"), (None if result.clean else result)
