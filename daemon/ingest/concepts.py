"""Concept and entity pages kept by the offline engine, and overview.md kept by code.

A term two or more sources share gets a page once one of them says it in a whole sentence:
what it is (the best defining sentence, quoted, with its source; replaced when a later source
defines it better and the section is still the engine's own quote), which sources mention it
and the sentence where each does, and the related terms that share sources with it. Every
change is a :class:`PageChange` computed from the page as it is on disk (its base, for
compare-and-swap): a new source adds its line (the first MAX_LISTED; then the count line) and
its source to ``sources`` (the first MAX_FRONT_SOURCES), so a page and the work of keeping it
stop growing however many sources cite it. "Related" is written whole from the term index each
time a page is written (a function of the recorded sources, not of their order; a person's
lines there kept); nothing else already on a page is rewritten, so a person's edits and a
model's later additions stay. overview.md's "main
ones" are ranked by sources × specificity (wordfreq). Pages carry the same front matter as
model-written pages (``type``, ``title``, ``summary``, ``sources`` as source page stems,
``updated``, ``tags``, ``aliases``), so a model configured later continues them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from ..core.vault import Vault
from ..ingest.terms import (
    DEFINING_SCORE,
    WHOLE_SENTENCE_SCORE,
    Mention,
    Term,
    TermIndex,
    _definition_score,
    mention_sentence,
    specificity,
)
from ..ingest.textrules import is_generic_title
from ..wiki.catalog import Catalog
from ..wiki.pages import FrontMatterError, Page, get_section, parse_page, render_page, set_section, slugify, unique_name
from ..wiki.sanitize import clean_line
from ..wiki.writer import PageChange

MAX_LINKS = 15  # concept and entity pages one source links to
MAX_LISTED = 50  # "Mentioned in" lines on one page; the count line says how many in all
# Stems in a page's ``sources``: its first citing sources (each quoted under "Mentioned in"). The
# front matter is parsed and written again with every citing source, so it must not grow with
# them; the term index (terms.db) knows every one.
MAX_FRONT_SOURCES = 10
MAX_RELATED = 8
MAX_BACKFILL = 20  # earlier source pages given the link when a shared term gets its page
OVERVIEW_START = "<!-- wikiwright:overview:start (kept by wikiwright from the wiki; edit outside this block) -->"
OVERVIEW_END = "<!-- wikiwright:overview:end -->"
MENTIONED = "Mentioned in"
RELATED = "Related"
# A line of "Related" as the engine writes it: a bare link, perhaps with the term's label.
_ENGINE_RELATED_LINE = re.compile(r"^- \[\[([^\]|#]+)(?:\|[^\]]*)?\]\][ \t]*$")
RELATED_SOURCE_SECTION = "Related pages"
OWN_TYPES = ("entity", "concept", "topic", "stub")


def quote_safe(text: str) -> str:
    """Text from a source, made inert as wiki markup: ``[[`` would be a link to nowhere; HTML,
    remote images and unsafe links go through the one page sanitizer (wiki/sanitize.py; the
    source page lists what it removed from that source)."""
    text = clean_line(text).text
    return text.replace("![[", "!\\[[").replace("[[", "[\\[").replace("\n", " ")


# Over the quote when no source says what the term is: a sentence that only mentions it
# ("The one local check was a 10-line Python sanity run") is not quoted as if it said.
UNDEFINED_NOTE = "_No source says what it is yet; one that mentions it:_"
_WHAT_IT_IS_QUOTE_RE = re.compile(r"(?ms)^(?:" + re.escape(UNDEFINED_NOTE) + r"\n\n)?> .*?^> — \[\[[^\]]+\]\]\n")


def what_it_is_quote(sentence: str, source: str, score: float) -> str:
    """The "What it is" section's quote of ``sentence`` from ``source`` (under its heading),
    introduced as a mention when its ``score`` says it does not say what the term is."""
    quote = f"> {quote_safe(sentence)}\n> — [[{source}]]\n"
    return quote if score >= DEFINING_SCORE else f"{UNDEFINED_NOTE}\n\n{quote}"


def replace_what_it_is_quote(section: str, quote: str) -> str:
    """``section`` ("What it is") with its quote (and its note, if any) replaced by ``quote``."""
    return _WHAT_IT_IS_QUOTE_RE.sub(lambda _m: quote, section, count=1)


@dataclass
class ConceptResult:
    links: list[tuple[str, str]] = field(default_factory=list)  # (page stem, title) for the source page
    # page -> (text on disk it was computed from, new text); several terms may touch one page
    edits: dict[str, tuple[str | None, str]] = field(default_factory=dict)

    @property
    def changes(self) -> list[PageChange]:
        return [PageChange(page, text, base=base, reason="offline engine: shared terms")
                for page, (base, text) in self.edits.items() if text != base]


class ConceptKeeper:
    def __init__(self, vault: Vault, catalog: Catalog, index: TermIndex) -> None:
        self.vault = vault
        self.catalog = catalog
        self.index = index

    # -- helpers -------------------------------------------------------------------------

    def _read(self, page: str) -> str | None:
        try:
            return self.vault.wiki_path(f"{page}.md").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _source_exists(self, stem: str) -> bool:
        return (self.vault.sources_dir / f"{stem}.md").is_file()

    def _page_for(self, term: Term, taken: set[str]) -> str:
        """The page a newly shared term gets: a page of the same title a person or a model
        made (continued), else a new flat slug that is free."""
        existing = self.catalog.resolve(term.label)
        if existing and "/" not in existing and not self.index.key_of_page(existing):
            entry = self.catalog.get(existing)
            if entry is not None and entry.type in OWN_TYPES and not entry.error:
                return existing
        base = slugify(term.label)
        if base in ("index", "log", "overview"):
            base += "-topic"
        names = set(taken)
        candidate = base
        while True:
            candidate = unique_name(base, names)
            if self._read(candidate) is None:
                return candidate
            names.add(candidate)

    # -- one source -------------------------------------------------------------------------

    def plan(self, source: str, source_title: str, terms: list[Term], sentences: list[str], today: date,
             title_matches: list[str]) -> ConceptResult:
        """Record ``source``'s terms and produce the page changes they call for. Called inside the
        index's :meth:`~TermIndex.trial` (by the planner): what it records is the plan's delta,
        made for good only once the ingest commits.

        ``sentences``: the source's main-content sentences; ``title_matches``: pages the
        catalogue found by title or alias in the source text.
        """
        result = ConceptResult()
        clean_title = _link_label(source_title)
        by_key = {t.key: t for t in terms}
        by_title: set[str] = set()
        # Pages this engine keeps, found by title in the text but not among the extracted terms.
        for name in title_matches:
            key = self.index.key_of_page(name)
            if key and key not in by_key:
                label = self.index.label(key)
                term = _term_in(label, key, sentences)
                if term is not None:
                    by_key[key] = term
                    by_title.add(key)
        terms = list(by_key.values())
        self.index.record(source, source_title, terms, frozenset(by_title))
        # First every term's page (made now, or already there), then the pages' text: "Related"
        # names the terms that have a page, so it is written once this source gave theirs.
        chosen: list[tuple[Term, str, str | None, list[Mention]]] = []
        taken: set[str] = set()
        beyond: list[tuple[str, str]] = []  # (key, page) of paged terms past the links a source gets
        for term in terms:
            if len(chosen) >= MAX_LINKS:
                page = self.index.page_of(term.key)
                if page:
                    beyond.append((term.key, page))
                continue
            # What a page needs, by key: this source's mention and how many sources mention the
            # term; the earlier mentions only when the page is made (the first MAX_LISTED).
            count = self.index.source_count(term.key)
            if count < 2:
                continue
            page = self.index.page_of(term.key)
            disk = self._read(page) if page else None
            if page and disk is None:
                page = ""  # its page was removed (or never written): make it again
            mine = self.index.mention(term.key, source)
            mentions = [mine] if mine is not None else []
            if not page:
                mentions = self._first_mentions(term.key, mine)
                if len({m.source for m in mentions}) < 2:
                    continue
                if max(m.score for m in mentions) < WHOLE_SENTENCE_SCORE:
                    continue  # no source says it in a whole sentence yet: nothing to quote as "What it is"
                page = self._page_for(term, taken)
                disk = self._read(page)
                self.index.set_page(term.key, page)
            elif (entry := self.catalog.get(page)) is not None and entry.error:
                continue  # a page we may not change (unparsable): no link to a page that does not say it
            taken.add(page)
            chosen.append((term, page, disk, mentions))
        made: list[tuple[str, str]] = []  # (key, page) of the pages made by this source
        for term, page, disk, mentions in chosen:
            change = self._update_page(page, disk, term, mentions, self.index.source_count(term.key), source,
                                       clean_title, today)
            if change is None:
                continue  # its front matter broke since the catalogue read it
            result.edits[page] = (disk, change.text)
            title = parse_page(change.text).title or term.label
            result.links.append((page, title))
            if disk is None:
                made.append((term.key, page))
                self._backfill(result, page, title, mentions, source)
        # Pages whose "Related" this source changed without writing them otherwise: those of
        # terms that share sources with a page it made, and those past its links (their shared
        # counts grew with it), so every list is what the index gives.
        self._relate_to(result, [(k, o) for key, page in made for k, o, _ in self.index.related(key, 10_000)
                                 if o != page], today)
        self._relate_to(result, beyond, today)
        # Title matches to other pages (a person's or a model's) are links too, if not generic.
        for name in title_matches:
            if len(result.links) >= MAX_LINKS + 10:
                break
            if any(stem == name for stem, _ in result.links) or self.index.key_of_page(name):
                continue
            entry = self.catalog.get(name)
            if entry is None or entry.type in ("index", "log", "overview") or entry.error:
                continue
            # A source page is a target only by a specific title: several words, none of them generic.
            if is_generic_title(entry.title) or (entry.type == "source" and len(entry.title.split()) < 2):
                continue
            result.links.append((entry.stem, entry.title))
        return result

    def _first_mentions(self, key: str, mine: Mention | None) -> list[Mention]:
        """The first MAX_LISTED mentions of ``key`` whose source pages exist, and this source's."""
        found = [m for m in self.index.mentions(key, MAX_LISTED)
                 if (mine is not None and m.source == mine.source) or self._source_exists(m.source)]
        if mine is not None and all(m.source != mine.source for m in found):
            found.append(mine)
        return found

    # -- pages ------------------------------------------------------------------------------

    def _mention_line(self, mention: Mention, titles: dict[str, str]) -> str:
        title = titles.get(mention.source) or mention.source
        link = f"[[{mention.source}]]" if title == mention.source else f"[[{mention.source}|{quote_safe(title)}]]"
        return f"- {link}: “{quote_safe(mention.sentence)}”"

    def _titles(self, sources: list[str]) -> dict[str, str]:
        titles = {}
        for stem in sources:
            entry = self.catalog.get(f"sources/{stem}")
            if entry is not None:
                titles[stem] = _link_label(entry.title)
        return titles

    def _new_page(self, page: str, term: Term, mentions: list[Mention], count: int, source: str,
                  source_title: str, today: date) -> str:
        best = max(mentions, key=lambda m: (m.score, m.source == source))
        titles = self._titles([m.source for m in mentions])
        titles[source] = source_title
        labels = []
        for m in mentions:
            if m.label.casefold() != term.label.casefold() and m.label not in labels:
                labels.append(m.label)
        body = [f"# {term.label}", "", "## What it is", "",
                what_it_is_quote(best.sentence, best.source, best.score).rstrip("\n"), "",
                f"## {MENTIONED}", ""]
        listed = mentions[:MAX_LISTED]
        body += [self._mention_line(m, titles) for m in listed]
        total = max(count, len(mentions))
        if total > len(listed):
            body.append(f"- Mentioned by {total} sources in all.")
        related = self._related_lines(term.key, page)
        if related:
            body += ["", f"## {RELATED}", ""]
            body += related
        summary = " ".join(best.sentence.split())
        meta = {
            "type": term.kind, "title": term.label,
            "summary": quote_safe(summary if len(summary) <= 200 else summary[:197].rstrip() + "…"),
            "sources": [m.source for m in listed[:MAX_FRONT_SOURCES]], "updated": today, "tags": [term.kind],
            "aliases": labels[:5],
        }
        return render_page(Page(meta, "\n".join(body) + "\n"))

    def _related_line(self, key: str, page: str) -> str:
        label = self.index.label(key)
        return f"- [[{page}]]" if label.casefold() == page.casefold() else f"- [[{page}|{quote_safe(label)}]]"

    def _related_lines(self, key: str, page: str) -> list[str]:
        """The engine's "Related" lines of ``key``'s page: the terms with a page that share the
        most sources with it (two or more), ties by key: a function of the recorded sources."""
        found = [(k, p) for k, p, _ in self.index.related(key, MAX_RELATED + 1) if p != page]
        return [self._related_line(k, p) for k, p in found[:MAX_RELATED]]

    def related_body(self, body: str, key: str, page: str) -> str:
        """``body`` with its "Related" section as the term index gives it now (written whole
        each time the page is, so it never depends on the order the sources came in). Lines the
        engine does not write there (a person's note, a link with words of its own, a link to a
        page the engine does not keep) are kept, after the engine's."""
        lines = self._related_lines(key, page)
        section = get_section(body, RELATED)
        own: list[str] = []
        if section is not None:
            for line in section.rstrip("\n").split("\n")[1:]:
                match = _ENGINE_RELATED_LINE.match(line)
                if (match and self.index.key_of_page(match.group(1).strip())) or line in lines:
                    continue
                own.append(line)
            while own and not own[0].strip():
                own.pop(0)
            while own and not own[-1].strip():
                own.pop()
        if own and lines and not own[0].startswith(("- ", "* ")):
            own.insert(0, "")  # a paragraph of theirs stays a paragraph, not part of the list
        return put_section(body, RELATED, lines + own)

    def _relate_to(self, result: ConceptResult, pages: list[tuple[str, str]], today: date) -> None:
        """(key, page): pages this source does not write otherwise, given "Related" as the
        index has it now when that differs from theirs."""
        for key, page in pages:
            if page in result.edits:
                continue
            disk = self._read(page)
            if disk is None:
                continue
            try:
                parsed = parse_page(disk)
            except FrontMatterError:
                continue
            body = self.related_body(parsed.body, key, page)
            if body == parsed.body:
                continue
            parsed.body = body
            parsed.meta["updated"] = today
            result.edits[page] = (disk, render_page(parsed))

    def _update_page(self, page: str, disk: str | None, term: Term, mentions: list[Mention], count: int,
                     source: str, source_title: str, today: date) -> PageChange | None:
        """``mentions``: the first ones for a new page, else this source's (if any); ``count``:
        how many sources mention the term in all."""
        if disk is None:
            text = self._new_page(page, term, mentions, count, source, source_title, today)
            return PageChange(page, text, base=None, reason=f"shared term: {term.label}")
        try:
            parsed = parse_page(disk)
        except FrontMatterError:
            return None
        meta = parsed.meta
        body = parsed.body
        mine = next((m for m in mentions if m.source == source), None)
        changed = False
        section = get_section(body, MENTIONED)
        if mine is not None and f"[[{source}]]" not in (section or "") and f"[[{source}|" not in (section or ""):
            titles = {source: source_title}
            listed = len(re.findall(r"^- \[\[", section or "", re.MULTILINE))
            if section is None:
                body = _append_section(body, MENTIONED, [self._mention_line(mine, titles)])
            elif listed < MAX_LISTED:
                lines = section.rstrip("\n").split("\n")
                count_at = next((i for i, line in enumerate(lines) if line.startswith("- Mentioned by ")), len(lines))
                lines.insert(count_at, self._mention_line(mine, titles))
                body = set_section(body, MENTIONED, "\n".join(lines) + "\n\n")
            else:
                lines = [line for line in section.rstrip("\n").split("\n") if not line.startswith("- Mentioned by ")]
                lines.append(f"- Mentioned by {max(count, listed + 1)} sources in all.")
                body = set_section(body, MENTIONED, "\n".join(lines) + "\n\n")
            changed = True
        related = self.related_body(body, term.key, page)
        if related != body:
            body = related
            changed = True
        sources = meta.get("sources") or []
        if not isinstance(sources, list):
            sources = [sources]
        if mine is not None and source not in sources and len(sources) < MAX_FRONT_SOURCES:
            meta["sources"] = [*sources, source]
            changed = True
        upgraded = self._better_definition(body, term, mine, source, meta)
        if upgraded is not None:
            body = upgraded
            changed = True
        aliases = [str(a) for a in meta.get("aliases") or []] if isinstance(meta.get("aliases"), list) else []
        title = str(meta.get("title") or "")
        if (mine is not None and mine.label.casefold() != title.casefold()
                and mine.label.casefold() not in {a.casefold() for a in aliases} and len(aliases) < 10):
            meta["aliases"] = [*aliases, mine.label]
            changed = True
        if not changed:
            return PageChange(page, disk, base=disk, reason="unchanged")
        meta["updated"] = today
        parsed.body = body
        return PageChange(page, render_page(parsed), base=disk, reason=f"shared term: {term.label}")

    def _better_definition(self, body: str, term: Term, mine: Mention | None, source: str,
                           meta: dict[str, object]) -> str | None:
        """The body with "What it is" quoting this source's sentence, when it defines the term
        better than the quote there ("CSRF attacks allow …" over "Another big problem is CSRF.");
        None when it does not, or when the section is not the quote this engine wrote (a
        person's or a model's text is never replaced)."""
        if mine is None:
            return None
        section = get_section(body, "What it is")
        match = re.fullmatch(r"## What it is[ \t]*\n\s*(?:" + re.escape(UNDEFINED_NOTE) + r"\n\s*)?"
                             r"> (.*)\n> — \[\[([^\]|]+)\]\]\s*", section or "")
        if match is None:
            return None
        label = str(meta.get("title") or term.label)
        current = match.group(1)
        if _definition_score(label, mine.sentence) <= _definition_score(label, current) \
                or quote_safe(mine.sentence) == current:
            return None
        summary = " ".join(mine.sentence.split())
        meta["summary"] = quote_safe(summary if len(summary) <= 200 else summary[:197].rstrip() + "…")
        quote = what_it_is_quote(mine.sentence, source, _definition_score(label, mine.sentence))
        return set_section(body, "What it is", f"## What it is\n\n{quote}\n")

    def _backfill(self, result: ConceptResult, page: str, title: str, mentions: list[Mention], source: str) -> None:
        """Earlier sources that mention a term that just got its page link to it."""
        for mention in mentions[:MAX_BACKFILL]:
            if mention.source == source:
                continue
            name = f"sources/{mention.source}"
            disk, current = result.edits.get(name) or (self._read(name), None)
            if disk is None:
                continue
            try:
                parsed = parse_page(current if current is not None else disk)
            except FrontMatterError:
                continue
            section = get_section(parsed.body, RELATED_SOURCE_SECTION) or ""
            if f"[[{page}]]" in section or f"[[{page}|" in section:
                continue
            line = f"- [[{page}]]" if title.casefold() == page.casefold() else f"- [[{page}|{quote_safe(title)}]]"
            if section:
                extended = section.rstrip("\n") + "\n" + line + "\n"
                parsed.body = set_section(parsed.body, RELATED_SOURCE_SECTION, extended)
            else:
                parsed.body = _append_section(parsed.body, RELATED_SOURCE_SECTION, [line])
            result.edits[name] = (disk, render_page(parsed))

    # -- overview.md ------------------------------------------------------------------------

    def overview_change(self, today: date, current_source: str) -> PageChange | None:
        """overview.md's generated block, from the term index and REVIEW.md (bounded work)."""
        disk = self._read("overview")
        lines = [OVERVIEW_START, "", "## What this wiki covers", ""]
        total_sources = self.index.source_total()
        paged = self.index.paged_count()
        lines.append(f"{total_sources} source(s); {paged} concept and entity page(s) shared by two or more sources.")
        # Ranked by how central a term is: how many sources mention it, times how specific it is
        # (a name or a domain term over a word every text uses).
        top = sorted(self.index.top_paged(60), key=lambda row: (-row[3] * specificity(row[1]), row[0]))[:15]
        if top:
            lines += ["", "The main ones, by how many sources mention them and how specific they are:", ""]
            for _key, label, page, count in top:
                shown = f"[[{page}]]" if label.casefold() == page.casefold() else f"[[{page}|{quote_safe(label)}]]"
                lines.append(f"- {shown} — {count} sources")
        newest = self.index.newest_sources(10)
        if newest:
            lines += ["", "## Newest sources", ""]
            for stem, title in newest:
                if not self._source_exists(stem) and stem != current_source:
                    continue
                clean = _link_label(title)
                lines.append(f"- [[{stem}|{clean}]]" if clean else f"- [[{stem}]]")
        questions = self._open_questions()
        lines += ["", "## Open questions", ""]
        if questions:
            lines += [f"- {q}" for q in questions[:10]]
            if len(questions) > 10:
                lines.append(f"- … and {len(questions) - 10} more in REVIEW.md")
        else:
            lines.append("None waiting in REVIEW.md.")
        lines += ["", OVERVIEW_END]
        block = "\n".join(lines)
        if disk is None:
            fresh = Page({"type": "overview", "title": "Overview", "updated": today},
                         "# Overview\n\n" + block + "\n")
            return PageChange("overview", render_page(fresh), base=None, reason="overview")
        try:
            parsed = parse_page(disk)
        except FrontMatterError:
            return None  # a person's broken front matter: leave the page to them (lint reports it)
        body = parsed.body
        start, end = body.find(OVERVIEW_START), body.find(OVERVIEW_END)
        if start != -1 and end > start:
            new_body = body[:start] + block + body[end + len(OVERVIEW_END):]
        else:
            new_body = body.rstrip("\n") + "\n\n" + block + "\n"
        if new_body == body:
            return None
        parsed.body = new_body
        return PageChange("overview", render_page(parsed), base=disk, reason="overview")

    def _open_questions(self) -> list[str]:
        try:
            text = self.vault.review_file.read_text(encoding="utf-8")
        except OSError:
            return []
        found = []
        for line in text.splitlines():
            match = re.match(r"^\s*[-*]\s+\[ \]\s+(.+)$", line)
            if match:
                item = re.sub(r"\s*\^[\w-]+\s*$", "", match.group(1)).strip()
                item = item if len(item) <= 160 else item[:157].rsplit(" ", 1)[0] + "…"
                found.append(item.replace("[[", "[\\[") if item.count("[[") != item.count("]]") else item)
        return found


def _link_label(title: str) -> str:
    """A title usable as a link's display text (no ``|`` or brackets)."""
    return " ".join(title.replace("|", "/").replace("]", ")").replace("[", "(").split())


def put_section(body: str, heading: str, lines: list[str]) -> str:
    """``body`` with the ``## heading`` section holding ``lines`` (appended at the end when it
    has none; removed, when ``lines`` is empty), spaced as the engine writes a page."""
    current = get_section(body, heading)
    if current is None:
        return _append_section(body, heading, lines) if lines else body
    last = body.endswith(current)
    text = f"## {heading}\n\n" + "\n".join(lines) + "\n" + ("" if last else "\n") if lines else ""
    new = set_section(body, heading, text)
    return new.rstrip("\n") + "\n" if last and not lines else new


def _append_section(body: str, heading: str, lines: list[str]) -> str:
    return body.rstrip("\n") + f"\n\n## {heading}\n\n" + "\n".join(lines) + "\n"


def _term_in(label: str, key: str, sentences: list[str]) -> Term | None:
    sentence, score = mention_sentence(label, sentences)
    return Term(key, label, "concept", sentence, score) if sentence else None
