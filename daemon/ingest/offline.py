"""The offline engine's reading of one source: title, summary, key points, parts, dates.

Deterministic and fast, so a crash-and-retry writes the same bytes. The title follows one
rule (front matter ``title``, else the first level-1 heading, else the document's own title
metadata, else the file name humanised — never a sub-heading). Summaries and key points come
from the main content: sections and sentences that :mod:`textrules` calls boilerplate
(navigation, man-page banners, badges, tables of contents, licence text) are left out, no key
point repeats another or the summary, and text is kept byte for byte (underscores, asterisks,
backticks inside words and code are never removed). A long source is read part by part along
its own headings, and every part is listed: nothing is cut silently.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from ..ingest.pagesafety import safe_digest, safety_lines
from ..ingest.textrules import boilerplate_rule, is_generic_title, section_is_boilerplate
from ..wiki.pages import Page, render_page
from ..wiki.sanitize import code_span

ENGINE_NAME = "offline"

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`*_])")
# A sentence may also start in lower case ("zlib is …") after a full word, never after these.
_LOWER_START_RE = re.compile(r"(?<=[a-z0-9)\]`'\"][.!?])\s+(?=[a-z])")
_ABBREVIATIONS = frozenset(
    ["e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "no", "fig", "resp", "incl", "esp", "viz"])
_WORD_RE = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'-]+")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
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


# -- structure -------------------------------------------------------------------------------

def _fence_mask(lines: list[str]) -> list[bool]:
    """True for lines inside fenced code blocks (and the fences themselves)."""
    mask, in_fence, marker = [], False, ""
    for line in lines:
        stripped = line.lstrip()
        if not in_fence and stripped.startswith(("```", "~~~")):
            in_fence, marker = True, stripped[:3]
            mask.append(True)
            continue
        if in_fence:
            mask.append(True)
            if stripped.startswith(marker):
                in_fence = False
            continue
        mask.append(False)
    return mask


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text) of every ATX heading outside code fences, in order."""
    lines = text.splitlines()
    found = []
    for line, fenced in zip(lines, _fence_mask(lines), strict=True):
        match = None if fenced else _HEADING_RE.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2).strip().rstrip("#").strip()))
    return found


def main_content(text: str) -> str:
    """The text without fenced code, tables, HTML comments, images and badge lines, and
    without sections whose heading marks them as boilerplate (License, Contents, …)."""
    lines = text.splitlines()
    out: list[str] = []
    skip_level = 0
    in_toc = False
    text_mask = _fence_mask(lines)
    in_comment = False
    for line, fenced in zip(lines, text_mask, strict=True):
        if fenced:
            out.append("")
            continue
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            out.append("")
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            if skip_level and level > skip_level:
                out.append("")
                continue
            skip_level = level if section_is_boilerplate(heading.group(2)) else 0
            in_toc = bool(skip_level) and _TOC_HEADING_RE.match(heading.group(2).strip()) is not None
            out.append("")
            continue
        if skip_level and in_toc and line.strip() and not re.match(r"\s*([-*+]|\d+[.)])\s|\s*\[", line):
            skip_level = 0  # a table of contents ends where prose starts, heading or not
        if skip_level:
            out.append("")
            continue
        stripped = line.strip()
        if stripped.startswith(("|", "---", "===", "***", "<")) or re.fullmatch(r"[-=_*~#+. ]+", stripped or "x"):
            out.append("")
            continue
        if re.search(r"!\[[^\]]*\]\([^)]*\)", stripped) and not re.sub(r"\[?!\[[^\]]*\]\([^)]*\)\]?(\([^)]*\))?", "",
                                                                       stripped).strip():
            out.append("")  # an image or badge line
            continue
        out.append(line)
    return "\n".join(out)


def _plain_line(line: str) -> str:
    """A prose line for sentence extraction: list markers and link targets dropped, every
    other character (underscores, asterisks, backticks) kept as it is."""
    stripped = re.sub(r"^\s*([-*+]|\d+[.)])\s+", "", line.strip())
    stripped = re.sub(r"!?\[\[([^\]|]+)(?:\|([^\]]+))?\]\]", lambda m: m.group(2) or m.group(1), stripped)
    stripped = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", stripped)
    stripped = re.sub(r"\[([^\]]+)\]\((?:[^()\s]|\([^()]*\))*\)", r"\1", stripped)
    return re.sub(r"\\([\[\]_*#<>])", r"\1", stripped)  # markdown escapes (trafilatura adds them)


def _close_markup(cut: str) -> str:
    """A sentence cut short closes the code span or bold run it cut into (never deletes it)."""
    if cut.count("`") % 2:
        cut += "`"
    if cut.count("**") % 2:
        cut += "**"
    return cut


def sentence_split(flat: str) -> list[str]:
    """One paragraph (on one line) cut into sentences."""
    pieces: list[str] = []
    for chunk in _SENTENCE_RE.split(flat):
        start = 0
        for match in _LOWER_START_RE.finditer(chunk):
            before = chunk[start:match.start()].rsplit(" ", 1)[-1].rstrip(".!?").casefold()
            if before in _ABBREVIATIONS or len(before) <= 1 or "." in before:
                continue  # "e.g. foo", "v. 2", "libc.so. the" are not sentence ends
            pieces.append(chunk[start:match.start()])
            start = match.end()
        pieces.append(chunk[start:])
    return pieces


