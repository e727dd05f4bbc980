"""Taking what a model means: safe normalisations of its operations, each one counted.

Real models do not follow the operations contract to the letter. They write a page's title
where its slug belongs ("Kestrel Limits" for ``kestrel-limits``), dates as people write them
("May 12, 2026"), booleans as strings, claim keys with ``_`` where the wiki has ``-``, and add
fields of their own (``"confidence": 0.9``). None of that changes what the operation means,
so it is normalised here — and only that: a name that could pass for another page (another
script, a look-alike letter, an invisible character) is never resolved; it goes on to the
checks, which hold it. Everything normalised is named by kind, so the commit trailer, llm.db
and ``wikiwright eval`` say how much of a model's reply was taken as sent.

What is never normalised: text (a quote, a value, a body) beyond link targets; a page name
with a folder, a dot or a character outside letters, digits, spaces and simple punctuation; an
ambiguous date (``05/06/2026``); a boolean that is not one of the usual spellings.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..wiki.pages import WIKILINK_RE, slugify
from ..wiki.sanitize import scripts_of

# Characters a page name may carry for it to be normalised to a slug (anything else: left as
# sent, and the naming check holds it).
_NAMEABLE_RE = re.compile(r"[\w \t\-'’&(),:+]+")
_SEPARATORS_RE = re.compile(r"[\s_\-]+")
_CODE_RE = re.compile(r"```.*?```|`+[^`\n]*`+", re.DOTALL)

# Type names models use for an entity page.
_ENTITY_TYPES = {"person", "people", "organization", "organisation", "company", "team", "system", "service",
                 "product", "project", "tool", "component", "place", "api", "application", "app"}
_CONCEPT_TYPES = {"idea", "term", "definition", "process", "practice", "policy"}
_TOPIC_TYPES = {"subject", "theme", "area", "overview"}

# Field names models use for the contract's own (taken only when the contract's name is absent).
_FIELD_NAMES = {
    "op": ("operation", "action"),
    "page": ("page_name", "slug", "page_slug", "target_page"),
    "as_of": ("asof", "as_of_date", "date", "effective_date", "effective"),
    "replaces": ("replace", "supersedes", "is_replacement"),
    "replaces_key": ("replaced_key", "supersedes_key", "old_key"),
    "quote": ("source_quote", "evidence", "verbatim"),
    "heading": ("section", "section_heading"),
    "text": ("content",),
    "body": ("content", "markdown"),
    "key": ("claim_key",),
}

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off", "none", "null", ""}

_MONTHS = {name: index for index, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
     ("november", "nov"), ("december", "dec")], start=1) for name in names}
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_WEEKDAY_RE = re.compile(r"^(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*\.?,?\s+", re.IGNORECASE)
_DATE_FORMS = [
    re.compile(rf"^{_YEAR}-(?P<mon>\d{{1,2}})-{_DAY}(?:[T ][\d:.]+(?:Z|[+-]\d{{2}}:?\d{{2}})?)?$"),
    re.compile(rf"^{_YEAR}[/.](?P<mon>\d{{1,2}})[/.]{_DAY}$"),
    re.compile(rf"^{_MONTH}\s+{_DAY},?\s+{_YEAR}$", re.IGNORECASE),
    re.compile(rf"^{_DAY}(?:\s+of)?[\s-]+{_MONTH},?[\s-]+{_YEAR}$", re.IGNORECASE),
    re.compile(rf"^{_YEAR}\s+{_MONTH}\s+{_DAY}$", re.IGNORECASE),
]
_NUMERIC_DATE_RE = re.compile(r"^(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<year>\d{4})$")
# Dates in a source's own text, for an as_of the model left out.
_SOURCE_DATE_RES = [
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    re.compile(r"\b(?:\d{1,2}(?:st|nd|rd|th)?\s+)?[A-Z][a-z]{2,8}\.?\s+(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?\d{4}\b"),
]


def written_date(value: Any) -> str | None:
    """An ISO date (YYYY-MM-DD) from a date as people write it, or None when it is not one
    (or is ambiguous: ``05/06/2026`` could be May or June)."""
    if isinstance(value, date):
        return value.isoformat()[:10]
    if not isinstance(value, str):
        return None
    text = _WEEKDAY_RE.sub("", " ".join(value.split()).strip().rstrip("."))
    for form in _DATE_FORMS:
        match = form.match(text)
        if not match:
            continue
        parts = match.groupdict()
        month = int(parts["mon"]) if parts.get("mon") else _MONTHS.get(str(parts.get("month")).casefold(), 0)
        return _real(int(parts["year"]), month, int(parts["day"]))
    match = _NUMERIC_DATE_RE.match(text)
    if match:
        a, b = int(match.group("a")), int(match.group("b"))
        if a > 12 >= b:
            return _real(int(match.group("year")), b, a)
        if b > 12 >= a or a == b:
            return _real(int(match.group("year")), a, b)
    return None


def _real(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def source_date(text: str, today: date) -> str:
    """The date a source speaks from: the first date written in it, else today."""
    for pattern in _SOURCE_DATE_RES:
        for match in pattern.finditer(text[:20000]):
            found = written_date(match.group(0))
            if found:
                return found
    return today.isoformat()


def as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if value is None:
        return False
    if isinstance(value, str) and value.strip().casefold() in _TRUE | _FALSE:
        return value.strip().casefold() in _TRUE
    return None


def canonical_key(key: str) -> str:
    """A claim key as the wiki writes keys: lower case, ``-`` between words, dots between parts."""
    key = key.strip().strip("`'\"").strip()
    key = _SEPARATORS_RE.sub("-", key.casefold())
    key = re.sub(r"-*\.-*", ".", key)
    return re.sub(r"-{2,}", "-", key).strip("-.")


def name_key(name: str) -> str | None:
    """The key a page name, title or alias is matched by (case, spaces, ``_``, accents folded),
    or None when the name holds a character that could pass for another: another script mixed
    with Latin, a letter that is not a plain or accented Latin one in a Latin name, an
    invisible or control character. Such a name is never resolved to an existing page."""
    if not name or unicodedata.normalize("NFC", name) != name:
        return None
    scripts = scripts_of(name)
    if "LATIN" in scripts:
        if len(scripts) > 1:
            return None
        out = []
        for ch in name:
            if ch.isascii():
                out.append(ch)
                continue
            if ch in "’":
                out.append("'")
                continue
            base = unicodedata.normalize("NFD", ch)
            if len(base) > 1 and base[0].isascii() and base[0].isalpha() and \
                    all(unicodedata.combining(c) for c in base[1:]):
                out.append(base[0])
                continue
            return None
        name = "".join(out)
    elif len(scripts) > 1:
        return None
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        return None
    folded = _SEPARATORS_RE.sub("-", name.casefold().strip())
    return folded.strip("-") or None


@dataclass
class PageNames:
    """Resolves the page names a model writes to the wiki's pages (by slug, title or alias)."""

    exists: Callable[[str], bool]  # a page of this exact name exists in wiki/
    # (stem, title, aliases, is a source page) of every page
    labels: Callable[[], Iterable[tuple[str, str, Iterable[str], bool]]]
    _index: dict[bool, dict[str, str]] | None = None
    _ambiguous: dict[bool, set[str]] = field(default_factory=lambda: {False: set(), True: set()})
    created: dict[str, str] = field(default_factory=dict)  # key -> stem of pages made in this reply

    def _build(self) -> dict[bool, dict[str, str]]:
        if self._index is None:
            self._index = {False: {}, True: {}}
            ranked: dict[bool, dict[str, int]] = {False: {}, True: {}}
            for stem, title, aliases, source in self.labels():
                index, ranks, ambiguous = self._index[source], ranked[source], self._ambiguous[source]
                for rank, label in ((0, stem), (1, title), *((2, a) for a in aliases)):
                    key = name_key(str(label))
                    if key is None:
                        continue
                    if key in index and index[key] != stem:
                        if ranks[key] == rank:
                            ambiguous.add(key)
                        if ranks[key] <= rank:
                            continue
                        ambiguous.discard(key)
                    index[key] = stem
                    ranks[key] = rank
        return self._index

    def resolve(self, name: str, *, link: bool = False) -> str:
        """The page ``name`` means: itself when it is a page or could pass for one (left for the
        checks), an existing page it names by slug, title or alias, else its slug. ``link``: a
        link target, which may also name a source page (an operation's page may not)."""
        name = name.strip()
        if name.startswith("[[") and name.endswith("]]"):
            name = name[2:-2].split("|", 1)[0].strip()
        if not name or not _NAMEABLE_RE.fullmatch(name) or self.exists(name):
            return name
        key = name_key(name)
        if key is None:
            return name
        found = self.created.get(key)
        index = self._build()
        for source in ((False, True) if link else (False,)):
            if found is None and key not in self._ambiguous[source]:
                found = index[source].get(key)
        if found is None and not any(key in self._ambiguous[s] for s in (False, True)):
            slug = slugify(name)
            # A device name (``con`` → ``con-page``) or nothing at all is not what the model meant.
            found = slug if slug != "untitled" and slug != f"{key}-page" else None
        return found or name

    def made(self, stem: str, title: str) -> None:
        """A page this reply creates: later operations may name it by its title."""
        for label in (stem, title):
            key = name_key(label)
            if key:
                self.created.setdefault(key, stem)


