"""Lint: deterministic checks over the whole wiki, the things no single ingest can see.

Every finding names a page and a line and carries a stable id: a hash of its kind and the
facts that make it (page names, claim keys, values, sources), never of line numbers, so
the same problem keeps its id while the page around it changes, and REVIEW.md can tell a
finding it has already proposed (or that a person rejected) from a new one.

Checks: broken links (aliases, ``[[x|label]]`` and ``[[x#heading]]`` counted), names linked
from several pages with no page (missing pages), orphans, uncited claims, citations of
sources missing from ``wiki/sources/``, conflicting current claims (same key, or one key the
parent of the other), stale restatements of superseded values, index drift, invalid front
matter, oversized pages and duplicate titles/aliases. No model is called here; the optional
prose check lives in :mod:`.prose_check`.
"""

from __future__ import annotations

import gc
import json
import logging
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from ..core.config import LintConfig
from ..core.opkinds import FixAction
from ..core.vault import Vault
from ..wiki.catalog import Catalog, PageEntry
from ..wiki.index import INDEX_END, INDEX_START, is_group_page_name, is_listed
from ..wiki.pages import (
    PAGE_TYPES,
    SPECIAL_PAGES,
    Claim,
    ClaimLine,
    FrontMatterError,
    WikiLink,
    iter_links,
    link_key,
    parse_claims,
    parse_page,
)
from ..wiki.reviewfile import proposal_id

log = logging.getLogger(__name__)

# Report order, and the REVIEW.md heading of each kind.
KIND_HEADINGS: dict[str, str] = {
    "claim-conflict": "Conflicting claims",
    "stale-restatement": "Stale restatements",
    "broken-link": "Broken links",
    "missing-page": "Missing pages",
    "orphan": "Orphan pages",
    "uncited-claim": "Uncited claims",
    "unknown-source": "Citations of unknown sources",
    "index-missing": "Index drift",
    "index-dangling": "Index drift",
    "invalid-front-matter": "Invalid front matter",
    "page-too-large": "Oversized pages",
    "duplicate-name": "Duplicate titles and aliases",
    "duplicate-title": "Duplicate titles and aliases",
    "retracted-citation": "Prose citing retracted sources",
    "conflict-marker": "Git conflict markers",
}
LINT_KINDS = tuple(KIND_HEADINGS)
# A name linked from at least this many pages (and with no page) is a missing page, not a
# broken link.
MISSING_PAGE_MIN_LINKERS = 2
_ATTACHMENT_RE = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_SCALAR = (str, int, float, date, datetime)


@dataclass(frozen=True)
class Finding:
    kind: str
    page: str  # page name under wiki/ without .md
    line: int  # 1-based line in the page file (0: the page as a whole)
    message: str  # one line, with [[links]] to the pages involved
    facts: Mapping[str, Any] = field(compare=False)
    pages: tuple[str, ...] = ()
    # What approving the finding in REVIEW.md does; {} means nothing to apply (dismiss).
    fix: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def id(self) -> str:
        return finding_id(self.kind, self.facts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "page": self.page, "line": self.line,
            "message": self.message, "pages": list(self.pages), "facts": dict(self.facts),
            "fix": dict(self.fix),
        }


def finding_id(kind: str, facts: Mapping[str, Any]) -> str:
    """``<kind>-<10 hex>``: a hash of the kind and the facts, never of line numbers."""
    return proposal_id(kind, facts)


@dataclass
class LintReport:
    findings: list[Finding]
    suppressed: list[Finding]  # findings a person rejected or dismissed in REVIEW.md
    pages: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "pages": self.pages, "seconds": round(self.seconds, 3),
            "findings": [f.to_dict() for f in self.findings],
            "suppressed": [f.id for f in self.suppressed],
        }


@dataclass
class _Page:
    entry: PageEntry
    text: str
    size: int
    offset: int  # lines of front matter before the body
    meta: dict[str, Any] | None
    meta_error: str
    links: list[WikiLink]
    claims: list[Claim]
    uncited: list[ClaimLine]

    @property
    def name(self) -> str:
        return self.entry.name


