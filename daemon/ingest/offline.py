"""The offline engine's reading of one source: title, summary, key points, parts, dates.

Deterministic and fast, so a crash-and-retry writes the same bytes. Markdown is read by a
CommonMark parser (markdown-it-py): a list item with its continuation lines, a nested item, a
paragraph are units; code blocks, HTML blocks, tables and link-reference definitions are never
prose. Sentences are cut by sentencex, never inside a code span, a version number or a dotted
name. The title follows one rule (front matter ``title``, else the first level-1 heading
whatever it says, else the document's own title metadata, else the file name humanised — never
a sub-heading or a sentence); :func:`qualify_title` adds the project to a generic or shared
one. Summaries and key points are whole sentences of the main content (:mod:`textrules` says
what is boilerplate and what is not a sentence), no key point repeats another or the summary,
and text is kept byte for byte (underscores, asterisks, backticks are never removed). A
changelog is summarised as one: its newest entry and what changed in it. A long source is read
part by part along its own headings, and every part is listed: nothing is cut silently.
"""

from __future__ import annotations

import bisect
import html
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import frontmatter
import sentencex
import yaml
from markdown_it import MarkdownIt

from ..ingest.pagesafety import safe_digest, safety_lines
from ..ingest.textrules import (
    EXHIBIT_WORDS,
    boilerplate_rule,
    is_generic_title,
    section_is_boilerplate,
    sentence_problem,
)
from ..wiki.pages import Page, render_page
from ..wiki.sanitize import INLINE_CODE_RE, code_span

log = logging.getLogger(__name__)

ENGINE_NAME = "offline"

_WORD_RE = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'-]+")
_TOC_HEADING_RE = re.compile(r"(table of )?contents|toc|on this page", re.IGNORECASE)
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DATE_RES = (
    re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
    re.compile(rf"\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b"),
    re.compile(rf"\b\d{{1,2}} (?:{_MONTHS})\.? \d{{4}}\b"),
)
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    also may might must shall one two new use used using get got via per
    """.split()  # noqa: SIM905 - a word list reads better as prose
)
MAX_SENTENCE = 300
PARSE_LIMIT = 400_000  # characters of one text read as blocks; past that, headings only
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
# A source longer than this (characters of body) is summarised part by part.
LONG_SOURCE = 12_000
MAX_PARTS = 60
KNOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd", ".txt", ".text", ".rst", ".html", ".htm", ".xhtml",
                  ".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".tsv", ".epub", ".org", ".adoc"}


@dataclass(frozen=True)
class SourceDigest:
    title: str
    summary: str
    key_points: list[str]
    dates: list[str]
    outline: list[str]
    parts: list[tuple[str, str]] = field(default_factory=list)  # (heading, first sentence) of a long source
    sentences: list[str] = field(default_factory=list)  # main-content sentences, for concept mentions
    body: str = ""  # the text without front matter


# -- structure: markdown read by a CommonMark parser ------------------------------------------

@dataclass(frozen=True)
class Block:
    """One unit of a document: a heading, a paragraph or a list item (with its continuation
    lines), as markdown-it-py parses it. ``text`` is the inline source, lines joined."""

    kind: str  # heading | para | item
    level: int  # a heading's level, else the list depth (0 outside lists)
    text: str
    line: int  # first line in the source text (0-based)


def _parser(kind: str) -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    # Blocks are all we read (a block's inline source is its text): inline parsing would double
    # the cost for nothing.
    parser.core.ruler.disable(["inline", "text_join"])
    if kind == "text":
        # Plain text reaches us with its setext/reST titles already made "#" headings by the
        # extractor; an underline here is a rule or a table border, not a heading.
        parser.disable("lheading")
    return parser


_PARSERS = {"text": _parser("text"), "markdown": _parser("markdown")}


_HTML_HEADING_RE = re.compile(r"<h([1-6])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^<>]*>")


@lru_cache(maxsize=8)
def blocks(text: str, kind: str = "markdown") -> tuple[Block, ...]:
    """Headings, paragraphs and list items outside code, HTML blocks and tables, in order.

    Link-reference definitions are not blocks (the parser takes them out), a list item is one
    unit however its lines wrap, and a nested item is its own unit."""
    parser = _PARSERS["text" if kind == "text" else "markdown"]
    rest = ""
    if len(text) > PARSE_LIMIT:
        # A very long text (an "all in one page" manual): its first PARSE_LIMIT characters are
        # read as blocks, the rest for its headings only, so every part is still listed.
        cut = text.rfind("\n\n", 0, PARSE_LIMIT)
        cut = cut if cut > PARSE_LIMIT // 2 else PARSE_LIMIT
        text, rest = text[:cut], text[cut:]
    try:
        tokens = parser.parse(text)
    except Exception:  # the parser never raises on text; a bug there must not cost the source
        log.warning("markdown parser failed; reading the text as paragraphs", exc_info=True)
        return tuple(Block("para", 0, " ".join(p.split()), 0) for p in re.split(r"\n\s*\n", text) if p.strip())
    found: list[Block] = []
    depth = 0
    in_table = 0
    heading_level = 0
    for token in tokens:
        kind_ = token.type
        if kind_ == "table_open":
            in_table += 1
        elif kind_ == "table_close":
            in_table -= 1
        elif kind_ == "list_item_open":
            depth += 1
        elif kind_ == "list_item_close":
            depth -= 1
        elif kind_ == "heading_open":
            heading_level = int(token.tag[1:])
        elif kind_ == "heading_close":
            heading_level = 0
        elif kind_ == "html_block" and not in_table and "<h" in token.content.lower():
            # A heading written in HTML (a README's centred `<h1 align="center">Name</h1>`) is
            # a heading all the same.
            line = token.map[0] if token.map else 0
            for match in _HTML_HEADING_RE.finditer(token.content):
                flat = " ".join(html.unescape(_TAG_RE.sub(" ", match.group(2))).split())
                if flat:
                    found.append(Block("heading", int(match.group(1)), flat, line))
        elif kind_ == "inline" and not in_table:
            line = token.map[0] if token.map else 0
            flat = " ".join(token.content.split())
            if not flat:
                continue
            if heading_level:
                found.append(Block("heading", heading_level, flat, line))
            else:
                found.append(Block("item" if depth else "para", depth, flat, line))
    if rest:
        offset = text.count("\n")
        in_fence = False
        for number, line_text in enumerate(rest.split("\n")):
            if line_text.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            heading = None if in_fence else _ATX_RE.match(line_text)
            if heading:
                found.append(Block("heading", len(heading.group(1)), heading.group(2), offset + number))
    return tuple(found)


def headings(text: str, kind: str = "markdown") -> list[tuple[int, str]]:
    """(level, text) of every heading outside code, in order."""
    return [(b.level, b.text) for b in blocks(text, kind) if b.kind == "heading"]


def main_blocks(text: str, kind: str = "markdown") -> list[Block]:
    """The paragraphs and list items of the main content: without sections whose heading marks
    them as boilerplate (License, Contents, …), a table of contents, badge and image lines."""
    out: list[Block] = []
    skip_level = 0
    in_toc = False
    for block in blocks(text, kind):
        if block.kind == "heading":
            if skip_level and block.level > skip_level:
                continue
            skip_level = block.level if section_is_boilerplate(block.text) else 0
            in_toc = bool(skip_level) and _TOC_HEADING_RE.match(block.text.strip()) is not None
            continue
        if skip_level and in_toc and block.kind == "para" and not block.text.startswith("["):
            skip_level = 0  # a table of contents ends where prose starts, heading or not
        if skip_level:
            continue
        if _IMAGE_RE.search(block.text) and not _IMAGE_LINE_RE.sub("", block.text).strip():
            continue  # an image or badge line
        out.append(block)
    return out


def main_content(text: str, kind: str = "markdown") -> str:
    """The main content's paragraphs and items, one per line (boilerplate sections left out)."""
    return "\n\n".join(b.text for b in main_blocks(text, kind))


