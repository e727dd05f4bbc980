"""Find the entities and concepts a source talks about, and remember which sources share them.

Candidates come from three places: proper names (capitalised or CamelCase words and runs of
them, acronyms, product names such as ``libxml2``), terms a heading defines (``## Memcheck``),
and keyphrases found by yake when the ``keyphrases`` extra is installed. Generic words
(:data:`textrules.GENERIC_TITLES`) never become terms, nor do common words of the language
(wordfreq's English frequencies: Point, Fix, John), days, months, units, code tokens, a man
page's placeholder words (MODE, FILE) or fragments of a longer phrase ("line interface");
acronyms and names stay (HEAD, CSRF, Flask). A mention's score says how well its sentence
defines the term ("X is …", "X lets/allows …", a whole sentence naming it).

:class:`TermIndex` is the bookkeeping, in SQLite (``.wikiwright/terms.db``): which sources
mention which term, the sentence where each does and how well it defines the term, and the
page a shared term has. Ingest cost therefore does not grow with the wiki: a source looks up
its own terms by key and never reads other pages to count them. Nothing is written there while
a source is planned: the planner records inside :meth:`TermIndex.trial` (undone after) and its
plan carries the :class:`TermsDelta`, which the door makes once the ingest has committed.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from wordfreq import zipf_frequency

from ..core.secrets import REDACTED_RE
from ..core.sqlitedb import Schema, open_db
from ..ingest.offline import _STOPWORDS
from ..ingest.textrules import EXHIBIT_WORDS, is_generic_title, section_is_boilerplate, sentence_problem
from ..wiki.sanitize import INLINE_CODE_RE

log = logging.getLogger(__name__)

MAX_TERMS = 30
# Sources of a term among which its related terms are counted (bounded work, rule 16 of DESIGN.md).
RELATED_WINDOW = 200
YAKE_CHARS = 4000
_WORD = r"[A-Za-z][\w+#.-]*[\w+#]|[A-Za-z]"
_CAP_WORD = r"(?:[A-Z][\w+#-]*[\w+#]|[A-Z]\b)"
_NAME_RE = re.compile(
    rf"(?<![\w./-])({_CAP_WORD}(?:[ \t]+(?:of|for|de|von)?[ \t]*{_CAP_WORD}){{0,3}})(?![\w/])"
)
_TECH_RE = re.compile(r"(?<![\w./-])([a-z][a-z0-9]*(?:[0-9][a-z0-9]*|-[a-z0-9]+)*[0-9][a-z0-9]*)(?![\w/])")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
# "Rust is telling us …", "X is not …": what it does now, or is not, defines nothing.
_NOT_A_DEFINITION = r"(?!not\b|[a-z]{2,}ing\b)"
_DEFINES_RE = (r"\s*(?:\([^)]{0,60}\)\s*)?(?:,[^,]{0,60},\s*)?"
               r"(?:\*{1,2}|_)?(?:is|are|was|refers to|means|stands for|—|–|-|:)(?:\*{1,2}|_)?\s" + _NOT_A_DEFINITION)

# Capitalised words that start sentences or headings without naming anything.
_CAPITAL_NOISE = frozenset("""
if in on at to for from by with as of or and but not no yes it its this that these those there here
when where while which who what why how all any each every some many most more less other such
the a an we you they he she i my our your their his her see note also then thus however therefore
for example e.g i.e etc use using used usage run running make makes made read write set get
copyright license licence version release debian ubuntu linux unix gnu/linux true false null none
monday tuesday wednesday thursday friday saturday sunday january february march april may june july
august september october november december jan feb mar apr jun jul aug sep sept oct nov dec
please thanks thank since after before until because although unless both either neither only just
first second third last next previous new old example examples
""".split())  # noqa: SIM905 - a word list reads better as prose


# Frequent verbs and adverbs that make a keyphrase a clause rather than a name.
# Words that open a phrase praising or counting something, not naming it ("powerful prompt
# management", "multiple providers").
_PRAISE = frozenset("""
powerful simple simpler easy easier fast faster quick quickly flexible robust seamless seamlessly great
best better modern efficient lightweight complete comprehensive intuitive various multiple several
numerous different many few full fully advanced
""".split())  # noqa: SIM905 - a word list reads better as prose

_VERBISH = frozenset("""
run runs ran running found find finds make makes made read reads write writes ship ships shipped
build builds built get gets got set sets give gives keep keeps call calls called show shows need needs
want wants work works see sees seen take takes took go goes went come comes came say says said
clean week today yesterday tomorrow always never often usually really just still already
""".split())  # noqa: SIM905 - a word list reads better as prose


@dataclass(frozen=True)
class Term:
    key: str  # normalised: case-folded, single spaces, plural folded
    label: str  # as the source writes it
    kind: str  # entity | concept
    sentence: str  # the first main-content sentence that mentions it
    score: float  # how well that sentence defines it (0..3)


def term_key(label: str) -> str:
    words = re.findall(r"[\w+#.-]+", label.casefold())
    words = [w.strip(".-") for w in words if w.strip(".-")]
    if words and len(words[-1]) > 4 and words[-1].endswith("s") and not words[-1].endswith(("ss", "us", "is")):
        words[-1] = words[-1][:-1]
    return " ".join(words)


# Days, months and units are never concepts, whatever their case (Fri, MB, ms).
_CALENDAR_AND_UNITS = frozenset("""
monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
b kb mb gb tb pb kib mib gib tib pib kbit mbit gbit bps kbps mbps gbps kbit/s mbit/s byte bytes
ms us µs ns ps sec secs min mins hr hrs hz khz mhz ghz px pt em rem dpi ppi fps rpm
mm cm km kg mg ml kw mw kwh am pm utc gmt
""".split())  # noqa: SIM905 - a word list reads better as prose
# A title's word is the source's subject when the prose uses it this often.
TITLE_WORD_USES = 3
COMMON_ZIPF = 4.3  # a word this frequent in English (wordfreq's Zipf scale) is a word, not a name
_ACRONYM_RE = re.compile(r"([A-Z][A-Z0-9+#&-]{1,9})(s?)")  # HTTP, CSRF, APIs (a plural's s apart)
COMMON_ACRONYM_ZIPF = 3.5  # an acronym this frequent in English text (API 3.7, URL 3.9) is a word
PHRASE_ZIPF = 4.9  # a lower-case phrase this frequent is everyday language ("first time", "next step")


@lru_cache(maxsize=65536)
def zipf(text: str) -> float:
    """How common ``text`` is in English, on wordfreq's Zipf scale (0 unknown … 7 "the")."""
    return float(zipf_frequency(text, "en"))


