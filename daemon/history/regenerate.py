"""What the offline engine derives from its term index, recomputed without one source.

A revert (or a sync'd source reverted here) does not reverse-patch generated text: a concept
page's "Mentioned in", "What it is", "Related", its ``sources`` and ``aliases`` and its very
existence, the "Related pages" links on source pages and overview.md's block are functions of
the recorded sources. So the source is taken out of the term index (``terms.forget_source``)
and every page that depended on it is brought to what the remaining sources give:

- a concept page still shared by two or more sources loses the source's line, its entry in
  ``sources`` and an alias only it used; its "What it is" quote, when it was the source's, is
  the one the engine would have chosen without it (the best of the first two sources that
  share the term); "Related" is rendered again by the engine's own function once every removal
  is known, on these pages and on every concept page whose list named a removed one (the next
  term in rank takes the place, as in a wiki that never had the source);
- a concept page that no longer qualifies by the engine's rule (two sources share the term and
  one of them says it in a whole sentence) is removed if nobody but wikiwright ever changed it,
  else kept with a note saying why;
- a generated link line to a removed page ("Related pages", a person's page's "Related") goes
  wherever it is;
- overview.md's block is rendered again from the index (the engine's own ``overview_change``).

A source the term index here never recorded (ingested on another machine and merged by sync)
is taken out of the pages by what they say: the "Mentioned in" lines that cite it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date

from ..core.errors import WikiwrightError
from ..door import Operation
from ..ingest.concepts import (
    MAX_LISTED,
    MENTIONED,
    OVERVIEW_END,
    OVERVIEW_START,
    RELATED_SOURCE_SECTION,
    ConceptKeeper,
    quote_safe,
    replace_what_it_is_quote,
    what_it_is_quote,
)
from ..ingest.offline import digest, humanize_file_name
from ..ingest.plan import redact_source
from ..ingest.terms import WHOLE_SENTENCE_SCORE, Mention, TermIndex, extract_terms, forget_mention, forget_source
from ..intake.extract import read_source
from ..intake.ledger import SourceRecord
from ..intake.names import disk_path
from ..wiki.pages import FrontMatterError, Page, get_section, parse_page, render_page, set_section
from ..wiki.writer import PageChange
from .lookup import PersonEdits, bodies_mentioning, pages_mentioning, read_pages

log = logging.getLogger(__name__)

OWN_TYPES = ("entity", "concept", "topic", "stub")
_LINK_LINE = re.compile(r"^- \[\[([^\]|#]+)(?:[|#][^\]]*)?\]\]")


@dataclass
class Regeneration:
    edits: dict[str, tuple[str, str]] = field(default_factory=dict)  # page -> (current, new)
    deletes: dict[str, str] = field(default_factory=dict)  # page -> current text
    notes: list[str] = field(default_factory=list)
    handled: set[str] = field(default_factory=set)  # pages not to reverse-patch

    def text(self, page: str, session: Operation) -> str | None:
        if page in self.edits:
            return self.edits[page][1]
        return session.read(page)

    def put(self, page: str, session: Operation, new: str) -> None:
        base = self.edits[page][0] if page in self.edits else session.read(page)
        if base is not None:
            self.edits[page] = (base, new)


def _mention_sources(body: str) -> list[str]:
    section = get_section(body, MENTIONED) or ""
    return [m.group(1) for line in section.splitlines() if (m := _LINK_LINE.match(line))]


def _drop_link_lines(body: str, heading: str, targets: set[str]) -> str:
    """Remove generated ``- [[target…]]`` lines from one section; an emptied section goes."""
    section = get_section(body, heading)
    if section is None:
        return body
    lines = section.splitlines(keepends=True)
    kept = [line for line in lines
            if not ((m := _LINK_LINE.match(line)) and m.group(1).rsplit("/", 1)[-1].casefold() in targets)]
    if kept == lines:
        return body
    if not any(_LINK_LINE.match(line) or (line.strip() and not line.startswith("## ")) for line in kept):
        kept = []
    new = "".join(kept)
    if not new:
        return set_section(body, heading, "")
    if not new.endswith("\n\n") and not body.endswith(section):
        new = new.rstrip("\n") + "\n\n"
    return set_section(body, heading, new)


class Regenerator:
    def __init__(self, session: Operation, index: TermIndex, stem: str, today: date) -> None:
        self.session = session
        self.stem = stem
        self.today = today
        self.index = index  # the process's term index (its vault context's)
        self.keeper = ConceptKeeper(session.vault, session.catalog, self.index)
        self.result = Regeneration()
        self.person = PersonEdits(session)
        self.dropped: dict[str, set[str]] = {}  # key -> sources whose title-match mention went
        self._terms_cache: dict[str, set[str] | None] = {}
        self._records: dict[str, SourceRecord] | None = None
        self._pages: dict[str, str] = {}
        self._removed: set[str] = set()  # pages removed by this revert (case-folded)
        self.had_block = OVERVIEW_START in (session.read("overview") or "")

    def _source_exists(self, stem: str) -> bool:
        return stem != self.stem and (self.session.vault.sources_dir / f"{stem}.md").is_file()

    def engine_page(self, page: str) -> bool:
        """A page the offline engine keeps (by the index, or by its shape after a sync)."""
        if self.index.key_of_page(page):
            return True
        text = self.session.read(page)
        if text is None:
            return False
        try:
            parsed = parse_page(text)
        except FrontMatterError:
            return False
        return parsed.meta.get("type") in OWN_TYPES and get_section(parsed.body, MENTIONED) is not None

    def run(self, diff_pages: list[str]) -> Regeneration:
        """Take the source out of the index and recompute every page that depended on it."""
        said = forget_source(self.index, self.stem)
        mine = {m.key: m for m, _, _ in said}
        pages: dict[str, str] = {page: m.key for m, page, _ in said if page}
        for m, page, earlier in said:
            if page and earlier < 2:
                self._page_made_later(m.key, earlier)
        for page in diff_pages:
            if "/" not in page and page not in pages and page != "overview" and self.engine_page(page):
                pages[page] = self.index.key_of_page(page) if said else ""
        if not said:
            # This machine's index never recorded the source (it was ingested on another machine
            # and arrived by sync): the pages that list it say what it was part of.
            needles = (f"[[{self.stem}]]", f"[[{self.stem}|")
            for name, body in bodies_mentioning(self.session, [self.stem]):
                if "/" not in name and name not in pages and any(n in body for n in needles) \
                        and self.engine_page(name):
                    pages[name] = ""
        self._pages = pages
        removed: set[str] = set()
        for page, key in sorted(pages.items()):
            if self._concept(page, key, mine.get(key)):
                removed.add(page)
        # "Related" once every removal is known: a page that goes is named nowhere, and the
        # next term in rank takes its place, as in a wiki that never had the source.
        self._removed = {p.casefold() for p in removed}
        for page, key in sorted(pages.items()):
            if key and page not in removed:
                self._relate(page, key)
        if removed or self.dropped:
            self._unlink(removed)
        self.result.handled |= set(pages)
        return self.result

    def _page_made_later(self, key: str, earlier: int) -> None:
        """The source was one of the first two to mention ``key``, so without it the term got its
        page later. A source in between whose mention only came from matching that page's title
        (the engine links pages it finds by title) would not mention it: that mention goes."""
        remaining = [m for m in self.index.mentions(key, 10_000) if self._source_exists(m.source)]
        counted = earlier  # sources before it were read with no page to match: their own terms
        for mention in remaining[earlier:]:
            if counted >= 2:
                break
            own = self._own_terms(mention.source)
            if own is None or key in own:
                counted += 1
                continue
            forget_mention(self.index, key, mention.source)
            self.dropped.setdefault(key, set()).add(mention.source)

    def _own_terms(self, stem: str) -> set[str] | None:
        """The terms a source's own text gives (read again from raw/), cached; None when it
        cannot be read again (its mentions then stay as recorded)."""
        if stem in self._terms_cache:
            return self._terms_cache[stem]
        keys: set[str] | None = None
        session = self.session
        if self._records is None:  # one listing of the ledger, not one per source read again
            self._records = {}
            for r in session.ledger.sources():
                self._records.setdefault(r.page, r)  # the first, as the ingest order has it
        record = self._records.get(f"sources/{stem}")
        if record is not None:
            try:
                data = disk_path(session.vault.root, record.path).read_bytes()
                source, _ = redact_source(session.config, read_source(disk_path(session.vault.root, record.path),
                                                                      data))
                summary = digest(source.text, source.kind, source.doc_title, humanize_file_name(record.path),
                                 session.config.ingest.summary_sentences, session.config.ingest.key_points)
                keys = {t.key for t in extract_terms(summary.body, summary.title, summary.sentences,
                                                     known=self.index.known)}
            except (OSError, WikiwrightError) as exc:
                log.info("cannot read %s again (%s); its mentions stay as recorded", record.path, exc)
        self._terms_cache[stem] = keys
        return keys

    # -- one concept page -------------------------------------------------------------------

    def _concept(self, page: str, key: str, mine: Mention | None) -> bool:
        """Recompute one page; True when it is removed."""
        session, res = self.session, self.result
        text = res.text(page, session)
        if text is None:
            return False
        try:
            parsed = parse_page(text)
        except FrontMatterError:
            res.notes.append(f"wiki/{page}.md has broken front matter; left as it is")
            return False
        if key:
            remaining = [m for m in self.index.mentions(key, 10_000) if self._source_exists(m.source)]
        else:  # a page this machine's index does not know: what the page itself lists
            listed = [s for s in _mention_sources(parsed.body) if self._source_exists(s)]
            remaining = [Mention(key, s, "", "", 0.0) for s in listed]
        if self.stem not in (parsed.meta.get("sources") or []) and self.stem not in _mention_sources(parsed.body) \
                and mine is None:
            return False
        sources = list(dict.fromkeys(m.source for m in remaining))
        gone = {self.stem, *self.dropped.get(key, set())}
        # The engine's own rule for a page: two sources share the term and one of them says it
        # in a whole sentence (the source reverted may have been the only one that did).
        why = "" if len(sources) >= 2 else "fewer than two sources mention it"
        if not why and key and max(m.score for m in remaining) < WHOLE_SENTENCE_SCORE:
            why = "no source left says it in a whole sentence"
        if why:
            if not self.person.touched(page):
                res.deletes[page] = session.read(page) or text
                if key:
                    self.index.set_page(key, "")
                return True
            res.notes.append(f"wiki/{page}.md is kept although {why} now: a person edited it")
            parsed.body = self._note(self._strip_source(parsed.body, gone), why)
        else:
            parsed.body = self._refill(self._strip_source(parsed.body, gone), remaining)
            parsed.body = self._count(parsed.body, len(sources))
            parsed.body = self._what_it_is(parsed, remaining)
        meta = parsed.meta
        in_meta = meta.get("sources")
        if isinstance(in_meta, list) and gone & set(in_meta):
            meta["sources"] = [s for s in in_meta if s not in gone]
        aliases = meta.get("aliases")
        if mine is not None and isinstance(aliases, list):
            others = {m.label.casefold() for m in remaining}
            meta["aliases"] = [a for a in aliases
                               if str(a).casefold() != mine.label.casefold() or str(a).casefold() in others]
        new = render_page(parsed)
        if new != text:
            res.put(page, session, new)
        return False

    def _strip_source(self, body: str, gone: set[str]) -> str:
        section = get_section(body, MENTIONED)
        if section is None:
            return body
        lines = section.splitlines(keepends=True)
        kept = [line for line in lines if not ((m := _LINK_LINE.match(line)) and m.group(1) in gone)]
        return set_section(body, MENTIONED, "".join(kept)) if kept != lines else body

    @staticmethod
    def _count(body: str, total: int) -> str:
        """The engine's "Mentioned by N sources in all." line says how many mention it now."""
        section = get_section(body, MENTIONED)
        if section is None or "- Mentioned by " not in section:
            return body
        new = re.sub(r"(?m)^- Mentioned by \d+ sources in all\.", f"- Mentioned by {total} sources in all.", section)
        return set_section(body, MENTIONED, new) if new != section else body

    def _refill(self, body: str, remaining: list[Mention]) -> str:
        """A list the engine capped at MAX_LISTED lines, one short now: the next sources that
        mention the term take the free places, in ingest order, as the engine fills it."""
        section = get_section(body, MENTIONED)
        if section is None or not remaining or not remaining[0].sentence:
            return body
        lines = section.rstrip("\n").split("\n")
        listed = {m.group(1) for line in lines if (m := _LINK_LINE.match(line)) and not line.startswith("- Mentioned")}
        if not any(line.startswith("- Mentioned by ") for line in lines) or len(listed) >= MAX_LISTED:
            return body
        extra = [m for m in remaining if m.source not in listed][: MAX_LISTED - len(listed)]
        if not extra:
            return body
        count_at = next((i for i, line in enumerate(lines) if line.startswith("- Mentioned by ")), len(lines))
        lines[count_at:count_at] = [self._mention_line(m) for m in extra]
        return set_section(body, MENTIONED, "\n".join(lines) + "\n\n")

    def _mention_line(self, mention: Mention) -> str:
        entry = self.session.catalog.get(f"sources/{mention.source}")
        title = " ".join((entry.title if entry else "").replace("|", "/").replace("]", ")").replace("[", "(").split())
        link = f"[[{mention.source}|{quote_safe(title)}]]" if title and title != mention.source else \
            f"[[{mention.source}]]"
        return f"- {link}: “{quote_safe(mention.sentence)}”"

    def _what_it_is(self, page: Page, remaining: list[Mention]) -> str:
        body = page.body
        section = get_section(body, "What it is")
        if section is None or f"> — [[{self.stem}]]" not in section or not remaining[0].sentence:
            return body
        # The engine quotes the best sentence of the sources that shared the term when its page
        # was made: without this source, the first two that remain (a tie goes to the later).
        first_two = remaining[:2]
        best = max(first_two, key=lambda m: (m.score, m is first_two[-1]))
        new = replace_what_it_is_quote(section, what_it_is_quote(best.sentence, best.source, best.score))
        summary = " ".join(best.sentence.split())
        meta = page.meta
        if "summary" in meta:
            meta["summary"] = quote_safe(summary if len(summary) <= 200 else summary[:197].rstrip() + "…")
        return set_section(body, "What it is", new)

    def _related_body(self, body: str, key: str, page: str) -> str:
        """``body`` with "Related" as the engine renders it from the index without the source
        (the same function an ingest uses); lines to pages this revert removes go first, so
        they are not taken for a person's."""
        return self.keeper.related_body(_drop_link_lines(body, "Related", self._removed), key, page)

    def _relate(self, page: str, key: str) -> None:
        session, res = self.session, self.result
        text = res.text(page, session)
        if text is None:
            return
        try:
            parsed = parse_page(text)
        except FrontMatterError:
            return
        body = self._related_body(parsed.body, key, page)
        if body != parsed.body:
            parsed.body = body
            res.put(page, session, render_page(parsed))

    def _note(self, body: str, why: str) -> str:
        note = (f"> [!note] {why[:1].upper()}{why[1:]} since the ingest of [[{self.stem}]] was reverted "
                f"({self.today.isoformat()}); kept because a person edited this page.\n\n")
        if note.split(" since")[0] in body:
            return body
        lines = body.splitlines(keepends=True)
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
        while at < len(lines) and not lines[at].strip():
            at += 1
        lines.insert(at, note)
        return "".join(lines)

    # -- links to removed pages -------------------------------------------------------------

    def _unlink(self, removed: set[str]) -> None:
        """Generated link lines to removed pages, wherever they are, and the links of sources
        whose mention went (``dropped``) to the page that still stands."""
        targets = {p.rsplit("/", 1)[-1].casefold() for p in removed}
        needles = [f"[[{t}" for t in targets | {p.casefold() for p in self._pages}]
        session, res = self.session, self.result
        extra: dict[str, set[str]] = {}
        for key, stems in self.dropped.items():
            page = self.index.page_of(key) or next((p for p, k in self._pages.items() if k == key), "")
            if page and page not in removed:
                for stem in stems:
                    extra.setdefault(f"sources/{stem}", set()).add(page.casefold())
        # Only pages whose text has such a link can hold such a line: git grep finds them
        # (reading every page in Python cost 0.4 s at 2,000 pages). A page listing one of this
        # source's pages under "Related" still shares as many sources with it unless a mention
        # went with it (``dropped``): only then are those (concept pages) looked at.
        found = pages_mentioning(session, [f"[[{t}" for t in targets])
        if found is not None and self.dropped:
            related = pages_mentioning(session, [f"[[{p.casefold()}" for p in self._pages], top_level=True)
            found = None if related is None else found | related
        bodies = session.catalog.iter_bodies() if found is None else read_pages(session, found | set(extra))
        for name, body in bodies:
            if name in removed or name in ("index", "log", "overview") or name == f"sources/{self.stem}":
                continue
            low = body.casefold()
            if name not in extra and not any(n in low for n in needles):
                continue
            # Checked on the file first: reading through the operation settles the page (a git
            # call), worth it only for a page that changes.
            if name not in res.edits and self._unlinked(name, body, targets, extra) is None:
                continue
            text = res.text(name, session)
            new = self._unlinked(name, text, targets, extra) if text is not None else None
            if new is not None:
                res.put(name, session, new)
                res.handled.add(name)

    def _unlinked(self, name: str, text: str, targets: set[str], extra: dict[str, set[str]]) -> str | None:
        """``text`` without its generated links to ``targets`` (None: nothing to take out)."""
        try:
            parsed = parse_page(text)
        except FrontMatterError:
            return None
        mine = targets | extra.get(name, set())
        new_body = _drop_link_lines(parsed.body, RELATED_SOURCE_SECTION, mine)
        key = self.index.key_of_page(name) if "/" not in name else ""
        # A concept page: its list as the index gives it now (a place freed is taken by the next).
        new_body = self._related_body(new_body, key, name) if key else _drop_link_lines(new_body, "Related", targets)
        if new_body == parsed.body:
            return None
        parsed.body = new_body
        return render_page(parsed)

    # -- overview.md ------------------------------------------------------------------------

    def overview(self) -> PageChange | None:
        """overview.md's block from the index as it is now (call after pages are written), if
        overview.md had one before this operation."""
        if not self.had_block:
            return None
        return self.keeper.overview_change(self.today, "")


def mask_overview(text: str | None) -> str | None:
    """overview.md without its generated block (reverse-patched apart; rendered again after)."""
    if text is None:
        return None
    start, end = text.find(OVERVIEW_START), text.find(OVERVIEW_END)
    if start == -1 or end < start:
        return text
    return text[:start].rstrip("\n") + "\n" + text[end + len(OVERVIEW_END):].lstrip("\n")