@dataclass
class Normaliser:
    """Normalises one operation at a time; ``kinds`` counts what was normalised, by kind."""

    names: PageNames
    known_keys: Callable[[], Iterable[str]]  # claim keys the wiki holds
    source_date: str
    schemas: dict[str, dict[str, Any]]
    _keys: dict[str, str] | None = None

    def key(self, key: str) -> str:
        canon = canonical_key(key)
        if self._keys is None:
            self._keys = {}
            for existing in self.known_keys():
                self._keys.setdefault(canonical_key(existing), existing)
        found = self._keys.get(canon)
        if found is None:
            self._keys[canon] = canon
            return canon
        return found

    def operation(self, op: Any) -> tuple[Any, Counter[str], dict[str, Any]]:
        """(the operation normalised, the kinds of normalisation applied, the fields dropped)."""
        kinds: Counter[str] = Counter()
        if not isinstance(op, dict):
            return op, kinds, {}
        op = dict(op)
        if "op" not in op:
            self._rename(op, "op", kinds)
        kind = op.get("op")
        if isinstance(kind, str):
            fixed = re.sub(r"[\s\-]+", "_", kind.strip().casefold())
            if fixed != kind and fixed in self.schemas:
                op["op"] = fixed
                kinds["op-name"] += 1
        schema = self.schemas.get(str(op.get("op")))
        if schema is None:
            return op, kinds, {}
        allowed = schema["properties"]
        for name in allowed:
            if name not in op:
                self._rename(op, name, kinds)
        extra = {k: v for k, v in op.items() if k not in allowed}
        if extra:
            op = {k: v for k, v in op.items() if k in allowed}
            kinds["extra-field"] += 1
        for name, spec in allowed.items():
            if name not in op:
                continue
            value = op[name]
            if spec.get("type") == "string" and isinstance(value, int | float) and not isinstance(value, bool):
                op[name] = str(value)
                kinds["number-as-text"] += 1
            elif spec.get("type") == "array" and isinstance(value, str):
                op[name] = [value]
                kinds["one-item-list"] += 1
        if isinstance(op.get("page"), str):
            page = self.names.resolve(op["page"])
            if page != op["page"]:
                kinds["page-name"] += 1
                op["page"] = page
        normalise_more = _BY_OPERATION.get(op["op"])
        if normalise_more is not None:
            normalise_more(self, op, kinds)
        for name in ("body", "text", "summary", "answer"):
            if isinstance(op.get(name), str):
                text, count = self.links(op[name])
                if count:
                    op[name] = text
                    kinds["link-target"] += count
        return op, kinds, extra

    @staticmethod
    def _rename(op: dict[str, Any], name: str, kinds: Counter[str]) -> None:
        """Take a field the model named its own way (``"date"`` for ``as_of``) under the contract's name."""
        for other in _FIELD_NAMES.get(name, ()):
            if other in op:
                op[name] = op.pop(other)
                kinds["field-name"] += 1
                return

    def links(self, text: str) -> tuple[str, int]:
        """``[[Title]]`` links resolved to the page they name, written ``[[slug|Title]]``."""
        if "[[" not in text:
            return text, 0
        count = 0
        out = []
        pos = 0
        for code in [*_CODE_RE.finditer(text), None]:
            end = code.start() if code is not None else len(text)
            piece = text[pos:end]

            def fix(match: re.Match[str]) -> str:
                nonlocal count
                bang, target, heading, label = match.group(1), match.group(2), match.group(3), match.group(4)
                resolved = self.names.resolve(target, link=True)
                if resolved == target.strip():
                    return match.group(0)
                count += 1
                shown = label if label is not None else target.strip()
                return f"{bang}[[{resolved}{heading or ''}|{shown}]]"

            out.append(WIKILINK_RE.sub(fix, piece))
            if code is not None:
                out.append(code.group(0))
                pos = code.end()
        return "".join(out), count

    # -- per kind ------------------------------------------------------------------------

    def _create_page(self, op: dict[str, Any], kinds: Counter[str]) -> None:
        kind = op.get("type")
        if isinstance(kind, str) and kind not in self.schemas["create_page"]["properties"]["type"]["enum"]:
            folded = kind.strip().casefold()
            mapped = (folded if folded in ("entity", "concept", "topic") else "entity" if folded in _ENTITY_TYPES
                      else "concept" if folded in _CONCEPT_TYPES else "topic" if folded in _TOPIC_TYPES else None)
            if mapped:
                op["type"] = mapped
                kinds["page-type"] += 1
        if "summary" not in op and isinstance(op.get("body"), str):
            op["summary"] = ""
            kinds["missing-summary"] += 1
        if isinstance(op.get("page"), str) and isinstance(op.get("title"), str):
            self.names.made(op["page"], op["title"])

    def _add_claim(self, op: dict[str, Any], kinds: Counter[str]) -> None:
        for name in ("key", "replaces_key"):
            if isinstance(op.get(name), str) and op[name].strip():
                key = self.key(op[name])
                if key != op[name]:
                    op[name] = key
                    kinds["claim-key"] += 1
        as_of = op.get("as_of")
        if as_of is None or (isinstance(as_of, str) and not as_of.strip()):
            op["as_of"] = self.source_date
            kinds["as-of-missing"] += 1
        elif not (isinstance(as_of, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of)):
            found = written_date(as_of)
            if found:
                op["as_of"] = found
                kinds["as-of-written"] += 1
        replaces = op.get("replaces")
        if not isinstance(replaces, bool):
            flag = as_bool(replaces)
            if flag is not None:
                op["replaces"] = flag
                kinds["boolean-as-text" if "replaces" in op else "replaces-missing"] += 1
        if op.get("replaces_key") in ("", None):
            op.pop("replaces_key", None)
        if isinstance(op.get("value"), bool | list | dict):
            return
        if isinstance(op.get("quote"), str):
            quote = op["quote"].strip()
            if len(quote) >= 2 and quote[0] in "\"“'‘" and quote[-1] in "\"”'’":
                op["quote"] = quote[1:-1].strip()

    def _add_links(self, op: dict[str, Any], kinds: Counter[str]) -> None:
        links = op.get("links")
        if isinstance(links, list):
            fixed = [self.names.resolve(t, link=True) if isinstance(t, str) else t for t in links]
            changed = sum(1 for a, b in zip(links, fixed, strict=True) if isinstance(a, str) and a.strip() != b)
            if changed:
                op["links"] = fixed
                kinds["link-target"] += changed


# What an operation's kind normalises beyond the common fields (a name missing here has nothing more).
_BY_OPERATION: dict[str, Callable[[Normaliser, dict[str, Any], Counter[str]], None]] = {
    "create_page": Normaliser._create_page,
    "add_claim": Normaliser._add_claim,
    "add_links": Normaliser._add_links,
}
