"""REVIEW.md: proposals waiting for a person, and what happens when they answer.

A proposal is one checkbox line ending in an Obsidian block id, ``- [ ] text ^<id>``, under
a ``## <kind>`` heading. The id is the lint finding's stable id (or a hash of a held-back
change), so the same finding is never added twice. The daemon owns only lines whose id it
wrote (kept in the ``review_items`` table of the state database); everything else in the
file belongs to the person and is never changed. Daemon writes re-read the file right
before the atomic rename and redo their edit on the person's newer text if it changed.

Answers: ``- [x]`` applies the proposed fix as one commit; ``- [-]`` or deleting the line
rejects it: log.md records the rejection and the id is never proposed again. Findings a
person dismissed or rejected are also left out of ``wikiwright lint``'s report.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from ..core.config import Config
from ..core.errors import CommitPaused, FixNotApplicable
from ..core.fsutil import atomic_write_text
from ..core.locks import vault_write_lock
from ..core.sqlitedb import open_db
from ..core.vault import Vault
from ..intake.ledger import Ledger
from ..upkeep.lint import KIND_HEADINGS, LINT_KINDS, Finding, LintReport, finding_id, norm_value, run_lint
from ..vcs.repo import GitRepo
from ..wiki.catalog import Catalog
from ..wiki.index import append_log, rebuild_index
from ..wiki.pages import (
    WIKILINK_RE,
    FrontMatterError,
    Page,
    get_section,
    iter_links,
    link_key,
    parse_claims,
    parse_page,
    render_page,
    set_section,
    slugify,
    unique_name,
)
from ..wiki.writer import PageChange, PageWriter

log = logging.getLogger(__name__)

HEADER = "# Review\n\nProposals waiting for a person. Tick `- [x]` to approve, mark `- [-]` to reject.\n"
HELD_BACK = "held-back"
HEADINGS = {**KIND_HEADINGS, HELD_BACK: "Held back by ingest checks", "prose-contradiction": "Contradictions in prose"}
SUPPRESSED_STATES = ("rejected", "dismissed")
_ITEM_RE = re.compile(
    r"^(?P<lead>[ \t]*[-*+][ \t]*)\[(?P<mark>[^\]\n]{0,3})\](?P<text>.*?)"
    r"[ \t]+\^(?P<id>[a-z][a-z0-9-]*-[0-9a-f]{10})[ \t]*$"
)
_HEADING_RE = re.compile(r"^#{1,6}[ \t]")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS review_items (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    description TEXT NOT NULL,
    pages TEXT NOT NULL DEFAULT '[]',
    fix TEXT NOT NULL DEFAULT '{}',    -- JSON: what approving does; {} = nothing to apply
    state TEXT NOT NULL,               -- open | applied | dismissed | rejected | resolved
    note TEXT NOT NULL DEFAULT '',
    commit_sha TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
"""
@dataclass(frozen=True)
class Proposal:
    id: str
    kind: str
    description: str
    pages: tuple[str, ...] = ()
    fix: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_finding(cls, finding: Finding) -> Proposal:
        return cls(finding.id, finding.kind, finding.message, finding.pages, dict(finding.fix))


def proposal(kind: str, description: str, pages: Iterable[str] = (), fix: Mapping[str, Any] | None = None,
             facts: Mapping[str, Any] | None = None) -> Proposal:
    """A proposal whose id is a hash of ``kind`` and ``facts`` (default: description and pages)."""
    pages = tuple(pages)
    facts = facts if facts is not None else {"description": description, "pages": list(pages)}
    return Proposal(finding_id(kind, facts), kind, " ".join(description.split()), pages, dict(fix or {}))


@dataclass(frozen=True)
class ReviewLine:
    id: str
    mark: str
    text: str
    number: int  # 0-based line index

    @property
    def answer(self) -> str:
        mark = self.mark.strip().lower()
        if mark in ("x", "✓", "✔"):
            return "approve"
        if mark in ("-", "~"):
            return "reject"
        return "open"