_IMAGE_RE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_IMAGE_LINE_RE = re.compile(r"\[?!\[[^\]]*\]\([^)]*\)\]?(\([^)]*\))?")
_ROLE_RE = re.compile(r"(?<![\w`]):(?:[a-zA-Z][\w+.-]*:)?[a-zA-Z][\w+.-]*:`([^`]+)`")
_MYST_ROLE_RE = re.compile(r"\{[a-zA-Z][\w+.:-]*\}`([^`]+)`")
_ROLE_TARGET_RE = re.compile(r"^(.*?)\s*<[^<>]+>$")


_REFERENCE_ROLES = re.compile(r"[:{](issue|issues|pr|pull|gh|bug|user|commit|ghsa|cve|sha)[:}]", re.IGNORECASE)


def _role_text(match: re.Match[str]) -> str:
    """``:ref:`the guide <guide>``` -> ``the guide``; ``:func:`open``` -> ``open``; a tracker
    reference (``:issue:`123```) is dropped: a Sphinx or MyST role left in the text (an extractor
    that did not render it) reads as its words."""
    if _REFERENCE_ROLES.match(match.group(0)):
        return ""
    inner = match.group(1).strip()
    target = _ROLE_TARGET_RE.match(inner)
    inner = target.group(1) if target and target.group(1) else inner
    return inner.lstrip("~!")


