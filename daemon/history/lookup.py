"""Lookups that revert and retract make over the whole wiki or the whole history, kept off the
per-page cost: at 1,000 sources a vault has 2,000 pages and 1,000 commits, and reading every
page in Python or walking every commit once per page was most of a revert's time.

- :func:`bodies_mentioning`: the pages whose text contains a word, found by one
  ``git grep --no-index`` over wiki/ (C, on the files as they are on disk, tracked or not)
  instead of reading every page; a superset is fine, callers check each page exactly.
- :class:`PersonEdits`: which pages a person (any author but wikiwright) ever changed, from one
  listing of the commits and the file lists of the person's commits only; a path-limited
  ``git log`` diffs the trees of every commit in the history, once per page asked about.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from ..door import Operation
from ..vcs.queries import commit_authors, files_containing, paths_changed_by

log = logging.getLogger(__name__)


def pages_mentioning(session: Operation, words: Iterable[str], *, top_level: bool = False) -> set[str] | None:
    """Pages whose text contains any of ``words`` (ASCII case-insensitively), only those
    directly in wiki/ with ``top_level``; None when git cannot answer exactly (a word that is
    not ASCII: git's ``-i`` folds ASCII only)."""
    wanted = sorted({w.casefold() for w in words if w})
    if not wanted:
        return set()
    if not all(word.isascii() for word in wanted):
        return None
    vault = session.vault
    wiki = vault.rel(vault.wiki)
    found = files_containing(session.repo, wanted, wiki, top_level=top_level)
    if found is None:
        log.info("git grep over %s failed; reading every page instead", wiki)
        return None
    names = set()
    prefix = f"{wiki}/"
    for path in found:
        if not path.startswith(prefix) or not path.endswith(".md"):
            continue
        name = path[len(prefix):-3]
        if not any(part.startswith(".") for part in name.split("/")):  # as the catalogue skips them
            names.add(name)
    return names


def read_pages(session: Operation, names: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(name, text on disk) of the pages named that exist, in name order."""
    for name in sorted(set(names)):
        try:
            text = session.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            continue
        yield name, text


def bodies_mentioning(session: Operation, words: Iterable[str], also: Iterable[str] = ()) -> Iterator[tuple[str, str]]:
    """(name, text on disk) of the pages that may contain one of ``words`` (case-insensitive)
    and of the pages ``also`` names, in name order; every page when git grep cannot tell."""
    found = pages_mentioning(session, words)
    if found is None:
        yield from session.catalog.iter_bodies()
    else:
        yield from read_pages(session, found | set(also))


class PersonEdits:
    """Pages any author but wikiwright changed in this history (one per operation)."""

    def __init__(self, session: Operation) -> None:
        self.session = session
        self._head: str | None = None
        self._paths: set[str] = set()

    def touched(self, page: str) -> bool:
        """True if any commit that changed ``wiki/<page>.md`` is not wikiwright's (a person's
        edit, here or on another machine); uncommitted edits are committed as theirs by
        ``read``, so the page is read first and commits made since the last look are added."""
        self.session.read(page)
        head = self.session.repo.head()
        if head is not None and head != self._head:
            self._add(f"{self._head}..{head}" if self._head else head)
            self._head = head
        return f"wiki/{page}.md" in self._paths

    def _add(self, revisions: str) -> None:
        repo = self.session.repo
        daemon = self.session.config.git.author_name
        person = [c.sha for c in commit_authors(repo, revisions) if c.author != daemon]
        # A person's merge counts the files it changed against either parent (at worst a page
        # is kept with a note where it could have gone); a first commit counts its files.
        self._paths |= paths_changed_by(repo, person)
