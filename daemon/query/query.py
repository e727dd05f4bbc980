"""Query: search the pages, and answer a question from them with citations.

Search is the catalogue's SQLite FTS5 index (the one the router uses), refreshed from file
stats before every query so a page a person just saved is found. For each page found we show
its best matching line; a matching claim is shown with its status, so a struck-through value
is labelled superseded and never passes for the current one.

``ask`` reads index.md and the best pages (within ``llm.prompt_budget_chars``), asks the model
for a JSON answer, then checks it in code: every cited page must exist and every claim the
answer relies on must be a current claim on a page it cites; anything else is dropped and
reported. With no model, ``ask`` shows the best pages and the current claims that match.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..core.config import Config
from ..core.errors import WikiwrightError
from ..core.opkinds import OpKind
from ..core.vault import Vault, VaultLock
from ..door import Door, Operation
from ..intake.ledger import Ledger
from ..wiki.catalog import Catalog, SearchHit
from ..wiki.pages import (
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
from ..wiki.writer import PageChange

log = logging.getLogger(__name__)

# The daemon writes its heartbeat every 5 s; an older one may belong to a daemon that hung.
HEARTBEAT_TRUST_SECONDS = 15.0

_WORD_RE = re.compile(r"\w+", re.UNICODE)
# Words that say nothing about which page is meant; dropped when the query has others.
_QUERY_STOPWORDS = frozenset(
    """a an and are as at be by can could did do does for from has have how i in is it its me my
    of on or our should so that the their there this to was we were what when where which who
    why will with would you your tell about current currently now today value""".split()  # noqa: SIM905
)
META_PAGES = ("index", "log")
ANSWERS_FOLDER = "answers"
ANSWERS_HEADING = "Answers"


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def query_terms(query: str) -> list[str]:
    """The distinct words of a query, folded; stopwords dropped unless nothing else is left."""
    words = list(dict.fromkeys(_fold(w) for w in _WORD_RE.findall(query)))
    meaningful = [w for w in words if w not in _QUERY_STOPWORDS]
    return meaningful or words


def _line_terms(line: str) -> set[str]:
    return set(_WORD_RE.findall(_fold(line)))


# -- search ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LineMatch:
    number: int  # 1-based line number in the page file
    text: str
    claim: Claim | None = None

    def label(self) -> str:
        """The line as shown to a person: claims carry their status in words."""
        if self.claim is None:
            return self.text
        return describe_claim(self.claim)


@dataclass(frozen=True)
class SearchResult:
    page: str  # name under wiki/ without .md
    title: str
    type: str
    score: float
    line: LineMatch | None
    claims: tuple[Claim, ...] = ()  # matching claims on the page, current and struck

    @property
    def stem(self) -> str:
        return self.page.rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "path": f"wiki/{self.page}.md",
            "title": self.title,
            "type": self.type,
            "score": round(self.score, 4),
            "line": None if self.line is None else {
                "number": self.line.number, "text": self.line.text,
                "claim": None if self.line.claim is None else claim_json(self.line.claim),
            },
            "claims": [claim_json(c) for c in self.claims],
        }


def claim_json(claim: Claim) -> dict[str, Any]:
    return {
        "key": claim.key, "value": claim.value, "as_of": claim.as_of, "source": claim.source,
        "status": claim.status, "current": claim.is_current, "by": claim.by or None,
    }


def describe_claim(claim: Claim) -> str:
    core = f"`{claim.key}`: {claim.value} (as of {claim.as_of}, [[{claim.source}]])"
    if claim.is_current:
        return f"{core} [current]"
    by = f" by [[{claim.by}]]" if claim.by else ""
    return f"{core} [{claim.status}{by}; not current]"


def _body_offset(text: str, body: str) -> int:
    """How many lines of ``text`` come before ``body`` (the front matter)."""
    return text.count("\n", 0, len(text) - len(body)) if text.endswith(body) else 0


def best_line(text: str, terms: list[str]) -> tuple[LineMatch | None, list[Claim]]:
    """The page line matching most query terms, and the claims that match best."""
    try:
        page = parse_page(text)
        body = page.body
    except FrontMatterError:
        body = text
    offset = _body_offset(text, body)
    wanted = set(terms)
    best: tuple[tuple[int, int, int], LineMatch] | None = None
    claims, _ = parse_claims(body)
    by_line = {claim.line: claim for claim in claims}
    for number, line in enumerate(body.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("<!--"):
            continue
        hits = len(wanted & _line_terms(stripped))
        if not hits:
            continue
        claim = by_line.get(number)
        # Prefer a current claim, then prose, then a struck claim: history is not the answer.
        rank = 2 if claim is not None and claim.is_current else 0 if claim is not None else 1
        key = (hits, rank, -number)
        if best is None or key > best[0]:
            best = (key, LineMatch(number + offset, stripped, claim))
    scored = [(len(wanted & _line_terms(f"{c.key} {c.value}")), c) for c in claims]
    top = max((score for score, _ in scored), default=0)
    matching = [claim for score, claim in scored if top and score == top]
    return (best[1] if best else None), matching


def _rerank(score: float, top: float, line: LineMatch | None, terms: list[str], page_type: str) -> float:
    """BM25 (scaled to the best hit) plus how well the best line answers the query.

    A page whose matching line is a current claim is where the fact lives; a source page that
    merely mentions it ranks below the page that keeps it (DESIGN §1: sources feed pages).
    """
    relevance = score / top if top > 0 else 0.0
    if line is None:
        return relevance
    coverage = len(set(terms) & _line_terms(line.text)) / max(1, len(terms))
    bonus = 0.5 * coverage
    if line.claim is not None and line.claim.is_current:
        bonus += 0.5
    if page_type == "source":
        bonus -= 0.1
    return relevance + bonus


def daemon_keeps_catalog_fresh(vault: Vault) -> bool:
    """True while a running daemon watches wiki/ and re-indexes every page saved (within a poll)."""
    try:
        beat = json.loads((vault.state / "heartbeat.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    fresh = time.time() - float(beat.get("time", 0)) < HEARTBEAT_TRUST_SECONDS
    return bool(fresh and beat.get("pages_watched") and not beat.get("stopped") and VaultLock(vault).holder())


def _search_fresh(catalog: Catalog, fts_query: str, pool: int) -> list[SearchHit]:
    """Search as of now: a person may have saved a page a moment ago.

    The stat scan of every page (most of the cost at 10,000 pages) runs in a thread while the
    query runs on the catalogue as it was; only if the scan finds changed pages are they
    re-indexed and the query run again. So the usual case costs the slower of the two, not both.
    """
    box: dict[str, dict[str, tuple[int, int]]] = {}

    def scan() -> None:
        box["found"] = catalog.scan()

    scanner = threading.Thread(target=scan, name="catalog-scan", daemon=True)
    scanner.start()
    hits = catalog.search(fts_query, pool)
    scanner.join()
    if catalog.refresh(scanned=box.get("found")):
        hits = catalog.search(fts_query, pool)
    return hits


def search(vault: Vault, catalog: Catalog, query: str, limit: int = 10, *, refresh: bool = True) -> list[SearchResult]:
    """Ranked pages for ``query`` with their best matching line. Works with no model."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        if refresh:
            catalog.refresh()
        return []
    # Re-rank a wider pool than asked for: BM25 alone favours short pages that repeat a word.
    fts_query, pool = " ".join(terms), limit * 2 + 10
    if refresh and not daemon_keeps_catalog_fresh(vault):
        hits = _search_fresh(catalog, fts_query, pool)
    else:
        hits = catalog.search(fts_query, pool)
    top = max((hit.score for hit in hits), default=0.0)
    results: list[SearchResult] = []
    for hit in hits:
        if hit.name in META_PAGES:
            continue  # index.md and log.md mention everything; they are not answers
        try:
            text = (vault.wiki / f"{hit.name}.md").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # removed since the catalogue saw it
        entry = catalog.get(hit.name)
        page_type = entry.type if entry else ""
        line, claims = best_line(text, terms)
        results.append(SearchResult(
            hit.name, hit.title, page_type, _rerank(hit.score, top, line, terms, page_type), line, tuple(claims),
        ))
    results.sort(key=lambda r: (-r.score, r.page))
    return results[:limit]


