"""What an ingest prompt shows the model of the wiki: section-level views of the routed pages.

Routing is code. Pages holding a claim the source speaks about (the catalogue's claim index:
key, subject and value words) are always routed, so a correction reaches the claim it
corrects even among many pages sharing the source's vocabulary. Then pages whose title or
alias the source names, then full-text hits, and the overview.

Each routed page is shown as a *view*: its title, type, aliases and summary, its outline,
its current claims (first), and only its best paragraphs by their overlap with the source, up
to a per-page cap; a small page is shown whole. Views are ranked by relevance (claims the
source speaks about, pages it names, then the best paragraph's match); pages only full-text
search found are mostly listed by name. ``llm.prompt_budget_chars`` is a ceiling, not a target: an ordinary source
gets what matches, however much room is left. When the views do not fit, prose goes first
(the least matching paragraph of the least relevant page first), then whole pages that hold
no claim the source speaks about, and claims last.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..ingest.offline import _STOPWORDS
from ..wiki.catalog import Catalog, claim_terms
from ..wiki.pages import Page, parse_claims, split_sections

MAX_CANDIDATES = 8  # pages routed by mentions and search (claim-index pages come on top)
MAX_CLAIM_PAGES = 12  # pages routed by the claim index
MAX_SUBJECT_PAGES = 3  # of those, pages reached by a claim's attribute and subject rather than its key
MAX_OTHER_NAMES = 30  # page names listed for linking
SEARCH_TERMS = 12
SMALL_PAGE = 600  # characters of body: such a page is shown whole
# Per page, the best-matching paragraphs up to this many characters (a busy concept page that
# every source adds a line to would otherwise fill the prompt with lines the source shares one
# word with).
PAGE_PROSE = 700
MAX_MATCHED = 4  # paragraphs (or list items) shown of a larger page: the best, the latest first on ties
BRIEF_PROSE = 250  # characters of prose shown of a page only full-text search found: its best paragraph
MAX_BRIEF_VIEWS = 2  # pages only full-text search found that are shown (the rest are listed by name)
MAX_CLAIMS_SHOWN = 24  # current claims shown of one page (the source's own first)
# A paragraph matches the source by the words they share, each weighted by how rare it is on
# the page (a word on every paragraph says nothing): it must reach MIN_MATCH and a share of
# the best paragraph's score.
MIN_MATCH = 1.0
RELATIVE_MATCH = 0.5
LONG_PARAGRAPH = 500  # a longer paragraph made of list items is split into its items
_WORD_RE = re.compile(r"[^\W\d_][\w'-]{2,}", re.UNICODE)
_TERM_RE = re.compile(r"\w+", re.UNICODE)
# A citation of a source page ([[src-note-05]]) says which source, not what the text is about.
_CITATION_RE = re.compile(r"\[\[src-[^\]]*\]\]")


def search_terms(text: str, limit: int = SEARCH_TERMS) -> list[str]:
    """The source's most frequent content words (first occurrence breaks ties)."""
    words = [w.casefold().strip("'-") for w in _WORD_RE.findall(text)]
    counts = Counter(w for w in words if len(w) > 3 and w not in _STOPWORDS)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


def content_terms(text: str) -> set[str]:
    """Words that say what a text is about (numbers included: a correction names the old one)."""
    return {w for w in claim_terms(text) if w not in _STOPWORDS and (len(w) > 2 or w.isdigit())}


# -- routing ------------------------------------------------------------------------------------

@dataclass
class Routing:
    candidates: list[str]  # pages to show, most relevant first
    claim_keys: dict[str, set[str]]  # page -> keys of its claims the source speaks about (always shown)
    mentioned: set[str]
    others: list[str]  # names listed for linking only


def route(catalog: Catalog, text: str, exclude: set[str]) -> Routing:
    def usable(name: str) -> bool:
        return name not in exclude and not name.startswith("sources/") and name not in ("index", "log")

    claim_keys: dict[str, set[str]] = {}
    by_subject = 0
    for hit in catalog.claim_pages(text, limit=MAX_CLAIM_PAGES * 3):
        if not usable(hit.page) or (hit.page not in claim_keys and len(claim_keys) >= MAX_CLAIM_PAGES):
            continue
        if not hit.by_key:  # reached by what it is about: the best few only (look-alike pages share words)
            if by_subject >= MAX_SUBJECT_PAGES:
                continue
            by_subject += 1
        claim_keys.setdefault(hit.page, set()).add(hit.key)
    mentioned = [n for n in catalog.mentioned_pages(text, exclude=exclude) if usable(n)]
    ordered: list[str] = []
    for name in mentioned:
        if name not in ordered:
            ordered.append(name)
    terms = search_terms(text)
    if terms:
        for found in catalog.search(" ".join(terms), limit=MAX_CANDIDATES + MAX_OTHER_NAMES):
            if usable(found.name) and found.name not in ordered:
                ordered.append(found.name)
    chosen = [n for n in ordered[:MAX_CANDIDATES] if n != "overview"]
    candidates = [*chosen, *[n for n in claim_keys if n not in chosen]]
    if "overview" not in exclude:
        candidates.append("overview")  # what the model is told to keep up to date; shown from the first ingest
    others = [n for n in ordered if n not in candidates and n != "overview"]
    return Routing(candidates, claim_keys, set(mentioned), others[:MAX_OTHER_NAMES])