def specificity(label: str) -> float:
    """0.1 (a word every text uses) … 1 (a name or term nothing else uses), from its frequency."""
    if _ACRONYM_RE.fullmatch(label):
        return 1.0  # an acronym: its frequency as a word says nothing
    return max(0.1, min(1.0, (6.5 - zipf(label.casefold())) / 4.0))


@lru_cache(maxsize=65536)
def common_word_reason(label: str, project: str = "") -> str:
    """Why ``label`` names nothing worth a page, or '': a common word of the language, a day,
    a month, a unit, a code token, or a fragment of a phrase. Acronyms and names stay (HEAD,
    HTTP, CSRF, Flask), and so does the project the source belongs to ("Click")."""
    words = label.split()
    folded = label.casefold()
    if folded in _CALENDAR_AND_UNITS or (words and all(w.casefold().strip(".") in _CALENDAR_AND_UNITS for w in words)):
        return "calendar-or-unit"
    if project and folded == project.casefold():
        return ""
    if re.search(r"[_=(){}<>$\\/@]|^-|\w\.\w|::", label):
        return "code"
    if len(words) == 1:
        acronym = _ACRONYM_RE.fullmatch(label)
        if acronym and COMMON_ACRONYM_ZIPF <= zipf(acronym.group(1).casefold()) < COMMON_ZIPF:
            # As common as a word (API, URL, PDF, UI): every technical text says it, and a page
            # of their mentions tells nothing. (More frequent still, its lower case is a word of
            # its own — HEAD, KEY — which capitalised_word judges by how the prose writes it.)
            return "common-acronym"
        if acronym or re.search(r"[a-z][A-Z]|\d", label):
            return ""  # an acronym, CamelCase or a versioned name (HEAD, CSRF, PyPI, libxml2)
        return "common-word" if zipf(folded) >= COMMON_ZIPF else ""
    if label.islower():
        if words[0].endswith("ing") or words[0] in _VERBISH or words[-1] in _VERBISH:
            return "fragment"  # "writing command": a clause, not a term
        if zipf(folded) >= PHRASE_ZIPF:
            return "fragment"  # "line interface": every word common, the phrase specific to nothing
    if all(zipf(w.casefold()) >= COMMON_ZIPF for w in words) and not any(w.isupper() for w in words):
        return "common-word"  # "Bad Request", "Hello World"
    return ""


# A common word its title names is a source's subject when the prose uses it at least this many
# times as often as English does, and it is not among the commonest words.
TITLE_KEYNESS = 250.0
TITLE_SUBJECT_ZIPF = 5.0


def _title_subject(word: str, uses: int, words: int) -> bool:
    """Is ``word``, which the title names and the prose uses ``uses`` times in ``words``, the
    source's subject though a common word ("ownership", "strings"; not "code" or "data")?"""
    common = zipf(word)
    if not words or common >= TITLE_SUBJECT_ZIPF or word.endswith("ing"):  # "Running", "Using"
        return False
    return (uses / words) / 10 ** (common - 9) >= TITLE_KEYNESS


def capitalised_word(label: str) -> bool:
    """An acronym-shaped word that is also a common word of the language (KEY, POST, HEAD)."""
    return bool(re.fullmatch(r"[A-Z]{2,9}", label)) and zipf(label.casefold()) >= COMMON_ZIPF


def _good_label(label: str) -> bool:
    words = label.split()
    if not words or len(label) < 2 or len(label) > 60 or len(words) > 4:
        return False
    if _CROSS_REFERENCE_RE.match(label):
        return False  # "Appendix C", "Listing 4-9", "Chapter 18": a place in the document, not a thing
    if is_generic_title(label):
        return False
    if all(w.casefold() in _STOPWORDS or w.casefold() in _CAPITAL_NOISE for w in words):
        return False
    if words[0].casefold() in _STOPWORDS or words[-1].casefold() in _STOPWORDS:
        return False
    if re.fullmatch(r"[\d\W_]+", label) or re.fullmatch(r"[vV]?\d[\w.]*", label):
        return False
    return not (len(label) < 3 and not label.isupper())


# A name in code may carry its type parameters or call parentheses (`Arc<T>`, `len()`) before
# the closing backtick.
_CODE_SUFFIX = r"(?:<[^<>`]{1,30}>|\(\))?"
_DEFINES_AFTER = re.compile(r"^" + _CODE_SUFFIX + r"[`*]*" + _DEFINES_RE, re.IGNORECASE)
# "CSRF attacks allow …", "Flask lets you …": the term, a word or two of its own, a verb that defines.
_DEFINES_VERB = re.compile(
    # not after a modal: "the threads will probably take turns" says what may happen
    r"^" + _CODE_SUFFIX + r"[`*]*(?!\s+(?:will|would|can|could|may|might|must|should|probably)\b)"
    r"(?:\s+[\w-]+){0,2}?\s+"
    r"(?:is|are|was|refers to|means|stands for|lets?|allows?|enables?|provides?|"
    r"gives?|makes?|helps?|describes?|represents?|implements?|supports?|consists? of|contains?|offers?|handles?|"
    r"stores?|records?|keeps?|runs?|checks?|finds?|reports?|turns?|takes?|creates?|builds?)\s" + _NOT_A_DEFINITION,
    re.IGNORECASE)
# A sentence that gives the term as the name of what it has just described.
_NAMED_AS = re.compile(r"\b(?:called|known as|termed|referred to as)\s+(?:an? |the )?[*_`\"“]*$", re.IGNORECASE)
# What may stand before a defining sentence's subject: an article, or one word and a comma
# ("Fortunately, `Arc<T>` is a type like …").
_LEAD_IN = re.compile(r"^(?:[A-Z][a-z]+, )?(?:the |an? )?[*`]*$", re.IGNORECASE)