def plain_inline(text: str, references: frozenset[str] = frozenset()) -> str:
    """Inline markdown as prose: links as their text, images dropped, roles as their words;
    every other character (underscores, asterisks, backticks) kept as it is. ``references``:
    the labels of the document's link-reference definitions (folded), so that a shortcut
    reference link ("using [lzbench], …") reads as its text."""
    text = re.sub(r"!?\[\[([^\]|]+)(?:\|([^\]]+))?\]\]", lambda m: m.group(2) or m.group(1), text)
    text = _IMAGE_RE.sub("", text)
    # A badge: a link around an image, empty once the image is gone.
    text = re.sub(r"\[\s*\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)", "", text)
    text = re.sub(r"\[([^\]]+)\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # reference links
    if references and "[" in text:
        text = _SHORTCUT_REFERENCE_RE.sub(
            lambda m: m.group(1) if " ".join(m.group(1).split()).casefold() in references else m.group(0), text)
    text = re.sub(r"`([^`<]+?)\s*<[^<>`]+>`__?", r"\1", text)  # reST links: `text <url>`_
    text = re.sub(r"\s*\[(?:#\w*|\*|\d+)\]_", "", text)  # reST footnote references: [#f1]_
    text = re.sub(r"<(https?://[^>\s]+)>", r"\1", text)  # autolinks
    text = _ALERT_RE.sub("", text)  # GitHub's "> [!NOTE]": a box's label, not a word of the text
    text = _ROLE_RE.sub(_role_text, text)
    text = _MYST_ROLE_RE.sub(_role_text, text)
    return re.sub(r"\\([\[\]_*#<>`\\])", r"\1", text)  # markdown escapes (trafilatura adds them)


_ALERT_RE = re.compile(r"^\s*\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*", re.IGNORECASE)
_SHORTCUT_REFERENCE_RE = re.compile(r"(?<![\]!\\])\[([^\[\]]+)\](?![(\[:])")
_REFERENCE_DEFINITION_RE = re.compile(r"^ {0,3}\[([^\[\]]+)\]:[ \t]*\S", re.MULTILINE)


def reference_labels(text: str) -> frozenset[str]:
    """The folded labels of ``text``'s link-reference definitions (``[gcc]: https://gcc.gnu.org/``)."""
    return frozenset(" ".join(m.group(1).split()).casefold() for m in _REFERENCE_DEFINITION_RE.finditer(text))


def _close_markup(cut: str) -> str:
    """A sentence cut short closes the code span or bold run it cut into (never deletes it)."""
    if cut.count("`") % 2:
        cut += "`"
    if cut.count("**") % 2:
        cut += "**"
    return cut


# Spans a sentence never ends inside: code spans, and words with inner dots (versions 1.2.3,
# file names, dotted identifiers flask.Flask.g, URLs), each without its sentence's own full stop.
_PROTECT_RE = re.compile(INLINE_CODE_RE.pattern + r"|[^\s`]*\w[.:/]\w[^\s`]*?(?=[.,;:!?)\]\"']*(?:\s|$))")
_PLACE = "\ue000{}\ue001"
_PLACE_RE = re.compile("\ue000(\\d+)\ue001")


def sentence_split(flat: str) -> list[str]:
    """One paragraph (on one line) cut into sentences by sentencex (abbreviations, initials,
    numbers), never inside a code span, a version number or a dotted name."""
    kept: list[str] = []

    def protect(match: re.Match[str]) -> str:
        if len(match.group(0)) < 4 and not re.search(r"\d", match.group(0)):
            return match.group(0)  # "e.g", "i.e": abbreviations, which the segmenter knows
        kept.append(match.group(0))
        return _PLACE.format(len(kept) - 1)

    masked = _PROTECT_RE.sub(protect, flat)
    if not re.search(r"[.!?]\s", masked):
        return [flat]  # one sentence: the segmenter has nothing to do
    pieces = _emphasis_kept_whole([p.strip() for p in sentencex.segment("en", masked) if p.strip()])
    return [_PLACE_RE.sub(lambda m: kept[int(m.group(1))], p) for p in pieces] or [flat]


_CLOSING_EMPHASIS_RE = re.compile(r"(\*\*|__|\*|_)(?=\s|$)")
_RUN_IN_HEADING_RE = re.compile(r"(\*\*|__)[^*_]+[.:!?]\1|([*_])[^*_]+[.:!?]\2")


def _open_runs(text: str, marker: str) -> bool:
    """``marker`` (``**``, ``*``…) opened in ``text`` and not closed."""
    if len(marker) == 2:
        return text.count(marker) % 2 == 1
    return (text.count(marker) - 2 * text.count(marker * 2)) % 2 == 1


def _emphasis_kept_whole(pieces: list[str]) -> list[str]:
    """The segmenter cuts after a full stop inside emphasis ("**What this covers.** A daemon
    …" -> "**What this covers." and "** A daemon …"): the closing marker goes back to its
    sentence. A run-in heading ("**What this covers.**", "*Note.*" opening a paragraph) is
    no sentence of its own: it stays with the sentence it introduces."""
    out: list[str] = []
    for piece in pieces:
        closing = _CLOSING_EMPHASIS_RE.match(piece)
        if out and closing and _open_runs(out[-1], closing.group(1)):
            out[-1] += closing.group(1)
            piece = piece[closing.end():].strip()
            if not piece:
                continue
        if len(out) == 1 and _RUN_IN_HEADING_RE.fullmatch(out[0]):
            out[0] = f"{out[0]} {piece}"
            continue
        out.append(piece)
    return out


def split_sentences(text: str, kind: str = "markdown") -> list[str]:
    """Main-content sentences, boilerplate left out, each at most ``MAX_SENTENCE`` long."""
    return [s for _, s in _block_sentences(text, kind)]


def _block_sentences(text: str, kind: str = "markdown") -> list[tuple[Block, str]]:
    out: list[tuple[Block, str]] = []
    references = reference_labels(text) if "]:" in text else frozenset()
    for block in main_blocks(text, kind):
        flat = " ".join(plain_inline(block.text, references).split())
        if not flat:
            continue
        for sentence in sentence_split(flat):
            sentence = _unwrapped(sentence.strip())
            if len(sentence) < 12 or len(_WORD_RE.findall(sentence)) < 3:
                continue
            if boilerplate_rule(sentence):
                continue
            if len(sentence) > MAX_SENTENCE:
                cut = sentence[: MAX_SENTENCE - 1].rsplit(" ", 1)[0]
                sentence = _close_markup(cut) + "…"
            out.append((block, sentence))
    return out


def _unwrapped(sentence: str) -> str:
    """A whole sentence set in parentheses, an aside ("(Python is pre-installed with most
    Linux distributions.)"), quoted as the sentence it is."""
    emphasis = re.fullmatch(r"([*_]{1,2})(\(.*\)\.?)\1", sentence)
    if emphasis:
        sentence = emphasis.group(2)  # "_(Please open a GitHub issue …)_": an aside in italics
    if len(sentence) > 2 and sentence[0] == "(" and sentence.endswith((")", ").")):
        inner = sentence[1:].removesuffix(".").removesuffix(")")
        depth = 0
        for char in inner:
            depth += (char == "(") - (char == ")")
            if depth < 0:
                return sentence  # "(a) first, (b) second": the opening bracket closes early
        if depth == 0 and re.search(r"[.!?]$", inner):
            return inner.strip()
    return sentence


def source_properties(text: str, kind: str) -> tuple[dict[str, Any], str]:
    """A dropped markdown note's own front matter (e.g. Obsidian properties), and its body.

    Read with python-frontmatter. Its split may fold the blank lines after the closing
    ``---``, which costs nothing here (a source is never written back); pages.py keeps its own
    byte-exact parser for the pages the daemon rewrites.
    """
    if kind not in ("markdown", "text") or not frontmatter.checks(text):
        return {}, text
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, ValueError):
        return {}, text  # not YAML after all: the whole text is the note
    meta = post.metadata if isinstance(post.metadata, dict) else {}
    return dict(meta), post.content


def humanize_file_name(path: str) -> str:
    """``raw/zlib1g_README.Debian`` -> ``zlib1g README.Debian``; known format suffixes dropped."""
    name = Path(path).name
    suffix = Path(name).suffix
    if suffix.lower() in KNOWN_SUFFIXES:
        name = name[: -len(suffix)]
    return " ".join(name.replace("_", " ").split()) or Path(path).name