# -- views --------------------------------------------------------------------------------------

@dataclass
class Chunk:
    section: str  # the ## heading it sits under ('' for the lead)
    text: str
    score: float  # how well it matches the source (0: shown only because the page is small)
    order: int


@dataclass
class PageView:
    name: str
    rank: int
    head: str  # title, type, aliases, summary, outline
    claims: list[str]  # current claim lines, the source's own first
    matched_claims: int  # how many of ``claims`` (at the front) the source speaks about
    hidden_claims: int  # current claims not shown (over MAX_CLAIMS_SHOWN)
    struck: int  # struck-through claims (history; not shown)
    chunks: list[Chunk]
    kept: set[int] = field(default_factory=set)  # indices of chunks shown
    pinned: bool = False  # holds a claim the source speaks about: never dropped
    section_sizes: dict[str, int] = field(default_factory=dict)
    mentioned: bool = False  # the source names the page

    def relevance(self) -> tuple[int, int, float]:
        """Claims the source speaks about first, then pages it names, then the best paragraph's match."""
        best = max((self.chunks[i].score for i in self.kept), default=0.0)
        return (-self.matched_claims, 0 if self.mentioned else 1, -best)

    def render(self) -> str:
        # Claims first: what a correction must see; the prose after it, best-matching first cut.
        lines = [f"=== page: {self.name} ===", self.head]
        if self.claims:
            lines.append("## Claims (current)")
            lines.extend(self.claims)
        extra = []
        if self.hidden_claims:
            extra.append(f"{self.hidden_claims} more current claims")
        if self.struck:
            extra.append(f"{self.struck} struck-through claims")
        if extra:
            lines.append(f"[… {' and '.join(extra)} not shown]")
        shown: dict[str, list[Chunk]] = {}
        for index in sorted(self.kept, key=lambda i: self.chunks[i].order):
            chunk = self.chunks[index]
            shown.setdefault(chunk.section, []).append(chunk)
        for section, chunks in shown.items():
            if section:
                lines.append(f"## {section}")
            lines.extend(c.text for c in chunks)
            left = self.section_sizes.get(section, 0) - sum(len(c.text) for c in chunks)
            if left > 40:
                lines.append(f"[… {left} more characters of this section not shown]")
        lines.append(f"=== end of {self.name} ===")
        return "\n".join(lines)

    def size(self) -> int:
        return len(self.render())


def _paragraphs(text: str) -> list[str]:
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = block.strip("\n")
        if not block.strip():
            continue
        rows = block.splitlines()
        if len(block) > LONG_PARAGRAPH and len(rows) > 1 and all(re.match(r"\s*([-*+]|\d+\.)\s", r) or
                                                                   r.startswith("  ") for r in rows):
            items: list[str] = []
            for row in rows:
                if items and row.startswith("  ") and not re.match(r"\s*([-*+]|\d+\.)\s", row.strip()):
                    items[-1] += "\n" + row
                else:
                    items.append(row)
            out.extend(items)
        else:
            out.append(block)
    return out


def _score(chunks: list[Chunk], terms: set[str]) -> None:
    """Each chunk's match with the source: the sum over shared words of their rarity on the page."""
    words = [content_terms(_CITATION_RE.sub(" ", c.text)) & terms for c in chunks]
    df = Counter(w for shared in words for w in shared)
    total = len(chunks)
    for chunk, shared in zip(chunks, words, strict=True):
        chunk.score = sum(math.log((total + 1) / (df[w] + 0.5)) for w in shared)