_BACK_REFERENCE_RE = re.compile(
    r"(?:Alternatively|Also|Otherwise|Instead|Similarly|Likewise|Additionally|Furthermore|Moreover|Besides|"
    r"In addition|In that case|In this case|Then|Again|Conversely|Still|Even so)\b,?\s", re.IGNORECASE)
_ENTRY_START_RE = re.compile(r"(\*\*[^*]{1,80}\*\*|`[^`]{1,80}`):\s")  # "**-a, --text**: …", a list's entry
BACK_REFERENCE_SCORE = 0.9
WHOLE_SENTENCE_SCORE = BACK_REFERENCE_SCORE  # the least score of a mention in a whole sentence
DEFINING_SCORE = 2.0  # the least score of a sentence that says what a term is ("X is …", "X lets …" opening it)


def _definition_score(label: str, sentence: str) -> float:
    """3: "X is a …" at the start; 2.5: "X lets/allows …" at the start; 2: "X is" elsewhere;
    1: mentioned in a whole sentence (0.9 when it opens by going on from the one before: "Alternatively, …");
    0.5: a fragment, code or a list entry (never a definition).

    Patterns compiled once: one per label would be thousands of compiles per source."""
    low, folded = sentence.casefold(), label.casefold()
    if sentence_problem(sentence):
        return 0.5
    start = low.find(folded)
    # "Alternatively, ask on StackOverflow …" goes on from the sentence before it, and
    # "**-Z, --null**: Output a zero byte (the ASCII NUL character) …" is an entry about
    # something else: mentions that say least on their own.
    entry = _ENTRY_START_RE.match(sentence)
    if entry and not re.search(rf"(?<![\w-]){re.escape(folded)}(?![\w-])", entry.group(1).casefold()):
        return BACK_REFERENCE_SCORE
    best = BACK_REFERENCE_SCORE if _BACK_REFERENCE_RE.match(sentence) else 1.0
    while start != -1:
        end = start + len(folded)
        whole = (start == 0 or not low[start - 1].isalnum()) and (end == len(low) or not low[end].isalnum())
        if whole:
            lead = _LEAD_IN.match(sentence[:start]) is not None
            if _DEFINES_AFTER.match(sentence[end:]):
                if lead:
                    return 3.0
                best = max(best, 2.0)
            elif _DEFINES_VERB.match(sentence[end:]):
                best = max(best, 2.5 if lead else 1.5)
            elif _NAMED_AS.search(sentence[:start]):
                best = max(best, 2.5)  # "… the features that run them are called *threads*."
        start = low.find(folded, start + 1)
    return best


def mention_sentence(label: str, sentences: list[str], folded_sentences: list[str] | None = None,
                     ) -> tuple[str, float]:
    """The sentence defining ``label`` best (earliest on ties), and its score.

    ``folded_sentences``: the sentences case-folded, when the caller looks up many labels."""
    folded = label.casefold()
    lowered = folded_sentences if folded_sentences is not None else [s.casefold() for s in sentences]
    pattern: re.Pattern[str] | None = None
    best, best_score = "", 0.0
    for sentence, low in zip(sentences, lowered, strict=True):
        if folded not in low:
            continue
        if pattern is None:
            # An acronym is that name only as written: "the master key" does not mention KEY,
            # nor `lite keys delete` DELETE, nor a `csrf_token` CSRF.
            flags = 0 if (acronym := _ACRONYM_RE.fullmatch(label)) and not acronym.group(2) else re.IGNORECASE
            pattern = re.compile(rf"(?<![\w-]){re.escape(label)}(?![\w-])", flags)
        if any(not _inside_address(sentence, m.start()) for m in pattern.finditer(sentence)):
            score = _definition_score(label, sentence)
            if score > best_score:
                best, best_score = sentence, score
                if score >= 3.0:
                    break
    return best, best_score


# A web or mail address, or a bare domain: "https://github.com/x/y", "www.gnutls.org",
# "bug-tar@gnu.org". A name inside one is part of where something is, not a mention of it.
_ADDRESS_RE = re.compile(
    r"(?:[a-z][\w+.-]*://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|"
    r"(?<![\w@/.-])[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|edu|gov|info|co|me|app|ai)(?:/\S*)?(?![\w-])",
    re.IGNORECASE)


def _inside_address(sentence: str, position: int) -> bool:
    """True when ``position`` of ``sentence`` falls inside a web or mail address or a domain."""
    return any(m.start() <= position < m.end() for m in _ADDRESS_RE.finditer(sentence))


def yake_available() -> bool:
    try:
        import yake  # noqa: F401
    except ImportError:
        return False
    return True


def _keyphrases(text: str, limit: int = 20) -> list[str]:
    if not yake_available():
        return []
    import yake

    try:
        extractor = yake.KeywordExtractor(lan="en", n=3, top=limit, dedupLim=0.8)
        return [str(phrase) for phrase, _ in extractor.extract_keywords(text[:YAKE_CHARS])]
    except Exception as exc:  # a keyphrase failure costs the keyphrases, never the source
        log.info("keyphrase extraction failed: %s", exc)
        return []


def _shouting(sentence: str) -> bool:
    letters = [c for c in sentence if c.isalpha()]
    return len(letters) > 30 and sum(c.isupper() for c in letters) > 0.6 * len(letters)


# A span in quotes, which may be another section's title ("see “Paths for Referring to an Item
# in the Module Tree” in Chapter 7"), and a reference to a part of the document by number.
_QUOTED_TITLE_RE = re.compile(r"[“\"]([^“”\"]{8,120})[”\"]")
_CROSS_REFERENCE_RE = re.compile(
    r"^(?:" + EXHIBIT_WORDS + r"|fig|part|step|page|volume|exercise|note)\.?\s+(?:[\dIVXLC]+|[A-Z])\b", re.IGNORECASE)


def _quoted_title_out(match: re.Match[str]) -> str:
    """A quoted title is a reference to a heading, not prose naming things: its capitalised
    words are not names ("Paths for Referring", "Module Tree"). Other quotes stay."""
    words = [w for w in re.findall(r"[\w'’-]+", match.group(1)) if len(w) > 3]
    if len(words) >= 2 and sum(w[:1].isupper() for w in words) >= 0.7 * len(words):
        return " ; "
    return match.group(0)


