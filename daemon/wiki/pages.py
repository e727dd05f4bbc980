"""Pages: parse and render front matter, claims and wikilinks; the page-naming rule.

A page is YAML front matter plus a markdown body. The daemon owns the keys in
:data:`OWNED_KEYS` and writes them in that fixed order; any other key a person added is
kept, after them, in the person's order. The ``## Claims`` section holds one claim a line
in the format of DESIGN.md §1, parsed and rendered here and nowhere else.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

OWNED_KEYS = ("type", "title", "summary", "sources", "updated", "tags", "aliases")
PAGE_TYPES = ("source", "entity", "concept", "topic", "overview", "index", "log", "answer", "stub")
SPECIAL_PAGES = ("index", "log", "overview")

WIKILINK_RE = re.compile(r"(!?)\[\[([^\[\]|#\n]*)(#[^\[\]|\n]*)?(?:\|([^\[\]\n]*))?\]\]")
_FRONT_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
MAX_SLUG = 60
# libyaml's safe loader when present: same constructors as yaml.safe_load, ~9x faster, which
# matters when lint and the catalogue parse every page of a 10,000-page wiki.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontMatterError(ValueError):
    """The front matter block is not valid YAML mapping."""


@dataclass
class Page:
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""

    @property
    def title(self) -> str:
        return str(self.meta.get("title") or "")

    @property
    def aliases(self) -> list[str]:
        raw = self.meta.get("aliases") or []
        return [str(a) for a in raw] if isinstance(raw, list) else [str(raw)]


def parse_page(text: str) -> Page:
    """Split front matter from body. Text with no front matter is all body."""
    if text.startswith("\ufeff"):
        text = text[1:]
    match = _FRONT_RE.match(text)
    if not match:
        return Page({}, text)
    try:
        meta = yaml.load(match.group(1), Loader=_SAFE_LOADER) if match.group(1).strip() else {}
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter is not valid YAML: {exc}") from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FrontMatterError("front matter is not a mapping of keys to values")
    return Page(meta, text[match.end() :])


class _NoAliasDumper(yaml.SafeDumper):
    # The same date object under two keys must not become `&id001` / `*id001` anchors.
    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_front_matter(meta: dict[str, Any]) -> str:
    ordered: dict[str, Any] = {key: meta[key] for key in OWNED_KEYS if key in meta}
    ordered.update((key, value) for key, value in meta.items() if key not in ordered)
    dumped = yaml.dump(ordered, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True,
                       default_flow_style=False, width=1000)
    return f"---\n{dumped}---\n"


def render_page(page: Page) -> str:
    body = page.body if page.body.startswith("\n") or not page.body else "\n" + page.body
    if body and not body.endswith("\n"):
        body += "\n"
    return render_front_matter(page.meta) + body


# --- naming -------------------------------------------------------------------------

_NAME_SIGN_RE = re.compile(r"(?<=[^\W\d_])(?:\+\+|\+|#)(?![^\W\d_])")
_SIGN_WORDS = {"+": "plus", "#": "sharp"}


def slugify(text: str) -> str:
    """The one page-naming rule (documented in README "Page names").

    1. NFC-normalise, then fold accents to their base letter where one exists (é -> e);
       a ``+`` or ``#`` ending a name is spelled out (C++ -> c-plus-plus, C# -> c-sharp), so it
       is not the page of C;
    2. lower-case;
    3. every run of characters that are not letters or digits becomes one ``-``
       (letters of any script are kept, so ``東京`` stays ``東京``);
    4. trim ``-`` at both ends and cut to 60 characters at a ``-`` boundary;
    5. an empty result is ``untitled``; Windows device names get ``-page`` appended.
    """
    text = _NAME_SIGN_RE.sub(lambda m: " " + " ".join(_SIGN_WORDS[c] for c in m.group(0)) + " ",
                             unicodedata.normalize("NFC", text))
    folded = "".join(
        ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch)
    )
    folded = unicodedata.normalize("NFC", folded).lower()
    out: list[str] = []
    dash = False
    for ch in folded:
        if ch.isalnum():
            out.append(ch)
            dash = False
        elif not dash:
            out.append("-")
            dash = True
    slug = "".join(out).strip("-")
    if len(slug) > MAX_SLUG:
        cut = slug[:MAX_SLUG]
        slug = cut.rsplit("-", 1)[0] if "-" in cut[MAX_SLUG // 2 :] else cut
        slug = slug.strip("-")
    if not slug:
        slug = "untitled"
    if slug in _WINDOWS_RESERVED:
        slug += "-page"
    return slug


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base-2``, ``base-3``... whichever is free (case-insensitively)."""
    used = {name.casefold() for name in taken}
    if base.casefold() not in used:
        return base
    n = 2
    while f"{base}-{n}".casefold() in used:
        n += 1
    return f"{base}-{n}"


# --- wikilinks ----------------------------------------------------------------------

@dataclass(frozen=True)
class WikiLink:
    target: str
    heading: str
    label: str
    embed: bool
    line: int


def iter_links(text: str) -> Iterator[WikiLink]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        for match in WIKILINK_RE.finditer(line):
            target = match.group(2).strip()
            if target.endswith(".md"):
                target = target[:-3]
            yield WikiLink(target, (match.group(3) or "")[1:], match.group(4) or "", bool(match.group(1)), lineno)