def build_view(name: str, rank: int, page: Page, source_terms: set[str], claim_keys: set[str],
               mentioned: bool, brief: bool = False) -> PageView | None:
    """A view of one page, or None when nothing of it concerns the source (then it is a name only).

    ``brief``: a page only full-text search found (the source neither names it nor states one of
    its claims): its best matching paragraphs up to BRIEF_PROSE and the claims the source speaks
    about, never the whole page."""
    meta = page.meta
    title = str(meta.get("title") or name)
    aliases = page.aliases
    own = content_terms(" ".join([title, name.replace("-", " "), *aliases]))
    terms = source_terms - own  # the page's own name is on every paragraph: it says nothing
    claims, _ = parse_claims(page.body)
    current = [c for c in claims if c.status in ("current", "disputed")]

    def speaks_about(key: str) -> bool:
        words = claim_terms(key)
        if key in claim_keys or brief:
            return key in claim_keys
        return bool(words) and len(words & source_terms) * 2 >= len(words) + 1

    ordered_claims = sorted(current, key=lambda c: (not speaks_about(c.key), c.line))
    matched = sum(1 for c in current if speaks_about(c.key))
    shown_claims = ordered_claims[: matched if brief else max(MAX_CLAIMS_SHOWN, matched)]
    sections = split_sections(page.body)
    body_size = sum(len(t) for h, t in sections if h.casefold() != "claims")
    small = body_size <= SMALL_PAGE and not brief
    chunks: list[Chunk] = []
    sizes: dict[str, int] = {}
    outline: list[str] = []
    for heading, text in sections:
        if heading.casefold() == "claims":
            outline.append(f"Claims ({len(current)} current)")
            continue
        if heading:
            text = text.split("\n", 1)[1] if "\n" in text else ""
            outline.append(heading)
        else:
            text = re.sub(r"\A\s*# [^\n]*\n", "", text)  # the H1 repeats the title
        for paragraph in _paragraphs(text):
            chunks.append(Chunk(heading, paragraph, 0.0, len(chunks)))
            sizes[heading] = sizes.get(heading, 0) + len(paragraph)
    _score(chunks, terms)
    view = PageView(
        name=name, rank=rank, head="", claims=[c.render() for c in shown_claims], matched_claims=matched,
        hidden_claims=len(current) - len(shown_claims), struck=len(claims) - len(current), chunks=chunks,
        pinned=bool(claim_keys), section_sizes=sizes, mentioned=mentioned,
    )
    if small:
        view.kept = set(range(len(chunks)))
    else:
        budget = BRIEF_PROSE if brief else PAGE_PROSE
        best = max((c.score for c in chunks), default=0.0)
        most = 1 if brief else MAX_MATCHED
        for index in sorted(range(len(chunks)), key=lambda i: (-chunks[i].score, -chunks[i].order)):
            chunk = chunks[index]
            if chunk.score < max(MIN_MATCH, best * RELATIVE_MATCH) or len(chunk.text) > budget:
                continue
            view.kept.add(index)
            budget -= len(chunk.text)
            if len(view.kept) >= most:
                break
        if chunks and not brief and 0 not in view.kept and len(chunks[0].text) <= 300 and (view.kept or mentioned):
            view.kept.add(0)  # the lead says what the page is
            chunks[0].score = max(chunks[0].score, 0.5)
    if not (small or view.kept or matched or mentioned or name == "overview"):
        return None
    details = [f"title: {title}", f"type: {meta.get('type') or 'page'}"]
    if aliases:
        details.append("aliases: " + ", ".join(aliases))
    head = [" · ".join(details)]
    summary = " ".join(str(meta.get("summary") or "").split())
    if summary:
        head.append(f"summary: {summary}")
    if not small and outline:
        head.append("sections: " + " · ".join(outline))
    view.head = "\n".join(head)
    return view


def fit(views: list[PageView], available: int) -> None:
    """Cut the views to ``available`` characters: prose first, then unpinned pages, claims last."""
    total = sum(v.size() + 2 for v in views)
    if total <= available:
        return
    # 1. Prose, least matching first; among equals, of the least relevant page first.
    prose = sorted(((v.chunks[i].score, -v.rank, v, i) for v in views for i in v.kept),
                   key=lambda t: (t[0], t[1]))
    for _, _, view, index in prose:
        if total <= available:
            return
        before = view.size()
        view.kept.discard(index)
        total -= before - view.size()
    # 2. Whole pages that hold nothing the source speaks about, least relevant first.
    for view in sorted([v for v in views if not v.pinned and v.name != "overview"], key=lambda v: -v.rank):
        if total <= available:
            return
        total -= view.size() + 2
        views.remove(view)
    # 3. Claims the source does not speak about; the ones it does always stay.
    for view in sorted(views, key=lambda v: -v.rank):
        while total > available and len(view.claims) > view.matched_claims:
            before = view.size()
            view.claims.pop()
            view.hidden_claims += 1
            total -= before - view.size()


def page_context(routing: Routing, read: Callable[[str], Page | None], source: str,
                 available: int) -> tuple[str, list[str], list[str]]:
    """(the pages block of the prompt, names shown, names only listed) within ``available`` chars."""
    terms = content_terms(source)
    views: list[PageView] = []
    listed: list[str] = []
    briefs = 0
    for rank, name in enumerate(routing.candidates):
        page = read(name)
        if page is None:
            continue
        keys = routing.claim_keys.get(name, set())
        brief = not keys and name not in routing.mentioned and name != "overview"
        view = None
        if not brief or briefs < MAX_BRIEF_VIEWS:
            view = build_view(name, rank, page, terms, keys, name in routing.mentioned, brief)
            briefs += brief and view is not None
        if view is None:
            listed.append(name)
        else:
            views.append(view)
    # Ranked by relevance to the source (the overview last): the cut starts from the end.
    views.sort(key=lambda v: (v.name == "overview", v.relevance()))
    for rank, view in enumerate(views):
        view.rank = rank
    fit(views, available)
    shown = [v.name for v in views]
    dropped = [n for n in routing.candidates if n not in shown and n not in listed]
    names = [n for n in [*listed, *dropped, *routing.others] if n not in shown][:MAX_OTHER_NAMES]
    block = "\n\n".join(v.render() for v in views)
    return block, shown, names
