"""The model's operations contract: the JSON schema, the checks, and how code applies them.

The model never writes files: it proposes operations (create a page, add to or replace a
section, add a claim, close a question, add aliases or links) and this module checks each
one and applies it to an in-memory copy of the pages. An operation that fails a check is
*held* (with a reason, for REVIEW.md) and the others still apply. Claims, front matter
(``sources``, ``updated``) and the Claims section are rendered here by code, never by the
model; a claim that replaces a value strikes the old claim through on every page stating it.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..core.errors import UnsafePathError
from ..core.vault import Vault
from ..ingest.llm import validate
from ..ingest.normalize import Normaliser
from ..wiki.pages import (
    SPECIAL_PAGES,
    Claim,
    Page,
    get_section,
    iter_links,
    parse_claim_line,
    parse_page,
    render_claims,
    render_page,
    set_section,
    slugify,
)
from ..wiki.sanitize import (
    clean_line,
    clean_markdown,
    code_span,
    escape_text,
    link_target_problem,
    lookalike_problem,
    one_line,
)

log = logging.getLogger(__name__)

MAX_TEXT = 8000  # characters in one section or page body from the model
MAX_OPERATIONS = 60  # operations applied from one reply; any further ones are held
EDITABLE_TYPES = ["entity", "concept", "topic"]
CODE_OWNED_SECTIONS = {"claims"}

# -- the schema -------------------------------------------------------------------------------

_PAGE = {"type": "string", "minLength": 1, "maxLength": 120}
_TEXT = {"type": "string", "maxLength": MAX_TEXT}
_HEADING = {"type": "string", "minLength": 1, "maxLength": 80}


def _op(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"op": {"type": "string", "const": name}, **props},
        "required": ["op", *required],
        "additionalProperties": False,
    }


OPERATION_SCHEMAS: dict[str, dict[str, Any]] = {
    "create_page": _op("create_page", {
        "page": _PAGE, "type": {"type": "string", "enum": EDITABLE_TYPES},
        "title": {"type": "string", "minLength": 1, "maxLength": 120},
        "summary": {"type": "string", "maxLength": 400}, "body": _TEXT,
        "aliases": {"type": "array", "items": {"type": "string", "maxLength": 80}, "maxItems": 10},
    }, ["page", "type", "title", "summary", "body"]),
    "add_to_section": _op("add_to_section", {"page": _PAGE, "heading": _HEADING, "text": _TEXT},
                          ["page", "heading", "text"]),
    "replace_section": _op("replace_section", {"page": _PAGE, "heading": _HEADING, "text": _TEXT},
                           ["page", "heading", "text"]),
    "add_claim": _op("add_claim", {
        "page": _PAGE, "key": {"type": "string", "minLength": 1, "maxLength": 100,
                               "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.\-/]*$"},
        "value": {"type": "string", "minLength": 1, "maxLength": 300},
        "as_of": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "quote": {"type": "string", "minLength": 1, "maxLength": 1000},
        "replaces": {"type": "boolean"},
        "replaces_key": {"type": "string", "maxLength": 100},
    }, ["page", "key", "value", "as_of", "quote", "replaces"]),
    "close_question": _op("close_question", {
        "page": _PAGE, "question": {"type": "string", "minLength": 1, "maxLength": 500},
        "answer": {"type": "string", "minLength": 1, "maxLength": 500},
    }, ["page", "question", "answer"]),
    "add_aliases": _op("add_aliases", {
        "page": _PAGE, "aliases": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 80},
                                   "minItems": 1, "maxItems": 10},
    }, ["page", "aliases"]),
    "add_links": _op("add_links", {
        "page": _PAGE, "links": {"type": "array", "items": _PAGE, "minItems": 1, "maxItems": 20},
    }, ["page", "links"]),
}

# What a reply must be to be read at all: an object with an operations array. Everything else
# (title, summary, each operation) is checked on its own, so one odd field costs only itself.
REPLY_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "properties": {"operations": {"type": "array"}},  # past MAX_OPERATIONS, the rest is held
    "required": ["operations"],
}

REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 120},
        "summary": {"type": "string", "maxLength": 1200},
        "key_points": {"type": "array", "items": {"type": "string", "maxLength": 400}, "maxItems": 12},
        "operations": {"type": "array", "items": {"anyOf": list(OPERATION_SCHEMAS.values())},
                       "maxItems": MAX_OPERATIONS},
    },
    "required": ["title", "summary", "operations"],
    "additionalProperties": False,
}


def schemas_document() -> dict[str, Any]:
    """What ``wikiwright schema`` prints."""
    return {"ingest_reply": REPLY_SCHEMA, "operations": OPERATION_SCHEMAS}


# -- checks on model text -----------------------------------------------------------------------

# Fields of an operation that become page text, and whether each is one line.
_MULTILINE_FIELDS = ("body", "text")
_LINE_FIELDS = ("title", "summary", "answer", "value", "question", "heading")
_STRICT_LINE_FIELDS = ("title", "heading")  # written as they are; the others are squashed to one line
_LIST_FIELDS = ("aliases",)


def unsafe_text(op: dict[str, Any], allow_remote_images: bool = False) -> str:
    """Why the page text an operation carries is unsafe (wiki/sanitize.py), else ''.

    The model path holds such an operation back (REVIEW.md shows the reason) rather than
    applying a cleaned version a person has not seen.
    """
    problems: list[str] = []
    for key in _MULTILINE_FIELDS:
        if isinstance(op.get(key), str):
            problems += [f"{key}: {note}" for note in
                         clean_markdown(op[key], allow_remote_images=allow_remote_images).notes]
    for key in _LINE_FIELDS:
        if isinstance(op.get(key), str):
            value = op[key]
            flat = " ".join(value.split())
            if one_line(flat) != flat or (key in _STRICT_LINE_FIELDS and flat != value.strip()):
                # A line break could add lines (a heading, a list item, front matter) to the page.
                problems.append(f"{key}: a one-line value holds line breaks or control characters")
            problems += [f"{key}: {note}" for note in
                         clean_markdown(value, allow_remote_images=allow_remote_images).notes]
    for key in _LIST_FIELDS:
        for item in op.get(key) or []:
            if not isinstance(item, str):
                continue
            problem = link_target_problem(item.strip())
            if problem:
                problems.append(f"{key}: {problem.replace('link target', 'alias')}")
            notes = clean_markdown(item, allow_remote_images=allow_remote_images).notes
            problems += [f"{key}: {note}" for note in notes]
    return "; ".join(dict.fromkeys(problems))


def _squash(text: str) -> str:
    return " ".join(text.split())


def _plain(text: str) -> str:
    text = re.sub(r"[*_`~]", "", text)
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
    return _squash(text).casefold()


# Typography a model rewrites while copying a sentence: curly and straight quote marks, dash
# forms, no-break spaces. Folded on both sides; a word is never folded into another.
_TYPOGRAPHY = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
                             "\u2033": '"', "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'",
                             "\u00a0": " ", "\u202f": " ", "\u2009": " "})
_DASH_RE = re.compile(r"\s*[-\u2010-\u2015\u2212]+\s*")
_ELLIPSIS_RE = re.compile(r"\s*[\[(]?\s*(?:\u2026|\.\s?\.\s?\.)\s*[\])]?\s*")
_EMPHASIS_RE = re.compile(r"[*_`~]+")
_PUNCTUATION_RE = re.compile(r"[\",;:!?()\[\]{}]|\.(?!\d)")
MIN_QUOTE = 8  # characters of a quote (without its ellipses): shorter says too little to check
MIN_QUOTE_PART = 4  # characters of each part of a quote cut by an ellipsis


def _fold_quote_text(text: str) -> str:
    text = _EMPHASIS_RE.sub("", text.translate(_TYPOGRAPHY))
    # Dashes and hyphens (``30-day``, ``30–day``, ``a — b``), double quote marks and the
    # punctuation between words (a comma a model turned into a dash) are typography, not words:
    # they fold to a space on both sides. A point inside a number (``1.5``) is kept.
    text = _DASH_RE.sub(" ", text)
    text = _PUNCTUATION_RE.sub(" ", text)
    return _squash(text).casefold()


def quote_in_source(quote: str, source: str) -> bool:
    """The quote says what the source says, word for word: typography aside.

    Tolerated: quote marks and dashes in any form, whitespace runs and line breaks, markdown
    emphasis, case, an ellipsis at either end, a dropped (or added) final full stop, and an
    ellipsis in the middle when both parts appear in that order within one paragraph of the
    source. Not tolerated: a changed, added or missing word."""
    folded = _fold_quote_text(_ELLIPSIS_RE.sub(" \u2026 ", quote.strip()))
    parts = [p.strip(" '") for p in folded.split("\u2026")]
    parts = [p for p in parts if p]
    if not parts or sum(len(p) for p in parts) < MIN_QUOTE:
        return False
    if len(parts) == 1:
        return f" {parts[0]} " in f" {_fold_quote_text(_ELLIPSIS_RE.sub(' … ', source))} "
    if any(len(p) < MIN_QUOTE_PART for p in parts):
        return False
    for paragraph in re.split(r"\n[ \t]*\n", source):
        text = f" {_fold_quote_text(_ELLIPSIS_RE.sub(' … ', paragraph))} "
        pos = 0
        for part in parts:
            found = text.find(f" {part} ", pos)
            if found < 0:
                break
            pos = found + len(part) + 1
        else:
            return True
    return False


def page_name_problem(name: str, vault: Vault) -> str:
    """A reason when ``name`` breaks the page-naming rule or leaves wiki/, else ''."""
    if name in ("index", "log"):
        return f"{name}.md is built by code and cannot be edited by the model"
    if "/" in name or "\\" in name or name.startswith("."):
        return f"page name {name!r} names a folder or hidden file; pages are flat slugs"
    if slugify(name) != name:
        return f"page name {name!r} breaks the naming rule (expected {slugify(name)!r})"
    try:
        vault.wiki_path(f"{name}.md")
    except UnsafePathError as exc:
        return str(exc)
    return ""


# -- the workspace ------------------------------------------------------------------------------

def operation_problem(op: Any) -> str:
    """Why ``op`` does not have the shape of any operation (after normalising), else ''."""
    if not isinstance(op, dict):
        return f"an operation is a JSON object, not {type(op).__name__}"
    schema = OPERATION_SCHEMAS.get(str(op.get("op")))
    if schema is None:
        return f"unknown operation {op.get('op')!r}"
    errors = validate(op, schema, "$")
    return f"the {op['op']} operation does not fit its shape: " + "; ".join(errors[:3]) if errors else ""


# Held-back reasons, by kind (the tolerance line of `wikiwright eval`): first match wins.
_REASON_KINDS = [
    ("unsafe-text", ("unsafe page text",)),
    ("look-alike-name", ("looks like the existing page", "mixes scripts", "NFC normal form")),
    ("page-name", ("naming rule", "folder or hidden file", "built by code", "not a valid page name")),
    ("quote-not-in-source", ("not found in the source", "verbatim")),
    ("shape", ("does not fit its shape", "unknown operation", "is a JSON object")),
    ("too-many-pages", ("max_pages_per_ingest",)),
    ("would-drop-text", ("would drop",)),
    ("date", ("not a real date",)),
]


def reason_kind(reason: str) -> str:
    for kind, needles in _REASON_KINDS:
        if any(n in reason for n in needles):
            return kind
    return "other-check"


@dataclass
class Prepared:
    """One operation of a reply: as the model sent it, and as it will be checked."""

    sent: Any
    op: Any
    kinds: Counter[str] = field(default_factory=Counter)  # normalisations applied, by kind
    extra: dict[str, Any] = field(default_factory=dict)  # fields the model added (ignored)

    @property
    def page(self) -> str:
        return str(self.op.get("page", "")) if isinstance(self.op, dict) else ""


@dataclass
class Held:
    """An operation that was not applied, and why."""

    page: str
    reason: str
    op: dict[str, Any]
    sent: Any = None  # the operation as the model sent it, when normalising changed it

    @property
    def kind(self) -> str:
        return reason_kind(self.reason)

    def line(self) -> str:
        # REVIEW.md is rendered too: the model's text is shown only inside a code span, and the
        # reason (which may quote it) goes through the sanitizer.
        page = code_span(self.page) if self.page else "(no page)"
        return f"{page}: {clean_line(self.reason).text} — proposed {summarize_op(self.op)}"


def summarize_op(op: dict[str, Any]) -> str:
    kind = str(op.get("op", "?"))
    detail = {k: v for k, v in op.items() if k not in ("op", "page", "body", "text")}
    text = op.get("body") or op.get("text")
    if text:
        detail["text"] = _squash(str(text))[:80] + ("…" if len(str(text)) > 80 else "")
    shown = json.dumps(detail, ensure_ascii=False)
    return f"{code_span(kind)} {code_span(shown[:300])}"


@dataclass
class PageState:
    name: str
    original: str | None  # text read from disk (None: a new page)
    page: Page
    touched: bool = False
    created: bool = False

    def render(self) -> str:
        return render_page(self.page)


@dataclass
class Workspace:
    """Pages as the ingest will leave them, built up one checked operation at a time."""

    vault: Vault
    source_stem: str  # e.g. src-inc-482
    source_text: str
    today: date
    max_shrink: float
    find_claim_pages: Callable[[str], list[str]]  # claim key -> pages that may state it
    # A person approved the operation in REVIEW.md: the checks they can vouch for (the quote
    # found verbatim) are waived; the safety checks never are.
    approved: bool = False
    # pages.allow_remote_images: remote images in the model's text are held back when off.
    allow_remote_images: bool = False
    # Takes what the model means (ingest/normalize.py); None: the operation is checked as it is
    # (an operation a person approved in REVIEW.md was normalised when it was held).
    normaliser: Normaliser | None = None
    pages: dict[str, PageState] = field(default_factory=dict)
    held: list[Held] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)  # operations applied, as applied
    as_sent: int = 0  # operations applied exactly as sent
    normalised: int = 0  # operations applied after normalising
    kinds: Counter[str] = field(default_factory=Counter)  # normalisations of applied operations, by kind
    # Each operation applied after normalising: as sent (extra fields included), as applied, and how.
    normalised_records: list[dict[str, Any]] = field(default_factory=list)
    claims_added: int = 0
    claims_superseded: int = 0
    order: list[str] = field(default_factory=list)

    # -- pages -------------------------------------------------------------------------

    def read(self, name: str) -> PageState | None:
        if name in self.pages:
            return self.pages[name]
        path = self.vault.wiki_path(f"{name}.md")
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            page = parse_page(text)
        except ValueError:
            return None  # unparsable front matter: leave the page to a person
        state = PageState(name, text, page)
        self.pages[name] = state
        return state

    def reload_untouched(self) -> list[str]:
        """Re-read pages not yet changed here; returns those a person changed meanwhile.

        Called after the model replied, so its operations apply to the newest text (a person
        typing while the model was thinking) and a check that no longer holds holds the op.
        """
        changed = []
        for name, state in list(self.pages.items()):
            if state.touched or state.created:
                continue
            del self.pages[name]
            fresh = self.read(name)
            if fresh is None or fresh.original != state.original:
                changed.append(name)
        return changed

    def _touch(self, state: PageState) -> None:
        if not state.touched:
            state.touched = True
            self.order.append(state.name)
        meta = state.page.meta
        sources = meta.get("sources") or []
        if not isinstance(sources, list):
            sources = [sources]
        if self.source_stem not in sources:
            sources = [*sources, self.source_stem]
        meta["sources"] = sources
        meta["updated"] = self.today

    def _ensure(self, name: str) -> PageState:
        state = self.read(name)
        if state is None:
            title = name.replace("-", " ").strip().capitalize() or name
            page = Page({"type": "stub", "title": title, "summary": "", "sources": [], "updated": self.today,
                         "tags": [], "aliases": []}, f"# {title}\n")
            state = PageState(name, None, page, created=True)
            self.pages[name] = state
        return state

    def changed_pages(self) -> list[PageState]:
        return [self.pages[n] for n in self.order if self.pages[n].render() != self.pages[n].original]

    # -- applying ----------------------------------------------------------------------

    def hold(self, op: Any, reason: str, sent: Any = None) -> None:
        if not isinstance(op, dict):
            op = {"op": "?", "sent": op}
        page = str(op.get("page", ""))
        self.held.append(Held(page, reason, op, sent if sent is not None and sent != op else None))
        log.info("held back %s on %s: %s", op.get("op"), page, reason)

    def prepare(self, op: Any) -> Prepared:
        if self.normaliser is None:
            return Prepared(op, op)
        normal, kinds, extra = self.normaliser.operation(op)
        return Prepared(op, normal, kinds, extra)

    def apply(self, op: Any) -> bool:
        """Normalise, check and apply one operation; a failing check holds it. True if applied."""
        return self.apply_prepared(self.prepare(op))

    def apply_prepared(self, prepared: Prepared) -> bool:
        op = prepared.op
        problem = operation_problem(op)
        if problem:
            self.hold(op, problem, prepared.sent)
            return False
        if self._check_and_apply(op, prepared.sent):
            self.applied.append(op)
            if prepared.kinds:
                self.normalised += 1
                self.kinds.update(prepared.kinds)
                self.normalised_records.append({"sent": prepared.sent, "applied": op, "kinds": dict(prepared.kinds)})
            else:
                self.as_sent += 1
            return True
        return False

    def _check_and_apply(self, op: dict[str, Any], sent: Any) -> bool:
        held = len(self.held)
        if self._check_and_apply_op(op):
            return True
        if len(self.held) > held and sent is not None and sent != op:
            self.held[-1].sent = sent
        return False

    def _check_and_apply_op(self, op: dict[str, Any]) -> bool:
        name = str(op.get("page", ""))
        problem = page_name_problem(name, self.vault)
        if problem:
            # A name the normaliser would not resolve because it mixes scripts says so.
            self.hold(op, (lookalike_problem(name, []) if "naming rule" in problem else "") or problem)
            return False
        reason = unsafe_text(op, self.allow_remote_images)
        if reason:
            self.hold(op, f"unsafe page text ({reason})")
            return False
        # Nothing unsafe: what only looks like a tag (``<newbase>``, ``List<T>``) is escaped so it
        # shows as written instead of vanishing as an unknown element.
        for key in (*_MULTILINE_FIELDS, *_LINE_FIELDS):
            if isinstance(op.get(key), str):
                op[key] = escape_text(op[key])
        reason = self._lookalike(name)
        if reason:
            self.hold(op, reason)
            return False
        handler = _APPLY.get(str(op.get("op")))
        if handler is None:
            self.hold(op, f"unknown operation {op.get('op')!r}")
            return False
        reason = handler(self, name, op)
        if reason:
            self.hold(op, reason)
            return False
        return True

    def _lookalike(self, name: str) -> str:
        """A page that does not exist yet may not pass for one that does (homoglyphs, NFD)."""
        if name in self.pages or self.vault.wiki_path(f"{name}.md").exists():
            return ""
        existing = [p.stem for p in self.vault.wiki.glob("*.md")]
        existing += [n for n in self.pages if "/" not in n]
        return lookalike_problem(name, existing)

    def _op_create_page(self, name: str, op: dict[str, Any]) -> str:
        if name in SPECIAL_PAGES:
            return f"{name} exists already; add to one of its sections instead"
        existing = self.read(name)
        if existing is not None and not existing.created:
            return f"wiki/{name}.md exists already; a new page would overwrite it"
        body = _strip_code_sections(str(op["body"])).strip()
        title = str(op["title"]).strip()
        if not body.lstrip().startswith("# "):
            body = f"# {title}\n\n{body}" if body else f"# {title}\n"
        aliases = [a.strip() for a in op.get("aliases") or [] if a.strip() and "\n" not in a]
        page = Page({"type": op["type"], "title": title, "summary": _squash(str(op["summary"])),
                     "sources": [], "updated": self.today, "tags": [], "aliases": aliases}, body + "\n")
        state = PageState(name, None, page, created=True)
        self.pages[name] = state
        self._touch(state)
        return ""

    def _section_target(self, name: str, heading: str) -> str:
        if heading.strip().lstrip("#").strip().casefold() in CODE_OWNED_SECTIONS:
            return "the Claims section is rendered by code; propose claims with add_claim"
        if "\n" in heading:
            return "a heading is one line"
        return ""

    def _op_add_to_section(self, name: str, op: dict[str, Any]) -> str:
        heading = str(op["heading"]).strip().lstrip("#").strip()
        problem = self._section_target(name, heading)
        if problem:
            return problem
        text = _strip_code_sections(str(op["text"])).strip("\n")
        if not text.strip():
            return "nothing to add"
        state = self._ensure(name)
        body = state.page.body
        current = get_section(body, heading)
        if current is None:
            new = f"## {heading}\n\n{text}\n"
        else:
            if _squash(text) in _squash(current):
                return ""  # already there (a retried ingest): nothing to do
            new = current.rstrip("\n") + "\n\n" + text + "\n"
        state.page.body = _ensure_blank_before_sections(set_section(body, heading, new))
        self._touch(state)
        return ""

    def _op_replace_section(self, name: str, op: dict[str, Any]) -> str:
        heading = str(op["heading"]).strip().lstrip("#").strip()
        problem = self._section_target(name, heading)
        if problem:
            return problem
        state = self.read(name)
        if state is None:
            return f"wiki/{name}.md does not exist; nothing to replace"
        current = get_section(state.page.body, heading)
        if current is None:
            return f"wiki/{name}.md has no section {heading!r} to replace"
        text = _strip_code_sections(str(op["text"])).strip("\n")
        lines = text.splitlines()
        if lines and re.match(r"^#{1,6}\s", lines[0]):
            text = "\n".join(lines[1:]).strip("\n")
        old_body = current.split("\n", 1)[1] if "\n" in current else ""
        old_links = {link.target.casefold() for link in iter_links(old_body)}
        new_links = {link.target.casefold() for link in iter_links(text)}
        lost = sorted(old_links - new_links)
        if lost:
            return f"replacing section {heading!r} would drop links to {', '.join(lost[:5])}"
        old_claims = [line for line in old_body.splitlines() if parse_claim_line(line)]
        if any(_squash(line) not in _squash(text) for line in old_claims):
            return f"replacing section {heading!r} would drop claims"
        old_len, new_len = len(_squash(old_body)), len(_squash(text))
        if old_len and new_len < old_len * (1 - self.max_shrink):
            return (f"replacing section {heading!r} would drop {100 - new_len * 100 // old_len}% of its text "
                    f"(limit {self.max_shrink:.0%}, llm.max_section_shrink)")
        state.page.body = set_section(state.page.body, heading, f"## {heading}\n\n{text}\n\n")
        self._touch(state)
        return ""

    def _op_add_claim(self, name: str, op: dict[str, Any]) -> str:
        quote = str(op["quote"])
        if not self.approved and not quote_in_source(quote, self.source_text):
            return f"the quote for `{op['key']}` is not found verbatim in the source: {quote[:120]!r}"
        try:
            date.fromisoformat(str(op["as_of"]))
        except ValueError:
            return f"as_of {op['as_of']!r} is not a real date"
        key = str(op["key"]).strip()
        value = _squash(str(op["value"])).replace("`", "'")
        if "~~" in value or "[[" in value:
            return "a claim value may not carry links or strike-through"
        # Checked as it will be rendered: with its backticks gone, what they fenced as code is
        # page text (`` a` <img onerror=…> `b `` must not become live markup).
        notes = clean_markdown(value, allow_remote_images=self.allow_remote_images).notes
        if notes:
            return f"unsafe page text (value: {'; '.join(notes)})"
        value = escape_text(value)
        claim = Claim(key, value, str(op["as_of"]), self.source_stem)
        state = self._ensure(name)
        claims = _claims_of(state.page.body)
        if any(c.key == key and c.value == value and c.is_current for c in claims):
            pass  # stated already; nothing new on this page
        else:
            state.page.body = _add_claim_lines(state.page.body, [claim])
            self.claims_added += 1
            self._touch(state)
        if op.get("replaces"):
            old_key = str(op.get("replaces_key") or key).strip()
            self._supersede(old_key, keep=(key, value))
        return ""

    def _supersede(self, old_key: str, keep: tuple[str, str]) -> None:
        """Strike through every current claim of ``old_key`` (other than ``keep``) on every page."""
        names = set(self.find_claim_pages(old_key)) | {n for n in self.pages if self.pages[n].original or
                                                         self.pages[n].touched}
        for name in sorted(names):
            if page_name_problem(name, self.vault) and not name.startswith("sources/"):
                continue
            try:
                state = self.read(name)
            except UnsafePathError:
                continue
            if state is None:
                continue
            body, count = _strike_claims(state.page.body, old_key, keep, self.source_stem)
            if count:
                state.page.body = body
                self.claims_superseded += count
                self._touch(state)

    def _op_close_question(self, name: str, op: dict[str, Any]) -> str:
        state = self.read(name)
        if state is None:
            return f"wiki/{name}.md does not exist"
        wanted = _plain(str(op["question"]))
        lines = state.page.body.splitlines(keepends=True)
        for index, line in enumerate(lines):
            match = re.match(r"^(\s*[-*]\s+)\[ \]\s+(.*?)\s*$", line)
            if match and (_plain(match.group(2)) == wanted or wanted in _plain(match.group(2))):
                answer = _squash(str(op["answer"]))
                lines[index] = (f"{match.group(1)}[x] {match.group(2)} — answered by [[{self.source_stem}]]: "
                                f"{answer}\n")
                state.page.body = "".join(lines)
                self._touch(state)
                return ""
        return f"wiki/{name}.md has no open question {str(op['question'])[:80]!r}"

    def _op_add_aliases(self, name: str, op: dict[str, Any]) -> str:
        state = self.read(name)
        if state is None:
            return f"wiki/{name}.md does not exist"
        current = state.page.aliases
        known = {a.casefold() for a in current}
        new = [a.strip() for a in op["aliases"] if a.strip() and "\n" not in a and a.strip().casefold() not in known]
        if new:
            state.page.meta["aliases"] = [*current, *new]
            self._touch(state)
        return ""

    def _op_add_links(self, name: str, op: dict[str, Any]) -> str:
        state = self._ensure(name)
        targets = []
        for target in op["links"]:
            target = str(target).strip()
            if target.startswith("[[") and target.endswith("]]"):
                target = target[2:-2].strip()  # "[[page]]" means page; anything else inside is checked
            if not target or target == name:
                continue
            # Source pages (src-…) are checked like any other: a target is one valid page name.
            problem = link_target_problem(target) or page_name_problem(target, self.vault)
            if problem:
                return f"link target {target!r} is not a valid page name: {problem}"
            problem = self._lookalike(target)
            if problem:
                return problem
            targets.append(target)
        section = get_section(state.page.body, "Related")
        present = {link.target.casefold() for link in iter_links(section or "")}
        added = [t for t in targets if t.casefold() not in present]
        if added:
            head = section.rstrip("\n") + "\n" if section else "## Related\n\n"
            new = head + "".join(f"- [[{t}]]\n" for t in added)
            state.page.body = _ensure_blank_before_sections(set_section(state.page.body, "Related", new))
            self._touch(state)
        return ""


# -- body helpers --------------------------------------------------------------------------

def _strip_code_sections(text: str) -> str:
    """Drop a ``## Claims`` section from model text: claims are added by add_claim only."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        heading = re.match(r"^#{1,2}\s+(.+?)\s*$", line)
        if heading:
            skipping = heading.group(1).strip().casefold() in CODE_OWNED_SECTIONS
        if not skipping:
            out.append(line)
    return "".join(out)


