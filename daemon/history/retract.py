"""``wikiwright retract SOURCE``: the source was wrong; take it out of the current view.

Nothing is deleted (DESIGN §4.7). Every claim citing the source is struck through as
``retracted``; every claim it had superseded or disputed becomes current again, on every page (unless a later source
explicitly replaced the retracted value, in which case it stays struck and is reported);
its source page gets ``retracted: DATE`` in the front matter and a visible note; lint's
``retracted-citation`` check flags prose elsewhere that still links it. One commit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import date

from ..core.errors import NotFound, WikiwrightError
from ..core.opkinds import OpKind
from ..door import Door, Operation
from ..history.lookup import bodies_mentioning
from ..intake.ledger import SourceRecord
from ..wiki.pages import Claim, FrontMatterError, Page, iter_links, link_key, parse_claims, parse_page, render_page
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

NOTE_MARK = "[!warning] Retracted"
# A value the source struck: it replaced it, or a person's answer in REVIEW.md chose the
# source's value over it ("disputed by"). Either way, without the source it stands again.
STRUCK_BY = ("superseded", "disputed")


@dataclass
class RetractResult:
    source: SourceRecord
    commit: str | None
    retracted: list[str] = field(default_factory=list)  # "page: claim" lines struck as retracted
    restored: list[str] = field(default_factory=list)  # claims current again
    kept_struck: list[str] = field(default_factory=list)  # superseded by it, but a later value holds
    prose: list[str] = field(default_factory=list)  # pages whose prose links the source
    pages: list[str] = field(default_factory=list)


def find_source(session: Operation, target: str) -> SourceRecord:
    """A source by its raw/ path, its source page name (``src-x``) or a content hash prefix."""
    wanted = target.strip().removeprefix("./")
    key = link_key(wanted.removesuffix(".md").removeprefix("[[").removesuffix("]]"))
    for record in session.ledger.sources():
        if (record.path in (wanted, f"raw/{wanted}") or link_key(record.page) == key
                or (len(wanted) >= 8 and record.sha256.startswith(wanted.lower()))):
            return record
    # A vault whose ledger was lost: the source page still says what it summarises.
    page = session.catalog.resolve(key)
    if page is not None and page.startswith("sources/"):
        text = session.read(page) or ""
        try:
            meta = parse_page(text).meta
        except FrontMatterError:
            meta = {}
        return SourceRecord(str(meta.get("sha256") or ""), str(meta.get("source_path") or page), page,
                            str(meta.get("title") or ""), "", "", 0.0, "ingested")
    raise NotFound(f"{target!r} names no ingested source: give its path in raw/ or its source page name "
                   "(see `wikiwright status` or `wikiwright history --kind ingest`)")


def _strike(claim: Claim) -> Claim:
    note = f" (was {claim.status} by [[{claim.by}]])" if claim.status != "current" and claim.by else ""
    return replace(claim.with_status("retracted"), note=note)


def retract_page_text(text: str, stem: str, *, is_source_page: bool, today: date, reason: str,
                      ) -> tuple[str, list[Claim], list[Claim], list[Claim], bool]:
    """(new text, claims retracted, claims restored, claims kept struck, prose cites it)."""
    page = parse_page(text)
    lines = page.body.splitlines(keepends=True)
    claims, _ = parse_claims(page.body)
    key = link_key(stem)
    retracted: list[Claim] = []
    for claim in claims:
        if link_key(claim.source) == key and claim.status != "retracted":
            new = _strike(claim)
            lines[claim.line - 1] = new.render() + "\n"
            retracted.append(claim)
    gone = {c.line for c in retracted}
    # A value stays struck only when a later source explicitly replaced the retracted one (it
    # superseded a claim of that key): then the old value was outdated anyway. A later source
    # that merely states another value does not count; lint flags that pair for a person.
    replacers = {(c.key.casefold(), link_key(c.by)) for c in claims if c.status in STRUCK_BY and c.by}
    replaced = {c.key.casefold() for c in claims
                if c.is_current and c.line not in gone and (c.key.casefold(), link_key(c.source)) in replacers}
    restored: list[Claim] = []
    kept: list[Claim] = []
    for claim in claims:
        if claim.status in STRUCK_BY and link_key(claim.by) == key and link_key(claim.source) != key:
            if claim.key.casefold() in replaced:
                kept.append(claim)
                continue
            lines[claim.line - 1] = replace(claim, status="current", by="", note="").render() + "\n"
            restored.append(claim)
    citing = {c.line for c in claims}
    prose = any(link_key(link.target) == key and link.line not in citing for link in iter_links(page.body))
    meta = dict(page.meta)
    body = "".join(lines)
    if is_source_page:
        meta["retracted"] = today
        if reason:
            meta["retracted_reason"] = reason
        raw_tags = meta.get("tags")
        tags: list[object] = list(raw_tags) if isinstance(raw_tags, list) else []
        if "retracted" not in tags:
            meta["tags"] = [*tags, "retracted"]
        if NOTE_MARK not in body:
            why = f": {reason}" if reason else ""
            note = (f"> {NOTE_MARK} on {today.isoformat()}{why}. This source was found to be wrong; the claims "
                    "it supported are struck through as retracted and no longer count as current.\n\n")
            body_lines = body.splitlines(keepends=True)
            at = next((i + 1 for i, line in enumerate(body_lines) if line.startswith("# ")), 0)
            while at < len(body_lines) and not body_lines[at].strip():
                at += 1
            body_lines.insert(at, note)
            body = "".join(body_lines)
        prose = False
    if body == page.body and meta == page.meta:
        return text, retracted, restored, kept, prose
    return render_page(Page(meta, body)), retracted, restored, kept, prose


def retract_source(door: Door, target: str, *, reason: str = "", today: date | None = None) -> RetractResult:
    """Retract one source as one operation through the door (all or nothing)."""
    today = today or date.today()
    with door.operation(OpKind.RETRACT, f"retract {target}", today=today) as op:
        result = _retract(op, target, reason, today)
    result.commit = op.commit_sha
    return result


def _retract(session: Operation, target: str, reason: str, today: date) -> RetractResult:
    record = find_source(session, target)
    if record.state == "retracted":
        raise WikiwrightError(f"{record.path} is already retracted")
    if record.state == "reverted":
        raise WikiwrightError(f"the ingest of {record.path} was reverted; there is nothing of it to retract")
    stem = record.page.rsplit("/", 1)[-1]
    result = RetractResult(record, None)
    plans: list[tuple[str, str, str]] = []  # page, current text, new text
    for name, text in bodies_mentioning(session, [stem], also=[record.page]):
        if "/" not in name and name in ("index", "log"):
            continue
        if stem.casefold() not in text.casefold() and name != record.page:
            continue  # cheap pre-filter: the page does not mention the source at all
        try:
            new, struck, restored, kept, prose = retract_page_text(
                text, stem, is_source_page=name == record.page, today=today, reason=reason)
        except FrontMatterError:
            log.warning("wiki/%s.md has broken front matter; not changed by the retraction", name)
            continue
        short = name.rsplit("/", 1)[-1]
        result.retracted += [f"[[{short}]]: `{c.key}`: {c.value}" for c in struck]
        result.restored += [f"[[{short}]]: `{c.key}`: {c.value} (as of {c.as_of}, [[{c.source}]])" for c in restored]
        result.kept_struck += [f"[[{short}]]: `{c.key}`: {c.value} — a later source replaced the value"
                               for c in kept]
        if prose:
            result.prose.append(name)
        if new != text:
            plans.append((name, text, new))
    if not any(name == record.page for name, _, _ in plans) and session.read(record.page) is None:
        log.warning("the source page wiki/%s.md is missing; only the claims were retracted", record.page)
    if not plans:
        raise WikiwrightError(f"nothing cites {record.path} and its source page is missing; nothing to retract")
    outcome = session.write([PageChange(name, new, base=old, reason="retract") for name, old, new in plans])
    result.pages = list(outcome.written)
    details = [f"source: `{record.path}` ([[{stem}]])" + (f" — {reason}" if reason else "")]
    details += [f"retracted {line}" for line in result.retracted]
    details += [f"current again: {line}" for line in result.restored]
    details += [f"kept struck: {line}" for line in result.kept_struck]
    details += [f"prose still cites it (lint will flag it): [[{p.rsplit('/', 1)[-1]}]]" for p in result.prose]
    details += [f"kept a person's version of {c.page}; wikiwright's is in REVIEW.md" for c in outcome.conflicts]
    trailers = {
        "Wikiwright-Source": f"{record.path} (retracted)",
        "Wikiwright-Retracted": f"claims {len(result.retracted)}, restored {len(result.restored)}",
    }
    session.title = f"retract {record.title or record.path}"
    session.details += details
    session.trailers.update(trailers)
    session.always_log = True
    if record.sha256 and session.ledger.source(record.sha256) is not None:
        session.ledger_after_commit("set_source_state", record.sha256, "retracted")
    return result
