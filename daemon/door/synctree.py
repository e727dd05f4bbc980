"""What a sync round lets into this vault: the remote's tree, screened entry by entry.

Another machine's commit is untrusted input (a teammate's compromised laptop, a compromised
git host). Before anything is written, committed into HEAD, put in the person's git index or
read into any index, every entry that would change from HEAD is screened (pure git object
reads through ``vcs/merge.py``; never ``read-tree`` of the remote's tree, which a name like
``.GIT/x`` makes fail):

- the path: the allow-list and path rules of :mod:`..core.vaultpaths` (``.git`` in any case,
  ``..``, hidden folders, ``.wikiwright/``, ``.obsidian/``, control characters, long names);
- the mode: regular files only (an executable bit is dropped: 100644); symbolic links and
  gitlinks (submodules) are refused;
- the count: a round bringing more than ``git.sync_max_new_files`` new files takes none;
- the bytes: pages within ``lint.max_page_bytes``, raw/ text within ``git.commit_raw_max_bytes``,
  the rest within ``git.sync_max_file_bytes``; UTF-8 text;
- markdown runs through the one sanitizer (``wiki/sanitize.py``): a page the sanitizer would
  change in a way this machine's version does not already carry is held — the local page stays,
  the remote's version is quoted in REVIEW.md as text;
- a new page's name passes the page-name rules (linkable, NFC, one script, not a look-alike);
- ``.gitignore``: only the daemon's generated section is taken; the person's lines stay this
  machine's;
- REVIEW.md: a tick on one of this machine's open proposals whose fix acts on what only this
  machine vouches for (a held-back model operation, a page text, a costly source) is undone: only
  a tick made here (the person's edit, committed under their name) approves those.

What is refused keeps this machine's entry (or stays absent) in the tree that is committed,
so HEAD never holds it; the caller records every refusal in the commit, status and REVIEW.md.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.config import Config
from ..core.errors import UnsafePathError
from ..core.logsetup import escape_controls
from ..core.vault import GITIGNORE_LINES
from ..core.vaultpaths import GENERATED_PAGES, safe_target, sync_kind, sync_problem
from ..intake import rawgit
from ..intake.ledger import SYNC_REFUSED_KEY, Ledger
from ..vcs.merge import REGULAR, Entry, blob_sizes, write_blob
from ..vcs.repo import GitRepo
from ..wiki.reviewfile import parse_review
from ..wiki.sanitize import clean_markdown, link_target_problem, lookalike_problem, skeleton

_Refuse = Callable[..., None]  # (path, why, blob='', quote=False)
ReadBlobs = Callable[[GitRepo, list[str]], dict[str, bytes]]
# Built by code or only growing: bounded by git.sync_max_file_bytes, not by the page limit.
_GROWING = GENERATED_PAGES
# Never removed by another machine (a folder in their place would stop every write to them).
_KEPT = (*_GROWING, "REVIEW.md", "SCHEMA.md", ".gitignore")


REFUSED_KEY = SYNC_REFUSED_KEY  # what the last rounds refused from the remote, for status (JSON)
REFUSED_KEPT = 50
REFUSED_HEADING = "Refused from the remote by sync"


def record_refusals(ledger: Ledger, rows: Iterable[tuple[str, str, str]]) -> None:
    """The one record of what sync refused from the remote, for status: entries of a tree and
    claims of a trailer alike, ``(what, why, commit)`` each; the newest ``REFUSED_KEPT`` kept."""
    value = refusals_record(ledger, rows)
    if value is not None:
        ledger.set_kv(REFUSED_KEY, value)


def refusals_record(ledger: Ledger, rows: Iterable[tuple[str, str, str]]) -> str | None:
    """The value of ``REFUSED_KEY`` with ``rows`` recorded (None: no rows), for a journaled
    ledger call made with the commit that refused them."""
    rows = list(rows)
    if not rows:
        return None
    try:
        data = json.loads(ledger.get_kv(REFUSED_KEY, "{}"))
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    items = [*data.get("items", []), *({"path": escape_controls(what)[:300], "why": why[:300], "commit": commit}
                                       for what, why, commit in rows)][-REFUSED_KEPT:]
    return json.dumps({"items": items, "total": int(data.get("total", 0)) + len(rows), "last": time.time()})


@dataclass(frozen=True)
class Refusal:
    path: str
    why: str
    blob: str = ""  # the remote's bytes (quoted in REVIEW.md when ``quote``)
    quote: bool = False


@dataclass
class Screened:
    entries: dict[str, Entry]  # the tree to commit, path -> entry
    refused: list[Refusal] = field(default_factory=list)
    changed: bool = False  # entries differ from the candidate the screen was given


def git_path_ok(path: str) -> bool:
    """An entry git itself accepts in an index (this machine's own entries: kept as they are)."""
    for part in path.split("/"):
        if part in ("", ".", "..") or part.casefold().rstrip(" .") == ".git":
            return False
    return "\0" not in path


def gitignore_person_lines(text: str) -> list[str]:
    """A .gitignore's lines outside the daemon's generated section."""
    rows, inside = [], False
    for row in text.splitlines():
        if row.startswith(rawgit.SECTION_START.split(" (")[0]):
            inside = True
        elif inside and row.strip() == rawgit.SECTION_END:
            inside = False
        elif not inside:
            rows.append(row)
    return rows


def allowed_gitignore(head_text: str | None) -> str:
    """The .gitignore a merge may commit: this machine's (the person's lines) with the section."""
    base = head_text if head_text is not None else "".join(f"{line}\n" for line in GITIGNORE_LINES)
    updated = rawgit.with_section(base)
    return updated if updated is not None else base


class Screen:
    """One round's screen: HEAD's entries, the candidate's, and this vault's limits."""

    def __init__(self, config: Config, repo: GitRepo, root: Path, read_blobs: ReadBlobs,
                 guarded: Iterable[str] = ()) -> None:
        self.config = config
        self.repo = repo
        self.root = root
        self._read = read_blobs
        # This machine's open REVIEW.md items whose fix acts on something only this machine
        # vouches for (a held-back model operation, a page text, a costly source): a tick on
        # them counts only when made here, never when it arrives in another machine's file.
        self.guarded = frozenset(guarded)

    def run(self, head: dict[str, Entry], candidate: dict[str, Entry]) -> Screened:
        final = dict(candidate)
        refused: list[Refusal] = []

        def refuse(path: str, why: str, blob: str = "", quote: bool = False) -> None:
            refused.append(Refusal(path, why, blob, quote))
            if path in head:
                final[path] = head[path]
            else:
                final.pop(path, None)

        changed = sorted(p for p in {*head, *candidate} if head.get(p) != candidate.get(p))
        content: list[str] = []
        for path in changed:
            new = candidate.get(path)
            why = sync_problem(path)
            if why:
                refuse(path, why, new[1] if new else "")
                continue
            if new is None:
                if path in _KEPT and path in head:
                    refuse(path, "the remote removed a file every vault keeps")
                continue  # removed on the remote: an allowed path may go
            mode, blob = new
            if mode == "120000":
                refuse(path, "a symbolic link (sync brings regular files only)", blob)
                continue
            if mode == "160000":
                refuse(path, "a submodule (gitlink); sync brings regular files only", blob)
                continue
            if mode not in (REGULAR, "100755"):
                refuse(path, f"mode {mode} is not a regular file", blob)
                continue
            if mode != REGULAR:
                final[path] = (REGULAR, blob)  # never an executable from another machine
            try:
                safe_target(self.root, path)
            except UnsafePathError as exc:
                refuse(path, str(exc).split(": ", 1)[-1], blob)
                continue
            content.append(path)
        for path in [p for p in final if not git_path_ok(p)]:
            del final[path]  # an entry no index can hold (left by an older sync): HEAD drops it
        content = self._limit_new(head, candidate, content, refuse)
        self._check_bytes(head, candidate, content, final, refuse)
        self._folders(head, candidate, final, refuse)
        self._collisions(head, final, refuse)
        return Screened(final, refused, final != candidate)

    # -- the checks -------------------------------------------------------------------------

    def _limit_new(self, head: dict[str, Entry], candidate: dict[str, Entry], paths: list[str],
                   refuse: _Refuse) -> list[str]:
        limit = self.config.git.sync_max_new_files
        new = [p for p in paths if p not in head]
        if len(new) <= limit:
            return paths
        why = (f"one of {len(new)} new files in one round, over git.sync_max_new_files ({limit}); none was "
               "taken")
        for path in new:
            refuse(path, why, candidate[path][1])
        return [p for p in paths if p in head]

    def _limit_of(self, path: str, kind: str) -> tuple[int, str]:
        git_config = self.config.git
        if kind == "raw":
            return git_config.commit_raw_max_bytes, "git.commit_raw_max_bytes"
        if kind == "page" and path not in _GROWING:
            return self.config.lint.max_page_bytes, "lint.max_page_bytes"
        return git_config.sync_max_file_bytes, "git.sync_max_file_bytes"

    def _check_bytes(self, head: dict[str, Entry], candidate: dict[str, Entry], paths: list[str],
                     final: dict[str, Entry], refuse: _Refuse) -> None:
        sizes = blob_sizes(self.repo, [candidate[p][1] for p in paths])
        readable = []
        for path in paths:
            blob = candidate[path][1]
            limit, name = self._limit_of(path, sync_kind(path))
            size = sizes.get(blob, 0)
            if size > limit:
                refuse(path, f"{size} bytes, over {name} ({limit})", blob)
            else:
                readable.append(path)
        wanted = [candidate[p][1] for p in readable]
        wanted += [head[p][1] for p in readable if p in head and sync_kind(p) in ("page", "review", "schema", "log",
                                                                                  "gitignore")]
        data = self._read(self.repo, wanted)
        existing = self._page_names(head) if any(p not in head and sync_kind(p) == "page" for p in readable) else {}
        for path in readable:
            blob = candidate[path][1]
            kind = sync_kind(path)
            raw = data[blob]
            if b"\0" in raw:
                refuse(path, "binary (a NUL byte); sync brings text only", blob)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                refuse(path, "not UTF-8 text; sync brings text only", blob)
                continue
            if kind == "raw":
                continue  # a source: ingest reads and sanitises it like any dropped file
            old = data.get(head[path][1], b"").decode("utf-8", "replace") if path in head else None
            if kind == "gitignore":
                allowed = allowed_gitignore(old)
                if text != allowed:
                    if gitignore_person_lines(text) != gitignore_person_lines(allowed):
                        refuse(path, "only the daemon's generated section of .gitignore is taken from another "
                               "machine; its other lines stay this machine's", blob)
                    final[path] = (REGULAR, self._store(allowed.encode("utf-8")))
                continue
            if kind == "review" and self.guarded:
                # Only this machine answers its guarded proposals: another machine's removal of
                # one (a dismissal) is put back, its tick on one undone.
                for undo, why in ((remote_removals_undone, "another machine removed this machine's proposal(s) "
                                   "{ids} from REVIEW.md: they stay until they are answered here"),
                                  (remote_ticks_undone, "a tick from another machine on this machine's proposal(s) "
                                   "{ids}: they act on what only this machine holds, so only a tick made here "
                                   "approves them")):
                    kept, ids = undo(text, old or "", self.guarded)
                    if ids:
                        refuse(path, why.format(ids=", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")), blob)
                        final[path] = (REGULAR, self._store(kept.encode("utf-8")))
                        text = kept
            if kind == "page" and path not in head:
                problem = self._name_problem(path, existing)
                if problem:
                    refuse(path, problem, blob, True)
                    continue
            notes = self._new_markup(text, old)
            if notes:
                refuse(path, "unsafe markup: " + "; ".join(notes[:4]) + (" …" if len(notes) > 4 else ""),
                       blob, True)

    def _new_markup(self, text: str, old: str | None) -> list[str]:
        """What the sanitizer would change in ``text`` that it would not in this machine's version."""
        allow = self.config.pages.allow_remote_images
        notes = clean_markdown(text, allow_remote_images=allow).notes
        if not notes:
            return []
        known = set(clean_markdown(old, allow_remote_images=allow).notes) if old else set()
        return [note for note in notes if note not in known]

    def _page_names(self, head: dict[str, Entry]) -> dict[str, str]:
        names: dict[str, str] = {}
        for path in head:
            if path.startswith("wiki/") and path.endswith(".md"):
                stem = path.rsplit("/", 1)[-1][:-3]
                names.setdefault(skeleton(stem), stem)
        return names

    def _name_problem(self, path: str, existing: dict[str, str]) -> str:
        stem = path.rsplit("/", 1)[-1][:-3]
        problem = link_target_problem(stem) or lookalike_problem(stem, [])
        if problem:
            return problem
        other = existing.get(skeleton(stem))
        if other is not None and other != stem:
            return f"page name {stem!r} looks like the existing page {other!r}"
        existing.setdefault(skeleton(stem), stem)
        return ""

    def _folders(self, head: dict[str, Entry], candidate: dict[str, Entry], final: dict[str, Entry],
                 refuse: _Refuse) -> None:
        """A file kept from HEAD where the remote made a folder: the remote's files under it wait."""
        files = set(final)
        for path in sorted(final):
            if final[path] == head.get(path):
                continue
            parts = path.split("/")
            for depth in range(1, len(parts)):
                if "/".join(parts[:depth]) in files:
                    refuse(path, f"{'/'.join(parts[:depth])} is a file on this machine, not a folder",
                           final[path][1])
                    break

    def _collisions(self, head: dict[str, Entry], final: dict[str, Entry], refuse: _Refuse) -> None:
        """A remote path that differs from another only by case or Unicode normalisation (NFC
        against NFD) is one file on a case-insensitive or normalising filesystem (macOS, Windows):
        writing it would overwrite the other. The path this machine already has wins; of two new
        ones, the first in sorted order."""
        seen: dict[str, str] = {}
        for path in sorted(final, key=lambda p: (p not in head, p)):
            folded = unicodedata.normalize("NFC", path).casefold()
            other = seen.setdefault(folded, path)
            if other != path and path not in head:  # two such names already here are the person's
                refuse(path, f"differs from {other} only by case or Unicode normalisation (one file on "
                             "macOS and Windows)", final[path][1])

    def _store(self, data: bytes) -> str:
        return write_blob(self.repo, data)