def _name_shaped(word: str) -> bool:
    """An acronym, a CamelCase or digit-bearing name: never a plain word that was capitalised."""
    return bool(re.fullmatch(r"[A-Z0-9+#-]{2,8}", word) or re.search(r"[a-z][A-Z]|\d", word))


def _good_keyphrase(phrase: str) -> bool:
    """A keyphrase that names something: a lower-case compound of content words ("cache
    profiler") or a name; not a clause yake cut out of a sentence ("ships with Valgrind")."""
    words = phrase.split()
    if len(words) == 1:
        return phrase[:1].isupper() or bool(re.search(r"\d", phrase))
    if any(w.casefold() in _STOPWORDS for w in words):
        return False
    capitals = sum(1 for w in words if w[:1].isupper())
    if capitals not in (0, len(words)):
        return False  # mixed case: part of a name plus words around it
    return not any(w.casefold() in _VERBISH for w in words)


def _main_headings(body: str) -> list[str]:
    found = []
    for match in _HEADING_RE.finditer(body):
        text = re.sub(r"^\d+(\.\d+)*\.?\s+", "", match.group(2).strip().rstrip("#").strip())
        text = text.strip("`*_ ")
        if len(match.group(1)) >= 2 and not section_is_boilerplate(text) and not text.endswith("?"):
            found.append(text)
    return found


def _term_prose(sentences: list[str]) -> tuple[list[str], str]:
    """The sentences terms are read from, and their text: sentences in capitals are licence
    disclaimers or banners, not prose that names things; a redacted secret's marker
    ("[REDACTED:jwt]") names nothing either."""
    sentences = [s for s in sentences if not _shouting(s)]
    return sentences, REDACTED_RE.sub(" ", " ".join(sentences))


def source_keyphrases(sentences: list[str]) -> list[str]:
    """yake's keyphrases of a source's prose: the costly part of :func:`extract_terms`, and a
    function of the source alone, so the planner computes it ahead, outside its lock."""
    return _keyphrases(_without_code(_term_prose(sentences)[1]))


def _without_code(prose: str) -> str:
    """The prose with its code spans and quoted section titles taken out (a phrase break in
    their place): a command or an identifier in backticks (`lite keys delete`) is not a phrase
    that names a concept, nor is a piece of another section's title ("Module Tree")."""
    return _QUOTED_TITLE_RE.sub(_quoted_title_out, INLINE_CODE_RE.sub(" ; ", prose))


def extract_terms(body: str, title: str, sentences: list[str], limit: int = MAX_TERMS,
                  known: Callable[[list[str]], set[str]] | None = None, project: str = "",
                  keyphrases: list[str] | None = None) -> list[Term]:
    """The source's candidate entities and concepts, most salient first.

    Only terms that occur in one of the main-content ``sentences`` are kept, with that sentence:
    a term page always quotes where each source mentions it. ``known``: which of these keys
    earlier sources already established as names (a capitalised word that only opens sentences
    here is still that name: "Memcheck reports were clean"). ``project``: the project the source
    belongs to, a name even when it is a common word ("Click"). ``keyphrases``:
    :func:`source_keyphrases` of these sentences, when computed already.
    """
    deferred: dict[str, tuple[str, str, float]] = {}
    sentences, prose = _term_prose(sentences)
    tokens = Counter(re.findall(r"[\w+#-]+", prose))
    folded_prose = prose.casefold()
    tails: dict[str, bool] = {}
    # Capitalised mid-sentence: how a proper name shows itself ("we ran Valgrind"), unlike a
    # word capitalised only because it opens a sentence, a list item or a heading ("Format").
    mid = Counter(word for s in sentences for word in re.findall(r"[\w+#-]+", s)[1:] if word[:1].isupper())
    counts: Counter[str] = Counter()
    labels: dict[str, Counter[str]] = {}
    kinds: dict[str, str] = {}
    bonus: dict[str, float] = {}

    def add(label: str, kind: str, weight: float = 1.0, from_title: bool = False, subject: bool = False) -> None:
        label = " ".join(label.split()).strip(".,;:()[]'\"`*_")
        if not _good_label(label):
            return
        key = term_key(label)
        if not key or is_generic_title(key) or (common_word_reason(label, project) and not subject):
            return
        if capitalised_word(label) and (len(label) == 2 or tokens[label] <= tokens[label.lower()]):
            # KEY taken from "API KEY" where the prose says "key": the word, not a name; two
            # letters (ID, OK) are words in any case.
            return
        if " " in label and label.islower():
            if label not in tails:
                tails[label] = _inside_longer(label, folded_prose) or _cut_before_its_end(label, folded_prose)
            if tails[label]:
                return  # "line interface" is a piece of "command-line interface"
        if " " not in label and not _name_shaped(label):
            if label[:1].isupper() and (not mid[label] or tokens[label.lower()] >= tokens[label]):
                # "Drop", "Format", "Default": a plain word that opened a sentence or heading,
                # unless an earlier source established it as a name.
                if tokens[label.lower()] < tokens[label]:
                    deferred.setdefault(key, (label, kind, weight))
                return
            if label[:1].islower() and not (from_title and tokens[label] >= TITLE_WORD_USES):
                return  # a lower-case word is a name only when the title names it ("bash README")
        counts[key] += 1
        labels.setdefault(key, Counter())[label] += 1
        kinds.setdefault(key, kind)
        bonus[key] = bonus.get(key, 0.0) + weight

    for sentence in (_QUOTED_TITLE_RE.sub(_quoted_title_out, REDACTED_RE.sub(" ", s)) for s in sentences):
        # Nothing is read from inside a code span: `i32`, `Option<i32>`, `&[i32]` are code, and a
        # name the prose means it writes outside one somewhere.
        sentence = INLINE_CODE_RE.sub(lambda m: " ; " + "_" * max(0, len(m.group(0)) - 3), sentence) \
            if "`" in sentence else sentence
        for index, match in enumerate(_NAME_RE.finditer(sentence)):
            name = match.group(1)
            first_word = name.split()[0]
            at_start = match.start() == 0 or sentence[: match.start()].rstrip().endswith((":", "—", "-"))
            if at_start and index == 0 and " " not in name and not re.search(r"[A-Z].*[A-Z]|\d", name):
                continue  # one capitalised word opening a sentence says nothing
            if sentence[match.end():match.end() + 1] == ":":
                continue  # a field name ("Closes:", "Acquire::http"), not a name
            if first_word.casefold() in _CAPITAL_NOISE and " " in name:
                name = name.split(" ", 1)[1]
            add(name, "entity")
        for match in _TECH_RE.finditer(sentence):
            add(match.group(1), "entity", 0.5)
    for heading in _main_headings(body):
        add(heading, "concept", 2.0)
    for word in re.findall(_WORD, title):
        if word.casefold() not in _STOPWORDS and len(word) > 2:
            if (word[:1].isupper() and not _name_shaped(word) and tokens[word.lower()] >= TITLE_WORD_USES
                    and not word.lower().endswith(("ly", "ed"))):  # "Simultaneously", "Encoded": no subject
                # "Validating References with Lifetimes", where the prose says "lifetimes" again
                # and again: the subject the title names, a concept in the prose's own case. A
                # common word ("What Is Ownership?") only when the prose uses it far more often
                # than English does.
                lower = word.lower()
                add(lower, "concept", 2.0, from_title=True,
                    subject=_title_subject(lower, tokens[lower], sum(tokens.values())))
                continue
            add(word, "entity" if word[:1].isupper() or re.search(r"\d", word) else "concept", 2.0, from_title=True)
    for rank, phrase in enumerate(keyphrases if keyphrases is not None else _keyphrases(_without_code(prose))):
        if _good_keyphrase(phrase):
            add(phrase, "concept" if phrase.islower() else "entity", 2.0 - rank * 0.05)

    if deferred and known is not None:
        for key in known(sorted(deferred)):
            label, kind, weight = deferred[key]
            counts[key] += 1
            labels.setdefault(key, Counter())[label] += 1
            kinds.setdefault(key, kind)
            bonus[key] = bonus.get(key, 0.0) + weight
    ranked = sorted(counts, key=lambda k: (-(counts[k] + bonus.get(k, 0.0)), k))[: limit * 3]
    ranked = _drop_contained(ranked, labels, prose.casefold())
    folded_sentences = [s.casefold() for s in sentences]
    terms: list[Term] = []
    for key in ranked:
        label = labels[key].most_common(1)[0][0]
        sentence, score = mention_sentence(label, sentences, folded_sentences)
        if not sentence:
            # Another surface form may be the one the prose uses.
            for form, _ in labels[key].most_common():
                sentence, score = mention_sentence(form, sentences, folded_sentences)
                if sentence:
                    label = form
                    break
        if not sentence or _placeholder_word(label, sentence, body):
            continue
        terms.append(Term(key, label, kinds[key], sentence, score))
        if len(terms) >= limit:
            break
    return terms