def link_key(name: str) -> str:
    """How Obsidian matches a link to a page: by file name, case-insensitively, any folder."""
    return unicodedata.normalize("NFC", name.rsplit("/", 1)[-1]).casefold()


# --- sections -----------------------------------------------------------------------

_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")


def split_sections(body: str) -> list[tuple[str, str]]:
    """Split a body into (heading, text) pairs at ``##`` headings; the first has heading ''."""
    sections: list[tuple[str, str]] = []
    heading = ""
    lines: list[str] = []
    in_fence = False
    for line in body.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        match = None if in_fence else _HEADING_RE.match(line.rstrip("\r\n"))
        if match and len(match.group(1)) == 2:
            sections.append((heading, "".join(lines)))
            heading, lines = match.group(2).strip(), [line]
        else:
            lines.append(line)
    sections.append((heading, "".join(lines)))
    return sections


def get_section(body: str, heading: str) -> str | None:
    for name, text in split_sections(body):
        if name and name.casefold() == heading.casefold():
            return text
    return None


def set_section(body: str, heading: str, text: str) -> str:
    """Replace the ``## heading`` section (or append it); ``text`` includes the heading line."""
    if text and not text.endswith("\n"):
        text += "\n"
    parts = split_sections(body)
    for index, (name, _) in enumerate(parts):
        if name and name.casefold() == heading.casefold():
            if text and index + 1 < len(parts) and not text.endswith("\n\n"):
                text += "\n"  # a blank line before the next heading, as every section has
            parts[index] = (name, text)
            return "".join(chunk for _, chunk in parts)
    joined = "".join(chunk for _, chunk in parts)
    if joined and not joined.endswith("\n"):
        joined += "\n"
    if joined and not joined.endswith("\n\n"):
        joined += "\n"
    return joined + text


# --- claims -------------------------------------------------------------------------

CLAIM_STATUSES = ("current", "superseded", "disputed", "retracted")
_CLAIM_CORE = r"`(?P<key>[^`\n]+)`:\s*(?P<value>.+?)\s*\(as of (?P<date>[^,()]+?),\s*(?P<source>\[\[[^\]]+\]\])\)"
_CURRENT_RE = re.compile(rf"^\s*[-*]\s+{_CLAIM_CORE}\s*$")
_STRUCK_RE = re.compile(
    rf"^\s*[-*]\s+~~{_CLAIM_CORE}~~\s*(?P<status>superseded|disputed|retracted)(?:\s+by\s+(?P<by>\[\[[^\]]+\]\]))?"
    r"(?P<note>.*)$"
)
_UNCITED_RE = re.compile(r"^\s*[-*]\s+(?:~~)?`(?P<key>[^`\n]+)`:\s*(?P<value>.+)$")


@dataclass(frozen=True)
class Claim:
    key: str
    value: str
    as_of: str
    source: str  # page name of the citing source, without brackets
    status: str = "current"
    by: str = ""  # page name that superseded / disputed it
    line: int = 0
    note: str = ""

    @property
    def is_current(self) -> bool:
        return self.status == "current"

    def render(self) -> str:
        core = f"`{self.key}`: {self.value} (as of {self.as_of}, [[{self.source}]])"
        if self.status == "current":
            return f"- {core}"
        tail = f" by [[{self.by}]]" if self.by else ""
        return f"- ~~{core}~~ {self.status}{tail}{self.note}"

    def with_status(self, status: str, by: str = "") -> Claim:
        return replace(self, status=status, by=by)


def _strip_link(text: str) -> str:
    return text.strip()[2:-2].split("|", 1)[0].strip()


def parse_claim_line(line: str, lineno: int = 0) -> Claim | None:
    """One claim line, or None when the line is not a claim in the standard form."""
    match = _STRUCK_RE.match(line)
    if match:
        by = _strip_link(match.group("by")) if match.group("by") else ""
        return Claim(
            match.group("key").strip(), match.group("value").strip(), match.group("date").strip(),
            _strip_link(match.group("source")), match.group("status"), by, lineno,
            match.group("note") or "",
        )
    match = _CURRENT_RE.match(line)
    if match:
        return Claim(
            match.group("key").strip(), match.group("value").strip(), match.group("date").strip(),
            _strip_link(match.group("source")), "current", "", lineno,
        )
    return None


@dataclass(frozen=True)
class ClaimLine:
    """A line of the Claims section that looks like a claim but has no citation."""

    key: str
    text: str
    line: int


def parse_claims(body: str) -> tuple[list[Claim], list[ClaimLine]]:
    """Claims in the ``## Claims`` section, and claim-like lines missing a citation.

    Line numbers are 1-based within ``body``.
    """
    claims: list[Claim] = []
    uncited: list[ClaimLine] = []
    in_claims = False
    for lineno, line in enumerate(body.splitlines(), start=1):
        heading = _HEADING_RE.match(line)
        if heading and len(heading.group(1)) <= 2:
            in_claims = heading.group(2).strip().casefold() == "claims"
            continue
        if not in_claims or not line.strip():
            continue
        claim = parse_claim_line(line, lineno)
        if claim is not None:
            claims.append(claim)
            continue
        loose = _UNCITED_RE.match(line)
        if loose:
            uncited.append(ClaimLine(loose.group("key").strip(), line.strip(), lineno))
    return claims, uncited


def render_claims(claims: Iterable[Claim]) -> str:
    lines = [claim.render() for claim in claims]
    return "## Claims\n" + "".join(f"{line}\n" for line in lines)