# -- ask -------------------------------------------------------------------------------------

ASK_SYSTEM = """You answer questions from a personal wiki. Use ONLY the pages given below; \
never outside knowledge. Claims are lines like "- `key`: value (as of DATE, [[source]])"; a \
struck-through claim (~~...~~ superseded/retracted) is history, never the current value. \
Cite every page you use as [[page-name]] in the answer text and list it in "citations". List \
every claim you relied on in "claims" with the page it is on, its key and its current value. \
If the pages do not answer the question, set "known" to false and say so plainly in "answer"; \
do not guess. Reply with JSON only."""

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "known": {"type": "boolean"},
        "citations": {"type": "array", "items": {"type": "string"}},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "page": {"type": "string"},
                    "key": {"type": "string"},
                    "value": {"type": "string"},
                },
                "required": ["page", "key"],
            },
        },
    },
    "required": ["answer", "known"],
}
MAX_CONTEXT_PAGES = 8
MIN_PAGE_CHARS = 400


@dataclass
class AskContext:
    question: str
    results: list[SearchResult]
    index_text: str
    pages: dict[str, str]  # page name -> text sent (maybe cut)
    truncated: list[str] = field(default_factory=list)

    def prompt(self) -> str:
        parts = [f"Question: {self.question}", "", "## index.md (every page, one line each)", self.index_text]
        for name, text in self.pages.items():
            parts += ["", f"## Page [[{name.rsplit('/', 1)[-1]}]] (wiki/{name}.md)", text]
        return "\n".join(parts)