def _placeholder_word(label: str, sentence: str, body: str) -> bool:
    """An English word met only outside prose: a man page's option argument ("--mode=MODE",
    "FILE..."), an option list's description ("-c, --count Suppress normal output"). A word
    in capitals or capitalised is a name only where a whole sentence uses it (the HEAD of a branch)."""
    if " " in label or re.search(r"[a-z][A-Z]|\d", label) or zipf(label.casefold()) < 3.0:
        return False
    if sentence_problem(sentence):
        return True
    if not label.isupper():
        return False
    word = re.escape(label)
    if re.search(rf"(?:[=\[<,]|(?<![\w-])--?[\w-]+[ =]){word}\b|\b{word}(?:\.\.\.|\[)", body):
        return True  # "--mode=MODE", "MODE[,MODE]...", "FILE...": a placeholder
    # An English word in capitals that the text also writes as a plain word is emphasis ("NEVER",
    # "ANY WARRANTY" beside "never", "warranty"), unless the prose uses it as a name, after a
    # determiner or a preposition ("the HEAD of the branch"); "HTTP" is no word ("http://" is a URL).
    return (len(label) >= 4 and zipf(label.casefold()) >= COMMON_ZIPF
            and re.search(rf"(?<![\w/.:-]){re.escape(label.casefold())}(?![\w/:.-])", body) is not None
            and re.search(rf"\b(?:the|a|an|to|of|your|its|this|that|from|at|on|in|over|via|with|by|for)\s+{word}\b",
                          body) is None)


def _inside_longer(phrase: str, folded_prose: str) -> bool:
    """Most occurrences of ``phrase`` follow the same content word: it is the tail of a longer
    phrase ("line interface" in "command line interface"; "a cache profiler" does not count)."""
    before = Counter(m.group(1) for m in re.finditer(rf"(\w+)[\s-]+{re.escape(phrase.casefold())}\b", folded_prose)
                     if m.group(1) not in _STOPWORDS and not m.group(1).isdigit())
    total = folded_prose.count(phrase.casefold())
    return bool(before) and before.most_common(1)[0][1] >= 0.6 * max(1, total)


def _cut_before_its_end(phrase: str, folded_prose: str) -> bool:
    """Most occurrences of ``phrase`` go on with the same content word: it is the start of a
    longer phrase cut short ("enables team-based prompt" in "… prompt management"), or it
    opens with praise rather than a name ("powerful prompt management")."""
    if phrase.split()[0] in _PRAISE:
        return True
    after = Counter(m.group(1) for m in re.finditer(rf"\b{re.escape(phrase.casefold())}[\s-]+(\w+)", folded_prose)
                    if m.group(1) not in _STOPWORDS and not m.group(1).isdigit())
    total = folded_prose.count(phrase.casefold())
    return bool(after) and after.most_common(1)[0][1] >= 0.6 * max(1, total)


