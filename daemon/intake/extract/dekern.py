"""Repairing the word spacing of PDF text layers (groff, some TeX and office exports).

Such PDFs place words by position instead of with space characters, so a text extractor
guesses the spaces from gaps: a kerned gap inside a word reads as a space ("e xecutes",
"en vironment") and a tight gap between words as none ("asifthe", "commandas"). Only the
confident cases are repaired, with English word frequencies (wordfreq):

- two pieces are joined when the second is no word at all (or the first a stray letter)
  and together they are a common word: "e xecutes" → "executes";
- a lower-case token that is no word is split only when every part is a very common word
  (Zipf ≥ 4): "asifthe" → "as if the", while "getopt", "preallocated" and names stay;
- a word hyphenated across a line end is joined when the halves make a common word.

Code-looking tokens (digits, underscores, dots, capitals inside) are never touched. Without
wordfreq installed the text is returned as it is.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable

JOIN_ZIPF = 3.0  # the joined word must be at least this common
PART_ZIPF = 4.0  # every part of a split must be this common ("as", "if", "the", "command")
_WORD = re.compile(r"[a-z]+")
_TOKEN = re.compile(r"\S+|\s+")


@functools.cache
def _frequency() -> Callable[[str], float] | None:
    try:
        from wordfreq import zipf_frequency
    except ImportError:
        return None

    @functools.lru_cache(maxsize=200_000)
    def zipf(word: str) -> float:
        return float(zipf_frequency(word, "en"))

    return zipf


def _core(token: str) -> tuple[str, str, str]:
    """(leading punctuation, the word, trailing punctuation)."""
    match = re.fullmatch(r"([(\"'“‘]*)([A-Za-z]+)([.,;:!?)\"'”’]*)", token)
    return (match.group(1), match.group(2), match.group(3)) if match else ("", "", "")


def _common(part: str, zipf: Callable[[str], float]) -> bool:
    """Very common: short parts must be function words ("as", "if", "the"), not "al" or "pre"."""
    need = {2: 5.5, 3: 5.0}.get(len(part), PART_ZIPF)
    return len(part) >= 2 and zipf(part) >= need


def _split(word: str, zipf: Callable[[str], float]) -> list[str] | None:
    """``word`` as two or three very common words, or None."""
    best: list[str] | None = None
    for i in range(2, len(word) - 1):
        head, tail = word[:i], word[i:]
        if not _common(head, zipf):
            continue
        if _common(tail, zipf):
            return [head, tail]
        for j in range(2, len(tail) - 1):
            middle, last = tail[:j], tail[j:]
            if _common(middle, zipf) and _common(last, zipf) and best is None:
                best = [head, middle, last]
    return best


def _line(line: str, zipf: Callable[[str], float]) -> str:
    parts = _TOKEN.findall(line)
    words = [i for i, p in enumerate(parts) if not p.isspace()]
    out = list(parts)
    # Joins: a piece and the next, separated by one run of spaces.
    for a, b in itertools.pairwise(words):
        if out[a] == "" or b != a + 2:
            continue
        lead, first, _ = _core(out[a])
        _, second, trail = _core(out[b])
        if not first or not second or not second.islower() or _core(out[a])[2]:
            continue
        joined = (first + second).lower()
        stray = len(first) == 1 and first.lower() not in ("a", "i") and len(second) >= 3
        if len(joined) >= 4 and len(second) >= 2 and (zipf(second) == 0 or stray) and zipf(joined) >= JOIN_ZIPF:
            out[b] = lead + first + second + trail
            out[a] = ""
            out[a + 1] = ""
    # Splits: an unknown lower-case token made of common words.
    for i, token in enumerate(out):
        lead, word, trail = _core(token)
        if len(word) >= 5 and word.islower() and zipf(word) == 0:
            pieces = _split(word, zipf)
            if pieces:
                out[i] = lead + " ".join(pieces) + trail
    return "".join(out)


def dekern(text: str) -> str:
    """``text`` with confident word-spacing repairs (see the module's rules)."""
    zipf = _frequency()
    if zipf is None:
        return text

    def hyphen(match: re.Match[str]) -> str:
        head, tail = match.group(1), match.group(2)
        if zipf((head + tail).lower()) >= JOIN_ZIPF and zipf(tail.lower()) < PART_ZIPF:
            return head + tail + match.group(3)
        return match.group(0)

    text = re.sub(r"\b([A-Za-z]{2,})-\n[ \t]*([a-z]{2,})([.,;:!?)]*)", hyphen, text)
    return "\n".join(_line(line, zipf) for line in text.split("\n"))
