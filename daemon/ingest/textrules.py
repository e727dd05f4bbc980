"""What counts as a document's main content: the rules that keep chrome out of summaries.

A sentence is boilerplate when one of :data:`BOILERPLATE_RULES` matches it: navigation
chrome, a man page's banner, badges, a table of contents, licence and copyright text, a
changelog's entry header or trailer. The rule's name is what ``bench_corpus`` reports. Whole
sections whose heading says they hold such text (License, Contents, Synopsis, …) are left out
of summaries, key points and concept sentences too.

:func:`sentence_problem` says why a sentence is not a whole sentence of prose (a fragment,
code or console output, a link-reference definition, a menu, raw markup): summaries, key
points and "What it is" quotes take only whole sentences.

Words that say nothing about what a page is about ("Documentation", "Introduction", "README",
"Overview", "Changelog", …) are :data:`GENERIC_TITLES`: never a concept page, never a link
target found by title matching.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..wiki.sanitize import INLINE_CODE_RE

# The words that name a numbered part of a document ("Listing 16-1", "Appendix C"): a sentence
# pointing at one walks the reader through the text, and a label made of one is no thing.
EXHIBIT_WORDS = r"(?:Listing|Figure|Fig\.|Table|Example|Chapter|Section|Appendix)"

BOILERPLATE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("navigation", re.compile(
        r"\b(press|use)\b.{0,20}(←|→|arrow keys|left or right)|\bskip to (the )?(main )?content\b|"
        r"\b(jump|go) to (navigation|search|top)\b|^(home|previous|next|up|prev|index|top)"
        r"(\s*[|·•/>»:]?\s*(home|previous|next|up|prev|index|top|contents))+\b|\bedit (this page|on github)\b|"
        r"\bthis (site|website) uses cookies\b|\baccept (all )?cookies\b|\bback to top\b|"
        r"\bnavigat(e|ion) between (chapters|pages)\b|^(search|menu|toggle navigation)\b|\bmain menu\b|"
        # a Texinfo manual's node header: "Next: Multiple ABIs, Previous: Simple Example, Up: …"
        r"^(next|previous|prev|up):\s.{0,120}?\b(next|previous|prev|up):\s",
        re.IGNORECASE)),
    ("man-header", re.compile(
        r"^\s*[\w.:+-]+\([0-9nlx]\w*\)\s+.*\b[\w.:+-]+\([0-9nlx]\w*\)|"
        r"\b(User Commands|System Manager's Manual|Library Functions Manual|File Formats Manual|"
        r"Miscellaneous Information Manual|Linux Programmer's Manual|System Administration)\b.{0,40}\(\d\w*\)|"
        r"^(NAME|SYNOPSIS|DESCRIPTION)\s+[\w.-]+\s+[-—]", re.MULTILINE)),
    ("badge", re.compile(r"\[!\[|shields\.io|badge(s)?\b.*\(http|\bbuild status\b|travis-ci|codecov\.io|"
                         r"\bci status\b", re.IGNORECASE)),
    ("table-of-contents", re.compile(r"^\s*(table of contents|contents|toc|on this page|in this (article|chapter))"
                                     r"\s*[:.]?\s*($|\d|[-*•])|(\s?\.){5,}\s*\d", re.IGNORECASE)),
    ("licence", re.compile(
        r"permission is hereby granted|is free software\b|without any warranty|licensed under the|"
        r"spdx-license-identifier|\bcopyright\s*(\(c\)|©|c©|\d{4})|all rights reserved|"
        r"the software is provided \"?as is|gnu (lesser |library |affero )?general public license|"
        r"you can redistribute it|redistribution and use in source and binary|permission to use, copy, modify|"
        r"distributed in the hope that it will be useful|gnu free documentation license|"
        r"in no event shall|merchantability|fitness for a particular purpose|liable for any|"
        r"provided that the above copyright notice|without warranties or conditions|"
        r"redistributions? of source code|redistributions in binary form|if not, see\b|"
        r"\bwrit(?:e|ing) to the free software foundation\b|\b(?:51 franklin st|59 temple place)\b|"
        r"(?-i:^(\d{4}(\s*[-–]\s*\d{4})?,?\s+)+(by\s+)?[A-Z][\w.-]*\s+[A-Z])|"
        r"^(files|copyright|license|upstream-name|upstream-contact|source|format):\s", re.IGNORECASE)),
    ("changelog-header", re.compile(
        r"^[a-z0-9][a-z0-9.+-]*\s+\([^)]*\d[^)]*\)\s+[\w-]+(\s+[\w-]+)*;\s*urgency=|^--\s+.+<[^>]+@[^>]+>|"
        r"^\s*\*\s+New upstream (release|version)\b", re.IGNORECASE)),
    ("link-list", re.compile(r"^(\s*\[[^\]]+\]\([^)]*\)\s*[|·•,]?\s*){2,}$")),
)

# Sections left out of the main content, by heading (case-insensitive, numbering ignored).
BOILERPLATE_SECTIONS = frozenset({
    "license", "licence", "licensing", "copying", "copyright", "copyright and license", "copyright notice",
    "table of contents", "contents", "toc", "on this page", "synopsis", "see also", "reporting bugs",
    "author", "authors", "credits", "acknowledgements", "acknowledgments", "contributors", "badges",
    "navigation", "license and copyright", "legal", "disclaimer", "colophon",
})

GENERIC_TITLES = frozenset("""
documentation introduction readme overview changelog changes change log news license licence copying copyright
contents index table of contents toc summary description details notes note about home help faq todo authors
author credits thanks contributors contributing install installation installing usage examples example
getting started quick start quickstart tutorial guide manual reference api references appendix chapter section
part page pages preface foreword features requirements prerequisites dependencies build building compiling
configuration configure setup options option synopsis name see also bugs reporting bugs history release notes
releases version versions download downloads support contact links resources misc miscellaneous other general
background motivation conclusion conclusions abstract glossary terminology definitions source sources files file
directory directories program programs software library libraries package packages tool tools command commands
function functions method methods class classes module modules type types value values data information info
issue issues problem problems question questions answer answers test tests testing debug debugging error errors
warning warnings caveats limitations known issues security feedback status project projects user users system
systems list lists item items the this that these those introduction and overview exit status environment
return value return values description of files
debian readme.debian changelog.debian
""".split())  # noqa: SIM905 - a word list reads better as prose
GENERIC_PHRASES = frozenset({
    "table of contents", "getting started", "quick start", "see also", "reporting bugs", "release notes",
    "known issues", "exit status", "return value", "return values", "further reading", "next steps",
    "how to", "what is", "more information", "for more information", "this document", "this manual",
    "this program", "this package", "this file", "this library", "the following", "for example",
})


def boilerplate_rule(sentence: str) -> str:
    """The name of the first boilerplate rule ``sentence`` matches, or ''."""
    for name, pattern in BOILERPLATE_RULES:
        if pattern.search(sentence):
            return name
    if _menu_run(sentence):
        return "navigation"
    return ""


def _menu_run(sentence: str) -> bool:
    """A run of four or more capitalised generic words is a menu ("Home Introduction
    Documentation Reporting bugs"), not prose."""
    run = 0
    for word in sentence.split():
        if word[:1].isupper() and word.strip(",.:;|»>").casefold() in GENERIC_TITLES:
            run += 1
            if run >= 4:
                return True
        else:
            run = 0
    return False


def is_generic_title(label: str) -> bool:
    """True for a title or phrase that says nothing about a page's subject."""
    key = " ".join(re.sub(r"[^\w\s.]", " ", label).split()).casefold().strip(".")
    key = re.sub(r"^(\d+(\.\d+)*\.?\s+)", "", key)  # "1.2. Introduction"
    if not key or key in GENERIC_PHRASES:
        return True
    words = key.split()
    return all(w in GENERIC_TITLES for w in words)


# The words of a heading over licence terms, in any order ("Copyright and licensing", "License
# information", "Licensing terms").
_LICENCE_HEADING_WORDS = frozenset(("copyright", "copyrights", "license", "licence", "licenses", "licences",
                                    "licensing", "and", "information", "terms", "notice", "notices", "legal", "&"))


# A section of bibliography ("Citing wordfreq", "Citations to work that wordfreq is built on",
# "How to cite"): references to papers, whose words ("Proceedings", "Workshop") name nothing here.
_CITATION_HEADING_RE = re.compile(r"(?:citing|citations?|how to cite|cite (?:this|us)|bibliography|references$|"
                                  r"works cited)\b")


def section_is_boilerplate(heading: str) -> bool:
    key = re.sub(r"^(\d+(\.\d+)*\.?\s+)", "", " ".join(heading.strip().strip("#").split())).casefold()
    key = key.rstrip(":")
    if key in BOILERPLATE_SECTIONS or _CITATION_HEADING_RE.match(key):
        return True
    words = key.split()
    return len(words) > 1 and all(w in _LICENCE_HEADING_WORDS for w in words) and bool(
        {"copyright", "copyrights", "license", "licence", "licenses", "licences", "licensing"} & set(words))


# -- whole sentences --------------------------------------------------------------------------

# Anchored at the start (re.match): one pass per sentence, not one per position.
_CONSOLE_START_RE = re.compile(
    r"(?:\$|#|>>>|\.\.\.|%|PS>|C:\\>)\s|(?:FAILED|PASSED|ERROR|XFAIL|XPASS|SKIPPED|OK)\b|"
    r"File \"[^\"]+\", line \d|\s*at [\w.$<>]+\(|={3,}|-{3,}|\w+(?:Error|Exception|Warning): |`[^`]+`\s+<[\w.|]+>|"
    r"(?:sudo|pip3?|npm|apt(?:-get)?|brew|conda|uv) (?:install|run|add|-)|"
    r"[*_]*(?:/\*|//\s|#include\b|#define\b|#if(?:n?def)?\b)",  # C code set as text ("**/* Compress …")
)
_CONSOLE_ANY_RE = re.compile(r"\w\.py::\w|Traceback \(most recent call last\)")
_LINK_DEFINITION_RE = re.compile(r"\s*\[[^\]]+\]:\s*\S")
_MARKUP_START_RE = re.compile(r"\.\. [\w:-]+::|:[\w -]+:\s|\s*```|\s*\|")
_MARKUP_ROLE_RE = re.compile(r"(?<![\w`]):[a-z][\w+.-]*:`|\{[a-z][\w+.:-]*\}`")
_TRAILING_TAG_RE = re.compile(r"<[a-zA-Z][^<>]*>\s*$")
_WHOLE_END_RE = re.compile(r"[.!?][\"'’”)\]`*_]*$")
_OPENERS = re.compile(r"^[A-Z0-9\"'“‘(\[`*_¡¿]|^[^\x00-\x7f]")
# Lower-case words a sentence never starts with: the tail of a sentence cut in two.
_TAIL_WORDS = frozenset("""
and or but nor so yet to of in on at by for with from as than that which who whom whose where when
while if then else because although though unless until after before since into onto upon about
the a an this these those its their his her our your words also instead otherwise however is are was
were be been being has have had do does did can could should would will may might must
""".split())  # noqa: SIM905 - a word list reads better as prose


@lru_cache(maxsize=16384)
def sentence_problem(sentence: str) -> str:
    """Why ``sentence`` is not a whole sentence of prose, or '' when it is one: "fragment"
    (cut, unbalanced, no sentence end or start), "code" (a command, test or traceback output,
    mostly code), "link-definition", "menu" (a language or navigation menu), "markup" (raw
    reST/MyST/Sphinx or a table row)."""
    text = sentence.strip()
    if _LINK_DEFINITION_RE.match(text):
        return "link-definition"
    if _MARKUP_START_RE.match(text) or ("`" in text and _MARKUP_ROLE_RE.search(text)) or (
            text.endswith(">") and _TRAILING_TAG_RE.search(text)):
        return "markup"
    if _CONSOLE_START_RE.match(text) or (("::" in text or "Traceback" in text) and _CONSOLE_ANY_RE.search(text)):
        return "code"
    if sum(text.count(f" {mark} ") for mark in "•|·»") >= 2 or text.count(" / ") >= 3:
        return "menu"  # "English readme • 简体中文 readme • …"
    visible = text.replace(" ", "")
    letters = sum(c.isalpha() for c in visible)
    in_code = sum(len(m.group(0)) for m in INLINE_CODE_RE.finditer(text))
    prose_words = re.findall(r"[A-Za-z]{2,}", INLINE_CODE_RE.sub(" ", text))
    if not visible or letters < 0.6 * len(visible) or (in_code > 0.6 * len(text) and len(prose_words) < 3):
        return "code"
    if text.endswith(("…", "...", ":", ",", ";")) or not _WHOLE_END_RE.search(text):
        return "fragment"
    first = text.split()[0]
    if not _OPENERS.match(text) and (first.casefold().strip(",;:") in _TAIL_WORDS or not _name_like(first)):
        return "fragment"  # "zlib is a library." opens with a name; "words, Git is told …" is a tail
    if text.count("`") % 2 or text.count("(") != text.count(")") or text.count("[") != text.count("]"):
        return "fragment"
    return ""


def _name_like(word: str) -> bool:
    """A lower-case word that can open a sentence because it is a name (zlib, libxml2, npm)."""
    from wordfreq import zipf_frequency

    bare = word.strip(",;:.!?\"'()")
    return bool(bare) and zipf_frequency(bare, "en") < 3.5