def _drop_contained(ranked: list[str], labels: dict[str, Counter[str]], folded_prose: str) -> list[str]:
    """Leave out a term that never occurs outside a longer one ("Billing" inside "Billing API")."""
    forms = {key: labels[key].most_common(1)[0][0] for key in ranked}
    # Only a longer *name* hides a shorter one.
    names = [key for key in ranked if " " in forms[key]
             and all(w[:1].isupper() or w[:1].isdigit() for w in forms[key].split())]
    kept = []
    for key in ranked:
        words = f" {forms[key].casefold()} "
        inside = [other for other in names if other != key and words in f" {forms[other].casefold()} "]
        if inside and sum(folded_prose.count(forms[o].casefold()) for o in inside) >= folded_prose.count(words.strip()):
            continue
        kept.append(key)
    return kept


# -- the index --------------------------------------------------------------------------------

# Every statement an ingest runs here is a lookup by key or a walk along an index that stops
# at its LIMIT: an ingest's cost does not grow with the number of sources recorded (issue 24;
# tests/test_terms_plans.py reads the query plans). Counts the pages need (how many sources
# mention a term, how many terms have pages, how many sources there are) are kept as numbers,
# not counted again.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS terms (
    key TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    kind TEXT NOT NULL,
    page TEXT NOT NULL DEFAULT '',     -- the wiki page of a shared term, once it has one
    sources INTEGER NOT NULL DEFAULT -1  -- how many sources mention it (-1: a file older than version 2)
);
CREATE INDEX IF NOT EXISTS terms_page ON terms(page);
CREATE INDEX IF NOT EXISTS terms_paged ON terms(sources DESC, key) WHERE page != '';
CREATE TABLE IF NOT EXISTS mentions (
    key TEXT NOT NULL,
    source TEXT NOT NULL,              -- source page stem, e.g. src-notes
    label TEXT NOT NULL,               -- the form this source writes
    sentence TEXT NOT NULL,
    score REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT -1,   -- the source's ingest order (sources.seq) when it was recorded
    -- 1: looked for in the source only because the term had a page by then (its title found in
    -- the text), so whether it is recorded depends on the ingest order; "Related" leaves it out
    by_title INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key, source)
);
CREATE INDEX IF NOT EXISTS mentions_source ON mentions(source);
CREATE INDEX IF NOT EXISTS mentions_key_seq ON mentions(key, seq);
CREATE INDEX IF NOT EXISTS mentions_own ON mentions(key, source) WHERE by_title = 0;
CREATE TABLE IF NOT EXISTS sources (
    source TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    seq INTEGER NOT NULL               -- ingest order, for "newest sources"
);
CREATE INDEX IF NOT EXISTS sources_seq ON sources(seq);
CREATE INDEX IF NOT EXISTS sources_title ON sources(title COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS totals (
    name TEXT PRIMARY KEY,             -- sources | paged (terms with a page)
    value INTEGER NOT NULL
);
-- Filled in once for a file from before version 2 (the columns above were just added with -1;
-- on a new file there is nothing to fill). This script runs only when the file is migrated.
UPDATE mentions SET seq = coalesce((SELECT s.seq FROM sources s WHERE s.source = mentions.source), 0) WHERE seq < 0;
UPDATE terms SET sources = (SELECT count(*) FROM mentions m WHERE m.key = terms.key) WHERE sources < 0;
INSERT OR IGNORE INTO totals(name, value) SELECT 'sources', count(*) FROM sources;
INSERT OR IGNORE INTO totals(name, value) SELECT 'paged', count(*) FROM terms WHERE page != '';
"""
# 2: mentions.seq, terms.sources, totals and the indexes that keep ingest cost flat; 3: mentions.by_title
# (a file from version 2 takes every mention as the source's own: it cannot tell)
SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Mention:
    key: str
    source: str
    label: str
    sentence: str
    score: float


_MENTION_COLUMNS = "m.key, m.source, m.label, m.sentence, m.score"


def _mention(row: tuple[object, ...]) -> Mention:
    return Mention(str(row[0]), str(row[1]), str(row[2]), str(row[3]), float(str(row[4])))


# -- what an operation changes in the index ------------------------------------------------------

@dataclass(frozen=True)
class SourceRecorded:
    """A source's terms, replacing what an earlier version of it said (:meth:`TermIndex.record`)."""

    source: str
    title: str
    terms: tuple[Term, ...]
    by_title: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PageBound:
    """A shared term given its page ('': its page taken away)."""

    key: str
    page: str


@dataclass(frozen=True)
class SourceForgotten:
    """A source taken out as if never recorded (:func:`forget_source`: a revert)."""

    source: str


@dataclass(frozen=True)
class MentionForgotten:
    """One source's mention of one term taken out (:func:`forget_mention`)."""

    key: str
    source: str


TermStep = SourceRecorded | PageBound | SourceForgotten | MentionForgotten
TERMS_SINK = "terms"  # the door's name for the term index as the place its deltas are made


@dataclass
class TermsDelta:
    """What one operation changes in the term index, in order: planned inside
    :meth:`TermIndex.trial` (the planner reads its own changes, nothing is kept), carried by the
    plan, journaled by the door and made with :meth:`TermIndex.apply` once the commit exists
    (again by recovery after a crash: every step is idempotent)."""

    steps: list[TermStep] = field(default_factory=list)
    sink = TERMS_SINK  # which of the door's sinks makes it (door/deltas.py)

    def __bool__(self) -> bool:
        return bool(self.steps)

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(step.source for step in self.steps if not isinstance(step, PageBound)))

    def to_json(self) -> dict[str, Any]:
        rows: list[list[Any]] = []
        for step in self.steps:
            if isinstance(step, SourceRecorded):
                rows.append(["recorded", step.source, step.title,
                             [[t.key, t.label, t.kind, t.sentence, t.score] for t in step.terms],
                             sorted(step.by_title)])
            elif isinstance(step, PageBound):
                rows.append(["page", step.key, step.page])
            elif isinstance(step, SourceForgotten):
                rows.append(["forgotten", step.source])
            else:
                rows.append(["mention-forgotten", step.key, step.source])
        return {"steps": rows}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TermsDelta:
        """The delta a journal holds; ValueError when it is not one (nothing of it is made)."""
        steps: list[TermStep] = []
        try:
            for row in data["steps"]:
                name, *args = row
                if name == "recorded":
                    source, title, terms, by_title = args
                    steps.append(SourceRecorded(
                        _text(source), _text(title),
                        tuple(Term(_text(k), _text(label), _text(kind), _text(sentence), float(score))
                              for k, label, kind, sentence, score in terms),
                        frozenset(_text(k) for k in by_title)))
                elif name == "page":
                    steps.append(PageBound(_text(args[0]), _text(args[1])))
                elif name == "forgotten":
                    steps.append(SourceForgotten(_text(args[0])))
                elif name == "mention-forgotten":
                    steps.append(MentionForgotten(_text(args[0]), _text(args[1])))
                else:
                    raise ValueError(f"not a term index step: {str(name)[:40]!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a term index delta: {exc}") from exc
        return cls(steps)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{str(value)[:40]!r} is not text")
    return value