@dataclass(frozen=True)
class _Located:
    claim: Claim
    page: str
    line: int  # file line

    def facts(self) -> dict[str, str]:
        return {"page": self.page, "key": self.claim.key, "value": norm_value(self.claim.value),
                "source": self.claim.source, "as_of": self.claim.as_of}


def norm_value(value: str) -> str:
    """How claim values are compared: case, spacing and a final full stop do not count."""
    return " ".join(value.casefold().split()).rstrip(" .;")


def stem(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _ref(name: str) -> str:
    return f"[[{stem(name)}]]"


def _special(name: str) -> bool:
    return "/" not in name and name in SPECIAL_PAGES


# -- reading the wiki ----------------------------------------------------------------------

def _load(vault: Vault, entry: PageEntry) -> _Page | None:
    path = vault.wiki / f"{entry.name}.md"
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    text = raw.decode("utf-8", errors="replace")
    meta: dict[str, Any] | None
    try:
        page = parse_page(text)
        meta, body, error = page.meta, page.body, ""
    except FrontMatterError as exc:
        meta, body, error = None, text, str(exc)
    offset = text[: len(text) - len(body)].count("\n") if body and text.endswith(body) else 0
    claims, uncited = parse_claims(body)
    return _Page(entry, text, len(raw), offset, meta, error, list(iter_links(text)), claims, uncited)


class _Resolver:
    """Link resolution as the catalogue does it: file name first, then title or alias."""

    def __init__(self, pages: Iterable[_Page]) -> None:
        self.by_stem: dict[str, str] = {}
        self.by_label: dict[str, str] = {}
        for page in pages:
            self.by_stem.setdefault(link_key(page.entry.stem), page.name)
            for label in (page.entry.title, *page.entry.aliases):
                if label:
                    self.by_label.setdefault(link_key(label), page.name)

    def resolve(self, target: str) -> str | None:
        key = link_key(target)
        return self.by_stem.get(key) or self.by_label.get(key)


def _index_block_lines(page: _Page) -> tuple[int, int] | None:
    """First and last file line of index.md's generated block, or None when it is missing."""
    start = end = 0
    for number, line in enumerate(page.text.splitlines(), start=1):
        if INDEX_START in line and not start:
            start = number
        elif INDEX_END in line and start:
            end = number
            break
    return (start, end) if start and end else None


# -- the checks -------------------------------------------------------------------------------

def _links_checks(pages: dict[str, _Page], resolver: _Resolver) -> tuple[list[Finding], set[str]]:
    """Broken links, missing pages; returns the findings and the set of pages linked to."""
    findings: list[Finding] = []
    inbound: set[str] = set()
    unresolved: dict[str, list[tuple[str, WikiLink]]] = defaultdict(list)
    for page in pages.values():
        if page.name == "log":
            continue  # log.md is history: it may name pages that were renamed since
        skip_lines: tuple[int, int] = (0, -1)
        if page.name == "index":
            block = _index_block_lines(page)
            if block:
                skip_lines = block  # checked as index drift
        citations = {
            (c.line + page.offset, link_key(name)) for c in page.claims for name in (c.source, c.by) if name
        }
        for link in page.links:
            if skip_lines[0] <= link.line <= skip_lines[1] or not link.target:
                continue
            if (link.line, link_key(link.target)) in citations:
                continue  # checked as citations
            target = resolver.resolve(link.target)
            if target is None and _ATTACHMENT_RE.search(link.target):
                continue  # an attachment (image, PDF), not a page (iter_links drops ".md")
            if target is None:
                unresolved[link_key(link.target)].append((page.name, link))
            elif target != page.name and page.name != "index":
                inbound.add(target)
    for key, uses in sorted(unresolved.items()):
        linkers = sorted({name for name, _ in uses})
        first_page, first_link = min(uses, key=lambda u: (u[0], u[1].line))
        shown = first_link.target
        fix = {"action": FixAction.CREATE_STUB, "target": shown, "linked_from": linkers}
        if len(linkers) >= MISSING_PAGE_MIN_LINKERS:
            refs = ", ".join(_ref(n) for n in linkers)
            findings.append(Finding(
                "missing-page", first_page, first_link.line,
                f"\"{shown}\" is linked from {len(linkers)} pages ({refs}) but has no page; "
                f"fix: create a stub page for it",
                {"target": key}, tuple(linkers), fix,
            ))
        else:
            findings.append(Finding(
                "broken-link", first_page, first_link.line,
                f"{_ref(first_page)} line {first_link.line} links [[{shown}]], which has no page; "
                f"fix: create a stub page for it",
                {"target": key, "page": first_page}, (first_page,), fix,
            ))
    return findings, inbound


def _orphans(pages: dict[str, _Page], inbound: set[str]) -> list[Finding]:
    findings = []
    for name, page in pages.items():
        # Source pages are reached from the index and from citations; the offline engine
        # writes them before any page cites them, so an uncited one is normal, not an orphan.
        # An index group page (index-sources.md) is reached from index.md, which lint does not
        # count as a link (it links everything).
        if _special(name) or name in inbound or page.entry.type in ("source", "index") or \
                name.startswith("sources/"):
            continue
        findings.append(Finding(
            "orphan", name, 0, f"{_ref(name)} has no links from other pages; fix: link it from [[overview]]",
            {"page": name}, (name,), {"action": FixAction.LINK_FROM_OVERVIEW, "page": name},
        ))
    return findings


def _log_citation(vault: Vault, cited: str) -> bool:
    """Consolidation cites the daily log it distilled: ``[[logs/2026-11-23]]`` (or ``….md``)."""
    name = cited.strip().removesuffix(".md")
    if not name.startswith("logs/") or "/" in name[5:] or name[5:].startswith("."):
        return False
    return (vault.logs / f"{name[5:]}.md").is_file()


def _claim_checks(vault: Vault, pages: dict[str, _Page], resolver: _Resolver) -> list[Finding]:
    findings: list[Finding] = []
    current: dict[str, list[_Located]] = defaultdict(list)
    superseded: dict[tuple[str, str], list[_Located]] = defaultdict(list)
    for name, page in pages.items():
        for loose in page.uncited:
            if loose.text.lstrip("-* \t").startswith("~~"):
                continue  # struck through: not a current claim
            line = loose.line + page.offset
            findings.append(Finding(
                "uncited-claim", name, line,
                f"{_ref(name)} line {line}: claim `{loose.key}` cites no source (expected "
                f"\"(as of DATE, [[src-…]])\"); tick to dismiss",
                {"page": name, "key": loose.key, "text": " ".join(loose.text.split())}, (name,),
            ))
        for claim in page.claims:
            located = _Located(claim, name, claim.line + page.offset)
            for role, cited in (("source", claim.source), ("by", claim.by)):
                if not cited:
                    continue
                target = resolver.resolve(cited)
                if target is not None and (target.startswith("sources/") or pages[target].entry.type == "source"):
                    continue
                if target is None and _log_citation(vault, cited):
                    continue
                why = "which is not a source page" if target else "which does not exist in wiki/sources/"
                findings.append(Finding(
                    "unknown-source", name, located.line,
                    f"{_ref(name)} line {located.line}: claim `{claim.key}` cites [[{cited}]], {why}; "
                    f"tick to dismiss",
                    {"page": name, "key": claim.key, "cited": link_key(cited), "role": role}, (name,),
                ))
            if claim.is_current:
                current[claim.key].append(located)
            elif claim.status == "superseded":
                superseded[(claim.key, norm_value(claim.value))].append(located)

    stale: set[tuple[str, int]] = set()
    for key, claims in current.items():
        for item in claims:
            old = superseded.get((key, norm_value(item.claim.value)))
            if not old:
                continue
            struck = min(old, key=lambda o: (o.page, o.line))
            by = struck.claim.by
            # A value restored later than the claim that replaced it is not stale.
            value = norm_value(item.claim.value)
            newer = [c for c in claims if c.claim.source == by and norm_value(c.claim.value) != value]
            if newer and item.claim.as_of > max(c.claim.as_of for c in newer):
                continue
            stale.add((item.page, item.line))
            by_text = f"[[{by}]]" if by else "a later source"
            findings.append(Finding(
                "stale-restatement", item.page, item.line,
                f"{_ref(item.page)} line {item.line} still states `{key}`: {item.claim.value} "
                f"({item.claim.as_of}, [[{item.claim.source}]]), superseded on {_ref(struck.page)} by {by_text}; "
                f"fix: strike it through as superseded",
                {"page": item.page, "key": key, "value": norm_value(item.claim.value), "by": by},
                tuple(sorted({item.page, struck.page})),
                {"action": FixAction.SUPERSEDE_CLAIM, **_claim_ref(item), "by": by},
            ))

    # Conflicting keys are joined into one question (a key and its parent/child keys with
    # different values): the person answers it once, however many pages state the values.
    joined: dict[str, str] = {}

    def root(key: str) -> str:
        while joined.get(key, key) != key:
            key = joined[key]
        return key

    def conflict(a: _Located, b: _Located) -> None:
        if (a.page, a.line) in stale or (b.page, b.line) in stale:
            return  # reported as a stale restatement, the sharper diagnosis
        va, vb = norm_value(a.claim.value), norm_value(b.claim.value)
        if va == vb:
            return
        if a.claim.key != b.claim.key:
            parent, child = (va, vb) if len(a.claim.key) < len(b.claim.key) else (vb, va)
            if child in parent:
                return  # the parent's value already contains the child's ("30 days standard, …")
        ra, rb = root(a.claim.key), root(b.claim.key)
        for key in (a.claim.key, b.claim.key):
            joined.setdefault(key, key)
        if ra != rb:
            keep, drop = sorted((ra, rb), key=lambda k: (len(k), k))
            joined[drop] = keep

    # Claims grouped by value: only claims in different groups are compared, so a key stated
    # the same way on many pages costs nothing (no quadratic blow-up on popular keys).
    by_value: dict[str, dict[str, list[_Located]]] = {}
    for key, claims in current.items():
        groups: dict[str, list[_Located]] = defaultdict(list)
        for c in sorted(claims, key=lambda c: (c.page, c.line)):
            groups[norm_value(c.claim.value)].append(c)
        by_value[key] = groups
    for key in sorted(by_value):
        groups = by_value[key]
        values = list(groups)
        live = [next((c for c in groups[v] if (c.page, c.line) not in stale), None) for v in values]
        for i, a in enumerate(live):
            for b in live[i + 1 :]:
                if a is not None and b is not None:
                    conflict(a, b)  # one claim per value is enough to join the key's question
        parts = key.split(".")
        for cut in range(1, len(parts)):
            parent_groups = by_value.get(".".join(parts[:cut]))
            if not parent_groups:
                continue
            for pv, parents in parent_groups.items():
                for cv, children in groups.items():
                    if cv == pv or cv in pv:
                        continue  # the same, or the parent's value already contains the child's
                    for a in parents:
                        for b in children:
                            conflict(a, b)
    questions: dict[str, list[str]] = defaultdict(list)
    for key in joined:
        questions[root(key)].append(key)
    for main, keys in sorted(questions.items()):
        stated = [c for k in sorted(keys) for c in current[k] if (c.page, c.line) not in stale]
        findings.append(_conflict_question(main, stated))
    return findings


def _conflict_question(key: str, located: list[_Located]) -> Finding:
    """One question for a claim key with several current values: which stands?

    Each distinct value is an option to tick (with every page, source and date stating it),
    plus "both, scoped"; nothing is proposed as the answer, least of all "the newer wins".
    Each value lists the values it contradicts: choosing one disputes only those (a parent
    key's value against its children's, never two children against each other).
    """
    values: dict[tuple[str, str], list[_Located]] = defaultdict(list)
    for c in sorted(located, key=lambda c: (c.claim.as_of, c.page, c.line)):
        values[(c.claim.key, norm_value(c.claim.value))].append(c)
    names = {value: f"v{n}" for n, value in enumerate(values, start=1)}
    options: list[dict[str, str]] = []
    answers: list[dict[str, Any]] = []
    shown_values = []
    for value, group in values.items():
        claim_key, first = value[0], group[0].claim
        where = "; ".join(f"[[{c.claim.source}]], as of {c.claim.as_of}, on {_ref(c.page)}" for c in group)
        label = f"`{claim_key}`: " if claim_key != key else ""
        options.append({"key": names[value], "text": f"{label}{first.value} — {where}"})
        answers.append({"key": names[value], "value": first.value, "claims": [_claim_ref(c) for c in group],
                        "conflicts": [names[other] for other in values if _contradict(value, other)]})
        shown_values.append(f"{label}{first.value}")
    options.append({"key": "both", "text": "both stand: keep every value, each scoped to its source"})
    pages = tuple(sorted({c.page for c in located}))
    first_claim = min(located, key=lambda c: (c.page, c.line))
    message = (f"`{key}` has {len(values)} current values ({' / '.join(shown_values)}) on "
               f"{', '.join(_ref(p) for p in pages)}; which stands? tick one value below, or both (scoped)")
    facts = {"key": key, "claims": sorted((c.facts() for c in located), key=lambda f: json.dumps(f, sort_keys=True))}
    return Finding("claim-conflict", first_claim.page, first_claim.line, message, facts, pages,
                   {"action": FixAction.RESOLVE_CONFLICT, "key": key, "values": answers, "options": options})


def _contradict(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two (key, normalised value) pairs say different things about the same fact."""
    (ka, va), (kb, vb) = a, b
    if va == vb:
        return False
    if ka == kb:
        return True
    parent, child = (a, b) if len(ka) < len(kb) else (b, a)
    if not child[0].startswith(parent[0] + "."):
        return False  # siblings (`x.standard`, `x.enterprise`): different facts
    return child[1] not in parent[1]


def _claim_ref(item: _Located) -> dict[str, str]:
    c = item.claim
    return {"page": item.page, "key": c.key, "value": c.value, "as_of": c.as_of, "source": c.source}


def _index_checks(pages: dict[str, _Page], resolver: _Resolver, entries: list[PageEntry]) -> list[Finding]:
    index = pages.get("index")
    if index is None:
        return []
    block = _index_block_lines(index)
    fix = {"action": FixAction.REBUILD_INDEX}
    if block is None:
        return [Finding(
            "index-missing", "index", 0,
            "[[index]] has no generated block (its markers were removed); fix: rebuild the index",
            {"block": "missing"}, ("index",), fix,
        )]
    listed: set[str] = set()
    findings = []
    for link in index.links:
        if not block[0] <= link.line <= block[1] or not link.target:
            continue
        target = resolver.resolve(link.target)
        if target is None:
            findings.append(Finding(
                "index-dangling", "index", link.line,
                f"[[index]] line {link.line} lists [[{link.target}]], which has no page; fix: rebuild the index",
                {"target": link_key(link.target)}, ("index",), fix,
            ))
        else:
            listed.add(target)
    # A large index lists groups on pages of their own (index-sources, and its parts
    # index/sources-001, …): what their blocks list counts as listed.
    for group_name, group in pages.items():
        if group.entry.type != "index" or not is_group_page_name(group_name):
            continue
        span = _index_block_lines(group)
        if span is None:
            continue
        listed |= {t for link in group.links if span[0] <= link.line <= span[1] and link.target
                   and (t := resolver.resolve(link.target)) is not None}
    # What the index lists now (it leaves out unreadable pages): every one of those must be in it.
    expected = {entry.name for entry in entries if is_listed(entry)}
    for name in sorted(expected):
        # The special pages are reached from everywhere; a fresh vault's index lists none of them.
        if name in listed or _special(name) or name not in pages:
            continue
        findings.append(Finding(
            "index-missing", "index", block[0],
            f"{_ref(name)} is missing from [[index]]; fix: rebuild the index",
            {"page": name}, ("index", name), fix,
        ))
    return findings


def _front_matter_problems(meta: dict[str, Any]) -> list[str]:
    problems = []
    kind = meta.get("type")
    if kind is not None and kind not in PAGE_TYPES:
        problems.append(f"type {kind!r} is not one of {', '.join(PAGE_TYPES)}")
    for key in ("title", "summary"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], _SCALAR):
            problems.append(f"{key} must be a single value, not a {type(meta[key]).__name__}")
    for key in ("sources", "tags", "aliases"):
        value = meta.get(key)
        if value is None or isinstance(value, str):
            continue
        if not isinstance(value, list) or not all(isinstance(v, _SCALAR) for v in value):
            problems.append(f"{key} must be a list of values")
    updated = meta.get("updated")
    if updated is not None and not isinstance(updated, date):
        try:
            date.fromisoformat(str(updated))
        except ValueError:
            problems.append(f"updated {updated!r} is not a date (YYYY-MM-DD)")
    return problems


def _page_checks(pages: dict[str, _Page], config: LintConfig) -> list[Finding]:
    findings = []
    for name, page in pages.items():
        problems = [page.meta_error] if page.meta_error else _front_matter_problems(page.meta or {})
        for problem in problems:
            findings.append(Finding(
                "invalid-front-matter", name, 1, f"{_ref(name)}: invalid front matter: {problem}; tick to dismiss",
                {"page": name, "problem": problem.split(":", 1)[0] if page.meta_error else problem}, (name,),
            ))
        if page.size > config.max_page_bytes:
            findings.append(Finding(
                "page-too-large", name, 0,
                f"{_ref(name)} is {page.size} bytes, over lint.max_page_bytes ({config.max_page_bytes}); "
                f"split it; tick to dismiss",
                {"page": name}, (name,),
            ))
    return findings


def _duplicate_names(pages: dict[str, _Page]) -> list[Finding]:
    owners: dict[str, set[str]] = defaultdict(set)
    shown: dict[str, str] = {}
    for name, page in pages.items():
        labels = [page.entry.stem, *page.entry.aliases]
        if page.entry.type != "source" and not name.startswith("sources/"):
            labels.append(page.entry.title)  # a source's title is the document's, not a link name
        for label in labels:
            if label:
                owners[link_key(label)].add(name)
                shown.setdefault(link_key(label), label)
    findings = []
    for key, names in sorted(owners.items()):
        if len(names) < 2:
            continue
        ordered = sorted(names)
        findings.append(Finding(
            "duplicate-name", ordered[0], 1,
            f"\"{shown[key]}\" names {len(ordered)} pages ({', '.join(_ref(n) for n in ordered)}) as title, "
            f"alias or file name; links to it are ambiguous; tick to dismiss",
            {"name": key, "pages": ordered}, tuple(ordered),
        ))
    return findings


def _duplicate_titles(pages: dict[str, _Page]) -> list[Finding]:
    """Two pages with the same title, a source page among them ("README" twice): a reader cannot
    tell them apart in the index, search or a link's text. (Between other pages, the same
    title is a duplicate name, reported above.)"""
    owners: dict[str, list[str]] = defaultdict(list)
    for name, page in pages.items():
        title = " ".join(page.entry.title.split())
        if title and page.entry.type != "index" and not _special(name):
            owners[title.casefold()].append(name)
    findings = []
    for _, names in sorted(owners.items()):
        if len(names) < 2 or not any(pages[n].entry.type == "source" or n.startswith("sources/") for n in names):
            continue
        ordered = sorted(names)
        title = pages[ordered[0]].entry.title
        findings.append(Finding(
            "duplicate-title", ordered[0], 1,
            f"\"{title}\" is the title of {len(ordered)} pages ({', '.join(_ref(n) for n in ordered)}); give each "
            f"its own title (for a source: the project or folder it belongs to); tick to dismiss",
            {"title": title.casefold(), "pages": ordered}, tuple(ordered),
        ))
    return findings


def _retracted_citations(pages: dict[str, _Page], resolver: _Resolver) -> list[Finding]:
    """Prose that links a retracted source page (``wikiwright retract``): its claims were struck
    through, but sentences written from it may still repeat what it said."""
    retracted = {name for name, page in pages.items() if page.meta and page.meta.get("retracted")}
    findings: list[Finding] = []
    if not retracted:
        return findings
    for page in pages.values():
        if page.name in retracted or page.name in ("log", "index"):
            continue
        citations = {(c.line + page.offset, link_key(n)) for c in page.claims for n in (c.source, c.by) if n}
        seen: set[str] = set()
        for link in page.links:
            target = resolver.resolve(link.target) if link.target else None
            if target is None or target not in retracted or target in seen:
                continue
            if (link.line, link_key(link.target)) in citations:
                continue  # a struck claim citing it: that is the retraction itself
            seen.add(target)
            when = (pages[target].meta or {}).get("retracted", "")
            findings.append(Finding(
                "retracted-citation", page.name, link.line,
                f"{_ref(page.name)} line {link.line} cites {_ref(target)}, retracted on {when}; check the "
                f"prose that relies on it, then tick to dismiss",
                {"page": page.name, "source": target}, (page.name, target),
            ))
    return findings


def _conflict_markers(pages: dict[str, _Page]) -> list[Finding]:
    """A git conflict marker left in a page (a merge by hand, or a tool that wrote one): the
    page holds two versions of some lines. Sync never writes one; this finds any that did."""
    findings: list[Finding] = []
    for page in pages.values():
        if "<<<<<<<" not in page.text and ">>>>>>>" not in page.text:
            continue
        for lineno, line in enumerate(page.text.splitlines(), start=1):
            if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("<<<<<<<", ">>>>>>>"):
                findings.append(Finding(
                    "conflict-marker", page.name, lineno,
                    f"{_ref(page.name)} line {lineno} holds a git conflict marker: two versions of some "
                    f"lines are side by side; keep the right text, delete the marker lines",
                    {"page": page.name}, (page.name,),
                ))
                break
    return findings


# -- the run ----------------------------------------------------------------------------------

def run_lint(
    vault: Vault,
    config: LintConfig,
    catalog: Catalog,
    suppressed_ids: Iterable[str] = (),
) -> LintReport:
    """Every check over the whole wiki (its pages as the process's catalogue lists them).
    Findings in ``suppressed_ids`` are set apart."""
    started = time.perf_counter()
    # Lint builds ~100 objects a page and frees none until the end: the cyclic collector
    # would rescan them over and over (superlinear at 10,000 pages). Refcounting still runs.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(vault, config, catalog, suppressed_ids, started)
    finally:
        if was_enabled:
            gc.enable()


def _run(vault: Vault, config: LintConfig, catalog: Catalog, suppressed_ids: Iterable[str],
         started: float) -> LintReport:
    catalog.refresh()
    entries = catalog.entries()
    pages: dict[str, _Page] = {}
    for entry in entries:
        page = _load(vault, entry)
        if page is not None:
            pages[entry.name] = page
    resolver = _Resolver(pages.values())
    findings, inbound = _links_checks(pages, resolver)
    findings += _orphans(pages, inbound)
    findings += _claim_checks(vault, pages, resolver)
    findings += _index_checks(pages, resolver, entries)
    findings += _page_checks(pages, config)
    findings += _duplicate_names(pages)
    findings += _duplicate_titles(pages)
    findings += _retracted_citations(pages, resolver)
    findings += _conflict_markers(pages)
    order = {kind: n for n, kind in enumerate(LINT_KINDS)}
    unique: dict[str, Finding] = {}
    for finding in sorted(findings, key=lambda f: (order.get(f.kind, 99), f.page, f.line, f.message)):
        unique.setdefault(finding.id, finding)
    hidden = set(suppressed_ids)
    kept = [f for f in unique.values() if f.id not in hidden]
    gone = [f for f in unique.values() if f.id in hidden]
    return LintReport(kept, gone, len(pages), time.perf_counter() - started)
