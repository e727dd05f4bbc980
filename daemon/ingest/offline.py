"""The offline engine: everything an ingest can do without a model.

Deterministic and fast: a source page with an extractive summary, key points, the dates the
source mentions and ``[[links]]`` to existing pages whose title or alias occurs in the text.
Same input, same page, so a crash-and-retry writes the same bytes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from typing import Any

import frontmatter
import yaml

from ..wiki.pages import Page, render_page

ENGINE_NAME = "offline"

_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD_RE = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'-]+")
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


@dataclass(frozen=True)
class SourceDigest:
    title: str
    summary: str
    key_points: list[str]
    dates: list[str]
    outline: list[str]


def _clean_markdown(text: str) -> str:
    """Body text for sentence extraction: no front matter, code, tables or markup noise."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|", "<!--", "---", "===")):
            lines.append("")
            continue
        stripped = re.sub(r"^([-*+]|\d+[.)])\s+", "", stripped)
        stripped = re.sub(r"!?\[\[([^\]|]+)(?:\|([^\]]+))?\]\]", lambda m: m.group(2) or m.group(1), stripped)
        stripped = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", stripped)
        stripped = re.sub(r"[*_`]{1,3}", "", stripped)
        lines.append(stripped)
    return "\n".join(lines)


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", _clean_markdown(text)):
        flat = " ".join(paragraph.split())
        if not flat:
            continue
        for sentence in _SENTENCE_RE.split(flat):
            sentence = sentence.strip()
            if len(sentence) < 12 or len(_WORD_RE.findall(sentence)) < 3:
                continue
            if len(sentence) > MAX_SENTENCE:
                sentence = sentence[: MAX_SENTENCE - 1].rsplit(" ", 1)[0] + "…"
            sentences.append(sentence)
    return sentences


def source_properties(text: str, kind: str) -> tuple[dict[str, Any], str]:
    """A dropped markdown note's own front matter (e.g. Obsidian properties), and its body.

    Read with python-frontmatter. Its split may fold the blank lines after the closing
    ``---``, which costs nothing here (a source is never written back); pages.py keeps its own
    byte-exact parser for the pages the daemon rewrites.
    """
    if kind != "markdown" or not frontmatter.checks(text):
        return {}, text
    try:
        post = frontmatter.loads(text)
    except (yaml.YAMLError, ValueError):
        return {}, text  # not YAML after all: the whole text is the note
    meta = post.metadata if isinstance(post.metadata, dict) else {}
    return dict(meta), post.content


def find_title(text: str, kind: str, html_title: str, fallback: str, meta: dict[str, Any] | None = None) -> str:
    if html_title:
        return html_title[:120]
    declared = (meta or {}).get("title")
    if isinstance(declared, str) and declared.strip():
        return declared.strip()[:120]
    for line in text.splitlines()[:40]:
        heading = re.match(r"^#{1,2}\s+(.+?)\s*#*\s*$", line)
        if heading:
            return heading.group(1).strip()[:120]
    return fallback[:120]


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


def _outline(text: str, limit: int = 12) -> list[str]:
    heads = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else re.match(r"^(#{2,3})\s+(.+?)\s*#*\s*$", line)
        if match:
            heads.append(("  " if len(match.group(1)) == 3 else "") + match.group(2).strip())
    return heads[:limit]


def digest(text: str, kind: str, html_title: str, fallback_title: str, summary_sentences: int,
           key_points: int) -> SourceDigest:
    """Extractive summary: lead sentences, then the most representative others."""
    meta, text = source_properties(text, kind)
    title = find_title(text, kind, html_title, fallback_title, meta)
    sentences = split_sentences(text)
    words = [w.lower() for w in _WORD_RE.findall(_clean_markdown(text))]
    freq = Counter(w for w in words if w not in _STOPWORDS and len(w) > 2)
    top = freq.most_common(1)[0][1] if freq else 1

    def score(index_sentence: tuple[int, str]) -> float:
        index, sentence = index_sentence
        terms = [w.lower() for w in _WORD_RE.findall(sentence) if w.lower() not in _STOPWORDS]
        if not terms:
            return 0.0
        weight = sum(freq[t] / top for t in terms) / (len(terms) ** 0.5)
        return weight + (0.3 if index == 0 else 0.0) + (0.1 if re.search(r"\d", sentence) else 0.0)

    summary = sentences[:summary_sentences]
    rest = list(enumerate(sentences))[len(summary):]
    ranked = sorted(rest, key=score, reverse=True)[: max(0, key_points)]
    points = [sentence for _, sentence in sorted(ranked)]
    if not summary:
        flat = " ".join(_clean_markdown(text).split())
        summary = [flat[:MAX_SENTENCE] + ("…" if len(flat) > MAX_SENTENCE else "")] if flat else []
    return SourceDigest(title, " ".join(summary), points, find_dates(text), _outline(text))


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
) -> str:
    """The source page's full text. ``links`` are (page stem, title) pairs."""
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
    body = [f"# {digest_.title}", "", f"Source: `{source_path}` ({kind}, {encoding}, {size} bytes)", ""]
    body += ["## Summary", "", digest_.summary or "(no prose found)", ""]
    if digest_.key_points:
        body += ["## Key points", "", *[f"- {p}" for p in digest_.key_points], ""]
    if digest_.outline:
        body += ["## Outline", "", *[f"- {h}" for h in digest_.outline], ""]
    if digest_.dates:
        body += ["## Dates mentioned", "", *[f"- {d}" for d in digest_.dates], ""]
    if links:
        body += ["## Related pages", ""]
        body += [f"- [[{stem}]]" if title.casefold() == stem.casefold() else f"- [[{stem}|{title}]]"
                 for stem, title in links]
        body.append("")
    return render_page(Page(meta, "\n".join(body)))