def _clean_heading(text: str) -> str:
    text = re.sub(r"\s*\{#[^}]*\}\s*$", "", text)  # {#anchor}
    # a setext underline; an ATX heading's closing hashes (after a space: "C#" keeps its own)
    raw = re.sub(r"(?:\s+(=+|-{2,})|\s+#+)\s*$", "", text.strip()).strip()
    text = " ".join(plain_inline(raw).split())
    # A permalink mark a documentation site puts after each heading ("Abstract¶"), and an emoji
    # set before a project's name ("🚅 LiteLLM"), are decoration, not words of the heading.
    text = _HEADING_DECORATION_RE.sub("", text).strip()
    if not text:
        # A heading that is only an image (a project's logo over "====") is named by its alt text.
        alt = _IMAGE_ALT_RE.search(raw)
        text = " ".join((alt.group(1) or alt.group(2) or "").split()) if alt else ""
    return text


_HEADING_DECORATION_RE = re.compile(
    r"\s*[¶§\U0001F517]+$|^(?:[\u2190-\u2BFF\U0001F000-\U0001FAFF][\uFE0F\u200D]*)+\s+(?=\w)")
_IMAGE_ALT_RE = re.compile(r"!\[([^\]]+)\]\(|<img\b[^>]*\balt=[\"']([^\"']+)[\"']", re.IGNORECASE)


# What separates a page's name from its site's in an HTML <title> ("File system | Node.js").
_TITLE_SEPARATOR_RE = re.compile(r"\s+[|—–·:-]\s+")


def _site_banner(h1: str, doc_title: str) -> bool:
    """An HTML page whose first ``#`` heading is the site's name, which its <title> names
    after the page's own name ("File system | Node.js Documentation")."""
    segments = [s.strip().casefold() for s in _TITLE_SEPARATOR_RE.split(doc_title) if s.strip()]
    return len(segments) > 1 and h1.casefold() in segments[1:]


def _heading_named_by(text: str, doc_title: str) -> str:
    """The first heading of ``text`` (of any level) when the document's title is that heading,
    alone or as one segment beside others (the site's name); '' otherwise."""
    first = next((_clean_heading(h) for _level, h in headings(text, "markdown") if _clean_heading(h)), "")
    if not first or sentence_like(first) or _generated_banner(first):
        return ""
    segments = [doc_title, *_TITLE_SEPARATOR_RE.split(doc_title)]
    wanted = _letters(first)
    return first if wanted and any(_letters(s) == wanted for s in segments) else ""


# The files a project names in capitals by convention: "README" is that file, not a shout.
_FILE_NAMES_IN_CAPITALS = frozenset(
    ("README", "NEWS", "TODO", "COPYING", "INSTALL", "AUTHORS", "CHANGELOG", "LICENSE", "HACKING", "THANKS"))