def remote_ticks_undone(text: str, ours: str, guarded: frozenset[str]) -> tuple[str, list[str]]:
    """``text`` (a REVIEW.md from another machine, or merged with one) with every guarded item's
    line, and its option lines, back to the answer ``ours`` (this machine's) gives it where
    ``text`` approves it and ``ours`` does not; and the ids so undone."""
    lines, mine = parse_review(text), parse_review(ours)
    undone = []
    for ident in sorted(guarded & set(lines)):
        line, own = lines[ident], mine.get(ident)
        if (line.answer == "approve" or line.chosen) and (own is None or not (own.answer == "approve" or own.chosen)):
            undone.append(ident)
    if not undone:
        return text, []
    rows = text.splitlines(keepends=True)
    for number, row in enumerate(rows):
        match = _ANSWER_RE.match(row)
        if match and match.group("id") in undone:
            rows[number] = row[:match.start("mark")] + " " + row[match.end("mark"):]
    return "".join(rows), undone


def remote_removals_undone(text: str, ours: str, guarded: frozenset[str]) -> tuple[str, list[str]]:
    """``text`` with every guarded item this machine's REVIEW.md (``ours``) shows and ``text``
    lacks put back at its end, its option lines with it; and the ids so restored. Removing a
    line is how a person dismisses an item, so another machine's removal of one of this
    machine's guarded items would answer it; only this machine may."""
    missing = sorted(guarded & set(parse_review(ours)) - set(parse_review(text)))
    if not missing:
        return text, []
    rows = [row for row in ours.splitlines(keepends=True)
            if (match := _ANSWER_RE.match(row)) and match.group("id") in missing]
    restored = text.rstrip("\n") + "\n\n" + "".join(row if row.endswith("\n") else row + "\n" for row in rows)
    return restored, missing


# An item or option line's answer box and id (wiki/reviewfile.py's format: "- [x] … ^id[-key]").
_ANSWER_RE = re.compile(r"^[ \t]*[-*+][ \t]*\[(?P<mark>[^\]\n]{0,3})\].*?[ \t]+\^(?P<id>[a-z][a-z0-9-]*?-[0-9a-f]{10})"
                        r"(?:-[a-z][a-z0-9]{0,7})?[ \t]*$")