def split_sentences(text: str) -> list[str]:
    """Main-content sentences, boilerplate left out, each at most ``MAX_SENTENCE`` long."""
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", main_content(text)):
        lines = [_plain_line(line) for line in paragraph.splitlines() if line.strip()]
        # A list is one item per line; prose wraps across lines.
        items = lines if sum(1 for line in paragraph.splitlines() if re.match(r"\s*([-*+]|\d+[.)])\s", line)) > 1 \
            else [" ".join(lines)]
        for item in items:
            flat = " ".join(item.split())
            if not flat:
                continue
            for sentence in sentence_split(flat):
                sentence = sentence.strip()
                if len(sentence) < 12 or len(_WORD_RE.findall(sentence)) < 3:
                    continue
                if boilerplate_rule(sentence):
                    continue
                if len(sentence) > MAX_SENTENCE:
                    cut = sentence[: MAX_SENTENCE - 1].rsplit(" ", 1)[0]
                    sentence = _close_markup(cut) + "…"
                sentences.append(sentence)
    return sentences


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
    text = text.strip().rstrip("#").strip()
    return " ".join(text.split())


def _site_banner(h1: str, doc_title: str) -> bool:
    """An HTML page whose first ``#`` heading is the site's name, which its <title> names
    after the page's own name ("File system | Node.js Documentation")."""
    segments = [s.strip().casefold() for s in re.split(r"\s+[|—–·:-]\s+", doc_title) if s.strip()]
    return len(segments) > 1 and h1.casefold() in segments[1:]


def find_title(text: str, kind: str, doc_title: str, fallback: str, meta: dict[str, Any] | None = None) -> str:
    """Front matter ``title``; else the first level-1 heading; else the document's own title
    metadata (PDF/DOCX/HTML <title>, a man page's NAME); else ``fallback`` (the file name
    humanised). Never a sub-heading."""
    declared = (meta or {}).get("title")
    if isinstance(declared, str) and declared.strip():
        return " ".join(declared.split())[:120]
    # A level-1 heading that is only a generic word ("Introduction", "README") names no document.
    first_h1 = next((_clean_heading(h) for level, h in headings(text)
                     if level == 1 and _clean_heading(h) and not is_generic_title(_clean_heading(h))), "")
    if first_h1:
        if kind == "html" and doc_title and _site_banner(first_h1, doc_title):
            return re.split(r"\s+[|—–·:-]\s+", doc_title)[0].strip()[:120]
        return first_h1[:120]
    if doc_title.strip() and not _junk_metadata_title(doc_title):
        return " ".join(doc_title.split())[:120]
    return fallback[:120]


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


def _outline(text: str, title: str, limit: int = 12) -> list[str]:
    heads = []
    for level, heading in headings(text):
        heading = _clean_heading(heading)
        if level in (2, 3) and heading and heading != title:
            heads.append(("  " if level == 3 else "") + heading)
    return heads[:limit]


def split_parts(text: str) -> list[tuple[str, str]]:
    """A long text cut along its own structure: (heading, text) at its top heading level
    that repeats (chapters), the text before the first heading as ''."""
    found = headings(text)
    levels = Counter(level for level, _ in found)
    top = next((level for level in sorted(levels) if levels[level] >= 2), 0)
    if not top:
        return [("", text)]
    parts: list[tuple[str, str]] = []
    current, lines = "", list[str]()
    mask = _fence_mask(text.splitlines())
    for line, fenced in zip(text.splitlines(), mask, strict=True):
        match = None if fenced else _HEADING_RE.match(line)
        if match and len(match.group(1)) == top:
            if "\n".join(lines).strip():
                parts.append((current, "\n".join(lines)))
            current, lines = _clean_heading(match.group(2)), []
            continue
        lines.append(line)
    if "\n".join(lines).strip() or current:
        parts.append((current, "\n".join(lines)))
    return parts


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


def digest(text: str, kind: str, doc_title: str, fallback_title: str, summary_sentences: int,
           key_points: int) -> SourceDigest:
    """Extractive summary: lead sentences of the main content, then the most representative others."""
    meta, body = source_properties(text, kind)
    title = find_title(body, kind, doc_title, fallback_title, meta)
    sentences = split_sentences(body)
    words = [w.lower() for w in _WORD_RE.findall(" ".join(sentences))]
    freq = Counter(w for w in words if w not in _STOPWORDS and len(w) > 2)
    top = freq.most_common(1)[0][1] if freq else 1

    def score(index_sentence: tuple[int, str]) -> float:
        index, sentence = index_sentence
        terms = [w.lower() for w in _WORD_RE.findall(sentence) if w.lower() not in _STOPWORDS]
        if not terms:
            return 0.0
        weight = sum(freq[t] / top for t in terms) / (len(terms) ** 0.5)
        return weight + (0.3 if index == 0 else 0.0) + (0.1 if re.search(r"\d", sentence) else 0.0)

    summary: list[str] = []
    # Prose first: sentences that end as sentences do (a title page's lines or a list of names do not).
    prose = [s for s in sentences if s.endswith((".", "!", "?", "…", ".)", '."'))] or sentences
    for sentence in prose:
        if len(summary) >= summary_sentences:
            break
        if not _near_duplicate(sentence, summary):
            summary.append(sentence)
    chosen = set(summary)
    rest = [(i, s) for i, s in enumerate(sentences) if s not in chosen]
    points: list[tuple[int, str]] = []
    for index, sentence in sorted(rest, key=score, reverse=True):
        if len(points) >= max(0, key_points):
            break
        if not _near_duplicate(sentence, summary + [p for _, p in points]):
            points.append((index, sentence))
    if not summary:
        summary = [licence_only_summary(body)] if re.search(r"licen[cs]e|copyright", body, re.IGNORECASE) else []
    parts: list[tuple[str, str]] = []
    if len(body) > LONG_SOURCE:
        for heading, part in split_parts(body):
            first = split_sentences(part)
            parts.append((heading or "(opening)", first[0] if first else ""))
    return SourceDigest(
        title, " ".join(summary), [p for _, p in sorted(points)], find_dates(body), _outline(body, title),
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