@dataclass(frozen=True)
class Item:
    id: str
    kind: str
    description: str
    pages: tuple[str, ...]
    fix: dict[str, Any]
    state: str


def parse_review(text: str) -> dict[str, ReviewLine]:
    """Our proposal lines by id (the first line wins if a person copied one)."""
    found: dict[str, ReviewLine] = {}
    for number, line in enumerate(text.splitlines()):
        match = _ITEM_RE.match(line)
        if match and match.group("id") not in found:
            found[match.group("id")] = ReviewLine(
                match.group("id"), match.group("mark"), match.group("text").strip(), number
            )
    return found


def render_line(item: Proposal) -> str:
    return f"- [ ] {' '.join(item.description.split())} ^{item.id}"


def insert_lines(text: str, heading: str, lines: list[str]) -> str:
    """Add ``lines`` at the end of the ``## heading`` section (made at the end if missing)."""
    rows = text.splitlines()
    title = f"## {heading}"
    start = next((i for i, row in enumerate(rows) if row.strip().casefold() == title.casefold()), None)
    if start is None:
        while rows and not rows[-1].strip():
            rows.pop()
        rows += ["", title, "", *lines]
        return "\n".join(rows) + "\n"
    end = next((i for i in range(start + 1, len(rows)) if _HEADING_RE.match(rows[i])), len(rows))
    last = end
    while last > start + 1 and not rows[last - 1].strip():
        last -= 1
    if last == start + 1:
        rows[last:last] = ["", *lines]
    else:
        rows[last:last] = lines
    return "\n".join(rows) + "\n"


def replace_line(text: str, item_id: str, make: Callable[[ReviewLine], str]) -> str:
    line = parse_review(text).get(item_id)
    if line is None:
        return text
    rows = text.splitlines(keepends=True)
    ending = "\n" if rows[line.number].endswith("\n") else ""
    rows[line.number] = make(line) + ending
    return "".join(rows)


def _short(text: str, limit: int = 90) -> str:
    flat = re.sub(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]", r"\1", " ".join(text.split()))
    flat = flat.split("; fix:")[0].split("; tick to")[0]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# -- the store ------------------------------------------------------------------------------

class ReviewStore:
    """The ``review_items`` table in the state database: every proposal and its answer."""

    def __init__(self, db_path: Path) -> None:
        self._db = open_db(db_path, _SCHEMA)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, item_id: str) -> Item | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, kind, description, pages, fix, state FROM review_items WHERE id=?", (item_id,)
            ).fetchone()
        return self._item(row) if row else None

    @staticmethod
    def _item(row: tuple[Any, ...]) -> Item:
        return Item(row[0], row[1], row[2], tuple(json.loads(row[3])), json.loads(row[4]), row[5])

    def items(self, state: str | None = None) -> list[Item]:
        query = "SELECT id, kind, description, pages, fix, state FROM review_items"
        args: tuple[str, ...] = ()
        if state:
            query += " WHERE state=?"
            args = (state,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY created_at, id", args).fetchall()
        return [self._item(r) for r in rows]

    def ids(self, states: Iterable[str]) -> set[str]:
        wanted = list(states)
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._db.execute(f"SELECT id FROM review_items WHERE state IN ({marks})", wanted).fetchall()
        return {r[0] for r in rows}

    def add(self, item: Proposal) -> None:
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO review_items(id, kind, description, pages, fix, state, created_at, updated_at)"
                " VALUES (?,?,?,?,?,'open',?,?)",
                (item.id, item.kind, item.description, json.dumps(list(item.pages)),
                 json.dumps(dict(item.fix), default=str), now, now),
            )

    def set_state(self, item_id: str, state: str, note: str = "", commit_sha: str = "") -> None:
        with self._lock:
            self._db.execute(
                "UPDATE review_items SET state=?, note=?, commit_sha=?, updated_at=? WHERE id=?",
                (state, note, commit_sha, time.time(), item_id),
            )