class TermIndex:
    """term -> sources bookkeeping for the offline engine (durable: the wiki's own state)."""

    def __init__(self, path: Path) -> None:
        self._db = open_db(path, Schema("terms", SCHEMA_VERSION, _SCHEMA), synchronous="NORMAL", autocommit=False)
        self._lock = threading.RLock()
        # The changes of the trial or apply under way (the thread holding _lock makes them).
        self._pending: TermsDelta | None = None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def trial(self) -> Iterator[TermsDelta]:
        """Changes made inside are seen by the reads inside, then undone; the delta yielded names
        them, to be made for good with :meth:`apply` once the operation has committed.

        A planner plans in a trial: its counts and "Related" include its own source, and a plan
        set aside (quarantined, held, a crash before the commit) leaves nothing in terms.db. The
        trial holds this index's lock (other threads' reads and writes wait: none sees changes
        that may never be made) and terms.db's write lock from the start (``BEGIN IMMEDIATE``:
        another process's writes wait, and its reads see none of this)."""
        with self._held() as delta:
            try:
                yield delta
            finally:
                self._db.rollback()

    def apply(self, delta: TermsDelta) -> None:
        """Make ``delta``'s changes, in one transaction (idempotent: a recovery makes them again)."""
        with self._held():
            try:
                for step in delta.steps:
                    _STEPS[type(step)](self, step)
            except BaseException:
                self._db.rollback()
                raise
            self._db.commit()

    @contextmanager
    def _held(self) -> Iterator[TermsDelta]:
        """One transaction for several changes, begun with terms.db's write lock; the changes
        made in it are gathered in the delta yielded (see :meth:`_writing`)."""
        with self._lock:
            if self._pending is not None:
                raise RuntimeError("the term index is inside a trial or an apply already")
            self._db.execute("BEGIN IMMEDIATE")
            self._pending = delta = TermsDelta()
            try:
                yield delta
            finally:
                self._pending = None

    @contextmanager
    def _writing(self, step: TermStep) -> Iterator[sqlite3.Connection]:
        """One change: inside a trial or an apply, part of its transaction (and of its delta,
        when it changed a row: forgetting a source never recorded here is no change to make);
        else committed by itself."""
        with self._lock:
            if self._pending is not None:
                before = self._db.total_changes
                yield self._db
                if self._db.total_changes != before:
                    self._pending.steps.append(step)
                return
            with self._db:
                yield self._db

    def apply_journaled(self, payload: Mapping[str, Any]) -> None:
        """The door's call (door/deltas.py): a delta as the operation's journal holds it."""
        self.apply(TermsDelta.from_json(payload))

    def record(self, source: str, title: str, terms: list[Term], by_title: frozenset[str] = frozenset()) -> None:
        """This source's terms replace what an earlier version of it said. ``by_title``: the keys
        among them found only by a page's title in the text (not among the source's own terms)."""
        unique = tuple({t.key: t for t in terms}.values())  # one mention per term and source
        with self._writing(SourceRecorded(source, title, unique, frozenset(by_title))) as db:
            old = [str(r[0]) for r in db.execute("SELECT key FROM mentions WHERE source=?", (source,))]
            db.execute("DELETE FROM mentions WHERE source=?", (source,))
            db.executemany("UPDATE terms SET sources = sources - 1 WHERE key=?", [(k,) for k in old])
            row = db.execute("SELECT seq FROM sources WHERE source=?", (source,)).fetchone()
            newest = int(db.execute("SELECT coalesce(max(seq), 0) FROM sources").fetchone()[0])
            # Recorded again while still the newest (a recovery making a delta once more): it
            # keeps its place, so making a delta twice leaves what making it once did.
            seq = newest if row is not None and int(row[0]) == newest else newest + 1
            db.execute("INSERT OR REPLACE INTO sources(source, title, seq) VALUES (?,?,?)", (source, title, seq))
            if row is None:
                _add_total(db, "sources", 1)
            for term in unique:
                db.execute("INSERT OR IGNORE INTO terms(key, label, kind, sources) VALUES (?,?,?,0)",
                           (term.key, term.label, term.kind))
                db.execute("UPDATE terms SET sources = sources + 1 WHERE key=?", (term.key,))
                db.execute(
                    "INSERT INTO mentions(key, source, label, sentence, score, seq, by_title) VALUES (?,?,?,?,?,?,?)",
                    (term.key, source, term.label, term.sentence, term.score, seq, int(term.key in by_title)),
                )

    def mentions(self, key: str, limit: int = 200) -> list[Mention]:
        """Who mentions ``key``, in ingest order (the first ``limit``)."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_MENTION_COLUMNS} FROM mentions m WHERE m.key=? ORDER BY m.seq LIMIT ?", (key, limit),
            ).fetchall()
        return [_mention(r) for r in rows]

    def mention(self, key: str, source: str) -> Mention | None:
        """What ``source`` says of ``key``, if it mentions it."""
        with self._lock:
            row = self._db.execute(f"SELECT {_MENTION_COLUMNS} FROM mentions m WHERE m.key=? AND m.source=?",
                                   (key, source)).fetchone()
        return _mention(row) if row else None

    def source_count(self, key: str) -> int:
        with self._lock:
            row = self._db.execute("SELECT sources FROM terms WHERE key=?", (key,)).fetchone()
        return max(0, int(row[0])) if row else 0

    def known(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` that some source already recorded."""
        if not keys:
            return set()
        with self._lock:
            marks = ",".join("?" * len(keys))
            rows = self._db.execute(f"SELECT key FROM terms WHERE key IN ({marks})", keys).fetchall()
        return {str(r[0]) for r in rows}

    def page_of(self, key: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT page FROM terms WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else ""

    def key_of_page(self, page: str) -> str:
        if not page:
            return ""
        with self._lock:
            row = self._db.execute("SELECT key FROM terms WHERE page=? LIMIT 1", (page,)).fetchone()
        return str(row[0]) if row else ""

    def set_page(self, key: str, page: str) -> None:
        with self._writing(PageBound(key, page)) as db:
            row = db.execute("SELECT page FROM terms WHERE key=?", (key,)).fetchone()
            if row is None:
                return
            db.execute("UPDATE terms SET page=? WHERE key=?", (page, key))
            if bool(row[0]) != bool(page):
                _add_total(db, "paged", 1 if page else -1)

    def label(self, key: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT label FROM terms WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else key

    def related(self, key: str, limit: int = 8, window: int = RELATED_WINDOW) -> list[tuple[str, str, int]]:
        """(key, page, shared sources) of paged terms that share two or more sources with ``key``,
        most shared first, then by key.

        Only a source's own terms count (``by_title`` mentions exist or not by the order the
        sources came in), among ``window`` of the sources mentioning ``key``: the first by
        source page name, not the newest, so the answer is bounded work however many sources
        mention the term and the same whatever order the sources came in (a revert, or two
        machines ingesting in different orders, give the same list)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT other.key, t.page, count(*) AS shared "
                "FROM (SELECT source FROM mentions WHERE key=? AND by_title = 0 ORDER BY source LIMIT ?) AS mine "
                "JOIN mentions other ON other.source = mine.source AND other.key != ? AND other.by_title = 0 "
                "JOIN terms t ON t.key = other.key AND t.page != '' "
                "GROUP BY other.key HAVING shared >= 2 ORDER BY shared DESC, other.key LIMIT ?",
                (key, window, key, limit),
            ).fetchall()
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def top_paged(self, limit: int = 15) -> list[tuple[str, str, str, int]]:
        """(key, label, page, sources) of the most widely shared terms with a page."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, label, page, sources FROM terms WHERE page != '' ORDER BY sources DESC, key LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2]), int(r[3])) for r in rows]

    def paged_count(self) -> int:
        with self._lock:
            return _total(self._db, "paged")

    def title_taken(self, title: str, source: str) -> bool:
        """Whether a source other than ``source`` has this title (case-insensitive)."""
        with self._lock:
            row = self._db.execute("SELECT 1 FROM sources WHERE title = ? COLLATE NOCASE AND source != ? LIMIT 1",
                                   (title, source)).fetchone()
        return row is not None

    def newest_sources(self, limit: int = 10) -> list[tuple[str, str]]:
        with self._lock:
            rows = self._db.execute("SELECT source, title FROM sources ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def source_total(self) -> int:
        with self._lock:
            return _total(self._db, "sources")


def _total(db: sqlite3.Connection, name: str) -> int:
    row = db.execute("SELECT value FROM totals WHERE name=?", (name,)).fetchone()
    return max(0, int(row[0])) if row else 0


def _add_total(db: sqlite3.Connection, name: str, delta: int) -> None:
    db.execute("INSERT INTO totals(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
               (name, delta, delta))


def open_term_index(state_dir: Path) -> TermIndex:
    try:
        return TermIndex(state_dir / "terms.db")
    except sqlite3.DatabaseError:
        # A damaged index only costs the counts so far: start a new one beside it.
        broken = state_dir / "terms.db"
        broken.rename(state_dir / "terms.db.damaged")
        return TermIndex(broken)




def forget_source(index: TermIndex, source: str) -> list[tuple[Mention, str, int]]:
    """Take ``source`` out of the index as if it had never been recorded (``wikiwright revert``):
    its mentions and its row go; a term no other source mentions goes too, and a term whose
    first recorder it was takes the label of the earliest source left. Returns what it said:
    (its mention, the term's page, how many sources had mentioned the term before it)."""
    with index._writing(SourceForgotten(source)) as db:
        rows = db.execute(
            f"SELECT {_MENTION_COLUMNS}, coalesce(t.page, ''), "
            "(SELECT count(*) FROM mentions o WHERE o.key = m.key AND o.seq < m.seq) "
            "FROM mentions m LEFT JOIN terms t ON t.key = m.key WHERE m.source=?", (source,)).fetchall()
        if db.execute("DELETE FROM sources WHERE source=?", (source,)).rowcount:
            _add_total(db, "sources", -1)
        for row in rows:
            _forget_mention(db, str(row[0]), source)
    return [(_mention(r), str(r[5]), int(r[6])) for r in rows]


def forget_mention(index: TermIndex, key: str, source: str) -> None:
    """One source's mention of one term leaves the index (a mention that only existed because
    a reverted source had given the term its page: the page's title matched this source)."""
    with index._writing(MentionForgotten(key, source)) as db:
        _forget_mention(db, key, source)


def _forget_mention(db: sqlite3.Connection, key: str, source: str) -> None:
    if db.execute("DELETE FROM mentions WHERE key=? AND source=?", (key, source)).rowcount:
        db.execute("UPDATE terms SET sources = sources - 1 WHERE key=?", (key,))
    first = db.execute("SELECT label FROM mentions WHERE key=? ORDER BY seq LIMIT 1", (key,)).fetchone()
    if first is None:
        page = db.execute("SELECT page FROM terms WHERE key=?", (key,)).fetchone()
        db.execute("DELETE FROM terms WHERE key=?", (key,))
        if page is not None and page[0]:
            _add_total(db, "paged", -1)
    else:
        db.execute("UPDATE terms SET label=? WHERE key=?", (str(first[0]), key))


# How each step is made again (TermIndex.apply), by its type.
_STEPS: dict[type, Callable[[TermIndex, Any], object]] = {
    SourceRecorded: lambda index, step: index.record(step.source, step.title, list(step.terms), step.by_title),
    PageBound: lambda index, step: index.set_page(step.key, step.page),
    SourceForgotten: lambda index, step: forget_source(index, step.source),
    MentionForgotten: lambda index, step: forget_mention(index, step.key, step.source),
}