def _ensure_blank_before_sections(body: str) -> str:
    return re.sub(r"([^\n])\n(## )", r"\1\n\n\2", body)


def _claims_of(body: str) -> list[Claim]:
    section = get_section(body, "Claims")
    if section is None:
        return []
    return [c for c in (parse_claim_line(line) for line in section.splitlines()) if c is not None]


def _add_claim_lines(body: str, claims: list[Claim]) -> str:
    """Append claim lines at the end of the Claims section, keeping every other line in it."""
    section = get_section(body, "Claims")
    if section is None:
        return _ensure_blank_before_sections(set_section(body, "Claims", render_claims(claims)))
    lines = section.rstrip("\n").splitlines()
    new = "\n".join([*lines, *[c.render() for c in claims]]) + "\n\n"
    return set_section(body, "Claims", new)


def _strike_claims(body: str, key: str, keep: tuple[str, str], by: str) -> tuple[str, int]:
    section = get_section(body, "Claims")
    if section is None:
        return body, 0
    count = 0
    lines = section.splitlines(keepends=True)
    for index, line in enumerate(lines):
        claim = parse_claim_line(line.rstrip("\n"))
        if claim is None or not claim.is_current or claim.key != key:
            continue
        if (claim.key, claim.value) == keep or claim.source == by:
            continue
        lines[index] = claim.with_status("superseded", by).render() + "\n"
        count += 1
    return (set_section(body, "Claims", "".join(lines)), count) if count else (body, 0)


# The one table from an operation's name (OPERATION_SCHEMAS' keys, checked equal by a test) to the
# method applying it: a name the model invents is held, never looked up as an attribute.
_APPLY: dict[str, Callable[[Workspace, str, dict[str, Any]], str]] = {
    "create_page": Workspace._op_create_page,
    "add_to_section": Workspace._op_add_to_section,
    "replace_section": Workspace._op_replace_section,
    "add_claim": Workspace._op_add_claim,
    "close_question": Workspace._op_close_question,
    "add_aliases": Workspace._op_add_aliases,
    "add_links": Workspace._op_add_links,
}
