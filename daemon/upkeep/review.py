"""REVIEW.md's answers: carrying out what a person ticked (the file itself: wiki/reviewfile.py).

:mod:`..wiki.reviewfile` owns the format, ids, parsing and the proposal store; this module
syncs lint findings into it and applies answers. ``- [x]`` applies the proposed fix as one
commit (for a proposal with options, the options ticked say what to apply); ``- [-]`` or
deleting the line rejects it: log.md records the rejection and the id is never proposed
again. Findings a person dismissed or rejected are also left out of ``wikiwright lint``'s
report. A claim conflict is a question: nothing changes until the person picks a value (or
"both, scoped"); ticking the question alone only acknowledges it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

from ..core.config import Config
from ..core.errors import CommitPaused, FixNotApplicable
from ..core.opkinds import FixAction, OpKind
from ..core.vault import Vault
from ..door import COMMIT, Door, Operation
from ..ingest.operations import Workspace
from ..upkeep.lint import KIND_HEADINGS, LINT_KINDS, Finding, LintReport, norm_value, run_lint
from ..wiki.pages import (
    WIKILINK_RE,
    Claim,
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
from ..wiki.reviewfile import (
    HEADER,
    HELD_BACK,
    NOTICE_KEY,
    SUPPRESSED_STATES,
    Answer,
    Item,
    Option,
    Proposal,
    ReviewLine,
    ReviewStore,
    answers,
    line_with_note,
    parse_review,
    proposal,
    read_review,
    replace_line,
    review_lock,
    struck,
)
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

__all__ = ["HEADER", "HELD_BACK", "Item", "Proposal", "ReviewJobs", "ReviewQueue", "ReviewStore", "finding_proposal",
           "parse_review", "proposal"]


def finding_proposal(finding: Finding) -> Proposal:
    """A lint finding as a REVIEW.md proposal (a claim conflict carries one option per value)."""
    options = tuple(Option(str(o["key"]), str(o["text"])) for o in finding.fix.get("options", ()))
    return Proposal(finding.id, finding.kind, finding.message, finding.pages, dict(finding.fix), options,
                    KIND_HEADINGS.get(finding.kind, ""))


def _short(text: str, limit: int = 90) -> str:
    flat = re.sub(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]", r"\1", " ".join(text.split()))
    flat = flat.split("; fix:")[0].split("; tick to")[0]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


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


def _read(path: Any) -> str | None:
    try:
        return str(path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return None


# -- the queue: lint into REVIEW.md, answers out of it --------------------------------------------

@dataclass
class Outcome:
    id: str
    state: str  # applied | dismissed | rejected | resolved | waiting
    detail: str = ""
    commit: str = ""


class ReviewQueue:
    """Syncs lint findings into REVIEW.md and carries out a person's answers."""

    def __init__(self, config: Config, vault: Vault, door: Door | Callable[[], Door],
                 client: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.vault = vault
        # The process's door (its ledger, catalogue and repository), or what gives it, asked at
        # first use (the daemon builds its jobs before its setup opens the door).
        self._door = door
        # Makes the model client of the prose check (the process's, on its cost ledger).
        self._client = client
        self._ready = False
        self._last_seen: str | None = None
        self._last_done: str | None = None
        self._retry = False
        self._notice: str | None = None

    def _open(self) -> None:
        if self._ready:
            return
        self.door = self._door() if callable(self._door) else self._door
        self.ledger, self.catalog, self.repo = self.door.ledger, self.door.catalog, self.door.repo
        self.store = ReviewStore.on(self.ledger)
        self._op: Operation | None = None  # the operation an answer is being carried out in
        self._ready = True

    def close(self) -> None:
        if self._ready:
            self.store.close()
            self._ready = False

    @property
    def op(self) -> Operation:
        assert self._op is not None, "review fixes run inside a door operation"
        return self._op

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
        from ..upkeep.prose_check import run_prose_check

        if self._client is None:
            log.warning("prose check skipped: no model client was given to the review queue")
            return

        texts = {}
        for name, text in self.catalog.iter_bodies():
            if name.startswith("sources/") or name in ("index", "log"):
                continue
            try:
                texts[name] = parse_page(text).body
            except FrontMatterError:
                continue
        client = self._client()  # the process's (on its cost ledger)
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
        with self.door.operation(OpKind.LINT, "proposals in REVIEW.md") as op:
            self._op = op
            try:
                added: list[str] = []
                by_kind: dict[str, list[Proposal]] = {}
                for finding in report.findings:
                    by_kind.setdefault(finding.kind, []).append(finding_proposal(finding))
                for kind, group in by_kind.items():
                    added += op.propose(kind, group)
                found = {f.id for f in [*report.findings, *report.suppressed]}
                today = date.today().isoformat()
                resolved = []
                for item in self.store.items("open"):
                    if item.kind in LINT_KINDS and item.id not in found:
                        self._mark(item.id, struck(f"resolved: no longer found by lint ({today})"))
                        op.ledger_after_commit("review_set_state", item.id, "resolved", "no longer found by lint",
                                               COMMIT)
                        resolved.append(item.id)
                op.title = f"{len(added)} new proposal(s) in REVIEW.md" + (
                    f", {len(resolved)} resolved" if resolved else "")
            finally:
                self._op = None
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
        with review_lock(self.vault):
            read = read_review(self.vault)
            self._note_bad_bytes(read.notice)
            if read.text is None:
                return []  # a deleted REVIEW.md is not a rejection of everything in it
            for answer in answers(read.text, self.store.items("open")):
                try:
                    if answer.verdict == "approve":
                        outcomes.append(self._approve(answer.item, answer))
                    else:
                        outcomes.append(self._reject(answer.item, answer.why))
                except CommitPaused as exc:
                    self._retry = True
                    log.info("review answer for %s waits: %s", answer.item.id, exc.reason)
                    outcomes.append(Outcome(answer.item.id, "waiting", exc.reason))
                    break
        return outcomes

    def _note_bad_bytes(self, notice: str) -> None:
        """Bad bytes in REVIEW.md: a notice in status (once), never an error loop."""
        if notice == self._notice:
            return
        if notice:
            log.warning("%s", notice)
            self.ledger.set_notice(NOTICE_KEY, notice)
        else:
            self.ledger.clear_notice(NOTICE_KEY)
        self._notice = notice

    @contextmanager
    def _answer(self, kind: OpKind, item: Item, verdict: str, details: list[str]) -> Iterator[Operation]:
        """One answer, one door operation: its fix, its REVIEW.md line, one log.md entry, one commit.
        A fix that fails undoes every file it wrote (the door's rollback)."""
        with self.door.operation(kind, f"{verdict}: {_short(item.description, 150)}") as op:
            self._op = op
            try:
                op.settle(["REVIEW.md"])  # the person's answer is theirs: committed under their name first
                op.always_log = True
                op.details += [f"review `{item.id}`", *details]
                op.trailers["Wikiwright-Review"] = item.id
                yield op
            finally:
                self._op = None

    def _approve(self, item: Item, answer: Answer | None = None) -> Outcome:
        chosen = answer.chosen if answer else ()
        action = str(item.fix.get("action") or "")
        if action == FixAction.RESOLVE_CONFLICT and not chosen:
            action = ""  # the question ticked without a value: acknowledged, nothing changes
        operation = OpKind.LINT_FIX if item.kind in LINT_KINDS else OpKind.REVIEW_APPROVAL
        state = "applied" if action else "dismissed"
        what = _choice_note(item, chosen) if action == FixAction.RESOLVE_CONFLICT else ""
        details = [what or f"fix: {action}"] if action else ["acknowledged"]
        try:
            with self._answer(operation, item, "approved" if action else "dismissed", details) as op:
                paths = self._apply(item, chosen) if action else []
                note = f"{state} {date.today().isoformat()}" + (f": {what}" if what else "")
                self._mark(item.id, lambda line: line_with_note(line, note))
                if paths:
                    op.trailers["Wikiwright-Pages"] = ", ".join(paths)
                op.ledger_after_commit("review_set_state", item.id, state, what, COMMIT)
            return Outcome(item.id, state, what or action, op.commit_sha or "")
        except FixNotApplicable as exc:
            note = f"not applied: {exc}"
            with self._answer(operation, item, "not applied", [str(exc)]) as op:
                self._mark(item.id, struck(note))
                op.ledger_after_commit("review_set_state", item.id, "resolved", note, COMMIT)
            return Outcome(item.id, "resolved", note, op.commit_sha or "")

    def _reject(self, item: Item, why: str) -> Outcome:
        with self._answer(OpKind.REVIEW_REJECTION, item, "rejected", [why]) as op:
            op.ledger_after_commit("review_set_state", item.id, "rejected", why, COMMIT)
        return Outcome(item.id, "rejected", why, op.commit_sha or "")

    def _mark(self, item_id: str, make: Callable[[ReviewLine], str]) -> None:
        self.op.edit_file("REVIEW.md", lambda text: replace_line(text, item_id, make) if text is not None else None)

    # -- fixes -----------------------------------------------------------------------------

    def _apply(self, item: Item, chosen: tuple[str, ...] = ()) -> list[str]:
        """The item's fix, through the table below; the paths it wrote."""
        try:
            apply = _FIXES[FixAction(item.fix["action"])]
        except ValueError:
            raise FixNotApplicable(f"unknown fix {item.fix['action']!r}") from None
        return apply(self, item.fix, chosen)

    def _fix_resolve_conflict(self, fix: Mapping[str, Any], chosen: tuple[str, ...]) -> list[str]:
        return self._resolve_conflict(fix, chosen)

    def _fix_apply_op(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._apply_held_op(fix)

    def _fix_ingest_source(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._approve_source_cost(fix)

    def _fix_dispute_claim(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._restatus_claim(fix, "disputed")

    def _fix_supersede_claim(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._restatus_claim(fix, "superseded")

    def _fix_create_stub(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._create_stub(fix)

    def _fix_link_from_overview(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._link_from_overview(str(fix["page"]))

    def _fix_rebuild_index(self, _fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        self.catalog.refresh()
        self.op.rebuild_index()
        return ["wiki/index.md"]

    def _fix_write_page(self, fix: Mapping[str, Any], _chosen: tuple[str, ...]) -> list[str]:
        return self._write([PageChange(str(fix["page"]), str(fix["text"]), fix.get("base"),
                                       "approved in REVIEW.md")])

    def _approve_source_cost(self, fix: Mapping[str, Any]) -> list[str]:
        """A costly source ticked: the waiting job is due now and goes through at full size."""
        from ..ingest.cost import approve

        approve(self.ledger, str(fix["path"]), str(fix["sha256"]))
        return []

    def _page_claims(self, name: str) -> tuple[str, int, list[Claim]]:
        """The page's text, the line offset of its body, and the claims in it."""
        text = self._page_text(name)
        try:
            body = parse_page(text).body
        except FrontMatterError as exc:
            raise FixNotApplicable(f"wiki/{name}.md: {exc}") from exc
        offset = text[: len(text) - len(body)].count("\n") if text.endswith(body) else 0
        claims, _ = parse_claims(body)
        return text, offset, claims

    def _page_text(self, name: str) -> str:
        text = self.op.read(name)  # a person's uncommitted edits to it are committed first, as theirs
        if text is None:
            raise FixNotApplicable(f"[[{name.rsplit('/', 1)[-1]}]] no longer exists")
        return text

    def _write(self, changes: list[PageChange]) -> list[str]:
        outcome = self.op.write(changes, propose_conflicts=False)
        if outcome.conflicts:
            raise FixNotApplicable("; ".join(c.reason for c in outcome.conflicts))
        return [*outcome.paths, "wiki/index.md"]

    def _restatus_claim(self, fix: Mapping[str, Any], status: str) -> list[str]:
        name, by = str(fix["page"]), str(fix.get("by") or "")
        text, offset, claims = self._page_claims(name)
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

    def _resolve_conflict(self, fix: Mapping[str, Any], chosen: tuple[str, ...]) -> list[str]:
        """The person's answer to a claim conflict: the values ticked stand. A value they
        contradict is marked disputed by the chosen value's source; when values that contradict
        each other are all kept ("both"), each is scoped to its source (``key@source``)."""
        values = {str(v["key"]): v for v in fix.get("values", ())}
        keep = [k for k in chosen if k in values] or (list(values) if "both" in chosen else [])
        if not keep:
            raise FixNotApplicable("no value was ticked")
        edits: dict[str, list[_ClaimEdit]] = {}
        for key, value in values.items():
            against = [k for k in keep if k in value.get("conflicts", ()) and k != key]
            if not against:
                continue
            if key not in keep:
                by = str(values[against[0]]["claims"][0]["source"])
                for ref in value["claims"]:
                    edits.setdefault(str(ref["page"]), []).append((ref, _disputed(by)))
            elif any(len(str(values[k]["claims"][0]["key"])) >= len(str(value["claims"][0]["key"])) for k in against):
                # Kept beside a contradicting value of the same (or a child) key: scope it.
                for ref in value["claims"]:
                    edits.setdefault(str(ref["page"]), []).append((ref, _scoped(f"{ref['key']}@{ref['source']}")))
        changes = [change for name, todo in sorted(edits.items()) if (change := self._edit_claims(name, todo))]
        if not changes:
            return sorted({f"wiki/{name}.md" for name in edits})  # done already (a retry)
        return self._write(changes)

    def _edit_claims(self, name: str, todo: list[_ClaimEdit]) -> PageChange | None:
        """Rewrite the current claims ``todo`` names on page ``name``; None if all were done before."""
        text, offset, claims = self._page_claims(name)
        rows = text.splitlines(keepends=True)
        changed = False
        for ref, make in todo:
            same = [c for c in claims if norm_value(c.value) == norm_value(str(ref["value"]))
                    and link_key(c.source) == link_key(str(ref["source"]))]
            current = [c for c in same if c.is_current and c.key == ref["key"]]
            if not current:
                wanted = make(_claim_from_ref(ref))
                if any(c.key == wanted.key and c.status == wanted.status for c in same):
                    continue  # done already (a retry after a paused commit)
                raise FixNotApplicable(f"the claim `{ref['key']}`: {ref['value']} is no longer current on "
                                       f"[[{name.rsplit('/', 1)[-1]}]]")
            index = offset + current[0].line - 1
            ending = rows[index][len(rows[index].rstrip("\r\n")):]
            rows[index] = make(current[0]).render() + ending
            changed = True
        return PageChange(name, "".join(rows), text, "claim conflict answered") if changed else None

    def _apply_held_op(self, fix: Mapping[str, Any]) -> list[str]:
        """A held-back ingest operation the person approved: applied with the checks a person
        can vouch for waived (quote found verbatim, shrink and page limits); the safety checks
        (page names, scripts and remote embeds, code-owned sections) still hold."""
        source = str(fix.get("source_page") or "")
        workspace = Workspace(self.vault, source, str(fix.get("source_text") or ""), date.today(),
                              max_shrink=1.0, find_claim_pages=lambda key: self.catalog.phrase_pages(key),
                              approved=True)
        if not workspace.apply(dict(fix["op"])):
            raise FixNotApplicable(workspace.held[-1].reason)
        changes = [PageChange(state.name, state.render(), base=state.original, reason="approved in REVIEW.md")
                   for state in workspace.changed_pages()]
        if not changes:
            return []
        return self._write(changes)

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


# -- the daemon's jobs ----------------------------------------------------------------------------

# Every fix a REVIEW.md item can carry, and the method that applies it (a FixAction without an
# entry fails the test that reads this table).
_FIXES: dict[FixAction, Callable[[ReviewQueue, Mapping[str, Any], tuple[str, ...]], list[str]]] = {
    FixAction.RESOLVE_CONFLICT: ReviewQueue._fix_resolve_conflict,
    FixAction.APPLY_OP: ReviewQueue._fix_apply_op,
    FixAction.INGEST_SOURCE: ReviewQueue._fix_ingest_source,
    FixAction.DISPUTE_CLAIM: ReviewQueue._fix_dispute_claim,
    FixAction.SUPERSEDE_CLAIM: ReviewQueue._fix_supersede_claim,
    FixAction.CREATE_STUB: ReviewQueue._fix_create_stub,
    FixAction.LINK_FROM_OVERVIEW: ReviewQueue._fix_link_from_overview,
    FixAction.REBUILD_INDEX: ReviewQueue._fix_rebuild_index,
    FixAction.WRITE_PAGE: ReviewQueue._fix_write_page,
}


LINT_CHECK_SECONDS = 300.0


class ReviewJobs:
    """Two periodic jobs: lint when due (a wall-clock gate), and the REVIEW.md watch."""

    def __init__(self, config: Config, vault: Vault, door: Door | Callable[[], Door],
                 client: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.vault = vault
        self.queue = ReviewQueue(config, vault, door, client)

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


_ClaimEdit = tuple[Mapping[str, Any], Callable[[Claim], Claim]]


def _scoped(key: str) -> Callable[[Claim], Claim]:
    return lambda claim: Claim(key, claim.value, claim.as_of, claim.source)


def _disputed(by: str) -> Callable[[Claim], Claim]:
    return lambda claim: claim.with_status("disputed", by)


def _claim_from_ref(ref: Mapping[str, Any]) -> Claim:
    return Claim(str(ref["key"]), str(ref["value"]), str(ref.get("as_of", "")), str(ref["source"]))


def _choice_note(item: Item, chosen: tuple[str, ...]) -> str:
    """What the person chose, in words (for REVIEW.md, log.md and the store)."""
    values = {str(v["key"]): str(v["value"]) for v in item.fix.get("values", ())}
    keep = [values[k] for k in chosen if k in values] or (list(values.values()) if "both" in chosen else [])
    if len(keep) == 1:
        return f"`{item.fix.get('key')}` = {keep[0]} stands"
    return f"`{item.fix.get('key')}`: {', '.join(keep)} all stand, each scoped to its source"