@dataclass(frozen=True)
class ClaimRef:
    page: str
    claim: Claim

    def to_json(self) -> dict[str, Any]:
        return {"page": self.page, **claim_json(self.claim)}


@dataclass
class Answer:
    question: str
    text: str
    known: bool
    engine: str  # "model" or "offline"
    citations: list[str] = field(default_factory=list)  # page names that exist
    claims: list[ClaimRef] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # what the checks dropped, and why
    results: list[SearchResult] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question, "answer": self.text, "known": self.known, "engine": self.engine,
            "citations": [f"wiki/{p}.md" for p in self.citations],
            "claims": [c.to_json() for c in self.claims], "flags": self.flags,
            "pages": [r.to_json() for r in self.results],
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "cost_usd": self.cost_usd,
        }


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 30)].rsplit("\n", 1)[0] + "\n[… cut to fit the prompt budget]"


def gather_context(config: Config, vault: Vault, catalog: Catalog, question: str) -> AskContext:
    """index.md and the best pages, within the prompt budget (the index gets at most a quarter)."""
    budget = config.llm.prompt_budget_chars - len(ASK_SYSTEM) - len(question) - 200
    results = search(vault, catalog, question, MAX_CONTEXT_PAGES)
    try:
        index_text = (vault.wiki / "index.md").read_text(encoding="utf-8")
    except OSError:
        index_text = ""
    index_text = _cut(index_text, max(0, budget // 4))
    left = budget - len(index_text)
    pages: dict[str, str] = {}
    truncated: list[str] = []
    for result in results:
        try:
            text = (vault.wiki / f"{result.page}.md").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        overhead = len(result.page) * 2 + 40
        if len(text) + overhead > left:
            if left - overhead < MIN_PAGE_CHARS:
                truncated.append(result.page)
                continue
            text = _cut(text, left - overhead)
            truncated.append(result.page)
        pages[result.page] = text
        left -= len(text) + overhead
    return AskContext(question, results, index_text, pages, truncated)


def _current_claims(vault: Vault, page: str) -> list[Claim]:
    try:
        body = parse_page((vault.wiki / f"{page}.md").read_text(encoding="utf-8")).body
    except (OSError, FrontMatterError):
        return []
    return [c for c in parse_claims(body)[0] if c.is_current]


def _norm(value: str) -> str:
    return " ".join(_fold(value).split())


def offline_answer(vault: Vault, context: AskContext) -> Answer:
    """No model: the best pages and the current claims that match the question."""
    terms = set(query_terms(context.question))
    refs: list[ClaimRef] = []
    for result in context.results:
        for claim in _current_claims(vault, result.page):
            if terms & _line_terms(f"{claim.key} {claim.value}"):
                refs.append(ClaimRef(result.page, claim))
    if context.results:
        text = ("No model is configured (llm.model is empty), so no answer was written. These are the "
                "pages and current claims that match; with a model, wikiwright would write the answer "
                "from them, with citations.")
    else:
        text = "The wiki does not know: no page matches the question."
    return Answer(context.question, text, bool(context.results), "offline",
                  [r.page for r in context.results], refs, [], context.results)


def _unlinker(target: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return match.group(1) or target

    return replace


def check_reply(reply: dict[str, Any], vault: Vault, catalog: Catalog, context: AskContext) -> Answer:
    """Turn the model's JSON into an Answer, keeping only what the pages support."""
    flags: list[str] = []
    text = str(reply.get("answer") or "").strip()
    known = bool(reply.get("known", True))
    citations: list[str] = []

    def cite(name: str) -> str | None:
        raw = name.strip()
        if raw.startswith("[[") and raw.endswith("]]"):
            raw = raw[2:-2].split("|", 1)[0]
        raw = raw.removeprefix("wiki/").removesuffix(".md").strip()
        if not raw:
            return None
        page = raw if (vault.wiki / f"{raw}.md").is_file() else catalog.resolve(raw)
        if page is None:
            return None
        if page not in citations:
            citations.append(page)
        return page

    for name in reply.get("citations") or []:
        if cite(str(name)) is None:
            flags.append(f"dropped citation [[{name}]]: no such page")
    # Links in the answer text are citations too; a link to no page is unlinked, not kept.
    for target in [link.target for link in iter_links(text)]:
        if cite(target) is None:
            flags.append(f"unlinked [[{target}]] in the answer: no such page")
            pattern = re.compile(r"\[\[" + re.escape(target) + r"(?:\|([^\]]*))?\]\]")
            text = pattern.sub(_unlinker(target), text)
    refs: list[ClaimRef] = []
    for item in reply.get("claims") or []:
        if not isinstance(item, dict):
            flags.append("dropped a claim entry that is not an object")
            continue
        key, value = str(item.get("key") or "").strip().strip("`"), str(item.get("value") or "").strip()
        page = cite(str(item.get("page") or ""))
        if page is None:
            flags.append(f"dropped claim `{key}`: its page {item.get('page')!r} does not exist")
            continue
        matches = [c for c in _current_claims(vault, page) if c.key.casefold() == key.casefold()]
        if value:
            exact = [c for c in matches if _norm(c.value) == _norm(value)]
            if not exact:
                current = "; ".join(c.value for c in matches) or "none"
                flags.append(f"dropped claim `{key}`: {value!r} is not a current value on [[{page}]] "
                             f"(current: {current})")
                continue
            matches = exact
        if not matches:
            flags.append(f"dropped claim `{key}`: no current claim with that key on [[{page}]]")
            continue
        for claim in matches:
            ref = ClaimRef(page, claim)
            if ref not in refs:
                refs.append(ref)
    if known and not citations:
        flags.append("the answer cites no page of the wiki, so it is not shown as known")
        known = False
    if not text:
        text = "The wiki does not know." if not known else "(the model gave no answer text)"
    return Answer(context.question, text, known, "model", citations, refs, flags, context.results)


def ask(config: Config, vault: Vault, catalog: Catalog, ledger: Ledger, question: str, *,
        costs: Callable[[], Any]) -> Answer:
    """Answer ``question`` from the wiki: the model when one is configured, else the best pages.
    ``costs``: gives the process's cost ledger (asked only when the model is called)."""
    if not question.strip():
        raise WikiwrightError("ask needs a question, e.g. wikiwright ask \"what is the rate limit?\"")
    context = gather_context(config, vault, catalog, question)
    if not config.llm.enabled:
        return offline_answer(vault, context)
    if not context.results:
        return Answer(question, "The wiki does not know: no page matches the question.", False, "model")
    from ..ingest.llm import LLMClient

    client = LLMClient(config, vault, ledger, costs=costs())
    try:
        reply, usage = client.complete_json(
            purpose="ask", system=ASK_SYSTEM, user=context.prompt(), schema=ASK_SCHEMA,
        )
    finally:
        client.close()
    answer = check_reply(reply, vault, catalog, context)
    answer.tokens_in, answer.tokens_out, answer.cost_usd = usage.tokens_in, usage.tokens_out, usage.cost_usd
    return answer


# -- saving an answer as a page ---------------------------------------------------------------

def answer_page_text(answer: Answer, today: date) -> str:
    first = re.split(r"(?<=[.!?])\s", answer.text.replace("\n", " ").strip(), maxsplit=1)[0]
    summary = first if len(first) <= 200 else first[:197].rstrip() + "…"
    meta: dict[str, Any] = {
        "type": "answer",
        "title": answer.question.strip().replace("\n", " ")[:200],
        "summary": summary,
        "updated": today,
        "tags": ["answer"],
        "aliases": [],
        "cites": [page.rsplit("/", 1)[-1] for page in answer.citations],
        "asked": today,
    }
    body = [f"# {meta['title']}", "", answer.text.strip(), "", "## Based on", ""]
    body += [f"- [[{page.rsplit('/', 1)[-1]}]]" for page in answer.citations]
    if answer.claims:
        body += ["", "Claims relied on (current when this answer was written):", ""]
        # Not a "## Claims" section: these restate other pages' claims, they are not new facts.
        body += [f"- {describe_claim(ref.claim)} — on [[{ref.page.rsplit('/', 1)[-1]}]]" for ref in answer.claims]
    body.append("")
    return render_page(Page(meta, "\n".join(body)))


def add_answer_link(text: str, stem: str, title: str) -> str:
    """``text`` with a link to the answer page in its ``## Answers`` section (made if missing)."""
    page = parse_page(text)
    line = f"- [[{stem}|{title}]]" if title.casefold() != stem.casefold() else f"- [[{stem}]]"
    section = get_section(page.body, ANSWERS_HEADING)
    if section is None:
        new_section = f"## {ANSWERS_HEADING}\n\n{line}\n"
    else:
        if any(link_key(link.target) == link_key(stem) for link in iter_links(section)):
            return text
        # Keep the blank line that separated the section from the next heading.
        new_section = section.rstrip("\n") + "\n" + line + "\n" + ("\n" if section.endswith("\n\n") else "")
    return render_page(Page(page.meta, set_section(page.body, ANSWERS_HEADING, new_section)))


def save_answer(door: Door, answer: Answer, today: date) -> tuple[str, str | None]:
    """File ``answer`` as a page linked from the pages it cites; one commit. Returns (page, sha)."""
    title = answer.question.strip().replace("\n", " ")[:200]
    with door.operation(OpKind.ANSWER, title, today=today) as op:
        page = _save_answer(op, answer, today)
    return page, op.commit_sha


def _save_answer(session: Operation, answer: Answer, today: date) -> str:
    if answer.engine != "model":
        raise WikiwrightError("no model is configured, so there is no answer to save; set llm.model "
                              "(see `wikiwright config`) and ask again with --save")
    if not answer.known or not answer.citations:
        raise WikiwrightError("the wiki does not know the answer, so nothing was saved")
    taken = [entry.stem for entry in session.catalog.entries()]
    stem = unique_name(slugify(answer.question), taken)
    page = f"{ANSWERS_FOLDER}/{stem}"
    title = answer.question.strip().replace("\n", " ")[:200]
    changes = [PageChange(page, answer_page_text(answer, today), reason="answer page")]
    for cited in answer.citations:
        current = session.read(cited)
        if current is None:
            continue
        try:
            updated = add_answer_link(current, stem, title)
        except FrontMatterError:
            log.warning("wiki/%s.md has broken front matter; not linking the answer from it", cited)
            continue
        if updated != current:
            changes.append(PageChange(cited, updated, base=current, reason="link to answer"))
    outcome = session.write(changes)
    if page not in outcome.written:
        raise WikiwrightError(f"could not write wiki/{page}.md; nothing was committed")
    details = [f"question: {title}", f"page: [[{stem}]]",
               "cites: " + ", ".join(f"[[{p.rsplit('/', 1)[-1]}]]" for p in answer.citations)]
    details += [f"kept a person's version of {c.page}; wikiwright's is in REVIEW.md" for c in outcome.conflicts]
    trailers = {"Wikiwright-Answer": f"wiki/{page}.md"}
    if answer.tokens_in or answer.tokens_out:
        trailers["Wikiwright-Tokens"] = f"in {answer.tokens_in}, out {answer.tokens_out}"
        trailers["Wikiwright-Cost-USD"] = f"{answer.cost_usd:.6f}"
    session.details += details
    session.trailers.update(trailers)
    return page