def suppressed_ids(vault: Vault) -> set[str]:
    """Ids a person rejected or dismissed: never proposed again, left out of lint reports."""
    if not vault.db_path.exists():
        return set()
    store = ReviewStore(vault.db_path)
    try:
        return store.ids(SUPPRESSED_STATES)
    finally:
        store.close()


# -- editing REVIEW.md safely ---------------------------------------------------------------------

def _thread_lock(vault: Vault) -> contextlib.AbstractContextManager[None]:
    return vault_write_lock(vault.state)


def review_lock(vault: Vault) -> contextlib.AbstractContextManager[None]:
    """One writer of REVIEW.md (and of pages and commits) at a time: the vault's write lock."""
    return vault_write_lock(vault.state)


def retarget_links(text: str, target: str, page: str) -> str:
    """Point every ``[[target…]]`` in ``text`` at ``page``, keeping what the link displays."""
    key = link_key(target)

    def repoint(match: re.Match[str]) -> str:
        embed, name, heading, label = match.group(1), match.group(2), match.group(3) or "", match.group(4)
        if link_key(name.strip().removesuffix(".md")) != key:
            return match.group(0)
        shown = label if label is not None else name.strip() + (heading if heading else "")
        return f"{embed}[[{page}{heading}|{shown}]]"

    return WIKILINK_RE.sub(repoint, text)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def edit_review(vault: Vault, mutate: Callable[[str], str]) -> bool:
    """Apply ``mutate`` to REVIEW.md's text and write it atomically; True if it changed.

    The file is re-read right before the write; if a person saved meanwhile, the edit is
    redone on their text, so their words are never overwritten.
    """
    path = vault.review_file
    with review_lock(vault):
        for _ in range(10):
            before = _read(path)
            after = mutate(before if before is not None else HEADER)
            if after == before:
                return False
            if _read(path) != before:
                continue
            atomic_write_text(path, after)
            return True
    log.warning("REVIEW.md kept changing while wikiwright tried to update it; will try again later")
    return False


def add_proposals(vault: Vault, kind: str, items: Iterable[Proposal | Mapping[str, Any]],
                  store: ReviewStore | None = None) -> list[str]:
    """Add proposals of one ``kind`` to REVIEW.md; returns the ids that were new.

    ``items`` are :class:`Proposal` objects or mappings with ``description`` (one line, may
    hold ``[[links]]``), optional ``pages``, optional ``facts`` (what makes the proposal the
    same one next time; default: description and pages) and optional ``fix``: ``{}`` (ticking
    only acknowledges), or ``{"action": "write-page", "page": "name", "text": "...",
    "base": "<text the change was computed from>"}`` to apply a held-back page change.
    An id seen before, whatever its answer, is never added again. Writes REVIEW.md but does
    not commit it: include ``REVIEW.md`` in your own commit's paths.
    """
    proposals = []
    for raw in items:
        if isinstance(raw, Proposal):
            proposals.append(raw if raw.kind == kind else Proposal(raw.id, kind, raw.description, raw.pages, raw.fix))
        else:
            proposals.append(proposal(kind, str(raw["description"]), raw.get("pages", ()), raw.get("fix"),
                                      raw.get("facts")))
    own = store is None
    db = store or ReviewStore(vault.db_path)
    try:
        with review_lock(vault):
            new = [p for p in proposals if db.get(p.id) is None]
            new = list({p.id: p for p in new}.values())
            if not new:
                return []
            by_heading: dict[str, list[Proposal]] = {}
            for p in new:
                by_heading.setdefault(HEADINGS.get(p.kind, p.kind.replace("-", " ").capitalize()), []).append(p)

            def mutate(text: str) -> str:
                present = parse_review(text)
                for heading, group in by_heading.items():
                    lines = [render_line(p) for p in group if p.id not in present]
                    if lines:
                        text = insert_lines(text, heading, lines)
                return text

            edit_review(vault, mutate)
            # The file first, then the table: a crash in between leaves a line the next run
            # adopts (it is already in the file), never an "open" item with no line.
            for p in new:
                db.add(p)
            return [p.id for p in new]
    finally:
        if own:
            db.close()