# "README: Docutils 0.23", "README for zlib": the file's name before the document's own.
_README_PREFIX_RE = re.compile(r"^(?:README|Read ?me)(?:\.\w+)?\s*(?:[:—–|-]\s*|\s+for\s+)(?=\S)", re.IGNORECASE)
_SMALL_WORDS = frozenset(("a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "with", "from"))


def _calmed_capitals(title: str, text: str) -> str:
    """A heading in capitals ("BUG REPORTS", "TRIGGERS") in the case the text writes its words:
    a word the prose writes in lower case more often than in capitals is capitalised ("Bug
    Reports"); a name the prose writes in capitals (GNU, DPKG, HTTP) stays as it is."""
    letters = [c for c in title if c.isalpha()]
    if len(letters) < 4 or any(c.islower() for c in letters):
        return title
    words = []
    for index, word in enumerate(title.split()):
        bare = word.strip(".,:;!?()[]'\"")
        lower = len(re.findall(rf"(?<![\w-]){re.escape(bare.lower())}(?![\w-])", text)) if bare.isalpha() else 0
        upper = len(re.findall(rf"(?<![\w-]){re.escape(bare)}(?![\w-])", text)) - 1 if bare.isalpha() else 0
        if lower > upper and bare not in _FILE_NAMES_IN_CAPITALS:
            new = bare.lower() if index and bare.lower() in _SMALL_WORDS else bare.capitalize()
            word = word.replace(bare, new)
        words.append(word)
    return " ".join(words)


def sentence_like(title: str) -> bool:
    """A "title" that is a sentence of the text (a PDF's bold line, a definition list's first
    entry): it ends as a sentence does and has several words, or it is long."""
    words = title.split()
    if len(words) > 14:
        return True
    return len(words) >= 4 and bool(re.search(r"[^.][.!?]$|[.!?][\"')]$", title)) and not title.endswith("...")


def find_title(text: str, kind: str, doc_title: str, fallback: str, meta: dict[str, Any] | None = None) -> str:
    """Front matter ``title``; else the first level-1 heading, whatever it says ("Quickstart",
    "Changelog": :func:`qualify_title` adds the project); else the document's own title
    metadata (PDF/DOCX/HTML <title>, a man page's NAME); else ``fallback`` (the file name
    humanised). Never a sub-heading, never a sentence."""
    declared = (meta or {}).get("title")
    if isinstance(declared, str) and declared.strip():
        return " ".join(declared.split())[:120]
    first_h1 = next((_clean_heading(h) for level, h in headings(text, "text" if kind == "text" else "markdown")
                     if level == 1 and _clean_heading(h) and not sentence_like(_clean_heading(h))
                     and not _generated_banner(_clean_heading(h))), "")
    if first_h1:
        first_h1 = _calmed_capitals(_README_PREFIX_RE.sub("", first_h1) or first_h1, text)
        if kind == "html" and doc_title and _site_banner(first_h1, doc_title):
            return _TITLE_SEPARATOR_RE.split(doc_title)[0].strip()[:120]
        if (kind == "html" and is_generic_title(first_h1) and doc_title.strip() and not is_generic_title(doc_title)
                and _letters(first_h1) not in _letters(doc_title) and not _junk_metadata_title(doc_title)
                and not sentence_like(doc_title)):
            # A page whose first heading is a section's ("Abstract") and whose <title> names the
            # document ("Debian Python Policy 0.12.0.0 documentation") is that document.
            return " ".join(doc_title.split())[:120]
        return first_h1[:120]
    if kind == "html" and doc_title.strip():
        # A section page's <title> is "its first heading - the site" ("Shared-State Concurrency -
        # The Rust Programming Language", "Installation — Flask Documentation (3.x)"): the page
        # is named by that heading, not by the site.
        named = _heading_named_by(text, doc_title)
        if named:
            return named[:120]
    if doc_title.strip() and not _junk_metadata_title(doc_title) and not sentence_like(doc_title):
        return " ".join(doc_title.split())[:120]
    if kind == "markdown":
        logo = _logo_name(text)
        if logo:
            return logo[:120]
    if kind in ("pdf", "docx", "pptx"):
        # No heading, no metadata: a title page's first line names the document, when it is one
        # ("Shared MIME-info Database"), not a sentence or a banner.
        first = next((b for b in blocks(text) if b.kind != "heading"), None)
        line = _clean_heading(first.text) if first is not None else ""
        if (first is not None and first.line < 3 and 1 <= len(line.split()) <= 10 and not sentence_like(line)
                and not line.endswith((".", ":", ",")) and line[:1].isupper() and not _generated_banner(line)):
            return line[:120]
    return fallback[:120]


# What an image's alt text says when it is a badge or a picture, not the project's name.
_NOT_A_LOGO_NAME_RE = re.compile(
    r"\b(?:logo|badge|banner|screenshot|image|icon|build|status|version|licen[cs]e|coverage|downloads?|docs?|"
    r"documentation|ci|pypi|chat|discord|slack|twitter|sponsors?|tests?)\b", re.IGNORECASE)


def _logo_name(text: str) -> str:
    """A README with no heading that opens with its project's logo ("<img alt="Zstandard">"
    above "Zstandard, or zstd, is …") is named by the logo's alt text, when its first paragraph
    names the same thing; '' otherwise."""
    lines = text.split("\n")
    first = next((b for b in blocks(text) if b.kind == "para" and not (
        _IMAGE_RE.search(b.text) and not _IMAGE_LINE_RE.sub("", b.text).strip())), None)
    if first is None or first.line > 40:
        return ""
    prose = plain_inline(first.text)
    for match in _IMAGE_ALT_RE.finditer("\n".join(lines[: first.line])):
        name = " ".join(html.unescape(match.group(1) or match.group(2) or "").split())
        if (1 <= len(name.split()) <= 3 and not _NOT_A_LOGO_NAME_RE.search(name) and not is_generic_title(name)
                and re.search(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", prose, re.IGNORECASE)):
            return name
    return ""


def project_of(path: str) -> str:
    """The project a source belongs to: the nearest folder under raw/ that names something
    ("raw/flask/docs/quickstart.md" -> "Flask"), or ''."""
    parts = Path(path).parts
    folders = list(parts[1:-1]) if parts[:1] == ("raw",) else list(parts[:-1])
    for folder in reversed(folders):
        name = " ".join(folder.replace("_", " ").split())
        if name and not is_generic_title(name) and name.casefold() not in _PLAIN_FOLDERS:
            # "flask" -> "Flask"; a package name with digits or dashes is written as it is.
            return name.capitalize() if name.isalpha() and name.islower() else name
    return ""


_PLAIN_FOLDERS = frozenset((
    "doc", "docs", "src", "html", "htm", "api", "raw", "inbox", "files", "dist", "site", "www", "pdf", "txt", "md",
    "rst", "text", "en", "us", "en_us", "user", "guide", "guides", "man", "man1", "man5", "man8", "tmp"))


def qualify_title(title: str, path: str, taken: Callable[[str], bool]) -> str:
    """A title that is generic ("Quickstart", "README") or that another source already has is
    qualified by its project ("Flask — Quickstart"); if that is taken too, by its folder
    path, and as a last resort by a number. ``taken``: is this title another source's?"""
    project = project_of(path)
    stem = humanize_file_name(path)
    generic = is_generic_title(title)
    candidates = [] if generic else [title]
    if project and _letters(project) not in _letters(title):
        candidates.append(f"{project} — {title}")
    elif project or stem.casefold() in title.casefold():
        candidates.append(f"{title} ({stem})" if stem.casefold() not in title.casefold() else title)
    else:
        candidates.append(f"{stem} — {title}" if generic else f"{title} ({stem})")
    folder = "/".join(Path(path).parts[1:-1])
    if folder:
        candidates.append(f"{candidates[-1] if candidates else title} ({folder})")
    for candidate in candidates:
        if not taken(candidate):
            return candidate
    base = candidates[-1] if candidates else title
    number = 2
    while taken(f"{base} ({number})"):
        number += 1
    return f"{base} ({number})"


def _generated_banner(title: str) -> bool:
    """A first line a tool wrote ("This file was automatically generated by the …")."""
    return re.search(r"\bgenerated by\b|^this (file|document|page) (was|is) ", title, re.IGNORECASE) is not None


def _letters(text: str) -> str:
    """"Node.js" and "nodejs" alike: letters and digits, case-folded."""
    return re.sub(r"[\W_]+", "", text.casefold())


def _junk_metadata_title(title: str) -> bool:
    """Title metadata that tools fill in by themselves ("Microsoft Word - draft.docx",
    "untitled", "This file was automatically generated by …") names nothing."""
    flat = " ".join(title.split())
    return bool(re.search(r"^(untitled|document\d*|presentation\d*|slide \d+|book\d*)$|^microsoft (word|powerpoint)"
                          r"|\.(docx?|pptx?|pdf|tex|dvi|html?)$|\bgenerated by\b|^this (file|document) ",
                          flat, re.IGNORECASE)) or is_generic_title(flat)


def find_dates(text: str, limit: int = 12) -> list[str]:
    found: dict[str, None] = {}
    for pattern in _DATE_RES:
        for match in pattern.finditer(text):
            value = match.group(0)
            if pattern is _DATE_RES[0]:
                try:
                    date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
                except ValueError:
                    continue
            found.setdefault(value, None)
    return list(found)[:limit]

def _outline(text: str, title: str, kind: str = "markdown", limit: int = 12) -> list[str]:
    heads = []
    for level, heading in headings(text, kind):
        heading = _clean_heading(heading)
        if level in (2, 3) and heading and heading != title:
            heads.append(("  " if level == 3 else "") + heading)
    return heads[:limit]


# -- changelogs --------------------------------------------------------------------------------

_VERSION_HEADING_RE = re.compile(
    r"^[\W_]*(?:(?:version|release|v)\s*|[\w.-]+\s+(?:v(?:ersion)?\s*)?)?(?P<v>\d+(?:\.\d+)+[\w.+-]*)\S*"
    # what follows a version: nothing, a date, "(…)", "- …", "released …" — not words ("1.1. Version")
    rf"(?:\s*$|\s*[(\[–—:-]|\s+(?:un)?released\b|\s+\d{{4}}|\s+(?:{_MONTHS})\b)", re.IGNORECASE)
_CHANGELOG_NAME_RE = re.compile(r"change ?log|\bchanges\b|\bhistory\b|\bnews\b|release ?notes|what'?s ?new",
                                re.IGNORECASE)
_DEBIAN_ENTRY_RE = re.compile(r"^(\S+) \(([^)\s]+)\) [^;\n]+; *urgency=\S+\s*$", re.MULTILINE)


def _as_sentence(text: str) -> str:
    text = " ".join(plain_inline(text).split()).rstrip(" ;,")
    if text and not re.search(r"[.!?][\"')`*]*$", text):
        text += "."
    return text


def changelog_digest(body: str, kind: str, title: str, name: str) -> tuple[list[str], list[str]] | None:
    """A changelog read as one: (summary sentences, key points) naming the newest version,
    when it was released and what changed in it; None when ``body`` is not a changelog."""
    debian = _DEBIAN_ENTRY_RE.search(body)
    if debian:
        end = body.find("\n -- ", debian.end())
        entry = body[debian.end(): end if end != -1 else len(body)]
        trailer = body[end + 5: body.find("\n", end + 5)] if end != -1 else ""
        when = next(iter(find_dates(trailer, 1)), "")
        released = re.search(r">\s+(.+)$", trailer)
        items = [" ".join(m.group(1).split()) for m in
                 re.finditer(r"^\s{2,}[*+-] (.+(?:\n\s{4,}(?![*+-] )\S.*)*)", entry, re.MULTILINE)]
        version, package = debian.group(2), debian.group(1)
        stamp = when or (released.group(1).strip() if released else "")
        date_part = f" (released {stamp})" if stamp else ""
        return _changelog_result(f"{package} {version}", date_part, items)
    gnu = _gnu_changelog(body) or _gnu_news(body)
    if gnu is not None:
        return gnu
    named = _CHANGELOG_NAME_RE.search(f"{title} {name}") is not None
    every = [b for b in blocks(body, kind) if b.kind == "heading"]
    # A version heading opens with its version ("3.1.0", "Version 3.1.0", "v2.0 (2024-01-02)",
    # "[1.2.0] - 2024-05-01", "flask 2.0.1"); an API manual's "v8.getHeapStatistics()" does not.
    heads = [b for b in every if _VERSION_HEADING_RE.match(plain_inline(b.text))]
    if len(heads) < 2 or not (named or (len(heads) >= 3 and len(heads) * 2 >= len(every))):
        return None
    if changelog_part(body, kind) is not None:
        return None  # a README that ends with its changelog: read as the README it is
    newest = heads[0]
    items = []
    started = False
    lead = ""
    for block in blocks(body, kind):
        if block is newest:
            started = True
            continue
        if not started:
            continue
        if block.kind == "heading":
            if block.level <= newest.level:
                break
            continue
        if block.kind == "item" and block.level == 1:
            items.append(block.text)
        elif block.kind == "para" and not items and not lead:
            lead = block.text
    version = _VERSION_HEADING_RE.match(plain_inline(newest.text))
    number = version.group("v").rstrip(".-") if version else newest.text
    when = next(iter(find_dates(newest.text + " " + lead, 1)), "")
    if not when and re.search(r"\bunreleased\b", newest.text + " " + lead, re.IGNORECASE):
        when = "unreleased"
    date_part = "" if not when else " (not released yet)" if when == "unreleased" else f" (released {when})"
    return _changelog_result(f"version {number}", date_part, items)


# GNU's two formats: a ChangeLog's entry opens "2022-04-07  Jim Meyering  <meyering@fb.com>" over
# tab-indented lines; a NEWS file's release "* Noteworthy changes in release 1.12 (2022-04-07)".
_GNU_ENTRY_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s{2,}(\S[^<\n]*?)\s+<[^<>@\s]+@[^<>\s]+>\s*$", re.MULTILINE)
_GNU_RELEASE_RE = re.compile(
    r"^\*[ \t]+(?:noteworthy[ \t]+)?changes[ \t]+in[ \t]+(?:release|version)[ \t]+(\S+)(?:[ \t]+\(([^)\n]*)\))?"
    r"[^\n]*$", re.MULTILINE | re.IGNORECASE)


def _gnu_changelog(body: str) -> tuple[list[str], list[str]] | None:
    """A GNU ChangeLog: the newest day's entries, each by the line that says what changed."""
    entries = list(_GNU_ENTRY_RE.finditer(body))
    if len(entries) < 2 or body[: entries[0].start()].strip():
        return None
    newest = entries[0].group(1)
    items = []
    for index, entry in enumerate(entries):
        if entry.group(1) != newest:
            break
        end = entries[index + 1].start() if index + 1 < len(entries) else len(body)
        lines = [line.strip() for line in body[entry.end(): end].splitlines() if line.strip()]
        if lines:
            # Its first line: a commit's subject, or the first "* file (function): what changed".
            items.append(re.sub(r"^\*\s+", "", lines[0]))
    return _changelog_result(f"dated {newest} ({entries[0].group(2).strip()})", "", items)


def _gnu_news(body: str) -> tuple[list[str], list[str]] | None:
    """A GNU NEWS file: the newest release, each of its paragraphs by its first sentence."""
    releases = list(_GNU_RELEASE_RE.finditer(body))
    if len(releases) < 2:
        return None
    newest = releases[0]
    section = body[newest.end(): releases[1].start()]
    items = []
    for paragraph in re.split(r"\n[ \t]*\n", section):
        flat = " ".join(paragraph.split())
        if flat and not flat.startswith("*"):  # "** Bug fixes": a heading of the release's own
            items.append(sentence_split(flat)[0])
    when = next(iter(find_dates(newest.group(2) or "", 1)), "")
    if not when and re.search(r"\bunreleased\b|\?\?\?", newest.group(0), re.IGNORECASE):
        when = "unreleased"
    date_part = "" if not when else " (not released yet)" if when == "unreleased" else f" (released {when})"
    return _changelog_result(f"release {newest.group(1)}", date_part, items)


CHANGELOG_PART_PROSE = 3  # paragraphs before a "Changelog" section that make it a part of a larger text


def changelog_part(body: str, kind: str) -> int | None:
    """The line where a document's changelog section starts ("## Changelog" over version
    headings), when the document says more before it (a README ending with its history); None
    for a changelog, or a text without one. Its version entries are then not the document's
    summary or key points."""
    found = blocks(body, kind)
    first_version = next((i for i, b in enumerate(found) if b.kind == "heading"
                          and _VERSION_HEADING_RE.match(plain_inline(b.text))), None)
    if first_version is None:
        return None
    level = found[first_version].level
    parent = next((i for i in range(first_version - 1, -1, -1)
                   if found[i].kind == "heading" and found[i].level < level), None)
    if parent is None or not _CHANGELOG_NAME_RE.search(plain_inline(found[parent].text)):
        return None
    prose = sum(1 for b in found[:parent] if b.kind in ("para", "item"))
    return found[parent].line if prose >= CHANGELOG_PART_PROSE else None


def _changelog_result(newest: str, date_part: str, items: list[str]) -> tuple[list[str], list[str]]:
    changes = [s for s in (_as_sentence(item) for item in items) if len(_WORD_RE.findall(s)) >= 2]
    count = f", with {len(changes)} change{'s' if len(changes) != 1 else ''} listed" if changes else ""
    summary = [f"A changelog; the newest entry is {newest}{date_part}{count}."]
    return summary, changes


# -- the digest -----------------------------------------------------------------------------------

def _norm(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.casefold()))


def _near_duplicate(sentence: str, kept: list[str]) -> bool:
    words = set(_norm(sentence).split())
    for other in kept:
        others = set(_norm(other).split())
        if not words or not others:
            continue
        if _norm(sentence) in _norm(other) or _norm(other) in _norm(sentence):
            return True
        if len(words & others) / min(len(words), len(others)) > 0.8:
            return True
    return False


def licence_only_summary(text: str) -> str:
    """A summary for a source that is all licence or copyright text (a Debian copyright file)."""
    names = sorted({m.group(1).strip() for m in re.finditer(r"^License:\s*(\S[^\n]*)$", text, re.MULTILINE)})
    owners = [m.group(1).strip() for m in re.finditer(r"^Upstream-Name:\s*(\S[^\n]*)$", text, re.MULTILINE)]
    what = f" for {owners[0]}" if owners else ""
    listed = f": {', '.join(names[:6])}" + (f" and {len(names) - 6} more" if len(names) > 6 else "") if names else ""
    return f"Copyright and licence terms{what}{listed}."


def _parts(body: str, kind: str, pairs: list[tuple[Block, str]]) -> list[tuple[str, str]]:
    """A long text along its own structure: (heading, first sentence) at its top heading level
    that repeats (chapters), the text before the first heading as '(opening)'."""
    heads = [b for b in blocks(body, kind) if b.kind == "heading"]
    levels = Counter(b.level for b in heads)
    top = next((level for level in sorted(levels) if levels[level] >= 2), 0)
    if not top:
        return []
    starts = [b.line for b in heads if b.level == top]
    names = ["(opening)"] + [_clean_heading(b.text) or "(untitled)" for b in heads if b.level == top]
    first: dict[int, str] = {}
    whole: dict[int, str] = {}
    for block, sentence in pairs:
        part = bisect.bisect_right(starts, block.line)
        first.setdefault(part, sentence)
        if part not in whole and not sentence_problem(sentence):
            whole[part] = sentence  # a part is told by its first whole sentence, when it has one
    first.update(whole)
    opening_text = any(b.line < starts[0] for b in blocks(body, kind) if b.kind != "heading")
    return [(name, first.get(i, "")) for i, name in enumerate(names) if i or opening_text]


# A sentence that walks the reader through the document rather than saying something: it
# points at an exhibit or another part ("in Listing 16-3", "see Chapter 13", "the code below")
# or opens as a guide's aside ("Notice …", "Recall …", "Let's …").
_NARRATION_RE = re.compile(
    r"\b" + EXHIBIT_WORDS + r"\s+(?:\d[\d.-]*|[A-Z]\b)"
    r"|\b(?:shown|code|example|output) (?:above|below)\b|^(?:Notice|Recall|Let['’]s|Now,|Next,|Here,)\s")
NARRATION_WEIGHT = 0.4
# A sentence that goes on from the one before it ("This is not due to a bug …", "However, they
# MUST NOT …", "Thus, no files …") says little as a key point, read alone.
_GOES_ON_RE = re.compile(
    r"(?:This|That|These|Those|It|They|Such|Thus|Hence|Therefore|However|Otherwise|Instead|Also|Alternatively|"
    r"Similarly|Likewise|Additionally|Furthermore|Moreover|Besides|So|But|Of course|In this case|In that case)\b"
    r"(?![-'’])")
GOES_ON_WEIGHT = 0.6
_ENTRY_RE = re.compile(r"(?:\*\*[^*]{1,80}\*\*|`[^`]{1,80}`):\s")


def digest(text: str, kind: str, doc_title: str, fallback_title: str, summary_sentences: int,
           key_points: int) -> SourceDigest:
    """Extractive summary: lead sentences of the main prose, then the most representative
    others; only whole sentences (never a fragment, code, a link definition or a menu: see
    :func:`textrules.sentence_problem`). A changelog is summarised as a changelog."""
    meta, body = source_properties(text, kind)
    read_as = "text" if kind == "text" else "markdown"
    title = find_title(body, kind, doc_title, fallback_title, meta)
    pairs = _block_sentences(body, read_as)
    sentences = [s for _, s in pairs]
    whole = [s for s in sentences if not sentence_problem(s)]
    words = [w.lower() for w in _WORD_RE.findall(" ".join(whole))]
    freq = Counter(w for w in words if w not in _STOPWORDS and len(w) > 2)
    top = freq.most_common(1)[0][1] if freq else 1

    def score(index_sentence: tuple[int, str]) -> float:
        index, sentence = index_sentence
        terms = [w.lower() for w in _WORD_RE.findall(sentence) if w.lower() not in _STOPWORDS]
        if not terms:
            return 0.0
        weight = sum(freq[t] / top for t in terms) / (len(terms) ** 0.5)
        if _NARRATION_RE.search(sentence):
            # "The code in Listing 16-1 …", "Notice in Listing 16-1 that …": a walk through the
            # document's exhibits, a key point only when nothing states more.
            return weight * NARRATION_WEIGHT
        if _ENTRY_RE.match(sentence):
            # An entry of a reference list ("**-a, --text**: Process …") says one thing about
            # one option: the prose around the list tells more.
            return weight * NARRATION_WEIGHT
        if _GOES_ON_RE.match(sentence):
            return weight * GOES_ON_WEIGHT
        return weight + (0.3 if index == 0 else 0.0) + (0.1 if re.search(r"\d", sentence) else 0.0)

    summary: list[str] = []
    points: list[tuple[int, str]] = []
    changelog = changelog_digest(body, read_as, title, fallback_title)
    if changelog is not None:
        summary, changes = changelog
        changes = [c for c in changes if sentence_problem(c) not in ("code", "link-definition", "markup")]
        points = list(enumerate(changes[: max(0, key_points)]))
    else:
        history = changelog_part(body, read_as)
        if history is not None:
            # A README's closing changelog: its entries are news, not what the document says,
            # nor where it names its subjects (a fix's passing mention of "the CLI").
            sentences = [s for block, s in pairs if block.line < history]
            whole = [s for s in sentences if not sentence_problem(s)]
        for sentence in whole:
            if len(summary) >= summary_sentences:
                break
            if not _near_duplicate(sentence, summary):
                summary.append(sentence)
        chosen = set(summary)
        rest = [(i, s) for i, s in enumerate(whole) if s not in chosen]
        for index, sentence in sorted(rest, key=score, reverse=True):
            if len(points) >= max(0, key_points):
                break
            if not _near_duplicate(sentence, summary + [p for _, p in points]):
                points.append((index, sentence))
    if not summary:
        # No whole sentence: the best of what there is, but never code, a link definition or a menu.
        lines = [s for s in sentences if sentence_problem(s) in ("", "fragment")][:summary_sentences]
        summary = lines or ([licence_only_summary(body)] if re.search(r"licen[cs]e|copyright", body, re.IGNORECASE)
                            else [])
    parts = _parts(body, read_as, pairs) if len(body) > LONG_SOURCE else []
    return SourceDigest(
        title, " ".join(summary), [p for _, p in sorted(points)], find_dates(body), _outline(body, title, read_as),
        parts, sentences, body,
    )


def render_source_page(
    *,
    digest_: SourceDigest,
    source_path: str,
    sha256: str,
    encoding: str,
    kind: str,
    links: list[tuple[str, str]],
    today: date,
    size: int,
    allow_remote_images: bool = False,
    secrets: list[str] | None = None,
) -> str:
    """The source page's full text. ``links`` are (page stem, title) pairs."""
    # Everything below comes from the source (or the model): through the one sanitizer first.
    digest_, links, cleaned = safe_digest(digest_, links, allow_remote_images=allow_remote_images)
    summary_line = digest_.summary.replace("\n", " ")
    short = summary_line if len(summary_line) <= 200 else summary_line[:197].rstrip() + "…"
    meta = {
        "type": "source",
        "title": digest_.title,
        "summary": short,
        "sources": [source_path],
        "updated": today,
        "tags": ["source"],
        "aliases": [],
        "source_path": source_path,
        "sha256": sha256,
        "ingested": today,
        "engine": ENGINE_NAME,
    }
    if secrets:
        meta["secrets"] = list(secrets)  # the kinds only, never a value
    described = kind if kind == encoding else f"{kind}, {encoding}"
    body = [f"# {digest_.title}", "", f"Source: {code_span(source_path)} ({described}, {size} bytes)", ""]
    body += ["## Summary", "", digest_.summary or "(no prose found)", ""]
    if digest_.key_points:
        body += ["## Key points", "", *[f"- {p}" for p in digest_.key_points], ""]
    if digest_.parts:
        shown = digest_.parts[:MAX_PARTS]
        body += ["## Parts", "", f"A long source, read in {len(digest_.parts)} part(s) along its own headings.", ""]
        body += [f"- **{heading}**" + (f" — {first}" if first else "") for heading, first in shown]
        if len(digest_.parts) > len(shown):
            body.append(f"- … and {len(digest_.parts) - len(shown)} more part(s), listed in the source itself")
        body.append("")
    elif digest_.outline:
        body += ["## Outline", "", *[f"- {h}" for h in digest_.outline], ""]
    if digest_.dates:
        body += ["## Dates mentioned", "", *[f"- {d}" for d in digest_.dates], ""]
    if links:
        body += ["## Related pages", ""]
        body += [f"- [[{stem}]]" if title.casefold() == stem.casefold() else f"- [[{stem}|{title}]]"
                 for stem, title in links]
        body.append("")
    body += safety_lines(cleaned, secrets)
    return render_page(Page(meta, "\n".join(body)))