# -- the queue: lint into REVIEW.md, answers out of it --------------------------------------------

@dataclass
class Outcome:
    id: str
    state: str  # applied | dismissed | rejected | resolved | waiting
    detail: str = ""
    commit: str = ""


class ReviewQueue:
    """Syncs lint findings into REVIEW.md and carries out a person's answers."""

    def __init__(self, config: Config, vault: Vault) -> None:
        self.config = config
        self.vault = vault
        self._ready = False
        self._last_seen: str | None = None
        self._last_done: str | None = None
        self._retry = False

    def _open(self) -> None:
        if self._ready:
            return
        self.store = ReviewStore(self.vault.db_path)
        self.ledger = Ledger(self.vault.db_path)
        self.catalog = Catalog(self.vault)
        self.repo = GitRepo(self.vault.root, self.config.git.author_name, self.config.git.author_email,
                            self.config.git.lock_retry_seconds)
        self.writer = PageWriter(self.vault, self.ledger, self.repo)
        self._ready = True

    def close(self) -> None:
        if self._ready:
            self.store.close()
            self.ledger.close()
            self.catalog.close()
            self._ready = False

    # -- lint ----------------------------------------------------------------------------

    def lint(self) -> LintReport:
        self._open()
        hidden = self.store.ids(SUPPRESSED_STATES)
        report = run_lint(self.vault, self.config.lint, self.catalog, hidden)
        if self.config.lint.prose_check and self.config.llm.enabled:
            self._prose_check(report, hidden)
        return report

    def _prose_check(self, report: LintReport, hidden: set[str]) -> None:
        """The optional model-assisted check; a model failure never fails lint itself."""
        from ..core.errors import LLMError
        from ..ingest.llm import LLMClient
        from ..upkeep.prose_check import run_prose_check

        texts = {}
        for name, text in self.catalog.iter_bodies():
            if name.startswith("sources/") or name in ("index", "log"):
                continue
            try:
                texts[name] = parse_page(text).body
            except FrontMatterError:
                continue
        client = LLMClient(self.config, self.vault, self.ledger)
        try:
            result = run_prose_check(self.config, texts, client)
        except LLMError as exc:
            log.warning("prose check skipped: %s", exc)
            return
        finally:
            client.close()
        log.info("prose check: %d shard(s), %d tokens, %d finding(s), %d dropped (quotes not verbatim)",
                 result.shards_checked, result.tokens_used, len(result.findings), result.dropped)
        for finding in result.findings:
            (report.suppressed if finding.id in hidden else report.findings).append(finding)

    def sync_findings(self, report: LintReport) -> tuple[list[str], list[str]]:
        """New findings become proposals; open ones lint no longer finds are marked resolved.

        Returns (added ids, resolved ids); REVIEW.md is committed when it changed.
        """
        self._open()
        with _thread_lock(self.vault):
            added: list[str] = []
            by_kind: dict[str, list[Proposal]] = {}
            for finding in report.findings:
                by_kind.setdefault(finding.kind, []).append(Proposal.from_finding(finding))
            for kind, group in by_kind.items():
                added += add_proposals(self.vault, kind, group, store=self.store)
            found = {f.id for f in [*report.findings, *report.suppressed]}
            today = date.today().isoformat()
            resolved = []
            for item in self.store.items("open"):
                if item.kind in LINT_KINDS and item.id not in found:
                    self._mark(item.id, _struck(f"resolved: no longer found by lint ({today})"))
                    self.store.set_state(item.id, "resolved", "no longer found by lint")
                    resolved.append(item.id)
            if added or resolved:
                subject = f"lint: {len(added)} new proposal(s) in REVIEW.md"
                if resolved:
                    subject += f", {len(resolved)} resolved"
                self._commit(["REVIEW.md"], subject, {"Wikiwright-Operation": "lint"})
            return added, resolved

    def run_lint_and_sync(self) -> LintReport:
        report = self.lint()
        self.sync_findings(report)
        return report

    # -- answers -------------------------------------------------------------------------

    def poll(self) -> list[Outcome]:
        """The daemon's REVIEW.md watch: act once the file has held still for one poll."""
        try:
            text = self.vault.review_file.read_bytes()
        except FileNotFoundError:
            return []
        digest = hashlib.sha256(text).hexdigest()
        if digest == self._last_done and not self._retry:
            return []
        if digest != self._last_seen:
            # Changed since the last look: a person may still be typing; wait one more poll.
            self._last_seen = digest
            if self._last_done is not None:
                return []
        outcomes = self.process()
        after = self.vault.review_file.read_bytes() if self.vault.review_file.exists() else b""
        self._last_done = self._last_seen = hashlib.sha256(after).hexdigest()
        return outcomes

    def process(self) -> list[Outcome]:
        """Carry out every answer in REVIEW.md to a proposal that is still open."""
        self._open()
        outcomes: list[Outcome] = []
        self._retry = False
        with _thread_lock(self.vault):
            text = _read(self.vault.review_file)
            if text is None:
                return []  # a deleted REVIEW.md is not a rejection of everything in it
            lines = parse_review(text)
            for item in self.store.items("open"):
                line = lines.get(item.id)
                try:
                    if line is None:
                        outcomes.append(self._reject(item, "its line was removed from REVIEW.md"))
                    elif line.answer == "approve":
                        outcomes.append(self._approve(item))
                    elif line.answer == "reject":
                        outcomes.append(self._reject(item, "marked [-] in REVIEW.md"))
                except CommitPaused as exc:
                    self._retry = True
                    log.info("review answer for %s waits: %s", item.id, exc.reason)
                    outcomes.append(Outcome(item.id, "waiting", exc.reason))
                    break
        return outcomes

    def _approve(self, item: Item) -> Outcome:
        action = str(item.fix.get("action") or "")
        operation = "lint-fix" if item.kind in LINT_KINDS else "review-approval"
        try:
            paths = self._apply(item) if action else []
        except FixNotApplicable as exc:
            note = f"not applied: {exc}"
            self._mark(item.id, _struck(note))
            self._log_once(item, "not applied", [str(exc)])
            sha = self._commit(["REVIEW.md", "wiki/log.md"], f"review: could not apply {_short(item.description, 60)}",
                               {"Wikiwright-Operation": operation, "Wikiwright-Review": item.id})
            self.store.set_state(item.id, "resolved", note, sha or "")
            return Outcome(item.id, "resolved", note, sha or "")
        state = "applied" if action else "dismissed"
        self._mark(item.id, lambda line: line_with_note(line, f"{state} {date.today().isoformat()}"))
        self._log_once(item, "approved" if action else "dismissed", [f"fix: {action}" if action else "acknowledged"])
        trailers = {"Wikiwright-Operation": operation, "Wikiwright-Review": item.id}
        if paths:
            trailers["Wikiwright-Pages"] = ", ".join(paths)
        sha = self._commit([*paths, "wiki/log.md", "REVIEW.md"], f"{operation}: {_short(item.description, 150)}",
                           trailers)
        self.store.set_state(item.id, state, "", sha or "")
        return Outcome(item.id, state, action, sha or "")

    def _reject(self, item: Item, why: str) -> Outcome:
        self._log_once(item, "rejected", [why])
        sha = self._commit(["wiki/log.md", "REVIEW.md"], f"review: rejected {_short(item.description, 150)}",
                           {"Wikiwright-Operation": "review-rejection", "Wikiwright-Review": item.id})
        self.store.set_state(item.id, "rejected", why, sha or "")
        return Outcome(item.id, "rejected", why, sha or "")

    def _mark(self, item_id: str, make: Callable[[ReviewLine], str]) -> None:
        edit_review(self.vault, lambda text: replace_line(text, item_id, make))

    def _log_once(self, item: Item, verdict: str, details: list[str]) -> None:
        # A retry after a paused commit must not log the same answer twice.
        path = self.vault.wiki / "log.md"
        tail = _read(path) or ""
        marker = f"review `{item.id}`"
        if marker in tail[-20000:]:
            return
        append_log(self.vault, "review", f"{verdict}: {_short(item.description)}", [marker, *details])

    def _commit(self, paths: list[str], subject: str, trailers: dict[str, str]) -> str | None:
        existing = [p for p in dict.fromkeys(paths) if (self.vault.root / p).exists() or self._tracked(p)]
        return self.repo.commit_paths(existing, subject, trailers)

    def _tracked(self, path: str) -> bool:
        return bool(self.repo.run("ls-files", "--", path).strip())

    # -- fixes -----------------------------------------------------------------------------

    def _apply(self, item: Item) -> list[str]:
        fix = item.fix
        action = fix["action"]
        if action in ("dispute-claim", "supersede-claim"):
            return self._restatus_claim(fix, "disputed" if action == "dispute-claim" else "superseded")
        if action == "create-stub":
            return self._create_stub(fix)
        if action == "link-from-overview":
            return self._link_from_overview(str(fix["page"]))
        if action == "rebuild-index":
            self.catalog.refresh()
            rebuild_index(self.vault, self.catalog)
            return ["wiki/index.md"]
        if action == "write-page":
            return self._write([PageChange(str(fix["page"]), str(fix["text"]), fix.get("base"),
                                           "approved in REVIEW.md")])
        raise FixNotApplicable(f"unknown fix {action!r}")

    def _page_text(self, name: str) -> str:
        try:
            return self.vault.wiki_path(f"{name}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FixNotApplicable(f"[[{name.rsplit('/', 1)[-1]}]] no longer exists") from None

    def _write(self, changes: list[PageChange]) -> list[str]:
        outcome = self.writer.write(changes)
        if outcome.conflicts:
            raise FixNotApplicable("; ".join(c.reason for c in outcome.conflicts))
        self.writer.remember(outcome)
        names = [c.page for c in changes]
        self.catalog.refresh(names)
        rebuild_index(self.vault, self.catalog)
        return [*outcome.paths, "wiki/index.md"]

    def _restatus_claim(self, fix: Mapping[str, Any], status: str) -> list[str]:
        name, by = str(fix["page"]), str(fix.get("by") or "")
        text = self._page_text(name)
        try:
            body = parse_page(text).body
        except FrontMatterError as exc:
            raise FixNotApplicable(f"wiki/{name}.md: {exc}") from exc
        offset = text[: len(text) - len(body)].count("\n") if text.endswith(body) else 0
        claims, _ = parse_claims(body)
        wanted = [c for c in claims if c.key == fix["key"] and norm_value(c.value) == norm_value(str(fix["value"]))
                  and link_key(c.source) == link_key(str(fix["source"]))]
        if any(c.status == status and link_key(c.by) == link_key(by) for c in wanted) and not any(
                c.is_current for c in wanted):
            return [f"wiki/{name}.md"]  # done already (a retry after a paused commit)
        current = [c for c in wanted if c.is_current]
        if not current:
            raise FixNotApplicable(f"the claim `{fix['key']}` is no longer current on [[{name.rsplit('/', 1)[-1]}]]")
        rows = text.splitlines(keepends=True)
        index = offset + current[0].line - 1
        ending = rows[index][len(rows[index].rstrip("\r\n")):]
        rows[index] = current[0].with_status(status, by).render() + ending
        return self._write([PageChange(name, "".join(rows), text, f"claim marked {status}")])

    def _create_stub(self, fix: Mapping[str, Any]) -> list[str]:
        target = str(fix["target"]).strip()
        self.catalog.refresh()
        entries = self.catalog.entries()
        existing = self.catalog.resolve(target)
        if existing is not None:
            entry = self.catalog.get(existing)
            if entry and entry.type == "stub":
                return [f"wiki/{existing}.md", "wiki/index.md"]  # ours, from an earlier try
            raise FixNotApplicable(f"[[{target}]] has a page now ([[{existing.rsplit('/', 1)[-1]}]])")
        name = unique_name(slugify(target), [e.stem for e in entries])
        linkers = [str(n) for n in fix.get("linked_from", [])]
        linked = ", ".join(f"[[{n.rsplit('/', 1)[-1]}]]" for n in linkers)
        meta = {"type": "stub", "title": target, "summary": "", "sources": [], "updated": date.today(),
                "tags": ["stub"], "aliases": [target] if target != name else []}
        body = f"# {target}\n\nA stub: linked from {linked or 'other pages'}, nothing written about it yet.\n"
        changes = [PageChange(name, render_page(Page(meta, body)), None, "stub for a missing page")]
        if link_key(target) != link_key(name):
            # Obsidian resolves [[X]] by file name only: point the links at the stub's file,
            # keeping the text people read ([[dana-whitfield|Dana Whitfield]]).
            for linker in linkers:
                with contextlib.suppress(FixNotApplicable):
                    before = self._page_text(linker)
                    after = retarget_links(before, target, name)
                    if after != before:
                        changes.append(PageChange(linker, after, before, f"links to [[{name}]]"))
        return self._write(changes)

    def _link_from_overview(self, page: str) -> list[str]:
        self._page_text(page)  # still there?
        text = self._page_text("overview")
        stem = page.rsplit("/", 1)[-1]
        if any(link_key(link.target) == link_key(stem) for link in iter_links(text)):
            return ["wiki/overview.md"]
        parsed = parse_page(text)
        section = get_section(parsed.body, "Unlinked pages") or "## Unlinked pages\n\n"
        section = section.rstrip("\n") + f"\n- [[{stem}]]\n"
        new_text = render_page(Page(parsed.meta, set_section(parsed.body, "Unlinked pages", section)))
        return self._write([PageChange("overview", new_text, text, "link an orphan page")])


def _struck(note: str) -> Callable[[ReviewLine], str]:
    def make(line: ReviewLine) -> str:
        return f"- [x] ~~{line.text}~~ — {note} ^{line.id}"

    return make


def line_with_note(line: ReviewLine, note: str) -> str:
    return f"- [x] {line.text} — {note} ^{line.id}"


# -- the daemon's jobs ----------------------------------------------------------------------------

LINT_CHECK_SECONDS = 300.0


class ReviewJobs:
    """Two periodic jobs: lint when due (a wall-clock gate), and the REVIEW.md watch."""

    def __init__(self, config: Config, vault: Vault) -> None:
        self.config = config
        self.vault = vault
        self.queue = ReviewQueue(config, vault)

    def lint_if_due(self) -> None:
        self.queue._open()
        interval = self.config.lint.interval_hours * 3600
        last = float(self.queue.ledger.get_kv("lint.last_run", "0") or 0)
        if time.time() - last < interval:
            return
        report = self.queue.run_lint_and_sync()
        self.queue.ledger.set_kv("lint.last_run", str(time.time()))
        log.info("lint: %d finding(s) over %d pages in %.2fs", len(report.findings), report.pages, report.seconds)

    def watch_review(self) -> None:
        for outcome in self.queue.poll():
            log.info("REVIEW.md: %s %s%s", outcome.id, outcome.state,
                     f" ({outcome.commit[:10]})" if outcome.commit else "")

    @property
    def lint_period(self) -> float:
        """How often the lint gate is looked at: the interval, at most every five minutes."""
        return max(0.5, min(self.config.lint.interval_hours * 3600, LINT_CHECK_SECONDS))
